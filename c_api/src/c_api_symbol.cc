// The symbol and executor functions of the C API (c_api.h, "symbols", "executors").
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/executor/executor.h"
#include "core/graph/infer.h"
#include "core/graph/json.h"
#include "core/graph/symbol.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT
using weft::executor::Executor;
using weft::graph::Symbol;

namespace {

using SymbolTable = HandleTable<Symbol, HandleKind::kSymbol>;

Symbol& Sym(const weft_symbol_t* h, const char* arg, const char* fn) { return SymbolTable::Get().Ref(h, arg, fn); }
#define WEFT_SYM(h) Sym((h), #h, __func__)

weft_symbol_t* NewSymHandle(Symbol s) { return reinterpret_cast<weft_symbol_t*>(SymbolTable::Get().Create(std::move(s))); }

using ExecutorTable = HandleTable<std::unique_ptr<Executor>, HandleKind::kExecutor>;

Executor& Exec(const weft_executor_t* h, const char* arg, const char* fn) {
  return *ExecutorTable::Get().Ref(h, arg, fn);
}
#define WEFT_EXEC(h) Exec((h), #h, __func__)

// The thread's returned string (valid until its next symbol call).
const char* Return(std::string s) {
  thread_local std::string held;
  held = std::move(s);
  return held.c_str();
}

std::vector<Symbol> ReadSymbols(int n, weft_symbol_t* const* handles, const char* what, const char* fn) {
  WEFT_CHECK(n >= 0, kValue, fn, ": expected a count >= 0 for '", what, "', got ", n);
  WEFT_CHECK(n == 0 || handles != nullptr, kValue, fn, ": '", what, "' is NULL but its count is ", n);
  std::vector<Symbol> r;
  for (int i = 0; i < n; ++i) {
    std::string arg = std::string(what) + "[" + std::to_string(i) + "]";
    r.push_back(Sym(handles[i], arg.c_str(), fn));
  }
  return r;
}

nlohmann::json ParseKnown(const char* known, const char* fn) {
  if (known == nullptr || *known == '\0') return nlohmann::json::object();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(known);
  } catch (const nlohmann::json::exception& e) {
    Throw(ErrorKind::kValue, fn, ": 'known' is not valid JSON: ", e.what());
  }
  WEFT_CHECK(j.is_object(), kValue, fn, ": 'known' must be a JSON object {name: value}, got ", j.dump());
  return j;
}

}  // namespace

extern "C" {

weft_status_t weft_symbol_create_variable(const char* name, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(name != nullptr, kValue, __func__, ": 'name' is NULL");
  *out = NewSymHandle(Symbol::Variable(name));
  WEFT_API_END
}

weft_status_t weft_symbol_create_atomic(const weft_op_t* op, int num_params, const char* const* keys,
                                        const char* const* vals, weft_symbol_t** out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  WEFT_CHECK(num_params >= 0, kValue, __func__, ": expected num_params >= 0, got ", num_params);
  WEFT_CHECK(num_params == 0 || (keys != nullptr && vals != nullptr), kValue, __func__,
             ": 'keys' or 'vals' is NULL but num_params is ", num_params);
  KwArgs params;
  for (int i = 0; i < num_params; ++i) {
    WEFT_CHECK(keys[i] != nullptr && vals[i] != nullptr, kValue, "Operator '", o->name, "': parameter ", i,
               " has a NULL key or value");
    params.emplace_back(keys[i], vals[i]);
  }
  *out = NewSymHandle(Symbol::CreateFunctor(o, std::move(params)));
  WEFT_API_END
}

weft_status_t weft_symbol_compose(weft_symbol_t* sym, const char* name, int num_args, const char* const* arg_names,
                                  weft_symbol_t* const* args) {
  WEFT_API_BEGIN
  Symbol& s = WEFT_SYM(sym);
  std::vector<Symbol> values = ReadSymbols(num_args, args, "args", __func__);
  std::vector<Symbol> positional;
  std::vector<std::pair<std::string, Symbol>> named;
  for (int i = 0; i < num_args; ++i) {
    if (arg_names == nullptr) {
      positional.push_back(values[i]);
    } else {
      WEFT_CHECK(arg_names[i] != nullptr, kValue, __func__, ": arg_names[", i, "] is NULL");
      named.emplace_back(arg_names[i], values[i]);
    }
  }
  s.Compose(positional, named, name ? name : "");
  WEFT_API_END
}

weft_status_t weft_symbol_copy(const weft_symbol_t* sym, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(WEFT_SYM(sym).Copy());
  WEFT_API_END
}

weft_status_t weft_symbol_group(int num, weft_symbol_t* const* syms, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(Symbol::Group(ReadSymbols(num, syms, "syms", __func__)));
  WEFT_API_END
}

weft_status_t weft_symbol_get_output(const weft_symbol_t* sym, int index, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  WEFT_CHECK(index >= 0, kValue, __func__, ": output index ", index, " is negative");
  *out = NewSymHandle(s[static_cast<size_t>(index)]);
  WEFT_API_END
}

weft_status_t weft_symbol_get_internals(const weft_symbol_t* sym, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(WEFT_SYM(sym).GetInternals());
  WEFT_API_END
}

weft_status_t weft_symbol_get_children(const weft_symbol_t* sym, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(WEFT_SYM(sym).GetChildren());
  WEFT_API_END
}

weft_status_t weft_symbol_free(weft_symbol_t* sym) {
  WEFT_API_BEGIN
  SymbolTable::Get().Free(sym, "sym", __func__);
  WEFT_API_END
}

weft_status_t weft_symbol_list(const weft_symbol_t* sym, int kind, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  std::vector<std::string> names;
  switch (kind) {
    case WEFT_SYMBOL_ARGUMENTS: names = s.ListArguments(); break;
    case WEFT_SYMBOL_OUTPUTS: names = s.ListOutputs(); break;
    case WEFT_SYMBOL_AUXILIARY: names = s.ListAuxiliaryStates(); break;
    case WEFT_SYMBOL_INPUTS: names = s.ListInputNames(Symbol::InputKind::kAll); break;
    default:
      Throw(ErrorKind::kValue, __func__, ": expected a kind from weft_symbol_list_kind_t (0-3), got ", kind);
  }
  *out = Return(nlohmann::json(names).dump());
  WEFT_API_END
}

weft_status_t weft_symbol_get_name(const weft_symbol_t* sym, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Return(WEFT_SYM(sym).Name());
  WEFT_API_END
}

weft_status_t weft_symbol_get_attr(const weft_symbol_t* sym, const char* key, const char** out, int* found) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_OUT(found);
  WEFT_CHECK(key != nullptr, kValue, __func__, ": 'key' is NULL");
  std::string value;
  *found = WEFT_SYM(sym).GetAttr(key, &value) ? 1 : 0;
  *out = Return(std::move(value));
  WEFT_API_END
}

weft_status_t weft_symbol_set_attr(weft_symbol_t* sym, const char* key, const char* value) {
  WEFT_API_BEGIN
  WEFT_CHECK(key != nullptr && value != nullptr, kValue, __func__, ": 'key' or 'value' is NULL");
  WEFT_SYM(sym).SetAttr(key, value);
  WEFT_API_END
}

weft_status_t weft_symbol_attr_dict(const weft_symbol_t* sym, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Return(nlohmann::json(WEFT_SYM(sym).AttrDict()).dump());
  WEFT_API_END
}

weft_status_t weft_symbol_debug_str(const weft_symbol_t* sym, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Return(WEFT_SYM(sym).DebugString());
  WEFT_API_END
}

weft_status_t weft_symbol_to_json(const weft_symbol_t* sym, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Return(graph::SaveJSON(WEFT_SYM(sym)));
  WEFT_API_END
}

weft_status_t weft_symbol_from_json(const char* json, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(json != nullptr, kValue, __func__, ": 'json' is NULL");
  *out = NewSymHandle(graph::LoadJSON(json, "string"));
  WEFT_API_END
}

weft_status_t weft_symbol_save_file(const weft_symbol_t* sym, const char* path) {
  WEFT_API_BEGIN
  WEFT_CHECK(path != nullptr, kValue, __func__, ": 'path' is NULL");
  std::string text = graph::SaveJSON(WEFT_SYM(sym));
  std::ofstream f(path, std::ios::binary);
  WEFT_CHECK(f.good(), kIO, __func__, ": cannot open '", path, "' for writing");
  f << text;
  f.close();
  WEFT_CHECK(!f.fail(), kIO, __func__, ": writing '", path, "' failed");
  WEFT_API_END
}

weft_status_t weft_symbol_load_file(const char* path, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(path != nullptr, kValue, __func__, ": 'path' is NULL");
  std::ifstream f(path, std::ios::binary);
  WEFT_CHECK(f.good(), kIO, __func__, ": cannot open '", path, "'");
  std::stringstream buf;
  buf << f.rdbuf();
  *out = NewSymHandle(graph::LoadJSON(buf.str(), path));
  WEFT_API_END
}

weft_status_t weft_symbol_infer_shape(const weft_symbol_t* sym, const char* known, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  std::unordered_map<std::string, Shape> given;
  nlohmann::json k = ParseKnown(known, __func__);
  for (auto it = k.begin(); it != k.end(); ++it) {
    const auto& v = it.value();
    WEFT_CHECK(v.is_array(), kValue, __func__, ": the shape of '", it.key(), "' must be a list of dims, got ", v.dump());
    std::vector<int64_t> dims;
    for (const auto& d : v) {
      WEFT_CHECK(d.is_number_integer() && d.get<int64_t>() >= -1, kValue, __func__, ": the shape of '", it.key(),
                 "' must hold integers >= -1, got ", v.dump());
      dims.push_back(d.get<int64_t>());
    }
    given[it.key()] = Shape(dims);
  }
  auto r = graph::InferShape(s, given);
  auto list = [](const std::vector<Shape>& shapes) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& sh : shapes) a.push_back(sh.known_ndim() ? nlohmann::json(sh.ToVector()) : nlohmann::json());
    return a;
  };
  nlohmann::json j = {{"arguments", list(r.arguments)},
                      {"outputs", list(r.outputs)},
                      {"auxiliary", list(r.auxiliary)},
                      {"complete", r.complete}};
  *out = Return(j.dump());
  WEFT_API_END
}

weft_status_t weft_symbol_infer_type(const weft_symbol_t* sym, const char* known, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  std::unordered_map<std::string, DType> given;
  nlohmann::json k = ParseKnown(known, __func__);
  for (auto it = k.begin(); it != k.end(); ++it) {
    WEFT_CHECK(it.value().is_number_integer(), kValue, __func__, ": the dtype of '", it.key(),
               "' must be a dtype code, got ", it.value().dump());
    given[it.key()] = ToDType(it.value().get<int>(), __func__);
  }
  auto r = graph::InferType(s, given);
  auto list = [](const std::vector<DType>& types) {
    nlohmann::json a = nlohmann::json::array();
    for (DType t : types) a.push_back(static_cast<int>(t));
    return a;
  };
  nlohmann::json j = {{"arguments", list(r.arguments)},
                      {"outputs", list(r.outputs)},
                      {"auxiliary", list(r.auxiliary)},
                      {"complete", r.complete}};
  *out = Return(j.dump());
  WEFT_API_END
}

weft_status_t weft_executor_bind(const weft_symbol_t* sym, weft_context_t ctx, int num_args,
                                 weft_ndarray_t* const* args, weft_ndarray_t* const* arg_grads,
                                 const char* const* grad_req, int num_aux, weft_ndarray_t* const* aux,
                                 weft_executor_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  Context c = ToContext(ctx, __func__);
  std::vector<NDArray> a = ReadArrayList(num_args, args, false, "args", __func__);
  std::vector<NDArray> g = arg_grads ? ReadArrayList(num_args, arg_grads, true, "arg_grads", __func__)
                                     : std::vector<NDArray>(a.size());
  std::vector<NDArray> x = ReadArrayList(num_aux, aux, false, "aux", __func__);
  std::vector<OpReq> req;
  for (int i = 0; i < num_args; ++i) {
    if (grad_req == nullptr) {
      req.push_back(g[i].is_none() ? OpReq::kNullOp : OpReq::kWriteTo);
      continue;
    }
    req.push_back(ParseGradReq(grad_req[i], "grad_req", i, __func__));
  }
  auto ex = std::make_unique<Executor>(s, c, std::move(a), std::move(g), std::move(req), std::move(x));
  *out = reinterpret_cast<weft_executor_t*>(ExecutorTable::Get().Create(std::move(ex)));
  WEFT_API_END
}

weft_status_t weft_executor_forward(weft_executor_t* exec, int is_train) {
  WEFT_API_BEGIN
  WEFT_EXEC(exec).Forward(is_train != 0);
  WEFT_API_END
}

weft_status_t weft_executor_backward(weft_executor_t* exec, int num_heads, weft_ndarray_t* const* head_grads) {
  WEFT_API_BEGIN
  Executor& ex = WEFT_EXEC(exec);
  ex.Backward(ReadArrayList(num_heads, head_grads, false, "head_grads", __func__));
  WEFT_API_END
}

weft_status_t weft_executor_outputs(weft_executor_t* exec, int* num_outputs, weft_ndarray_t* const** outputs) {
  WEFT_API_BEGIN
  WEFT_OUT(num_outputs);
  WEFT_OUT(outputs);
  const auto& outs = WEFT_EXEC(exec).outputs();
  thread_local std::vector<weft_ndarray_t*> result;
  result.clear();
  for (const auto& o : outs) result.push_back(NewArrHandle(o));
  *num_outputs = static_cast<int>(result.size());
  *outputs = result.data();
  WEFT_API_END
}

weft_status_t weft_executor_set_monitor_callback(weft_executor_t* exec, weft_executor_monitor_fn callback,
                                                void* user_data, int monitor_all) {
  WEFT_API_BEGIN
  Executor& e = WEFT_EXEC(exec);
  if (callback == nullptr) {
    e.SetMonitorCallback(nullptr, false);
  } else {
    e.SetMonitorCallback(
        [callback, user_data](const std::string& name, const NDArray& value) {
          callback(name.c_str(), NewArrHandle(value), user_data);
        },
        monitor_all != 0);
  }
  WEFT_API_END
}

weft_status_t weft_executor_debug_str(weft_executor_t* exec, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = Return(WEFT_EXEC(exec).DebugString());
  WEFT_API_END
}

weft_status_t weft_executor_free(weft_executor_t* exec) {
  WEFT_API_BEGIN
  ExecutorTable::Get().Free(exec, "exec", __func__);
  WEFT_API_END
}

}  // extern "C"

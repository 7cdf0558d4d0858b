// The symbol and executor functions of the C API (c_api.h, "symbols", "executors").
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/base/atomic_file.h"
#include "core/base/json_parse.h"
#include "core/executor/backend_subgraph.h"
#include "core/executor/executor.h"
#include "core/graph/infer.h"
#include "core/graph/json.h"
#include "core/graph/symbol.h"
#include "core/imperative/autograd.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT
using weft::executor::Executor;
using weft::graph::Symbol;

namespace {

using SymbolTable = HandleTable<Symbol, HandleKind::kSymbol>;

Symbol& Sym(const weft_symbol_t* h, const char* arg, const char* fn) { return SymbolTable::Get().Ref(h, arg, fn); }
#define WEFT_SYM(h) Sym((h), #h, __func__)

weft_symbol_t* NewSymHandle(Symbol s) { return reinterpret_cast<weft_symbol_t*>(SymbolTable::Get().Create(std::move(s))); }

// Shared: a call recorded by weft_executor_invoke keeps its executor for the backward.
using ExecutorTable = HandleTable<std::shared_ptr<Executor>, HandleKind::kExecutor>;

Executor& Exec(const weft_executor_t* h, const char* arg, const char* fn) {
  return *ExecutorTable::Get().Ref(h, arg, fn);
}
#define WEFT_EXEC(h) Exec((h), #h, __func__)

// The recorded calls of weft_executor_invoke still awaiting their backward: each recorded
// gradient function holds its call's token, which expires when a backward without
// retain_graph releases the function or the history is dropped. A live token keeps its
// executor alive, so an entry whose executor was freed has expired too.
struct PendingBackwards {
  std::mutex mu;
  std::unordered_map<const Executor*, std::weak_ptr<void>> tokens;

  static PendingBackwards& Get() {
    static PendingBackwards* p = new PendingBackwards;  // never destroyed: read at exit
    return *p;
  }
  std::shared_ptr<void> Start(const Executor* ex) {
    auto token = std::make_shared<char>(0);
    std::lock_guard<std::mutex> lock(mu);
    if (tokens.size() > 64)
      for (auto it = tokens.begin(); it != tokens.end();) it = it->second.expired() ? tokens.erase(it) : ++it;
    tokens[ex] = token;
    return token;
  }
  bool Pending(const Executor* ex) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = tokens.find(ex);
    return it != tokens.end() && !it->second.expired();
  }
};

// The thread's returned string (valid until its next symbol call).
const char* Return(std::string s) {
  thread_local std::string held;
  held = std::move(s);
  return held.c_str();
}

std::vector<Symbol> ReadSymbols(int n, const char* count, weft_symbol_t* const* handles, const char* what,
                                const char* fn) {
  CheckCount(n, handles, what, count, fn);
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
    j = ParseJSONWithLimits(known, std::string(fn) + ": 'known'");
  } catch (const nlohmann::json::exception& e) {
    Throw(ErrorKind::kValue, fn, ": 'known' is not valid JSON: ", e.what());
  }
  WEFT_CHECK(j.is_object(), kValue, fn, ": 'known' must be a JSON object {name: value}, got ", JSONExcerpt(j));
  return j;
}

// A JSON object argument of the executor functions (NULL or "" is an empty object).
nlohmann::json ParseObject(const char* text, const char* what, const char* fn) {
  if (text == nullptr || *text == '\0') return nlohmann::json::object();
  nlohmann::json j;
  try {
    j = ParseJSONWithLimits(text, std::string(fn) + ": '" + what + "'");
  } catch (const nlohmann::json::exception& e) {
    Throw(ErrorKind::kValue, fn, ": '", what, "' is not valid JSON: ", e.what());
  }
  WEFT_CHECK(j.is_object(), kValue, fn, ": '", what, "' must be a JSON object {name: value}, got ", JSONExcerpt(j));
  return j;
}

// group2ctx: {group: [device_type, device_id]}.
std::map<std::string, Context> ParseGroup2Ctx(const char* text, const char* fn) {
  std::map<std::string, Context> r;
  nlohmann::json j = ParseObject(text, "group2ctx", fn);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    WEFT_CHECK(v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer(), kValue, fn,
               ": the context of group '", it.key(), "' must be [device_type, device_id], got ", JSONExcerpt(v));
    weft_context_t c{v[0].get<int32_t>(), v[1].get<int32_t>()};
    r[it.key()] = ToContext(c, fn);
  }
  return r;
}

// Fully known shapes by input name: {name: [dims]}.
std::unordered_map<std::string, Shape> ParseShapes(const char* text, const char* fn) {
  std::unordered_map<std::string, Shape> r;
  nlohmann::json j = ParseObject(text, "shapes", fn);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    WEFT_CHECK(v.is_array(), kValue, fn, ": the shape of '", it.key(), "' must be a list of dims, got ", JSONExcerpt(v));
    std::vector<int64_t> dims;
    for (const auto& d : v) {
      WEFT_CHECK(d.is_number_integer() && d.get<int64_t>() >= 0, kValue, fn, ": the shape of '", it.key(),
                 "' must hold integers >= 0, got ", JSONExcerpt(v));
      dims.push_back(d.get<int64_t>());
    }
    r[it.key()] = Shape(dims);
  }
  return r;
}

// One request for every argument ("write", ...), or {argument name: request} with the
// others "null"; NULL or "" means "write".
std::vector<OpReq> ParseSimpleBindReq(const char* text, const std::vector<std::string>& args, const char* fn) {
  if (text == nullptr || *text == '\0') return {OpReq::kWriteTo};
  if (*text != '{') return {ParseGradReq(text, "grad_req", 0, fn)};
  nlohmann::json j = ParseObject(text, "grad_req", fn);
  std::vector<OpReq> r(args.size(), OpReq::kNullOp);
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto a = std::find(args.begin(), args.end(), it.key());
    WEFT_CHECK(a != args.end(), kValue, fn, ": grad_req names '", it.key(), "', which is not an argument");
    WEFT_CHECK(it.value().is_string(), kValue, fn, ": the grad_req of '", it.key(), "' must be a string, got ",
               JSONExcerpt(it.value()));
    std::string req = it.value().get<std::string>();
    r[a - args.begin()] = ParseGradReq(req.c_str(), "grad_req", static_cast<int>(a - args.begin()), fn);
  }
  return r;
}

weft_executor_t* NewExecHandle(std::shared_ptr<Executor> ex) {
  return reinterpret_cast<weft_executor_t*>(ExecutorTable::Get().Create(std::move(ex)));
}

weft_status_t Bind(const weft_symbol_t* sym, weft_context_t ctx, const char* group2ctx, int num_args,
                   weft_ndarray_t* const* args, weft_ndarray_t* const* arg_grads, const char* const* grad_req,
                   int num_aux, weft_ndarray_t* const* aux, weft_executor_t** out, const char* fn) {
  WEFT_API_BEGIN
  CheckOut(out, "out", fn);
  const Symbol& s = Sym(sym, "sym", fn);
  Context c = ToContext(ctx, fn);
  std::map<std::string, Context> groups = ParseGroup2Ctx(group2ctx, fn);
  std::vector<NDArray> a = ReadArrayList(num_args, "num_args", args, false, "args", fn);
  std::vector<NDArray> g = arg_grads ? ReadArrayList(num_args, "num_args", arg_grads, true, "arg_grads", fn)
                                     : std::vector<NDArray>(a.size());
  std::vector<NDArray> x = ReadArrayList(num_aux, "num_aux", aux, false, "aux", fn);
  std::vector<OpReq> req;
  for (int i = 0; i < num_args; ++i) {
    if (grad_req == nullptr) {
      req.push_back(g[i].is_none() ? OpReq::kNullOp : OpReq::kWriteTo);
      continue;
    }
    req.push_back(ParseGradReq(grad_req[i], "grad_req", i, fn));
  }
  *out = NewExecHandle(
      std::make_shared<Executor>(s, c, std::move(a), std::move(g), std::move(req), std::move(x), std::move(groups)));
  WEFT_API_END
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
  std::vector<std::string> ks = ReadStrings(num_params, keys, "keys", "num_params", __func__);
  std::vector<std::string> vs = ReadStrings(num_params, vals, "vals", "num_params", __func__);
  KwArgs params;
  for (int i = 0; i < num_params; ++i) params.emplace_back(std::move(ks[i]), std::move(vs[i]));
  *out = NewSymHandle(Symbol::CreateFunctor(o, std::move(params)));
  WEFT_API_END
}

weft_status_t weft_symbol_compose(weft_symbol_t* sym, const char* name, int num_args, const char* const* arg_names,
                                  weft_symbol_t* const* args) {
  WEFT_API_BEGIN
  Symbol& s = WEFT_SYM(sym);
  std::vector<Symbol> values = ReadSymbols(num_args, "num_args", args, "args", __func__);
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

weft_status_t weft_autograd_get_symbol(const weft_ndarray_t* arr, weft_symbol_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewSymHandle(autograd::GetSymbol(a));
  WEFT_API_END
}

weft_status_t weft_symbol_group(int num, weft_symbol_t* const* syms, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(Symbol::Group(ReadSymbols(num, "num", syms, "syms", __func__)));
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

weft_status_t weft_symbol_get_backend_symbol(const weft_symbol_t* sym, const char* backend, weft_symbol_t** out) {
  WEFT_API_BEGIN
  const graph::Symbol& s = WEFT_SYM(sym);
  WEFT_CHECK(backend != nullptr, kValue, __func__, ": 'backend' is NULL");
  WEFT_OUT(out);
  *out = NewSymHandle(executor::BuildBackendSubgraph(s, backend));
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
  WriteFileAtomically(path, text.data(), text.size());
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
    WEFT_CHECK(v.is_array(), kValue, __func__, ": the shape of '", it.key(), "' must be a list of dims, got ", JSONExcerpt(v));
    std::vector<int64_t> dims;
    for (const auto& d : v) {
      WEFT_CHECK(d.is_number_integer() && d.get<int64_t>() >= -1, kValue, __func__, ": the shape of '", it.key(),
                 "' must hold integers >= -1, got ", JSONExcerpt(v));
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
               "' must be a dtype code, got ", JSONExcerpt(it.value()));
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
  return Bind(sym, ctx, nullptr, num_args, args, arg_grads, grad_req, num_aux, aux, out, __func__);
}

weft_status_t weft_executor_bind_ex(const weft_symbol_t* sym, weft_context_t ctx, const char* group2ctx,
                                    int num_args, weft_ndarray_t* const* args, weft_ndarray_t* const* arg_grads,
                                    const char* const* grad_req, int num_aux, weft_ndarray_t* const* aux,
                                    weft_executor_t** out) {
  return Bind(sym, ctx, group2ctx, num_args, args, arg_grads, grad_req, num_aux, aux, out, __func__);
}

weft_status_t weft_executor_simple_bind(const weft_symbol_t* sym, weft_context_t ctx, const char* group2ctx,
                                        const char* shapes, const char* dtypes, const char* grad_req,
                                        weft_executor_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const Symbol& s = WEFT_SYM(sym);
  std::unordered_map<std::string, DType> types;
  nlohmann::json t = ParseObject(dtypes, "dtypes", __func__);
  for (auto it = t.begin(); it != t.end(); ++it) {
    WEFT_CHECK(it.value().is_number_integer(), kValue, __func__, ": the dtype of '", it.key(),
               "' must be a dtype code, got ", JSONExcerpt(it.value()));
    types[it.key()] = ToDType(it.value().get<int>(), __func__);
  }
  std::shared_ptr<Executor> ex =
      Executor::SimpleBind(s, ToContext(ctx, __func__), ParseGroup2Ctx(group2ctx, __func__),
                           ParseShapes(shapes, __func__), types, ParseSimpleBindReq(grad_req, s.ListArguments(), __func__));
  *out = NewExecHandle(std::move(ex));
  WEFT_API_END
}

weft_status_t weft_executor_reshape(weft_executor_t* exec, const char* shapes, int partial_shaping,
                                    int allow_up_sizing, weft_executor_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(shapes != nullptr, kValue, __func__, ": 'shapes' is NULL (expected {input name: [dims]})");
  std::shared_ptr<Executor> ex =
      WEFT_EXEC(exec).Reshape(ParseShapes(shapes, __func__), partial_shaping != 0, allow_up_sizing != 0);
  *out = NewExecHandle(std::move(ex));
  WEFT_API_END
}

weft_status_t weft_executor_arrays(weft_executor_t* exec, int kind, int* num_outputs,
                                   weft_ndarray_t* const** outputs) {
  WEFT_API_BEGIN
  WEFT_OUT(num_outputs);
  WEFT_OUT(outputs);
  const Executor& e = WEFT_EXEC(exec);
  const std::vector<NDArray>* arrays = nullptr;
  switch (kind) {
    case WEFT_EXECUTOR_ARGUMENTS: arrays = &e.arg_arrays(); break;
    case WEFT_EXECUTOR_GRADIENTS: arrays = &e.grad_arrays(); break;
    case WEFT_EXECUTOR_AUXILIARY: arrays = &e.aux_arrays(); break;
    default:
      Throw(ErrorKind::kValue, __func__, ": 'kind' must be 0 (arguments), 1 (gradients) or 2 (auxiliary states), got ",
            kind);
  }
  thread_local std::vector<weft_ndarray_t*> result;
  result.clear();
  for (const auto& a : *arrays) result.push_back(a.is_none() ? nullptr : NewArrHandle(a));
  *num_outputs = static_cast<int>(result.size());
  *outputs = result.data();
  WEFT_API_END
}

weft_status_t weft_executor_set_array(weft_executor_t* exec, int kind, int index, const weft_ndarray_t* array) {
  WEFT_API_BEGIN
  WEFT_CHECK(index >= 0, kValue, __func__, ": 'index' must be >= 0, got ", index);
  WEFT_EXEC(exec).SetArray(kind, static_cast<size_t>(index), WEFT_ARR(array));
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
  ex.Backward(ReadArrayList(num_heads, "num_heads", head_grads, false, "head_grads", __func__));
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

weft_status_t weft_executor_optimized_symbol(weft_executor_t* exec, weft_symbol_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NewSymHandle(WEFT_EXEC(exec).optimized_symbol().Copy());
  WEFT_API_END
}

weft_status_t weft_executor_free(weft_executor_t* exec) {
  WEFT_API_BEGIN
  ExecutorTable::Get().Free(exec, "exec", __func__);
  WEFT_API_END
}

weft_status_t weft_symbol_same_graph(const weft_symbol_t* a, const weft_symbol_t* b, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = WEFT_SYM(a).SameGraph(WEFT_SYM(b)) ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_executor_backward_pending(const weft_executor_t* exec, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = PendingBackwards::Get().Pending(&WEFT_EXEC(exec)) ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_executor_invoke(weft_executor_t* exec, int num_inputs, weft_ndarray_t* const* inputs,
                                  weft_ndarray_t* const* bound_inputs, weft_ndarray_t* const* input_grads,
                                  int num_params, weft_ndarray_t* const* params, int is_train, int* num_outputs,
                                  weft_ndarray_t* const** outputs) {
  WEFT_API_BEGIN
  WEFT_OUT(num_outputs);
  WEFT_OUT(outputs);
  std::shared_ptr<Executor> ex = ExecutorTable::Get().Ref(exec, "exec", __func__);
  std::vector<NDArray> ins = ReadArrayList(num_inputs, "num_inputs", inputs, false, "inputs", __func__);
  std::vector<NDArray> bound = ReadArrayList(num_inputs, "num_inputs", bound_inputs, false, "bound_inputs", __func__);
  std::vector<NDArray> in_grads = ReadArrayList(num_inputs, "num_inputs", input_grads, true, "input_grads", __func__);
  std::vector<NDArray> ps = ReadArrayList(num_params, "num_params", params, false, "params", __func__);
  for (int i = 0; i < num_inputs; ++i) {
    WEFT_CHECK(ins[i].shape() == bound[i].shape(), kShape, __func__, ": input ", i, " has shape ",
               ins[i].shape().ToString(), " but the executor was bound with ", bound[i].shape().ToString());
    CopyFromTo(ins[i], bound[i]);
  }
  ex->Forward(is_train != 0);
  // The executor rewrites its outputs at the next forward: the caller gets copies (a sparse
  // executor makes new outputs at every forward).
  std::vector<NDArray> outs;
  for (const auto& o : ex->outputs()) outs.push_back(ex->is_sparse() ? o : o.Copy(o.ctx()));
  // Parameters with sparse gradient buffers (a row_sparse grad_stype): a sparse executor
  // replaces its gradient arrays, so the parameter's variable, whose buffer is what
  // Parameter.grad() reads, is given the executor's new gradient after each backward (and
  // the executor the variable's current buffer before it, for grad_req "add").
  std::vector<std::pair<size_t, size_t>> sparse_grads;  // (parameter, argument)
  if (ex->is_sparse())
    for (size_t j = 0; j < ps.size(); ++j) {
      const auto& node = ps[j].ag_node();
      if (!node || !node->is_variable() || !node->grad.is_sparse()) continue;
      for (size_t a = 0; a < ex->arg_arrays().size(); ++a)
        if (!ex->grad_arrays()[a].is_none() && ex->arg_arrays()[a].SameChunk(ps[j]) &&
            ex->arg_arrays()[a].shape() == ps[j].shape())
          sparse_grads.emplace_back(j, a);
    }

  // The call as autograd records it: the graph's inputs in the order the graph lists them
  // (arguments and auxiliary states as they come), each a data input or a parameter, so
  // that get_symbol can show it as MXNet's _CachedOp node. An executor with arrays that are
  // neither records the inputs then the parameters, with no symbol form.
  std::vector<NDArray> recorded;
  std::vector<int> data_of;  // per recorded input: the data input it is, or -1 (a parameter)
  bool in_graph_order = false;
  {
    std::unordered_map<const void*, int> data_by_chunk, param_by_chunk;
    for (int i = 0; i < num_inputs; ++i) data_by_chunk[bound[i].chunk().get()] = i;
    for (size_t j = 0; j < ps.size(); ++j) param_by_chunk.emplace(ps[j].chunk().get(), static_cast<int>(j));
    graph::IndexedGraph ig(ex->source_symbol().outputs);
    size_t ai = 0, xi = 0;
    for (uint32_t id : ig.input_nodes()) {
      const bool aux = ig.is_mutable_input(id);
      const auto& arrays = aux ? ex->aux_arrays() : ex->arg_arrays();
      const size_t k = aux ? xi++ : ai++;
      if (k >= arrays.size()) break;
      const void* c = arrays[k].chunk().get();
      auto d = data_by_chunk.find(c);
      auto p = param_by_chunk.find(c);
      if (d != data_by_chunk.end()) {
        recorded.push_back(ins[d->second]);
        data_of.push_back(d->second);
      } else if (p != param_by_chunk.end()) {
        recorded.push_back(ps[p->second]);
        data_of.push_back(-1);
      } else {
        break;
      }
    }
    in_graph_order = recorded.size() == ig.input_nodes().size();
    if (!in_graph_order) {
      recorded = ins;
      recorded.insert(recorded.end(), ps.begin(), ps.end());
      data_of.clear();
      for (int i = 0; i < num_inputs; ++i) data_of.push_back(i);
      data_of.resize(recorded.size(), -1);
    }
  }
  bool any = false;
  for (const auto& a : recorded) any = any || a.ag_node() != nullptr;
  if (autograd::IsRecording() && any) {
    uint64_t generation = ex->num_forwards();
    // The executor writes the parameters' gradients itself (they are bound to it), so the
    // backward marks them written as autograd does for the gradients it writes.
    std::vector<std::shared_ptr<autograd::Node>> param_vars;
    for (const auto& p : ps)
      if (p.ag_node() && p.ag_node()->is_variable() && p.ag_node()->grad_req != OpReq::kNullOp)
        param_vars.push_back(p.ag_node());
    std::shared_ptr<void> token = PendingBackwards::Get().Start(ex.get());
    autograd::RecordCustom(
        // Both Gluon's hybridized blocks and nd.CachedOp call this, so the name and the error
        // say which graphs they may be (MXNet runs both as a CachedOp).
        "cached graph (hybridized block or CachedOp)", recorded, &outs,
        [ex, generation, in_grads, data_of, ps, sparse_grads, param_vars,
         token](const std::vector<NDArray>& out_grads) {
          WEFT_CHECK(ex->num_forwards() == generation, kRuntime,
                     "cached graph (a hybridized block or an nd.CachedOp): it ran forward again before this "
                     "backward of an earlier recorded call, and it keeps the state of its latest call only (run "
                     "the backward before the next forward, or use one block or CachedOp per branch)");
          for (const auto& pa : sparse_grads) ex->SetArray(1, pa.second, ps[pa.first].ag_node()->grad);
          ex->Backward(out_grads);
          for (const auto& pa : sparse_grads) ps[pa.first].ag_node()->grad = ex->grad_arrays()[pa.second];
          for (const auto& v : param_vars) {
            v->fresh_grad = true;
            autograd::NoteGradientWritten(v.get());
          }
          std::vector<NDArray> grads;
          for (int d : data_of) {
            const NDArray& g = d >= 0 ? in_grads[d] : NDArray();
            grads.push_back(g.is_none() ? NDArray() : g.Copy(g.ctx()));
          }
          return grads;
        },
        in_graph_order ? std::function<NodeAttrs()>([ex] {
          return MakeAttrs(Op::Get("_CachedOp"), {{"subgraph", graph::SaveJSON(ex->source_symbol())}});
        })
                       : nullptr);
  }
  thread_local std::vector<weft_ndarray_t*> result;
  result.clear();
  for (auto& o : outs) result.push_back(NewArrHandle(std::move(o)));
  *num_outputs = static_cast<int>(result.size());
  *outputs = result.data();
  WEFT_API_END
}

}  // extern "C"

// The operator registry seen from C, and running operators imperatively.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/imperative/autograd.h"
#include "core/base/scratch.h"
#include "core/imperative/imperative.h"
#include "core/op/compute_async.h"
#include "core/op/registry.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// A parameter type as MXNet writes an enumeration's: the names sorted, and an optional
// enumeration's None first and unquoted ("{None, 'NCHW', 'NHWC'}, ..."); the schema lists
// them in the order they were declared.
std::string MXNetEnumOrder(const std::string& type) {
  if (type.empty() || type[0] != '{') return type;
  const size_t close = type.find('}');
  if (close == std::string::npos) return type;
  std::vector<std::string> names;
  bool optional = false;
  for (size_t q = type.find('\'', 1); q < close; q = type.find('\'', q + 1)) {
    const size_t end = type.find('\'', q + 1);
    if (end == std::string::npos || end > close) return type;
    std::string name = type.substr(q + 1, end - q - 1);
    if (name == "None") optional = true;
    else names.push_back(std::move(name));
    q = end;
  }
  std::sort(names.begin(), names.end());
  std::string r = optional ? "{None" : "{";
  for (size_t i = 0; i < names.size(); ++i) r += (i > 0 || optional ? ", '" : "'") + names[i] + "'";
  return r + type.substr(close);
}

// What the C API hands out about operators, built once: registration finishes during the
// library's static initialisation, before any C call can arrive, and the strings must live
// as long as the library.
struct OpCatalog {
  std::vector<const Op*> sorted;    // primary names in order
  std::vector<const Op*> by_index;  // indexed by Op::index
  std::vector<std::vector<ParamFieldInfo>> params;  // indexed by Op::index

  static const OpCatalog& Get() {
    static const OpCatalog* catalog = [] {
      auto* c = new OpCatalog();
      for (const std::string& name : Op::ListNames()) {
        const Op* op = Op::Get(name);
        c->sorted.push_back(op);
        if (c->by_index.size() <= op->index) {
          c->by_index.resize(op->index + 1, nullptr);
          c->params.resize(op->index + 1);
        }
        c->by_index[op->index] = op;
        if (op->param_schema) {
          c->params[op->index] = op->param_schema->Info();
          for (ParamFieldInfo& p : c->params[op->index]) p.type = MXNetEnumOrder(p.type);
        }
      }
      return c;
    }();
    return *catalog;
  }
};

const weft_op_t* OpHandle(const Op* op) {
  return reinterpret_cast<const weft_op_t*>(PackHandle(HandleKind::kOp, 0, op->index));
}

}  // namespace

// Operator handles are never freed, so the generation is always 0.
const Op* weft::capi::OpRef(const weft_op_t* h, const char* arg, const char* fn) {
  uint64_t v = reinterpret_cast<uint64_t>(h);
  if (v == 0) ThrowBadHandle(v, HandleKind::kOp, arg, fn, "is NULL");
  if ((v >> 56) != static_cast<uint64_t>(HandleKind::kOp))
    ThrowBadHandle(v, HandleKind::kOp, arg, fn, "is not a handle of this kind");
  uint64_t low = v & 0xFFFFFFFFu;
  const OpCatalog& c = OpCatalog::Get();
  if (((v >> 32) & 0xFFFFFFu) != 0 || low == 0 || low > c.by_index.size() || c.by_index[low - 1] == nullptr)
    ThrowBadHandle(v, HandleKind::kOp, arg, fn, "is not a valid handle");
  return c.by_index[low - 1];
}

namespace {


// Parses "cpu", "cpu(0)", "gpu(1)", "cpu_pinned(0)", "cpu_shared(0)".
Context ParseContext(const std::string& text, const std::string& op) {
  std::string s;
  for (char ch : text) if (!std::isspace(static_cast<unsigned char>(ch))) s += ch;
  std::string kind = s, id = "0";
  size_t open = s.find('(');
  if (open != std::string::npos) {
    WEFT_CHECK(s.back() == ')' && s.size() > open + 2, kValue, "Operator '", op,
               "': parameter 'ctx': expected a context such as 'cpu(0)' or 'gpu(1)', got '", text, "'");
    kind = s.substr(0, open);
    id = s.substr(open + 1, s.size() - open - 2);
  }
  bool digits = !id.empty() && id.size() < 9 && std::all_of(id.begin(), id.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  weft_context_t c{0, digits ? std::stoi(id) : -1};
  if (kind == "cpu") c.device_type = WEFT_DEVICE_CPU;
  else if (kind == "gpu") c.device_type = WEFT_DEVICE_GPU;
  else if (kind == "cpu_pinned") c.device_type = WEFT_DEVICE_CPU_PINNED;
  else if (kind == "cpu_shared") c.device_type = WEFT_DEVICE_CPU_SHARED;
  WEFT_CHECK(c.device_type != 0 && digits, kValue, "Operator '", op,
             "': parameter 'ctx': expected a context such as 'cpu(0)' or 'gpu(1)', got '", text, "'");
  return ToContext(c, ("Operator '" + op + "': parameter 'ctx'").c_str());
}

bool HasParam(const Op* op, const std::string& key) {
  for (const auto& p : OpCatalog::Get().params[op->index]) if (p.name == key) return true;
  return false;
}

// Turns the caller's string pairs into attributes. "ctx" becomes the context hint (and
// stays a parameter only for operators that declare it); a variadic operator's count
// parameter is filled in from the number of inputs when the caller leaves it out.
NodeAttrs BuildAttrs(const Op* op, int num_inputs, int num_params, const char* const* keys, const char* const* vals,
                     Context* ctx_hint, bool* has_ctx, const char* fn) {
  std::vector<std::string> ks = ReadStrings(num_params, keys, "keys", "num_params", fn);
  std::vector<std::string> vs = ReadStrings(num_params, vals, "vals", "num_params", fn);
  KwArgs kwargs;
  bool has_count = false;
  *has_ctx = false;
  for (int i = 0; i < num_params; ++i) {
    std::string& k = ks[i];
    std::string& v = vs[i];
    if (k == "ctx") {
      *ctx_hint = ParseContext(v, op->name);
      *has_ctx = true;
      if (!HasParam(op, k)) continue;
    }
    if (!op->key_var_num_args.empty() && k == op->key_var_num_args) has_count = true;
    kwargs.emplace_back(std::move(k), std::move(v));
  }
  if (!has_count && !op->key_var_num_args.empty() && HasParam(op, op->key_var_num_args))
    kwargs.emplace_back(op->key_var_num_args, std::to_string(num_inputs));
  return MakeAttrs(op, std::move(kwargs));
}

// Appends the arrays behind `handles` to *out; `count` names n's parameter.
void ReadArraysInto(int n, const char* count, weft_ndarray_t* const* handles, const char* what, const char* fn,
                    std::vector<NDArray>* out) {
  CheckCount(n, handles, what, count, fn);
  out->reserve(out->size() + n);
  for (int i = 0; i < n; ++i) {
    try {
      out->push_back(Arr(handles[i], what, fn));
    } catch (const Error&) {
      // Only a failure pays for naming the element: the lookup repeats with its index.
      std::string arg = std::string(what) + "[" + std::to_string(i) + "]";
      out->push_back(Arr(handles[i], arg.c_str(), fn));
    }
  }
}



// The array lists of one weft_imperative_invoke, reused by the thread's next call.
struct InvokeArrays {
  std::vector<NDArray> ins, outs;
  void Clear() {
    ins.clear();
    outs.clear();
  }
};

}  // namespace

OpReq weft::capi::ParseGradReq(const char* req, const char* what, int i, const char* fn) {
  WEFT_CHECK(req != nullptr, kValue, fn, ": ", what, "[", i, "] is NULL");
  std::string r = req;
  if (r == "null") return OpReq::kNullOp;
  if (r == "write" || r == "inplace") return OpReq::kWriteTo;
  if (r == "add") return OpReq::kAddTo;
  Throw(ErrorKind::kValue, fn, ": ", what, "[", i, "]: expected 'null', 'write' or 'add', got '", r, "'");
}

std::vector<NDArray> weft::capi::ReadArrayList(int n, const char* count, weft_ndarray_t* const* handles,
                                               bool allow_null, const char* what, const char* fn) {
  std::vector<NDArray> r;
  if (!allow_null) {
    ReadArraysInto(n, count, handles, what, fn, &r);
    return r;
  }
  CheckCount(n, handles, what, count, fn);
  for (int i = 0; i < n; ++i) {
    if (handles[i] == nullptr) {
      r.emplace_back();
      continue;
    }
    std::string arg = std::string(what) + "[" + std::to_string(i) + "]";
    r.push_back(Arr(handles[i], arg.c_str(), fn));
  }
  return r;
}

extern "C" {

weft_status_t weft_op_count(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = static_cast<int>(OpCatalog::Get().sorted.size());
  WEFT_API_END
}

weft_status_t weft_op_get_by_index(int i, const weft_op_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  const auto& ops = OpCatalog::Get().sorted;
  WEFT_CHECK(i >= 0 && i < static_cast<int>(ops.size()), kIndex, __func__, ": expected an index in [0, ", ops.size(),
             "), got ", i);
  *out = OpHandle(ops[i]);
  WEFT_API_END
}

weft_status_t weft_op_get(const char* name, const weft_op_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(name != nullptr, kValue, __func__, ": 'name' is NULL");
  const Op* op = Op::Find(name);
  WEFT_CHECK(op != nullptr, kNotFound, "Operator '", name, "' is not registered");
  *out = OpHandle(op);
  WEFT_API_END
}

weft_status_t weft_op_get_name(const weft_op_t* op, const char** out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = o->name.c_str();
  WEFT_API_END
}

weft_status_t weft_op_get_doc(const weft_op_t* op, const char** out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = o->description.c_str();
  WEFT_API_END
}

weft_status_t weft_op_get_num_aliases(const weft_op_t* op, int* out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = static_cast<int>(o->aliases.size());
  WEFT_API_END
}

weft_status_t weft_op_get_alias(const weft_op_t* op, int i, const char** out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(o->aliases.size()), kIndex, __func__, ": operator '", o->name, "' has ",
             o->aliases.size(), " aliases, got index ", i);
  *out = o->aliases[i].c_str();
  WEFT_API_END
}

weft_status_t weft_op_get_num_inputs(const weft_op_t* op, int* out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = static_cast<int>(o->arguments.size());
  WEFT_API_END
}

weft_status_t weft_op_get_input(const weft_op_t* op, int i, const char** name, const char** type, const char** doc) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(o->arguments.size()), kIndex, __func__, ": operator '", o->name,
             "' has ", o->arguments.size(), " inputs, got index ", i);
  const ArgumentInfo& a = o->arguments[i];
  if (name) *name = a.name.c_str();
  if (type) *type = a.type.c_str();
  if (doc) *doc = a.doc.c_str();
  WEFT_API_END
}

weft_status_t weft_op_get_key_var_num_args(const weft_op_t* op, const char** out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = o->key_var_num_args.c_str();
  WEFT_API_END
}

weft_status_t weft_op_get_has_gpu(const weft_op_t* op, int* out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = Op::GetAttr<FCompute>("FCompute<gpu>").Contains(o) ||
         Op::GetAttr<FComputeAsync>("FComputeAsync<gpu>").Contains(o);
  WEFT_API_END
}

weft_status_t weft_op_get_num_params(const weft_op_t* op, int* out) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(out);
  *out = static_cast<int>(OpCatalog::Get().params[o->index].size());
  WEFT_API_END
}

weft_status_t weft_op_get_param(const weft_op_t* op, int i, const char** name, const char** type,
                                const char** default_value, const char** doc, int* required) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  const auto& params = OpCatalog::Get().params[o->index];
  WEFT_CHECK(i >= 0 && i < static_cast<int>(params.size()), kIndex, __func__, ": operator '", o->name, "' has ",
             params.size(), " parameters, got index ", i);
  const ParamFieldInfo& p = params[i];
  if (name) *name = p.name.c_str();
  if (type) *type = p.type.c_str();
  if (default_value) *default_value = p.default_value.c_str();
  if (doc) *doc = p.doc.c_str();
  if (required) *required = p.required ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_imperative_invoke(const weft_op_t* op, int num_inputs, weft_ndarray_t* const* inputs,
                                     int num_params, const char* const* keys, const char* const* vals, int num_given,
                                     weft_ndarray_t* const* given, int* num_outputs, weft_ndarray_t* const** outputs) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_OUT(num_outputs);
  WEFT_OUT(outputs);
  ScratchLease<InvokeArrays> arrays;
  std::vector<NDArray>& ins = arrays->ins;
  std::vector<NDArray>& outs = arrays->outs;
  ReadArraysInto(num_inputs, "num_inputs", inputs, "inputs", __func__, &ins);
  ReadArraysInto(num_given, "num_given", given, "given", __func__, &outs);
  Context ctx_hint = Context::CPU();
  bool has_ctx = false;
  NodeAttrs attrs = BuildAttrs(o, num_inputs, num_params, keys, vals, &ctx_hint, &has_ctx, __func__);
  imperative::Invoke(attrs, ins, &outs, has_ctx ? &ctx_hint : nullptr, nullptr, imperative::IsTraining());
  if (num_given > 0) {
    // A sparse array given as an output is immutable: its handle now holds the new result.
    for (int i = 0; i < num_given; ++i)
      if (Arr(given[i], "given", __func__).is_sparse()) Arr(given[i], "given", __func__) = outs[i];
    // The recording layer gave the written arrays a history; the caller's handles must carry it.
    if (autograd::IsRecording())
      for (int i = 0; i < num_given; ++i) Arr(given[i], "given", __func__).set_ag(outs[i].ag_node(), outs[i].ag_index());
    *num_outputs = num_given;
    *outputs = given;
  } else {
    static const auto& visible_fns = Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs");
    int visible = visible_fns.Contains(o) ? visible_fns[o](attrs) : static_cast<int>(outs.size());
    thread_local std::vector<weft_ndarray_t*> result;
    result.clear();
    for (int i = 0; i < visible; ++i) result.push_back(NewArrHandle(std::move(outs[i])));
    *num_outputs = visible;
    *outputs = result.data();
  }
  WEFT_API_END
}

weft_status_t weft_set_is_training(int is_training, int* out) {
  WEFT_API_BEGIN
  bool prev = imperative::SetIsTraining(is_training != 0);
  if (out) *out = prev ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_is_training(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = imperative::IsTraining() ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_imperative_gradient(const weft_op_t* op, int num_inputs, weft_ndarray_t* const* inputs,
                                       int num_outputs, weft_ndarray_t* const* outputs,
                                       weft_ndarray_t* const* out_grads, int num_params, const char* const* keys,
                                       const char* const* vals, weft_ndarray_t** in_grads) {
  WEFT_API_BEGIN
  const Op* o = WEFT_OP(op);
  WEFT_CHECK(num_inputs == 0 || in_grads != nullptr, kValue, __func__, ": 'in_grads' is NULL but num_inputs is ",
             num_inputs);
  std::vector<NDArray> ins = ReadArrayList(num_inputs, "num_inputs", inputs, false, "inputs", __func__);
  std::vector<NDArray> outs = ReadArrayList(num_outputs, "num_outputs", outputs, false, "outputs", __func__);
  std::vector<NDArray> ograds = ReadArrayList(num_outputs, "num_outputs", out_grads, false, "out_grads", __func__);
  Context ctx_hint = Context::CPU();
  bool has_ctx = false;
  NodeAttrs attrs = BuildAttrs(o, num_inputs, num_params, keys, vals, &ctx_hint, &has_ctx, __func__);
  int want_in = o->NumInputs(attrs);
  WEFT_CHECK(num_inputs == want_in, kValue, "Operator '", o->name, "': expected ", want_in, " forward inputs, got ",
             num_inputs);
  int want_out = o->NumOutputs(attrs);
  static const auto& visible_fns = Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs");
  int visible = visible_fns.Contains(o) ? visible_fns[o](attrs) : want_out;
  WEFT_CHECK(num_outputs == want_out || num_outputs == visible, kValue, "Operator '", o->name, "': expected ",
             want_out, visible < want_out ? " (or its " + std::to_string(visible) + " visible)" : std::string(),
             " forward outputs (with their gradients), got ", num_outputs);
  for (int i = 0; i < num_outputs; ++i)
    WEFT_CHECK(ograds[i].shape() == outs[i].shape(), kShape, "Operator '", o->name, "': out_grads[", i,
               "] has shape ", ograds[i].shape().ToString(), " but output ", i, " has shape ",
               outs[i].shape().ToString());
  if (num_outputs < want_out) {
    // Hidden outputs (a dropout mask, an RNN's reserve) come from running the operator once
    // more in training mode, as autograd would have recorded it.
    std::vector<NDArray> again;
    imperative::Invoke(attrs, ins, &again, has_ctx ? &ctx_hint : nullptr, nullptr, true);
    for (int i = num_outputs; i < want_out; ++i) {
      outs.push_back(again[i]);
      ograds.push_back(NDArray());
    }
  }
  std::vector<NDArray> grads = imperative::Gradient(attrs, ins, outs, ograds);
  // Handles are made only once every gradient exists, so a failure leaks nothing.
  for (int i = 0; i < num_inputs; ++i)
    in_grads[i] = grads[i].is_none() ? nullptr : NewArrHandle(std::move(grads[i]));
  WEFT_API_END
}

}  // extern "C"

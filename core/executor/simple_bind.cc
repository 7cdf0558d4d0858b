// Executors made from shapes (MXNet's simple_bind) and from another executor with new
// input shapes (reshape).
#include <algorithm>
#include <unordered_set>

#include "core/base/error.h"
#include "core/executor/executor.h"
#include "core/graph/infer.h"

namespace weft {
namespace executor {

namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string r;
  for (const auto& n : names) r += (r.empty() ? "" : ", ") + n;
  return r;
}

// Every name given must be an input (argument or auxiliary state) of the symbol.
template <typename T>
void CheckNames(const char* fn, const char* what, const std::unordered_map<std::string, T>& given,
                const std::vector<std::string>& inputs) {
  std::unordered_set<std::string> known(inputs.begin(), inputs.end());
  for (const auto& kv : given)
    WEFT_CHECK(known.count(kv.first), kValue, fn, ": '", kv.first, "' (given a ", what,
               ") is not an input of the symbol; its inputs are ", Join(inputs));
}

// The arguments or auxiliary states whose shapes stay unknown, for the error message.
std::string Unknown(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
  std::vector<std::string> r;
  for (size_t i = 0; i < names.size(); ++i)
    if (!shapes[i].is_known()) r.push_back(names[i] + " " + shapes[i].ToString());
  return Join(r);
}

graph::SymbolInference<Shape> InferAll(const char* fn, const graph::Symbol& sym,
                                       const std::unordered_map<std::string, Shape>& shapes) {
  CheckNames(fn, "shape", shapes, sym.ListInputNames(graph::Symbol::InputKind::kAll));
  auto r = graph::InferShape(sym, shapes);
  if (!r.complete) {
    std::string missing = Unknown(sym.ListArguments(), r.arguments);
    std::string aux = Unknown(sym.ListAuxiliaryStates(), r.auxiliary);
    if (!aux.empty()) missing += (missing.empty() ? "" : ", ") + aux;
    // MXNet's wording first ("InferShape pass cannot decide shapes ..."), then Weft's
    Throw(ErrorKind::kShape, fn, ": InferShape pass cannot decide shapes for the following arguments. Please "
          "consider providing them as inputs: the shapes given do not determine every shape of the graph; unknown: ",
          missing.empty() ? std::string("some internal values") : missing);
  }
  return r;
}

NDArray Zeros(const Shape& shape, Context ctx, DType dtype) {
  NDArray a(shape, ctx, dtype);
  std::vector<char> zeros(static_cast<size_t>(shape.Size()) * DTypeSize(dtype), 0);
  if (!zeros.empty()) a.SyncCopyFromCPU(zeros.data(), zeros.size());
  return a;
}

// The context of each variable named in `names`: its "__ctx_group__"'s in group2ctx, or
// `ctx` (a group group2ctx does not map included, as MXNet's simple_bind does).
std::vector<Context> VariableContexts(const graph::Symbol& sym, const std::vector<std::string>& names, Context ctx,
                                      const std::map<std::string, Context>& group2ctx) {
  std::unordered_map<std::string, Context> by_name;
  if (!group2ctx.empty()) {
    graph::DFSVisit(sym.outputs, [&](const graph::NodePtr& n) {
      if (!n->is_variable()) return;
      const std::string* group = n->FindAttr("__ctx_group__");
      if (group == nullptr) return;
      auto it = group2ctx.find(*group);
      if (it != group2ctx.end()) by_name[n->attrs.name] = it->second;
    });
  }
  std::vector<Context> r;
  for (const auto& n : names) {
    auto it = by_name.find(n);
    r.push_back(it != by_name.end() ? it->second : ctx);
  }
  return r;
}

}  // namespace

std::unique_ptr<Executor> Executor::SimpleBind(const graph::Symbol& sym, Context ctx,
                                               std::map<std::string, Context> group2ctx,
                                               const std::unordered_map<std::string, Shape>& shapes,
                                               const std::unordered_map<std::string, DType>& dtypes,
                                               const std::vector<OpReq>& grad_req) {
  const char* fn = "simple_bind";
  std::vector<std::string> arg_names = sym.ListArguments(), aux_names = sym.ListAuxiliaryStates();
  WEFT_CHECK(grad_req.size() == 1 || grad_req.size() == arg_names.size(), kValue, fn, ": expected one gradient "
             "request or one per argument (", arg_names.size(), ": ", Join(arg_names), "), got ", grad_req.size());
  auto s = InferAll(fn, sym, shapes);
  CheckNames(fn, "dtype", dtypes, sym.ListInputNames(graph::Symbol::InputKind::kAll));
  // The dtypes given, and what they imply; then float32 for the arguments still unknown
  // (MXNet's default), unless the variable declares its own ("__dtype__").
  std::unordered_map<std::string, DType> known = dtypes;
  auto t = graph::InferType(sym, known);
  if (!t.complete) {
    std::unordered_set<std::string> declared;
    graph::DFSVisit(sym.outputs, [&](const graph::NodePtr& n) {
      if (n->is_variable() && n->FindAttr("__dtype__")) declared.insert(n->attrs.name);
    });
    for (size_t i = 0; i < arg_names.size(); ++i)
      if (t.arguments[i] == DType::kUnknown && !declared.count(arg_names[i])) known[arg_names[i]] = DType::kFloat32;
    t = graph::InferType(sym, known);
  }
  if (!t.complete) {
    std::vector<std::string> unknown;
    for (size_t i = 0; i < arg_names.size(); ++i)
      if (t.arguments[i] == DType::kUnknown) unknown.push_back(arg_names[i]);
    Throw(ErrorKind::kType, fn, ": InferType pass cannot decide dtypes for the following arguments. Please consider "
          "providing them as inputs: the dtypes given do not determine every dtype of the graph; unknown: ",
          unknown.empty() ? std::string("some internal values") : Join(unknown));
  }

  std::vector<Context> arg_ctx = VariableContexts(sym, arg_names, ctx, group2ctx);
  std::vector<Context> aux_ctx = VariableContexts(sym, aux_names, ctx, group2ctx);
  std::vector<NDArray> args, grads, aux;
  std::vector<OpReq> reqs;
  for (size_t i = 0; i < arg_names.size(); ++i) {
    OpReq req = grad_req.size() == 1 ? grad_req[0] : grad_req[i];
    args.push_back(Zeros(s.arguments[i], arg_ctx[i], t.arguments[i]));
    grads.push_back(req == OpReq::kNullOp ? NDArray() : Zeros(s.arguments[i], arg_ctx[i], t.arguments[i]));
    reqs.push_back(req);
  }
  for (size_t i = 0; i < aux_names.size(); ++i) aux.push_back(Zeros(s.auxiliary[i], aux_ctx[i], t.auxiliary[i]));
  return std::make_unique<Executor>(sym, ctx, std::move(args), std::move(grads), std::move(reqs), std::move(aux),
                                    std::move(group2ctx));
}

std::unique_ptr<Executor> Executor::Reshape(const std::unordered_map<std::string, Shape>& shapes, bool partial_shaping,
                                            bool allow_up_sizing, bool share_memory) const {
  const char* fn = "reshape";
  WEFT_CHECK(!sparse_, kUnsupported, fn, ": an executor bound with sparse (csr, row_sparse) arrays cannot be "
             "reshaped; bind the symbol again");
  auto s = InferAll(fn, source_, shapes);
  // An array keeps its memory when its shape stays, is a view of the first elements of its
  // memory when it shrinks, and is new (zeroed) memory when it grows, if allowed.
  auto resized = [&](const std::string& name, const NDArray& a, const Shape& shape) {
    if (a.is_none() || a.shape() == shape) return a;
    WEFT_CHECK(shapes.count(name) || partial_shaping, kShape, fn, ": '", name, "' would change shape from ",
               a.shape().ToString(), " to ", shape.ToString(),
               " though it is not one of the inputs given; allow it with partial_shaping");
    if (shape.Size() <= a.shape().Size()) return a.View(shape, a.dtype());
    WEFT_CHECK(allow_up_sizing, kShape, fn, ": '", name, "' grows from ", a.shape().ToString(), " to ",
               shape.ToString(), ", which needs new memory; allow it with allow_up_sizing");
    return Zeros(shape, a.ctx(), a.dtype());
  };
  std::vector<std::string> arg_names = source_.ListArguments(), aux_names = source_.ListAuxiliaryStates();
  std::vector<NDArray> args, grads, aux;
  for (size_t i = 0; i < arg_names.size(); ++i) {
    args.push_back(resized(arg_names[i], args_[i], s.arguments[i]));
    grads.push_back(resized(arg_names[i], arg_grads_[i], s.arguments[i]));
  }
  for (size_t i = 0; i < aux_names.size(); ++i) aux.push_back(resized(aux_names[i], aux_[i], s.auxiliary[i]));
  return std::make_unique<Executor>(source_, ctx_, std::move(args), std::move(grads), grad_req_, std::move(aux),
                                    group2ctx_, share_memory ? lendable_chunks_ : std::vector<NDArray>{});
}

}  // namespace executor
}  // namespace weft

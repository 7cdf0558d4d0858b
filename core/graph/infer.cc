#include "core/graph/infer.h"

#include "core/base/error.h"
#include "core/op/registry.h"

namespace weft {
namespace graph {
namespace {

template <typename T>
struct Traits;

template <>
struct Traits<Shape> {
  static constexpr ErrorKind kKind = ErrorKind::kShape;
  static constexpr const char* kWhat = "shape";
  static constexpr const char* kAttr = "__shape__";
  static bool Known(const Shape& s) { return s.is_known(); }
  static std::string Str(const Shape& s) { return s.ToString(); }
  // MXNet's wording of a disagreement, which messages keep.
  static std::string Inconsistent(const Shape& given, const Shape& inferred) {
    return "Shape inconsistent, Provided = " + given.ToMXNetString() + ", inferred shape=" + inferred.ToMXNetString();
  }
  // MXNet 1.x symbols write unknown dims of a variable's shape as 0.
  static Shape FromAttr(const std::string& v, const std::string& what) {
    Shape s = Shape::Parse(v, what);
    for (int i = 0; i < s.ndim(); ++i)
      if (s[i] == 0) s[i] = -1;
    return s;
  }
  // `given` refined by `other` where `given` is unknown; false when they disagree.
  static bool Merge(Shape* given, const Shape& other) {
    if (!other.known_ndim()) return true;
    if (!given->known_ndim()) {
      *given = other;
      return true;
    }
    if (given->ndim() != other.ndim()) return false;
    for (int i = 0; i < other.ndim(); ++i) {
      if ((*given)[i] < 0) (*given)[i] = other[i];
      else if (other[i] >= 0 && other[i] != (*given)[i]) return false;
    }
    return true;
  }
  static bool Infer(const Node& n, std::vector<Shape>* in, std::vector<Shape>* out) {
    static const auto& fns = Op::GetAttr<FInferShape>("FInferShape");
    if (!fns.Contains(n.op())) Throw(ErrorKind::kInternal, "operator '", n.op()->name, "' has no shape inference");
    bool done = fns[n.op()](n.attrs, in, out);
    // TShapeNoProbe: the operator's rule already gives all MXNet infers from partial
    // shapes (where: nothing until the condition is whole), so no probe adds to it.
    static const auto& no_probe = Op::GetAttr<bool>("TShapeNoProbe");
    if (no_probe.Contains(n.op()) && no_probe[n.op()]) return done;
    for (const Shape& o : *out)
      if (!o.known_ndim()) return Probe(fns[n.op()], n.attrs, in, out) && done;
    return done;
  }
  // Inputs of known rank with some dims unknown (MXNet 1.x's 0 dims, a batch size not yet
  // known), and a rule that then gave an output no rank (it needs whole shapes): the rule
  // runs twice more with those dims set to two unlike sizes; what comes out alike both times
  // does not depend on them and is kept, the rest stays unknown, as MXNet's partial inference
  // gives it. A rule that reads partial shapes itself (an output of known rank) is trusted:
  // a probe would take slice(None:5) of an unknown dim as 5. A probe the rule refuses
  // teaches nothing.
  static bool Probe(const FInferShape& fn, const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
    bool partial = false;
    for (const Shape& s : *in) partial |= s.known_ndim() && !s.is_known();
    if (!partial) return true;
    static constexpr int64_t kSizes[2] = {1009, 2003};
    std::vector<Shape> pin[2], pout[2];
    for (int p = 0; p < 2; ++p) {
      pin[p] = *in;
      pout[p] = *out;
      for (Shape& s : pin[p])
        for (int d = 0; d < s.ndim(); ++d)
          if (s[d] < 0) s[d] = kSizes[p];
      try {
        fn(attrs, &pin[p], &pout[p]);
      } catch (const Error&) {
        return true;
      }
    }
    auto keep = [](const Shape& a, const Shape& b, Shape* into) {
      if (!a.known_ndim() || !b.known_ndim() || a.ndim() != b.ndim()) return;
      Shape common(a.ndim());
      for (int d = 0; d < a.ndim(); ++d)
        if (a[d] == b[d]) common[d] = a[d];
      if (into->known_ndim() && into->ndim() != common.ndim()) return;
      Merge(into, common);
    };
    for (size_t i = 0; i < out->size(); ++i) keep(pout[0][i], pout[1][i], &(*out)[i]);
    for (size_t i = 0; i < in->size(); ++i) keep(pin[0][i], pin[1][i], &(*in)[i]);
    return true;
  }
};

template <>
struct Traits<DType> {
  static constexpr ErrorKind kKind = ErrorKind::kType;
  static constexpr const char* kWhat = "dtype";
  static constexpr const char* kAttr = "__dtype__";
  static bool Known(DType t) { return t != DType::kUnknown; }
  static std::string Str(DType t) { return t == DType::kUnknown ? "unknown" : DTypeName(t); }
  static std::string Inconsistent(DType given, DType inferred) {
    return "Type inconsistent, Provided = " + Str(given) + ", inferred type = " + Str(inferred);
  }
  static DType FromAttr(const std::string& v, const std::string& what) { return ParseDType(v, what); }
  static bool Merge(DType* given, DType other) {
    if (other == DType::kUnknown) return true;
    if (*given == DType::kUnknown) {
      *given = other;
      return true;
    }
    return *given == other;
  }
  static bool Infer(const Node& n, std::vector<DType>* in, std::vector<DType>* out) {
    static const auto& fns = Op::GetAttr<FInferType>("FInferType");
    return fns.Contains(n.op()) ? fns[n.op()](n.attrs, in, out)
                                : SameTypeEverywhere(n.attrs, in, out);
  }
};

// One operator node: its function sees the current values of its inputs and outputs and
// refines them; returns whether any entry changed.
template <typename T>
bool InferNode(const IndexedGraph& g, uint32_t id, std::vector<T>* entries, std::vector<T>* in, std::vector<T>* out) {
  const auto& node = g[id];
  const Node& n = *node.source;
  in->clear();
  for (const auto& e : node.inputs) in->push_back((*entries)[g.entry_id(e.node_id, e.index)]);
  out->clear();
  for (int i = 0; i < n.num_outputs(); ++i) out->push_back((*entries)[g.entry_id(id, i)]);
  try {
    Traits<T>::Infer(n, in, out);
  } catch (const Error& e) {
    // "Error in operator <name>: " is how MXNet's graph passes begin the message
    Throw(e.kind(), "Error in operator ", n.attrs.name, ": Node '", n.attrs.name, "' (operator '", n.op()->name, "'): ",
          e.what());
  }
  bool changed = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    T& cur = (*entries)[g.entry_id(node.inputs[i].node_id, node.inputs[i].index)];
    if (!((*in)[i] == cur)) {
      T merged = cur;
      if (!Traits<T>::Merge(&merged, (*in)[i]))
        Throw(Traits<T>::kKind, "Error in operator ", n.attrs.name, ": ", Traits<T>::Inconsistent(cur, (*in)[i]),
              ": Node '", n.attrs.name, "' (operator '", n.op()->name, "'): input ", i, " ('",
              g[node.inputs[i].node_id].source->attrs.name, "') has ", Traits<T>::kWhat, " ", Traits<T>::Str(cur),
              " but the operator expects ", Traits<T>::Str((*in)[i]));
      changed |= !(merged == cur);
      cur = merged;
    }
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    T& cur = (*entries)[g.entry_id(id, i)];
    if (!((*out)[i] == cur)) {
      T merged = cur;
      if (!Traits<T>::Merge(&merged, (*out)[i]))
        Throw(Traits<T>::kKind, "Error in operator ", n.attrs.name, ": ", Traits<T>::Inconsistent(cur, (*out)[i]),
              ": Node '", n.attrs.name, "' (operator '", n.op()->name, "'): output ", i, " has ",
              Traits<T>::kWhat, " ", Traits<T>::Str(cur), " but the operator gives ", Traits<T>::Str((*out)[i]));
      changed |= !(merged == cur);
      cur = merged;
    }
  }
  return changed;
}

template <typename T>
size_t InferAll(const IndexedGraph& g, const std::vector<T>& inputs, std::vector<T>* entries) {
  WEFT_CHECK(inputs.size() == g.input_nodes().size(), kInternal, "infer ", Traits<T>::kWhat, ": ", inputs.size(),
             " input values for ", g.input_nodes().size(), " variables");
  entries->assign(g.num_entries(), T());
  if constexpr (std::is_same_v<T, DType>) entries->assign(g.num_entries(), DType::kUnknown);
  for (size_t k = 0; k < g.input_nodes().size(); ++k) {
    uint32_t id = g.input_nodes()[k];
    const Node& n = *g[id].source;
    T value = inputs[k];
    const std::string* attr = n.FindAttr(Traits<T>::kAttr);
    // A fully given value wins over a declared __dtype__ / __shape__, as in MXNet (a float64
    // Variable bound to float32 arrays runs in float32; a Module reshaped to a new input
    // shape runs with it); a partly given shape is completed from the declared one.
    if (Traits<T>::Known(value)) attr = nullptr;
    if (attr != nullptr) {
      T declared = Traits<T>::FromAttr(*attr, "variable '" + n.attrs.name + "' " + Traits<T>::kAttr);
      if (!Traits<T>::Merge(&value, declared))
        Throw(Traits<T>::kKind, "Variable '", n.attrs.name, "': given ", Traits<T>::kWhat, " ",
              Traits<T>::Str(inputs[k]), " but it was declared with ", Traits<T>::Str(declared));
    }
    (*entries)[g.entry_id(id, 0)] = value;
  }
  std::vector<T> in, out;
  // Forward sweeps carry inputs to outputs, backward sweeps the other way; a sweep in
  // each direction until neither changes anything.
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t id = 0; id < g.num_nodes(); ++id)
      if (!g[id].source->is_variable()) changed |= InferNode(g, id, entries, &in, &out);
    for (uint32_t id = static_cast<uint32_t>(g.num_nodes()); id-- > 0;)
      if (!g[id].source->is_variable()) changed |= InferNode(g, id, entries, &in, &out);
  }
  size_t unknown = 0;
  for (const T& v : *entries)
    if (!Traits<T>::Known(v)) ++unknown;
  return unknown;
}

template <typename T>
SymbolInference<T> InferSymbol(const Symbol& sym, const std::unordered_map<std::string, T>& known) {
  IndexedGraph g(sym.outputs);
  std::vector<T> inputs(g.input_nodes().size());
  if constexpr (std::is_same_v<T, DType>) inputs.assign(inputs.size(), DType::kUnknown);
  size_t used = 0;
  for (size_t k = 0; k < g.input_nodes().size(); ++k) {
    auto it = known.find(g[g.input_nodes()[k]].source->attrs.name);
    if (it != known.end()) {
      inputs[k] = it->second;
      ++used;
    }
  }
  if (used != known.size()) {
    std::vector<std::string> names = sym.ListInputNames(Symbol::InputKind::kAll);
    for (const auto& kv : known) {
      bool found = false;
      for (const auto& n : names) found |= n == kv.first;
      if (!found) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        Throw(ErrorKind::kValue, "infer_", Traits<T>::kWhat, ": '", kv.first, "' is not an input of the symbol; its inputs are ",
              list);
      }
    }
  }
  std::vector<T> entries;
  SymbolInference<T> r;
  InferAll(g, inputs, &entries);
  for (uint32_t id : g.input_nodes())
    (g.is_mutable_input(id) ? r.auxiliary : r.arguments).push_back(entries[g.entry_id(id, 0)]);
  for (const auto& e : sym.outputs) r.outputs.push_back(entries[g.entry_id(e)]);
  r.complete = true;
  for (const auto* list : {&r.arguments, &r.outputs, &r.auxiliary})
    for (const T& v : *list) r.complete &= Traits<T>::Known(v);
  return r;
}

}  // namespace

size_t InferShapes(const IndexedGraph& g, const std::vector<Shape>& inputs, std::vector<Shape>* entries) {
  return InferAll(g, inputs, entries);
}

size_t InferTypes(const IndexedGraph& g, const std::vector<DType>& inputs, std::vector<DType>* entries) {
  return InferAll(g, inputs, entries);
}

SymbolInference<Shape> InferShape(const Symbol& sym, const std::unordered_map<std::string, Shape>& known) {
  return InferSymbol(sym, known);
}

SymbolInference<DType> InferType(const Symbol& sym, const std::unordered_map<std::string, DType>& known) {
  return InferSymbol(sym, known);
}

}  // namespace graph
}  // namespace weft

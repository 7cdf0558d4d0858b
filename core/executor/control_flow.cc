// MXNet's control-flow operators `_foreach`, `_while_loop` and `_cond` (what
// mx.sym.contrib.foreach/while_loop/cond build) and their backward operators. Each node holds
// the graphs it runs (core/graph/subgraphs.h: MXNet's node "subgraphs"), which its parameter
// parser reads into the parameter struct once, and its parameters say where each subgraph
// input comes from among the node's inputs (MXNet's names and meanings).
//
// They live beside the executor, not under core/op/, because they run graphs: shape and
// type inference run the graph passes on the subgraph, and the compute functions bind the
// subgraph to an Executor and run it once per step. That work pushes more work to the
// engine and waits for some of it (a loop condition), so it runs as FComputeAsync on the
// custom operators' callback threads (core/op/custom), never on an engine worker, and sees
// the call's arrays through aliases with engine variables of their own.
//
// The backward operators take the output gradients then the forward inputs, recompute the
// forward to recover the state each step started from, and run the subgraph's gradient
// step by step in reverse; gradients of inputs read at every step are summed.
//
// MXNet's `_CachedOp` (the node autograd.get_symbol gives for a hybridized block's call, or
// a graph saved with one) lives here too: it runs its one subgraph, given as MXNet's
// `subgraph` parameter (symbol JSON), and its gradient is another `_CachedOp` whose
// subgraph is the gradient graph of the first.
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/engine/worker_pool.h"
#include "core/executor/executor.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/graph/json.h"
#include "core/graph/subgraphs.h"
#include "core/graph/symbol.h"
#include "core/imperative/imperative.h"
#include "core/op/compute_async.h"
#include "core/op/custom/custom.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ForeachParam {
  int num_args = 1;
  int num_outputs = 1;
  int num_out_data = 0;
  Shape in_state_locs, in_data_locs, remain_locs;
  std::vector<std::shared_ptr<graph::Symbol>> graphs;  // from the node's subgraphs, not a parameter
};

WEFT_PARAM_SCHEMA(ForeachParam, s) {
  s.Field("num_args", &ForeachParam::num_args).Min(1).Describe("Number of inputs, the body graph included.");
  s.Field("num_outputs", &ForeachParam::num_outputs).Min(0).Describe("The number of outputs of the subgraph.");
  s.Field("num_out_data", &ForeachParam::num_out_data).Min(0)
      .Describe("The number of output data of the subgraph (the rest are the loop states).");
  s.Field("in_state_locs", &ForeachParam::in_state_locs)
      .Describe("The locations of loop states among the subgraph's inputs.");
  s.Field("in_data_locs", &ForeachParam::in_data_locs)
      .Describe("The locations of input data among the subgraph's inputs.");
  s.Field("remain_locs", &ForeachParam::remain_locs)
      .Describe("The locations of the remaining inputs among the subgraph's inputs.");
}

struct WhileLoopParam {
  int num_args = 2;
  int num_outputs = 1;
  int num_out_data = 0;
  int max_iterations = 1;
  Shape cond_input_locs, func_input_locs, func_var_locs;
  std::vector<std::shared_ptr<graph::Symbol>> graphs;  // cond, func
};

WEFT_PARAM_SCHEMA(WhileLoopParam, s) {
  s.Field("num_args", &WhileLoopParam::num_args).Min(2)
      .Describe("Number of input arguments, including cond and func as two symbol inputs.");
  s.Field("num_outputs", &WhileLoopParam::num_outputs).Min(1).Describe("The number of outputs of the subgraph.");
  s.Field("num_out_data", &WhileLoopParam::num_out_data).Min(0)
      .Describe("The number of outputs from the function body.");
  s.Field("max_iterations", &WhileLoopParam::max_iterations).Min(1).Describe("Maximum number of iterations.");
  s.Field("cond_input_locs", &WhileLoopParam::cond_input_locs)
      .Describe("The locations of cond's inputs in the given inputs.");
  s.Field("func_input_locs", &WhileLoopParam::func_input_locs)
      .Describe("The locations of func's inputs in the given inputs.");
  s.Field("func_var_locs", &WhileLoopParam::func_var_locs).Describe("The locations of loop_vars among func's inputs.");
}

struct CondParam {
  int num_args = 3;
  int num_outputs = 1;
  Shape cond_input_locs, then_input_locs, else_input_locs;
  std::vector<std::shared_ptr<graph::Symbol>> graphs;  // cond, then_branch, else_branch
};

WEFT_PARAM_SCHEMA(CondParam, s) {
  s.Field("num_args", &CondParam::num_args).Min(3)
      .Describe("Number of input arguments, including cond, then and else as three symbol inputs.");
  s.Field("num_outputs", &CondParam::num_outputs).Min(1).Describe("The number of outputs of the subgraph.");
  s.Field("cond_input_locs", &CondParam::cond_input_locs)
      .Describe("The locations of cond's inputs in the given inputs.");
  s.Field("then_input_locs", &CondParam::then_input_locs)
      .Describe("The locations of then's inputs in the given inputs.");
  s.Field("else_input_locs", &CondParam::else_input_locs)
      .Describe("The locations of else's inputs in the given inputs.");
}

struct CachedOpParam {
  std::string subgraph;
  int inline_limit = 2;
  int forward_bulk_size = 15;
  int backward_bulk_size = 15;
  bool static_alloc = false;
  bool static_shape = false;
  bool is_dynamic = false;
  Shape data_indices, param_indices;
  std::shared_ptr<graph::Symbol> graph;  // `subgraph` read once, not a parameter
  std::vector<int> mutable_inputs;       // the graph's auxiliary states, by input position
};

// MXNet's CachedOpConfig. Only `subgraph` changes what a node computes; the others are the
// flags a hybridized block passes to its CachedOp, accepted so that MXNet's graphs load.
WEFT_PARAM_SCHEMA(CachedOpParam, s) {
  s.Field("subgraph", &CachedOpParam::subgraph).Default(std::string()).Describe("The graph run, as symbol JSON.");
  s.Field("inline_limit", &CachedOpParam::inline_limit).Default(2).Min(0)
      .Describe("Maximum number of operators that can be inlined.");
  s.Field("forward_bulk_size", &CachedOpParam::forward_bulk_size).Default(15).Min(0)
      .Describe("Segment size of bulk execution during forward pass.");
  s.Field("backward_bulk_size", &CachedOpParam::backward_bulk_size).Default(15).Min(0)
      .Describe("Segment size of bulk execution during backward pass.");
  s.Field("static_alloc", &CachedOpParam::static_alloc).Default(false)
      .Describe("Whether to allocate memory statically.");
  s.Field("static_shape", &CachedOpParam::static_shape).Default(false)
      .Describe("Whether input shapes stay the same from call to call.");
  s.Field("is_dynamic", &CachedOpParam::is_dynamic).Default(false)
      .Describe("Whether the graph holds operators whose output shapes depend on the data.");
  s.Field("data_indices", &CachedOpParam::data_indices).Default(Shape())
      .Describe("Positions of the data among the inputs.");
  s.Field("param_indices", &CachedOpParam::param_indices).Default(Shape())
      .Describe("Positions of the parameters among the inputs.");
}

namespace {

using graph::IndexedGraph;
using graph::Symbol;

std::vector<int> Locs(const Shape& s) {
  std::vector<int> v;
  for (int64_t x : s) v.push_back(static_cast<int>(x));
  return v;
}

std::string Who(const NodeAttrs& attrs) {
  return "Operator '" + attrs.op->name + "'" + (attrs.name.empty() ? std::string() : " (" + attrs.name + ")");
}

const std::vector<std::shared_ptr<Symbol>>& GraphsOf(const NodeAttrs& attrs) {
  const std::string& op = attrs.op->name;
  if (op == "_foreach" || op == "_backward_foreach") return attrs.Params<ForeachParam>().graphs;
  if (op == "_while_loop" || op == "_backward_while_loop") return attrs.Params<WhileLoopParam>().graphs;
  return attrs.Params<CondParam>().graphs;
}

// Subgraph k of the node, checked to be there.
const Symbol& Subgraph(const NodeAttrs& attrs, size_t k) {
  const auto& graphs = GraphsOf(attrs);
  if (graphs.size() <= k)
    Throw(ErrorKind::kValue, Who(attrs), ": holds ", graphs.size(), " subgraphs but needs at least ", k + 1,
          " (build it with mx.sym.contrib.foreach/while_loop/cond or load it from MXNet's JSON)");
  return *graphs[k];
}

// The parameter parser of a control-flow operator: its parameters, and its subgraphs read
// from the node's attribute once.
template <typename P>
void ParseWithGraphs(Op& op) {
  const ParamSchema<P>& schema = SchemaOf<P>();
  std::string name = op.name;
  op.attr_parser = [&schema, name](NodeAttrs* attrs) {
    auto parsed = std::make_shared<P>(*schema.Parse(name, attrs->dict));
    for (const auto& kv : attrs->dict)
      if (kv.first == graph::kSubgraphsAttr)
        parsed->graphs = graph::SubgraphsFromJSON(kv.second, "operator '" + name + "'");
    attrs->parsed = parsed;
  };
}

// How many inputs (list_inputs: arguments and auxiliary states) and outputs a subgraph has.
size_t NumGraphInputs(const Symbol& g) { return IndexedGraph(g.outputs).input_nodes().size(); }

// Every loc in [0, limit) and, with `distinct`, none twice.
void CheckLocs(const NodeAttrs& attrs, const char* name, const std::vector<int>& locs, size_t limit, bool distinct) {
  std::vector<bool> seen(limit, false);
  for (int l : locs) {
    if (l < 0 || static_cast<size_t>(l) >= limit)
      Throw(ErrorKind::kValue, Who(attrs), ": ", name, " holds ", l, ", outside [0, ", limit, ")");
    if (distinct && seen[l]) Throw(ErrorKind::kValue, Who(attrs), ": ", name, " holds ", l, " twice");
    seen[l] = true;
  }
}

void CheckCount(const NodeAttrs& attrs, const std::string& what, size_t got, size_t expected) {
  if (got != expected)
    Throw(ErrorKind::kValue, Who(attrs), ": ", what, " is ", got, " but should be ", expected);
}

// ------------------------------------------------------------------ the node layouts
// Where each subgraph input comes from: the node input it reads (or, for foreach's data,
// a slice of it), per subgraph.
struct ForeachLayout {
  std::vector<int> data, state, remain;  // subgraph input positions
  size_t num_in = 0, num_data = 0, num_state = 0, num_out_data = 0;
};

ForeachLayout CheckForeach(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<ForeachParam>();
  const Symbol& g = Subgraph(attrs, 0);
  ForeachLayout l;
  l.data = Locs(p.in_data_locs);
  l.state = Locs(p.in_state_locs);
  l.remain = Locs(p.remain_locs);
  l.num_data = l.data.size();
  l.num_state = l.state.size();
  l.num_out_data = static_cast<size_t>(p.num_out_data);
  l.num_in = static_cast<size_t>(p.num_args) - 1;
  const size_t n = NumGraphInputs(g);
  CheckCount(attrs, "the number of subgraph inputs", n, l.num_data + l.num_state + l.remain.size());
  CheckCount(attrs, "num_args - 1 (the node's inputs)", l.num_in, n);
  CheckCount(attrs, "the number of subgraph outputs", g.outputs.size(), static_cast<size_t>(p.num_outputs));
  if (l.num_data == 0) Throw(ErrorKind::kValue, Who(attrs), ": in_data_locs is empty: foreach needs data to iterate");
  if (l.num_out_data > static_cast<size_t>(p.num_outputs))
    Throw(ErrorKind::kValue, Who(attrs), ": num_out_data (", l.num_out_data, ") exceeds num_outputs (", p.num_outputs,
          ")");
  CheckCount(attrs, "the number of loop states (num_outputs - num_out_data)",
             static_cast<size_t>(p.num_outputs) - l.num_out_data, l.num_state);
  std::vector<int> all = l.data;
  all.insert(all.end(), l.state.begin(), l.state.end());
  all.insert(all.end(), l.remain.begin(), l.remain.end());
  CheckLocs(attrs, "in_data_locs + in_state_locs + remain_locs", all, n, true);
  return l;
}

struct WhileLayout {
  std::vector<int> cond_in, func_in, var;  // node input per cond / func input; func input per loop var
  size_t num_in = 0, num_out_data = 0;
};

WhileLayout CheckWhile(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<WhileLoopParam>();
  WhileLayout l;
  l.cond_in = Locs(p.cond_input_locs);
  l.func_in = Locs(p.func_input_locs);
  l.var = Locs(p.func_var_locs);
  l.num_in = static_cast<size_t>(p.num_args) - 2;
  l.num_out_data = static_cast<size_t>(p.num_out_data);
  const Symbol& cond = Subgraph(attrs, 0);
  const Symbol& func = Subgraph(attrs, 1);
  CheckCount(attrs, "the number of inputs of cond", NumGraphInputs(cond), l.cond_in.size());
  CheckCount(attrs, "the number of inputs of func", NumGraphInputs(func), l.func_in.size());
  CheckCount(attrs, "the number of outputs of cond", cond.outputs.size(), 1);
  CheckCount(attrs, "the number of outputs of func", func.outputs.size(), static_cast<size_t>(p.num_outputs));
  if (l.num_out_data > static_cast<size_t>(p.num_outputs))
    Throw(ErrorKind::kValue, Who(attrs), ": num_out_data (", l.num_out_data, ") exceeds num_outputs (", p.num_outputs,
          ")");
  CheckCount(attrs, "the number of loop variables (num_outputs - num_out_data)",
             static_cast<size_t>(p.num_outputs) - l.num_out_data, l.var.size());
  CheckLocs(attrs, "cond_input_locs", l.cond_in, l.num_in, true);
  CheckLocs(attrs, "func_input_locs", l.func_in, l.num_in, true);
  CheckLocs(attrs, "func_var_locs", l.var, l.func_in.size(), true);
  return l;
}

struct CondLayout {
  std::vector<int> locs[3];  // node input per input of cond, then, else
  size_t num_in = 0;
};

CondLayout CheckCond(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<CondParam>();
  CondLayout l;
  l.locs[0] = Locs(p.cond_input_locs);
  l.locs[1] = Locs(p.then_input_locs);
  l.locs[2] = Locs(p.else_input_locs);
  l.num_in = static_cast<size_t>(p.num_args) - 3;
  const char* names[3] = {"cond", "then_branch", "else_branch"};
  const char* loc_names[3] = {"cond_input_locs", "then_input_locs", "else_input_locs"};
  for (size_t k = 0; k < 3; ++k) {
    const Symbol& g = Subgraph(attrs, k);
    CheckCount(attrs, std::string("the number of inputs of ") + names[k], NumGraphInputs(g), l.locs[k].size());
    CheckCount(attrs, std::string("the number of outputs of ") + names[k], g.outputs.size(),
               k == 0 ? 1 : static_cast<size_t>(p.num_outputs));
    CheckLocs(attrs, loc_names[k], l.locs[k], l.num_in, true);
  }
  return l;
}

// ------------------------------------------------------------------ inference on subgraphs
// Runs shape (or type) inference on `g` with its inputs' known values; fills `inputs` with
// what the graph implies for them and returns its outputs' values.
template <typename T>
std::vector<T> InferSub(const NodeAttrs& attrs, const Symbol& g, std::vector<T>* inputs, const char* which);

template <>
std::vector<Shape> InferSub<Shape>(const NodeAttrs& attrs, const Symbol& g, std::vector<Shape>* inputs,
                                   const char* which) {
  IndexedGraph ig(g.outputs);
  std::vector<Shape> entries;
  try {
    graph::InferShapes(ig, *inputs, &entries);
  } catch (const Error& e) {
    Throw(e.kind(), Who(attrs), ", in its subgraph ", which, ": ", e.what());
  }
  for (size_t i = 0; i < inputs->size(); ++i) (*inputs)[i] = entries[ig.entry_id(ig.input_nodes()[i], 0)];
  std::vector<Shape> outs;
  for (const auto& e : g.outputs) outs.push_back(entries[ig.entry_id(e)]);
  return outs;
}

template <>
std::vector<DType> InferSub<DType>(const NodeAttrs& attrs, const Symbol& g, std::vector<DType>* inputs,
                                   const char* which) {
  IndexedGraph ig(g.outputs);
  std::vector<DType> entries;
  try {
    graph::InferTypes(ig, *inputs, &entries);
  } catch (const Error& e) {
    Throw(e.kind(), Who(attrs), ", in its subgraph ", which, ": ", e.what());
  }
  for (size_t i = 0; i < inputs->size(); ++i) (*inputs)[i] = entries[ig.entry_id(ig.input_nodes()[i], 0)];
  std::vector<DType> outs;
  for (const auto& e : g.outputs) outs.push_back(entries[ig.entry_id(e)]);
  return outs;
}

bool Known(const Shape& s) { return s.is_known(); }
bool Known(DType t) { return t != DType::kUnknown; }
void Assign(const NodeAttrs& a, std::vector<Shape>* v, size_t i, const Shape& s, const char* what) {
  AssignShape(a, v, i, s, what);
}
void Assign(const NodeAttrs& a, std::vector<DType>* v, size_t i, DType t, const char* what) {
  AssignType(a, v, i, t, what);
}

template <typename T>
bool AllKnown(const std::vector<T>& in, const std::vector<T>& out) {
  for (const auto& x : in)
    if (!Known(x)) return false;
  for (const auto& x : out)
    if (!Known(x)) return false;
  return true;
}

// A slice of an array along axis 0, as a shape (as in MXNet, a 1-D array's slices have
// shape (1,)); and the array shape of `steps` slices.
Shape DropFirst(const Shape& s) {
  if (!s.known_ndim() || s.ndim() == 0) return Shape::Unknown();
  if (s.ndim() == 1) {
    Shape one(1);
    one[0] = 1;
    return one;
  }
  Shape r(s.ndim() - 1);
  for (int d = 1; d < s.ndim(); ++d) r[d - 1] = s[d];
  return r;
}
Shape Prepend(int64_t steps, const Shape& s) {
  if (!s.known_ndim()) return Shape::Unknown();
  Shape r(s.ndim() + 1);
  r[0] = steps;
  for (int d = 0; d < s.ndim(); ++d) r[d + 1] = s[d];
  return r;
}

// foreach: data inputs are sliced along axis 0; the data outputs stack the steps.
template <typename T>
bool ForeachInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  ForeachLayout l = CheckForeach(attrs);
  const Symbol& g = Subgraph(attrs, 0);
  std::vector<T> sub(NumGraphInputs(g));
  int64_t steps = -1;
  if constexpr (std::is_same_v<T, Shape>) {
    for (size_t i = 0; i < l.num_data; ++i) {
      const Shape& s = (*in)[i];
      if (s.known_ndim() && s.ndim() == 0)
        Throw(ErrorKind::kShape, Who(attrs), ": data input ", i, " is a scalar (shape ()); foreach iterates over "
              "axis 0, so it needs at least one axis");
      if (s.known_ndim() && s[0] >= 0) {
        if (steps >= 0 && s[0] != steps)
          Throw(ErrorKind::kShape, Who(attrs), ": the data inputs differ in length along axis 0: ", steps, " and ",
                s[0], " (input ", i, ")");
        steps = s[0];
      }
      sub[l.data[i]] = DropFirst(s);
    }
  } else {
    for (size_t i = 0; i < l.num_data; ++i) sub[l.data[i]] = (*in)[i];
  }
  for (size_t j = 0; j < l.num_state; ++j) sub[l.state[j]] = (*in)[l.num_data + j];
  for (size_t k = 0; k < l.remain.size(); ++k) sub[l.remain[k]] = (*in)[l.num_data + l.num_state + k];
  // A loop state's output is its next input: what one side knows, the other has.
  for (size_t j = 0; j < l.num_state; ++j) {
    if (!Known(sub[l.state[j]]) && Known((*out)[l.num_out_data + j])) sub[l.state[j]] = (*out)[l.num_out_data + j];
  }
  std::vector<T> outs = InferSub(attrs, g, &sub, "fn");
  for (size_t k = 0; k < l.num_out_data; ++k) {
    if constexpr (std::is_same_v<T, Shape>) {
      if (outs[k].known_ndim()) Assign(attrs, out, k, Prepend(steps, outs[k]), "output");
    } else {
      Assign(attrs, out, k, outs[k], "output");
    }
  }
  for (size_t j = 0; j < l.num_state; ++j) {
    Assign(attrs, out, l.num_out_data + j, outs[l.num_out_data + j], "output");
    Assign(attrs, out, l.num_out_data + j, sub[l.state[j]], "output");
    Assign(attrs, in, l.num_data + j, (*out)[l.num_out_data + j], "input");
  }
  for (size_t k = 0; k < l.remain.size(); ++k) Assign(attrs, in, l.num_data + l.num_state + k, sub[l.remain[k]], "input");
  if constexpr (std::is_same_v<T, Shape>) {
    if (steps >= 0)
      for (size_t i = 0; i < l.num_data; ++i)
        if (sub[l.data[i]].known_ndim() && !((*in)[i].known_ndim() && (*in)[i].ndim() == 1))
          Assign(attrs, in, i, Prepend(steps, sub[l.data[i]]), "input");
  } else {
    for (size_t i = 0; i < l.num_data; ++i) Assign(attrs, in, i, sub[l.data[i]], "input");
  }
  return AllKnown(*in, *out);
}

template <typename T>
bool WhileInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  WhileLayout l = CheckWhile(attrs);
  const auto& p = attrs.Params<WhileLoopParam>();
  const Symbol& cond = Subgraph(attrs, 0);
  const Symbol& func = Subgraph(attrs, 1);
  // A loop variable's output is its next value, so it has its input's shape and dtype.
  for (size_t j = 0; j < l.var.size(); ++j) {
    size_t node_in = l.func_in[l.var[j]];
    if (!Known((*in)[node_in]) && Known((*out)[l.num_out_data + j]))
      Assign(attrs, in, node_in, (*out)[l.num_out_data + j], "input");
  }
  std::vector<T> fsub(l.func_in.size());
  for (size_t i = 0; i < l.func_in.size(); ++i) fsub[i] = (*in)[l.func_in[i]];
  std::vector<T> fouts = InferSub(attrs, func, &fsub, "func");
  for (size_t i = 0; i < l.func_in.size(); ++i) Assign(attrs, in, l.func_in[i], fsub[i], "input");
  std::vector<T> csub(l.cond_in.size());
  for (size_t i = 0; i < l.cond_in.size(); ++i) csub[i] = (*in)[l.cond_in[i]];
  InferSub(attrs, cond, &csub, "cond");
  for (size_t i = 0; i < l.cond_in.size(); ++i) Assign(attrs, in, l.cond_in[i], csub[i], "input");
  for (size_t k = 0; k < l.num_out_data; ++k) {
    if constexpr (std::is_same_v<T, Shape>) {
      if (fouts[k].known_ndim()) Assign(attrs, out, k, Prepend(p.max_iterations, fouts[k]), "output");
    } else {
      Assign(attrs, out, k, fouts[k], "output");
    }
  }
  for (size_t j = 0; j < l.var.size(); ++j) {
    Assign(attrs, out, l.num_out_data + j, fouts[l.num_out_data + j], "output");
    Assign(attrs, out, l.num_out_data + j, (*in)[l.func_in[l.var[j]]], "output");
  }
  return AllKnown(*in, *out);
}

template <typename T>
bool CondInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  CondLayout l = CheckCond(attrs);
  const char* names[3] = {"cond", "then_branch", "else_branch"};
  for (size_t k = 0; k < 3; ++k) {
    std::vector<T> sub(l.locs[k].size());
    for (size_t i = 0; i < sub.size(); ++i) sub[i] = (*in)[l.locs[k][i]];
    std::vector<T> outs = InferSub(attrs, Subgraph(attrs, k), &sub, names[k]);
    for (size_t i = 0; i < sub.size(); ++i) Assign(attrs, in, l.locs[k][i], sub[i], "input");
    if (k > 0)
      for (size_t o = 0; o < outs.size(); ++o) Assign(attrs, out, o, outs[o], "output");
  }
  return AllKnown(*in, *out);
}

// The backward operators: inputs are the forward's output gradients then its inputs;
// outputs, one gradient per forward input. Their rules are the forward's, with every
// output gradient checked against the forward output it stands for.
template <typename T>
bool BackwardInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out, size_t num_fwd_out,
                   bool (*forward)(const NodeAttrs&, std::vector<T>*, std::vector<T>*)) {
  std::vector<T> fin(in->begin() + num_fwd_out, in->end());
  std::vector<T> fout(in->begin(), in->begin() + num_fwd_out);
  for (size_t i = 0; i < fin.size(); ++i) {
    if (!Known(fin[i]) && Known((*out)[i])) fin[i] = (*out)[i];
  }
  forward(attrs, &fin, &fout);
  for (size_t o = 0; o < num_fwd_out; ++o) Assign(attrs, in, o, fout[o], "input");
  for (size_t i = 0; i < fin.size(); ++i) {
    Assign(attrs, in, num_fwd_out + i, fin[i], "input");
    Assign(attrs, out, i, fin[i], "output");
  }
  return AllKnown(*in, *out);
}

bool ForeachShape(const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
  return ForeachInfer(a, in, out);
}
bool ForeachType(const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
  return ForeachInfer(a, in, out);
}
bool WhileShape(const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) { return WhileInfer(a, in, out); }
bool WhileType(const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) { return WhileInfer(a, in, out); }
bool CondShape(const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) { return CondInfer(a, in, out); }
bool CondType(const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) { return CondInfer(a, in, out); }

int ForeachOutputs(const NodeAttrs& a) { return a.Params<ForeachParam>().num_outputs; }
int WhileOutputs(const NodeAttrs& a) { return a.Params<WhileLoopParam>().num_outputs; }
int CondOutputs(const NodeAttrs& a) { return a.Params<CondParam>().num_outputs; }

FInferShape BackwardShapeOf(bool (*fwd)(const NodeAttrs&, std::vector<Shape>*, std::vector<Shape>*),
                            int (*num_out)(const NodeAttrs&)) {
  return [fwd, num_out](const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
    return BackwardInfer<Shape>(a, in, out, static_cast<size_t>(num_out(a)), fwd);
  };
}
FInferType BackwardTypeOf(bool (*fwd)(const NodeAttrs&, std::vector<DType>*, std::vector<DType>*),
                          int (*num_out)(const NodeAttrs&)) {
  return [fwd, num_out](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
    return BackwardInfer<DType>(a, in, out, static_cast<size_t>(num_out(a)), fwd);
  };
}

// ------------------------------------------------------------------ running subgraphs
// A subgraph bound to an executor for one set of input shapes and dtypes. Inputs go by
// subgraph input position (list_inputs order: arguments and auxiliary states as they come).
class BoundGraph {
 public:
  BoundGraph(const Symbol& g, Context ctx, const std::vector<NDArray>& like, bool with_grad) {
    IndexedGraph ig(g.outputs);
    std::vector<NDArray> args, grads, aux;
    std::vector<OpReq> req;
    for (size_t i = 0; i < ig.input_nodes().size(); ++i) {
      NDArray a(like[i].shape(), ctx, like[i].dtype());
      inputs_.push_back(a);
      if (ig.is_mutable_input(ig.input_nodes()[i])) {
        aux.push_back(a);
        grad_of_.push_back(-1);
        continue;
      }
      args.push_back(a);
      grad_of_.push_back(with_grad ? static_cast<int>(grads.size()) : -1);
      if (with_grad) {
        NDArray z(like[i].shape(), ctx, like[i].dtype());
        Zero(z);
        grads.push_back(z);
        req.push_back(OpReq::kWriteTo);
      } else {
        grads.push_back(NDArray());
        req.push_back(OpReq::kNullOp);
      }
    }
    grads_ = grads;
    exe_ = std::make_unique<executor::Executor>(g, ctx, args, grads, req, aux);
  }

  // The graph's own array of input i (as the last run left it).
  const NDArray& input(size_t i) const { return inputs_[i]; }

  // The outputs of one run (the executor's own arrays: copy what must outlive the next run).
  const std::vector<NDArray>& Forward(const std::vector<NDArray>& in, bool is_train) {
    Load(in);
    exe_->Forward(is_train);
    return exe_->outputs();
  }

  // The gradient of each input (zeros where an input does not reach the outputs), after a
  // forward on `in` with `head_grads` flowing into the outputs.
  std::vector<NDArray> Backward(const std::vector<NDArray>& in, const std::vector<NDArray>& head_grads) {
    Load(in);
    exe_->Forward(true);
    exe_->Backward(head_grads);
    std::vector<NDArray> r;
    for (int k : grad_of_) r.push_back(k >= 0 ? grads_[k] : NDArray());
    return r;
  }

  // Sets `a` to zeros (through the engine).
  static void Zero(const NDArray& a) {
    static const NodeAttrs zeros = MakeAttrs(Op::Get("zeros_like"), {});
    std::vector<NDArray> out{a};
    Context ctx = a.ctx();
    imperative::Invoke(zeros, {a}, &out, &ctx);
  }

 private:
  void Load(const std::vector<NDArray>& in) {
    for (size_t i = 0; i < inputs_.size(); ++i) CopyFromTo(in[i], inputs_[i]);
  }

  std::vector<NDArray> inputs_, grads_;
  std::vector<int> grad_of_;
  std::unique_ptr<executor::Executor> exe_;
};

// A fresh array holding a copy of `a` (the executor reuses its output arrays).
NDArray Keep(const NDArray& a) {
  NDArray c(a.shape(), a.ctx(), a.dtype());
  CopyFromTo(a, c);
  return c;
}

// dst (op)= src by the request.
void Store(const NDArray& dst, const NDArray& src, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (req == OpReq::kAddTo) {
    static const NodeAttrs add = MakeAttrs(Op::Get("elemwise_add"), {});
    std::vector<NDArray> out{dst};
    Context ctx = dst.ctx();
    imperative::Invoke(add, {dst, src}, &out, &ctx);
    return;
  }
  CopyFromTo(src, dst);
}

// acc += x, into a fresh accumulator on first use.
void Accumulate(NDArray* acc, const NDArray& x) {
  if (x.is_none()) return;
  if (acc->is_none()) {
    *acc = Keep(x);
    return;
  }
  Store(*acc, x, OpReq::kAddTo);
}

// The truth of a one-element array (waits for it).
bool Truth(const NodeAttrs& attrs, const NDArray& a) {
  if (a.Size() != 1)
    Throw(ErrorKind::kValue, Who(attrs), ": the condition must have exactly one element, got shape ",
          a.shape().ToString());
  NDArray host = a.Copy(Context::CPU());
  host.WaitToRead();
  bool truth = false;
  TBlob b = host.data();
  WEFT_TYPE_SWITCH(a.dtype(), DT, { truth = static_cast<double>(static_cast<const DT*>(b.dptr)[0]) != 0; });
  return truth;
}

std::vector<NDArray> Gather(const std::vector<NDArray>& from, const std::vector<int>& locs) {
  std::vector<NDArray> r;
  for (int l : locs) r.push_back(from[l]);
  return r;
}

// Same memory as `a`, with an engine variable of its own (see the file comment).
NDArray Alias(const NDArray& a) {
  if (a.is_none()) return a;
  TBlob b = a.data();
  return NDArray::FromExternal(b.dptr, a.shape(), a.dtype(), a.ctx(), [keep = a.chunk()] {});
}

// Runs `body` on the call's arrays (as aliases) off the engine's workers, then completes
// the call once everything it pushed on them is done.
void RunAsync(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
              std::function<void(const std::vector<NDArray>&, const std::vector<NDArray>&)> body,
              engine::CallbackOnComplete done) {
  std::vector<NDArray> ain, aout;
  for (const auto& a : in) ain.push_back(Alias(a));
  for (const auto& a : out) aout.push_back(Alias(a));
  auto task = [ain = std::move(ain), aout = std::move(aout), body = std::move(body), done]() mutable {
    std::exception_ptr error;
    try {
      body(ain, aout);
    } catch (...) {
      error = std::current_exception();
    }
    for (const auto* v : {&ain, &aout}) {
      for (const auto& a : *v) {
        try {
          a.WaitToWrite();
        } catch (...) {
          if (!error) error = std::current_exception();
        }
      }
    }
    ain.clear();
    aout.clear();
    done(error);
  };
  // The naive engine runs a push on the pushing thread, which may run the task itself.
  if (engine::CurrentWorkerOwner() == nullptr) {
    task();
  } else {
    custom::RunOnCallbackThread(std::move(task));
  }
}

Context CallContext(const std::vector<NDArray>& in, const std::vector<NDArray>& out) {
  if (!in.empty()) return in[0].ctx();
  return out.empty() ? Context::CPU() : out[0].ctx();
}

// ------------------------------------------------------------------ foreach
// Slice t of a data array (or of its gradient) along axis 0, with DropFirst's shape.
NDArray DataSlice(const NDArray& a, int64_t t) { return a.shape().ndim() == 1 ? a.Slice(t, t + 1) : a.At(t); }

// The subgraph inputs of step t: slices of the data, the states, the rest.
std::vector<NDArray> ForeachStepInputs(const ForeachLayout& l, const std::vector<NDArray>& in, int64_t t,
                                       const std::vector<NDArray>& states) {
  std::vector<NDArray> sub(l.num_in);
  for (size_t i = 0; i < l.num_data; ++i) sub[l.data[i]] = DataSlice(in[i], t);
  for (size_t j = 0; j < l.num_state; ++j) sub[l.state[j]] = states[j];
  for (size_t k = 0; k < l.remain.size(); ++k) sub[l.remain[k]] = in[l.num_data + l.num_state + k];
  return sub;
}

std::vector<NDArray> Like(const ForeachLayout& l, const std::vector<NDArray>& in) {
  std::vector<NDArray> states(in.begin() + l.num_data, in.begin() + l.num_data + l.num_state);
  std::vector<NDArray> sub(l.num_in);
  for (size_t i = 0; i < l.num_data; ++i) sub[l.data[i]] = NDArray(DropFirst(in[i].shape()), in[i].ctx(), in[i].dtype(), true);
  for (size_t j = 0; j < l.num_state; ++j) sub[l.state[j]] = states[j];
  for (size_t k = 0; k < l.remain.size(); ++k) sub[l.remain[k]] = in[l.num_data + l.num_state + k];
  return sub;
}

int64_t Steps(const NodeAttrs& attrs, const std::vector<NDArray>& data, size_t n) {
  int64_t steps = data[0].shape()[0];
  for (size_t i = 1; i < n; ++i)
    if (data[i].shape()[0] != steps)
      Throw(ErrorKind::kShape, Who(attrs), ": the data inputs differ in length along axis 0");
  return steps;
}

// Runs the loop; returns the states each step started from (for the backward) when asked.
std::vector<std::vector<NDArray>> ForeachRun(const NodeAttrs& attrs, const ForeachLayout& l,
                                             const std::vector<NDArray>& in, const std::vector<NDArray>* out,
                                             const std::vector<OpReq>* req, bool is_train, bool keep_states) {
  const Symbol& g = Subgraph(attrs, 0);
  Context ctx = CallContext(in, {});
  int64_t steps = Steps(attrs, in, l.num_data);
  std::vector<NDArray> states(in.begin() + l.num_data, in.begin() + l.num_data + l.num_state);
  std::vector<std::vector<NDArray>> kept;
  if (steps > 0) {
    BoundGraph bg(g, ctx, Like(l, in), false);
    for (int64_t t = 0; t < steps; ++t) {
      if (keep_states) kept.push_back(states);
      const std::vector<NDArray>& outs = bg.Forward(ForeachStepInputs(l, in, t, states), is_train);
      if (out)
        for (size_t k = 0; k < l.num_out_data; ++k) Store((*out)[k].At(t), outs[k], (*req)[k]);
      for (size_t j = 0; j < l.num_state; ++j) states[j] = Keep(outs[l.num_out_data + j]);
    }
  }
  if (out)
    for (size_t j = 0; j < l.num_state; ++j) Store((*out)[l.num_out_data + j], states[j], (*req)[l.num_out_data + j]);
  return kept;
}

void ForeachCompute(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                    const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    ForeachLayout l = CheckForeach(attrs);
    ForeachRun(attrs, l, ain, &aout, &req, is_train, false);
  }, done);
}

void ForeachBackward(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                     const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    ForeachLayout l = CheckForeach(attrs);
    const size_t no = l.num_out_data + l.num_state;
    std::vector<NDArray> ograd(ain.begin(), ain.begin() + no);
    std::vector<NDArray> fin(ain.begin() + no, ain.end());
    Context ctx = CallContext(fin, aout);
    int64_t steps = Steps(attrs, fin, l.num_data);
    std::vector<std::vector<NDArray>> states = ForeachRun(attrs, l, fin, nullptr, nullptr, is_train, true);
    std::vector<NDArray> state_grad(ograd.begin() + l.num_out_data, ograd.end());
    std::vector<NDArray> remain_grad(l.remain.size());
    std::vector<NDArray> data_grad;
    for (size_t i = 0; i < l.num_data; ++i) {
      data_grad.push_back(NDArray(fin[i].shape(), ctx, fin[i].dtype()));
      if (steps == 0) BoundGraph::Zero(data_grad.back());
    }
    if (steps > 0) {
      BoundGraph bg(Subgraph(attrs, 0), ctx, Like(l, fin), true);
      for (int64_t t = steps - 1; t >= 0; --t) {
        std::vector<NDArray> heads;
        for (size_t k = 0; k < l.num_out_data; ++k) heads.push_back(ograd[k].At(t));
        heads.insert(heads.end(), state_grad.begin(), state_grad.end());
        std::vector<NDArray> g = bg.Backward(ForeachStepInputs(l, fin, t, states[t]), heads);
        for (size_t i = 0; i < l.num_data; ++i) CopyFromTo(g[l.data[i]], DataSlice(data_grad[i], t));
        for (size_t j = 0; j < l.num_state; ++j) state_grad[j] = Keep(g[l.state[j]]);
        for (size_t k = 0; k < l.remain.size(); ++k) Accumulate(&remain_grad[k], g[l.remain[k]]);
      }
    }
    for (size_t i = 0; i < l.num_data; ++i) Store(aout[i], data_grad[i], req[i]);
    for (size_t j = 0; j < l.num_state; ++j) Store(aout[l.num_data + j], state_grad[j], req[l.num_data + j]);
    for (size_t k = 0; k < l.remain.size(); ++k) {
      size_t o = l.num_data + l.num_state + k;
      if (remain_grad[k].is_none()) {
        remain_grad[k] = NDArray(fin[o].shape(), ctx, fin[o].dtype());
        BoundGraph::Zero(remain_grad[k]);
      }
      Store(aout[o], remain_grad[k], req[o]);
    }
  }, done);
}

// ------------------------------------------------------------------ while_loop
struct WhileTrace {
  std::vector<std::vector<NDArray>> inputs;  // the node inputs (loop variables updated) each step started from
  std::vector<NDArray> final_inputs;
};

WhileTrace WhileRun(const NodeAttrs& attrs, const WhileLayout& l, const std::vector<NDArray>& in,
                    const std::vector<NDArray>* out, const std::vector<OpReq>* req, bool is_train, bool keep) {
  const auto& p = attrs.Params<WhileLoopParam>();
  Context ctx = CallContext(in, {});
  std::vector<NDArray> cur = in;
  BoundGraph cond(Subgraph(attrs, 0), ctx, Gather(cur, l.cond_in), false);
  std::unique_ptr<BoundGraph> func;
  WhileTrace trace;
  int steps = 0;
  while (steps < p.max_iterations && Truth(attrs, cond.Forward(Gather(cur, l.cond_in), false)[0])) {
    if (!func) func = std::make_unique<BoundGraph>(Subgraph(attrs, 1), ctx, Gather(cur, l.func_in), false);
    if (keep) trace.inputs.push_back(cur);
    const std::vector<NDArray>& outs = func->Forward(Gather(cur, l.func_in), is_train);
    if (out)
      for (size_t k = 0; k < l.num_out_data; ++k) Store((*out)[k].At(steps), outs[k], (*req)[k]);
    for (size_t j = 0; j < l.var.size(); ++j) {
      const NDArray& v = outs[l.num_out_data + j];
      const NDArray& old = cur[l.func_in[l.var[j]]];
      if (v.shape() != old.shape())
        Throw(ErrorKind::kShape, Who(attrs), ": loop variable ", j, " changed shape from ", old.shape().ToString(),
              " to ", v.shape().ToString(), " in step ", steps);
      cur[l.func_in[l.var[j]]] = Keep(v);
    }
    ++steps;
  }
  if (out) {
    // The rows after the last step are zeros (MXNet leaves them undefined).
    for (size_t k = 0; k < l.num_out_data; ++k) {
      if ((*req)[k] == OpReq::kNullOp || (*req)[k] == OpReq::kAddTo || steps >= p.max_iterations) continue;
      BoundGraph::Zero((*out)[k].Slice(steps, p.max_iterations));
    }
    for (size_t j = 0; j < l.var.size(); ++j)
      Store((*out)[l.num_out_data + j], cur[l.func_in[l.var[j]]], (*req)[l.num_out_data + j]);
  }
  trace.final_inputs = cur;
  return trace;
}

void WhileCompute(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                  const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    WhileRun(attrs, CheckWhile(attrs), ain, &aout, &req, is_train, false);
  }, done);
}

void WhileBackward(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                   const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    WhileLayout l = CheckWhile(attrs);
    const size_t no = l.num_out_data + l.var.size();
    std::vector<NDArray> ograd(ain.begin(), ain.begin() + no);
    std::vector<NDArray> fin(ain.begin() + no, ain.end());
    Context ctx = CallContext(fin, aout);
    WhileTrace trace = WhileRun(attrs, l, fin, nullptr, nullptr, is_train, true);
    std::vector<NDArray> acc(fin.size());
    std::vector<NDArray> var_grad(ograd.begin() + l.num_out_data, ograd.end());
    std::vector<int> var_of(l.func_in.size(), -1);
    for (size_t j = 0; j < l.var.size(); ++j) var_of[l.var[j]] = static_cast<int>(j);
    if (!trace.inputs.empty()) {
      BoundGraph func(Subgraph(attrs, 1), ctx, Gather(fin, l.func_in), true);
      for (size_t t = trace.inputs.size(); t-- > 0;) {
        std::vector<NDArray> heads;
        for (size_t k = 0; k < l.num_out_data; ++k) heads.push_back(ograd[k].At(static_cast<int64_t>(t)));
        heads.insert(heads.end(), var_grad.begin(), var_grad.end());
        std::vector<NDArray> g = func.Backward(Gather(trace.inputs[t], l.func_in), heads);
        for (size_t i = 0; i < l.func_in.size(); ++i) {
          if (var_of[i] >= 0) var_grad[var_of[i]] = Keep(g[i]);
          else Accumulate(&acc[l.func_in[i]], g[i]);
        }
      }
    }
    for (size_t j = 0; j < l.var.size(); ++j) Accumulate(&acc[l.func_in[l.var[j]]], var_grad[j]);
    for (size_t i = 0; i < fin.size(); ++i) {
      if (acc[i].is_none()) {
        acc[i] = NDArray(fin[i].shape(), ctx, fin[i].dtype());
        BoundGraph::Zero(acc[i]);
      }
      Store(aout[i], acc[i], req[i]);
    }
  }, done);
}

// ------------------------------------------------------------------ cond
int CondBranch(const NodeAttrs& attrs, const CondLayout& l, const std::vector<NDArray>& in) {
  BoundGraph cond(Subgraph(attrs, 0), CallContext(in, {}), Gather(in, l.locs[0]), false);
  return Truth(attrs, cond.Forward(Gather(in, l.locs[0]), false)[0]) ? 1 : 2;
}

void CondCompute(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                 const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    CondLayout l = CheckCond(attrs);
    int b = CondBranch(attrs, l, ain);
    BoundGraph branch(Subgraph(attrs, b), CallContext(ain, aout), Gather(ain, l.locs[b]), false);
    const std::vector<NDArray>& outs = branch.Forward(Gather(ain, l.locs[b]), is_train);
    for (size_t o = 0; o < aout.size(); ++o) {
      if (outs[o].shape() != aout[o].shape())
        Throw(ErrorKind::kShape, Who(attrs), ": output ", o, " of the branch taken has shape ", outs[o].shape().ToString(),
              " but the node's output has ", aout[o].shape().ToString(), " (both branches must agree)");
      Store(aout[o], outs[o], req[o]);
    }
  }, done);
}

void CondBackward(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                  const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    CondLayout l = CheckCond(attrs);
    const size_t no = static_cast<size_t>(attrs.Params<CondParam>().num_outputs);
    std::vector<NDArray> ograd(ain.begin(), ain.begin() + no);
    std::vector<NDArray> fin(ain.begin() + no, ain.end());
    Context ctx = CallContext(fin, aout);
    int b = CondBranch(attrs, l, fin);
    std::vector<NDArray> acc(fin.size());
    BoundGraph branch(Subgraph(attrs, b), ctx, Gather(fin, l.locs[b]), true);
    std::vector<NDArray> g = branch.Backward(Gather(fin, l.locs[b]), ograd);
    for (size_t i = 0; i < g.size(); ++i) Accumulate(&acc[l.locs[b][i]], g[i]);
    for (size_t i = 0; i < fin.size(); ++i) {
      if (acc[i].is_none()) {
        acc[i] = NDArray(fin[i].shape(), ctx, fin[i].dtype());
        BoundGraph::Zero(acc[i]);
      }
      Store(aout[i], acc[i], req[i]);
    }
  }, done);
}

// ------------------------------------------------------------------ _CachedOp
const Symbol& CachedGraph(const NodeAttrs& attrs) {
  const auto& g = attrs.Params<CachedOpParam>().graph;
  if (!g)
    Throw(ErrorKind::kValue, Who(attrs), ": needs subgraph= (the symbol JSON of the graph it runs)");
  return *g;
}

int CachedOpInputs(const NodeAttrs& a) { return static_cast<int>(NumGraphInputs(CachedGraph(a))); }

// The inputs the node writes, as MXNet's CachedOp: its graph's auxiliary states (BatchNorm's
// moving statistics), which a training-mode forward updates.
std::vector<int> CachedOpMutateInputs(const NodeAttrs& a) {
  CachedGraph(a);
  return a.Params<CachedOpParam>().mutable_inputs;
}
int CachedOpOutputs(const NodeAttrs& a) { return static_cast<int>(CachedGraph(a).outputs.size()); }

template <typename T>
bool CachedOpInfer(const NodeAttrs& attrs, std::vector<T>* in, std::vector<T>* out) {
  std::vector<T> sub = *in;
  std::vector<T> outs = InferSub(attrs, CachedGraph(attrs), &sub, "subgraph");
  for (size_t i = 0; i < sub.size(); ++i) Assign(attrs, in, i, sub[i], "input");
  for (size_t o = 0; o < outs.size(); ++o) Assign(attrs, out, o, outs[o], "output");
  return AllKnown(*in, *out);
}

void CachedOpCompute(const NodeAttrs& attrs, const OpContext& octx, const std::vector<NDArray>& in,
                     const std::vector<OpReq>& req, const std::vector<NDArray>& out, engine::CallbackOnComplete done) {
  bool is_train = octx.is_train;
  RunAsync(in, out, [attrs, req, is_train](const std::vector<NDArray>& ain, const std::vector<NDArray>& aout) {
    BoundGraph g(CachedGraph(attrs), CallContext(ain, aout), ain, false);
    const std::vector<NDArray>& outs = g.Forward(ain, is_train);
    for (size_t o = 0; o < aout.size(); ++o) Store(aout[o], outs[o], req[o]);
    // The graph ran on copies of the inputs: what it wrote into its auxiliary states goes
    // back into the caller's.
    if (is_train) {
      for (int i : attrs.Params<CachedOpParam>().mutable_inputs) CopyFromTo(g.input(i), ain[i]);
    }
  }, done);
}

// The gradient graph of the subgraph (reading the output gradients, as new variables, and
// the subgraph's inputs) as another _CachedOp, called on the node's output gradients and
// inputs in the order that graph lists its inputs. Auxiliary states get no gradient.
std::vector<GradValue> CachedOpGradient(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  Symbol fwd = CachedGraph(attrs).Copy();
  IndexedGraph ig(fwd.outputs);
  std::unordered_map<const graph::Node*, graph::NodePtr> owner;
  std::unordered_set<std::string> names;
  graph::DFSVisit(fwd.outputs, [&](const graph::NodePtr& n) {
    owner[n.get()] = n;
    names.insert(n->attrs.name);
  });
  std::unordered_map<const graph::Node*, GradValue> value_of;
  std::vector<graph::NodeEntry> xs;
  std::vector<size_t> x_pos;
  for (size_t i = 0; i < ig.input_nodes().size(); ++i) {
    const graph::Node* v = ig[ig.input_nodes()[i]].source;
    value_of[v] = a.inputs[i];
    if (ig.is_mutable_input(ig.input_nodes()[i])) continue;
    xs.push_back({owner.at(v), 0, 0});
    x_pos.push_back(i);
  }
  std::vector<graph::NodeEntry> heads;
  for (size_t o = 0; o < fwd.outputs.size(); ++o) {
    std::string name = "head_grad" + std::to_string(o);
    while (names.count(name)) name = "_" + name;
    heads.push_back(Symbol::Variable(name).outputs[0]);
    value_of[heads.back().node.get()] = a.out_grads[o];
  }
  Symbol grad;
  grad.outputs = graph::Gradient(fwd.outputs, xs, heads);
  // The gradient graph recomputes the forward (in training) and so would update the
  // auxiliary states a second time: its operators read copies of them, so that the
  // gradient node writes none of its inputs.
  static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
  std::vector<graph::NodePtr> writers;
  graph::DFSVisit(grad.outputs, [&](const graph::NodePtr& n) {
    if (!n->is_variable() && mutates.Contains(n->op())) writers.push_back(n);
  });
  int copies = 0;
  for (const graph::NodePtr& n : writers) {
    for (int j : mutates[n->op()](n->attrs)) {
      if (j < 0 || static_cast<size_t>(j) >= n->inputs.size() || !n->inputs[j].node->is_variable()) continue;
      graph::NodePtr c = graph::Node::Create();
      c->attrs = MakeAttrs(Op::Get("_copy"), {});
      c->attrs.name = "_aux_copy" + std::to_string(copies++);
      c->inputs = {n->inputs[j]};
      n->inputs[j] = {c, 0, 0};
    }
  }
  IndexedGraph gg(grad.outputs);
  std::vector<GradValue> call_inputs;
  for (uint32_t id : gg.input_nodes()) call_inputs.push_back(value_of.at(gg[id].source));
  std::vector<GradValue> got = b.Call("_CachedOp", call_inputs, {{"subgraph", graph::SaveJSON(grad)}});
  std::vector<GradValue> grads(a.inputs.size());
  for (size_t k = 0; k < x_pos.size(); ++k) grads[x_pos[k]] = got[k];
  return grads;
}

FListNames CachedGraphNames(bool inputs) {
  return [inputs](const NodeAttrs& a) {
    const Symbol& g = CachedGraph(a);
    return inputs ? g.ListInputNames(Symbol::InputKind::kAll) : g.ListOutputs();
  };
}

// ------------------------------------------------------------------ registration helpers
FListNames DataNames(int graphs, int (*num_args)(const NodeAttrs&)) {
  return [graphs, num_args](const NodeAttrs& a) {
    std::vector<std::string> names;
    for (int i = 0; i < num_args(a) - graphs; ++i) names.push_back("data" + std::to_string(i));
    return names;
  };
}

int ForeachArgs(const NodeAttrs& a) { return a.Params<ForeachParam>().num_args; }
int WhileArgs(const NodeAttrs& a) { return a.Params<WhileLoopParam>().num_args; }
int CondArgs(const NodeAttrs& a) { return a.Params<CondParam>().num_args; }

// The gradient: one backward node with the forward's parameters and subgraphs (both in its
// attributes), reading the output gradients and the forward inputs.
FGradient GradientVia(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    std::vector<GradValue> ins = a.out_grads;
    ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
    return b.Call(backward, ins, attrs.dict);
  };
}

}  // namespace

WEFT_REGISTER_OP(_foreach)
    .Describe("Runs a graph (the body) over the slices of its data inputs along axis 0, carrying loop states "
              "from step to step: mx.sym.contrib.foreach. Its outputs are the body's data outputs stacked along a "
              "new axis 0, then the final states.")
    .SetParams<ForeachParam>()
    .SetKeyVarNumArgs("num_args")
    .SetNumInputs([](const NodeAttrs& a) { return ForeachArgs(a) - 1; })
    .SetNumOutputs(ForeachOutputs)
    .AddArgument("fn", "Symbol", "Input graph.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The input arrays that include data arrays and states.")
    .SetAttr<int>("TNumInputGraphs", 1)
    .SetAttr<FListNames>("FListInputNames", DataNames(1, ForeachArgs))
    .SetAttr<FInferShape>("FInferShape", ForeachShape)
    .SetAttr<FInferType>("FInferType", ForeachType)
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", ForeachCompute)
    .SetAttr<FGradient>("FGradient", GradientVia("_backward_foreach"));

WEFT_REGISTER_OP(_backward_foreach)
    .Describe("The gradient of _foreach: its inputs are the output gradients then the forward inputs.")
    .SetParams<ForeachParam>()
    .SetNumInputs([](const NodeAttrs& a) { return ForeachOutputs(a) + ForeachArgs(a) - 1; })
    .SetNumOutputs([](const NodeAttrs& a) { return ForeachArgs(a) - 1; })
    .AddArgument("fn", "Symbol", "The forward's body graph.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The output gradients, then the forward inputs.")
    .SetAttr<int>("TNumInputGraphs", 1)
    .SetAttr<FInferShape>("FInferShape", BackwardShapeOf(ForeachShape, ForeachOutputs))
    .SetAttr<FInferType>("FInferType", BackwardTypeOf(ForeachType, ForeachOutputs))
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", ForeachBackward);

WEFT_REGISTER_OP(_while_loop)
    .Describe("Runs a graph (func) while another graph (cond) gives true, at most max_iterations times, carrying "
              "the loop variables from step to step: mx.sym.contrib.while_loop. Its outputs are func's step outputs "
              "stacked along a new axis 0 of length max_iterations (rows after the last step are zeros), then the "
              "final loop variables.")
    .SetParams<WhileLoopParam>()
    .SetKeyVarNumArgs("num_args")
    .SetNumInputs([](const NodeAttrs& a) { return WhileArgs(a) - 2; })
    .SetNumOutputs(WhileOutputs)
    .AddArgument("cond", "Symbol", "Input graph for the loop condition.")
    .AddArgument("func", "Symbol", "Input graph for the loop body.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The input arrays that include data arrays and states.")
    .SetAttr<int>("TNumInputGraphs", 2)
    .SetAttr<FListNames>("FListInputNames", DataNames(2, WhileArgs))
    .SetAttr<FInferShape>("FInferShape", WhileShape)
    .SetAttr<FInferType>("FInferType", WhileType)
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", WhileCompute)
    .SetAttr<FGradient>("FGradient", GradientVia("_backward_while_loop"));

WEFT_REGISTER_OP(_backward_while_loop)
    .Describe("The gradient of _while_loop: its inputs are the output gradients then the forward inputs.")
    .SetParams<WhileLoopParam>()
    .SetNumInputs([](const NodeAttrs& a) { return WhileOutputs(a) + WhileArgs(a) - 2; })
    .SetNumOutputs([](const NodeAttrs& a) { return WhileArgs(a) - 2; })
    .AddArgument("cond", "Symbol", "The forward's loop condition graph.")
    .AddArgument("func", "Symbol", "The forward's loop body graph.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The output gradients, then the forward inputs.")
    .SetAttr<int>("TNumInputGraphs", 2)
    .SetAttr<FInferShape>("FInferShape", BackwardShapeOf(WhileShape, WhileOutputs))
    .SetAttr<FInferType>("FInferType", BackwardTypeOf(WhileType, WhileOutputs))
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", WhileBackward);

WEFT_REGISTER_OP(_cond)
    .Describe("Runs one of two graphs (then_branch or else_branch) as a third graph (cond, one element) is true "
              "or false: mx.sym.contrib.cond. Its outputs are the branch's.")
    .SetParams<CondParam>()
    .SetKeyVarNumArgs("num_args")
    .SetNumInputs([](const NodeAttrs& a) { return CondArgs(a) - 3; })
    .SetNumOutputs(CondOutputs)
    .AddArgument("cond", "Symbol", "Input graph for the condition.")
    .AddArgument("then_branch", "Symbol", "Input graph for the then branch.")
    .AddArgument("else_branch", "Symbol", "Input graph for the else branch.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The input arrays that include data arrays and states.")
    .SetAttr<int>("TNumInputGraphs", 3)
    .SetAttr<FListNames>("FListInputNames", DataNames(3, CondArgs))
    .SetAttr<FInferShape>("FInferShape", CondShape)
    .SetAttr<FInferType>("FInferType", CondType)
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", CondCompute)
    .SetAttr<FGradient>("FGradient", GradientVia("_backward_cond"));

WEFT_REGISTER_OP(_backward_cond)
    .Describe("The gradient of _cond: its inputs are the output gradients then the forward inputs.")
    .SetParams<CondParam>()
    .SetNumInputs([](const NodeAttrs& a) { return CondOutputs(a) + CondArgs(a) - 3; })
    .SetNumOutputs([](const NodeAttrs& a) { return CondArgs(a) - 3; })
    .AddArgument("cond", "Symbol", "The forward's condition graph.")
    .AddArgument("then_branch", "Symbol", "The forward's then branch.")
    .AddArgument("else_branch", "Symbol", "The forward's else branch.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The output gradients, then the forward inputs.")
    .SetAttr<int>("TNumInputGraphs", 3)
    .SetAttr<FInferShape>("FInferShape", BackwardShapeOf(CondShape, CondOutputs))
    .SetAttr<FInferType>("FInferType", BackwardTypeOf(CondType, CondOutputs))
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", CondBackward);

WEFT_REGISTER_OP(_CachedOp)
    .Describe("Runs a graph (subgraph=, its symbol JSON) on its inputs, given in the order the graph lists its "
              "inputs: MXNet's node for a hybridized block's call (autograd.get_symbol gives one). Its outputs are "
              "the graph's.")
    .SetParams<CachedOpParam>()
    .SetNumInputs(CachedOpInputs)
    .SetNumOutputs(CachedOpOutputs)
    .AddArgument("data", "NDArray-or-Symbol[]", "input data list")
    .SetAttr<FListNames>("FListInputNames", CachedGraphNames(true))
    .SetAttr<FListNames>("FListOutputNames", CachedGraphNames(false))
    .SetAttr<FInferShape>("FInferShape", CachedOpInfer<Shape>)
    .SetAttr<FInferType>("FInferType", CachedOpInfer<DType>)
    .SetAttr<FMutateInputs>("FMutateInputs", CachedOpMutateInputs)
    .SetAttr<FComputeAsync>("FComputeAsync<cpu>", CachedOpCompute)
    .SetAttr<FGradient>("FGradient", CachedOpGradient);

// The parsers that read the subgraphs, installed once every attribute above is set.
[[maybe_unused]] const bool kParsersInstalled = [] {
  OpRegistry* r = OpRegistry::Get();
  ParseWithGraphs<ForeachParam>(r->Register("_foreach"));
  ParseWithGraphs<ForeachParam>(r->Register("_backward_foreach"));
  ParseWithGraphs<WhileLoopParam>(r->Register("_while_loop"));
  ParseWithGraphs<WhileLoopParam>(r->Register("_backward_while_loop"));
  ParseWithGraphs<CondParam>(r->Register("_cond"));
  ParseWithGraphs<CondParam>(r->Register("_backward_cond"));
  const ParamSchema<CachedOpParam>& schema = SchemaOf<CachedOpParam>();
  r->Register("_CachedOp").attr_parser = [&schema](NodeAttrs* attrs) {
    auto parsed = std::make_shared<CachedOpParam>(*schema.Parse("_CachedOp", attrs->dict));
    if (!parsed->subgraph.empty()) {
      parsed->graph = std::make_shared<Symbol>(graph::LoadJSON(parsed->subgraph, "the subgraph of '_CachedOp'"));
      IndexedGraph ig(parsed->graph->outputs);
      for (size_t i = 0; i < ig.input_nodes().size(); ++i)
        if (ig.is_mutable_input(ig.input_nodes()[i])) parsed->mutable_inputs.push_back(static_cast<int>(i));
    }
    attrs->parsed = parsed;
  };
  return true;
}();

}  // namespace op
}  // namespace weft

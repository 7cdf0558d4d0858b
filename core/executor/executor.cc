#include "core/executor/executor.h"

#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/imperative/imperative.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using graph::NodeEntry;
using graph::NodePtr;

namespace {

void CheckCount(size_t got, size_t want, const char* what, const std::vector<std::string>& names) {
  if (got == want) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  Throw(ErrorKind::kValue, "bind: expected ", want, " ", what, " (", list, "), got ", got);
}

}  // namespace

Executor::Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
                   std::vector<OpReq> grad_req, std::vector<NDArray> aux)
    : sym_(sym), ctx_(ctx), args_(std::move(args)), arg_grads_(std::move(arg_grads)), aux_(std::move(aux)),
      grad_req_(std::move(grad_req)) {
  std::vector<std::string> arg_names = sym_.ListArguments(), aux_names = sym_.ListAuxiliaryStates();
  CheckCount(args_.size(), arg_names.size(), "arguments", arg_names);
  CheckCount(aux_.size(), aux_names.size(), "auxiliary states", aux_names);
  if (arg_grads_.empty()) arg_grads_.resize(args_.size());
  if (grad_req_.empty()) grad_req_.assign(args_.size(), OpReq::kNullOp);
  CheckCount(arg_grads_.size(), args_.size(), "gradient arrays", arg_names);
  CheckCount(grad_req_.size(), args_.size(), "gradient requests", arg_names);
  for (size_t i = 0; i < args_.size(); ++i) {
    WEFT_CHECK(!args_[i].is_none(), kValue, "bind: argument '", arg_names[i], "' has no array");
    if (grad_req_[i] != OpReq::kNullOp)
      WEFT_CHECK(!arg_grads_[i].is_none(), kValue, "bind: argument '", arg_names[i],
                 "' asks for a gradient but has no gradient array");
  }
  for (size_t i = 0; i < aux_.size(); ++i)
    WEFT_CHECK(!aux_[i].is_none(), kValue, "bind: auxiliary state '", aux_names[i], "' has no array");

  // The variables, by node, and which arguments want gradients.
  IndexedGraph fwd(sym_.outputs);
  std::unordered_map<const graph::Node*, NodePtr> owner;
  graph::DFSVisit(sym_.outputs, [&](const NodePtr& n) { owner[n.get()] = n; });
  std::unordered_map<const graph::Node*, NDArray> bound;
  std::vector<NodeEntry> xs;
  std::vector<size_t> x_args;
  size_t ai = 0, xi = 0;
  for (uint32_t id : fwd.input_nodes()) {
    const graph::Node* n = fwd[id].source;
    if (fwd.is_mutable_input(id)) {
      bound[n] = aux_[xi++];
      continue;
    }
    bound[n] = args_[ai];
    if (grad_req_[ai] != OpReq::kNullOp) {
      xs.push_back({owner.at(n), 0, 0});
      x_args.push_back(ai);
    }
    ++ai;
  }

  // Head gradients are variables of the backward graph.
  std::vector<NodeEntry> heads;
  std::vector<std::string> out_names = sym_.ListOutputs();
  if (!xs.empty()) {
    for (size_t i = 0; i < sym_.outputs.size(); ++i)
      heads.push_back(graph::Symbol::Variable(out_names[i] + "_head_grad").outputs[0]);
    grad_entries_ = graph::Gradient(sym_.outputs, xs, heads);
  }

  std::vector<NodeEntry> all = sym_.outputs;
  all.insert(all.end(), grad_entries_.begin(), grad_entries_.end());
  IndexedGraph g(all);

  // Shapes and types from the bound arrays; head gradients have their output's.
  std::vector<Shape> fwd_shapes;
  std::vector<DType> fwd_types;
  {
    std::vector<Shape> in_shapes;
    std::vector<DType> in_types;
    for (uint32_t id : fwd.input_nodes()) {
      in_shapes.push_back(bound.at(fwd[id].source).shape());
      in_types.push_back(bound.at(fwd[id].source).dtype());
    }
    graph::InferShapes(fwd, in_shapes, &fwd_shapes);
    graph::InferTypes(fwd, in_types, &fwd_types);
  }
  for (size_t i = 0; i < heads.size(); ++i) {
    uint32_t e = fwd.entry_id(sym_.outputs[i]);
    head_grads_.emplace_back(fwd_shapes[e], ctx_, fwd_types[e]);
    bound[heads[i].node.get()] = head_grads_.back();
  }
  std::vector<Shape> in_shapes, shapes;
  std::vector<DType> in_types, types;
  for (uint32_t id : g.input_nodes()) {
    in_shapes.push_back(bound.at(g[id].source).shape());
    in_types.push_back(bound.at(g[id].source).dtype());
  }
  size_t unknown = graph::InferShapes(g, in_shapes, &shapes) + graph::InferTypes(g, in_types, &types);
  WEFT_CHECK(unknown == 0, kShape, "bind: ", unknown,
             " shapes or dtypes of the graph cannot be inferred from the bound arrays");

  // One array per entry, allocated now; variables are the bound arrays. A gradient entry
  // made by an operator and used nowhere else is written straight into its gradient array.
  std::vector<NDArray> entry(g.num_entries());
  std::vector<OpReq> entry_req(g.num_entries(), OpReq::kWriteTo);
  std::vector<int> uses(g.num_entries(), 0);
  for (size_t id = 0; id < g.num_nodes(); ++id)
    for (const auto& in : g[id].inputs) ++uses[g.entry_id(in.node_id, in.index)];
  for (const auto& e : all) ++uses[g.entry_id(e)];
  std::vector<std::pair<uint32_t, size_t>> copies;  // (entry, argument) copied at the end
  for (size_t k = 0; k < grad_entries_.size(); ++k) {
    uint32_t e = g.entry_id(grad_entries_[k]);
    size_t a = x_args[k];
    WEFT_CHECK(arg_grads_[a].shape() == shapes[e], kShape, "bind: the gradient array of '", arg_names[a],
               "' has shape ", arg_grads_[a].shape().ToString(), " but the gradient has ", shapes[e].ToString());
    if (!grad_entries_[k].node->is_variable() && uses[e] == 1 && entry[e].is_none()) {
      entry[e] = arg_grads_[a];
      entry_req[e] = grad_req_[a];
    } else {
      copies.emplace_back(e, a);
    }
  }
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const graph::Node* n = g[id].source;
    if (n->is_variable()) {
      entry[g.entry_id(id, 0)] = bound.at(n);
      continue;
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (entry[e].is_none()) entry[e] = NDArray(shapes[e], ctx_, types[e]);
    }
  }

  std::unordered_set<const graph::Node*> in_forward;
  for (size_t id = 0; id < fwd.num_nodes(); ++id) in_forward.insert(fwd[id].source);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const graph::Node* n = g[id].source;
    if (n->is_variable()) continue;
    Step s;
    s.attrs = &n->attrs;
    for (const auto& in : g[id].inputs) s.inputs.push_back(entry[g.entry_id(in.node_id, in.index)]);
    for (int i = 0; i < n->num_outputs(); ++i) {
      s.outputs.push_back(entry[g.entry_id(id, i)]);
      s.req.push_back(entry_req[g.entry_id(id, i)]);
    }
    (in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
  }
  static const NodeAttrs copy_attrs = imperative::MakeAttrs(Op::Get("_copy"), {});
  for (const auto& c : copies)
    backward_.push_back(Step{&copy_attrs, {entry[c.first]}, {arg_grads_[c.second]}, {grad_req_[c.second]}});
  for (const auto& e : sym_.outputs) outputs_.push_back(entry[g.entry_id(e)]);
}

void Executor::Run(std::vector<Step>& steps, bool is_train) {
  for (Step& s : steps) imperative::Invoke(*s.attrs, s.inputs, &s.outputs, &ctx_, &s.req, is_train);
}

void Executor::Forward(bool is_train) {
  is_train_ = is_train;
  Run(forward_, is_train);
}

void Executor::Backward(const std::vector<NDArray>& head_grads) {
  WEFT_CHECK(!grad_entries_.empty() || backward_.empty(), kInternal, "backward steps without gradients");
  if (grad_entries_.empty()) return;  // no argument asked for a gradient
  WEFT_CHECK(head_grads.empty() || head_grads.size() == head_grads_.size(), kValue, "backward: expected ",
             head_grads_.size(), " head gradients (one per output) or none, got ", head_grads.size());
  static const NodeAttrs ones = imperative::MakeAttrs(Op::Get("ones_like"), {});
  for (size_t i = 0; i < head_grads_.size(); ++i) {
    std::vector<NDArray> out{head_grads_[i]};
    if (head_grads.empty()) {
      imperative::Invoke(ones, {head_grads_[i]}, &out, &ctx_);
    } else {
      WEFT_CHECK(head_grads[i].shape() == head_grads_[i].shape(), kShape, "backward: head gradient ", i,
                 " has shape ", head_grads[i].shape().ToString(), " but output ", i, " has ",
                 head_grads_[i].shape().ToString());
      CopyFromTo(head_grads[i], head_grads_[i]);
    }
  }
  Run(backward_, is_train_);
}

}  // namespace executor
}  // namespace weft

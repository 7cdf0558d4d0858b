#include "core/executor/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/executor/passes.h"
#include "core/executor/train_fuse.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/imperative/imperative.h"
#include "core/op/fused/fused_pointwise.h"
#include "core/op/dnnl/dnnl_train_region.h"
#include "core/profiler/profiler.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using graph::NodeEntry;
using graph::NodePtr;

namespace {

// The name of graph value `e` (a variable's name, or "<node>_output"), found by its node:
// used only at bind, for the monitor's names of a fused chain's inputs.
std::string EntryName(const IndexedGraph& g, uint32_t e) {
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    uint32_t first = g.entry_id(id, 0);
    uint32_t n = static_cast<uint32_t>(g[id].source->num_outputs());
    if (e >= first && e < first + std::max<uint32_t>(n, 1)) return graph::OutputName(*g[id].source, e - first);
  }
  return "value" + std::to_string(e);
}

void CheckCount(size_t got, size_t want, const char* what, const std::vector<std::string>& names) {
  if (got == want) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  Throw(ErrorKind::kValue, "bind: expected ", want, " ", what, " (", list, "), got ", got);
}

bool FoldingEnabled() { return Enabled("WEFT_EXEC_FOLD_CONSTANTS"); }

// Cast's attributes to dtype t: a gradient array bound with another dtype than its gradient
// receives it converted (MXNet lets such arrays be bound; its operators then write into them).
const NodeAttrs& CastTo(DType t) {
  static const std::map<DType, NodeAttrs> attrs = [] {
    std::map<DType, NodeAttrs> m;
    for (DType d : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kUint8, DType::kInt32, DType::kInt8,
                    DType::kInt64, DType::kBool, DType::kBfloat16})
      m.emplace(d, MakeAttrs(Op::Get("Cast"), {{"dtype", DTypeName(d)}}));
    return m;
  }();
  return attrs.at(t);
}

// The placement part of debug_str when the graph spans several contexts: the nodes run on
// each context (in run order) and every copy between them.
std::string PlacementText(const IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Context>& node_ctx,
                          const Placement& placed, const std::unordered_set<const graph::Node*>& in_forward) {
  std::set<Context> used(node_ctx.begin(), node_ctx.end());
  if (used.size() < 2) return "";
  std::ostringstream os;
  os << "Placement:\n";
  for (Context c : used) {
    os << "\t" << c.ToString() << ":";
    for (uint32_t id : order)
      if (node_ctx[id] == c) os << " " << g[id].source->attrs.name;
    os << "\n";
  }
  os << "Copies:\n";
  for (const auto& c : placed.copies) {
    const NodeEntry& from = c->inputs[0];
    os << "\t" << c->attrs.name << ": " << graph::OutputName(*from.node, from.index) << " from "
       << placed.ctx.at(from.node.get()).ToString() << " to " << placed.ctx.at(c.get()).ToString() << " ("
       << (in_forward.count(c.get()) ? "forward" : "backward") << ")\n";
  }
  return os.str();
}
bool FusionEnabled() { return Enabled("WEFT_EXEC_FUSE"); }

}  // namespace

bool Enabled(const char* var) {
  const char* v = std::getenv(var);
  return v == nullptr || std::string(v) != "0";
}


Executor::Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
                   std::vector<OpReq> grad_req, std::vector<NDArray> aux, std::map<std::string, Context> group2ctx)
    : sym_(sym.Copy()), source_(sym.Copy()), group2ctx_(std::move(group2ctx)), ctx_(ctx), args_(std::move(args)),
      arg_grads_(std::move(arg_grads)), aux_(std::move(aux)), grad_req_(std::move(grad_req)) {
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
  // MXNet's oneDNN fusion nodes run as their operators when nothing is trained, so that
  // the inference passes below fuse them again; the variables must keep their order.
  bool wants_grad = false;
  for (OpReq r : grad_req_) wants_grad = wants_grad || r != OpReq::kNullOp;
  if (!wants_grad && InlineSubgraphNodes(&sym_) &&
      (sym_.ListArguments() != arg_names || sym_.ListAuxiliaryStates() != aux_names))
    sym_ = sym.Copy();
  // Regions of oneDNN operators in training replace their nodes before the gradient pass
  // (train_fuse.cc).
  FuseTrainRegions(&sym_, ctx_, group2ctx_, args_, grad_req_, aux_);

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
  std::unordered_map<const graph::Node*, const graph::Node*> made_for;
  if (!xs.empty()) {
    for (size_t i = 0; i < sym_.outputs.size(); ++i)
      heads.push_back(graph::Symbol::Variable(out_names[i] + "_head_grad").outputs[0]);
    grad_entries_ = graph::Gradient(sym_.outputs, xs, heads, &made_for, graph::MirrorOptions::FromEnv());
  }

  std::vector<NodeEntry> all = sym_.outputs;
  all.insert(all.end(), grad_entries_.begin(), grad_entries_.end());
  // Placement (group2ctx): every node's context, with copies where a value crosses
  // contexts; head gradients sit with their outputs, gradients end on their arrays'.
  std::unordered_set<const graph::Node*> in_forward;
  for (size_t id = 0; id < fwd.num_nodes(); ++id) in_forward.insert(fwd[id].source);
  PlacementInputs where;
  where.group2ctx = group2ctx_;
  where.default_ctx = ctx_;
  for (const auto& b : bound) where.variable_ctx[b.first] = b.second.ctx();
  where.made_for = std::move(made_for);
  for (size_t i = 0; i < heads.size(); ++i) where.made_for[heads[i].node.get()] = sym_.outputs[i].node.get();
  where.forward = in_forward;
  for (size_t k = 0; k < grad_entries_.size(); ++k)
    where.output_ctx.emplace_back(sym_.outputs.size() + k, arg_grads_[x_args[k]].ctx());
  Placement placed = PlaceDevices(&all, where);
  std::copy(all.begin() + sym_.outputs.size(), all.end(), grad_entries_.begin());
  in_forward.insert(placed.forward_copies.begin(), placed.forward_copies.end());
  IndexedGraph g(all);
  std::vector<Context> node_ctx(g.num_nodes());
  for (uint32_t id = 0; id < g.num_nodes(); ++id) node_ctx[id] = placed.ctx.at(g[id].source);

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
    head_grads_.emplace_back(fwd_shapes[e], placed.ctx.at(sym_.outputs[i].node.get()), fwd_types[e]);
    bound[heads[i].node.get()] = head_grads_.back();
  }
  head_read_.assign(heads.size(), false);
  for (uint32_t id : g.input_nodes())
    for (size_t i = 0; i < heads.size(); ++i)
      if (g[id].source == heads[i].node.get()) head_read_[i] = true;
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
    // (A copy between devices can only write: one adding to its gradient copies first.)
    bool writes_only = IsCrossDeviceCopy(*grad_entries_[k].node);
    if (!grad_entries_[k].node->is_variable() && uses[e] == 1 && entry[e].is_none() &&
        !(writes_only && grad_req_[a] == OpReq::kAddTo) && arg_grads_[a].dtype() == types[e]) {
      entry[e] = arg_grads_[a];
      entry_req[e] = grad_req_[a];
    } else {
      copies.emplace_back(e, a);
    }
  }
  for (uint32_t id : g.input_nodes()) entry[g.entry_id(id, 0)] = bound.at(g[id].source);

  // Run order: the forward nodes, then the backward ones (each part in graph order).
  std::vector<uint32_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t id = 0; id < g.num_nodes(); ++id)
      if (!g[id].source->is_variable() && (in_forward.count(g[id].source) > 0) == (pass == 0)) order.push_back(id);

  std::vector<bool> persistent(g.num_entries(), false);
  for (const auto& e : sym_.outputs) persistent[g.entry_id(e)] = true;
  for (const auto& c : copies) persistent[c.first] = true;
  // A backward output nobody reads is the gradient of something that needs none (the data
  // of a first convolution, a label): its operator is told to skip it.
  for (uint32_t id : order) {
    if (in_forward.count(g[id].source)) continue;
    for (int i = 0; i < g[id].source->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (uses[e] == 0 && !persistent[e]) entry_req[e] = OpReq::kNullOp;
    }
  }
  // Nodes that depend on no variable compute the same values at every run: they run once,
  // here, and keep their outputs (random and state-changing operators excepted).
  std::unordered_set<const graph::Node*> constant;
  std::vector<bool> computed_once(g.num_entries(), false);
  if (FoldingEnabled()) {
    static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
    static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
    for (uint32_t id : order) {
      const graph::Node* n = g[id].source;
      bool folds = !mutates.Contains(n->op());
      if (folds && resources.Contains(n->op()))
        for (const auto& r : resources[n->op()](n->attrs)) folds &= r.type != ResourceType::kRandom;
      for (const auto& in : g[id].inputs) folds &= constant.count(g[in.node_id].source) > 0;
      if (!folds) continue;
      constant.insert(n);
      for (int i = 0; i < n->num_outputs(); ++i) persistent[g.entry_id(id, i)] = computed_once[g.entry_id(id, i)] = true;
    }
  }
  // Without gradients, Forward(false) runs regions of oneDNN operators as one node each
  // (infer_fuse.cc): their members are grouped in the run order (the planner then keeps
  // each region's inputs alive through it) and stay out of the pointwise chains.
  std::unordered_set<const graph::Node*> unchained = constant;
  bool all_host = std::all_of(node_ctx.begin(), node_ctx.end(), [](Context c) { return c.is_host(); });
  if (grad_entries_.empty() && all_host && Enabled("WEFT_EXEC_DNNL_FUSE")) {
    regions_ = DnnlRegions(g, order, shapes, types, uses, persistent, constant);
    if (!regions_.empty()) order = GroupRegions(g, order, regions_);
    for (const auto& r : regions_)
      for (uint32_t id : r->members) unchained.insert(g[id].source);
  }
  // Chains of pointwise nodes whose links nothing else reads run as one fused node each, at
  // the place of their last node. The planner sees each chain's nodes moved together there
  // (nothing outside a chain reads its links, so the order stays valid): the chain's inputs
  // then stay alive until the fused node has read them.
  std::unordered_map<uint32_t, const FusedChain*> fused_at;  // by the chain's last node
  std::unordered_set<uint32_t> fused_away;                   // the other nodes of the chains
  if (FusionEnabled()) {
    std::unordered_map<uint32_t, const std::vector<uint32_t>*> chain_of_last;
    auto chains = PointwiseChains(g, order, types, uses, persistent, unchained, in_forward,
                                  [&node_ctx](uint32_t id) { return node_ctx[id]; });
    for (const auto& chain : chains) {
      fused_.push_back(std::make_unique<FusedChain>(FuseChain(g, chain)));
      fused_at[chain.back()] = fused_.back().get();
      fused_away.insert(chain.begin(), chain.end() - 1);
      chain_of_last[chain.back()] = &chain;
    }
    std::vector<uint32_t> moved;
    for (uint32_t id : order) {
      if (fused_away.count(id)) continue;
      auto c = chain_of_last.find(id);
      if (c != chain_of_last.end()) moved.insert(moved.end(), c->second->begin(), c->second->end() - 1);
      moved.push_back(id);
    }
    order = std::move(moved);
  }
  std::vector<Context> entry_ctx(g.num_entries());
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    for (int i = 0; i < g[id].source->num_outputs(); ++i) entry_ctx[g.entry_id(id, i)] = node_ctx[id];
  PlanMemory(g, order, shapes, types, persistent, computed_once, entry_ctx, &entry);

  std::vector<Step> folded;
  for (uint32_t id : order) {
    if (fused_away.count(id)) continue;
    const graph::Node* n = g[id].source;
    Step s;
    s.ctx = node_ctx[id];
    s.cross_copy = IsCrossDeviceCopy(*n);
    auto fused = fused_at.find(id);
    if (fused != fused_at.end()) {
      s.attrs = &fused->second->attrs;
      for (uint32_t e : fused->second->inputs) {
        s.inputs.push_back(entry[e]);
        s.input_names.push_back(EntryName(g, e));
      }
      s.outputs.push_back(entry[g.entry_id(id, 0)]);
      s.output_names.push_back(graph::OutputName(*n, 0));
      s.req.push_back(entry_req[g.entry_id(id, 0)]);
      (in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
      continue;
    }
    s.attrs = &n->attrs;
    std::vector<std::string> arg_names = graph::InputNames(*n);
    for (const auto& in : g[id].inputs) {
      const graph::Node& src = *g[in.node_id].source;
      size_t i = s.inputs.size();
      s.inputs.push_back(entry[g.entry_id(in.node_id, in.index)]);
      s.input_names.push_back(graph::OutputName(src, in.index));
      if (src.is_variable()) s.monitor_inputs.emplace_back(src.attrs.name, i);
      s.monitor_inputs.emplace_back(n->attrs.name + "_" + (i < arg_names.size() ? arg_names[i] : "input" + std::to_string(i)), i);
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      s.outputs.push_back(entry[g.entry_id(id, i)]);
      s.output_names.push_back(graph::OutputName(*n, i));
      s.req.push_back(entry_req[g.entry_id(id, i)]);
    }
    op::WatchDnnlTrainRegion(n->attrs, s.inputs);
    (constant.count(n) ? folded : in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
  }
  static const NodeAttrs copy_attrs = MakeAttrs(Op::Get("_copy"), {});
  for (const auto& c : copies)
    backward_.push_back(Step{arg_grads_[c.second].dtype() == types[c.first] ? &copy_attrs
                                                                             : &CastTo(arg_grads_[c.second].dtype()),
                             {entry[c.first]}, {arg_grads_[c.second]}, {grad_req_[c.second]},
                             {EntryName(g, c.first)}, {arg_names[c.second] + "_grad"}, arg_grads_[c.second].ctx(), false, {}});
  for (const auto& e : sym_.outputs) outputs_.push_back(entry[g.entry_id(e)]);
  if (!regions_.empty()) {
    std::vector<uint32_t> forward_nodes;
    for (uint32_t id : order)
      if (!fused_away.count(id) && !constant.count(g[id].source) && in_forward.count(g[id].source))
        forward_nodes.push_back(id);
    BuildInferSteps(forward_nodes, entry, entry_req);
  }
  placement_ = PlacementText(g, order, node_ctx, placed, in_forward);
  Run(folded, false);
  num_folded_ = folded.size();
}

std::string Executor::DebugString() const {
  char line[96];
  std::snprintf(line, sizeof(line), "Total %zu MB allocated\n", (planned_bytes_ + (1 << 20) - 1) >> 20);
  std::string r = sym_.DebugString() + placement_ + line;
  std::snprintf(line, sizeof(line), "Total %zu MB without memory sharing\n", (naive_bytes_ + (1 << 20) - 1) >> 20);
  r += line;
  for (const auto& reg : regions_) r += RegionLine(*reg);
  return r;
}

void Executor::SetMonitorCallback(MonitorCallback callback, bool monitor_all) {
  monitor_ = std::move(callback);
  monitor_all_ = monitor_all;
}

void Executor::Run(std::vector<Step>& steps, bool is_train) {
  profiler::SymbolicScope symbolic;
  for (Step& s : steps) {
    if (!s.cross_copy) imperative::Invoke(*s.attrs, s.inputs, &s.outputs, &s.ctx, &s.req, is_train);
    else if (s.req[0] != OpReq::kNullOp) CopyFromTo(s.inputs[0], s.outputs[0]);
    if (!monitor_) continue;
    if (monitor_all_ && !s.monitor_inputs.empty())
      for (const auto& m : s.monitor_inputs) monitor_(m.first, s.inputs[m.second]);
    else if (monitor_all_)
      for (size_t i = 0; i < s.inputs.size(); ++i) monitor_(s.input_names[i], s.inputs[i]);
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (s.req[i] != OpReq::kNullOp) monitor_(s.output_names[i], s.outputs[i]);
  }
}

void Executor::Forward(bool is_train) {
  is_train_ = is_train;
  ++num_forwards_;
  Run(is_train || infer_.empty() ? forward_ : infer_, is_train);
}

void Executor::Backward(const std::vector<NDArray>& head_grads) {
  WEFT_CHECK(!grad_entries_.empty() || backward_.empty(), kInternal, "backward steps without gradients");
  if (grad_entries_.empty()) return;  // no argument asked for a gradient
  static const NodeAttrs ones = MakeAttrs(Op::Get("ones_like"), {});
  profiler::SymbolicScope symbolic;
  for (size_t i = 0; i < head_grads_.size(); ++i) {
    if (!head_read_[i]) continue;
    std::vector<NDArray> out{head_grads_[i]};
    if (head_grads.empty()) {
      imperative::Invoke(ones, {head_grads_[i]}, &out, &ctx_);
    } else {
      WEFT_CHECK(i < head_grads.size() && !head_grads[i].is_none(), kValue, "backward: the gradient of output ",
                 i, " is needed but only ", head_grads.size(), " head gradients were given (one per output, or none)");
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

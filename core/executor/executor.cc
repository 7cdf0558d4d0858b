#include "core/executor/executor.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/imperative/imperative.h"
#include "core/op/fused/fused_pointwise.h"

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

// Switches read at each bind, so that one process can compare executors built with and
// without an optimisation.
bool Enabled(const char* var) {
  const char* v = std::getenv(var);
  return v == nullptr || std::string(v) != "0";
}
bool PlanningEnabled() { return Enabled("WEFT_EXEC_PLAN_MEMORY"); }
bool FoldingEnabled() { return Enabled("WEFT_EXEC_FOLD_CONSTANTS"); }

bool FusionEnabled() { return Enabled("WEFT_EXEC_FUSE"); }

// Longest chains first found in run order: a pointwise node (one output, float32 or
// float64, inputs of its dtype) extends the chain whose last node produced one of its
// inputs, when nothing else reads that value and it must not be kept. Chains never cross
// from the forward to the backward pass, nor include folded constants.
std::vector<std::vector<uint32_t>> PointwiseChains(const IndexedGraph& g, const std::vector<uint32_t>& order,
                                                   const std::vector<DType>& types, const std::vector<int>& uses,
                                                   const std::vector<bool>& persistent,
                                                   const std::unordered_set<const graph::Node*>& constant,
                                                   const std::unordered_set<const graph::Node*>& in_forward) {
  static const auto& pointwise = Op::GetAttr<PointwiseFn>("FPointwise");
  constexpr size_t kMaxChain = 32;
  std::vector<std::vector<uint32_t>> chains;
  std::unordered_map<uint32_t, size_t> open;  // last node -> chain
  for (uint32_t id : order) {
    const graph::Node* n = g[id].source;
    if (!pointwise.Contains(n->op()) || n->num_outputs() != 1 || constant.count(n)) continue;
    DType t = types[g.entry_id(id, 0)];
    if (t != DType::kFloat32 && t != DType::kFloat64) continue;
    bool same_type = true;
    for (const auto& in : g[id].inputs) same_type &= types[g.entry_id(in.node_id, in.index)] == t;
    if (!same_type) continue;
    size_t joined = chains.size();
    for (const auto& in : g[id].inputs) {
      auto it = open.find(in.node_id);
      uint32_t e = g.entry_id(in.node_id, in.index);
      if (it == open.end() || uses[e] != 1 || persistent[e] || chains[it->second].size() >= kMaxChain) continue;
      if (in_forward.count(g[in.node_id].source) != in_forward.count(n)) continue;
      joined = it->second;
      open.erase(it);
      break;
    }
    if (joined == chains.size()) chains.emplace_back();
    chains[joined].push_back(id);
    open[id] = joined;
  }
  std::vector<std::vector<uint32_t>> fused;
  for (auto& c : chains)
    if (c.size() >= 2) fused.push_back(std::move(c));
  return fused;
}

}  // namespace

// The program of a chain: each node becomes a step reading the previous step's result or
// one of the fused node's inputs (entries from outside the chain, each listed once).
Executor::FusedChain Executor::FuseChain(const IndexedGraph& g, const std::vector<uint32_t>& chain) {
  static const auto& pointwise = Op::GetAttr<PointwiseFn>("FPointwise");
  auto program = std::make_shared<op::FusedProgram>();
  FusedChain fc;
  std::string name = "fused";
  for (size_t k = 0; k < chain.size(); ++k) {
    uint32_t id = chain[k];
    const graph::Node& n = *g[id].source;
    op::FusedProgram::Step step;
    step.fn = pointwise[n.op()];
    std::vector<op::FusedProgram::Ref> refs;
    for (const auto& in : g[id].inputs) {
      op::FusedProgram::Ref r;
      if (k > 0 && in.node_id == chain[k - 1]) {
        r.input = false;
        r.index = static_cast<int>(k - 1);
      } else {
        uint32_t e = g.entry_id(in.node_id, in.index);
        auto it = std::find(fc.inputs.begin(), fc.inputs.end(), e);
        r.index = static_cast<int>(it - fc.inputs.begin());
        if (it == fc.inputs.end()) fc.inputs.push_back(e);
      }
      refs.push_back(r);
    }
    step.a = refs.at(0);
    step.binary = refs.size() == 2;
    if (step.binary) step.b = refs[1];
    if (step.fn.scalar) step.scalar = step.fn.scalar(n.attrs);
    program->steps.push_back(step);
    name += "_" + n.attrs.name;
  }
  program->num_inputs = static_cast<int>(fc.inputs.size());
  fc.attrs = op::MakeFusedAttrs(std::move(program), name);
  return fc;
}

// Gives every operator output that has no array yet a view of a storage block. Walking
// the run order, an output takes over an input's block when the operator allows it in
// place and that input is dead after this step; otherwise the smallest free block that
// fits (or the largest free one, grown); a block goes back to the free list after the
// last step that reads its value. Persistent values (outputs, gradients copied at the
// end) are never freed. With planning off every value gets its own block.
void Executor::PlanMemory(const IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Shape>& shapes,
                          const std::vector<DType>& types, const std::vector<bool>& persistent,
                          const std::vector<bool>& computed_once, std::vector<NDArray>* entry) {
  static const auto& inplace_fns = Op::GetAttr<FInplaceOption>("FInplaceOption");
  constexpr int kForever = INT32_MAX;
  std::vector<int> last_use(g.num_entries(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (const auto& in : g[order[k]].inputs) last_use[g.entry_id(in.node_id, in.index)] = static_cast<int>(k);
  for (size_t e = 0; e < persistent.size(); ++e)
    if (persistent[e]) last_use[e] = kForever;

  bool plan = PlanningEnabled();
  std::vector<size_t> block_bytes;
  std::vector<int> block_of(g.num_entries(), -1);  // the block of each live value
  std::vector<int> home(g.num_entries(), -1);      // the block each value was given
  std::vector<int> free_blocks;
  auto bytes_of = [&](uint32_t e) { return static_cast<size_t>(shapes[e].Size()) * DTypeSize(types[e]); };
  naive_bytes_ = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    uint32_t id = order[k];
    const graph::Node* n = g[id].source;
    std::vector<std::pair<int, int>> inplace;
    if (plan && inplace_fns.Contains(n->op())) inplace = inplace_fns[n->op()](n->attrs);
    std::vector<bool> taken(g[id].inputs.size(), false);
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (!(*entry)[e].is_none()) continue;
      naive_bytes_ += bytes_of(e);
      int block = -1;
      for (const auto& io : inplace) {
        if (computed_once[e]) break;
        if (io.second != i || io.first < 0 || static_cast<size_t>(io.first) >= g[id].inputs.size() || taken[io.first])
          continue;
        const auto& in = g[id].inputs[io.first];
        uint32_t ie = g.entry_id(in.node_id, in.index);
        int uses_here = 0;
        for (const auto& other : g[id].inputs) uses_here += g.entry_id(other.node_id, other.index) == ie;
        if (block_of[ie] >= 0 && last_use[ie] == static_cast<int>(k) && uses_here == 1 && bytes_of(ie) == bytes_of(e)) {
          block = block_of[ie];
          block_of[ie] = -1;  // handed over: not freed after this step
          taken[io.first] = true;
          break;
        }
      }
      // A value computed once at bind (a folded constant) must own its memory: a block freed
      // earlier in the order is rewritten by its first owner at every run.
      if (block < 0 && plan && !free_blocks.empty() && !computed_once[e]) {
        auto best = free_blocks.end();
        for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
          bool fits = block_bytes[*it] >= bytes_of(e);
          if (best == free_blocks.end()) {
            best = it;
            continue;
          }
          bool best_fits = block_bytes[*best] >= bytes_of(e);
          if (fits ? (!best_fits || block_bytes[*it] < block_bytes[*best]) : (!best_fits && block_bytes[*it] > block_bytes[*best]))
            best = it;
        }
        block = *best;
        free_blocks.erase(best);
      }
      if (block < 0) {
        block = static_cast<int>(block_bytes.size());
        block_bytes.push_back(0);
      }
      block_bytes[block] = std::max(block_bytes[block], bytes_of(e));
      block_of[e] = block;
      home[e] = block;
    }
    if (!plan) continue;
    // Values read for the last time here, and outputs nobody reads, free their blocks.
    for (const auto& in : g[id].inputs) {
      uint32_t ie = g.entry_id(in.node_id, in.index);
      if (block_of[ie] >= 0 && last_use[ie] == static_cast<int>(k)) {
        free_blocks.push_back(block_of[ie]);
        block_of[ie] = -1;
      }
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (block_of[e] >= 0 && last_use[e] < 0) free_blocks.push_back(block_of[e]);
    }
  }

  std::vector<NDArray> blocks;
  planned_bytes_ = 0;
  for (size_t b : block_bytes) {
    blocks.emplace_back(Shape{static_cast<int64_t>(std::max<size_t>(b, 1))}, ctx_, DType::kUint8);
    planned_bytes_ += b;
  }
  for (size_t e = 0; e < home.size(); ++e)
    if (home[e] >= 0) (*entry)[e] = blocks[home[e]].View(shapes[e], types[e]);
}

Executor::Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
                   std::vector<OpReq> grad_req, std::vector<NDArray> aux)
    : sym_(sym.Copy()), ctx_(ctx), args_(std::move(args)), arg_grads_(std::move(arg_grads)), aux_(std::move(aux)),
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
  for (uint32_t id : g.input_nodes()) entry[g.entry_id(id, 0)] = bound.at(g[id].source);

  // Run order: the forward nodes, then the backward ones (each part in graph order).
  std::unordered_set<const graph::Node*> in_forward;
  for (size_t id = 0; id < fwd.num_nodes(); ++id) in_forward.insert(fwd[id].source);
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
  // Chains of pointwise nodes whose links nothing else reads run as one fused node each, at
  // the place of their last node. The planner sees each chain's nodes moved together there
  // (nothing outside a chain reads its links, so the order stays valid): the chain's inputs
  // then stay alive until the fused node has read them.
  std::unordered_map<uint32_t, const FusedChain*> fused_at;  // by the chain's last node
  std::unordered_set<uint32_t> fused_away;                   // the other nodes of the chains
  if (FusionEnabled()) {
    std::unordered_map<uint32_t, const std::vector<uint32_t>*> chain_of_last;
    auto chains = PointwiseChains(g, order, types, uses, persistent, constant, in_forward);
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
  PlanMemory(g, order, shapes, types, persistent, computed_once, &entry);

  std::vector<Step> folded;
  for (uint32_t id : order) {
    if (fused_away.count(id)) continue;
    const graph::Node* n = g[id].source;
    Step s;
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
    for (const auto& in : g[id].inputs) {
      s.inputs.push_back(entry[g.entry_id(in.node_id, in.index)]);
      s.input_names.push_back(graph::OutputName(*g[in.node_id].source, in.index));
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      s.outputs.push_back(entry[g.entry_id(id, i)]);
      s.output_names.push_back(graph::OutputName(*n, i));
      s.req.push_back(entry_req[g.entry_id(id, i)]);
    }
    (constant.count(n) ? folded : in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
  }
  static const NodeAttrs copy_attrs = imperative::MakeAttrs(Op::Get("_copy"), {});
  for (const auto& c : copies)
    backward_.push_back(Step{&copy_attrs, {entry[c.first]}, {arg_grads_[c.second]}, {grad_req_[c.second]},
                             {EntryName(g, c.first)}, {arg_names[c.second] + "_grad"}});
  for (const auto& e : sym_.outputs) outputs_.push_back(entry[g.entry_id(e)]);
  Run(folded, false);
  num_folded_ = folded.size();
}

std::string Executor::DebugString() const {
  char line[96];
  std::snprintf(line, sizeof(line), "Total %zu MB allocated\n", (planned_bytes_ + (1 << 20) - 1) >> 20);
  std::string r = sym_.DebugString() + line;
  std::snprintf(line, sizeof(line), "Total %zu MB without memory sharing\n", (naive_bytes_ + (1 << 20) - 1) >> 20);
  return r + line;
}

void Executor::SetMonitorCallback(MonitorCallback callback, bool monitor_all) {
  monitor_ = std::move(callback);
  monitor_all_ = monitor_all;
}

void Executor::Run(std::vector<Step>& steps, bool is_train) {
  for (Step& s : steps) {
    imperative::Invoke(*s.attrs, s.inputs, &s.outputs, &ctx_, &s.req, is_train);
    if (!monitor_) continue;
    if (monitor_all_)
      for (size_t i = 0; i < s.inputs.size(); ++i) monitor_(s.input_names[i], s.inputs[i]);
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (s.req[i] != OpReq::kNullOp) monitor_(s.output_names[i], s.outputs[i]);
  }
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

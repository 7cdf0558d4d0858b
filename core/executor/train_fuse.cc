// The training pass: see train_fuse.h. Regions are found as the inference pass finds its
// own (infer_fuse.cc): in run order, a node joins the region of one of its data inputs
// unless a path would leave the region and come back (the region could then not run as
// one node); a convolution that joins none joins the region of a convolution reading the
// same value, or starts a region.
#include "core/executor/train_fuse.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/executor/passes.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/op/dnnl/dnnl_train_region.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using graph::NodeEntry;
using graph::NodePtr;
using op::TrainRegionSpec;

namespace {

enum class Kind { kNone, kConv, kBatchNorm, kRelu, kAdd };


struct Graph : RegionGraph {
  bool Float(uint32_t id, size_t i) const { return types[In(id, i)] == DType::kFloat32; }

  // What node `id` is to a region, after checking that the region computes it as the
  // operator does (2-D, NCHW, float32; a BatchNorm on batch statistics whose saved mean and
  // var nobody reads and whose moving statistics are variables).
  Kind Classify(uint32_t id) const {
    static const Op* conv = Op::Get("Convolution");
    static const Op* bn = Op::Get("BatchNorm");
    static const Op* act = Op::Get("Activation");
    static const Op* relu = Op::Find("relu");
    static const Op* add = Op::Get("elemwise_add");
    const graph::Node& n = *g[id].source;
    if (n.is_variable() || n.num_outputs() < 1 || g[id].inputs.empty()) return Kind::kNone;
    for (int i = 0; i < n.num_outputs(); ++i)
      if (persistent[g.entry_id(id, i)]) return Kind::kNone;  // a symbol output stays as it is
    if (!Image(g.entry_id(id, 0)) || !Image(In(id, 0))) return Kind::kNone;
    const Op* o = n.op();
    if (o == conv) {
      const auto& p = n.attrs.Params<op::ConvolutionParam>();
      if (p.kernel.ndim() != 2 || (p.layout != "None" && p.layout != "NCHW")) return Kind::kNone;
      // A convolution of an image's few channels (a network's stem) stays out: the
      // operator runs its data gradient as an NCHW gemm, about twice as fast as oneDNN's
      // blocked kernel with the channels padded to 16.
      if (shapes[In(id, 0)][1] < 8) return Kind::kNone;
      // So does one whose channels oneDNN would pad to blocks wastefully (LeNet's second).
      if (op::ConvPadsChannelsWastefully(shapes[In(id, 0)][1], p.num_filter, p.num_group)) return Kind::kNone;
      for (size_t i = 1; i < g[id].inputs.size(); ++i)
        if (!Float(id, i)) return Kind::kNone;
      return Kind::kConv;
    }
    if (o == bn) {
      std::string axis = NodeAttr(n.attrs, "axis", "1");
      if ((axis != "1" && axis != "-3") || n.num_outputs() != 3 || g[id].inputs.size() != 5) return Kind::kNone;
      if (NodeAttrBool(n.attrs, "use_global_stats", false)) return Kind::kNone;
      for (int i = 1; i < 3; ++i)
        if (uses[g.entry_id(id, i)] != 0) return Kind::kNone;
      for (size_t i = 1; i < 5; ++i)
        if (!Float(id, i)) return Kind::kNone;
      for (size_t i = 3; i < 5; ++i)
        if (!g[InNode(id, i)].source->is_variable()) return Kind::kNone;
      return Kind::kBatchNorm;
    }
    if (o == act && NodeAttr(n.attrs, "act_type", "") == "relu") return Kind::kRelu;
    if (relu && o == relu) return Kind::kRelu;
    if (o == add && g[id].inputs.size() == 2 && Image(In(id, 1)) && shapes[In(id, 0)] == shapes[In(id, 1)])
      return Kind::kAdd;
    return Kind::kNone;
  }
};

std::vector<std::vector<uint32_t>> FindRegions(const Graph& G) {
  const IndexedGraph& g = G.g;
  std::vector<int> region_of(g.num_nodes(), -1);
  std::vector<std::vector<int>> reach(g.num_nodes());  // the regions a node depends on, its own included
  std::vector<std::vector<uint32_t>> regions;
  std::unordered_map<uint32_t, int> conv_reader;  // an entry a region's convolution reads -> the region
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    std::vector<uint32_t> before;
    for (const auto& in : g[id].inputs) before.push_back(in.node_id);
    before.insert(before.end(), g[id].control_deps.begin(), g[id].control_deps.end());
    std::vector<int>& r = reach[id];
    for (uint32_t b : before) {
      std::vector<int> merged;
      std::set_union(r.begin(), r.end(), reach[b].begin(), reach[b].end(), std::back_inserter(merged));
      r.swap(merged);
    }
    Kind k = G.Classify(id);
    if (k == Kind::kNone) continue;
    auto convex = [&](int reg) {
      for (uint32_t b : before)
        if (region_of[b] != reg && std::binary_search(reach[b].begin(), reach[b].end(), reg)) return false;
      return true;
    };
    int joined = -1;
    size_t data_inputs = k == Kind::kAdd ? 2 : 1;
    for (size_t i = 0; i < data_inputs && joined < 0; ++i) {
      int reg = region_of[G.InNode(id, i)];
      if (reg >= 0 && convex(reg)) joined = reg;
    }
    // A convolution reading what a region's convolution reads (a residual block's shortcut
    // beside its first convolution) joins that region.
    if (joined < 0 && k == Kind::kConv) {
      auto sib = conv_reader.find(G.In(id, 0));
      if (sib != conv_reader.end() && convex(sib->second)) joined = sib->second;
    }
    if (joined < 0 && k == Kind::kConv) {
      joined = static_cast<int>(regions.size());
      regions.emplace_back();
    }
    if (joined < 0) continue;
    if (k == Kind::kConv) conv_reader.emplace(G.In(id, 0), joined);
    region_of[id] = joined;
    regions[joined].push_back(id);
    r.insert(std::lower_bound(r.begin(), r.end(), joined), joined);
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  return regions;
}

// A region's spec, the entries it reads (in graph order) and the entries its visible
// outputs stand for.
struct Made {
  TrainRegionSpec spec;
  std::vector<uint32_t> inputs, outputs;
};

Made MakeSpec(const Graph& G, const std::vector<uint32_t>& members) {
  const IndexedGraph& g = G.g;
  Made m;
  TrainRegionSpec& spec = m.spec;
  std::unordered_set<uint32_t> in_region(members.begin(), members.end());
  // Inputs in the order of their entries: the region node then reaches them (and the
  // variables behind them) in the order the members did.
  std::unordered_map<uint32_t, int> input_of;
  for (uint32_t id : members)
    for (size_t i = 0; i < g[id].inputs.size(); ++i)
      if (!in_region.count(G.InNode(id, i))) m.inputs.push_back(G.In(id, i));
  std::sort(m.inputs.begin(), m.inputs.end());
  m.inputs.erase(std::unique(m.inputs.begin(), m.inputs.end()), m.inputs.end());
  for (size_t i = 0; i < m.inputs.size(); ++i) input_of[m.inputs[i]] = static_cast<int>(i);
  spec.num_inputs = static_cast<int>(m.inputs.size());

  std::unordered_map<uint32_t, int> value_of;
  auto value = [&](uint32_t e) {
    auto it = value_of.find(e);
    if (it != value_of.end()) return it->second;
    spec.values.push_back({G.shapes[e], input_of.at(e), -1});
    return value_of[e] = static_cast<int>(spec.values.size()) - 1;
  };
  auto new_value = [&](uint32_t e) {
    spec.values.push_back({G.shapes[e], -1, -1});
    return value_of[e] = static_cast<int>(spec.values.size()) - 1;
  };
  std::unordered_map<uint32_t, int> internal_reads;
  for (uint32_t id : members)
    for (size_t i = 0; i < g[id].inputs.size(); ++i)
      if (in_region.count(G.InNode(id, i))) ++internal_reads[G.In(id, i)];
  std::unordered_map<uint32_t, size_t> foldable;  // a BatchNorm's or add's output entry -> its unit
  for (uint32_t id : members) {
    const graph::Node& n = *g[id].source;
    Kind k = G.Classify(id);
    uint32_t x = G.In(id, 0), out = g.entry_id(id, 0);
    TrainRegionSpec::Unit u;
    u.name = n.attrs.name;
    if (k == Kind::kConv) {
      u.kind = TrainRegionSpec::Kind::kConv;
      u.conv = n.attrs.Params<op::ConvolutionParam>();
      u.src = value(x);
      u.weight = input_of.at(G.In(id, 1));
      if (g[id].inputs.size() > 2) u.bias = input_of.at(G.In(id, 2));
    } else if (k == Kind::kBatchNorm) {
      u.kind = TrainRegionSpec::Kind::kBatchNorm;
      u.src = value(x);
      u.gamma = input_of.at(G.In(id, 1));
      u.beta = input_of.at(G.In(id, 2));
      u.moving_mean = input_of.at(G.In(id, 3));
      u.moving_var = input_of.at(G.In(id, 4));
      u.eps = std::stod(NodeAttr(n.attrs, "eps", "0.001"));
      u.momentum = std::stod(NodeAttr(n.attrs, "momentum", "0.9"));
      u.fix_gamma = NodeAttrBool(n.attrs, "fix_gamma", true);
      foldable[out] = spec.units.size();
    } else if (k == Kind::kRelu) {
      // A relu that alone reads a BatchNorm's or an add's result runs inside that unit.
      auto b = foldable.find(x);
      if (b != foldable.end() && G.uses[x] == 1 && !spec.units[b->second].relu) {
        spec.units[b->second].relu = true;
        value_of[out] = value_of.at(x);
        value_of.erase(x);
        continue;
      }
      u.kind = TrainRegionSpec::Kind::kRelu;
      u.src = value(x);
    } else {
      u.kind = TrainRegionSpec::Kind::kAdd;
      uint32_t y = G.In(id, 1);
      // The first operand sets the layout the add runs in: a value of the region, when one is.
      if (!in_region.count(G.InNode(id, 0)) && in_region.count(G.InNode(id, 1))) std::swap(x, y);
      u.src = value(x);
      u.src2 = value(y);
      foldable[out] = spec.units.size();
    }
    u.dst = new_value(out);
    spec.units.push_back(std::move(u));
  }
  // The values read outside the region are its outputs.
  for (uint32_t id : members) {
    uint32_t e = g.entry_id(id, 0);
    if (G.uses[e] <= internal_reads[e] || !value_of.count(e)) continue;
    int v = value_of.at(e);
    spec.values[v].output = static_cast<int>(spec.outputs.size());
    spec.outputs.push_back(v);
    m.outputs.push_back(e);
  }
  return m;
}

// The sources of the graph's variables in order, and which are mutable.
std::vector<std::pair<const graph::Node*, bool>> Variables(const std::vector<NodeEntry>& outputs) {
  IndexedGraph g(outputs);
  std::vector<std::pair<const graph::Node*, bool>> v;
  for (uint32_t id : g.input_nodes()) v.emplace_back(g[id].source, g.is_mutable_input(id));
  return v;
}

}  // namespace

size_t FuseTrainRegions(graph::Symbol* sym, Context ctx, const std::map<std::string, Context>& group2ctx,
                        const std::vector<NDArray>& args, const std::vector<OpReq>& grad_req,
                        const std::vector<NDArray>& aux) {
  if (!Enabled("WEFT_EXEC_DNNL_TRAIN_FUSE") || !op::DnnlTrainRegionsAvailable()) return 0;
  if (std::none_of(grad_req.begin(), grad_req.end(), [](OpReq r) { return r != OpReq::kNullOp; })) return 0;
  // Mirroring recomputes single forward nodes in the backward: it keeps the graph as it is.
  if (graph::MirrorOptions::FromEnv().enabled || !group2ctx.empty() || !ctx.is_host()) return 0;
  for (const auto* arrays : {&args, &aux})
    for (const NDArray& a : *arrays)
      if (!a.ctx().is_host()) return 0;

  IndexedGraph g(sym->outputs);
  std::vector<Shape> in_shapes, shapes;
  std::vector<DType> in_types, types;
  size_t ai = 0, xi = 0;
  for (uint32_t id : g.input_nodes()) {
    const NDArray& a = g.is_mutable_input(id) ? aux.at(xi++) : args.at(ai++);
    in_shapes.push_back(a.shape());
    in_types.push_back(a.dtype());
  }
  try {
    if (graph::InferShapes(g, in_shapes, &shapes) + graph::InferTypes(g, in_types, &types) != 0) return 0;
  } catch (const Error&) {
    return 0;  // the executor reports the graph's errors itself
  }
  std::vector<int> uses(g.num_entries(), 0);
  std::vector<bool> persistent(g.num_entries(), false);
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    for (const auto& in : g[id].inputs) ++uses[g.entry_id(in.node_id, in.index)];
  for (const auto& e : sym->outputs) {
    ++uses[g.entry_id(e)];
    persistent[g.entry_id(e)] = true;
  }
  Graph G{{g, shapes, types, uses, persistent}};

  std::unordered_map<const graph::Node*, NodePtr> owner;
  graph::DFSVisit(sym->outputs, [&](const NodePtr& n) { owner[n.get()] = n; });
  auto entry = [&](uint32_t e) {
    const auto& rp = g.row_ptr();
    uint32_t id = static_cast<uint32_t>(std::upper_bound(rp.begin(), rp.end(), e) - rp.begin()) - 1;
    return NodeEntry{owner.at(g[id].source), e - rp[id], 0};
  };

  // Each region becomes a node reading the original entries; then every reader of a
  // member's output reads the region's instead.
  // A member whose output is read outside its region -> the region node and that output's index there.
  std::unordered_map<const graph::Node*, std::pair<NodePtr, uint32_t>> replaced;
  std::unordered_set<const graph::Node*> members;
  std::vector<NodePtr> made;
  // Read here, outside the fallback below, so that a malformed value is the bind's error.
  op::DnnlTrainRecomputeLevel();
  for (const auto& region : FindRegions(G)) {
    if (region.size() < 2) continue;  // one operator gains nothing from a region
    Made m = MakeSpec(G, region);
    std::shared_ptr<op::DnnlTrainRegion> r;
    try {
      r = std::make_shared<op::DnnlTrainRegion>(std::move(m.spec));
    } catch (const Error&) {
      continue;  // oneDNN refused a geometry: those nodes run as they are
    }
    NodePtr n = graph::Node::Create();
    n->attrs = op::MakeDnnlTrainRegionAttrs(r, "dnnl_train_region_" + g[region.front()].source->attrs.name);
    for (uint32_t e : m.inputs) n->inputs.push_back(entry(e));
    for (uint32_t id : region) members.insert(g[id].source);
    for (size_t k = 0; k < m.outputs.size(); ++k) {
      const graph::Node* src = entry(m.outputs[k]).node.get();
      replaced[src] = {n, static_cast<uint32_t>(k)};
    }
    made.push_back(n);
  }
  if (made.empty()) return 0;
  auto before = Variables(sym->outputs);
  // Every node that may read a member: the graph's non-members and the region nodes.
  std::vector<NodePtr> readers = made;
  for (const auto& o : owner)
    if (!members.count(o.first)) readers.push_back(o.second);
  std::vector<std::pair<NodePtr, std::pair<std::vector<NodeEntry>, std::vector<NodePtr>>>> undo;
  for (const NodePtr& n : readers) {
    bool changed = false;
    std::vector<NodeEntry> inputs = n->inputs;
    for (NodeEntry& in : inputs) {
      auto it = replaced.find(in.node.get());
      if (it == replaced.end()) {
        WEFT_CHECK(!members.count(in.node.get()), kInternal, "training pass: node '", n->attrs.name,
                   "' reads a value internal to a region");
        continue;
      }
      in = NodeEntry{it->second.first, it->second.second, 0};
      changed = true;
    }
    std::vector<NodePtr> deps = n->control_deps;
    for (NodePtr& d : deps) {
      auto it = replaced.find(d.get());
      if (members.count(d.get())) {
        WEFT_CHECK(it != replaced.end(), kInternal, "training pass: node '", n->attrs.name,
                   "' waits for a node internal to a region");
        d = it->second.first;
        changed = true;
      }
    }
    if (!changed) continue;
    undo.push_back({n, {n->inputs, n->control_deps}});
    n->inputs = std::move(inputs);
    n->control_deps = std::move(deps);
  }
  // The executor binds arrays to variables in the order the graph reaches them.
  if (Variables(sym->outputs) != before) {
    for (auto& u : undo) {
      u.first->inputs = std::move(u.second.first);
      u.first->control_deps = std::move(u.second.second);
    }
    return 0;
  }
  return made.size();
}

}  // namespace executor
}  // namespace weft

// The inference pass: connected regions of nodes that oneDNN runs (Convolution, BatchNorm
// on moving statistics, Activation, elementwise add, Pooling, Concat of channels) each become one
// "_dnnl_region" node (core/op/dnnl/dnnl_region.h), whose values between its primitives
// stay in oneDNN's blocked layouts and whose BatchNorm, activation and residual add are
// folded into the convolutions.
#include <algorithm>
#include <unordered_map>

#include "core/executor/executor.h"
#include "core/executor/passes.h"
#include "core/graph/symbol.h"
#include "core/op/nn/conv_common.h"
#include "core/op/dnnl/dnnl_region.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using op::DnnlRegionSpec;

std::string NodeAttr(const NodeAttrs& attrs, const char* key, const std::string& def) {
  for (const auto& kv : attrs.dict)
    if (kv.first == key) return kv.second;
  return def;
}

bool NodeAttrBool(const NodeAttrs& attrs, const char* key, bool def) {
  std::string v = NodeAttr(attrs, key, def ? "True" : "False");
  return v == "True" || v == "true" || v == "1";
}

namespace {

enum class Kind { kNone, kConv, kBatchNorm, kAct, kAdd, kPool, kConcat };


DnnlRegionSpec::Act ActOf(const std::string& t) {
  if (t == "relu") return DnnlRegionSpec::Act::kRelu;
  if (t == "sigmoid") return DnnlRegionSpec::Act::kSigmoid;
  if (t == "tanh") return DnnlRegionSpec::Act::kTanh;
  if (t == "softrelu") return DnnlRegionSpec::Act::kSoftRelu;
  return DnnlRegionSpec::Act::kNone;
}

DnnlRegionSpec::Act NodeAct(const graph::Node& n) {
  static const Op* relu = Op::Find("relu");
  if (n.op() == relu) return DnnlRegionSpec::Act::kRelu;
  return ActOf(NodeAttr(n.attrs, "act_type", ""));
}

struct Graph : RegionGraph {
  // A float32 variable (a parameter the region reads as an input).
  bool Param(uint32_t id, size_t i) const {
    return g[InNode(id, i)].source->is_variable() && types[In(id, i)] == DType::kFloat32;
  }
  // Read once, by the next node only: the next node may be folded into its producer.
  bool SingleUse(uint32_t e) const { return uses[e] == 1 && !persistent[e]; }

  // What node `id` is to a region, after checking that oneDNN runs it as the graph means
  // it (2-D, NCHW, float32, parameters that are variables).
  Kind Classify(uint32_t id) const {
    static const Op* conv = Op::Get("Convolution");
    static const Op* bn = Op::Get("BatchNorm");
    static const Op* act = Op::Get("Activation");
    static const Op* relu = Op::Find("relu");
    static const Op* add = Op::Get("elemwise_add");
    static const Op* pool = Op::Get("Pooling");
    static const Op* concat = Op::Get("Concat");
    const graph::Node& n = *g[id].source;
    if (n.is_variable()) return Kind::kNone;
    const Op* o = n.op();
    if (n.num_outputs() < 1 || !Image(g.entry_id(id, 0)) || g[id].inputs.empty() || !Image(In(id, 0)))
      return Kind::kNone;
    if (o == conv) {
      const auto& p = n.attrs.Params<op::ConvolutionParam>();
      if (p.kernel.ndim() != 2 || (p.layout != "None" && p.layout != "NCHW")) return Kind::kNone;
      for (size_t i = 1; i < g[id].inputs.size(); ++i)
        if (!Param(id, i)) return Kind::kNone;
      return Kind::kConv;
    }
    if (o == pool) {
      const auto& p = n.attrs.Params<op::PoolingParam>();
      if (p.layout != "None" && p.layout != "NCHW") return Kind::kNone;
      if (p.pool_type != "max" && p.pool_type != "avg") return Kind::kNone;
      if (!p.global_pool && (p.kernel.ndim() != 2 || p.pooling_convention != "valid")) return Kind::kNone;
      return Kind::kPool;
    }
    if (o == bn) {
      std::string axis = NodeAttr(n.attrs, "axis", "1");
      if ((axis != "1" && axis != "-3") || n.num_outputs() != 3 || g[id].inputs.size() != 5) return Kind::kNone;
      for (int i = 1; i < 3; ++i)
        if (uses[g.entry_id(id, i)] != 0 || persistent[g.entry_id(id, i)]) return Kind::kNone;
      for (size_t i = 1; i < 5; ++i)
        if (!Param(id, i)) return Kind::kNone;
      return Kind::kBatchNorm;
    }
    if (o == concat) {
      std::string dim = NodeAttr(n.attrs, "dim", "1");
      if (dim != "1" && dim != "-3") return Kind::kNone;
      for (size_t i = 1; i < g[id].inputs.size(); ++i)
        if (!Image(In(id, i))) return Kind::kNone;
      return Kind::kConcat;
    }
    if ((o == act || (relu && o == relu)) && NodeAct(n) != DnnlRegionSpec::Act::kNone) return Kind::kAct;
    if (o == add && g[id].inputs.size() == 2 && Image(In(id, 1)) && shapes[In(id, 0)] == shapes[In(id, 1)])
      return Kind::kAdd;
    return Kind::kNone;
  }
};

// Regions as sets of node ids, found in run order. A node joins the region of one of its
// data inputs unless that would make the region non-convex (a path that leaves the region
// and comes back: then the region could not run as one node); a convolution or pooling
// that joins none starts a new region. A BatchNorm joins only to be folded into the
// convolution before it. A Concat joins the region of any of its inputs (then the branches
// of the next Inception block join it too, and a whole Inception network is one region).
std::vector<std::vector<uint32_t>> FindRegions(const Graph& G, const std::vector<uint32_t>& order,
                                               const std::unordered_set<const graph::Node*>& constant) {
  const IndexedGraph& g = G.g;
  std::vector<int> region_of(g.num_nodes(), -1);
  // The regions each node depends on, its own included (sorted).
  std::vector<std::vector<int>> reach(g.num_nodes());
  std::vector<std::vector<uint32_t>> regions;
  static const Op* conv = Op::Get("Convolution");
  for (uint32_t id : order) {
    // What the node waits for: its inputs' nodes and its control dependencies.
    std::vector<uint32_t> before;
    for (const auto& in : g[id].inputs) before.push_back(in.node_id);
    before.insert(before.end(), g[id].control_deps.begin(), g[id].control_deps.end());
    std::vector<int>& r = reach[id];
    for (uint32_t b : before) {
      const auto& other = reach[b];
      std::vector<int> merged;
      std::set_union(r.begin(), r.end(), other.begin(), other.end(), std::back_inserter(merged));
      r.swap(merged);
    }
    if (constant.count(g[id].source)) continue;
    Kind k = G.Classify(id);
    if (k == Kind::kNone) continue;
    auto convex = [&](int reg) {
      for (uint32_t b : before)
        if (region_of[b] != reg && std::binary_search(reach[b].begin(), reach[b].end(), reg)) return false;
      return true;
    };
    int joined = -1;
    if (k == Kind::kBatchNorm) {
      uint32_t d = G.InNode(id, 0);
      if (region_of[d] >= 0 && g[d].source->op() == conv && G.SingleUse(G.In(id, 0)) && convex(region_of[d]))
        joined = region_of[d];
    } else {
      size_t data_inputs = k == Kind::kAdd ? 2 : k == Kind::kConcat ? g[id].inputs.size() : 1;
      for (size_t i = 0; i < data_inputs && joined < 0; ++i) {
        int reg = region_of[G.InNode(id, i)];
        if (reg >= 0 && convex(reg)) joined = reg;
      }
      if (joined < 0 && (k == Kind::kConv || k == Kind::kPool)) {
        joined = static_cast<int>(regions.size());
        regions.emplace_back();
      }
    }
    if (joined < 0) continue;
    region_of[id] = joined;
    regions[joined].push_back(id);
    r.insert(std::lower_bound(r.begin(), r.end(), joined), joined);
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  return regions;
}

// The region's program: units in run order over values. BatchNorm, an activation and an
// add fold into the convolution that produced their (single-use) operand; the
// convolution then runs where the last folded node was, when all its operands exist.
std::shared_ptr<InferRegion> MakeRegion(const Graph& G, const std::vector<uint32_t>& members) {
  const IndexedGraph& g = G.g;
  auto region = std::make_shared<InferRegion>();
  region->members = members;
  std::unordered_set<uint32_t> in_region(members.begin(), members.end());
  DnnlRegionSpec spec;
  std::unordered_map<uint32_t, int> input_of, value_of;
  std::unordered_map<int, int> producer;  // value -> unit
  std::vector<DnnlRegionSpec::Unit> units;
  std::vector<int> run;  // unit ids in run order
  auto input = [&](uint32_t e) {
    auto it = input_of.find(e);
    if (it != input_of.end()) return it->second;
    int i = static_cast<int>(region->inputs.size());
    region->inputs.push_back(e);
    input_of[e] = i;
    return i;
  };
  auto value = [&](uint32_t e) {
    auto it = value_of.find(e);
    if (it != value_of.end()) return it->second;
    DnnlRegionSpec::Value v;
    v.shape = G.shapes[e];
    v.input = input(e);
    spec.values.push_back(v);
    return value_of[e] = static_cast<int>(spec.values.size()) - 1;
  };
  auto new_value = [&](uint32_t e) {
    spec.values.push_back({G.shapes[e], -1, -1});
    return value_of[e] = static_cast<int>(spec.values.size()) - 1;
  };
  std::vector<size_t> unit_member;  // the member each unit was made for
  size_t member = 0;                // the member being added
  auto add_unit = [&](DnnlRegionSpec::Unit u, uint32_t out) {
    u.dst = new_value(out);
    unit_member.push_back(member);
    units.push_back(std::move(u));
    producer[units.back().dst] = static_cast<int>(units.size()) - 1;
    run.push_back(static_cast<int>(units.size()) - 1);
  };
  // The convolution unit that computed entry e, if e is read only here.
  auto foldable_conv = [&](uint32_t e) -> DnnlRegionSpec::Unit* {
    if (!G.SingleUse(e) || !value_of.count(e)) return nullptr;
    auto p = producer.find(value_of[e]);
    if (p == producer.end() || units[p->second].kind != DnnlRegionSpec::Kind::kConv) return nullptr;
    return &units[p->second];
  };
  // Which members' values the region writes to its outputs.
  std::unordered_map<uint32_t, int> internal_reads;
  for (uint32_t id : members)
    for (size_t i = 0; i < g[id].inputs.size(); ++i)
      if (in_region.count(G.InNode(id, i))) ++internal_reads[G.In(id, i)];
  auto is_output = [&](uint32_t e) { return G.uses[e] > internal_reads[e] || G.persistent[e]; };
  // Unit u now also computes member id's output and runs at its place. The memory planner
  // saw u's node read its source where it was: when the region writes an output between
  // there and here, that output's memory may be the (then dead) source's, so an outside
  // source is first copied where the node was.
  auto fold = [&](DnnlRegionSpec::Unit* u, uint32_t id, uint32_t operand) {
    int ui = static_cast<int>(u - units.data());
    value_of[g.entry_id(id, 0)] = value_of[operand];
    auto pos = std::find(run.begin(), run.end(), ui);
    bool hazard = false;
    for (size_t k = unit_member[ui] + 1; k < member; ++k) hazard |= is_output(g.entry_id(members[k], 0));
    if (hazard && spec.values[u->src].input >= 0) {
      DnnlRegionSpec::Unit c;
      c.kind = DnnlRegionSpec::Kind::kCopy;
      c.name = u->name + "_source";
      c.src = u->src;
      spec.values.push_back({spec.values[u->src].shape, -1, -1});
      c.dst = static_cast<int>(spec.values.size()) - 1;
      units[ui].src = c.dst;
      units.push_back(std::move(c));
      unit_member.push_back(unit_member[ui]);
      *pos = static_cast<int>(units.size()) - 1;
    } else {
      run.erase(pos);
    }
    run.push_back(ui);
  };
  for (; member < members.size(); ++member) {
    uint32_t id = members[member];
    const graph::Node& n = *g[id].source;
    Kind k = G.Classify(id);
    uint32_t x = G.In(id, 0), out = g.entry_id(id, 0);
    DnnlRegionSpec::Unit u;
    u.name = n.attrs.name;
    if (k == Kind::kConv) {
      u.kind = DnnlRegionSpec::Kind::kConv;
      u.conv = n.attrs.Params<op::ConvolutionParam>();
      u.src = value(x);
      u.weight = input(G.In(id, 1));
      if (g[id].inputs.size() > 2) u.bias = input(G.In(id, 2));
      add_unit(std::move(u), out);
    } else if (k == Kind::kPool) {
      u.kind = DnnlRegionSpec::Kind::kPool;
      u.pool = n.attrs.Params<op::PoolingParam>();
      u.src = value(x);
      add_unit(std::move(u), out);
    } else if (k == Kind::kConcat) {
      u.kind = DnnlRegionSpec::Kind::kConcat;
      for (size_t i = 0; i < g[id].inputs.size(); ++i) u.srcs.push_back(value(G.In(id, i)));
      u.src = u.srcs.front();
      add_unit(std::move(u), out);
    } else if (k == Kind::kBatchNorm) {
      DnnlRegionSpec::Unit* c = foldable_conv(x);
      WEFT_CHECK(c != nullptr && !c->bn && !c->sum && c->act == DnnlRegionSpec::Act::kNone, kInternal,
                 "inference pass: BatchNorm '", n.attrs.name, "' joined a region without its convolution");
      c->bn = true;
      c->gamma = input(G.In(id, 1));
      c->beta = input(G.In(id, 2));
      c->mean = input(G.In(id, 3));
      c->var = input(G.In(id, 4));
      c->eps = std::stod(NodeAttr(n.attrs, "eps", "0.001"));
      c->fix_gamma = NodeAttrBool(n.attrs, "fix_gamma", true);
      fold(c, id, x);
    } else if (k == Kind::kAct) {
      DnnlRegionSpec::Unit* c = foldable_conv(x);
      if (c && c->act == DnnlRegionSpec::Act::kNone) {
        c->act = NodeAct(n);
        fold(c, id, x);
      } else {
        u.kind = DnnlRegionSpec::Kind::kEltwise;
        u.act = NodeAct(n);
        u.src = value(x);
        add_unit(std::move(u), out);
      }
    } else {  // kAdd: a residual connection folds into the convolution of either operand
      uint32_t y = G.In(id, 1);
      DnnlRegionSpec::Unit* c = nullptr;
      uint32_t folded = x, other = y;
      for (int side = 0; side < 2 && !c; ++side) {
        if (side == 1) std::swap(folded, other);
        c = foldable_conv(folded);
        if (c && (c->sum || c->act != DnnlRegionSpec::Act::kNone)) c = nullptr;
      }
      if (c) {
        c->sum = true;
        c->src2 = value(other);
        fold(c, id, folded);
      } else {
        u.kind = DnnlRegionSpec::Kind::kAdd;
        u.src = value(x);
        u.src2 = value(y);
        add_unit(std::move(u), out);
      }
    }
  }
  // Outputs: values read outside the region, or kept (graph outputs).
  for (uint32_t id : members) {
    uint32_t e = g.entry_id(id, 0);
    if (!is_output(e)) continue;
    int v = value_of.at(e);
    WEFT_CHECK(spec.values[v].output < 0, kInternal, "inference pass: a folded value is needed outside its region");
    spec.values[v].output = static_cast<int>(spec.outputs.size());
    spec.outputs.push_back(v);
    region->outputs.push_back(e);
  }
  auto name_of = [&](uint32_t e) {
    const auto& rp = g.row_ptr();
    uint32_t id = static_cast<uint32_t>(std::upper_bound(rp.begin(), rp.end(), e) - rp.begin()) - 1;
    return graph::OutputName(*g[id].source, e - rp[id]);
  };
  for (uint32_t e : region->inputs) region->input_names.push_back(name_of(e));
  for (uint32_t e : region->outputs) region->output_names.push_back(name_of(e));
  for (uint32_t id : members) region->member_names.push_back(g[id].source->attrs.name);
  for (int ui : run) spec.units.push_back(std::move(units[ui]));
  spec.num_inputs = static_cast<int>(region->inputs.size());
  std::string name = "dnnl_region_" + g[members.front()].source->attrs.name;
  region->region = std::make_shared<op::DnnlRegion>(std::move(spec));
  region->attrs = op::MakeDnnlRegionAttrs(region->region, name);
  return region;
}

}  // namespace

std::vector<std::shared_ptr<InferRegion>> DnnlRegions(const IndexedGraph& g, const std::vector<uint32_t>& order,
                                                      const std::vector<Shape>& shapes, const std::vector<DType>& types,
                                                      const std::vector<int>& uses, const std::vector<bool>& persistent,
                                                      const std::unordered_set<const graph::Node*>& constant) {
  std::vector<std::shared_ptr<InferRegion>> made;
  if (!op::DnnlRegionsAvailable()) return made;
  Graph G{{g, shapes, types, uses, persistent}};
  for (const auto& members : FindRegions(G, order, constant)) {
    if (members.size() < 2) continue;  // one operator gains nothing from a region
    try {
      made.push_back(MakeRegion(G, members));
    } catch (const Error&) {
      // oneDNN refused a geometry: those nodes run as they are.
    }
  }
  return made;
}

std::vector<uint32_t> GroupRegions(const IndexedGraph& g, const std::vector<uint32_t>& order,
                                   const std::vector<std::shared_ptr<InferRegion>>& regions) {
  // A depth-first order of the graph with each region one node (a region is convex, so
  // that graph has no cycle), visiting nodes in their old order: members end up together,
  // in their old relative order, after everything any of them reads.
  const size_t nn = g.num_nodes();
  std::vector<int> region_of(nn, -1);
  for (size_t r = 0; r < regions.size(); ++r)
    for (uint32_t id : regions[r]->members) region_of[id] = static_cast<int>(r);
  std::vector<char> scheduled(nn, 0);
  for (uint32_t id : order) scheduled[id] = 1;
  auto key = [&](uint32_t id) { return region_of[id] >= 0 ? nn + region_of[id] : id; };
  auto deps = [&](size_t k, std::vector<size_t>* out) {
    out->clear();
    auto add = [&](uint32_t id) {
      for (const auto& in : g[id].inputs)
        if (scheduled[in.node_id] && key(in.node_id) != k) out->push_back(key(in.node_id));
      for (uint32_t c : g[id].control_deps)
        if (scheduled[c] && key(c) != k) out->push_back(key(c));
    };
    if (k < nn) add(static_cast<uint32_t>(k));
    else
      for (uint32_t m : regions[k - nn]->members) add(m);
  };
  std::vector<char> state(nn + regions.size(), 0);  // 0 new, 1 expanded, 2 emitted
  std::vector<uint32_t> out;
  std::vector<size_t> stack, ds;
  for (uint32_t id : order) {
    stack.push_back(key(id));
    while (!stack.empty()) {
      size_t k = stack.back();
      if (state[k] == 2) {
        stack.pop_back();
      } else if (state[k] == 1) {
        stack.pop_back();
        state[k] = 2;
        if (k < nn) out.push_back(static_cast<uint32_t>(k));
        else
          for (uint32_t m : order)
            if (region_of[m] == static_cast<int>(k - nn)) out.push_back(m);
      } else {
        state[k] = 1;
        deps(k, &ds);
        for (auto it = ds.rbegin(); it != ds.rend(); ++it)
          if (state[*it] == 0) stack.push_back(*it);
      }
    }
  }
  for (auto& r : regions) {
    std::vector<uint32_t> sorted;
    for (uint32_t m : out)
      if (region_of[m] >= 0 && regions[region_of[m]] == r) sorted.push_back(m);
    r->members = std::move(sorted);
  }
  return out;
}

std::string RegionLine(const InferRegion& r) {
  std::string line = "oneDNN region " + r.attrs.name + ": " + std::to_string(r.members.size()) + " nodes (";
  for (size_t i = 0; i < r.member_names.size(); ++i) line += (i ? ", " : "") + r.member_names[i];
  line += ")\n";
  for (const std::string& p : r.region->primitives()) line += "  " + p + "\n";
  return line;
}

void Executor::BuildInferSteps(const std::vector<uint32_t>& forward_nodes, const std::vector<NDArray>& entry,
                               const std::vector<OpReq>& entry_req) {
  WEFT_CHECK(forward_nodes.size() == forward_.size(), kInternal, "inference pass: ", forward_nodes.size(),
             " forward nodes for ", forward_.size(), " forward steps");
  std::unordered_map<uint32_t, const InferRegion*> last_of;
  std::unordered_set<uint32_t> members;
  for (const auto& r : regions_) {
    last_of[r->members.back()] = r.get();
    members.insert(r->members.begin(), r->members.end());
  }
  for (size_t k = 0; k < forward_nodes.size(); ++k) {
    uint32_t id = forward_nodes[k];
    if (!members.count(id)) {
      infer_.push_back(forward_[k]);
      continue;
    }
    auto it = last_of.find(id);
    if (it == last_of.end()) continue;
    const InferRegion& r = *it->second;
    Step s;
    s.attrs = &r.attrs;
    s.ctx = forward_[k].ctx;  // a host context (regions form only when every node is on one)
    for (uint32_t e : r.inputs) s.inputs.push_back(entry[e]);
    for (uint32_t e : r.outputs) {
      s.outputs.push_back(entry[e]);
      s.req.push_back(entry_req[e]);
    }
    s.input_names = r.input_names;
    s.output_names = r.output_names;
    r.region->Watch(s.inputs);
    infer_.push_back(std::move(s));
  }
}

}  // namespace executor
}  // namespace weft

// Pointwise fusion: chains of elementwise nodes found in run order, each made one
// "_fused_pointwise" node (a tile loop on the CPU, a kernel generated and compiled with
// NVRTC on a GPU).
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>

#include "core/executor/executor.h"
#include "core/executor/passes.h"
#include "core/op/fused/fused_pointwise.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;

std::vector<std::vector<uint32_t>> PointwiseChains(const IndexedGraph& g, const std::vector<uint32_t>& order,
                                                   const std::vector<DType>& types, const std::vector<int>& uses,
                                                   const std::vector<bool>& persistent,
                                                   const std::unordered_set<const graph::Node*>& constant,
                                                   const std::unordered_set<const graph::Node*>& in_forward,
                                                   const std::function<Context(uint32_t)>& context_of) {
  static const auto& pointwise = Op::GetAttr<PointwiseFn>("FPointwise");
  static const auto& cuda_body = Op::GetAttr<std::string>("FPointwiseCuda");
  constexpr size_t kMaxChain = 32;
  std::vector<std::vector<uint32_t>> chains;
  std::unordered_map<uint32_t, size_t> open;  // last node -> chain
  for (uint32_t id : order) {
    const graph::Node* n = g[id].source;
    if (!pointwise.Contains(n->op()) || n->num_outputs() != 1 || constant.count(n)) continue;
    const Context ctx = context_of(id);
    if (!op::FusibleOn(ctx, cuda_body.Get(n->op(), std::string()))) continue;
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
      if (context_of(in.node_id) != ctx) continue;
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

// The program of a chain: each node becomes a step reading the previous step's result or
// one of the fused node's inputs (entries from outside the chain, each listed once).
Executor::FusedChain Executor::FuseChain(const IndexedGraph& g, const std::vector<uint32_t>& chain) {
  static const auto& pointwise = Op::GetAttr<PointwiseFn>("FPointwise");
  static const auto& cuda_body = Op::GetAttr<std::string>("FPointwiseCuda");
  auto program = std::make_shared<op::FusedProgram>();
  FusedChain fc;
  std::string name = "fused";
  for (size_t k = 0; k < chain.size(); ++k) {
    uint32_t id = chain[k];
    const graph::Node& n = *g[id].source;
    op::FusedProgram::Step step;
    step.fn = pointwise[n.op()];
    step.cuda = cuda_body.Get(n.op(), std::string());
    step.op = n.op()->name;
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

}  // namespace executor
}  // namespace weft

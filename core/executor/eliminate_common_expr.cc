// Common subexpression elimination (MXNet's MXNET_ELIMINATE_COMMON_EXPR pass): nodes that
// apply the same operator, with the same attributes, to the same inputs compute the same
// values, so all but the first are dropped and their readers read the first.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "core/executor/passes.h"
#include "core/graph/subgraphs.h"
#include "core/resource/resource.h"

namespace weft {
namespace executor {

namespace {

using graph::NodeEntry;
using graph::NodePtr;

// Whether two nodes of this kind with equal inputs and attributes are interchangeable: a
// plain CPU kernel that draws no random numbers, writes none of its inputs and runs no
// subgraph (custom operators, Dropout, samplers and BatchNorm's moving averages are not).
bool Mergeable(const graph::Node& n) {
  static const auto& fcompute = Op::GetAttr<FCompute>("FCompute<cpu>");
  static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
  static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
  if (n.is_variable() || !fcompute.Contains(n.op()) || !n.control_deps.empty()) return false;
  if (mutates.Contains(n.op()) && !mutates[n.op()](n.attrs).empty()) return false;
  if (resources.Contains(n.op()))
    for (const ResourceRequest& r : resources[n.op()](n.attrs))
      if (r.type == ResourceType::kRandom) return false;
  return n.FindAttr(graph::kSubgraphsAttr) == nullptr;
}

// The node's identity for merging: operator, attributes (dict is ordered) and inputs.
std::string Key(const graph::Node& n) {
  std::string key = n.op()->name;
  KwArgs dict = n.attrs.dict;  // the same parameters may come in another order
  std::sort(dict.begin(), dict.end());
  for (const auto& [k, v] : dict) key += '\0' + k + '\0' + v;
  key += '\1';
  for (const auto& in : n.inputs)
    key += std::to_string(reinterpret_cast<uintptr_t>(in.node.get())) + ':' + std::to_string(in.index) + ',';
  return key;
}

}  // namespace

bool EliminateCommonExpr(graph::Symbol* sym) {
  static const Op* copy = Op::Get("_copy");
  std::unordered_map<const graph::Node*, NodePtr> same_as;  // dropped node -> the one kept
  std::map<std::string, NodePtr> kept;
  auto resolve = [&](NodeEntry* e) {
    auto it = same_as.find(e->node.get());
    if (it != same_as.end()) e->node = it->second;
  };
  graph::DFSVisit(sym->outputs, [&](const NodePtr& n) {
    for (auto& in : n->inputs) resolve(&in);
    for (auto& dep : n->control_deps) {
      auto it = same_as.find(dep.get());
      if (it != same_as.end()) dep = it->second;
    }
    if (!Mergeable(*n)) return;
    auto [it, inserted] = kept.emplace(Key(*n), n);
    if (!inserted) same_as[n.get()] = it->second;
  });
  if (same_as.empty()) return false;
  // Outputs that became one value are kept apart by a copy, as MXNet does: each output of
  // an executor is its own array.
  auto same = [](const NodeEntry& a, const NodeEntry& b) { return a.node == b.node && a.index == b.index; };
  std::vector<NodeEntry> before = sym->outputs, resolved = sym->outputs;
  for (auto& out : resolved) resolve(&out);
  for (size_t i = 0; i < resolved.size(); ++i) {
    sym->outputs[i] = resolved[i];
    for (size_t j = 0; j < i; ++j) {
      if (!same(resolved[j], resolved[i]) || same(before[j], before[i])) continue;
      NodePtr c = graph::Node::Create();
      c->attrs = MakeAttrs(copy, {});
      c->attrs.name = before[i].node->attrs.name + "_copy";
      c->inputs = {resolved[i]};
      sym->outputs[i] = NodeEntry{c, 0, 0};
      break;
    }
  }
  return true;
}

}  // namespace executor
}  // namespace weft

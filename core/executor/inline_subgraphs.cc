// Replaces each float _sg_mkldnn_conv / _sg_mkldnn_fully_connected node (MXNet's oneDNN
// fusions, which hold their operators as a subgraph) by the operators of its subgraph, so
// that an inference executor's own passes fuse them again: a convolution, its BatchNorm,
// activation and residual sum become one oneDNN region (infer_fuse.cc) instead of separate
// kernels run one after another by the node.
#include <nlohmann/json.hpp>

#include "core/executor/passes.h"
#include "core/graph/json.h"
#include "core/graph/symbol.h"

namespace weft {
namespace executor {

namespace {

using graph::NodeEntry;
using graph::NodePtr;

bool Inlinable(const graph::Node& n) {
  if (n.is_variable()) return false;
  const std::string& op = n.op()->name;
  if (op != "_sg_mkldnn_conv" && op != "_sg_mkldnn_fully_connected") return false;
  return !NodeAttrBool(n.attrs, "quantized", false) && !NodeAttr(n.attrs, "subgraph", "").empty();
}

// The subgraph's outputs with its variables replaced by the node's inputs (the subgraph's
// variables in the order its JSON lists them, as the operator reads them), or nothing when
// its variables do not line up with the node's inputs one to one.
std::vector<NodeEntry> Expand(const graph::Node& n) {
  const std::string& text = NodeAttr(n.attrs, "subgraph", "");
  std::vector<std::string> var_names;
  const nlohmann::json top = nlohmann::json::parse(text);
  for (const auto& jn : top["nodes"])
    if (jn["op"] == "null") var_names.push_back(jn["name"].get<std::string>());
  graph::Symbol inner = graph::LoadJSON(text, "the subgraph of '" + n.attrs.name + "'");
  graph::IndexedGraph ig(inner.outputs);
  if (ig.input_nodes().size() != var_names.size() || var_names.size() != n.inputs.size()) return {};
  std::unordered_map<const graph::Node*, size_t> slot;
  for (size_t k = 0; k < ig.input_nodes().size(); ++k) {
    const graph::Node* v = ig[ig.input_nodes()[k]].source;
    if (v->attrs.name != var_names[k]) return {};  // the subgraph's order is not the JSON's
    slot[v] = k;
  }
  graph::DFSVisit(inner.outputs, [&](const NodePtr& m) {
    for (auto& e : m->inputs)
      if (e.node->is_variable()) e = n.inputs[slot.at(e.node.get())];
  });
  return inner.outputs;
}

}  // namespace

bool InlineSubgraphNodes(graph::Symbol* sym) {
  if (!Enabled("WEFT_EXEC_INLINE_SUBGRAPHS")) return false;
  std::unordered_map<const graph::Node*, std::vector<NodeEntry>> expanded;
  graph::DFSVisit(sym->outputs, [&](const NodePtr& n) {
    if (!Inlinable(*n)) return;
    std::vector<NodeEntry> outs = Expand(*n);
    if (!outs.empty() && outs.size() == static_cast<size_t>(n->num_outputs())) expanded[n.get()] = std::move(outs);
  });
  if (expanded.empty()) return false;
  auto replace = [&](NodeEntry* e) {
    auto it = expanded.find(e->node.get());
    if (it != expanded.end()) *e = it->second[e->index];
  };
  // Inner nodes read the outer entries they were given, which may themselves be expanded
  // nodes (two fused convolutions in a row): every reader is rewritten, inner ones included.
  for (auto& kv : expanded)
    graph::DFSVisit(kv.second, [&](const NodePtr& m) {
      for (auto& e : m->inputs) replace(&e);
    });
  graph::DFSVisit(sym->outputs, [&](const NodePtr& m) {
    for (auto& e : m->inputs) replace(&e);
  });
  for (auto& e : sym->outputs) replace(&e);
  return true;
}

}  // namespace executor
}  // namespace weft

#include "core/graph/node.h"

#include <unordered_set>
#include <utility>

namespace weft {
namespace graph {

Node::~Node() {
  // Inputs and control dependencies that die with this node are emptied before their own
  // destructors run, so each runs with nothing left to release: the chain is walked here,
  // with a work list, instead of by nested destructor calls.
  std::vector<NodePtr> pending;
  auto detach = [&pending](Node* n) {
    for (NodeEntry& e : n->inputs)
      if (e.node) pending.push_back(std::move(e.node));
    for (NodePtr& d : n->control_deps)
      if (d) pending.push_back(std::move(d));
    n->inputs.clear();
    n->control_deps.clear();
  };
  detach(this);
  while (!pending.empty()) {
    NodePtr p = std::move(pending.back());
    pending.pop_back();
    // Only a node nothing else holds dies here; one still shared keeps its inputs.
    if (p.use_count() == 1) detach(p.get());
  }
}

int Node::num_visible_outputs() const {
  if (is_variable()) return 1;
  static const auto& visible = Op::GetAttr<FNumVisibleOutputs>("FNumVisibleOutputs");
  return visible.Contains(attrs.op) ? visible[attrs.op](attrs) : num_outputs();
}

const std::string* Node::FindAttr(const std::string& key) const {
  for (const auto& kv : attrs.dict)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void Node::SetAttr(const std::string& key, const std::string& value) {
  for (auto& kv : attrs.dict) {
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  }
  attrs.dict.emplace_back(key, value);
}

void DFSVisit(const std::vector<NodeEntry>& heads, const std::function<void(const NodePtr&)>& fn) {
  std::unordered_set<const Node*> visited;
  // (node, index of the next predecessor to look at): inputs first, then control deps.
  std::vector<std::pair<NodePtr, size_t>> stack;
  auto predecessor = [](const Node& n, size_t i) -> const NodePtr& {
    return i < n.inputs.size() ? n.inputs[i].node : n.control_deps[i - n.inputs.size()];
  };
  for (const NodeEntry& head : heads) {
    if (!head.node || !visited.insert(head.node.get()).second) continue;
    stack.emplace_back(head.node, 0);
    while (!stack.empty()) {
      auto& top = stack.back();
      const Node& n = *top.first;
      size_t count = n.inputs.size() + n.control_deps.size();
      if (top.second < count) {
        const NodePtr& next = predecessor(n, top.second++);
        if (next && visited.insert(next.get()).second) stack.emplace_back(next, 0);
      } else {
        NodePtr done = std::move(top.first);
        stack.pop_back();
        fn(done);
      }
    }
  }
}

IndexedGraph::IndexedGraph(const std::vector<NodeEntry>& outputs) : outputs_(outputs) {
  static const auto& mutate = Op::GetAttr<FMutateInputs>("FMutateInputs");
  DFSVisit(outputs, [&](const NodePtr& n) {
    uint32_t id = static_cast<uint32_t>(nodes_.size());
    node_ids_[n.get()] = id;
    IndexedNode in;
    in.source = n.get();
    for (const NodeEntry& e : n->inputs) in.inputs.push_back({node_ids_.at(e.node.get()), e.index});
    for (const NodePtr& c : n->control_deps) in.control_deps.push_back(node_ids_.at(c.get()));
    if (n->is_variable()) input_nodes_.push_back(id);
    if (!n->is_variable() && mutate.Contains(n->op())) {
      for (int i : mutate[n->op()](n->attrs))
        if (i >= 0 && static_cast<size_t>(i) < in.inputs.size()) mutable_inputs_.insert(in.inputs[i].node_id);
    }
    nodes_.push_back(std::move(in));
    row_ptr_.push_back(row_ptr_.back() + static_cast<uint32_t>(n->num_outputs()));
  });
}

}  // namespace graph
}  // namespace weft

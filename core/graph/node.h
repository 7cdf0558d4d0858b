// Graph nodes: an operator applied to the outputs of other nodes, or a variable (a node
// without an operator). A Symbol (symbol.h) is a list of output entries; passes work on
// the IndexedGraph, a topologically ordered copy with integer ids.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/op/registry.h"

namespace weft {
namespace graph {

struct Node;
using NodePtr = std::shared_ptr<Node>;

// One output of a node. `version` counts writes to a variable (kept for MXNet's JSON; 0 in
// practice).
struct NodeEntry {
  NodePtr node;
  uint32_t index = 0;
  uint32_t version = 0;
};

struct Node {
  // attrs.op is null for a variable; attrs.name is the node's name; attrs.dict holds the
  // operator's parameters and the user attributes ("__shape__", "__lr_mult__", ...).
  NodeAttrs attrs;
  std::vector<NodeEntry> inputs;
  // Nodes that must run before this one without feeding it a value.
  std::vector<NodePtr> control_deps;

  Node() = default;
  Node(const Node&) = default;
  Node& operator=(const Node&) = default;
  // Releases the nodes only this one keeps alive without recursing into them, so that
  // freeing a graph of a million chained nodes does not exhaust the stack.
  ~Node();

  static NodePtr Create() { return std::make_shared<Node>(); }
  bool is_variable() const { return attrs.op == nullptr; }
  const Op* op() const { return attrs.op; }
  // Every output, hidden ones included.
  int num_outputs() const { return is_variable() ? 1 : attrs.op->NumOutputs(attrs); }
  int num_visible_outputs() const;
  // The value of a user or parameter attribute, or nullptr.
  const std::string* FindAttr(const std::string& key) const;
  void SetAttr(const std::string& key, const std::string& value);
};

// Calls fn once for every node reachable from `heads`, each after all its inputs and
// control dependencies (depth-first post-order, inputs in order, then control deps).
// Iterative, so deep graphs do not exhaust the stack.
void DFSVisit(const std::vector<NodeEntry>& heads, const std::function<void(const NodePtr&)>& fn);

// A graph frozen for passes: nodes in topological order with integer ids, and an id per
// output entry (entry_id(node, index) = row_ptr[node] + index).
class IndexedGraph {
 public:
  struct IndexedNode {
    const Node* source;
    struct Input {
      uint32_t node_id;
      uint32_t index;
    };
    std::vector<Input> inputs;
    std::vector<uint32_t> control_deps;
  };

  explicit IndexedGraph(const std::vector<NodeEntry>& outputs);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_entries() const { return row_ptr_.back(); }
  const IndexedNode& operator[](size_t id) const { return nodes_[id]; }
  uint32_t node_id(const Node* n) const { return node_ids_.at(n); }
  uint32_t entry_id(uint32_t node_id, uint32_t index) const { return row_ptr_[node_id] + index; }
  uint32_t entry_id(const NodeEntry& e) const { return entry_id(node_id(e.node.get()), e.index); }
  const std::vector<uint32_t>& row_ptr() const { return row_ptr_; }
  // Ids of the variable nodes, in node order.
  const std::vector<uint32_t>& input_nodes() const { return input_nodes_; }
  // Variables written by an operator (auxiliary states such as BatchNorm's moving mean).
  bool is_mutable_input(uint32_t node_id) const { return mutable_inputs_.count(node_id) > 0; }
  const std::vector<NodeEntry>& outputs() const { return outputs_; }

 private:
  std::vector<IndexedNode> nodes_;
  std::unordered_map<const Node*, uint32_t> node_ids_;
  std::vector<uint32_t> row_ptr_{0};
  std::vector<uint32_t> input_nodes_;
  std::unordered_set<uint32_t> mutable_inputs_;
  std::vector<NodeEntry> outputs_;
};

}  // namespace graph
}  // namespace weft

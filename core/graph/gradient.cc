#include "core/graph/gradient.h"

#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "core/base/error.h"
#include "core/imperative/imperative.h"

namespace weft {
namespace graph {
namespace {

// Runs an operator's FGradient with graph entries as values: each call adds a node.
class GraphGradBuilder : public GradBuilder {
 public:
  explicit GraphGradBuilder(std::string prefix) : prefix_(std::move(prefix)) {}

  std::vector<NodeEntry> values;

  GradValue Add(const NodeEntry& e) {
    values.push_back(e);
    return GradValue{static_cast<int64_t>(values.size() - 1)};
  }

  std::vector<GradValue> Call(const std::string& op_name, const std::vector<GradValue>& ins,
                              const KwArgs& params) override {
    NodePtr n = Node::Create();
    n->attrs = imperative::MakeAttrs(Op::Get(op_name), params);
    n->attrs.name = prefix_ + (calls_ == 0 ? "" : std::to_string(calls_));
    ++calls_;
    for (const GradValue& v : ins) {
      WEFT_CHECK(v.defined(), kInternal, "the gradient of '", prefix_, "' passes an undefined value to '", op_name,
                 "'");
      n->inputs.push_back(values.at(v.id));
    }
    std::vector<GradValue> outs;
    for (int i = 0; i < n->num_visible_outputs(); ++i) outs.push_back(Add({n, static_cast<uint32_t>(i), 0}));
    return outs;
  }

 private:
  std::string prefix_;
  int calls_ = 0;
};

struct EntryKey {
  const Node* node;
  uint32_t index;
  bool operator<(const EntryKey& o) const { return node != o.node ? node < o.node : index < o.index; }
};

NodeEntry MakeNode(const std::string& op, const std::string& name, std::vector<NodeEntry> inputs) {
  NodePtr n = Node::Create();
  n->attrs = imperative::MakeAttrs(Op::Get(op), {});
  n->attrs.name = name;
  n->inputs = std::move(inputs);
  return {n, 0, 0};
}

// The sum of an entry's gradient contributions (a chain of elemwise_add when several).
NodeEntry Sum(const std::vector<NodeEntry>& parts, const std::string& name) {
  NodeEntry acc = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) acc = MakeNode("elemwise_add", name + "_sum" + std::to_string(k), {acc, parts[k]});
  return acc;
}

}  // namespace

std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys, const std::vector<NodeEntry>& xs,
                                const std::vector<NodeEntry>& head_grads) {
  WEFT_CHECK(ys.size() == head_grads.size(), kInternal, "Gradient: ", ys.size(), " outputs but ", head_grads.size(),
             " head gradients");
  static const auto& grad_fns = Op::GetAttr<FGradient>("FGradient");
  std::vector<NodePtr> order;
  DFSVisit(ys, [&](const NodePtr& n) { order.push_back(n); });

  // Operator nodes that depend on an x: only they need differentiating.
  std::unordered_set<const Node*> needs;
  std::set<EntryKey> x_entries;
  for (const auto& x : xs) x_entries.insert({x.node.get(), x.index});
  auto depends = [&](const NodeEntry& e) {
    return x_entries.count({e.node.get(), e.index}) > 0 || needs.count(e.node.get()) > 0;
  };
  for (const NodePtr& n : order)
    for (const auto& e : n->inputs)
      if (depends(e)) needs.insert(n.get());

  std::map<EntryKey, std::vector<NodeEntry>> contributions;
  for (size_t i = 0; i < ys.size(); ++i) contributions[{ys[i].node.get(), ys[i].index}].push_back(head_grads[i]);

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodePtr& n = *it;
    if (n->is_variable() || !needs.count(n.get())) continue;
    bool any = false;
    for (int i = 0; i < n->num_outputs(); ++i) any |= contributions.count({n.get(), static_cast<uint32_t>(i)}) > 0;
    if (!any) continue;  // no y depends on this node
    if (!grad_fns.Contains(n->op()))
      Throw(ErrorKind::kUnsupported, "Node '", n->attrs.name, "' (operator '", n->op()->name,
            "') is not differentiable: it registers no gradient");
    GraphGradBuilder b(n->attrs.name + "_backward");
    GradArgs args;
    for (const auto& e : n->inputs) args.inputs.push_back(b.Add(e));
    // Every output, hidden ones included (BatchNorm's saved statistics, say): gradients
    // read them, and see zeros flowing into those nobody differentiates.
    for (int i = 0; i < n->num_outputs(); ++i) {
      NodeEntry out{n, static_cast<uint32_t>(i), 0};
      args.outputs.push_back(b.Add(out));
      auto c = contributions.find({n.get(), static_cast<uint32_t>(i)});
      NodeEntry g = c != contributions.end()
                        ? Sum(c->second, n->attrs.name + "_out" + std::to_string(i))
                        : MakeNode("zeros_like", n->attrs.name + "_zero_grad" + std::to_string(i), {out});
      args.out_grads.push_back(b.Add(g));
    }
    std::vector<GradValue> grads = grad_fns[n->op()](b, n->attrs, args);
    WEFT_CHECK(grads.size() == n->inputs.size(), kInternal, "the gradient of operator '", n->op()->name,
               "' returned ", grads.size(), " values for ", n->inputs.size(), " inputs");
    for (size_t k = 0; k < grads.size(); ++k) {
      const NodeEntry& in = n->inputs[k];
      if (grads[k].defined() && depends(in))
        contributions[{in.node.get(), in.index}].push_back(b.values.at(grads[k].id));
    }
  }

  std::vector<NodeEntry> result;
  for (const auto& x : xs) {
    auto c = contributions.find({x.node.get(), x.index});
    std::string name = x.node->attrs.name + "_grad";
    result.push_back(c != contributions.end() ? Sum(c->second, name) : MakeNode("zeros_like", name, {x}));
  }
  return result;
}

}  // namespace graph
}  // namespace weft

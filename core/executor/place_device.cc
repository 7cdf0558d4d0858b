// Device placement (group2ctx): every node gets a context, and a copy node is inserted
// wherever a value is read on another context than the one it was made on.
#include <map>
#include <tuple>

#include "core/base/error.h"
#include "core/executor/passes.h"
#include "core/graph/symbol.h"
#include "core/imperative/imperative.h"
#include "core/op/op_util.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using graph::Node;
using graph::NodeEntry;
using graph::NodePtr;

namespace {

const char kCopyOp[] = "_CrossDeviceCopy";

std::string GroupList(const std::map<std::string, Context>& group2ctx) {
  std::string r;
  for (const auto& kv : group2ctx) r += (r.empty() ? "" : ", ") + kv.first;
  return r;
}

// A value copied to another device is the same value: shape and dtype pass through.
bool CopyType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*out)[0];
  if (t == DType::kUnknown) return false;
  op::AssignType(attrs, in, 0, t, "input");
  op::AssignType(attrs, out, 0, t, "output");
  return true;
}

// Run imperatively (both arrays on one device) it is a plain copy; the executor runs the
// copies it inserts as cross-device copies instead (CopyFromTo).
void CopyCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& inputs,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& outputs) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_CHECK(req[0] != OpReq::kAddTo, kUnsupported, "Operator '", attrs.op->name, "' cannot add to its output");
  CopyBlob(inputs[0], outputs[0], ctx.run_ctx);
}

}  // namespace

WEFT_REGISTER_OP(_CrossDeviceCopy)
    .Describe("Copies a value to another device. The executor inserts it where a value made on one context "
              "is read on another (group2ctx); it is not meant to be called directly.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The value to copy")
    .SetAttr<FInferShape>("FInferShape", op::SameShape)
    .SetAttr<FInferType>("FInferType", CopyType)
    .SetAttr<FCompute>("FCompute<cpu>", CopyCompute);

bool IsCrossDeviceCopy(const Node& n) { return !n.is_variable() && n.op()->name == kCopyOp; }

Placement PlaceDevices(std::vector<NodeEntry>* outputs, const PlacementInputs& in) {
  static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
  IndexedGraph g(*outputs);
  std::unordered_map<const Node*, NodePtr> owner;
  graph::DFSVisit(*outputs, [&](const NodePtr& n) { owner[n.get()] = n; });

  std::vector<Context> ctx(g.num_nodes());
  std::vector<bool> known(g.num_nodes(), false);
  auto set = [&](uint32_t id, Context c) {
    ctx[id] = c;
    known[id] = true;
  };
  // A node's own group, when group2ctx is given (MXNet ignores groups without one).
  auto group_ctx = [&](const Node* n, Context* c) {
    const std::string* group = in.group2ctx.empty() ? nullptr : n->FindAttr("__ctx_group__");
    if (group == nullptr) return false;
    auto it = in.group2ctx.find(*group);
    WEFT_CHECK(it != in.group2ctx.end(), kValue, "bind: node '", n->attrs.name, "' is in context group '", *group,
               "', which group2ctx does not map (it maps ", GroupList(in.group2ctx), ")");
    *c = it->second;
    return true;
  };
  // Otherwise a node runs where its first placed input was made, as MXNet places it.
  auto from_inputs = [&](uint32_t id) {
    for (const auto& e : g[id].inputs)
      if (known[e.node_id]) {
        set(id, ctx[e.node_id]);
        return;
      }
  };
  // Forward nodes first (they depend only on forward nodes), so that the gradient nodes
  // can follow the forward node they were made for wherever it is in the order.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t id = 0; id < g.num_nodes(); ++id) {
      const Node* n = g[id].source;
      if ((in.forward.count(n) > 0) != (pass == 0)) continue;
      Context c;
      auto fixed = in.variable_ctx.find(n);
      auto made = in.made_for.find(n);
      if (fixed != in.variable_ctx.end()) {
        set(id, fixed->second);
      } else if (n->is_variable()) {
        // A head gradient: where its output is.
        WEFT_CHECK(made != in.made_for.end(), kInternal, "bind: variable '", n->attrs.name, "' has no array");
        set(id, ctx[g.node_id(made->second)]);
      } else if (made != in.made_for.end() && known[g.node_id(made->second)]) {
        set(id, ctx[g.node_id(made->second)]);
      } else if (group_ctx(n, &c)) {
        set(id, c);
      } else {
        from_inputs(id);
      }
    }
  }
  // Nodes without inputs and without a group run where their first reader runs.
  for (uint32_t id = g.num_nodes(); id-- > 0;)
    if (known[id])
      for (const auto& e : g[id].inputs)
        if (!known[e.node_id]) set(e.node_id, ctx[id]);
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    if (!known[id]) set(id, in.default_ctx);

  Placement r;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) r.ctx[g[id].source] = ctx[id];
  // One copy per value and destination, shared by every reader there.
  std::map<std::tuple<uint32_t, uint32_t, Context>, NodePtr> made;
  const Op* copy_op = Op::Get(kCopyOp);
  auto copy_of = [&](uint32_t src, const NodeEntry& e, Context to) {
    NodePtr& c = made[std::make_tuple(src, e.index, to)];
    if (c == nullptr) {
      c = Node::Create();
      c->attrs = MakeAttrs(copy_op, {});
      c->attrs.name = graph::OutputName(*e.node, e.index) + "_copy_to_" + to.ToString();
      c->inputs.push_back(e);
      r.ctx[c.get()] = to;
      r.copies.push_back(c);
    }
    return c;
  };
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    Node* n = owner.at(g[id].source).get();
    if (n->is_variable()) continue;
    std::vector<int> mutated;
    if (mutates.Contains(n->op())) mutated = mutates[n->op()](n->attrs);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      uint32_t src = g[id].inputs[i].node_id;
      if (ctx[src] == ctx[id]) continue;
      for (int m : mutated)
        WEFT_CHECK(static_cast<size_t>(m) != i, kValue, "bind: node '", n->attrs.name, "' runs on ",
                   ctx[id].ToString(), " but updates '", n->inputs[i].node->attrs.name, "', which is on ",
                   ctx[src].ToString(), ": a state an operator updates cannot be copied between contexts");
      NodePtr c = copy_of(src, n->inputs[i], ctx[id]);
      if (in.forward.count(n)) r.forward_copies.insert(c.get());
      n->inputs[i] = NodeEntry{c, 0, 0};
    }
  }
  for (const auto& w : in.output_ctx) {
    NodeEntry& e = (*outputs)[w.first];
    uint32_t src = g.node_id(e.node.get());
    if (ctx[src] != w.second) e = NodeEntry{copy_of(src, e, w.second), 0, 0};
  }
  return r;
}

}  // namespace executor
}  // namespace weft

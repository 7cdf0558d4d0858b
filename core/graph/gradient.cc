#include "core/graph/gradient.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/op/registry.h"

namespace weft {
namespace graph {
namespace {

bool IsTrue(const std::string* v) { return v != nullptr && (*v == "True" || *v == "true" || *v == "1"); }

// Which forward nodes the backward recomputes, and their copies ("mirrors").
class Mirror {
 public:
  // `order`: the forward nodes in topological order; `ys`: the outputs (kept anyway).
  Mirror(const MirrorOptions& opt, const std::vector<NodePtr>& order, const std::vector<NodeEntry>& ys,
         std::unordered_map<const Node*, const Node*>* made_for)
      : made_for_(made_for) {
    if (!opt.enabled) return;
    std::unordered_set<const Node*> outputs;
    for (const auto& y : ys) outputs.insert(y.node.get());
    if (opt.segment > 0) {
      // Segment checkpointing: everything that may be recomputed is, except the kept cuts.
      std::unordered_set<const Node*> kept = Checkpoints(order, outputs, opt.segment);
      for (const NodePtr& n : order)
        if (!outputs.count(n.get()) && !kept.count(n.get()) && Replayable(*n)) mirrored_.insert(n.get());
      return;
    }
    std::unordered_set<const Node*> conv_links = opt.mirror_convolutions ? ConvLinks(order, outputs)
                                                                          : std::unordered_set<const Node*>{};
    // The depth of a recomputed value: how many cheap operators lie between it and the
    // kept values it is recomputed from. A node that would be too deep is kept instead.
    // `convs` counts the recomputed convolutions a value's recomputation runs in a row.
    std::unordered_map<const Node*, int> depth, convs;
    for (const NodePtr& n : order) {
      if (outputs.count(n.get()) || !(Recomputable(*n) || conv_links.count(n.get()))) continue;
      int d = 0, c = 0;
      for (const auto& in : n->inputs) {
        auto it = depth.find(in.node.get());
        if (it != depth.end()) d = std::max(d, it->second);
        auto ct = convs.find(in.node.get());
        if (ct != convs.end()) c = std::max(c, ct->second);
      }
      if (IsTrue(n->FindAttr("__force_mirroring__"))) {
        depth[n.get()] = 0;  // the user's choice: recomputed whatever the depth
      } else if (conv_links.count(n.get())) {
        if (c >= kMaxConvsInARow) continue;
        depth[n.get()] = 0;
        convs[n.get()] = c + 1;
      } else if (d < opt.max_depth) {
        depth[n.get()] = d + 1;
        if (c > 0) convs[n.get()] = c;
      } else {
        continue;
      }
      mirrored_.insert(n.get());
    }
  }

  // The entry a gradient node reads for forward value `e`: `e`, or the same output of its
  // node's mirror. `deps` are the nodes the mirror must run after, if it is made now.
  // Hidden outputs (BatchNorm's saved statistics) are small and always read as they are.
  NodeEntry Read(const NodeEntry& e, const std::vector<NodePtr>& deps) {
    if (!mirrored_.count(e.node.get()) || e.index >= static_cast<uint32_t>(e.node->num_visible_outputs())) return e;
    return {Copy(e.node, deps), e.index, 0};
  }

 private:
  // Recomputing a third convolution in a row planned more memory, not less, on ResNet-50:
  // the recomputed values of a longer run all live from the first reader to the last.
  static constexpr int kMaxConvsInARow = 2;

  // Convolutions whose output reaches, through cheap operators only, exactly one other
  // operator, a convolution: the inner links of a chain of convolutions (a bottleneck's
  // reducing 1x1 and its 3x3, a VGG stage's first ones), not the outputs that feed a sum,
  // a concatenation, several branches or the loss.
  static std::unordered_set<const Node*> ConvLinks(const std::vector<NodePtr>& order,
                                                   const std::unordered_set<const Node*>& outputs) {
    std::unordered_map<const Node*, std::vector<const Node*>> readers;
    for (const NodePtr& n : order)
      for (const auto& in : n->inputs) readers[in.node.get()].push_back(n.get());
    std::unordered_set<const Node*> links;
    for (const NodePtr& n : order) {
      if (n->is_variable() || n->op()->name != "Convolution" || outputs.count(n.get())) continue;
      std::unordered_set<const Node*> seen{n.get()}, ends;
      std::vector<const Node*> stack{n.get()};
      bool ok = true;
      while (!stack.empty() && ok) {
        const Node* m = stack.back();
        stack.pop_back();
        for (const Node* r : readers[m]) {
          if (!seen.insert(r).second) continue;
          if (outputs.count(r)) ok = false;
          else if (Recomputable(*r) && r->op()->name != "Convolution") stack.push_back(r);
          else ends.insert(r);
        }
      }
      if (ok && ends.size() == 1 && (*ends.begin())->op()->name == "Convolution") links.insert(n.get());
    }
    return links;
  }

  // The cuts of the forward in topological order: operators whose outputs are all that
  // the later operators read of the earlier ones (a residual block's output, each layer of
  // a plain chain), so that a segment between two kept cuts is recomputed from the first
  // alone. Of these, every `stride`-th is returned, to be kept; operators that cannot be
  // recomputed are kept anyway, and the outputs are never cuts (they live to the end).
  static std::unordered_set<const Node*> Checkpoints(const std::vector<NodePtr>& order,
                                                     const std::unordered_set<const Node*>& outputs, int stride) {
    std::unordered_map<const Node*, size_t> last_read;
    for (size_t i = 0; i < order.size(); ++i) {
      const Node* n = order[i].get();
      if (n->is_variable()) continue;
      last_read[n] = outputs.count(n) ? order.size() : i;
      for (const auto& in : n->inputs) {
        auto it = last_read.find(in.node.get());
        if (it != last_read.end() && it->second < order.size()) it->second = std::max(it->second, i);
      }
    }
    std::unordered_set<const Node*> kept;
    size_t reach = 0;  // the last position that reads an operator before the current one
    int cuts = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const Node* n = order[i].get();
      if (n->is_variable()) continue;
      if (reach <= i && !outputs.count(n) && ++cuts % stride == 0) kept.insert(n);
      reach = std::max(reach, last_read[n]);
    }
    return kept;
  }

  // Deterministic operators without side effects: the same inputs give the same bits.
  // BatchNorm is one when recomputed from the statistics its forward saved (Copy).
  static bool Replayable(const Node& n) {
    static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
    static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
    if (n.is_variable() || n.inputs.empty()) return false;
    const Op* op = n.op();
    if (resources.Contains(op))
      for (const auto& r : resources[op](n.attrs))
        if (r.type == ResourceType::kRandom) return false;  // a new mask, a new sample
    return !mutates.Contains(op) || op->name == "BatchNorm";
  }

  // Replayable operators that are cheap next to the convolutions and products whose
  // outputs they read.
  static bool Recomputable(const Node& n) {
    static const auto& patterns = Op::GetAttr<TOpPattern>("TOpPattern");
    if (!Replayable(n)) return false;
    const Op* op = n.op();
    if (op->name == "BatchNorm" || op->name == "Pooling" || IsTrue(n.FindAttr("__force_mirroring__"))) return true;
    if (!patterns.Contains(op)) return false;
    OpPattern p = patterns[op];
    return p == OpPattern::kElemwise || p == OpPattern::kBroadcast || p == OpPattern::kInjective;
  }

  NodePtr Copy(const NodePtr& n, const std::vector<NodePtr>& deps) {
    auto it = copies_.find(n.get());
    if (it != copies_.end()) return it->second;
    NodePtr m = Node::Create();
    m->attrs = n->attrs;
    for (const auto& in : n->inputs) m->inputs.push_back(Read(in, deps));
    if (n->op()->name == "BatchNorm") {
      // Normalise with the statistics the forward computed and saved (outputs 1 and 2, the
      // mean and 1 / sqrt(var + eps)): the forward's arithmetic on the same values, leaving
      // the moving statistics alone.
      m->attrs = MakeAttrs(Op::Get("_BatchNorm_replay"), m->attrs.dict);
      m->inputs[3] = {n, 1, 0};
      m->inputs[4] = {n, 2, 0};
    }
    m->attrs.name = n->attrs.name + "_mirror";
    m->control_deps = deps;
    if (made_for_) (*made_for_)[m.get()] = n.get();
    copies_[n.get()] = m;
    return m;
  }

  std::unordered_set<const Node*> mirrored_;
  std::unordered_map<const Node*, NodePtr> copies_;
  std::unordered_map<const Node*, const Node*>* made_for_;
};

// Runs an operator's FGradient with graph entries as values: each call adds a node. The
// forward values (the node's inputs and outputs) are read through the mirror, and only
// when a call uses them, so that a value the gradient ignores is never recomputed.
class GraphGradBuilder : public GradBuilder {
 public:
  GraphGradBuilder(std::string prefix, const Node* forward, std::unordered_map<const Node*, const Node*>* made_for,
                   Mirror* mirror, std::vector<NodePtr> deps)
      : prefix_(std::move(prefix)), forward_(forward), made_for_(made_for), mirror_(mirror), deps_(std::move(deps)) {}

  std::vector<NodeEntry> values;

  GradValue Add(const NodeEntry& e, bool forward_value = false) {
    values.push_back(e);
    forward_value_.push_back(forward_value);
    return GradValue{static_cast<int64_t>(values.size() - 1)};
  }

  std::vector<GradValue> Call(const std::string& op_name, const std::vector<GradValue>& ins,
                              const KwArgs& params) override {
    NodePtr n = Node::Create();
    n->attrs = MakeAttrs(Op::Get(op_name), params);
    n->attrs.name = prefix_ + (calls_ == 0 ? "" : std::to_string(calls_));
    if (made_for_) (*made_for_)[n.get()] = forward_;
    ++calls_;
    for (const GradValue& v : ins) {
      WEFT_CHECK(v.defined(), kInternal, "the gradient of '", prefix_, "' passes an undefined value to '", op_name,
                 "'");
      const NodeEntry& e = values.at(v.id);
      n->inputs.push_back(forward_value_[v.id] ? mirror_->Read(e, deps_) : e);
    }
    std::vector<GradValue> outs;
    for (int i = 0; i < n->num_visible_outputs(); ++i) outs.push_back(Add({n, static_cast<uint32_t>(i), 0}));
    return outs;
  }

 private:
  std::string prefix_;
  const Node* forward_;
  std::unordered_map<const Node*, const Node*>* made_for_;
  Mirror* mirror_;
  std::vector<NodePtr> deps_;
  std::vector<bool> forward_value_;
  int calls_ = 0;
};

struct EntryKey {
  const Node* node;
  uint32_t index;
  bool operator<(const EntryKey& o) const { return node != o.node ? node < o.node : index < o.index; }
};

NodeEntry MakeNode(const std::string& op, const std::string& name, std::vector<NodeEntry> inputs) {
  NodePtr n = Node::Create();
  n->attrs = MakeAttrs(Op::Get(op), {});
  n->attrs.name = name;
  n->inputs = std::move(inputs);
  return {n, 0, 0};
}

// The sum of an entry's gradient contributions (a chain of elemwise_add when several),
// noted in `made_for` as made for `origin`.
NodeEntry Sum(const std::vector<NodeEntry>& parts, const std::string& name, const Node* origin,
              std::unordered_map<const Node*, const Node*>* made_for) {
  NodeEntry acc = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) {
    acc = MakeNode("elemwise_add", name + "_sum" + std::to_string(k), {acc, parts[k]});
    if (made_for) (*made_for)[acc.node.get()] = origin;
  }
  return acc;
}

// zeros_like(e), noted in `made_for` as made for `origin`.
NodeEntry Zeros(const NodeEntry& e, const std::string& name, const Node* origin,
                std::unordered_map<const Node*, const Node*>* made_for) {
  NodeEntry z = MakeNode("zeros_like", name, {e});
  if (made_for) (*made_for)[z.node.get()] = origin;
  return z;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  WEFT_CHECK(*end == '\0' && x >= 0 && x <= 1000, kValue, name, ": expected an integer from 0 to 1000, got '", v,
             "'");
  return static_cast<int>(x);
}

}  // namespace

MirrorOptions MirrorOptions::FromEnv() {
  MirrorOptions o;
  o.enabled = EnvInt("WEFT_BACKWARD_DO_MIRROR", EnvInt("MXNET_BACKWARD_DO_MIRROR", 0)) != 0;
  o.max_depth = EnvInt("WEFT_BACKWARD_MIRROR_DEPTH", o.max_depth);
  o.mirror_convolutions = EnvInt("WEFT_BACKWARD_MIRROR_CONV", 0) != 0;
  o.segment = EnvInt("WEFT_BACKWARD_MIRROR_SEGMENT", 0);
  return o;
}

std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys, const std::vector<NodeEntry>& xs,
                                const std::vector<NodeEntry>& head_grads,
                                std::unordered_map<const Node*, const Node*>* made_for,
                                const MirrorOptions& mirror_options) {
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

  Mirror mirror(mirror_options, order, ys, made_for);
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
    // The gradients flowing in, summed first: a mirror made for this node runs after them.
    std::vector<NodeEntry> out_grads;
    std::vector<NodePtr> flowing;
    for (int i = 0; i < n->num_outputs(); ++i) {
      NodeEntry out{n, static_cast<uint32_t>(i), 0};
      auto c = contributions.find({n.get(), static_cast<uint32_t>(i)});
      if (c != contributions.end()) {
        out_grads.push_back(Sum(c->second, n->attrs.name + "_out" + std::to_string(i), n.get(), made_for));
        flowing.push_back(out_grads.back().node);
      } else {
        out_grads.push_back(Zeros(out, n->attrs.name + "_zero_grad" + std::to_string(i), n.get(), made_for));
      }
    }
    GraphGradBuilder b(n->attrs.name + "_backward", n.get(), made_for, &mirror, flowing);
    GradArgs args;
    for (const auto& e : n->inputs) args.inputs.push_back(b.Add(e, true));
    // Every output, hidden ones included (BatchNorm's saved statistics, say): gradients
    // read them, and see zeros flowing into those nobody differentiates.
    for (int i = 0; i < n->num_outputs(); ++i) {
      args.outputs.push_back(b.Add({n, static_cast<uint32_t>(i), 0}, true));
      args.out_grads.push_back(b.Add(out_grads[i]));
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
    result.push_back(c != contributions.end() ? Sum(c->second, name, x.node.get(), made_for)
                                              : Zeros(x, name, x.node.get(), made_for));
  }
  return result;
}

}  // namespace graph
}  // namespace weft

// MXNet's "MKLDNN" subgraph backend (see backend_subgraph.h). Groups are found in
// topological order; each grows from its convolution or fully connected node along the
// one reader of its last value, following the order MXNet's selectors accept (for a
// convolution: BatchNorm, then the residual sum, then an activation). The group becomes
// one node holding the grouped operators as its subgraph (the parameter `subgraph`, MXNet
// symbol JSON) whose variables are the group's outside inputs, one per use, named as
// MXNet names them (the input's output name and a use count: data0, conv0_weight0); the
// residual sum's other operand comes last, as the fused operators read it.
#include "core/executor/backend_subgraph.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/graph/json.h"
#include "core/op/nn/activation_param.h"
#include "core/op/nn/conv_common.h"
#include "core/op/nn/dropout.h"
#include "core/op/tensor/clip.h"

namespace weft {
namespace executor {

namespace {

using graph::Node;
using graph::NodeEntry;
using graph::NodePtr;

bool IsOp(const Node& n, const char* name) { return !n.is_variable() && n.op()->name == name; }

// Activation types oneDNN fuses (MXNet's SupportMKLDNNAct).
bool FusableActivation(const Node& n) {
  const std::string& t = n.attrs.Params<op::ActivationParam>().act_type;
  return t == "relu" || t == "sigmoid" || t == "softrelu" || t == "tanh";
}

bool ClipFromZero(const Node& n) { return n.attrs.Params<op::ClipParam>().a_min == 0; }

// What may end a convolution group. For MKLDNN_QUANTIZE (`quantize`) an Activation only
// when it is a relu and a clip not after the sum, as MXNet's selector in quantize mode.
bool ConvActivation(const Node& n, bool quantize, bool after_sum) {
  if (IsOp(n, "Activation"))
    return quantize ? n.attrs.Params<op::ActivationParam>().act_type == "relu" : FusableActivation(n);
  if (quantize && after_sum && IsOp(n, "clip")) return false;
  if (IsOp(n, "LeakyReLU")) {
    const std::string& t = n.attrs.Params<op::LeakyReLUParam>().act_type;
    return t == "leaky" || t == "gelu";
  }
  return IsOp(n, "clip") && ClipFromZero(n);
}

// What may follow a fully connected layer in its group (for MKLDNN_QUANTIZE an Activation
// only when it is a relu, and no square, sqrt or exp).
bool FCEltwise(const Node& n, bool quantize) {
  if (IsOp(n, "Activation"))
    return quantize ? n.attrs.Params<op::ActivationParam>().act_type == "relu" : FusableActivation(n);
  if (quantize && (IsOp(n, "square") || IsOp(n, "sqrt") || IsOp(n, "exp"))) return false;
  if (IsOp(n, "LeakyReLU")) {
    const std::string& t = n.attrs.Params<op::LeakyReLUParam>().act_type;
    return t == "leaky" || t == "elu" || t == "gelu";
  }
  if (IsOp(n, "clip")) return ClipFromZero(n);
  return IsOp(n, "square") || IsOp(n, "sqrt") || IsOp(n, "exp") || IsOp(n, "abs");
}

struct Use {
  NodePtr reader;
  size_t pos;       // the reader's input slot
  uint32_t index;   // the output read
};

class MkldnnPartitioner {
 public:
  MkldnnPartitioner(graph::Symbol* sym, bool quantize) : sym_(sym), quantize_(quantize) {
    graph::DFSVisit(sym->outputs, [&](const NodePtr& n) {
      order_.push_back(n);
      for (size_t k = 0; k < n->inputs.size(); ++k)
        uses_[n->inputs[k].node.get()].push_back({n, k, n->inputs[k].index});
      for (const auto& d : n->control_deps) tied_.insert(d.get());
      if (!n->control_deps.empty()) tied_.insert(n.get());
    });
    for (const auto& e : sym->outputs) heads_.insert(e.node.get());
  }

  void Run() {
    std::unordered_map<const Node*, NodePtr> fused_of;  // a group's last node -> its fused node
    int conv_id = 0, fc_id = 0;
    for (const NodePtr& n : order_) {
      if (taken_.count(n.get()) || tied_.count(n.get())) continue;
      std::vector<NodePtr> group;
      bool conv = false;
      if (IsOp(*n, "Convolution")) {
        const int k = n->attrs.Params<op::ConvolutionParam>().kernel.ndim();
        if (k != 2 && k != 3) continue;
        conv = true;
        group = ConvGroup(n);
      } else if (IsOp(*n, "FullyConnected")) {
        group = FCGroup(n);
      } else {
        continue;
      }
      for (const auto& g : group) taken_.insert(g.get());
      fused_of[group.back().get()] =
          conv ? Fuse(group, "_sg_mkldnn_conv", conv_id++) : Fuse(group, "_sg_mkldnn_fully_connected", fc_id++);
    }
    if (fused_of.empty()) return;
    auto rewire = [&](NodeEntry* e) {
      auto it = fused_of.find(e->node.get());
      if (it != fused_of.end()) *e = NodeEntry{it->second, 0, 0};
    };
    // Readers outside the groups, the fused nodes' own inputs (a group may read another
    // group's result) and the outputs.
    for (const NodePtr& n : order_)
      if (!taken_.count(n.get()))
        for (auto& e : n->inputs) rewire(&e);
    for (auto& kv : fused_of)
      for (auto& e : kv.second->inputs) rewire(&e);
    for (auto& e : sym_->outputs) rewire(&e);
  }

 private:
  // The node that alone reads `n`: nothing else reads any of its outputs, it reads output
  // 0 once, `n` is not an output of the graph, and the reader is in no control dependency
  // and no group yet (a residual sum of two convolutions goes with the first).
  NodePtr SoleReader(const Node& n, size_t* pos) const {
    if (heads_.count(&n)) return nullptr;
    auto it = uses_.find(&n);
    if (it == uses_.end() || it->second.size() != 1 || it->second[0].index != 0) return nullptr;
    const Use& u = it->second[0];
    if (tied_.count(u.reader.get()) || taken_.count(u.reader.get())) return nullptr;
    *pos = u.pos;
    return u.reader;
  }

  // Convolution, then BatchNorm (on the convolution's value), then elemwise_add, then an
  // activation, each optional, in that order (MXNet's conv selector).
  std::vector<NodePtr> ConvGroup(const NodePtr& conv) const {
    std::vector<NodePtr> group{conv};
    enum { kStart, kBN, kSum } state = kStart;
    for (;;) {
      size_t pos = 0;
      NodePtr r = SoleReader(*group.back(), &pos);
      if (r == nullptr) break;
      if (state == kStart && IsOp(*r, "BatchNorm") && pos == 0) {
        group.push_back(r);
        state = kBN;
        continue;
      }
      if (state != kSum && IsOp(*r, "elemwise_add")) {
        group.push_back(r);
        state = kSum;
        continue;
      }
      if (ConvActivation(*r, quantize_, state == kSum)) group.push_back(r);
      break;
    }
    DropUnmappableEnd(&group);
    return group;
  }

  std::vector<NodePtr> FCGroup(const NodePtr& fc) const {
    std::vector<NodePtr> group{fc};
    size_t pos = 0;
    NodePtr r = SoleReader(*fc, &pos);
    if (r != nullptr && FCEltwise(*r, quantize_)) group.push_back(r);
    return group;
  }

  // The fused node has one output, the group's last value: a last node whose other
  // outputs are read (BatchNorm's batch statistics) stays outside.
  void DropUnmappableEnd(std::vector<NodePtr>* group) const {
    while (group->size() > 1) {
      auto it = uses_.find(group->back().get());
      bool other = false;
      if (it != uses_.end())
        for (const Use& u : it->second) other = other || u.index != 0;
      for (const auto& e : sym_->outputs) other = other || (e.node == group->back() && e.index != 0);
      if (!other) break;
      group->pop_back();
    }
  }

  NodePtr Fuse(const std::vector<NodePtr>& group, const char* op_name, int id) const {
    std::unordered_map<const Node*, NodePtr> inner;
    std::map<std::string, int> uses_of_name;
    std::vector<NodeEntry> outer_inputs;
    std::string name = "sg_mkldnn_";
    KwArgs flags;
    bool summed = false;
    for (const NodePtr& g : group) {
      NodePtr copy = Node::Create();
      copy->attrs = g->attrs;
      std::vector<NodeEntry> ins = g->inputs;
      // The residual sum reads the group's value first, so its other operand is the last
      // input of the fused node.
      if (IsOp(*g, "elemwise_add") && ins.size() == 2 && inner.count(ins[1].node.get()) &&
          !inner.count(ins[0].node.get()))
        std::swap(ins[0], ins[1]);
      for (const NodeEntry& e : ins) {
        auto it = inner.find(e.node.get());
        if (it != inner.end()) {
          copy->inputs.push_back(NodeEntry{it->second, e.index, 0});
          continue;
        }
        const std::string base = graph::OutputName(*e.node, e.index);
        NodePtr var = Node::Create();
        var->attrs.name = base + std::to_string(uses_of_name[base]++);
        copy->inputs.push_back(NodeEntry{var, 0, 0});
        outer_inputs.push_back(e);
      }
      inner[g.get()] = copy;
      const std::string& op = g->op()->name;
      if (op == "Convolution") {
        name += "conv_";
      } else if (op == "FullyConnected") {
        name += "fully_connected_";
      } else if (op == "BatchNorm") {
        name += "bn_";
        flags.emplace_back("with_bn", "true");
      } else if (op == "elemwise_add") {
        name += "add_";
        flags.emplace_back("with_sum", "true");
        summed = true;
      } else if (std::string(op_name) == "_sg_mkldnn_fully_connected") {
        name += "eltwise_";
        flags.emplace_back("with_eltwise", "True");
      } else {
        name += "act_";
        flags.emplace_back(summed ? "with_postsum_act" : "with_act", "true");
      }
    }
    graph::Symbol inner_sym;
    inner_sym.outputs.push_back(NodeEntry{inner.at(group.back().get()), 0, 0});
    flags.emplace_back("subgraph", graph::SaveJSON(inner_sym));
    NodePtr fused = Node::Create();
    fused->attrs = MakeAttrs(Op::Get(op_name), flags);
    fused->attrs.name = name + std::to_string(id);
    fused->inputs = std::move(outer_inputs);
    return fused;
  }

  graph::Symbol* sym_;
  bool quantize_;
  std::vector<NodePtr> order_;
  std::unordered_map<const Node*, std::vector<Use>> uses_;
  std::unordered_set<const Node*> heads_;  // nodes with an output of the graph
  std::unordered_set<const Node*> tied_;   // nodes in a control dependency: left alone
  std::unordered_set<const Node*> taken_;  // nodes already in a group
};

// ------------------------------------------------------------------ MKLDNN_QUANTIZE
// What MXNet's MKLDNN_QUANTIZE backend does to a quantized graph, on Weft's operators:
// identities go, each calibrated requantize (and dequantize) is folded into the quantized
// product before it, and the calibrated producers of a quantized concat share one range.
// (Prepare, for both backends: identities go, the self-attention products become their
// oneDNN operators.)
class PostQuantizePass {
 public:
  explicit PostQuantizePass(graph::Symbol* sym) : sym_(sym) {}

  // What MXNet's MKLDNN backend does before and besides partitioning (its identity and
  // transformer properties): identities go, the self-attention products become oneDNN nodes.
  void Prepare() {
    RemoveIdentities();
    SelfAttention();
  }

  void Run() {
    RemoveIdentities();
    FoldRequantize();
    FoldDequantize();
    AlignConcatScales();
  }

 private:
  using Key = std::pair<const Node*, uint32_t>;
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<const Node*>()(k.first) * 31 + k.second; }
  };

  // The graph's nodes in order and who reads each output (a graph output counts as a
  // reader, null).
  void Index() {
    order_.clear();
    readers_.clear();
    graph::DFSVisit(sym_->outputs, [&](const NodePtr& n) {
      order_.push_back(n);
      for (const auto& e : n->inputs) readers_[{e.node.get(), e.index}].push_back(n.get());
    });
    for (const auto& e : sym_->outputs) readers_[{e.node.get(), e.index}].push_back(nullptr);
  }

  // Whether `reader` is the only reader of every output of `n`.
  bool OnlyReader(const Node& n, const Node* reader) const {
    bool read = false;
    for (int k = 0; k < n.num_outputs(); ++k) {
      auto it = readers_.find({&n, static_cast<uint32_t>(k)});
      if (it == readers_.end()) continue;
      for (const Node* r : it->second)
        if (r != reader) return false;
      read = true;
    }
    return read;
  }

  // Every read of a replaced output reads its replacement instead (followed through
  // chains of replacements).
  void Rewire(const std::unordered_map<Key, NodeEntry, KeyHash>& to) {
    if (to.empty()) return;
    auto resolve = [&](NodeEntry* e) {
      for (auto it = to.find({e->node.get(), e->index}); it != to.end(); it = to.find({e->node.get(), e->index}))
        *e = it->second;
    };
    for (const NodePtr& n : order_)
      for (auto& e : n->inputs) resolve(&e);
    for (auto& e : sym_->outputs) resolve(&e);
  }

  // The node's parameters with `set` changed and `drop` removed, parsed again (user
  // attributes, "__...__", are kept as they are).
  static void Reparam(Node* n, const KwArgs& set, const std::vector<std::string>& drop) {
    KwArgs params, user;
    for (const auto& kv : n->attrs.dict) {
      bool gone = std::find(drop.begin(), drop.end(), kv.first) != drop.end();
      for (const auto& s : set) gone = gone || s.first == kv.first;
      if (gone) continue;
      (kv.first.rfind("__", 0) == 0 ? user : params).push_back(kv);
    }
    for (const auto& s : set) params.push_back(s);
    std::string name = n->attrs.name;
    n->attrs = MakeAttrs(n->op(), params);
    n->attrs.name = name;
    for (auto& kv : user) n->attrs.dict.push_back(kv);
  }

  static bool Has(const Node& n, const char* key) { return n.FindAttr(key) != nullptr; }

  static bool IsTrue(const Node& n, const char* key) {
    const std::string* v = n.FindAttr(key);
    return v != nullptr && (*v == "True" || *v == "true" || *v == "1");
  }

  // _contrib_interleaved_matmul_selfatt_qk / _valatt become _sg_mkldnn_selfatt_qk /
  // _valatt (float; MXNet's transformer property), holding the operator as their subgraph.
  void SelfAttention() {
    Index();
    std::unordered_map<Key, NodeEntry, KeyHash> to;
    int id = 0;
    std::vector<NodePtr> made;
    for (const NodePtr& n : order_) {
      const bool qk = IsOp(*n, "_contrib_interleaved_matmul_selfatt_qk");
      if (!qk && !IsOp(*n, "_contrib_interleaved_matmul_selfatt_valatt")) continue;
      NodePtr inner = Node::Create();
      inner->attrs = n->attrs;
      std::map<std::string, int> uses_of_name;
      for (const NodeEntry& e : n->inputs) {
        NodePtr var = Node::Create();
        const std::string base = graph::OutputName(*e.node, e.index);
        var->attrs.name = base + std::to_string(uses_of_name[base]++);
        inner->inputs.push_back(NodeEntry{var, 0, 0});
      }
      graph::Symbol inner_sym;
      inner_sym.outputs.push_back(NodeEntry{inner, 0, 0});
      const std::string* heads = n->FindAttr("heads");
      NodePtr fused = Node::Create();
      fused->attrs = MakeAttrs(Op::Get(qk ? "_sg_mkldnn_selfatt_qk" : "_sg_mkldnn_selfatt_valatt"),
                               {{"heads", heads ? *heads : "1"}, {"subgraph", graph::SaveJSON(inner_sym)}});
      // MXNet's names: one count over both kinds, in graph order.
      fused->attrs.name = (qk ? "sg_mkldnn_selfatt_qk_" : "sg_mkldnn_selfatt_valatt_") + std::to_string(id++);
      fused->inputs = n->inputs;
      to[{n.get(), 0}] = NodeEntry{fused, 0, 0};
      made.push_back(fused);
    }
    // A new node may read another (valatt reading qk's scores directly).
    order_.insert(order_.end(), made.begin(), made.end());
    Rewire(to);
  }

  // _copy, and Dropout in mode 'training' (the identity at inference), reading another
  // operator's value: their readers read that value (MXNet's identity property).
  void RemoveIdentities() {
    Index();
    std::unordered_map<Key, NodeEntry, KeyHash> to;
    for (const NodePtr& n : order_) {
      const bool identity = IsOp(*n, "_copy") ||
                            (IsOp(*n, "Dropout") && n->attrs.Params<op::DropoutParam>().mode == "training");
      if (!identity || n->inputs.empty() || n->inputs[0].node->is_variable()) continue;
      to[{n.get(), 0}] = n->inputs[0];
    }
    Rewire(to);
  }

  // The (node, outputs 0..2) a range-carrying reader reads, when it reads exactly those.
  static Node* RangeSource(const Node& reader) {
    if (reader.inputs.size() != 3) return nullptr;
    Node* src = reader.inputs[0].node.get();
    for (uint32_t k = 0; k < 3; ++k)
      if (reader.inputs[k].node.get() != src || reader.inputs[k].index != k) return nullptr;
    return src->is_variable() || src->num_outputs() != 3 ? nullptr : src;
  }

  // An int8 oneDNN subgraph node (quantized=True): the convolution (`conv`: which takes a
  // calibrated range but no float output), the fully connected layer, the self-attention
  // products.
  static bool QuantizedSubgraph(const Node& n, bool conv) {
    if (!IsTrue(n, "quantized")) return false;
    return (conv && IsOp(n, "_sg_mkldnn_conv")) || IsOp(n, "_sg_mkldnn_fully_connected") ||
           IsOp(n, "_sg_mkldnn_selfatt_qk") || IsOp(n, "_sg_mkldnn_selfatt_valatt");
  }

  // MXNet's post_quantize_align_scale: the calibrated producers (nodes with
  // min_calib_range/max_calib_range) feeding one quantized concat, directly or through
  // other quantized concats and poolings, and read by nothing else, all take the union of
  // their ranges with 0, so that the concat joins values of one scale.
  void AlignConcatScales() {
    Index();
    std::unordered_set<const Node*> done;
    for (const NodePtr& head : order_) {
      if (!IsOp(*head, "_contrib_quantized_concat") || done.count(head.get())) continue;
      std::unordered_set<const Node*> visit{head.get()};
      std::vector<Node*> matched, stack{head.get()};
      auto passes = [](const Node& n) {
        return IsOp(n, "_contrib_quantized_concat") || IsOp(n, "_contrib_quantized_pooling");
      };
      // The readers of node n's outputs (a graph output counts as null).
      auto readers_of = [&](const Node* n) {
        std::unordered_set<const Node*> all;
        for (int k = 0; k < n->num_outputs(); ++k) {
          auto it = readers_.find({n, static_cast<uint32_t>(k)});
          if (it != readers_.end()) all.insert(it->second.begin(), it->second.end());
        }
        return all;
      };
      // As MXNet's selector: a concat read by one node may also take in the quantized
      // concats and poolings that read the group's values.
      const bool follow_readers = readers_of(head.get()).size() <= 1;
      while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        if (follow_readers)
          for (const Node* r : readers_of(n))
            if (r != nullptr && !visit.count(r) && passes(*r)) {
              visit.insert(r);
              stack.push_back(const_cast<Node*>(r));
            }
        for (const NodeEntry& e : n->inputs) {
          Node* in = e.node.get();
          if (in->is_variable() || visit.count(in)) continue;
          bool outside = false;
          for (const Node* r : readers_of(in)) outside = outside || r == nullptr || !visit.count(r);
          if (outside) continue;
          if (Has(*in, "min_calib_range") && Has(*in, "max_calib_range")) {
            if (std::find(matched.begin(), matched.end(), in) == matched.end()) matched.push_back(in);
          } else if (passes(*in)) {
            visit.insert(in);
            stack.push_back(in);
          }
        }
      }
      for (const Node* v : visit) done.insert(v);
      if (matched.size() < 2) continue;
      double lo = 0, hi = 0;
      for (const Node* m : matched) {
        lo = std::min(lo, std::stod(*m->FindAttr("min_calib_range")));
        hi = std::max(hi, std::stod(*m->FindAttr("max_calib_range")));
      }
      char buf[2][64];
      std::snprintf(buf[0], sizeof(buf[0]), "%.9g", lo);
      std::snprintf(buf[1], sizeof(buf[1]), "%.9g", hi);
      for (Node* m : matched) Reparam(m, {{"min_calib_range", buf[0]}, {"max_calib_range", buf[1]}}, {});
    }
  }

  // A calibrated requantize alone reading a quantized convolution, fully connected layer,
  // elemwise_add or elemwise_mul that has no calibrated range yet: the product takes the
  // range and writes 8 bits itself (MXNet's post-quantize and elemwise_mul properties).
  void FoldRequantize() {
    Index();
    std::unordered_map<Key, NodeEntry, KeyHash> to;
    for (const NodePtr& n : order_) {
      if (!IsOp(*n, "_contrib_requantize") || !Has(*n, "min_calib_range") || !Has(*n, "max_calib_range")) continue;
      Node* src = RangeSource(*n);
      if (src == nullptr || Has(*src, "min_calib_range") || IsTrue(*src, "enable_float_output")) continue;
      if (!(IsOp(*src, "_contrib_quantized_conv") || IsOp(*src, "_contrib_quantized_fully_connected") ||
            IsOp(*src, "_contrib_quantized_elemwise_add") || IsOp(*src, "_contrib_quantized_elemwise_mul") ||
            QuantizedSubgraph(*src, true)))
        continue;
      if (!OnlyReader(*src, n.get())) continue;
      Reparam(src, {{"min_calib_range", *n->FindAttr("min_calib_range")},
                    {"max_calib_range", *n->FindAttr("max_calib_range")}}, {});
      for (uint32_t k = 0; k < 3; ++k) to[{n.get(), k}] = NodeEntry{n->inputs[k].node, k, 0};
    }
    Rewire(to);
  }

  // A dequantize alone reading a quantized fully connected layer or elemwise_mul: the
  // product writes float32 itself (enable_float_output; MXNet's FC and elemwise_mul
  // post-quantize properties; MXNet leaves a convolution's dequantize in place).
  void FoldDequantize() {
    Index();
    std::unordered_map<Key, NodeEntry, KeyHash> to;
    for (const NodePtr& n : order_) {
      if (!IsOp(*n, "_contrib_dequantize")) continue;
      Node* src = RangeSource(*n);
      if (src == nullptr || IsTrue(*src, "enable_float_output")) continue;
      if (!(IsOp(*src, "_contrib_quantized_fully_connected") || IsOp(*src, "_contrib_quantized_elemwise_mul") ||
            QuantizedSubgraph(*src, false)))
        continue;
      if (!OnlyReader(*src, n.get())) continue;
      Reparam(src, {{"enable_float_output", "True"}}, {"min_calib_range", "max_calib_range"});
      to[{n.get(), 0}] = NodeEntry{n->inputs[0].node, 0, 0};
    }
    Rewire(to);
  }

  graph::Symbol* sym_;
  std::vector<NodePtr> order_;
  std::unordered_map<Key, std::vector<const Node*>, KeyHash> readers_;
};

}  // namespace

std::vector<std::string> SubgraphBackends() { return {"MKLDNN", "MKLDNN_QUANTIZE"}; }

graph::Symbol BuildBackendSubgraph(const graph::Symbol& sym, const std::string& backend) {
  if (backend != "MKLDNN" && backend != "MKLDNN_QUANTIZE")
    Throw(ErrorKind::kNotFound, "SubgraphProperty ", backend,
          " is not found in SubgraphBackendRegistry (Weft has the subgraph backends MKLDNN and MKLDNN_QUANTIZE)");
  graph::Symbol out = sym.Copy();
  PostQuantizePass(&out).Prepare();
  MkldnnPartitioner(&out, backend == "MKLDNN_QUANTIZE").Run();
  if (backend == "MKLDNN_QUANTIZE") PostQuantizePass(&out).Run();
  return out;
}

}  // namespace executor
}  // namespace weft

#include "core/imperative/autograd.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/base/error.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/sparse.h"

namespace weft {
namespace autograd {
namespace {

thread_local bool tls_recording = false;
// The variables whose gradient buffers custom gradients wrote during the running backward
// (NoteGradientWritten); null outside a backward.
thread_local std::unordered_set<const Node*>* tls_written = nullptr;

// Restores the thread's recording state when a backward ends, also by an exception.
class RecordingScope {
 public:
  explicit RecordingScope(bool on) : prev_(SetIsRecording(on)) {}
  ~RecordingScope() { SetIsRecording(prev_); }

 private:
  bool prev_;
};

NDArray Apply(const char* op_name, const std::vector<NDArray>& inputs, const KwArgs& params = {}) {
  NodeAttrs attrs = MakeAttrs(Op::Get(op_name), params);
  std::vector<NDArray> outs;
  imperative::Invoke(attrs, inputs, &outs, nullptr, nullptr, true);
  return outs[0];
}

// One value of the graph: an output of a Node.
struct EntryKey {
  const Node* node;
  uint32_t index;
  bool operator==(const EntryKey& o) const { return node == o.node && index == o.index; }
};
struct EntryHash {
  size_t operator()(const EntryKey& k) const {
    return std::hash<const void*>()(k.node) ^ (static_cast<size_t>(k.index) * 0x9E3779B97F4A7C15ull);
  }
};

// Gradients flowing into each value, summed as they arrive.
class GradSums {
 public:
  void Add(const Node* node, uint32_t index, const NDArray& g) {
    if (g.is_none()) return;
    NDArray& slot = sums_[EntryKey{node, index}];
    slot = slot.is_none() ? g : Apply("elemwise_add", {slot, g});
  }
  NDArray Get(const Node* node, uint32_t index) const {
    auto it = sums_.find(EntryKey{node, index});
    return it == sums_.end() ? NDArray() : it->second;
  }

 private:
  std::unordered_map<EntryKey, NDArray, EntryHash> sums_;
};

// Every Node reachable from `heads`, each after all Nodes that consume its outputs.
std::vector<std::shared_ptr<Node>> ReverseTopological(const std::vector<NDArray>& heads) {
  std::vector<std::shared_ptr<Node>> post_order;
  std::unordered_set<const Node*> seen;
  // Iterative depth-first search: recorded graphs can be deep (a long RNN unroll).
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;
  for (const auto& h : heads) {
    if (!h.ag_node() || !seen.insert(h.ag_node().get()).second) continue;
    stack.emplace_back(h.ag_node(), 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs.size()) {
        const auto& in = node->inputs[next++];
        if (in.ag_node() && seen.insert(in.ag_node().get()).second) stack.emplace_back(in.ag_node(), 0);
      } else {
        post_order.push_back(node);
        stack.pop_back();
      }
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}

std::string NodeName(const Node& n) {
  if (n.custom) return "autograd.Function '" + n.custom_name + "'";
  return "operator '" + n.attrs.op->name + "'";
}

// The gradient of each input of `node`, given the gradient of each of its outputs.
std::vector<NDArray> NodeGradient(const std::shared_ptr<Node>& node, std::vector<NDArray> out_grads,
                                  bool create_graph, const std::vector<NDArray>* into) {
  for (size_t i = 0; i < out_grads.size(); ++i)
    if (out_grads[i].is_none()) out_grads[i] = Apply("zeros_like", {node->outputs[i]});
  if (node->custom) {
    std::vector<NDArray> g = node->custom(out_grads);
    WEFT_CHECK(g.size() == node->inputs.size(), kValue, "autograd: the backward of ", NodeName(*node), " returned ",
               g.size(), " gradients for ", node->inputs.size(), " inputs");
    for (size_t i = 0; i < g.size(); ++i)
      WEFT_CHECK(g[i].is_none() || g[i].shape() == node->inputs[i].shape(), kShape, "autograd: the backward of ",
                 NodeName(*node), " returned a gradient of shape ", g[i].shape().ToString(), " for input ", i,
                 " of shape ", node->inputs[i].shape().ToString());
    return g;
  }
  static const auto& grad_fns = Op::GetAttr<FGradient>("FGradient");
  WEFT_CHECK(grad_fns.Contains(node->attrs.op), kUnsupported, "autograd: ", NodeName(*node),
             " has no gradient, but a gradient flows into its output; compute it under autograd.pause() or on "
             "detached inputs");
  std::vector<NDArray> outputs = node->outputs;
  // Recording the backward needs the forward outputs connected to their Node; the copies
  // made here live only during this call, so they create no lasting cycle.
  if (create_graph)
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].set_ag(node, static_cast<uint32_t>(i));
  // Inputs without a history (the data, a label) need no gradient: their work is skipped.
  std::vector<bool> wanted(node->inputs.size());
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i] = node->inputs[i].ag_node() != nullptr;
  return imperative::Gradient(node->attrs, node->inputs, outputs, out_grads, node->is_train, &wanted, into);
}

// Makes `node` the history of `outputs`, saving what its gradient will read.
void Connect(const std::shared_ptr<Node>& node, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs) {
  node->inputs = inputs;
  node->outputs.reserve(outputs->size());
  for (auto& out : *outputs) {
    NDArray saved = out;
    saved.set_ag(nullptr, 0);
    node->outputs.push_back(std::move(saved));
  }
  for (size_t i = 0; i < outputs->size(); ++i) (*outputs)[i].set_ag(node, static_cast<uint32_t>(i));
}

// Embedding(sparse_grad=True) whose weight is a variable with a row_sparse gradient buffer:
// the weight's gradient as a row_sparse array of the rows the indices used (each the sum of
// its output gradients), computed without the dense (input_dim, output_dim) array. Returns
// no gradients (empty) when the node is anything else; the indices get none (Embedding has
// no gradient for them).
std::vector<NDArray> SparseEmbeddingGradient(const std::shared_ptr<Node>& node, const std::vector<NDArray>& out_grads,
                                             bool create_graph) {
  if (create_graph || node->attrs.op == nullptr || node->attrs.op->name != "Embedding") return {};
  bool sparse_grad = false;
  for (const auto& [key, v] : node->attrs.dict)
    if (key == "sparse_grad") sparse_grad = v == "1" || v == "true" || v == "True";
  if (!sparse_grad || node->inputs.size() != 2 || out_grads.size() != 1 || out_grads[0].is_none()) return {};
  const NDArray& weight = node->inputs[1];
  const auto& wnode = weight.ag_node();
  if (!wnode || !wnode->is_variable() || wnode->grad.stype() != StorageType::kRowSparse) return {};
  if (weight.ctx().is_gpu() || weight.shape().ndim() != 2) return {};
  const NDArray data = DenseOf(node->inputs[0]);
  const NDArray ograd = DenseOf(out_grads[0]);
  const int64_t rows = weight.shape()[0], dim = weight.shape()[1], n = data.Size();
  WEFT_CHECK(ograd.Size() == n * dim, kShape, "Embedding backward: expected an output gradient of ", n * dim,
             " elements (indices ", data.shape().ToString(), " x ", dim, "), got ", ograd.shape().ToString());
  NDArray idx_d = Apply("cast", {data}, {{"dtype", "float64"}});
  NDArray g32 = ograd.dtype() == DType::kFloat32 ? ograd : Apply("cast", {ograd}, {{"dtype", "float32"}});
  std::vector<double> idx(static_cast<size_t>(n));
  idx_d.SyncCopyToCPU(idx.data(), idx.size() * sizeof(double));
  std::vector<float> g(static_cast<size_t>(n * dim));
  g32.SyncCopyToCPU(g.data(), g.size() * sizeof(float));
  // MXNet clips indices into [0, input_dim).
  std::vector<std::pair<int64_t, int64_t>> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = static_cast<int64_t>(idx[i]);
    order[i] = {r < 0 ? 0 : (r >= rows ? rows - 1 : r), i};
  }
  std::sort(order.begin(), order.end());
  std::vector<int64_t> used;
  std::vector<float> sum;
  for (const auto& [r, i] : order) {
    if (used.empty() || used.back() != r) {
      used.push_back(r);
      sum.resize(sum.size() + dim, 0.0f);
    }
    float* dst = sum.data() + sum.size() - dim;
    for (int64_t j = 0; j < dim; ++j) dst[j] += g[i * dim + j];
  }
  const int64_t k = static_cast<int64_t>(used.size());
  NDArray values(Shape{k, dim}, weight.ctx(), DType::kFloat32);
  values.SyncCopyFromCPU(sum.data(), sum.size() * sizeof(float));
  if (weight.dtype() != DType::kFloat32) values = Apply("cast", {values}, {{"dtype", DTypeName(weight.dtype())}});
  NDArray indices(Shape{k}, weight.ctx(), DType::kInt64);
  indices.SyncCopyFromCPU(used.data(), used.size() * sizeof(int64_t));
  return {NDArray(), MakeSparse(StorageType::kRowSparse, weight.shape(), values, {indices})};
}

void Release(Node* node) {
  node->inputs.clear();
  node->outputs.clear();
  node->custom = nullptr;
  node->symbol_form = nullptr;
  node->freed = true;
}

}  // namespace

Node::~Node() {
  // The inputs' histories that die with this node are cut from their arrays first, so each
  // of their destructors runs with nothing left to release: a work list instead of nested
  // destructor calls down the chain.
  std::vector<std::shared_ptr<Node>> pending;
  auto detach = [&pending](Node* n) {
    for (NDArray& a : n->inputs) {
      if (a.ag_node()) {
        pending.push_back(a.ag_node());
        a.set_ag(nullptr, 0);
      }
    }
    n->inputs.clear();
  };
  detach(this);
  while (!pending.empty()) {
    std::shared_ptr<Node> p = std::move(pending.back());
    pending.pop_back();
    // Only a node nothing else holds dies here; one still shared keeps its history.
    if (p.use_count() == 1) detach(p.get());
  }
}

bool IsRecording() { return tls_recording; }

bool SetIsRecording(bool on) {
  bool prev = tls_recording;
  tls_recording = on;
  return prev;
}

void MarkVariables(const std::vector<NDArray*>& vars, const std::vector<NDArray>& grads,
                   const std::vector<OpReq>& reqs) {
  WEFT_CHECK(vars.size() == grads.size() && vars.size() == reqs.size(), kValue,
             "autograd.mark_variables: expected as many gradient arrays and grad_reqs as variables (", vars.size(),
             "), got ", grads.size(), " and ", reqs.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    WEFT_CHECK(!vars[i]->is_none(), kValue, "autograd.mark_variables: variable ", i, " is an empty (none) array");
    if (reqs[i] != OpReq::kNullOp) {
      WEFT_CHECK(!grads[i].is_none(), kValue, "autograd.mark_variables: variable ", i, " has no gradient array");
      WEFT_CHECK(grads[i].shape() == vars[i]->shape(), kShape, "autograd.mark_variables: variable ", i,
                 " has shape ", vars[i]->shape().ToString(), " but its gradient array has shape ",
                 grads[i].shape().ToString());
    }
    auto node = std::make_shared<Node>();
    node->grad = grads[i];
    node->grad_req = reqs[i];
    vars[i]->set_ag(std::move(node), 0);
  }
}

void RecordOp(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
              bool is_train) {
  bool any = false;
  for (const auto& in : inputs) any = any || in.ag_node() != nullptr;
  if (!any) return;
  for (const auto& out : *outputs) {
    WEFT_CHECK(!(out.ag_node() && out.ag_node()->is_variable()), kValue, "autograd: operator '", attrs.op->name,
               "' writes into an array marked for gradients (attach_grad) while recording; assign to it outside "
               "autograd.record()");
    // Overwriting an array the graph already uses would change a saved value under it.
    for (const auto& in : inputs)
      WEFT_CHECK(!out.SameChunk(in) || out.byte_offset() != in.byte_offset() || !in.ag_node(), kValue,
                 "autograd: operator '", attrs.op->name,
                 "' writes into one of its own inputs while recording (an in-place update such as += or out=x); "
                 "the gradient needs the old value, so write to a new array instead");
  }
  auto node = std::make_shared<Node>();
  node->attrs = attrs;
  node->is_train = is_train;
  Connect(node, inputs, outputs);
}

namespace {

class RecordStage final : public imperative::Transformation {
 public:
  const char* name() const override { return "autograd"; }
  bool Enabled(const imperative::Call&) const override { return tls_recording; }
  void Apply(imperative::Call& call, const imperative::Next& next) override {
    RecordOp(*call.attrs, *call.inputs, call.outputs, call.is_train);
    next(call);
  }
};

}  // namespace

imperative::Transformation* RecordTransformation() {
  static RecordStage stage;
  return &stage;
}

void RecordView(const std::string& op_name, const KwArgs& params, const NDArray& src, NDArray* view) {
  if (!tls_recording || !src.ag_node()) return;
  auto node = std::make_shared<Node>();
  node->attrs = MakeAttrs(Op::Get(op_name), params);
  std::vector<NDArray> outs{*view};
  Connect(node, {src}, &outs);
  *view = outs[0];
}

void RecordCustom(const std::string& name, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                  CustomBackward backward, std::function<NodeAttrs()> symbol_form) {
  auto node = std::make_shared<Node>();
  node->custom = std::move(backward);
  node->custom_name = name;
  node->symbol_form = std::move(symbol_form);
  Connect(node, inputs, outputs);
}

void NoteGradientWritten(Node* variable) {
  if (tls_written) tls_written->insert(variable);
}

std::vector<NDArray> Backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads,
                              const std::vector<NDArray>& variables, bool retain_graph, bool create_graph,
                              bool is_train) {
  WEFT_CHECK(!heads.empty(), kValue, "autograd.backward: no heads given");
  WEFT_CHECK(head_grads.empty() || head_grads.size() == heads.size(), kValue,
             "autograd.backward: expected one head gradient per head (", heads.size(), "), got ", head_grads.size());
  for (size_t i = 0; i < heads.size(); ++i)
    WEFT_CHECK(heads[i].ag_node() != nullptr, kValue, "autograd.backward: head ", i, " (shape ",
               heads[i].shape().ToString(),
               ") was not computed from arrays marked for gradients inside autograd.record(); call attach_grad() "
               "on the inputs and compute the head while recording");
  for (size_t i = 0; i < variables.size(); ++i)
    WEFT_CHECK(variables[i].ag_node() != nullptr, kValue, "autograd.grad: variable ", i, " (shape ",
               variables[i].shape().ToString(), ") has no history: mark it with attach_grad() before recording");

  RecordingScope recording(create_graph);
  bool prev_train = imperative::SetIsTraining(is_train);
  struct TrainRestore {
    bool prev;
    ~TrainRestore() { imperative::SetIsTraining(prev); }
  } train_restore{prev_train};

  std::unordered_set<const Node*> written;
  struct WrittenScope {
    std::unordered_set<const Node*>* prev;
    ~WrittenScope() { tls_written = prev; }
  } written_scope{tls_written};
  tls_written = &written;

  GradSums sums;
  for (size_t i = 0; i < heads.size(); ++i) {
    NDArray g = head_grads.empty() || head_grads[i].is_none() ? Apply("ones_like", {heads[i]}) : head_grads[i];
    WEFT_CHECK(g.shape() == heads[i].shape(), kShape, "autograd.backward: head ", i, " has shape ",
               heads[i].shape().ToString(), " but its gradient has shape ", g.shape().ToString());
    sums.Add(heads[i].ag_node().get(), heads[i].ag_index(), g);
  }

  for (const auto& h : heads)
    WEFT_CHECK(!h.ag_node()->freed, kValue, "autograd.backward: the graph through ", NodeName(*h.ag_node()),
               " was freed by an earlier backward; pass retain_graph=True to the first backward to run another");
  std::vector<std::shared_ptr<Node>> order = ReverseTopological(heads);
  // A variable whose gradient only one input of one recorded call receives, with a dense
  // .grad to overwrite, gets that gradient written straight into .grad by the call that
  // makes it, instead of into an array of its own copied there afterwards (an MLP's weight
  // gradients are megabytes a step). Not where the gradient is recorded (the .grad arrays
  // are leaves), nor for a variable a custom function also reads (a hybridized block
  // writes its parameters' gradients itself).
  std::unordered_map<const Node*, int> feeds;
  if (variables.empty() && !create_graph) {
    for (const auto& h : heads)
      if (h.ag_node()->is_variable()) feeds[h.ag_node().get()] += 2;
    for (const auto& node : order) {
      if (node->is_variable() || node->freed) continue;
      for (const auto& in : node->inputs) {
        const Node* v = in.ag_node().get();
        if (v != nullptr && v->is_variable()) feeds[v] += node->custom ? 2 : 1;
      }
    }
  }
  auto direct = [&](const Node* v) {
    auto it = feeds.find(v);
    return it != feeds.end() && it->second == 1 && v->grad_req == OpReq::kWriteTo && !v->grad.is_none() &&
           !v->grad.is_sparse();
  };
  for (const auto& node : order) {
    if (node->is_variable()) continue;
    // An array whose history an earlier backward freed, used again in a new recording, is
    // a constant there, as in MXNet (which clears the freed nodes' inputs): the gradient
    // stops at it.
    if (node->freed) continue;
    std::vector<NDArray> out_grads(node->outputs.size());
    bool any = false;
    for (size_t i = 0; i < out_grads.size(); ++i) {
      out_grads[i] = sums.Get(node.get(), static_cast<uint32_t>(i));
      any = any || !out_grads[i].is_none();
    }
    if (!any) continue;
    std::vector<NDArray> in_grads = SparseEmbeddingGradient(node, out_grads, create_graph);
    if (in_grads.empty()) {
      std::vector<NDArray> into;
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        const Node* v = node->inputs[i].ag_node().get();
        if (v != nullptr && direct(v)) {
          into.resize(node->inputs.size());
          into[i] = v->grad;
        }
      }
      in_grads = NodeGradient(node, std::move(out_grads), create_graph, into.empty() ? nullptr : &into);
    }
    for (size_t i = 0; i < in_grads.size(); ++i) {
      const NDArray& in = node->inputs[i];
      if (in.ag_node()) sums.Add(in.ag_node().get(), in.ag_index(), in_grads[i]);
    }
  }

  std::vector<NDArray> result;
  if (variables.empty()) {
    for (const auto& node : order) {
      if (!node->is_variable() || node->grad_req == OpReq::kNullOp) continue;
      NDArray g = sums.Get(node.get(), 0);
      if (g.is_none()) continue;
      const bool add = node->grad_req == OpReq::kAddTo || written.count(node.get()) != 0;
      if (node->grad.is_sparse()) {
        // A sparse gradient buffer is replaced, not written into: it has no dense memory.
        StorageType st = node->grad.stype();
        if (add) g = Apply("elemwise_add", {node->grad, g});
        node->grad = g.stype() == st ? g : CastStorage(g, st);
        node->fresh_grad = true;
        continue;
      }
      // Written in place above (a call's output was .grad itself).
      if (!add && g.SameChunk(node->grad) && g.byte_offset() == node->grad.byte_offset()) {
        node->fresh_grad = true;
        continue;
      }
      std::vector<NDArray> out{node->grad};
      std::vector<OpReq> req{add ? OpReq::kAddTo : OpReq::kWriteTo};
      NodeAttrs copy = MakeAttrs(Op::Get("_copy"), {});
      // The .grad arrays are leaves: writing them must not be recorded even under create_graph.
      RecordingScope off(false);
      imperative::Invoke(copy, {g}, &out, nullptr, &req, true);
      node->fresh_grad = true;
    }
  } else {
    for (const auto& v : variables) {
      NDArray g = sums.Get(v.ag_node().get(), v.ag_index());
      result.push_back(g.is_none() ? Apply("zeros_like", {v}) : g);
    }
  }
  if (!retain_graph)
    for (const auto& node : order)
      if (!node->is_variable()) Release(node.get());
  return result;
}

graph::Symbol GetSymbol(const NDArray& head) {
  WEFT_CHECK(head.ag_node() != nullptr, kValue, "autograd.get_symbol: the array (shape ", head.shape().ToString(),
             ") has no recorded history; record a computation that reads an array marked with attach_grad");
  std::unordered_map<const Node*, graph::NodePtr> made;
  int next_var = 0;
  int next_op = 0;
  auto variable = [&next_var]() {
    auto v = graph::Node::Create();
    v->attrs.name = "var" + std::to_string(next_var++);
    return v;
  };
  // Iterative post-order over the recorded Nodes, so that long histories do not exhaust
  // the stack: a node is built once all the Nodes it read are.
  std::vector<std::pair<const Node*, size_t>> stack{{head.ag_node().get(), 0}};
  std::unordered_set<const Node*> entered{head.ag_node().get()};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (!node->is_variable() && next < node->inputs.size()) {
      const Node* in = node->inputs[next++].ag_node().get();
      if (in && entered.insert(in).second) stack.emplace_back(in, 0);
      continue;
    }
    WEFT_CHECK(!node->custom || node->symbol_form, kUnsupported,
               "autograd.get_symbol: the history holds the custom function '", node->custom_name,
               "', which has no symbol form");
    WEFT_CHECK(!node->freed, kValue, "autograd.get_symbol: the history was freed by a backward without "
               "retain_graph=True");
    graph::NodePtr g;
    if (node->is_variable()) {
      g = variable();
    } else {
      g = graph::Node::Create();
      g->attrs = node->custom ? node->symbol_form() : node->attrs;
      std::string base;
      for (char c : g->attrs.op->name) base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      g->attrs.name = base + std::to_string(next_op++);
      for (const auto& in : node->inputs) {
        if (in.ag_node())
          g->inputs.push_back(graph::NodeEntry{made.at(in.ag_node().get()), in.ag_index(), 0});
        else
          g->inputs.push_back(graph::NodeEntry{variable(), 0, 0});
      }
    }
    made[node] = std::move(g);
    stack.pop_back();
  }
  graph::Symbol sym;
  sym.outputs.push_back(graph::NodeEntry{made.at(head.ag_node().get()), head.ag_index(), 0});
  return sym;
}

}  // namespace autograd
}  // namespace weft

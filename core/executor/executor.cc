#include "core/executor/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/executor/passes.h"
#include "core/executor/train_fuse.h"
#include "core/graph/gradient.h"
#include "core/graph/infer.h"
#include "core/imperative/autograd.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/sparse.h"
#include "core/op/fused/fused_pointwise.h"
#include "core/op/dnnl/dnnl_train_region.h"
#include "core/op/subgraph/sg_mkldnn.h"
#include "core/profiler/profiler.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;
using graph::NodeEntry;
using graph::NodePtr;

namespace {

// What MXNet's monitor calls input i of node `n`: the name its operator lists (FListInputNames)
// or, for the operators MXNet 1.9 registers without one, "input<i>". Weft names every
// operator's arguments, so those operators are listed here, by Weft's names: the ones whose
// MXNet registration (found in MXNet 1.9.1's sources, macros included; legacy operators list
// their arguments) sets no FListInputNames, most backward operators among them.
std::string MonitorInputName(const graph::Node& n, const std::vector<std::string>& arg_names, size_t i) {
  static const std::unordered_set<std::string> positional = {
      "Activation", "BlockGrad", "Cast", "Flatten", "SoftmaxActivation", "_adamw_update", "_backward_Activation",
      "_backward_BatchNorm", "_backward_BatchNorm_v1", "_backward_BilinearSampler", "_backward_Convolution",
      "_backward_Convolution_v1", "_backward_Correlation", "_backward_Crop", "_backward_Custom",
      "_backward_Deconvolution", "_backward_Dropout", "_backward_Embedding", "_backward_FullyConnected",
      "_backward_GridGenerator", "_backward_GroupNorm", "_backward_IdentityAttachKLSparseReg",
      "_backward_InstanceNorm", "_backward_L2Normalization", "_backward_LRN", "_backward_LayerNorm",
      "_backward_LeakyReLU", "_backward_MakeLoss", "_backward_Pad", "_backward_Pooling", "_backward_Pooling_v1",
      "_backward_ROIAlign", "_backward_ROIPooling", "_backward_RROIAlign", "_backward_SVMOutput",
      "_backward_SequenceLast", "_backward_SequenceMask", "_backward_SoftmaxActivation", "_backward_SoftmaxOutput",
      "_backward_SpatialTransformer", "_backward_UpSampling", "_backward_amp_cast", "_backward_cast",
      "_backward_clip", "_backward_col2im", "_backward_cond", "_backward_contrib_AdaptiveAvgPooling2D",
      "_backward_contrib_BatchNormWithReLU", "_backward_contrib_BilinearResize2D", "_backward_contrib_boolean_mask",
      "_backward_contrib_box_nms", "_backward_ctc_loss", "_backward_diag", "_backward_dot", "_backward_foreach",
      "_backward_hard_sigmoid", "_backward_im2col", "_backward_image_crop", "_backward_image_normalize",
      "_backward_interleaved_matmul_encdec_qk", "_backward_interleaved_matmul_encdec_valatt",
      "_backward_interleaved_matmul_selfatt_qk", "_backward_interleaved_matmul_selfatt_valatt",
      "_backward_linalg_det", "_backward_linalg_extractdiag", "_backward_linalg_extracttrian",
      "_backward_linalg_gelqf", "_backward_linalg_gemm", "_backward_linalg_gemm2", "_backward_linalg_inverse",
      "_backward_linalg_makediag", "_backward_linalg_maketrian", "_backward_linalg_potrf", "_backward_linalg_potri",
      "_backward_linalg_slogdet", "_backward_linalg_sumlogdiag", "_backward_linalg_syevd", "_backward_linalg_syrk",
      "_backward_linalg_trmm", "_backward_linalg_trsm", "_backward_max", "_backward_mean", "_backward_min",
      "_backward_moments", "_backward_nanprod", "_backward_nansum", "_backward_norm", "_backward_np_cumsum",
      "_backward_pick", "_backward_prod", "_backward_repeat", "_backward_sample_multinomial", "_backward_slice",
      "_backward_slice_axis", "_backward_slice_like", "_backward_softmax_cross_entropy", "_backward_sum",
      "_backward_take", "_backward_tile", "_backward_topk", "_backward_while_loop", "_contrib_AdaptiveAvgPooling2D",
      "_contrib_arange_like", "_contrib_backward_gradientmultiplier", "_contrib_backward_hawkesll",
      "_contrib_backward_index_copy", "_contrib_backward_quadratic", "_contrib_bipartite_matching",
      "_contrib_box_nms", "_contrib_dgl_csr_neighbor_non_uniform_sample", "_contrib_dgl_csr_neighbor_uniform_sample",
      "_contrib_div_sqrt_dim", "_contrib_getnnz", "_contrib_gradientmultiplier", "_contrib_group_adagrad_update",
      "_contrib_round_ste", "_contrib_sign_ste", "_copy", "_div_scalar", "_equal_scalar", "_greater_equal_scalar",
      "_greater_scalar", "_hypot_scalar", "_image_crop", "_image_resize", "_lesser_equal_scalar", "_lesser_scalar",
      "_logical_and_scalar", "_logical_or_scalar", "_logical_xor_scalar", "_maximum_scalar", "_minimum_scalar",
      "_minus_scalar", "_mod_scalar", "_mp_adamw_update", "_mul_scalar", "_not_equal_scalar", "_plus_scalar",
      "_power_scalar", "_random_exponential_like", "_random_gamma_like", "_random_generalized_negative_binomial_like",
      "_random_negative_binomial_like", "_random_normal_like", "_random_poisson_like", "_random_uniform_like",
      "_rdiv_scalar", "_rminus_scalar", "_rmod_scalar", "_rpower_scalar", "_sample_multinomial",
      "_scatter_minus_scalar", "_scatter_plus_scalar", "_shuffle", "_slice_assign_scalar", "_sparse_adagrad_update",
      "_split_v2_backward", "_square_sum", "abs", "adam_update", "amp_cast", "arccos", "arccosh", "arcsin", "arcsinh",
      "arctan", "arctanh", "argmax", "argmax_channel", "argmin", "argsort", "broadcast_axis", "broadcast_to",
      "cast_storage", "cbrt", "ceil", "clip", "cos", "cosh", "degrees", "erf", "erfinv", "exp", "expand_dims",
      "expm1", "fix", "floor", "ftml_update", "ftrl_update", "gammaln", "hard_sigmoid", "lamb_update_phase1",
      "lamb_update_phase2", "log", "log10", "log1p", "log2", "logical_not", "max", "mean", "min",
      "mp_lamb_update_phase1", "mp_lamb_update_phase2", "mp_nag_mom_update", "mp_sgd_mom_update", "mp_sgd_update",
      "nag_mom_update", "nanprod", "nansum", "negative", "norm", "ones_like", "prod", "radians", "rcbrt",
      "reciprocal", "relu", "reshape", "rint", "rmsprop_update", "rmspropalex_update", "round", "rsqrt",
      "sgd_mom_update", "sgd_update", "shape_array", "sigmoid", "sign", "signsgd_update", "signum_update", "sin",
      "sinh", "size_array", "slice", "slice_axis", "smooth_l1", "softmin", "softsign", "sort", "sqrt", "square",
      "sum", "tan", "tanh", "topk", "transpose", "trunc", "zeros_like"};
  if (i < arg_names.size() && !positional.count(n.op()->name)) return arg_names[i];
  return "input" + std::to_string(i);
}

// A value read on another context than the one it was made on (group2ctx in a sparse
// executor): a copy there, recorded while autograd records with the copy of its gradient
// back as its backward.
NDArray CopyAcross(const NDArray& src, Context to) {
  std::vector<NDArray> outs{src.Copy(to)};
  if (autograd::IsRecording() && src.ag_node() != nullptr) {
    Context from = src.ctx();
    autograd::RecordCustom("_CrossDeviceCopy", {src}, &outs, [from](const std::vector<NDArray>& out_grads) {
      return std::vector<NDArray>{out_grads[0].is_none() ? NDArray() : out_grads[0].Copy(from)};
    });
  }
  return outs[0];
}

// The name of graph value `e` (a variable's name, or "<node>_output"), found by its node:
// used only at bind, for the monitor's names of a fused chain's inputs.
std::string EntryName(const IndexedGraph& g, uint32_t e) {
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    uint32_t first = g.entry_id(id, 0);
    uint32_t n = static_cast<uint32_t>(g[id].source->num_outputs());
    if (e >= first && e < first + std::max<uint32_t>(n, 1)) return graph::OutputName(*g[id].source, e - first);
  }
  return "value" + std::to_string(e);
}

void CheckCount(size_t got, size_t want, const char* what, const std::vector<std::string>& names) {
  if (got == want) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  Throw(ErrorKind::kValue, "bind: expected ", want, " ", what, " (", list, "), got ", got);
}

bool FoldingEnabled() { return Enabled("WEFT_EXEC_FOLD_CONSTANTS"); }

// Cast's attributes to dtype t: a gradient array bound with another dtype than its gradient
// receives it converted (MXNet lets such arrays be bound; its operators then write into them).
const NodeAttrs& CastTo(DType t) {
  static const std::map<DType, NodeAttrs> attrs = [] {
    std::map<DType, NodeAttrs> m;
    for (DType d : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kUint8, DType::kInt32, DType::kInt8,
                    DType::kInt64, DType::kBool, DType::kBfloat16})
      m.emplace(d, MakeAttrs(Op::Get("Cast"), {{"dtype", DTypeName(d)}}));
    return m;
  }();
  return attrs.at(t);
}

// The placement part of debug_str when the graph spans several contexts: the nodes run on
// each context (in run order) and every copy between them.
std::string PlacementText(const IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Context>& node_ctx,
                          const Placement& placed, const std::unordered_set<const graph::Node*>& in_forward) {
  std::set<Context> used(node_ctx.begin(), node_ctx.end());
  if (used.size() < 2) return "";
  std::ostringstream os;
  os << "Placement:\n";
  for (Context c : used) {
    os << "\t" << c.ToString() << ":";
    for (uint32_t id : order)
      if (node_ctx[id] == c) os << " " << g[id].source->attrs.name;
    os << "\n";
  }
  os << "Copies:\n";
  for (const auto& c : placed.copies) {
    const NodeEntry& from = c->inputs[0];
    os << "\t" << c->attrs.name << ": " << graph::OutputName(*from.node, from.index) << " from "
       << placed.ctx.at(from.node.get()).ToString() << " to " << placed.ctx.at(c.get()).ToString() << " ("
       << (in_forward.count(c.get()) ? "forward" : "backward") << ")\n";
  }
  return os.str();
}
bool FusionEnabled() { return Enabled("WEFT_EXEC_FUSE"); }

struct Int8Layout {
  bool data = false, out = false, sum = false;  // channels-last or not
};

// Which int8 oneDNN convolutions (MXNet's quantized _sg_mkldnn_conv) take their data, write
// their output and read their sum as (n, h, w, c), by node. oneDNN's int8 kernels read and
// write that layout, so values passed from one such node to the next skip a reorder out of
// it and one back (on ResNet-50 they took as long as the convolutions). A node's output is
// channels-last when it is no output of the graph, not kept, and every reader is such a node
// reading it as its data or its sum; values from anything else come plain. Off with
// WEFT_EXEC_INT8_CHANNELS_LAST=0.
std::unordered_map<uint32_t, Int8Layout> Int8Layouts(const IndexedGraph& g, const std::vector<bool>& persistent,
                                                     const std::vector<NodeEntry>& outputs,
                                                     const std::vector<Context>& node_ctx,
                                                     const std::unordered_set<const graph::Node*>& constant) {
  std::unordered_map<uint32_t, Int8Layout> layouts;
  if (!Enabled("WEFT_EXEC_INT8_CHANNELS_LAST")) return layouts;
  std::unordered_map<uint32_t, std::pair<int, int>> conv;  // node -> (data input, sum input)
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const graph::Node* n = g[id].source;
    int data = -1, sum = -1;
    if (!n->is_variable() && node_ctx[id].is_host() && !constant.count(n) &&
        op::Int8ConvLayoutInputs(n->attrs, &data, &sum))
      conv[id] = {data, sum};
  }
  if (conv.empty()) return layouts;
  std::unordered_set<uint32_t> out_entries;
  for (const auto& e : outputs) out_entries.insert(g.entry_id(e));
  std::unordered_map<uint32_t, bool> last;  // by a node's output entry
  for (const auto& c : conv) {
    const uint32_t e = g.entry_id(c.first, 0);
    last[e] = !out_entries.count(e) && !persistent[e];
  }
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    for (size_t k = 0; k < g[id].inputs.size(); ++k) {
      auto it = last.find(g.entry_id(g[id].inputs[k].node_id, g[id].inputs[k].index));
      if (it == last.end()) continue;
      auto rc = conv.find(id);
      if (rc == conv.end() || (static_cast<int>(k) != rc->second.first && static_cast<int>(k) != rc->second.second))
        it->second = false;
    }
  auto is_last = [&](uint32_t id, int k) {
    if (k < 0) return false;
    auto it = last.find(g.entry_id(g[id].inputs[k].node_id, g[id].inputs[k].index));
    return it != last.end() && it->second;
  };
  for (const auto& c : conv) {
    Int8Layout l{is_last(c.first, c.second.first), last[g.entry_id(c.first, 0)], is_last(c.first, c.second.second)};
    if (l.data || l.out || l.sum) layouts[c.first] = l;
  }
  return layouts;
}

}  // namespace

bool Enabled(const char* var) {
  const char* v = std::getenv(var);
  return v == nullptr || std::string(v) != "0";
}


Executor::Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
                   std::vector<OpReq> grad_req, std::vector<NDArray> aux, std::map<std::string, Context> group2ctx,
                   std::vector<NDArray> shared_pool)
    : sym_(sym.Copy()), source_(sym.Copy()), group2ctx_(std::move(group2ctx)), ctx_(ctx), args_(std::move(args)),
      arg_grads_(std::move(arg_grads)), aux_(std::move(aux)), grad_req_(std::move(grad_req)),
      shared_pool_(std::move(shared_pool)) {
  std::vector<std::string> arg_names = sym_.ListArguments(), aux_names = sym_.ListAuxiliaryStates();
  CheckCount(args_.size(), arg_names.size(), "arguments", arg_names);
  CheckCount(aux_.size(), aux_names.size(), "auxiliary states", aux_names);
  if (arg_grads_.empty()) arg_grads_.resize(args_.size());
  if (grad_req_.empty()) grad_req_.assign(args_.size(), OpReq::kNullOp);
  CheckCount(arg_grads_.size(), args_.size(), "gradient arrays", arg_names);
  CheckCount(grad_req_.size(), args_.size(), "gradient requests", arg_names);
  for (size_t i = 0; i < args_.size(); ++i) {
    WEFT_CHECK(!args_[i].is_none(), kValue, "bind: argument '", arg_names[i], "' has no array");
    if (grad_req_[i] != OpReq::kNullOp)
      WEFT_CHECK(!arg_grads_[i].is_none(), kValue, "bind: argument '", arg_names[i],
                 "' asks for a gradient but has no gradient array");
  }
  for (size_t i = 0; i < aux_.size(); ++i)
    WEFT_CHECK(!aux_[i].is_none(), kValue, "bind: auxiliary state '", aux_names[i], "' has no array");
  // MXNet's oneDNN fusion nodes run as their operators when nothing is trained, so that
  // the inference passes below fuse them again; the variables must keep their order.
  bool wants_grad = false;
  for (OpReq r : grad_req_) wants_grad = wants_grad || r != OpReq::kNullOp;
  if (!wants_grad && InlineSubgraphNodes(&sym_) &&
      (sym_.ListArguments() != arg_names || sym_.ListAuxiliaryStates() != aux_names))
    sym_ = sym.Copy();
  const char* cse = std::getenv("WEFT_ELIMINATE_COMMON_EXPR");
  if (cse == nullptr) cse = std::getenv("MXNET_ELIMINATE_COMMON_EXPR");
  if (cse == nullptr || std::string(cse) != "0") EliminateCommonExpr(&sym_);
  optimized_ = sym_.Copy();
  auto sparse = [](const std::vector<NDArray>& v) {
    return std::any_of(v.begin(), v.end(), [](const NDArray& a) { return a.is_sparse(); });
  };
  // Operators that make sparse arrays out of dense ones (cast_storage to csr or row_sparse,
  // the DGL graph operators) give their sparse outputs only when run node by node: a planned
  // executor would write them into dense memory.
  static const auto& on_dense = Op::GetAttr<bool>("TSparseOnDense");
  bool makes_sparse = false;
  graph::DFSVisit(sym_.outputs, [&](const NodePtr& n) {
    if (n->is_variable() || !on_dense.Contains(n->op())) return;
    bool to_dense = false;
    for (const auto& [key, v] : n->attrs.dict) to_dense = to_dense || (key == "stype" && v == "default");
    makes_sparse = makes_sparse || !to_dense;
  });
  sparse_ = makes_sparse || sparse(args_) || sparse(arg_grads_) || sparse(aux_);
  if (sparse_) {
    BindSparse(arg_names);
    return;
  }
  // Regions of oneDNN operators in training replace their nodes before the gradient pass
  // (train_fuse.cc).
  FuseTrainRegions(&sym_, ctx_, group2ctx_, args_, grad_req_, aux_);

  // The variables, by node, and which arguments want gradients.
  IndexedGraph fwd(sym_.outputs);
  std::unordered_map<const graph::Node*, NodePtr> owner;
  graph::DFSVisit(sym_.outputs, [&](const NodePtr& n) { owner[n.get()] = n; });
  std::unordered_map<const graph::Node*, NDArray> bound;
  std::vector<NodeEntry> xs;
  std::vector<size_t> x_args;
  size_t ai = 0, xi = 0;
  for (uint32_t id : fwd.input_nodes()) {
    const graph::Node* n = fwd[id].source;
    if (fwd.is_mutable_input(id)) {
      bound[n] = aux_[xi++];
      continue;
    }
    bound[n] = args_[ai];
    if (grad_req_[ai] != OpReq::kNullOp) {
      xs.push_back({owner.at(n), 0, 0});
      x_args.push_back(ai);
    }
    ++ai;
  }

  // Head gradients are variables of the backward graph.
  std::vector<NodeEntry> heads;
  std::vector<std::string> out_names = sym_.ListOutputs();
  std::unordered_map<const graph::Node*, const graph::Node*> made_for;
  if (!xs.empty()) {
    for (size_t i = 0; i < sym_.outputs.size(); ++i)
      heads.push_back(graph::Symbol::Variable(out_names[i] + "_head_grad").outputs[0]);
    grad_entries_ = graph::Gradient(sym_.outputs, xs, heads, &made_for, graph::MirrorOptions::FromEnv());
  }

  std::vector<NodeEntry> all = sym_.outputs;
  all.insert(all.end(), grad_entries_.begin(), grad_entries_.end());
  // Placement (group2ctx): every node's context, with copies where a value crosses
  // contexts; head gradients sit with their outputs, gradients end on their arrays'.
  std::unordered_set<const graph::Node*> in_forward;
  for (size_t id = 0; id < fwd.num_nodes(); ++id) in_forward.insert(fwd[id].source);
  PlacementInputs where;
  where.group2ctx = group2ctx_;
  where.default_ctx = ctx_;
  for (const auto& b : bound) where.variable_ctx[b.first] = b.second.ctx();
  where.made_for = std::move(made_for);
  for (size_t i = 0; i < heads.size(); ++i) where.made_for[heads[i].node.get()] = sym_.outputs[i].node.get();
  where.forward = in_forward;
  for (size_t k = 0; k < grad_entries_.size(); ++k)
    where.output_ctx.emplace_back(sym_.outputs.size() + k, arg_grads_[x_args[k]].ctx());
  Placement placed = PlaceDevices(&all, where);
  std::copy(all.begin() + sym_.outputs.size(), all.end(), grad_entries_.begin());
  in_forward.insert(placed.forward_copies.begin(), placed.forward_copies.end());
  IndexedGraph g(all);
  std::vector<Context> node_ctx(g.num_nodes());
  for (uint32_t id = 0; id < g.num_nodes(); ++id) node_ctx[id] = placed.ctx.at(g[id].source);

  // Shapes and types from the bound arrays; head gradients have their output's.
  std::vector<Shape> fwd_shapes;
  std::vector<DType> fwd_types;
  {
    std::vector<Shape> in_shapes;
    std::vector<DType> in_types;
    for (uint32_t id : fwd.input_nodes()) {
      in_shapes.push_back(bound.at(fwd[id].source).shape());
      in_types.push_back(bound.at(fwd[id].source).dtype());
    }
    graph::InferShapes(fwd, in_shapes, &fwd_shapes);
    graph::InferTypes(fwd, in_types, &fwd_types);
  }
  for (size_t i = 0; i < heads.size(); ++i) {
    uint32_t e = fwd.entry_id(sym_.outputs[i]);
    head_grads_.emplace_back(fwd_shapes[e], placed.ctx.at(sym_.outputs[i].node.get()), fwd_types[e]);
    bound[heads[i].node.get()] = head_grads_.back();
  }
  head_read_.assign(heads.size(), false);
  for (uint32_t id : g.input_nodes())
    for (size_t i = 0; i < heads.size(); ++i)
      if (g[id].source == heads[i].node.get()) head_read_[i] = true;
  std::vector<Shape> in_shapes, shapes;
  std::vector<DType> in_types, types;
  for (uint32_t id : g.input_nodes()) {
    in_shapes.push_back(bound.at(g[id].source).shape());
    in_types.push_back(bound.at(g[id].source).dtype());
  }
  size_t unknown = graph::InferShapes(g, in_shapes, &shapes) + graph::InferTypes(g, in_types, &types);
  WEFT_CHECK(unknown == 0, kShape, "bind: ", unknown,
             " shapes or dtypes of the graph cannot be inferred from the bound arrays");

  // One array per entry, allocated now; variables are the bound arrays. A gradient entry
  // made by an operator and used nowhere else is written straight into its gradient array.
  std::vector<NDArray> entry(g.num_entries());
  std::vector<OpReq> entry_req(g.num_entries(), OpReq::kWriteTo);
  std::vector<int> uses(g.num_entries(), 0);
  for (size_t id = 0; id < g.num_nodes(); ++id)
    for (const auto& in : g[id].inputs) ++uses[g.entry_id(in.node_id, in.index)];
  for (const auto& e : all) ++uses[g.entry_id(e)];
  std::vector<std::pair<uint32_t, size_t>> copies;  // (entry, argument) copied at the end
  for (size_t k = 0; k < grad_entries_.size(); ++k) {
    uint32_t e = g.entry_id(grad_entries_[k]);
    size_t a = x_args[k];
    WEFT_CHECK(arg_grads_[a].shape() == shapes[e], kShape, "bind: the gradient array of '", arg_names[a],
               "' has shape ", arg_grads_[a].shape().ToString(), " but the gradient has ", shapes[e].ToString());
    // (A copy between devices can only write: one adding to its gradient copies first.)
    bool writes_only = IsCrossDeviceCopy(*grad_entries_[k].node);
    if (!grad_entries_[k].node->is_variable() && uses[e] == 1 && entry[e].is_none() &&
        !(writes_only && grad_req_[a] == OpReq::kAddTo) && arg_grads_[a].dtype() == types[e]) {
      entry[e] = arg_grads_[a];
      entry_req[e] = grad_req_[a];
    } else {
      copies.emplace_back(e, a);
    }
  }
  for (uint32_t id : g.input_nodes()) entry[g.entry_id(id, 0)] = bound.at(g[id].source);

  // Run order: the forward nodes, then the backward ones (each part in graph order).
  std::vector<uint32_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t id = 0; id < g.num_nodes(); ++id)
      if (!g[id].source->is_variable() && (in_forward.count(g[id].source) > 0) == (pass == 0)) order.push_back(id);

  std::vector<bool> persistent(g.num_entries(), false);
  for (const auto& e : sym_.outputs) persistent[g.entry_id(e)] = true;
  for (const auto& c : copies) persistent[c.first] = true;
  // A backward output nobody reads is the gradient of something that needs none (the data
  // of a first convolution, a label): its operator is told to skip it.
  for (uint32_t id : order) {
    if (in_forward.count(g[id].source)) continue;
    for (int i = 0; i < g[id].source->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (uses[e] == 0 && !persistent[e]) entry_req[e] = OpReq::kNullOp;
    }
  }
  // Nodes that depend on no variable compute the same values at every run: they run once,
  // here, and keep their outputs (random and state-changing operators excepted).
  std::unordered_set<const graph::Node*> constant;
  std::vector<bool> computed_once(g.num_entries(), false);
  if (FoldingEnabled()) {
    static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
    static const auto& mutates = Op::GetAttr<FMutateInputs>("FMutateInputs");
    for (uint32_t id : order) {
      const graph::Node* n = g[id].source;
      bool folds = !mutates.Contains(n->op());
      if (folds && resources.Contains(n->op()))
        for (const auto& r : resources[n->op()](n->attrs)) folds &= r.type != ResourceType::kRandom;
      for (const auto& in : g[id].inputs) folds &= constant.count(g[in.node_id].source) > 0;
      if (!folds) continue;
      constant.insert(n);
      for (int i = 0; i < n->num_outputs(); ++i) persistent[g.entry_id(id, i)] = computed_once[g.entry_id(id, i)] = true;
    }
  }
  // Without gradients, Forward(false) runs regions of oneDNN operators as one node each
  // (infer_fuse.cc): their members are grouped in the run order (the planner then keeps
  // each region's inputs alive through it) and stay out of the pointwise chains.
  std::unordered_set<const graph::Node*> unchained = constant;
  bool all_host = std::all_of(node_ctx.begin(), node_ctx.end(), [](Context c) { return c.is_host(); });
  if (grad_entries_.empty() && all_host && Enabled("WEFT_EXEC_DNNL_FUSE")) {
    regions_ = DnnlRegions(g, order, shapes, types, uses, persistent, constant);
    if (!regions_.empty()) order = GroupRegions(g, order, regions_);
    for (const auto& r : regions_)
      for (uint32_t id : r->members) unchained.insert(g[id].source);
  }
  // Chains of pointwise nodes whose links nothing else reads run as one fused node each, at
  // the place of their last node. The planner sees each chain's nodes moved together there
  // (nothing outside a chain reads its links, so the order stays valid): the chain's inputs
  // then stay alive until the fused node has read them.
  std::unordered_map<uint32_t, const FusedChain*> fused_at;  // by the chain's last node
  std::unordered_set<uint32_t> fused_away;                   // the other nodes of the chains
  std::unordered_map<uint32_t, std::vector<uint32_t>> chain_nodes;  // by the chain's last node
  if (FusionEnabled()) {
    std::unordered_map<uint32_t, const std::vector<uint32_t>*> chain_of_last;
    auto chains = PointwiseChains(g, order, types, uses, persistent, unchained, in_forward,
                                  [&node_ctx](uint32_t id) { return node_ctx[id]; });
    for (const auto& chain : chains) {
      fused_.push_back(std::make_unique<FusedChain>(FuseChain(g, chain)));
      fused_at[chain.back()] = fused_.back().get();
      chain_nodes[chain.back()] = chain;
      fused_away.insert(chain.begin(), chain.end() - 1);
      chain_of_last[chain.back()] = &chain;
    }
    std::vector<uint32_t> moved;
    for (uint32_t id : order) {
      if (fused_away.count(id)) continue;
      auto c = chain_of_last.find(id);
      if (c != chain_of_last.end()) moved.insert(moved.end(), c->second->begin(), c->second->end() - 1);
      moved.push_back(id);
    }
    order = std::move(moved);
  }
  std::vector<Context> entry_ctx(g.num_entries());
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    for (int i = 0; i < g[id].source->num_outputs(); ++i) entry_ctx[g.entry_id(id, i)] = node_ctx[id];
  PlanMemory(g, order, shapes, types, persistent, computed_once, entry_ctx, &entry);

  std::unordered_map<uint32_t, Int8Layout> int8_layouts;
  if (grad_entries_.empty()) int8_layouts = Int8Layouts(g, persistent, all, node_ctx, constant);
  int8_layouts_.clear();
  for (uint32_t id : order) {
    auto layout = int8_layouts.find(id);
    if (layout == int8_layouts.end()) continue;
    const Int8Layout& l = layout->second;
    int8_layouts_ += "Int8 channels-last " + g[id].source->attrs.name + ": data " + (l.data ? "nhwc" : "nchw") +
                     ", output " + (l.out ? "nhwc" : "nchw") + ", sum " + (l.sum ? "nhwc" : "nchw") + "\n";
  }
  // One node's step, with the names the monitor reports.
  auto node_step = [&](uint32_t id) {
    const graph::Node* n = g[id].source;
    Step s;
    s.ctx = node_ctx[id];
    s.cross_copy = IsCrossDeviceCopy(*n);
    s.attrs = &n->attrs;
    auto layout = int8_layouts.find(id);
    if (layout != int8_layouts.end()) {
      channels_last_attrs_.push_back(std::make_unique<NodeAttrs>(
          op::Int8ConvChannelsLast(n->attrs, layout->second.data, layout->second.out, layout->second.sum)));
      s.attrs = channels_last_attrs_.back().get();
      s.plain_attrs = &n->attrs;
    }
    std::vector<std::string> arg_names = graph::InputNames(*n);
    for (const auto& in : g[id].inputs) {
      const graph::Node& src = *g[in.node_id].source;
      size_t i = s.inputs.size();
      s.inputs.push_back(entry[g.entry_id(in.node_id, in.index)]);
      s.input_names.push_back(graph::OutputName(src, in.index));
      if (src.is_variable()) s.monitor_inputs.emplace_back(src.attrs.name, i);
      s.monitor_inputs.emplace_back(n->attrs.name + "_" + MonitorInputName(*n, arg_names, i), i);
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      s.outputs.push_back(entry[g.entry_id(id, i)]);
      s.output_names.push_back(graph::OutputName(*n, i));
      s.req.push_back(entry_req[g.entry_id(id, i)]);
    }
    return s;
  };
  std::vector<Step> folded;
  for (uint32_t id : order) {
    if (fused_away.count(id)) continue;
    const graph::Node* n = g[id].source;
    auto fused = fused_at.find(id);
    if (fused != fused_at.end()) {
      Step s;
      s.ctx = node_ctx[id];
      s.attrs = &fused->second->attrs;
      for (uint32_t e : fused->second->inputs) {
        s.inputs.push_back(entry[e]);
        s.input_names.push_back(EntryName(g, e));
      }
      s.outputs.push_back(entry[g.entry_id(id, 0)]);
      s.output_names.push_back(graph::OutputName(*n, 0));
      s.req.push_back(entry_req[g.entry_id(id, 0)]);
      for (uint32_t m : chain_nodes.at(id)) s.members.push_back(node_step(m));
      (in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
      continue;
    }
    Step s = node_step(id);
    op::WatchDnnlTrainRegion(n->attrs, s.inputs);
    (constant.count(n) ? folded : in_forward.count(n) ? forward_ : backward_).push_back(std::move(s));
  }
  static const NodeAttrs copy_attrs = MakeAttrs(Op::Get("_copy"), {});
  for (const auto& c : copies)
    backward_.push_back(Step{arg_grads_[c.second].dtype() == types[c.first] ? &copy_attrs
                                                                             : &CastTo(arg_grads_[c.second].dtype()),
                             {entry[c.first]}, {arg_grads_[c.second]}, {grad_req_[c.second]},
                             {EntryName(g, c.first)}, {arg_names[c.second] + "_grad"}, arg_grads_[c.second].ctx(), false, {},
                             {}});
  for (const auto& e : sym_.outputs) outputs_.push_back(entry[g.entry_id(e)]);
  if (!regions_.empty()) {
    std::vector<uint32_t> forward_nodes;
    for (uint32_t id : order)
      if (!fused_away.count(id) && !constant.count(g[id].source) && in_forward.count(g[id].source))
        forward_nodes.push_back(id);
    BuildInferSteps(forward_nodes, entry, entry_req);
  }
  placement_ = PlacementText(g, order, node_ctx, placed, in_forward);
  Run(folded, false);
  num_folded_ = folded.size();
}

std::string Executor::DebugString() const {
  char line[96];
  std::snprintf(line, sizeof(line), "Total %zu MB allocated\n", (planned_bytes_ + (1 << 20) - 1) >> 20);
  std::string r = sym_.DebugString() + placement_ + line;
  std::snprintf(line, sizeof(line), "Total %zu MB without memory sharing\n", (naive_bytes_ + (1 << 20) - 1) >> 20);
  r += line;
  for (const auto& reg : regions_) r += RegionLine(*reg);
  return r + int8_layouts_;
}

void Executor::SetMonitorCallback(MonitorCallback callback, bool monitor_all) {
  monitor_ = std::move(callback);
  monitor_all_ = monitor_all;
}

void Executor::Run(std::vector<Step>& steps, bool is_train) {
  profiler::SymbolicScope symbolic;
  for (Step& s : steps) RunStep(s, is_train);
}

void Executor::RunStep(Step& s, bool is_train) {
  if (monitor_ && !s.members.empty()) {
    for (Step& m : s.members) RunStep(m, is_train);
    return;
  }
  const NodeAttrs& attrs = monitor_ && s.plain_attrs ? *s.plain_attrs : *s.attrs;
  if (!s.cross_copy) imperative::Invoke(attrs, s.inputs, &s.outputs, &s.ctx, &s.req, is_train);
  else if (s.req[0] != OpReq::kNullOp) CopyFromTo(s.inputs[0], s.outputs[0]);
  if (!monitor_) return;
  if (monitor_all_ && !s.monitor_inputs.empty())
    for (const auto& m : s.monitor_inputs) monitor_(m.first, s.inputs[m.second]);
  else if (monitor_all_)
    for (size_t i = 0; i < s.inputs.size(); ++i) monitor_(s.input_names[i], s.inputs[i]);
  // Every output is reported, as MXNet's monitor does, those the step was told not to
  // write (a gradient nobody asked for) included: their values are then unspecified.
  for (size_t i = 0; i < s.outputs.size(); ++i)
    if (!s.outputs[i].is_none()) monitor_(s.output_names[i], s.outputs[i]);
}

void Executor::BindSparse(const std::vector<std::string>& arg_names) {
  // The shapes and dtypes are checked now, as a planned bind checks them, so that a bad
  // array is the bind's error and not the first forward's.
  IndexedGraph g(sym_.outputs);
  std::vector<Shape> in_shapes, shapes;
  std::vector<DType> in_types, types;
  size_t ai = 0, xi = 0;
  for (uint32_t id : g.input_nodes()) {
    const NDArray& a = g.is_mutable_input(id) ? aux_[xi++] : args_[ai++];
    in_shapes.push_back(a.shape());
    in_types.push_back(a.dtype());
  }
  size_t unknown = graph::InferShapes(g, in_shapes, &shapes) + graph::InferTypes(g, in_types, &types);
  WEFT_CHECK(unknown == 0, kShape, "bind: ", unknown,
             " shapes or dtypes of the graph cannot be inferred from the bound arrays");
  for (size_t i = 0; i < args_.size(); ++i) {
    if (grad_req_[i] == OpReq::kNullOp) continue;
    WEFT_CHECK(arg_grads_[i].shape() == args_[i].shape(), kShape, "bind: the gradient array of '", arg_names[i],
               "' has shape ", arg_grads_[i].shape().ToString(), " but the argument has ",
               args_[i].shape().ToString());
  }
}

void Executor::SetArray(int kind, size_t index, const NDArray& array) {
  std::vector<NDArray>* arrays = kind == 0 ? &args_ : kind == 1 ? &arg_grads_ : kind == 2 ? &aux_ : nullptr;
  WEFT_CHECK(arrays != nullptr, kValue, "set_array: 'kind' must be 0 (arguments), 1 (gradients) or 2 (auxiliary "
             "states), got ", kind);
  WEFT_CHECK(index < arrays->size(), kValue, "set_array: 'index' ", index, " out of range for ", arrays->size(),
             " arrays");
  WEFT_CHECK(sparse_, kUnsupported, "set_array: only an executor bound with sparse arrays takes new arrays; "
             "this one was planned for the memory of the arrays it was bound with");
  NDArray& old = (*arrays)[index];
  WEFT_CHECK(!old.is_none() && !array.is_none(), kValue, "set_array: array ", index,
             " has no gradient, or the new array is none");
  WEFT_CHECK(old.shape() == array.shape() && old.dtype() == array.dtype(), kShape, "set_array: expected shape ",
             old.shape().ToString(), " and dtype ", DTypeName(old.dtype()), " for array ", index, ", got ",
             array.shape().ToString(), " and ", DTypeName(array.dtype()));
  old = array;
}

void Executor::ForwardSparse(bool is_train) {
  IndexedGraph g(sym_.outputs);
  std::vector<NDArray> entry(g.num_entries());
  // Recorded whenever a gradient is asked for, also in inference mode: a planned executor
  // runs backward after either forward (and autograd.record(train_mode=False) needs it).
  bool record = std::any_of(grad_req_.begin(), grad_req_.end(), [](OpReq r) { return r != OpReq::kNullOp; });
  marked_args_.clear();
  std::vector<uint32_t> marked_entries;
  size_t ai = 0, xi = 0;
  for (uint32_t id : g.input_nodes()) {
    uint32_t e = g.entry_id(id, 0);
    if (g.is_mutable_input(id)) {
      entry[e] = aux_[xi++];
      continue;
    }
    // A copy of the bound array's handle: marking it for autograd leaves the caller's array
    // without a history.
    entry[e] = args_[ai];
    if (record && grad_req_[ai] != OpReq::kNullOp) {
      marked_args_.push_back(ai);
      marked_entries.push_back(e);
    }
    ++ai;
  }
  std::vector<NDArray*> vars;
  std::vector<NDArray> grads;
  std::vector<OpReq> reqs;
  for (size_t k = 0; k < marked_args_.size(); ++k) {
    size_t a = marked_args_[k];
    vars.push_back(&entry[marked_entries[k]]);
    grads.push_back(arg_grads_[a]);  // BackwardSparse sets the buffers it will use
    reqs.push_back(grad_req_[a] == OpReq::kAddTo ? OpReq::kAddTo : OpReq::kWriteTo);
  }
  if (!vars.empty()) autograd::MarkVariables(vars, grads, reqs);
  marked_.clear();
  for (uint32_t e : marked_entries) marked_.push_back(entry[e]);

  bool was_recording = autograd::SetIsRecording(record);
  try {
    profiler::SymbolicScope symbolic;
    for (uint32_t id = 0; id < g.num_nodes(); ++id) {
      const graph::Node* n = g[id].source;
      if (n->is_variable()) continue;
      std::vector<NDArray> ins, outs;
      for (const auto& in : g[id].inputs) ins.push_back(entry[g.entry_id(in.node_id, in.index)]);
      // With group2ctx, as the planned executor places nodes: a node of a context group runs
      // on the group's context, any other where its first input is; inputs made elsewhere
      // are copied there.
      Context where = ctx_;
      if (!group2ctx_.empty()) {
        if (!ins.empty()) where = ins[0].ctx();
        if (const std::string* group = n->FindAttr("__ctx_group__")) {
          auto it = group2ctx_.find(*group);
          WEFT_CHECK(it != group2ctx_.end(), kValue, "forward: node '", n->attrs.name, "' is in context group '",
                     *group, "', which group2ctx does not map");
          where = it->second;
        }
        for (auto& in : ins)
          if (in.ctx() != where) in = CopyAcross(in, where);
      }
      imperative::Invoke(n->attrs, ins, &outs, &where, nullptr, is_train);
      for (size_t i = 0; i < outs.size() && i < static_cast<size_t>(n->num_outputs()); ++i)
        entry[g.entry_id(id, static_cast<uint32_t>(i))] = outs[i];
      if (!monitor_) continue;
      if (monitor_all_)
        for (size_t i = 0; i < ins.size(); ++i)
          monitor_(graph::OutputName(*g[g[id].inputs[i].node_id].source, g[id].inputs[i].index), ins[i]);
      for (size_t i = 0; i < outs.size(); ++i) monitor_(graph::OutputName(*n, static_cast<uint32_t>(i)), outs[i]);
    }
  } catch (...) {
    autograd::SetIsRecording(was_recording);
    throw;
  }
  autograd::SetIsRecording(was_recording);
  outputs_.clear();
  for (const auto& e : sym_.outputs) outputs_.push_back(entry[g.entry_id(e)]);
  recorded_ = record;
}

void Executor::BackwardSparse(const std::vector<NDArray>& head_grads) {
  if (std::all_of(grad_req_.begin(), grad_req_.end(), [](OpReq r) { return r == OpReq::kNullOp; })) return;
  WEFT_CHECK(recorded_, kValue, "backward: run forward first");
  WEFT_CHECK(head_grads.empty() || head_grads.size() == outputs_.size(), kValue, "backward: expected ",
             outputs_.size(), " head gradients (one per output) or none, got ", head_grads.size());
  for (size_t i = 0; i < head_grads.size(); ++i)
    WEFT_CHECK(head_grads[i].shape() == outputs_[i].shape(), kShape, "backward: head gradient ", i, " has shape ",
               head_grads[i].shape().ToString(), " but output ", i, " has ", outputs_[i].shape().ToString());
  // The graph is kept (retain_graph): an executor may run backward again for one forward.
  // The gradient buffers as they are now (a front end may have given a sparse one new
  // contents since the forward). A sparse gradient written (not added) starts empty: an
  // argument the gradient does not reach gets zeros, as a planned executor writes them.
  for (size_t k = 0; k < marked_.size(); ++k) {
    size_t a = marked_args_[k];
    const NDArray& buf = arg_grads_[a];
    marked_[k].ag_node()->grad = buf.is_sparse() && grad_req_[a] != OpReq::kAddTo
                                     ? SparseZeros(buf.stype(), buf.shape(), buf.dtype(), buf.ctx())
                                     : buf;
  }
  // A head gradient of another dtype is converted, as a planned executor copies it into
  // its own buffer.
  std::vector<NDArray> heads(head_grads);
  for (size_t i = 0; i < heads.size(); ++i)
    if (!heads[i].is_sparse() && heads[i].dtype() != outputs_[i].dtype()) {
      NDArray converted(heads[i].shape(), heads[i].ctx(), outputs_[i].dtype());
      CopyFromTo(heads[i], converted);
      heads[i] = converted;
    }
  autograd::Backward(outputs_, heads, {}, true, false, is_train_);
  for (size_t k = 0; k < marked_.size(); ++k) {
    const NDArray& g = marked_[k].ag_node()->grad;
    if (arg_grads_[marked_args_[k]].is_sparse()) arg_grads_[marked_args_[k]] = g;
  }
}

void Executor::Forward(bool is_train) {
  is_train_ = is_train;
  ++num_forwards_;
  if (sparse_) {
    ForwardSparse(is_train);
    return;
  }
  // A monitor sees every node, as MXNet's does: the oneDNN regions' nodes then run one by one.
  Run(is_train || infer_.empty() || monitor_ ? forward_ : infer_, is_train);
}

void Executor::Backward(const std::vector<NDArray>& head_grads) {
  if (sparse_) {
    BackwardSparse(head_grads);
    return;
  }
  WEFT_CHECK(!grad_entries_.empty() || backward_.empty(), kInternal, "backward steps without gradients");
  if (grad_entries_.empty()) return;  // no argument asked for a gradient
  static const NodeAttrs ones = MakeAttrs(Op::Get("ones_like"), {});
  profiler::SymbolicScope symbolic;
  for (size_t i = 0; i < head_grads_.size(); ++i) {
    if (!head_read_[i]) continue;
    std::vector<NDArray> out{head_grads_[i]};
    if (head_grads.empty()) {
      imperative::Invoke(ones, {head_grads_[i]}, &out, &ctx_);
    } else {
      WEFT_CHECK(i < head_grads.size() && !head_grads[i].is_none(), kValue, "backward: the gradient of output ",
                 i, " is needed but only ", head_grads.size(), " head gradients were given (one per output, or none)");
      WEFT_CHECK(head_grads[i].shape() == head_grads_[i].shape(), kShape, "backward: head gradient ", i,
                 " has shape ", head_grads[i].shape().ToString(), " but output ", i, " has ",
                 head_grads_[i].shape().ToString());
      CopyFromTo(head_grads[i], head_grads_[i]);
    }
  }
  Run(backward_, is_train_);
}

}  // namespace executor
}  // namespace weft

// MXNet 1.9's oneDNN subgraph operators, as a symbol saved after `optimize_for('MKLDNN')`
// holds them: _sg_mkldnn_conv and _sg_mkldnn_fully_connected (a convolution or fully
// connected layer with what MXNet fused into it: BatchNorm, activation, a residual sum and
// an activation after it) and _sg_mkldnn_selfatt_qk / _selfatt_valatt (the interleaved
// self-attention products).
//
// MXNet keeps the fused operators in the node as a subgraph (the JSON field "subgraphs");
// Weft keeps it as the string parameter `subgraph` (core/graph/json.cc moves it between the
// two), and computes the node by running the subgraph's own operators in order, each with
// its registered CPU kernel (Convolution and FullyConnected through oneDNN). The node's
// inputs are the subgraph's variables in the order they appear in it (MXNet's: data,
// weight, bias, then gamma, beta, mean, var, then the sum operand). The self-attention
// operators compute what _contrib_interleaved_matmul_selfatt_qk / _valatt do; their
// subgraph (those operators) is kept for the JSON only.
//
// These are inference operators: a gradient through them is refused (MXNet gave zeros).
//
// The int8 forms (quantized=True, what MXNet's quantize_model makes of these nodes) take
// their quantized inputs with ranges, as MXNet's, and run the product on Weft's int8
// kernels (quantized_product.h, the kernels of _contrib_quantized_conv/_fully_connected):
// the convolution quantizes its float weights itself (BatchNorm folded in first; one
// range per output channel when calibrated, else one), the fully connected layer takes
// int8 weights with ranges (or float weights with channel_wise_quantize), the
// self-attention products multiply int8 queries, keys and values (and uint8 or int8
// attention). See docs/design/quantization.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/op/nn/activation_param.h"
#include "core/op/nn/batch_norm_param.h"
#include "core/op/nn/fully_connected.h"
#include "core/op/quantization/quantized_product.h"
#include "core/op/registry.h"
#include "core/op/subgraph/sg_mkldnn.h"
#include "core/op/tensor/clip.h"

namespace weft {
namespace op {

struct SgConvParam {
  bool with_bn = false, with_act = false, with_sum = false, with_postsum_act = false, quantized = false;
  bool with_relu = false, with_postsum_relu = false;  // the names MXNet used before 1.6
  std::optional<double> min_calib_range, max_calib_range;
  std::string subgraph;
};

struct SgFCParam {
  bool quantized = false, enable_float_output = false, with_eltwise = false;
  std::optional<double> min_calib_range, max_calib_range;
  std::string channel_wise_quantize = "None";
  std::string subgraph;
};

struct SgSelfAttParam {
  int heads = 0;
  bool quantized = false, enable_float_output = false;
  std::optional<double> min_calib_range, max_calib_range;
  std::string subgraph;
};

namespace {

template <typename P>
void CalibFields(ParamSchema<P>& s, std::optional<double> P::*member_min, std::optional<double> P::*member_max) {
  s.Field("min_calib_range", member_min)
      .Default(std::nullopt)
      .Describe("The calibrated minimum of the output (int8 form only).");
  s.Field("max_calib_range", member_max)
      .Default(std::nullopt)
      .Describe("The calibrated maximum of the output (int8 form only).");
}

constexpr const char* kSubgraphDoc =
    "The fused operators, as MXNet symbol JSON (MXNet's node field \"subgraphs\"; the JSON reader fills it).";

}  // namespace

WEFT_PARAM_SCHEMA(SgConvParam, s) {
  s.Field("with_bn", &SgConvParam::with_bn).Default(false).Describe("Add post batchnorm.");
  s.Field("with_act", &SgConvParam::with_act).Default(false).Describe("Add post activation.");
  s.Field("with_sum", &SgConvParam::with_sum).Default(false).Describe("Add post sum.");
  s.Field("with_postsum_act", &SgConvParam::with_postsum_act).Default(false).Describe("Add post activation after sum.");
  s.Field("with_relu", &SgConvParam::with_relu).Default(false)
      .Describe("What with_act was called before MXNet 1.6 (files saved then carry it).");
  s.Field("with_postsum_relu", &SgConvParam::with_postsum_relu).Default(false)
      .Describe("What with_postsum_act was called before MXNet 1.6.");
  s.Field("quantized", &SgConvParam::quantized).Default(false).Describe("Enable quantization.");
  CalibFields(s, &SgConvParam::min_calib_range, &SgConvParam::max_calib_range);
  s.Field("subgraph", &SgConvParam::subgraph).Default(std::string()).Describe(kSubgraphDoc);
}

WEFT_PARAM_SCHEMA(SgFCParam, s) {
  s.Field("quantized", &SgFCParam::quantized).Default(false).Describe("Whether it is a quantized FullyConnected.");
  s.Field("enable_float_output", &SgFCParam::enable_float_output).Default(false).Describe("Whether to enable float32 output.");
  s.Field("with_eltwise", &SgFCParam::with_eltwise).Default(false).Describe("Whether an elementwise activation follows.");
  CalibFields(s, &SgFCParam::min_calib_range, &SgFCParam::max_calib_range);
  s.Field("channel_wise_quantize", &SgFCParam::channel_wise_quantize)
      .Default(std::string("None"))
      .Describe("Whether the weight is quantized per channel (int8 form only; None, True or False).");
  s.Field("subgraph", &SgFCParam::subgraph).Default(std::string()).Describe(kSubgraphDoc);
}

WEFT_PARAM_SCHEMA(SgSelfAttParam, s) {
  s.Field("heads", &SgSelfAttParam::heads).Min(1).Describe("Set number of heads.");
  s.Field("quantized", &SgSelfAttParam::quantized).Default(false).Describe("Whether it is quantized.");
  s.Field("enable_float_output", &SgSelfAttParam::enable_float_output).Default(false).Describe("Whether to enable float32 output.");
  CalibFields(s, &SgSelfAttParam::min_calib_range, &SgSelfAttParam::max_calib_range);
  s.Field("subgraph", &SgSelfAttParam::subgraph).Default(std::string()).Describe(kSubgraphDoc);
}

namespace {

// ------------------------------------------------------------------ the held subgraph
struct Inner {
  struct Node {
    const Op* op = nullptr;  // null: a variable
    NodeAttrs attrs;
    std::vector<int> in;  // entry ids
    int first_entry = 0, num_outputs = 1;
    int var = -1;  // a variable: the node input it is
  };
  std::vector<Node> nodes;
  std::vector<int> heads;  // entry ids
  int num_entries = 0, num_vars = 0;
  std::vector<int> mutated;  // node inputs an inner operator writes (BatchNorm's moving statistics)
  std::map<std::string, int> op_count;
};

[[noreturn]] void Bad(const std::string& op, const std::string& what) {
  Throw(ErrorKind::kValue, "Operator '", op, "': its subgraph ", what);
}

std::shared_ptr<const Inner> ParseInner(const std::string& op_name, const std::string& text) {
  using nlohmann::json;
  if (text.empty())
    Throw(ErrorKind::kValue, "Operator '", op_name,
          "': expected the fused subgraph (parameter 'subgraph', MXNet symbol JSON), got none");
  json top;
  try {
    top = json::parse(text);
  } catch (const std::exception& e) {
    Bad(op_name, std::string("is not valid JSON: ") + e.what());
  }
  if (!top.is_object() || !top.contains("nodes") || !top["nodes"].is_array() || !top.contains("heads") ||
      !top["heads"].is_array())
    Bad(op_name, "must be a symbol graph with 'nodes' and 'heads'");
  auto inner = std::make_shared<Inner>();
  auto entry = [&](const json& e, size_t before, const std::string& what) {
    if (!e.is_array() || e.size() < 2 || !e[0].is_number_unsigned() || !e[1].is_number_unsigned())
      Bad(op_name, what + " must be [node, output(, version)]");
    size_t id = e[0].get<size_t>(), idx = e[1].get<size_t>();
    if (id >= before) Bad(op_name, what + " refers to node " + std::to_string(id) + ", which does not come before it");
    const Inner::Node& src = inner->nodes[id];
    if (idx >= static_cast<size_t>(src.num_outputs))
      Bad(op_name, what + " refers to output " + std::to_string(idx) + " of a node with " +
                       std::to_string(src.num_outputs));
    return src.first_entry + static_cast<int>(idx);
  };
  const json& nodes = top["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& jn = nodes[i];
    std::string label = "node " + std::to_string(i);
    if (!jn.is_object() || !jn.contains("op") || !jn["op"].is_string()) Bad(op_name, label + " has no operator name");
    if (jn.contains("subgraphs")) Bad(op_name, label + " holds a subgraph itself, which is not supported");
    Inner::Node n;
    n.first_entry = inner->num_entries;
    std::string opn = jn["op"].get<std::string>();
    if (opn == "null") {
      n.var = inner->num_vars++;
    } else {
      n.op = Op::Find(opn);
      if (n.op == nullptr) Bad(op_name, label + " has the unknown operator '" + opn + "'");
      KwArgs kw;
      for (const char* key : {"attrs", "attr", "param"}) {
        if (!jn.contains(key)) continue;
        if (!jn[key].is_object()) Bad(op_name, label + ": '" + key + "' must be an object");
        for (auto it = jn[key].begin(); it != jn[key].end(); ++it) {
          if (!it.value().is_string()) Bad(op_name, label + ": attribute '" + it.key() + "' must be a string");
          if (it.key().rfind("__", 0) != 0) kw.emplace_back(it.key(), it.value().get<std::string>());
        }
      }
      n.attrs = MakeAttrs(n.op, std::move(kw));
      n.attrs.name = jn.contains("name") && jn["name"].is_string() ? jn["name"].get<std::string>() : label;
      n.num_outputs = n.op->NumOutputs(n.attrs);
      static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
      if (resources.Contains(n.op))
        for (const auto& r : resources[n.op](n.attrs))
          if (r.type != ResourceType::kTempSpace)
            Bad(op_name, label + " ('" + opn + "') needs a random resource, which a fused inference node cannot hold");
      static const auto& fcompute = Op::GetAttr<FCompute>("FCompute<cpu>");
      if (!fcompute.Contains(n.op)) Bad(op_name, label + " ('" + opn + "') has no CPU kernel");
      const json& ins = jn.contains("inputs") ? jn["inputs"] : json::array();
      if (!ins.is_array()) Bad(op_name, label + ": 'inputs' must be an array");
      for (size_t k = 0; k < ins.size(); ++k) n.in.push_back(entry(ins[k], i, label + " input " + std::to_string(k)));
      if (static_cast<int>(n.in.size()) != n.op->NumInputs(n.attrs))
        Bad(op_name, label + " ('" + opn + "') takes " + std::to_string(n.op->NumInputs(n.attrs)) + " inputs, got " +
                         std::to_string(n.in.size()));
      inner->op_count[opn] += 1;
    }
    inner->num_entries += n.num_outputs;
    inner->nodes.push_back(std::move(n));
  }
  for (size_t k = 0; k < top["heads"].size(); ++k)
    inner->heads.push_back(entry(top["heads"][k], nodes.size(), "head " + std::to_string(k)));
  // MXNet's fused layers have one float output, which is what the node gives.
  if (inner->heads.size() != 1) Bad(op_name, "must have one output, got " + std::to_string(inner->heads.size()));
  // A variable's entry id is its node's first entry: find the node input behind each entry.
  std::vector<int> var_of_entry(inner->num_entries, -1);
  for (const auto& n : inner->nodes)
    if (n.var >= 0) var_of_entry[n.first_entry] = n.var;
  static const auto& mutate = Op::GetAttr<FMutateInputs>("FMutateInputs");
  for (const auto& n : inner->nodes) {
    if (n.op == nullptr || !mutate.Contains(n.op)) continue;
    for (int k : mutate[n.op](n.attrs))
      if (k < static_cast<int>(n.in.size()) && var_of_entry[n.in[k]] >= 0) inner->mutated.push_back(var_of_entry[n.in[k]]);
  }
  return inner;
}

// Parsed subgraphs by their text: a node's parameters are fixed, so each is parsed once.
std::shared_ptr<const Inner> InnerOf(const NodeAttrs& attrs, const std::string& text) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Inner>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(text);
    if (it != cache.end()) return it->second;
  }
  auto inner = ParseInner(attrs.op->name, text);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 256) cache.clear();  // bounds the memory held for graphs no longer used
  cache.emplace(text, inner);
  return inner;
}

template <typename P>
std::shared_ptr<const Inner> InnerOf(const NodeAttrs& attrs) {
  return InnerOf(attrs, attrs.Params<P>().subgraph);
}

// Checks that the subgraph holds the operator the node is named for, and what its flags say.
void CheckFusion(const NodeAttrs& attrs, const Inner& g, const char* main_op, bool with_bn) {
  auto count = [&](const char* name) {
    auto it = g.op_count.find(name);
    return it == g.op_count.end() ? 0 : it->second;
  };
  if (count(main_op) != 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected its subgraph to hold one ", main_op,
          ", got ", count(main_op));
  if (with_bn != (count("BatchNorm") == 1))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': with_bn=", with_bn ? "True" : "False",
          " but its subgraph holds ", count("BatchNorm"), " BatchNorm");
}

// Runs shape (or type) inference through the subgraph, in both directions, until nothing
// changes. `vals` holds one value per entry, `unknown` until inferred (a default DType
// would read as float32 and clash with a float64 graph).
template <typename T, typename Fn>
bool InferInner(const Inner& g, std::vector<T>* in, std::vector<T>* out, Fn&& infer, bool (*known)(const T&),
                const T& unknown) {
  std::vector<T> vals(g.num_entries, unknown);
  for (const auto& n : g.nodes)
    if (n.var >= 0) vals[n.first_entry] = (*in)[n.var];
  for (size_t k = 0; k < g.heads.size(); ++k)
    if (known((*out)[k]) && !known(vals[g.heads[k]])) vals[g.heads[k]] = (*out)[k];
  bool all = false;
  for (int pass = 0; pass < 4 && !all; ++pass) {
    all = true;
    for (const auto& n : g.nodes) {
      if (n.op == nullptr) continue;
      std::vector<T> ins, outs;
      for (int e : n.in) ins.push_back(vals[e]);
      for (int k = 0; k < n.num_outputs; ++k) outs.push_back(vals[n.first_entry + k]);
      bool done = infer(n, &ins, &outs);
      for (size_t k = 0; k < n.in.size(); ++k) vals[n.in[k]] = ins[k];
      for (int k = 0; k < n.num_outputs; ++k) vals[n.first_entry + k] = outs[k];
      all = all && done;
    }
  }
  for (const auto& n : g.nodes)
    if (n.var >= 0) (*in)[n.var] = vals[n.first_entry];
  for (size_t k = 0; k < g.heads.size(); ++k) (*out)[k] = vals[g.heads[k]];
  for (const auto& v : *in) all = all && known(v);
  for (const auto& v : *out) all = all && known(v);
  return all;
}

bool ShapeKnown(const Shape& s) { return s.is_known(); }
bool TypeKnown(const DType& t) { return t != DType::kUnknown; }

bool InnerShape(const NodeAttrs& attrs, const Inner& g, std::vector<Shape>* in, std::vector<Shape>* out) {
  static const auto& fns = Op::GetAttr<FInferShape>("FInferShape");
  (void)attrs;
  return InferInner<Shape>(
      g, in, out,
      [](const Inner::Node& n, std::vector<Shape>* i, std::vector<Shape>* o) { return fns[n.op](n.attrs, i, o); },
      ShapeKnown, Shape::Unknown());
}

bool InnerType(const Inner& g, std::vector<DType>* in, std::vector<DType>* out) {
  static const auto& fns = Op::GetAttr<FInferType>("FInferType");
  return InferInner<DType>(
      g, in, out,
      [](const Inner::Node& n, std::vector<DType>* i, std::vector<DType>* o) {
        return fns.Contains(n.op) ? fns[n.op](n.attrs, i, o) : SameTypeEverywhere(n.attrs, i, o);
      },
      TypeKnown, DType::kUnknown);
}

// Runs every operator of the subgraph at inference (is_train off), writing the heads into
// the node's outputs; the node's temporary space serves every inner request for it.
void RunInner(const NodeAttrs& attrs, const Inner& g, const OpContext& ctx, const std::vector<TBlob>& in,
              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  static const auto& fcompute = Op::GetAttr<FCompute>("FCompute<cpu>");
  static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
  std::vector<Shape> in_shapes, out_shapes(out.size());
  std::vector<DType> in_types, out_types(out.size(), DType::kUnknown);
  for (const auto& b : in) {
    in_shapes.push_back(b.shape);
    in_types.push_back(b.dtype);
  }
  // The entries' shapes and types, from the node's own arrays.
  std::vector<Shape> shapes(g.num_entries);
  std::vector<DType> types(g.num_entries, DType::kUnknown);
  {
    static const auto& sfns = Op::GetAttr<FInferShape>("FInferShape");
    static const auto& tfns = Op::GetAttr<FInferType>("FInferType");
    for (const auto& n : g.nodes)
      if (n.var >= 0) {
        shapes[n.first_entry] = in_shapes[n.var];
        types[n.first_entry] = in_types[n.var];
      }
    for (const auto& n : g.nodes) {
      if (n.op == nullptr) continue;
      std::vector<Shape> is, os(n.num_outputs);
      std::vector<DType> it, ot(n.num_outputs, DType::kUnknown);
      for (int e : n.in) {
        is.push_back(shapes[e]);
        it.push_back(types[e]);
      }
      if (!sfns[n.op](n.attrs, &is, &os))
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': could not infer the shapes of its inner '",
              n.attrs.name, "'");
      bool typed = tfns.Contains(n.op) ? tfns[n.op](n.attrs, &it, &ot) : SameTypeEverywhere(n.attrs, &it, &ot);
      if (!typed)
        Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': could not infer the types of its inner '",
              n.attrs.name, "'");
      for (int k = 0; k < n.num_outputs; ++k) {
        shapes[n.first_entry + k] = os[k];
        types[n.first_entry + k] = ot[k];
      }
    }
  }
  std::vector<TBlob> blobs(g.num_entries);
  std::vector<NDArray> held;  // the inner values' memory, for this call
  for (const auto& n : g.nodes)
    if (n.var >= 0) blobs[n.first_entry] = in[n.var];
  Context cpu = ctx.run_ctx.ctx;
  for (const auto& n : g.nodes) {
    if (n.op == nullptr) continue;
    std::vector<TBlob> ins, outs;
    for (int e : n.in) ins.push_back(blobs[e]);
    for (int k = 0; k < n.num_outputs; ++k) {
      int e = n.first_entry + k;
      held.emplace_back(shapes[e], cpu, types[e]);
      blobs[e] = held.back().data();
      outs.push_back(blobs[e]);
    }
    OpContext ictx;
    ictx.is_train = false;
    ictx.run_ctx = ctx.run_ctx;
    if (resources.Contains(n.op))
      for (size_t r = 0; r < resources[n.op](n.attrs).size(); ++r) ictx.requested.push_back(ctx.requested.at(0));
    fcompute[n.op](n.attrs, ictx, ins, std::vector<OpReq>(n.num_outputs, OpReq::kWriteTo), outs);
  }
  for (size_t k = 0; k < out.size(); ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    const TBlob& src = blobs[g.heads[k]];
    if (req[k] == OpReq::kAddTo)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an add-to request on the output is not supported");
    if (src.dptr != out[k].dptr)
      std::memcpy(out[k].dptr, src.dptr, static_cast<size_t>(src.Size()) * DTypeSize(src.dtype));
  }
}

FGradient InferenceOnly() {
  return [](GradBuilder&, const NodeAttrs& attrs, const GradArgs&) -> std::vector<GradValue> {
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "' is an inference-only oneDNN fusion and has no gradient; train the unfused symbol instead");
  };
}

std::vector<ResourceRequest> TempSpace(const NodeAttrs&) { return {ResourceRequest{ResourceType::kTempSpace}}; }

// ------------------------------------------------------------------ the int8 forms
// What the int8 conv / FC node holds around its product, from its subgraph: the layer, a
// BatchNorm, the activations before and after the residual sum.
struct Parts {
  const Inner::Node* main = nullptr;
  const Inner::Node* bn = nullptr;
  bool sum = false;
  std::vector<const Inner::Node*> before_sum, after_sum;
};

Parts PartsOf(const NodeAttrs& attrs, const Inner& g, const char* main_op) {
  Parts p;
  for (const auto& n : g.nodes) {
    if (n.op == nullptr) continue;
    const std::string& op = n.op->name;
    if (op == main_op) p.main = &n;
    else if (op == "BatchNorm") p.bn = &n;
    else if (op == "elemwise_add") p.sum = true;
    else (p.sum ? p.after_sum : p.before_sum).push_back(&n);
  }
  if (p.main == nullptr)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected its subgraph to hold a ", main_op);
  return p;
}

bool IsAct(const Inner::Node& n, const char* act) {
  return n.op->name == "Activation" && n.attrs.Params<ActivationParam>().act_type == act;
}

// MXNet's rule for the 8-bit type of a calibrated output: uint8 after an activation whose
// values are >= 0 (relu, sigmoid, softrelu, clip from 0; for the dense layer also square,
// sqrt, exp, abs), int8 otherwise.
bool NonNegative(const Inner::Node& n, bool fc) {
  const std::string& op = n.op->name;
  if (op == "Activation") return IsAct(n, "relu") || IsAct(n, "sigmoid") || IsAct(n, "softrelu");
  if (op == "LeakyReLU") {
    const auto& p = n.attrs.Params<LeakyReLUParam>();
    return p.act_type == "leaky" && p.slope == 0;
  }
  if (op == "clip") return n.attrs.Params<ClipParam>().a_min >= 0;
  return fc && (op == "square" || op == "sqrt" || op == "exp" || op == "abs");
}

bool OutputUint8(const Parts& p, bool fc) {
  if (!p.sum && !p.before_sum.empty()) return NonNegative(*p.before_sum.back(), fc);
  if (p.sum && !p.after_sum.empty()) return NonNegative(*p.after_sum.back(), fc);
  return false;
}

// The type of output 0 of an int8 node: float32 with enable_float_output, 8 bits when
// calibrated, else the int32 accumulators.
DType Int8OutType(bool float_output, const std::optional<double>& min_calib, bool uint8) {
  if (float_output) return DType::kFloat32;
  if (min_calib.has_value()) return uint8 ? DType::kUint8 : DType::kInt8;
  return DType::kInt32;
}

void CheckCalibPair(const NodeAttrs& attrs, const std::optional<double>& lo, const std::optional<double>& hi,
                    bool float_output) {
  quant::Calib c{lo, hi};
  quant::CheckCalib(attrs, c);
  quant::CheckFloatOutput(attrs, c, float_output);
}

// The range inputs (after the node's first `base` inputs) are float32 scalars, and so are
// outputs 1, 2 when present.
void RangeIO(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, size_t base) {
  quant::RangeShapes(attrs, in, base, in->size() - base);
  if (out->size() == 3) quant::OutputRangeShapes(attrs, out);
}
void RangeIOTypes(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out, size_t base) {
  quant::RangeTypes(attrs, in, base, in->size() - base);
  if (out->size() == 3) quant::OutputRangeTypes(attrs, out);
}

// The step of data of type t with range (lo, hi): MXNet's oneDNN rule, max(|lo|, |hi|)
// over 127 (int8) or 255 (uint8, zero point 0, whatever lo is).
double DataStep(const TBlob& lo, const TBlob& hi, DType t) {
  return quant::Step(t, quant::ReadScalar(lo), quant::ReadScalar(hi));
}

// Weights quantized by the node: int8 values, the int32 bias, and each output channel's
// weight step.
struct Int8Weights {
  std::vector<int8_t> w;
  std::vector<int32_t> bias;
  std::vector<double> step;
  double data_step = 1;  // the data's step the products are in (1 for data of step 0)

  // Each output channel's accumulator step.
  std::vector<double> AccSteps() const {
    std::vector<double> acc(step.size());
    for (size_t c = 0; c < acc.size(); ++c) acc[c] = data_step * step[c];
    return acc;
  }
};

// Quantizes float weights w (f rows of `per` values) and bias b (f, or null) for data of
// step sd: one step per row (`channel_wise`) or one for all (`given_step` when > 0, else
// from the largest magnitude). A bias that would not fit in int32 / 2 in the accumulator's
// step widens the weight step (MXNet's guard against oneDNN's bias overflow). Data of step
// 0 (an all-zero range) meets all-zero weights, so that its products are 0.
Int8Weights QuantizeWeights(const float* w, int64_t f, int64_t per, const float* b, double sd, bool channel_wise,
                            double given_step = 0) {
  Int8Weights q;
  q.step.assign(static_cast<size_t>(f), 0.0);
  double all = 0;
  for (int64_t c = 0; c < f; ++c) {
    double m = 0;
    for (int64_t k = 0; k < per; ++k) m = std::max(m, static_cast<double>(std::fabs(w[c * per + k])));
    q.step[c] = m / quant::kInt8Levels;
    all = std::max(all, m);
  }
  if (!channel_wise)
    for (auto& s : q.step) s = given_step > 0 ? given_step : all / quant::kInt8Levels;
  constexpr double kBiasLimit = 1073741823.0;  // int32's maximum / 2
  const double sd_eff = sd > 0 ? sd : 1.0;
  q.data_step = sd_eff;
  if (b != nullptr) {
    double widest = 0;
    for (int64_t c = 0; c < f; ++c) widest = std::max(widest, std::fabs(b[c]) / (sd_eff * kBiasLimit));
    for (int64_t c = 0; c < f; ++c) {
      double need = channel_wise ? std::fabs(b[c]) / (sd_eff * kBiasLimit) : widest;
      q.step[c] = std::max(q.step[c], need);
    }
  }
  for (auto& s : q.step)
    if (!(s > 0)) s = 1.0;  // all-zero weights (and bias): any step gives zeros
  q.w.resize(static_cast<size_t>(f * per));
  for (int64_t c = 0; c < f; ++c)
    for (int64_t k = 0; k < per; ++k)
      q.w[c * per + k] = sd > 0 ? quant::Saturate<int8_t>(std::max(-127.0, std::min(127.0, w[c * per + k] / q.step[c])))
                                : int8_t{0};
  if (b != nullptr) {
    q.bias.resize(static_cast<size_t>(f));
    for (int64_t c = 0; c < f; ++c) q.bias[c] = quant::Saturate<int32_t>(b[c] / (sd_eff * q.step[c]));
  }
  return q;
}

// Quantized weights kept between calls, by the state of the arrays they are made from (the
// call's input versions, TInputVersions), the data's step (the bias depends on it) and
// `recipe`, every setting of the node that `make` reads besides the arrays (granularity,
// BatchNorm's eps and fix_gamma), so two nodes sharing arrays but folding them differently
// never share weights. MXNet keeps them until the weight's version changes. Without
// versions (a compute function called directly) they are made at every call.
// The node declares the BatchNorm's moving statistics written (`mutated`, the inner
// BatchNorm's FMutateInputs, which makes them auxiliary states as in MXNet), so the engine
// counts one write to them at the end of every call, its own: an entry holds for those
// arrays the count the call leaves them at, and the next call finds it there unless
// something else wrote them since (a node folding them at every call, inside an executor
// as eagerly, would spend a ResNet-50 inference's third requantizing its weights).
struct KeptWeights {
  std::vector<std::weak_ptr<const void>> arrays;
  std::vector<uint64_t> writes;
  double sd = 0;
  std::string recipe;
  std::shared_ptr<const Int8Weights> q;
};

template <typename Make>
std::shared_ptr<const Int8Weights> KeptOrMade(const std::vector<size_t>& inputs, const std::vector<int>& mutated,
                                              double sd, const std::string& recipe, Make&& make) {
  const auto& v = CallInputVersions();
  std::vector<std::shared_ptr<const void>> owners;
  for (size_t i : inputs) {
    if (i >= v.size()) return std::make_shared<const Int8Weights>(make());
    owners.push_back(v[i].array.lock());
    if (!owners.back()) return std::make_shared<const Int8Weights>(make());
  }
  // The count each array is left at when this call ends.
  std::vector<uint64_t> after;
  for (size_t i : inputs)
    after.push_back(v[i].writes +
                    (std::find(mutated.begin(), mutated.end(), static_cast<int>(i)) != mutated.end() ? 1 : 0));
  static std::mutex mu;
  static std::vector<KeptWeights> kept;
  auto same = [&](const KeptWeights& k, bool writes) {
    for (size_t j = 0; j < inputs.size(); ++j)
      if (k.arrays[j].lock() != owners[j] || (writes && k.writes[j] != v[inputs[j]].writes)) return false;
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& k : kept)
      if (k.sd == sd && k.recipe == recipe && k.arrays.size() == inputs.size() && same(k, true)) {
        k.writes = after;
        return k.q;
      }
  }
  KeptWeights made;
  made.arrays.assign(owners.begin(), owners.end());
  made.writes = after;
  made.sd = sd;
  made.recipe = recipe;
  made.q = std::make_shared<const Int8Weights>(make());
  std::lock_guard<std::mutex> lock(mu);
  // Entries of arrays that are gone, or of these arrays in an earlier state, go.
  kept.erase(std::remove_if(kept.begin(), kept.end(),
                            [&](const KeptWeights& k) {
                              for (const auto& a : k.arrays)
                                if (a.expired()) return true;
                              return k.arrays.size() == inputs.size() && k.recipe == recipe && same(k, false);
                            }),
             kept.end());
  kept.push_back(made);
  return made.q;
}

// The version to give RunInt8 for kept weights: they never change while they live.
InputVersion VersionOf(const std::shared_ptr<const Int8Weights>& q) {
  InputVersion v;
  v.array = std::shared_ptr<const void>(q, q.get());
  return v;
}

// Where an int8 node's product goes and what becomes of it.
struct OutPlan {
  DType type = DType::kInt32;
  double step = 1;          // the output's step (1 for float32)
  quant::Range range;       // written to outputs 1, 2
  bool fused = false;       // the epilogue does all (else: float32 first, then FinishInFloat)
};

// The output of an int8 product with accumulator steps `acc` (per output channel): float
// output, the calibrated 8-bit range, or int32 in the (widest) accumulator step.
OutPlan PlanOutput(DType type, const std::optional<double>& lo, const std::optional<double>& hi,
                   const std::vector<double>& acc) {
  OutPlan o;
  o.type = type;
  if (type == DType::kFloat32) return o;
  if (type == DType::kInt32) {
    o.step = *std::max_element(acc.begin(), acc.end());
    o.range = {static_cast<float>(-o.step * quant::kInt32Levels), static_cast<float>(o.step * quant::kInt32Levels)};
    return o;
  }
  const double r = std::max(std::fabs(*lo), std::fabs(*hi));
  o.range = type == DType::kUint8 ? quant::Range{0.0f, static_cast<float>(r)}
                                  : quant::Range{static_cast<float>(-r), static_cast<float>(r)};
  o.step = quant::Step(type, o.range.lo, o.range.hi);
  return o;
}

// The epilogue that scales each channel's accumulator (step acc[c]) to the output step.
quant::Epilogue ScaleTo(DType out, const std::vector<double>& acc, double out_step) {
  quant::Epilogue e;
  e.out = out;
  bool same = true;
  for (double a : acc) same = same && a == acc[0];
  if (same) {
    // One scale for all (with int32 out, none: the accumulators as they are).
    if (out != DType::kInt32) e.scale = out_step > 0 ? static_cast<float>(acc[0] / out_step) : 0.0f;
    return e;
  }
  for (double a : acc) e.scales.push_back(out_step > 0 ? static_cast<float>(a / out_step) : 0.0f);
  return e;
}

// Runs an inner activation node on the float32 values x (shape s), into y.
void RunAct(const NodeAttrs& attrs, const Inner::Node& n, const OpContext& ctx, const TBlob& x, const TBlob& y) {
  static const auto& fcompute = Op::GetAttr<FCompute>("FCompute<cpu>");
  static const auto& resources = Op::GetAttr<FResourceRequest>("FResourceRequest");
  if (n.in.size() != 1 || n.num_outputs < 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected its inner '", n.attrs.name,
          "' to be an activation of one input");
  OpContext ictx;
  ictx.is_train = false;
  ictx.run_ctx = ctx.run_ctx;
  if (resources.Contains(n.op))
    for (size_t r = 0; r < resources[n.op](n.attrs).size(); ++r) ictx.requested.push_back(ctx.requested.at(0));
  std::vector<TBlob> outs{y};
  std::vector<NDArray> extra;
  for (int k = 1; k < n.num_outputs; ++k) {
    extra.emplace_back(x.shape, ctx.run_ctx.ctx, DType::kFloat32);
    outs.push_back(extra.back().data());
  }
  fcompute[n.op](n.attrs, ictx, {x}, std::vector<OpReq>(outs.size(), OpReq::kWriteTo), outs);
}

// Writes float32 values v (n of them) to `out` of plan o's type, rounded and saturated.
void WriteFromFloat(const float* v, int64_t n, const OutPlan& o, void* out) {
  const double inv = o.step > 0 ? 1.0 / o.step : 0.0;
  switch (o.type) {
    case DType::kFloat32: std::memcpy(out, v, static_cast<size_t>(n) * sizeof(float)); break;
    case DType::kInt8:
      for (int64_t i = 0; i < n; ++i) static_cast<int8_t*>(out)[i] = quant::Saturate<int8_t>(v[i] * inv);
      break;
    case DType::kUint8:
      for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(out)[i] = quant::Saturate<uint8_t>(v[i] * inv);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) static_cast<int32_t*>(out)[i] = quant::Saturate<int32_t>(v[i] * inv);
  }
}

// The real values of the activations, sum and activations after it, applied to the
// layer's float32 result y (shape s), then written to out per o.
void FinishInFloat(const NodeAttrs& attrs, const Parts& p, const OpContext& ctx, NDArray* y, const TBlob* sum,
                   double sum_step, const OutPlan& o, void* out) {
  NDArray other(y->shape(), ctx.run_ctx.ctx, DType::kFloat32);
  auto acts = [&](const std::vector<const Inner::Node*>& list) {
    for (const Inner::Node* n : list) {
      RunAct(attrs, *n, ctx, y->data(), other.data());
      std::swap(*y, other);
    }
  };
  acts(p.before_sum);
  float* v = y->data().ptr<float>();
  const int64_t n = y->shape().Size();
  if (sum != nullptr) {
    if (sum->dtype == DType::kInt8)
      for (int64_t i = 0; i < n; ++i) v[i] += static_cast<float>(sum->ptr<int8_t>()[i] * sum_step);
    else
      for (int64_t i = 0; i < n; ++i) v[i] += static_cast<float>(sum->ptr<uint8_t>()[i] * sum_step);
  }
  acts(p.after_sum);
  WriteFromFloat(y->data().ptr<float>(), n, o, out);
}

// The layouts an executor gives an int8 convolution's values (Int8ChannelsLast): its data,
// its output, its sum are (n, h, w, c) when these attributes say so.
constexpr const char* kDataLast = "__weft_int8_data_nhwc__";
constexpr const char* kOutLast = "__weft_int8_out_nhwc__";
constexpr const char* kSumLast = "__weft_int8_sum_nhwc__";

bool HasFlag(const NodeAttrs& attrs, const char* key) {
  for (const auto& kv : attrs.dict)
    if (kv.first == key) return kv.second == "1";
  return false;
}

// Copies n images of c channels and `inner` positions of `es`-byte values between
// (n, c, inner) and (n, inner, c): to_last picks the direction.
void SwapChannels(const void* from, void* to, int64_t n, int64_t c, int64_t inner, size_t es, bool to_last) {
  const char* f = static_cast<const char*>(from);
  char* t = static_cast<char*>(to);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t plain = (i * c + ch) * inner + k, last = (i * inner + k) * c + ch;
        std::memcpy(t + (to_last ? last : plain) * es, f + (to_last ? plain : last) * es, es);
      }
}

void RunConvProduct(const ConvGeom& g, DType src, const void* x, const std::shared_ptr<const Int8Weights>& kept,
                    const quant::Epilogue& e, const void* sum, void* y, const OpContext& ctx, bool data_last = false,
                    bool out_last = false, bool sum_last = false) {
  const Int8Weights& q = *kept;
  const int32_t* b = q.bias.empty() ? nullptr : q.bias.data();
  sum_last = sum_last && e.sum;
  if (data_last || out_last || sum_last) {
    auto plan = quant::Int8ConvPlan(g, src, b != nullptr, e, false, data_last, out_last, sum_last);
    if (plan) {
      char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(quant::Int8TempBytes(*plan)));
      const InputVersion v = VersionOf(kept);
      quant::RunInt8(*plan, x, q.w.data(), b, sum, y, temp, &v);
      return;
    }
    // No oneDNN plan for these layouts (weights split without VNNI, a geometry oneDNN
    // refuses): the values in the plain layout, through the plain path.
    const Context host = ctx.run_ctx.ctx;
    const int64_t in_inner = g.InSize(), out_inner = g.OutSize();
    NDArray xs(Shape({g.n * g.c * in_inner}), host, src), ys(Shape({g.n * g.f * out_inner}), host, e.out);
    NDArray ss(Shape({e.sum ? g.n * g.f * out_inner : 1}), host, e.sum_type);
    const void* xp = x;
    if (data_last) {
      SwapChannels(x, xs.data().dptr, g.n, g.c, in_inner, DTypeSize(src), false);
      xp = xs.data().dptr;
    }
    const void* sp = sum;
    if (sum_last) {
      SwapChannels(sum, ss.data().dptr, g.n, g.f, out_inner, DTypeSize(e.sum_type), false);
      sp = ss.data().dptr;
    }
    RunConvProduct(g, src, xp, kept, e, sp, out_last ? ys.data().dptr : y, ctx);
    if (out_last) SwapChannels(ys.data().dptr, y, g.n, g.f, out_inner, DTypeSize(e.out), true);
    return;
  }
  auto plan = quant::Int8ConvPlan(g, src, b != nullptr, e);
  if (plan) {
    char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(quant::Int8TempBytes(*plan)));
    const InputVersion v = VersionOf(kept);
    quant::RunInt8(*plan, x, q.w.data(), b, sum, y, temp, &v);
  } else {
    quant::ReferenceConv(g, src, x, q.w.data(), b, e, sum, y);
  }
}

// `w_version`: the weights' version when they are kept (null: weights of this call only).
void RunFcProduct(int64_t m, int64_t k, int64_t n, DType src, const void* x, const int8_t* w, const int32_t* b,
                  const quant::Epilogue& e, void* y, const OpContext& ctx, const InputVersion* w_version = nullptr) {
  auto plan = quant::Int8FcPlan(m, k, n, src, b != nullptr, e);
  if (plan) {
    char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(quant::Int8TempBytes(*plan)));
    quant::RunInt8(*plan, x, w, b, nullptr, y, temp, w_version);
  } else {
    quant::ReferenceFc(m, k, n, src, x, w, b, e, nullptr, y);
  }
}

void CheckWriteReq(const NodeAttrs& attrs, const std::vector<OpReq>& req) {
  if (!req.empty() && req[0] == OpReq::kAddTo)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': accumulating into the output (req 'add') is not supported");
}

void WriteRange(const std::vector<OpReq>& req, const std::vector<TBlob>& out, const OutPlan& o) {
  if (out.size() != 3) return;
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = o.range.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = o.range.hi;
}

// The input a float32 parameter must be.
const float* FloatInput(const NodeAttrs& attrs, const std::vector<TBlob>& in, size_t i) {
  if (in[i].dtype != DType::kFloat32)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': int8 form: input ", i, " must be float32, got ",
          DTypeName(in[i].dtype));
  return in[i].ptr<float>();
}

// ---- the int8 convolution
// Inputs: data, weight, [bias], [gamma, beta, mean, var], [sum], data_min, data_max,
// [sum_min, sum_max] (the subgraph's num_vars first).
void Int8ConvCompute(const NodeAttrs& attrs, const Inner& g, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& sp = attrs.Params<SgConvParam>();
  CheckWriteReq(attrs, req);
  const Parts p = PartsOf(attrs, g, "Convolution");
  const auto& cp = p.main->attrs.Params<ConvolutionParam>();
  if (cp.layout != "None" && cp.layout != "NCW" && cp.layout != "NCHW" && cp.layout != "NCDHW")
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "': the int8 form takes channels-first layouts, got ",
          cp.layout);
  const size_t nv = static_cast<size_t>(g.num_vars);
  const bool bias = !cp.no_bias;
  const size_t bn_at = bias ? 3 : 2, sum_at = nv - 1;
  const TBlob& data = in[0];
  const double sd = DataStep(in[nv], in[nv + 1], data.dtype);
  ConvGeom geom = ConvolutionGeom(attrs.op->name, cp, data.shape);
  const int64_t f = geom.f, per = in[1].Size() / std::max<int64_t>(f, 1);
  const bool calibrated = sp.min_calib_range.has_value();
  const bool data_last = HasFlag(attrs, kDataLast), out_last = HasFlag(attrs, kOutLast),
             sum_last = HasFlag(attrs, kSumLast);
  if ((data_last || out_last || sum_last) && geom.nd != 2)
    Throw(ErrorKind::kInternal, "Operator '", attrs.op->name, "': channels-last values are 2-D only");
  auto make = [&]() {
    std::vector<float> w(FloatInput(attrs, in, 1), FloatInput(attrs, in, 1) + in[1].Size());
    std::vector<float> b;
    if (bias) b.assign(FloatInput(attrs, in, 2), FloatInput(attrs, in, 2) + f);
    if (p.bn != nullptr) {
      // BatchNorm's moving statistics folded into the weights and bias, as MXNet does.
      const auto& bp = p.bn->attrs.Params<BatchNormParam>();
      const float *gamma = FloatInput(attrs, in, bn_at), *beta = FloatInput(attrs, in, bn_at + 1),
                  *mean = FloatInput(attrs, in, bn_at + 2), *var = FloatInput(attrs, in, bn_at + 3);
      if (b.empty()) b.assign(static_cast<size_t>(f), 0.0f);
      for (int64_t c = 0; c < f; ++c) {
        const float alpha = static_cast<float>((bp.fix_gamma ? 1.0f : gamma[c]) / std::sqrt(var[c] + bp.eps));
        for (int64_t k = 0; k < per; ++k) w[c * per + k] *= alpha;
        b[c] = beta[c] + alpha * (b[c] - mean[c]);
      }
    }
    return QuantizeWeights(w.data(), f, per, b.empty() ? nullptr : b.data(), sd, calibrated);
  };
  std::vector<size_t> params{1};
  if (bias) params.push_back(2);
  if (p.bn != nullptr)
    for (size_t k = 0; k < 4; ++k) params.push_back(bn_at + k);
  std::string recipe = calibrated ? "conv per channel" : "conv per tensor";
  if (p.bn != nullptr) {
    const auto& bp = p.bn->attrs.Params<BatchNormParam>();
    char fold[64];
    std::snprintf(fold, sizeof(fold), " bn eps %.17g fix_gamma %d", static_cast<double>(bp.eps), bp.fix_gamma ? 1 : 0);
    recipe += fold;
  }
  const auto kept = KeptOrMade(params, g.mutated, sd, recipe, make);
  const Int8Weights& q = *kept;
  const std::vector<double> acc = q.AccSteps();
  const DType ot = out[0].dtype;
  OutPlan o = PlanOutput(ot, sp.min_calib_range, sp.max_calib_range, acc);
  const TBlob* sum = sp.with_sum ? &in[sum_at] : nullptr;
  const double sum_step = sum ? DataStep(in[nv + 2], in[nv + 3], sum->dtype) : 0.0;
  const bool relu_only = (p.before_sum.empty() || (!p.sum && p.before_sum.size() == 1 && IsAct(*p.before_sum[0], "relu"))) &&
                         (p.after_sum.empty() || (p.after_sum.size() == 1 && IsAct(*p.after_sum[0], "relu")));
  if (req[0] != OpReq::kNullOp && geom.n > 0) {
    if (relu_only) {
      quant::Epilogue e = ScaleTo(ot, acc, o.step);
      e.relu = !p.before_sum.empty() || !p.after_sum.empty();
      if (sum != nullptr) {
        e.sum = true;
        e.sum_type = sum->dtype;
        e.sum_scale = o.step > 0 ? static_cast<float>(sum_step / o.step) : 0.0f;
      }
      RunConvProduct(geom, data.dtype, data.dptr, kept, e, sum ? sum->dptr : nullptr, out[0].dptr, ctx, data_last,
                     out_last, sum_last);
    } else {
      // The activations and the sum after the product go value by value, in the output's
      // layout: a sum in the other one is moved to it first.
      NDArray y(out[0].shape, ctx.run_ctx.ctx, DType::kFloat32);
      RunConvProduct(geom, data.dtype, data.dptr, kept, ScaleTo(DType::kFloat32, acc, 1.0), nullptr, y.data().dptr,
                     ctx, data_last, out_last);
      NDArray moved;
      TBlob sum_blob;
      if (sum != nullptr && sum_last != out_last) {
        moved = NDArray(sum->shape, ctx.run_ctx.ctx, sum->dtype);
        SwapChannels(sum->dptr, moved.data().dptr, geom.n, geom.f, geom.OutSize(), DTypeSize(sum->dtype), out_last);
        sum_blob = moved.data();
        sum = &sum_blob;
      }
      FinishInFloat(attrs, p, ctx, &y, sum, sum_step, o, out[0].dptr);
    }
  }
  WriteRange(req, out, o);
}

// ---- the int8 fully connected layer
// Inputs: data, weight, [bias], min_data, max_data, then (not channel-wise) min_weight,
// max_weight, [min_bias, max_bias]. The weight and bias are int8 with those ranges, or
// with channel_wise_quantize float32, quantized here per output unit.
bool ChannelWiseFC(const SgFCParam& p) {
  const std::string& cw = p.channel_wise_quantize;
  return cw == "True" || cw == "true" || cw == "1";
}

void Int8FCCompute(const NodeAttrs& attrs, const Inner& g, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& sp = attrs.Params<SgFCParam>();
  CheckWriteReq(attrs, req);
  const Parts p = PartsOf(attrs, g, "FullyConnected");
  const auto& fp = p.main->attrs.Params<FullyConnectedParam>();
  const bool bias = !fp.no_bias, cw = ChannelWiseFC(sp);
  const size_t nv = static_cast<size_t>(g.num_vars);
  const TBlob& data = in[0];
  const double sd = DataStep(in[nv], in[nv + 1], data.dtype);
  const int64_t n = fp.num_hidden;
  const Shape& ds = data.shape;
  const int64_t rows = fp.flatten ? ds[0] : ds.Size() / std::max<int64_t>(ds[ds.ndim() - 1], 1);
  const int64_t k = rows > 0 ? ds.Size() / rows : in[1].Size() / std::max<int64_t>(n, 1);
  const bool calibrated = sp.min_calib_range.has_value();
  if (cw && !calibrated && !sp.enable_float_output)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': channel_wise_quantize needs min_calib_range/max_calib_range or enable_float_output (as MXNet's)");
  if (!cw && (in[1].dtype != DType::kInt8 || (bias && in[2].dtype != DType::kInt8)))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': the weight and bias must be int8 (with their ranges)");
  const size_t r = nv + 2;
  auto make = [&]() {
    if (cw) return QuantizeWeights(FloatInput(attrs, in, 1), n, k, bias ? FloatInput(attrs, in, 2) : nullptr, sd, true);
    // int8 weights and bias with their ranges: their real values, quantized again with the
    // weight's own step (giving back the same integers unless the bias needs a wider step).
    const double sw = DataStep(in[r], in[r + 1], DType::kInt8);
    std::vector<float> w(static_cast<size_t>(n * k)), b;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(in[1].ptr<int8_t>()[i] * sw);
    if (bias) {
      const double sb = DataStep(in[r + 2], in[r + 3], DType::kInt8);
      b.resize(static_cast<size_t>(n));
      for (int64_t c = 0; c < n; ++c) b[c] = static_cast<float>(in[2].ptr<int8_t>()[c] * sb);
    }
    return QuantizeWeights(w.data(), n, k, bias ? b.data() : nullptr, sd, false, sw);
  };
  // The arrays the weights come from: weight and bias, and their ranges when given.
  std::vector<size_t> params{1};
  if (bias) params.push_back(2);
  if (!cw)
    for (size_t j = r; j < in.size(); ++j) params.push_back(j);
  const auto kept = KeptOrMade(params, g.mutated, sd, cw ? "fc per channel" : "fc per tensor", make);
  const Int8Weights& q = *kept;
  const InputVersion wv = VersionOf(kept);
  const std::vector<double> acc = q.AccSteps();
  const DType ot = out[0].dtype;
  OutPlan o = PlanOutput(ot, sp.min_calib_range, sp.max_calib_range, acc);
  const int32_t* b = q.bias.empty() ? nullptr : q.bias.data();
  const bool relu_only = p.before_sum.empty() || (p.before_sum.size() == 1 && IsAct(*p.before_sum[0], "relu"));
  if (req[0] != OpReq::kNullOp && rows > 0) {
    if (relu_only) {
      quant::Epilogue e = ScaleTo(ot, acc, ot == DType::kFloat32 ? 1.0 : o.step);
      e.relu = !p.before_sum.empty();
      RunFcProduct(rows, k, n, data.dtype, data.dptr, q.w.data(), b, e, out[0].dptr, ctx, &wv);
    } else {
      NDArray y(out[0].shape, ctx.run_ctx.ctx, DType::kFloat32);
      RunFcProduct(rows, k, n, data.dtype, data.dptr, q.w.data(), b, ScaleTo(DType::kFloat32, acc, 1.0),
                   y.data().dptr, ctx, &wv);
      FinishInFloat(attrs, p, ctx, &y, nullptr, 0.0, o, out[0].dptr);
    }
  }
  WriteRange(req, out, o);
}

// Shapes of an int8 conv / FC node: the subgraph's for its first inputs, (1,) for ranges.
template <typename P>
bool Int8SubgraphShape(const NodeAttrs& attrs, const Inner& g, std::vector<Shape>* in, std::vector<Shape>* out) {
  const size_t nv = static_cast<size_t>(g.num_vars);
  std::vector<Shape> base(in->begin(), in->begin() + nv), bout{(*out)[0]};
  bool done = InnerShape(attrs, g, &base, &bout);
  std::copy(base.begin(), base.end(), in->begin());
  (*out)[0] = bout[0];
  RangeIO(attrs, in, out, nv);
  return done;
}

bool Int8ConvType(const NodeAttrs& attrs, const Inner& g, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& sp = attrs.Params<SgConvParam>();
  CheckCalibPair(attrs, sp.min_calib_range, sp.max_calib_range, false);
  const size_t nv = static_cast<size_t>(g.num_vars);
  quant::CheckQuantized(attrs, *in, 0);
  if (sp.with_sum) quant::CheckQuantized(attrs, *in, nv - 1);
  // The float parameters from the float subgraph, with the quantized values seen as float32.
  std::vector<DType> base(in->begin(), in->begin() + nv), bout{DType::kUnknown};
  base[0] = DType::kFloat32;
  if (sp.with_sum) base[nv - 1] = DType::kFloat32;
  bool done = InnerType(g, &base, &bout);
  for (size_t i = 1; i < nv - (sp.with_sum ? 1 : 0); ++i) AssignType(attrs, in, i, base[i], "input");
  RangeIOTypes(attrs, in, out, nv);
  const Parts p = PartsOf(attrs, g, "Convolution");
  AssignType(attrs, out, 0, Int8OutType(false, sp.min_calib_range, OutputUint8(p, false)), "output");
  return done && (*in)[0] != DType::kUnknown && (!sp.with_sum || (*in)[nv - 1] != DType::kUnknown);
}

bool Int8FCType(const NodeAttrs& attrs, const Inner& g, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& sp = attrs.Params<SgFCParam>();
  CheckCalibPair(attrs, sp.min_calib_range, sp.max_calib_range, sp.enable_float_output);
  const size_t nv = static_cast<size_t>(g.num_vars);
  quant::CheckQuantized(attrs, *in, 0);
  for (size_t i = 1; i < nv; ++i) AssignType(attrs, in, i, ChannelWiseFC(sp) ? DType::kFloat32 : DType::kInt8, "input");
  RangeIOTypes(attrs, in, out, nv);
  const Parts p = PartsOf(attrs, g, "FullyConnected");
  AssignType(attrs, out, 0, Int8OutType(sp.enable_float_output, sp.min_calib_range, OutputUint8(p, true)), "output");
  return (*in)[0] != DType::kUnknown;
}

// ---- the int8 self-attention products
// selfatt_qk: qkv (seq, batch, heads * 3 * d) int8; for each batch and head, queries times
// keys over sqrt(d): (batch * heads, seq, seq). selfatt_valatt: attention (batch * heads,
// seq, seq) uint8 or int8 times the values: (seq, batch, heads * d).
struct AttGeom {
  int64_t seq = 0, batch = 0, heads = 0, d = 0;
};

// For qk (`floor_dim`) the last axis need not divide: as _contrib_interleaved_matmul_selfatt_qk
// (and MXNet) do, d = floor(floor(last / 3) / heads) and Gather's strides, which come from d,
// read the input's first seq*batch*heads*3*d elements laid out (seq, batch, heads*3*d).
AttGeom AttOf(const NodeAttrs& attrs, const Shape& qkv, bool floor_dim) {
  AttGeom a;
  a.heads = attrs.Params<SgSelfAttParam>().heads;
  const bool ok = qkv.ndim() == 3 && (floor_dim ? qkv[2] >= 3 * a.heads : qkv[2] % (3 * a.heads) == 0);
  if (!ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected queries_keys_values (seq, batch, heads * 3 * dim), got ", qkv.ToString());
  a.seq = qkv[0];
  a.batch = qkv[1];
  a.d = qkv[2] / 3 / a.heads;
  return a;
}

// Copies part `which` (0 queries, 1 keys, 2 values) of head h, batch b as (seq, d) rows,
// or with `transpose` as (d, seq).
void Gather(const int8_t* qkv, const AttGeom& a, int64_t b, int64_t h, int which, bool transpose, int8_t* dst) {
  const int64_t lead = a.batch * a.heads * 3 * a.d;
  const int8_t* base = qkv + b * a.heads * 3 * a.d + h * 3 * a.d + which * a.d;
  for (int64_t i = 0; i < a.seq; ++i)
    for (int64_t j = 0; j < a.d; ++j) {
      int8_t v = base[i * lead + j];
      if (transpose) dst[j * a.seq + i] = v;
      else dst[i * a.d + j] = v;
    }
}

template <int kInputs>
void Int8SelfAttCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& sp = attrs.Params<SgSelfAttParam>();
  CheckWriteReq(attrs, req);
  const AttGeom a = AttOf(attrs, in[0].shape, kInputs == 1);
  const int8_t* qkv = in[0].ptr<int8_t>();
  const double sq = DataStep(in[kInputs], in[kInputs + 1], DType::kInt8);
  const DType ot = out[0].dtype;
  const size_t osize = DTypeSize(ot);
  if (kInputs == 1) {
    // Queries times keys, each product's step sq * sq, over sqrt(d).
    const std::vector<double> acc{sq * sq / std::sqrt(static_cast<double>(a.d))};
    OutPlan o = PlanOutput(ot, sp.min_calib_range, sp.max_calib_range, acc);
    const quant::Epilogue e = ScaleTo(ot, acc, ot == DType::kFloat32 ? 1.0 : o.step);
    std::vector<int8_t> qm(static_cast<size_t>(a.seq * a.d)), km(qm.size());
    if (req[0] != OpReq::kNullOp)
      for (int64_t b = 0; b < a.batch; ++b)
        for (int64_t h = 0; h < a.heads; ++h) {
          Gather(qkv, a, b, h, 0, false, qm.data());
          Gather(qkv, a, b, h, 1, false, km.data());
          char* y = static_cast<char*>(out[0].dptr) + (b * a.heads + h) * a.seq * a.seq * osize;
          RunFcProduct(a.seq, a.d, a.seq, DType::kInt8, qm.data(), km.data(), nullptr, e, y, ctx);
        }
    WriteRange(req, out, o);
    return;
  }
  // The attention weights times the values.
  const TBlob& att = in[1];
  const double sa = DataStep(in[4], in[5], att.dtype);
  const std::vector<double> acc{sq * sa};
  OutPlan o = PlanOutput(ot, sp.min_calib_range, sp.max_calib_range, acc);
  const quant::Epilogue e = ScaleTo(ot, acc, ot == DType::kFloat32 ? 1.0 : o.step);
  std::vector<int8_t> vt(static_cast<size_t>(a.d * a.seq));
  std::vector<char> y(static_cast<size_t>(a.seq * a.d) * osize);
  const size_t att_size = DTypeSize(att.dtype);
  if (req[0] != OpReq::kNullOp)
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.heads; ++h) {
        Gather(qkv, a, b, h, 2, true, vt.data());
        const char* x = static_cast<const char*>(att.dptr) + (b * a.heads + h) * a.seq * a.seq * att_size;
        RunFcProduct(a.seq, a.seq, a.d, att.dtype, x, vt.data(), nullptr, e, y.data(), ctx);
        // Row i of this head goes to out[i, b, h * d : (h + 1) * d].
        char* dst = static_cast<char*>(out[0].dptr);
        for (int64_t i = 0; i < a.seq; ++i)
          std::memcpy(dst + ((i * a.batch + b) * a.heads * a.d + h * a.d) * osize, y.data() + i * a.d * osize,
                      static_cast<size_t>(a.d) * osize);
      }
  WriteRange(req, out, o);
}

// The attributes the two subgraph-running operators share, for their parameter struct P.

template <typename P>
std::vector<int> SubgraphMutates(const NodeAttrs& attrs) {
  return InnerOf<P>(attrs)->mutated;
}

template <typename P>
bool SubgraphShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (attrs.Params<P>().quantized) return Int8SubgraphShape<P>(attrs, *InnerOf<P>(attrs), in, out);
  return InnerShape(attrs, *InnerOf<P>(attrs), in, out);
}

template <typename P>
bool SubgraphType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if (attrs.Params<P>().quantized) {
    if constexpr (std::is_same_v<P, SgConvParam>) return Int8ConvType(attrs, *InnerOf<P>(attrs), in, out);
    else return Int8FCType(attrs, *InnerOf<P>(attrs), in, out);
  }
  return InnerType(*InnerOf<P>(attrs), in, out);
}

template <typename P>
void SubgraphCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (attrs.Params<P>().quantized) {
    if constexpr (std::is_same_v<P, SgConvParam>) Int8ConvCompute(attrs, *InnerOf<P>(attrs), ctx, in, req, out);
    else Int8FCCompute(attrs, *InnerOf<P>(attrs), ctx, in, req, out);
    return;
  }
  RunInner(attrs, *InnerOf<P>(attrs), ctx, in, req, out);
}

// A quantized node also outputs its range, unless it writes float32.
std::vector<std::string> OutputNames(bool with_range) {
  if (with_range) return {"output", "min_output", "max_output"};
  return {"output"};
}

std::vector<std::string> SgConvOutputNames(const NodeAttrs& attrs) {
  return OutputNames(attrs.Params<SgConvParam>().quantized);
}

std::vector<std::string> SgFCOutputNames(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<SgFCParam>();
  return OutputNames(p.quantized && !p.enable_float_output);
}

std::vector<std::string> SgSelfAttOutputNames(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<SgSelfAttParam>();
  return OutputNames(p.quantized && !p.enable_float_output);
}

bool HasBias(const Inner& g, const char* main_op) {
  for (const auto& n : g.nodes)
    if (n.op != nullptr && n.op->name == main_op && n.in.size() == 3) return true;
  return false;
}

// MXNet's input names: data, weight, bias (unless the inner layer has no_bias), the
// BatchNorm's gamma, beta, mean, var, then the sum operand.
std::vector<std::string> SgConvInputNames(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<SgConvParam>();
  auto g = InnerOf<SgConvParam>(attrs);
  CheckFusion(attrs, *g, "Convolution", p.with_bn);
  std::vector<std::string> names{"data", "weight"};
  if (HasBias(*g, "Convolution")) names.push_back("bias");
  if (p.with_bn)
    for (const char* s : {"gamma", "beta", "mean", "var"}) names.push_back(s);
  if (p.with_sum) names.push_back("sum");
  if (static_cast<int>(names.size()) != g->num_vars)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected its subgraph to read ", names.size(),
          " inputs for its flags, got ", g->num_vars);
  if (p.quantized)
    for (const char* s : {"data_min", "data_max"}) names.push_back(s);
  if (p.quantized && p.with_sum)
    for (const char* s : {"sum_min", "sum_max"}) names.push_back(s);
  return names;
}

std::vector<std::string> SgFCInputNames(const NodeAttrs& attrs) {
  auto g = InnerOf<SgFCParam>(attrs);
  CheckFusion(attrs, *g, "FullyConnected", false);
  const auto& p = attrs.Params<SgFCParam>();
  const bool bias = HasBias(*g, "FullyConnected");
  std::vector<std::string> names{"data", "weight"};
  if (bias) names.push_back("bias");
  for (int k = static_cast<int>(names.size()); k < g->num_vars; ++k) names.push_back("arg" + std::to_string(k));
  if (p.quantized) {
    for (const char* s : {"min_data", "max_data"}) names.push_back(s);
    const std::string& cw = p.channel_wise_quantize;
    if (!(cw == "True" || cw == "true" || cw == "1")) {
      for (const char* s : {"min_weight", "max_weight"}) names.push_back(s);
      if (bias)
        for (const char* s : {"min_bias", "max_bias"}) names.push_back(s);
    }
  }
  return names;
}

// ------------------------------------------------------------------ self-attention
template <int kInputs>
NodeAttrs AsInterleaved(const NodeAttrs& attrs) {
  const char* target = kInputs == 1 ? "_contrib_interleaved_matmul_selfatt_qk" : "_contrib_interleaved_matmul_selfatt_valatt";
  NodeAttrs t = MakeAttrs(Op::Get(target), {{"heads", std::to_string(attrs.Params<SgSelfAttParam>().heads)}});
  t.name = attrs.name;
  return t;
}

template <int kInputs>
std::vector<std::string> SelfAttInputNames(const NodeAttrs& attrs) {
  std::vector<std::string> names{"queries_keys_values"};
  if (kInputs == 2) names.push_back("attention");
  if (attrs.Params<SgSelfAttParam>().quantized) {
    for (const char* s : {"min_qkv", "max_qkv"}) names.push_back(s);
    if (kInputs == 2)
      for (const char* s : {"min_attention", "max_attention"}) names.push_back(s);
  }
  return names;
}

template <int kInputs>
bool SelfAttShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  NodeAttrs t = AsInterleaved<kInputs>(attrs);
  static const auto& fns = Op::GetAttr<FInferShape>("FInferShape");
  if (!attrs.Params<SgSelfAttParam>().quantized) return fns[t.op](t, in, out);
  std::vector<Shape> base(in->begin(), in->begin() + kInputs), bout{(*out)[0]};
  bool done = fns[t.op](t, &base, &bout);
  std::copy(base.begin(), base.end(), in->begin());
  (*out)[0] = bout[0];
  RangeIO(attrs, in, out, kInputs);
  return done;
}

template <int kInputs>
bool SelfAttType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  NodeAttrs t = AsInterleaved<kInputs>(attrs);
  static const auto& fns = Op::GetAttr<FInferType>("FInferType");
  const auto& p = attrs.Params<SgSelfAttParam>();
  if (!p.quantized) return fns.Contains(t.op) ? fns[t.op](t, in, out) : SameTypeEverywhere(t, in, out);
  // MXNet's types: int8 queries, keys and values; attention uint8 (or int8); the output
  // int8 when calibrated.
  CheckCalibPair(attrs, p.min_calib_range, p.max_calib_range, p.enable_float_output);
  quant::CheckQuantized(attrs, *in, 0, true);
  if (kInputs == 2) quant::CheckQuantized(attrs, *in, 1);
  RangeIOTypes(attrs, in, out, kInputs);
  AssignType(attrs, out, 0, Int8OutType(p.enable_float_output, p.min_calib_range, false), "output");
  for (int k = 0; k < kInputs; ++k)
    if ((*in)[k] == DType::kUnknown) return false;
  return true;
}

template <int kInputs>
void SelfAttCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (attrs.Params<SgSelfAttParam>().quantized) {
    Int8SelfAttCompute<kInputs>(attrs, ctx, in, req, out);
    return;
  }
  NodeAttrs t = AsInterleaved<kInputs>(attrs);
  static const auto& fns = Op::GetAttr<FCompute>("FCompute<cpu>");
  fns[t.op](t, ctx, in, req, out);
}

}  // namespace

WEFT_REGISTER_OP(_sg_mkldnn_conv)
    .Describe("MXNet's oneDNN fused convolution (inference): a Convolution with, as its flags say, a BatchNorm "
              "(moving statistics), an activation, a residual sum and an activation after it, held as the "
              "subgraph MXNet's optimize_for('MKLDNN') made. Inputs: data, weight, bias, gamma, beta, mean, var, sum "
              "as present.")
    .SetAttr<FListNames>("FListInputNames", SgConvInputNames)
    .SetNumInputs([](const NodeAttrs& attrs) { return static_cast<int>(SgConvInputNames(attrs).size()); })
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs of the subgraph, in the order it reads them")
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(SgConvOutputNames(attrs).size()); })
    .SetParams<SgConvParam>()
    .SetAttr<bool>("TSubgraphParam", true)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FMutateInputs>("FMutateInputs", SubgraphMutates<SgConvParam>)
    .SetAttr<TInputVersions>("TInputVersions", true)
    .SetAttr<FListNames>("FListOutputNames", SgConvOutputNames)
    .SetAttr<FInferShape>("FInferShape", SubgraphShape<SgConvParam>)
    .SetAttr<FInferType>("FInferType", SubgraphType<SgConvParam>)
    .SetAttr<FCompute>("FCompute<cpu>", SubgraphCompute<SgConvParam>)
    .SetAttr<FGradient>("FGradient", InferenceOnly());

WEFT_REGISTER_OP(_sg_mkldnn_fully_connected)
    .Describe("MXNet's oneDNN fused fully connected layer (inference): a FullyConnected with the activation "
              "fused after it, held as the subgraph MXNet's optimize_for('MKLDNN') made. Inputs: data, weight, bias.")
    .SetAttr<FListNames>("FListInputNames", SgFCInputNames)
    .SetNumInputs([](const NodeAttrs& attrs) { return static_cast<int>(SgFCInputNames(attrs).size()); })
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs of the subgraph, in the order it reads them")
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(SgFCOutputNames(attrs).size()); })
    .SetParams<SgFCParam>()
    .SetAttr<bool>("TSubgraphParam", true)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FMutateInputs>("FMutateInputs", SubgraphMutates<SgFCParam>)
    .SetAttr<TInputVersions>("TInputVersions", true)
    .SetAttr<FListNames>("FListOutputNames", SgFCOutputNames)
    .SetAttr<FInferShape>("FInferShape", SubgraphShape<SgFCParam>)
    .SetAttr<FInferType>("FInferType", SubgraphType<SgFCParam>)
    .SetAttr<FCompute>("FCompute<cpu>", SubgraphCompute<SgFCParam>)
    .SetAttr<FGradient>("FGradient", InferenceOnly());

WEFT_REGISTER_OP(_sg_mkldnn_selfatt_qk)
    .Describe("MXNet's oneDNN fused self-attention scores (inference): what _contrib_interleaved_matmul_selfatt_qk "
              "computes, queries (scaled by 1/sqrt(dim)) times keys for each head: (batch*heads, seq, seq).")
    .SetNumInputs([](const NodeAttrs& attrs) { return static_cast<int>(SelfAttInputNames<1>(attrs).size()); })
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(SgSelfAttOutputNames(attrs).size()); })
    .SetAttr<FListNames>("FListInputNames", SelfAttInputNames<1>)
    .SetAttr<FListNames>("FListOutputNames", SgSelfAttOutputNames)
    .AddArgument("queries_keys_values", "NDArray-or-Symbol", "Interleaved queries, keys and values (seq, batch, heads*3*dim).")
    .SetParams<SgSelfAttParam>()
    .SetAttr<bool>("TSubgraphParam", true)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FInferShape>("FInferShape", SelfAttShape<1>)
    .SetAttr<FInferType>("FInferType", SelfAttType<1>)
    .SetAttr<FCompute>("FCompute<cpu>", SelfAttCompute<1>)
    .SetAttr<FGradient>("FGradient", InferenceOnly());

WEFT_REGISTER_OP(_sg_mkldnn_selfatt_valatt)
    .Describe("MXNet's oneDNN fused attention-weighted values (inference): what "
              "_contrib_interleaved_matmul_selfatt_valatt computes, attention times values per head: "
              "(seq, batch, heads*dim).")
    .SetNumInputs([](const NodeAttrs& attrs) { return static_cast<int>(SelfAttInputNames<2>(attrs).size()); })
    .SetNumOutputs([](const NodeAttrs& attrs) { return static_cast<int>(SgSelfAttOutputNames(attrs).size()); })
    .SetAttr<FListNames>("FListInputNames", SelfAttInputNames<2>)
    .SetAttr<FListNames>("FListOutputNames", SgSelfAttOutputNames)
    .AddArgument("queries_keys_values", "NDArray-or-Symbol", "Interleaved queries, keys and values (seq, batch, heads*3*dim).")
    .AddArgument("attention", "NDArray-or-Symbol", "Attention weights (batch*heads, seq, seq).")
    .SetParams<SgSelfAttParam>()
    .SetAttr<bool>("TSubgraphParam", true)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FInferShape>("FInferShape", SelfAttShape<2>)
    .SetAttr<FInferType>("FInferType", SelfAttType<2>)
    .SetAttr<FCompute>("FCompute<cpu>", SelfAttCompute<2>)
    .SetAttr<FGradient>("FGradient", InferenceOnly());

bool Int8ConvLayoutInputs(const NodeAttrs& attrs, int* data, int* sum) {
  if (attrs.op == nullptr || attrs.op->name != "_sg_mkldnn_conv") return false;
  const auto& sp = attrs.Params<SgConvParam>();
  if (!sp.quantized) return false;
  auto g = InnerOf<SgConvParam>(attrs);
  const auto& cp = PartsOf(attrs, *g, "Convolution").main->attrs.Params<ConvolutionParam>();
  if (cp.kernel.ndim() != 2 || (cp.layout != "None" && cp.layout != "NCHW")) return false;
  *data = 0;
  *sum = sp.with_sum ? g->num_vars - 1 : -1;
  return true;
}

NodeAttrs Int8ConvChannelsLast(const NodeAttrs& attrs, bool data_last, bool out_last, bool sum_last) {
  NodeAttrs a = attrs;
  if (data_last) a.dict.emplace_back(kDataLast, "1");
  if (out_last) a.dict.emplace_back(kOutLast, "1");
  if (sum_last) a.dict.emplace_back(kSumLast, "1");
  return a;
}

}  // namespace op
}  // namespace weft

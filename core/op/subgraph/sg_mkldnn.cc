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
// The int8 forms (quantized=True) load, with MXNet's extra range inputs and outputs, but
// are refused when shapes or types are inferred: Weft's int8 path is the
// _contrib_quantized_* operators.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

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
  s.Field("quantized", &SgConvParam::quantized).Default(false).Describe("Enable quantization (not supported).");
  CalibFields(s, &SgConvParam::min_calib_range, &SgConvParam::max_calib_range);
  s.Field("subgraph", &SgConvParam::subgraph).Default(std::string()).Describe(kSubgraphDoc);
}

WEFT_PARAM_SCHEMA(SgFCParam, s) {
  s.Field("quantized", &SgFCParam::quantized).Default(false).Describe("Whether it is a quantized FullyConnected (not supported).");
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
  s.Field("quantized", &SgSelfAttParam::quantized).Default(false).Describe("Whether it is quantized (not supported).");
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

template <typename P>
void RefuseQuantized(const NodeAttrs& attrs) {
  if (attrs.Params<P>().quantized)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': the int8 form (quantized=True) is not supported; quantize the float model with Weft "
          "(mx.contrib.quantization), which uses the _contrib_quantized_* operators");
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

// The attributes the two subgraph-running operators share, for their parameter struct P.

template <typename P>
std::vector<int> SubgraphMutates(const NodeAttrs& attrs) {
  return InnerOf<P>(attrs)->mutated;
}

template <typename P>
bool SubgraphShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  RefuseQuantized<P>(attrs);
  return InnerShape(attrs, *InnerOf<P>(attrs), in, out);
}

template <typename P>
bool SubgraphType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  RefuseQuantized<P>(attrs);
  return InnerType(*InnerOf<P>(attrs), in, out);
}

template <typename P>
void SubgraphCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  RefuseQuantized<P>(attrs);
  RunInner(attrs, *InnerOf<P>(attrs), ctx, in, req, out);
}

// A quantized node (refused when run, but listed as MXNet lists it, so its JSON loads) also
// outputs its range, unless it writes float32.
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
  RefuseQuantized<SgSelfAttParam>(attrs);
  NodeAttrs t = AsInterleaved<kInputs>(attrs);
  static const auto& fns = Op::GetAttr<FInferShape>("FInferShape");
  return fns[t.op](t, in, out);
}

template <int kInputs>
bool SelfAttType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  RefuseQuantized<SgSelfAttParam>(attrs);
  NodeAttrs t = AsInterleaved<kInputs>(attrs);
  static const auto& fns = Op::GetAttr<FInferType>("FInferType");
  return fns.Contains(t.op) ? fns[t.op](t, in, out) : SameTypeEverywhere(t, in, out);
}

template <int kInputs>
void SelfAttCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  RefuseQuantized<SgSelfAttParam>(attrs);
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
    .SetAttr<FInferShape>("FInferShape", SelfAttShape<2>)
    .SetAttr<FInferType>("FInferType", SelfAttType<2>)
    .SetAttr<FCompute>("FCompute<cpu>", SelfAttCompute<2>)
    .SetAttr<FGradient>("FGradient", InferenceOnly());

}  // namespace op
}  // namespace weft

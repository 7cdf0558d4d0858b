// Deconvolution (transposed convolution, 1-D, 2-D, 3-D, grouped) and its gradient.
//
// Inputs data (n, c, in...), weight (c, num_filter / num_group, kernel...) and, unless
// no_bias, bias (num_filter,); output (n, num_filter, out...) with
// out = stride * (in - 1) + dilate * (kernel - 1) + 1 - 2 * pad + adj. A target_shape
// replaces pad and adj by the values that give that output, as MXNet derives them.
//
// It is the convolution of the output back to the input run backwards: in the geometry
// of that convolution the output here is the convolution's input, so the forward pass is
// the convolution's data gradient and the data gradient is the convolution's forward.
// The channels-last layouts move the channel axis last in data, weight and output.
#include "core/op/nn/conv_common.h"
#include "core/op/op_util.h"
#include "core/op/work_estimate.h"

namespace weft {
namespace op {

ConvGeom DeconvolutionGeom(const NodeAttrs& attrs, const Shape& given, bool channels_last) {
  const auto& p = attrs.Params<DeconvolutionParam>();
  const std::string& op = attrs.op->name;
  WindowAxes w = ParseWindow(op, p.kernel, p.stride, &p.dilate, p.pad);
  CheckLayoutAndRank(op, p.layout, w.nd, given, channels_last);
  const Shape data = IsChannelsLast(p.layout) ? ToChannelsFirst(given) : given;
  bool targeted = false;
  if (p.target_shape.ndim() > 0) {
    if (p.target_shape.ndim() != w.nd)
      Throw(ErrorKind::kValue, "Operator '", op, "': parameter 'target_shape' ", p.target_shape.ToString(), " has ",
            p.target_shape.ndim(), " entries but kernel ", p.kernel.ToString(), " has ", w.nd);
    for (int i = 0; i < w.nd; ++i) targeted = targeted || p.target_shape[i] != 0;
  }
  int64_t adj[3] = {0, 0, 0};
  // A target_shape, as in MXNet, overrides adj: the adjustment is computed from it instead.
  if (p.adj.ndim() > 0 && !targeted) {
    if (p.adj.ndim() != w.nd)
      Throw(ErrorKind::kValue, "Operator '", op, "': parameter 'adj' ", p.adj.ToString(), " has ", p.adj.ndim(),
            " entries but kernel ", p.kernel.ToString(), " has ", w.nd);
    for (int i = 0; i < w.nd; ++i) {
      adj[i] = p.adj[i];
      if (adj[i] < 0 || (adj[i] >= w.s[i] && adj[i] >= w.d[i]))
        Throw(ErrorKind::kValue, "Operator '", op, "': parameter 'adj' ", p.adj.ToString(),
              " must be non-negative and smaller than stride ", TupleString(w.s, w.nd), " or dilate ",
              TupleString(w.d, w.nd));
    }
  }
  ConvGeom g;
  g.nd = w.nd;
  g.n = data[0];
  g.f = data[1];
  g.c = p.num_filter;
  g.g = p.num_group;
  if (g.c % g.g != 0)
    Throw(ErrorKind::kValue, "Operator '", op, "': num_filter (", g.c, ") is not divisible by num_group (", g.g, ")");
  if (g.f >= 0 && g.f % g.g != 0)
    Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", given.ToString(), " whose ", g.f,
          " channels are not divisible by num_group (", g.g, ")");
  for (int i = 0; i < w.nd; ++i) {
    int j = 3 - w.nd + i;
    g.k[j] = w.k[i];
    g.s[j] = w.s[i];
    g.d[j] = w.d[i];
    g.out[j] = data[2 + i];
    int64_t pad = w.p[i], extra = adj[i];
    int64_t full = g.out[j] < 0 ? -1 : w.s[i] * (g.out[j] - 1) + w.d[i] * (w.k[i] - 1) + 1;
    if (targeted && full >= 0) {
      int64_t target = p.target_shape[i];
      if (target > full || target <= 0)
        Throw(ErrorKind::kShape, "Operator '", op, "': target_shape ", p.target_shape.ToString(),
              " is not reachable from input 'data' of shape ", given.ToString(), ": axis ", i,
              " must lie in [1, ", full, "]");
      pad = (full - target + 1) / 2;
      extra = (full - target) % 2;
    }
    g.pl[j] = pad;
    g.in[j] = full < 0 ? -1 : full - 2 * pad + extra;
    if (full >= 0 && g.in[j] <= 0)
      Throw(ErrorKind::kShape, "Operator '", op, "': pad ", TupleString(w.p, w.nd), " removes the whole output of ",
            "kernel ", TupleString(w.k, w.nd), " on input 'data' of shape ", given.ToString());
  }
  return g;
}

namespace {

// The shapes below are channels-first; Layout() moves them to the operator's layout.
Shape WeightShape(const ConvGeom& g) {
  std::vector<int64_t> d{g.f, g.c / g.g};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.k[i]);
  return Shape(d);
}

Shape OutShape(const ConvGeom& g) {
  std::vector<int64_t> d{g.n, g.c};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.in[i]);
  return Shape(d);
}

Shape Layout(const DeconvolutionParam& p, const Shape& channels_first) {
  return IsChannelsLast(p.layout) ? ToChannelsLast(channels_first) : channels_first;
}

bool DeconvolutionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<DeconvolutionParam>();
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  ConvGeom g = DeconvolutionGeom(attrs, data, true);
  AssignShape(attrs, in, 1, Layout(p, WeightShape(g)), "input");
  if (!p.no_bias) AssignShape(attrs, in, 2, Shape({g.c}), "input");
  AssignShape(attrs, out, 0, Layout(p, OutShape(g)), "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return (*out)[0].is_known();
}

void DeconvolutionCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<DeconvolutionParam>();
  if (IsChannelsLast(p.layout))
    return RunChannelsFirst<DeconvolutionParam>(attrs, ctx, in, req, out, DeconvolutionCompute);
  ConvGeom g = DeconvolutionGeom(attrs, in[0].shape);
  ConvBackwardData(attrs.op->name.c_str(), ctx, g, in[0].dtype, in[0].dptr, in[1].dptr, out[0].dptr, req[0]);
  if (!p.no_bias) AddBias(in[0].dtype, out[0].dptr, in[2].dptr, g.n, g.c, g.InSize());
}

// Inputs: ograd, data, weight. Outputs: data, weight and (unless no_bias) bias gradients.
bool DeconvolutionBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<DeconvolutionParam>();
  const Shape& data = (*in)[1];
  if (!data.is_known()) return false;
  ConvGeom g = DeconvolutionGeom(attrs, data, true);
  AssignShape(attrs, in, 0, Layout(p, OutShape(g)), "input");
  AssignShape(attrs, in, 2, Layout(p, WeightShape(g)), "input");
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (!p.no_bias) AssignShape(attrs, out, 2, Shape({g.c}), "output");
  return true;
}

void DeconvolutionBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<DeconvolutionParam>();
  if (IsChannelsLast(p.layout))
    return RunChannelsFirst<DeconvolutionParam>(attrs, ctx, in, req, out, DeconvolutionBackward);
  ConvGeom g = DeconvolutionGeom(attrs, in[1].shape);
  const char* op = attrs.op->name.c_str();
  DType dt = in[0].dtype;
  ConvForward(op, ctx, g, dt, in[0].dptr, in[2].dptr, nullptr, out[0].dptr, req[0]);
  ConvBackwardWeights(op, ctx, g, dt, in[0].dptr, in[1].dptr, out[1].dptr, req[1], nullptr, OpReq::kNullOp);
  if (!p.no_bias) BiasGrad(dt, in[0].dptr, out[2].dptr, req[2], g.n, g.c, g.InSize());
}

// Each data element meets num_filter / num_group x kernel weights (the weight is (c, num_filter
// / num_group, kernel...)); the backward runs that product twice (the data's and the
// weight's gradients).
double DeconvolutionNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 2.0 * LayerMacs(in[0], in[1]) * kNsPerDeconvFlop + kNsPerDeconvCall + StreamNs(in, out);
}

double DeconvolutionBackwardNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 4.0 * LayerMacs(in[1], in[2]) * kNsPerDeconvFlop + kNsPerDeconvCall + StreamNs(in, out);
}

std::vector<ResourceRequest> DeconvTempSpace(const NodeAttrs&) {
  return {ResourceRequest{ResourceType::kTempSpace}};
}

}  // namespace

WEFT_REGISTER_OP(Deconvolution)
    .Describe(
        "Transposed convolution over 1, 2 or 3 spatial axes (layouts NCW, NCHW, NCDHW, or NWC, NHWC, NDHWC on the "
        "CPU with channels moved last in data, weight and output). data (n, c, ...), weight "
        "(c, num_filter / num_group, kernel...), bias (num_filter,) unless no_bias; out = stride * (in - 1) + "
        "dilate * (kernel - 1) + 1 - 2 * pad + adj per spatial axis, or target_shape when given.")
    .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<DeconvolutionParam>().no_bias ? 2 : 3; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("weight", "NDArray-or-Symbol", "Weights representing the kernel")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias added to the result")
    .SetParams<DeconvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeconvolutionShape)
    .SetAttr<FResourceRequest>("FResourceRequest", DeconvTempSpace)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DeconvolutionCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", DeconvolutionNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Deconvolution", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Deconvolution)
    .Describe("Gradients of Deconvolution with respect to data, weight and (unless no_bias) bias.")
    .SetNumInputs(3)
    .SetNumOutputs([](const NodeAttrs& attrs) { return attrs.Params<DeconvolutionParam>().no_bias ? 2 : 3; })
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input data")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .SetParams<DeconvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeconvolutionBackwardShape)
    .SetAttr<FResourceRequest>("FResourceRequest", DeconvTempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", DeconvolutionBackward)
    .SetAttr<FEstimateNs>("FEstimateNs", DeconvolutionBackwardNs);

}  // namespace op
}  // namespace weft

// Convolution (1-D, 2-D, 3-D, grouped) and its gradient.
//
// Inputs data (n, c, in...), weight (num_filter, c / num_group, kernel...) and, unless
// no_bias, bias (num_filter,); output (n, num_filter, out...) with
// out = (in + 2 * pad - dilate * (kernel - 1) - 1) / stride + 1. The channels-last layouts
// move the channel axis last in data, weight and output: (n, in..., c), (num_filter,
// kernel..., c / num_group), (n, out..., num_filter).
#include "core/op/nn/conv_common.h"
#include "core/op/op_util.h"
#include "core/op/work_estimate.h"

namespace weft {
namespace op {

// The geometry of Convolution on `data`; throws naming the operator, the parameter and the
// shapes when they do not fit. With unknown dims the matching geometry entries are -1.
ConvGeom ConvolutionGeom(const NodeAttrs& attrs, const Shape& data, bool channels_last) {
  return ConvolutionGeom(attrs.op->name, attrs.Params<ConvolutionParam>(), data, channels_last);
}

ConvGeom ConvolutionGeom(const std::string& op, const ConvolutionParam& p, const Shape& given, bool channels_last) {
  WindowAxes w = ParseWindow(op, p.kernel, p.stride, &p.dilate, p.pad);
  CheckLayoutAndRank(op, p.layout, w.nd, given, channels_last);
  const Shape data = IsChannelsLast(p.layout) ? ToChannelsFirst(given) : given;
  ConvGeom g;
  g.nd = w.nd;
  g.n = data[0];
  g.c = data[1];
  g.f = p.num_filter;
  g.g = p.num_group;
  if (g.f % g.g != 0)
    Throw(ErrorKind::kValue, "Operator '", op, "': num_filter (", g.f, ") is not divisible by num_group (", g.g, ")");
  if (g.c >= 0 && g.c % g.g != 0)
    Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", given.ToString(), " whose ", g.c,
          " channels are not divisible by num_group (", g.g, ")");
  int64_t padded[3], extent[3];
  bool fits = true;
  for (int i = 0; i < w.nd; ++i) {
    int j = 3 - w.nd + i;
    g.k[j] = w.k[i];
    g.s[j] = w.s[i];
    g.d[j] = w.d[i];
    g.pl[j] = w.p[i];
    g.in[j] = data[2 + i];
    padded[i] = g.in[j] + 2 * w.p[i];
    extent[i] = w.d[i] * (w.k[i] - 1) + 1;
    if (g.in[j] >= 0 && extent[i] > padded[i]) fits = false;
    g.out[j] = g.in[j] < 0 ? -1 : (padded[i] - extent[i]) / w.s[i] + 1;
  }
  if (!fits) {
    bool dilated = false;
    for (int i = 0; i < w.nd; ++i) dilated = dilated || w.d[i] > 1;
    Throw(ErrorKind::kShape, "Operator '", op, "': kernel ", TupleString(w.k, w.nd),
          dilated ? " dilated by " + TupleString(w.d, w.nd) + " (extent " + TupleString(extent, w.nd) + ")" : "",
          " is larger than the padded input ", TupleString(padded, w.nd), " (data shape ", given.ToString(), ", pad ",
          TupleString(w.p, w.nd), ")");
  }
  return g;
}

namespace {

// The shapes below are channels-first; Layout() moves them to the operator's layout.
Shape WeightShape(const ConvGeom& g, int64_t in_per_group) {
  std::vector<int64_t> d{g.f, in_per_group};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.k[i]);
  return Shape(d);
}

Shape OutShape(const ConvGeom& g) {
  std::vector<int64_t> d{g.n, g.f};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.out[i]);
  return Shape(d);
}

Shape Layout(const ConvolutionParam& p, const Shape& channels_first) {
  return IsChannelsLast(p.layout) ? ToChannelsLast(channels_first) : channels_first;
}

bool ConvolutionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<ConvolutionParam>();
  if (!(*in)[0].known_ndim()) return false;
  ConvGeom g = ConvolutionGeom(attrs, (*in)[0], true);
  // Partial inference backwards, as MXNet's: the batch size, and each spatial size whose
  // stride is 1 (then one input size gives the output size), come from a known output.
  // Worked out channels-first.
  const bool last = IsChannelsLast(p.layout);
  const Shape data = last ? ToChannelsFirst((*in)[0]) : (*in)[0];
  const Shape o = last ? ToChannelsFirst((*out)[0]) : (*out)[0];
  if (!data.is_known() && o.known_ndim() && o.ndim() == data.ndim() && data.ndim() == g.nd + 2) {
    Shape d = data;
    if (d[0] < 0) d[0] = o[0];
    for (int i = 0; i < g.nd; ++i) {
      const int a = 3 - g.nd + i;
      if (d[2 + i] < 0 && o[2 + i] >= 0 && g.s[a] == 1) d[2 + i] = o[2 + i] + (g.k[a] - 1) * g.d[a] - 2 * g.pl[a];
    }
    AssignShape(attrs, in, 0, Layout(p, d), "input");
    g = ConvolutionGeom(attrs, (*in)[0], true);
  }
  AssignShape(attrs, in, 1, Layout(p, WeightShape(g, g.c < 0 ? -1 : g.c / g.g)), "input");
  if (!p.no_bias) AssignShape(attrs, in, 2, Shape({g.f}), "input");
  AssignShape(attrs, out, 0, Layout(p, OutShape(g)), "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return (*out)[0].is_known();
}

void ConvolutionCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ConvolutionParam>();
  if (IsChannelsLast(p.layout)) return RunChannelsFirst<ConvolutionParam>(attrs, ctx, in, req, out, ConvolutionCompute);
  ConvGeom g = ConvolutionGeom(attrs, in[0].shape);
  ConvForward(attrs.op->name.c_str(), ctx, g, in[0].dtype, in[0].dptr, in[1].dptr, p.no_bias ? nullptr : in[2].dptr,
              out[0].dptr, req[0]);
}

// Inputs: ograd, data, weight. Outputs: data, weight and (unless no_bias) bias gradients.
bool ConvolutionBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<ConvolutionParam>();
  const Shape& data = (*in)[1];
  if (!data.is_known()) return false;
  ConvGeom g = ConvolutionGeom(attrs, data, true);
  AssignShape(attrs, in, 0, Layout(p, OutShape(g)), "input");
  AssignShape(attrs, in, 2, Layout(p, WeightShape(g, g.c / g.g)), "input");
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (!p.no_bias) AssignShape(attrs, out, 2, Shape({g.f}), "output");
  return true;
}

void ConvolutionBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ConvolutionParam>();
  if (IsChannelsLast(p.layout))
    return RunChannelsFirst<ConvolutionParam>(attrs, ctx, in, req, out, ConvolutionBackward);
  ConvGeom g = ConvolutionGeom(attrs, in[1].shape);
  const char* op = attrs.op->name.c_str();
  DType dt = in[0].dtype;
  ConvBackward(op, ctx, g, dt, in[0].dptr, in[1].dptr, in[2].dptr, out[0].dptr, req[0], out[1].dptr, req[1],
               p.no_bias ? nullptr : out[2].dptr, p.no_bias ? OpReq::kNullOp : req[2]);
}

std::vector<ResourceRequest> ConvTempSpace(const NodeAttrs&) { return {ResourceRequest{ResourceType::kTempSpace}}; }

// Forward: a multiply-add per output element and weight element of its filter. Backward:
// twice that (the data's and the weight's gradients), the output gradient standing for
// the output.
double ConvolutionNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 2.0 * LayerMacs(out[0], in[1]) * kNsPerConvFlop + StreamNs(in, out);
}

double ConvolutionBackwardNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 4.0 * LayerMacs(in[0], in[2]) * kNsPerConvFlop + StreamNs(in, out);
}

}  // namespace

WEFT_REGISTER_OP(Convolution)
    .Describe(
        "Convolution over 1, 2 or 3 spatial axes (layouts NCW, NCHW, NCDHW, or NWC, NHWC, NDHWC on the CPU with "
        "channels moved last in data, weight and output). data (n, c, ...), weight (num_filter, c / num_group, "
        "kernel...), bias (num_filter,) unless no_bias; out = floor((in + 2 * pad - dilate * "
        "(kernel - 1) - 1) / stride) + 1 per spatial axis.")
    .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<ConvolutionParam>().no_bias ? 2 : 3; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight matrix")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias parameter")
    .SetParams<ConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", ConvolutionShape)
    .SetAttr<FResourceRequest>("FResourceRequest", ConvTempSpace)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ConvolutionCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", ConvolutionNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Convolution", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Convolution)
    .Describe("Gradients of Convolution with respect to data, weight and (unless no_bias) bias.")
    .SetNumInputs(3)
    .SetNumOutputs([](const NodeAttrs& attrs) { return attrs.Params<ConvolutionParam>().no_bias ? 2 : 3; })
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input data")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .SetParams<ConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", ConvolutionBackwardShape)
    .SetAttr<FResourceRequest>("FResourceRequest", ConvTempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", ConvolutionBackward)
    .SetAttr<FEstimateNs>("FEstimateNs", ConvolutionBackwardNs);

}  // namespace op
}  // namespace weft

// _contrib_quantized_conv: Convolution on int8/uint8 data with int8 weights (and an int8
// bias), accumulated in int32.
//
// Inputs, as MXNet's: data, weight, [bias], min_data, max_data, min_weight, max_weight,
// [min_bias, max_bias], and with with_sum the residual sum, min_sum, max_sum last.
// Outputs: output, min_output, max_output.
//
// Without min_calib_range/max_calib_range the output is the int32 accumulator (bias
// rescaled into it), with the range +-step_data * step_weight * (2^31 - 1), as MXNet's.
// With them the operator requantizes itself (MXNet's fused _sg_mkldnn_conv with
// quantized=True): oneDNN scales each accumulator to the calibrated range, adds the sum
// (with_sum) and cuts at 0 (with_relu) in the same pass and writes int8, or uint8 when the
// calibrated minimum is >= 0 or relu is fused; with enable_float_output it writes the real
// values as float32 (one output); see docs/design/quantization.md.
#include "core/op/quantization/quantized_product.h"

namespace weft {
namespace op {

struct QuantizedConvParam : ConvolutionParam {
  std::optional<double> min_calib_range, max_calib_range;
  bool with_relu = false;
  bool enable_float_output = false;
  bool with_sum = false;
  bool channel_wise = false;
};

WEFT_PARAM_SCHEMA(QuantizedConvParam, s) {
  ConvolutionFields(s);
  s.Field("min_calib_range", &QuantizedConvParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the output; with max_calib_range the output is requantized to 8 bits "
                "in the convolution's own pass instead of written as int32.");
  s.Field("max_calib_range", &QuantizedConvParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the output (see min_calib_range).");
  s.Field("with_relu", &QuantizedConvParam::with_relu).Default(false)
      .Describe("Fuse a relu after the convolution (and after the sum with with_sum).");
  s.Field("enable_float_output", &QuantizedConvParam::enable_float_output).Default(false)
      .Describe("Write the result as float32, dequantized in the convolution's own pass (one output, no range); "
                "excludes min_calib_range/max_calib_range.");
  s.Field("with_sum", &QuantizedConvParam::with_sum).Default(false)
      .Describe("Add a quantized input 'sum' (the residual, int8 or uint8 with min_sum, max_sum) to the output "
                "before the relu.");
  s.Field("channel_wise", &QuantizedConvParam::channel_wise).Default(false)
      .Describe("min_weight and max_weight hold one range per output channel, shape (num_filter,) (MXNet's "
                "quantize_granularity='channel-wise'); an int32 output is written in the step of the widest channel.");
}

namespace {

// Input positions for the given parameters.
struct ConvInputs {
  int bias = -1, ranges = 0, sum = -1, count = 0;
  explicit ConvInputs(const QuantizedConvParam& p) {
    int params = p.no_bias ? 2 : 3;
    if (!p.no_bias) bias = 2;
    ranges = params;
    count = 3 * params;
    if (p.with_sum) {
      sum = count;
      count += 3;
    }
  }
};

quant::Calib CalibOf(const QuantizedConvParam& p) { return {p.min_calib_range, p.max_calib_range}; }

std::vector<std::string> InputNames(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<QuantizedConvParam>();
  std::vector<std::string> names{"data", "weight"};
  if (!p.no_bias) names.push_back("bias");
  names.insert(names.end(), {"min_data", "max_data", "min_weight", "max_weight"});
  if (!p.no_bias) names.insert(names.end(), {"min_bias", "max_bias"});
  if (p.with_sum) names.insert(names.end(), {"sum", "min_sum", "max_sum"});
  return names;
}

// layout NHWC: data, sum and output (n, h, w, c), weights (f, kh, kw, c/g), the layouts of
// oneDNN's int8 kernels, which the graph pass of mx.contrib.quantization keeps between
// quantized layers so that no value is reordered at each layer.
bool ChannelsLast(const QuantizedConvParam& p) { return p.layout == "NHWC"; }

ConvGeom Geom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<QuantizedConvParam>();
  if (!ChannelsLast(p)) return ConvolutionGeom(attrs.op->name, p, data);
  if (data.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': with layout NHWC input 'data' must be 4-D (n, h, w, c), got ",
          data.ToString());
  ConvolutionParam first = p;
  first.layout = "NCHW";
  return ConvolutionGeom(attrs.op->name, first, Shape({data[0], data[3], data[1], data[2]}));
}

Shape OutShape(const ConvGeom& g, bool channels_last) {
  if (channels_last) return Shape({g.n, g.out[1], g.out[2], g.f});
  std::vector<int64_t> d{g.n, g.f};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.out[i]);
  return Shape(d);
}

bool QuantizedConvShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<QuantizedConvParam>();
  quant::CheckCalib(attrs, CalibOf(p));
  quant::CheckFloatOutput(attrs, CalibOf(p), p.enable_float_output);
  ConvInputs at(p);
  quant::RangeShapes(attrs, in, at.ranges, 2);
  quant::WeightRangeShapes(attrs, in, at.ranges + 2, p.channel_wise, static_cast<int64_t>(p.num_filter));
  if (!p.no_bias) quant::RangeShapes(attrs, in, at.ranges + 4, 2);
  if (p.with_sum) quant::RangeShapes(attrs, in, at.sum + 1, 2);
  if (out->size() == 3) quant::OutputRangeShapes(attrs, out);
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  ConvGeom g = Geom(attrs, data);
  const int64_t cg = g.c < 0 ? -1 : g.c / g.g;
  std::vector<int64_t> w{g.f, cg};
  for (int i = 3 - g.nd; i < 3; ++i) w.push_back(g.k[i]);
  if (ChannelsLast(p)) w = {g.f, g.k[1], g.k[2], cg};
  AssignShape(attrs, in, 1, Shape(w), "input");
  if (!p.no_bias) AssignShape(attrs, in, at.bias, Shape({g.f}), "input");
  AssignShape(attrs, out, 0, OutShape(g, ChannelsLast(p)), "output");
  if (p.with_sum) AssignShape(attrs, in, at.sum, (*out)[0], "input");
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  return (*out)[0].is_known();
}

DType OutType(const QuantizedConvParam& p) {
  if (p.enable_float_output) return DType::kFloat32;
  quant::Calib c = CalibOf(p);
  return c.given() ? quant::CalibratedType(c, p.with_relu) : DType::kInt32;
}

bool QuantizedConvType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<QuantizedConvParam>();
  ConvInputs at(p);
  quant::CheckQuantized(attrs, *in, 0);
  AssignType(attrs, in, 1, DType::kInt8, "input");
  if (!p.no_bias) AssignType(attrs, in, at.bias, DType::kInt8, "input");
  quant::RangeTypes(attrs, in, at.ranges, (p.no_bias ? 2 : 3) * 2);
  if (p.with_sum) {
    quant::CheckQuantized(attrs, *in, at.sum);
    quant::RangeTypes(attrs, in, at.sum + 1, 2);
  }
  AssignType(attrs, out, 0, OutType(p), "output");
  if (out->size() == 3) quant::OutputRangeTypes(attrs, out);
  return (*in)[0] != DType::kUnknown && (!p.with_sum || (*in)[at.sum] != DType::kUnknown);
}

void QuantizedConvCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedConvParam>();
  ConvInputs at(p);
  ConvGeom g = Geom(attrs, in[0].shape);
  const int r = at.ranges;
  quant::Range rd = quant::ReadRange(attrs, in[r], in[r + 1], in[0].dtype, "data", false);
  const quant::ProductSteps st = quant::ReadProductSteps(attrs, in[0].dtype, rd, in[r + 2], in[r + 3], g.f, p.channel_wise);
  const double acc_step = st.acc;

  quant::Epilogue e;
  e.out = out[0].dtype;
  e.relu = p.with_relu;
  quant::Range ro{static_cast<float>(-acc_step * quant::kInt32Levels), static_cast<float>(acc_step * quant::kInt32Levels)};
  double out_step = acc_step;
  if (e.out == DType::kFloat32) {
    // The float output's "step" is 1: the accumulator is scaled to real values.
    out_step = 1.0;
  } else if (e.out != DType::kInt32) {
    ro = quant::CalibratedRange(CalibOf(p), e.out);
    out_step = quant::Step(e.out, ro.lo, ro.hi);
  }
  if (e.out != DType::kInt32 || p.channel_wise) quant::SetScales(&e, st, out_step);
  if (p.with_sum) {
    const TBlob& s = in[at.sum];
    quant::Range rs = quant::ReadRange(attrs, in[at.sum + 1], in[at.sum + 2], s.dtype, "sum", false);
    e.sum = true;
    e.sum_type = s.dtype;
    e.sum_scale = out_step > 0 ? static_cast<float>(quant::Step(s.dtype, rs.lo, rs.hi) / out_step) : 0.0f;
  }

  std::vector<int32_t> bias;
  if (!p.no_bias) {
    quant::Range rb = quant::ReadRange(attrs, in[r + 4], in[r + 5], DType::kInt8, "bias", true);
    bias.resize(static_cast<size_t>(g.f));
    quant::RescaleBias(in[at.bias].ptr<int8_t>(), g.f, quant::Step(DType::kInt8, rb.lo, rb.hi), acc_step, bias.data(),
                       st.channels);
  }
  const int32_t* b = p.no_bias ? nullptr : bias.data();
  const void* sum = p.with_sum ? in[at.sum].dptr : nullptr;
  if (req[0] != OpReq::kNullOp && g.n > 0) {
    if (req[0] == OpReq::kAddTo)
      Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "': accumulating into the output (req 'add') is not supported");
    auto plan = quant::Int8ConvPlan(g, in[0].dtype, b != nullptr, e, ChannelsLast(p));
    if (plan) {
      char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(quant::Int8TempBytes(*plan)));
      quant::RunInt8(*plan, in[0].dptr, in[1].ptr<int8_t>(), b, sum, out[0].dptr, temp,
                     CallInputVersions().size() > 1 ? &CallInputVersions()[1] : nullptr);
    } else {
      quant::ReferenceConv(g, in[0].dtype, in[0].dptr, in[1].ptr<int8_t>(), b, e, sum, out[0].dptr, ChannelsLast(p));
    }
  }
  if (out.size() == 1) return;
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = ro.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = ro.hi;
}

bool FloatOutput(const NodeAttrs& attrs) { return attrs.Params<QuantizedConvParam>().enable_float_output; }

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_conv)
    .Describe(
        "Convolution of int8 or uint8 data with int8 weights and an int8 bias, accumulated in int32. Each array comes "
        "with its float range (min, max). The output is the int32 sums with their range, or, given "
        "min_calib_range/max_calib_range, int8/uint8 requantized in the same pass, with fused relu and residual sum. "
        "Besides the channels-first layouts, 2-D layout NHWC: data, sum and output (n, h, w, c), weight "
        "(num_filter, kh, kw, c/num_group). Forward only.")
    .SetNumInputs([](const NodeAttrs& attrs) { return ConvInputs(attrs.Params<QuantizedConvParam>()).count; })
    .SetNumOutputs([](const NodeAttrs& attrs) { return FloatOutput(attrs) ? 1 : 3; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight, int8.")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias, int8.")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .AddArgument("min_weight", "NDArray-or-Symbol", "Minimum of weight's range (per output channel with channel_wise).")
    .AddArgument("max_weight", "NDArray-or-Symbol", "Maximum of weight's range (per output channel with channel_wise).")
    .AddArgument("min_bias", "NDArray-or-Symbol", "Minimum of bias's range.")
    .AddArgument("max_bias", "NDArray-or-Symbol", "Maximum of bias's range.")
    .AddArgument("sum", "NDArray-or-Symbol", "With with_sum: the residual added to the output, int8 or uint8.")
    .AddArgument("min_sum", "NDArray-or-Symbol", "With with_sum: minimum of sum's range.")
    .AddArgument("max_sum", "NDArray-or-Symbol", "With with_sum: maximum of sum's range.")
    .SetParams<QuantizedConvParam>()
    .SetAttr<FListNames>("FListInputNames", InputNames)
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) { return quant::ProductOutputNames(FloatOutput(attrs)); })
    .SetAttr<FInferShape>("FInferShape", QuantizedConvShape)
    .SetAttr<FInferType>("FInferType", QuantizedConvType)
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<TInputVersions>("TInputVersions", true)
    // The output may take the residual sum's memory (both 8-bit, same shape): oneDNN's sum
    // post-op reads each element before writing it, so no copy of the sum is needed.
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& attrs) {
                               const auto& p = attrs.Params<QuantizedConvParam>();
                               if (!p.with_sum) return std::vector<std::pair<int, int>>{};
                               return std::vector<std::pair<int, int>>{{ConvInputs(p).sum, 0}};
                             })
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedConvCompute);

}  // namespace op
}  // namespace weft

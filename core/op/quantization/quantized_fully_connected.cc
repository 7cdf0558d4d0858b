// _contrib_quantized_fully_connected: FullyConnected on int8/uint8 data with int8 weights
// (and an int8 bias), accumulated in int32.
//
// Inputs, as MXNet's: data, weight, [bias], min_data, max_data, min_weight, max_weight,
// [min_bias, max_bias]. Outputs: output, min_output, max_output. The output and the fused
// requantization (min_calib_range/max_calib_range, with_relu, enable_float_output) follow
// _contrib_quantized_conv (quantized_conv.cc).
#include "core/op/quantization/quantized_product.h"

namespace weft {
namespace op {

struct QuantizedFCParam {
  int num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
  std::optional<double> min_calib_range, max_calib_range;
  bool with_relu = false;
  bool enable_float_output = false;
  bool channel_wise = false;
};

WEFT_PARAM_SCHEMA(QuantizedFCParam, s) {
  s.Field("num_hidden", &QuantizedFCParam::num_hidden).Range(1, 1 << 30).Describe("Number of output units.");
  s.Field("no_bias", &QuantizedFCParam::no_bias).Default(false).Describe("Whether to leave out the bias input.");
  s.Field("flatten", &QuantizedFCParam::flatten).Default(true)
      .Describe("Collapse every axis but the first of data; otherwise only the last axis is the input's.");
  s.Field("min_calib_range", &QuantizedFCParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the output; with max_calib_range the output is requantized to 8 bits "
                "in the product's own pass instead of written as int32.");
  s.Field("max_calib_range", &QuantizedFCParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the output (see min_calib_range).");
  s.Field("with_relu", &QuantizedFCParam::with_relu).Default(false).Describe("Fuse a relu after the product.");
  s.Field("enable_float_output", &QuantizedFCParam::enable_float_output).Default(false)
      .Describe("Write the result as float32, dequantized in the product's own pass (one output, no range); "
                "excludes min_calib_range/max_calib_range.");
  s.Field("channel_wise", &QuantizedFCParam::channel_wise).Default(false)
      .Describe("min_weight and max_weight hold one range per output unit, shape (num_hidden,) (MXNet's "
                "quantize_granularity='channel-wise'); an int32 output is written in the step of the widest unit.");
}

namespace {

int NumParams(const QuantizedFCParam& p) { return p.no_bias ? 2 : 3; }

quant::Calib CalibOf(const QuantizedFCParam& p) { return {p.min_calib_range, p.max_calib_range}; }

// data seen as (rows, features).
struct FcView {
  int64_t rows = -1, k = -1;
};

FcView View(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<QuantizedFCParam>();
  if (data.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' must have at least one axis, got ",
          data.ToString());
  FcView v;
  if (p.flatten) {
    v.rows = data[0];
    v.k = data.ndim() == 1 ? 1 : data.ProdRange(1, data.ndim());
    for (int d = 1; d < data.ndim(); ++d)
      if (data[d] < 0) v.k = -1;
  } else {
    v.k = data[data.ndim() - 1];
    v.rows = data.ProdRange(0, data.ndim() - 1);
    for (int d = 0; d + 1 < data.ndim(); ++d)
      if (data[d] < 0) v.rows = -1;
  }
  return v;
}

Shape OutShape(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<QuantizedFCParam>();
  if (p.flatten) return Shape({data[0], p.num_hidden});
  std::vector<int64_t> d;
  for (int i = 0; i + 1 < data.ndim(); ++i) d.push_back(data[i]);
  d.push_back(p.num_hidden);
  return Shape(d);
}

bool QuantizedFCShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<QuantizedFCParam>();
  quant::CheckCalib(attrs, CalibOf(p));
  quant::CheckFloatOutput(attrs, CalibOf(p), p.enable_float_output);
  const int np = NumParams(p);
  quant::RangeShapes(attrs, in, np, 2);
  quant::WeightRangeShapes(attrs, in, np + 2, p.channel_wise, p.num_hidden);
  if (!p.no_bias) quant::RangeShapes(attrs, in, np + 4, 2);
  if (out->size() == 3) quant::OutputRangeShapes(attrs, out);
  if (!p.no_bias) AssignShape(attrs, in, 2, Shape({p.num_hidden}), "input");
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  FcView v = View(attrs, data);
  AssignShape(attrs, in, 1, Shape({p.num_hidden, v.k}), "input");
  AssignShape(attrs, out, 0, OutShape(attrs, data), "output");
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  return (*out)[0].is_known();
}

bool QuantizedFCType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<QuantizedFCParam>();
  const int np = NumParams(p);
  quant::CheckQuantized(attrs, *in, 0);
  AssignType(attrs, in, 1, DType::kInt8, "input");
  if (!p.no_bias) AssignType(attrs, in, 2, DType::kInt8, "input");
  quant::RangeTypes(attrs, in, np, 2 * np);
  quant::Calib c = CalibOf(p);
  DType t = p.enable_float_output ? DType::kFloat32 : c.given() ? quant::CalibratedType(c, p.with_relu) : DType::kInt32;
  AssignType(attrs, out, 0, t, "output");
  if (out->size() == 3) quant::OutputRangeTypes(attrs, out);
  return (*in)[0] != DType::kUnknown;
}

void QuantizedFCCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedFCParam>();
  const int np = NumParams(p);
  FcView v = View(attrs, in[0].shape);
  const int64_t n = p.num_hidden;
  quant::Range rd = quant::ReadRange(attrs, in[np], in[np + 1], in[0].dtype, "data", false);
  const quant::ProductSteps st = quant::ReadProductSteps(attrs, in[0].dtype, rd, in[np + 2], in[np + 3], n, p.channel_wise);
  const double acc_step = st.acc;
  quant::Epilogue e;
  e.out = out[0].dtype;
  e.relu = p.with_relu;
  quant::Range ro{static_cast<float>(-acc_step * quant::kInt32Levels), static_cast<float>(acc_step * quant::kInt32Levels)};
  double out_step = acc_step;
  if (e.out == DType::kFloat32) {
    out_step = 1.0;
  } else if (e.out != DType::kInt32) {
    ro = quant::CalibratedRange(CalibOf(p), e.out);
    out_step = quant::Step(e.out, ro.lo, ro.hi);
  }
  if (e.out != DType::kInt32 || p.channel_wise) quant::SetScales(&e, st, out_step);
  std::vector<int32_t> bias;
  if (!p.no_bias) {
    quant::Range rb = quant::ReadRange(attrs, in[np + 4], in[np + 5], DType::kInt8, "bias", true);
    bias.resize(static_cast<size_t>(n));
    quant::RescaleBias(in[2].ptr<int8_t>(), n, quant::Step(DType::kInt8, rb.lo, rb.hi), acc_step, bias.data(),
                       st.channels);
  }
  const int32_t* b = p.no_bias ? nullptr : bias.data();
  if (req[0] != OpReq::kNullOp && v.rows > 0) {
    if (req[0] == OpReq::kAddTo)
      Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "': accumulating into the output (req 'add') is not supported");
    auto plan = quant::Int8FcPlan(v.rows, v.k, n, in[0].dtype, b != nullptr, e);
    if (plan) {
      char* temp = static_cast<char*>(ctx.requested.at(0).temp->Get(quant::Int8TempBytes(*plan)));
      quant::RunInt8(*plan, in[0].dptr, in[1].ptr<int8_t>(), b, nullptr, out[0].dptr, temp,
                     CallInputVersions().size() > 1 ? &CallInputVersions()[1] : nullptr);
    } else {
      quant::ReferenceFc(v.rows, v.k, n, in[0].dtype, in[0].dptr, in[1].ptr<int8_t>(), b, e, nullptr, out[0].dptr);
    }
  }
  if (out.size() == 1) return;
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = ro.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = ro.hi;
}

bool FloatOutput(const NodeAttrs& attrs) { return attrs.Params<QuantizedFCParam>().enable_float_output; }

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_fully_connected)
    .Describe(
        "FullyConnected on int8 or uint8 data with int8 weights and an int8 bias, accumulated in int32. Each array "
        "comes with its float range (min, max). The output is the int32 sums with their range, or, given "
        "min_calib_range/max_calib_range, int8/uint8 requantized in the same pass (with a fused relu). Forward only.")
    .SetNumInputs([](const NodeAttrs& attrs) { return 3 * NumParams(attrs.Params<QuantizedFCParam>()); })
    .SetNumOutputs([](const NodeAttrs& attrs) { return FloatOutput(attrs) ? 1 : 3; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (num_hidden, features), int8.")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias (num_hidden,), int8.")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .AddArgument("min_weight", "NDArray-or-Symbol", "Minimum of weight's range (per output unit with channel_wise).")
    .AddArgument("max_weight", "NDArray-or-Symbol", "Maximum of weight's range (per output unit with channel_wise).")
    .AddArgument("min_bias", "NDArray-or-Symbol", "Minimum of bias's range.")
    .AddArgument("max_bias", "NDArray-or-Symbol", "Maximum of bias's range.")
    .SetParams<QuantizedFCParam>()
    .SetAttr<FListNames>("FListInputNames",
                         [](const NodeAttrs& attrs) {
                           if (attrs.Params<QuantizedFCParam>().no_bias)
                             return std::vector<std::string>{"data", "weight", "min_data", "max_data", "min_weight",
                                                             "max_weight"};
                           return std::vector<std::string>{"data",     "weight",     "bias",     "min_data", "max_data",
                                                           "min_weight", "max_weight", "min_bias", "max_bias"};
                         })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) { return quant::ProductOutputNames(FloatOutput(attrs)); })
    .SetAttr<FInferShape>("FInferShape", QuantizedFCShape)
    .SetAttr<FInferType>("FInferType", QuantizedFCType)
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<TInputVersions>("TInputVersions", true)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedFCCompute);

}  // namespace op
}  // namespace weft

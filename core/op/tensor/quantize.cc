// _contrib_quantize_v2, _contrib_quantize and _contrib_dequantize: the conversions between float32 and the
// 8-bit integers of MXNet's quantized graphs, with the float range an integer array stands
// for carried beside it as two float32 scalars (min_range, max_range).
//
// int8 is zero-centred: with r = max(|min|, |max|), q = round(x * 127 / r) (halves away
// from zero), clipped to [-127, 127], and the range given back is [-r, r]. uint8 maps
// [min, max] onto [0, 255] (q = round((x - min) * 255 / (max - min))); values outside the
// range saturate (MXNet leaves them undefined). The range is the calibrated one when
// min_calib_range/max_calib_range are given, otherwise the data's own minimum and maximum
// (quantize_v2), or the one given by the inputs min_range/max_range (quantize, MXNet's
// first version). out_type 'auto' picks uint8 when the calibrated minimum is >= 0, int8 otherwise.
//
// _contrib_requantize narrows the int32 results of quantized products to 8 bits, as
// MXNet's CPU (oneDNN) path does: the int32 value q stands for q * r32 / (2^31 - 1) with
// r32 = max(|min_range|, |max_range|); the 8-bit range is the calibrated one, or the
// data's own extreme value, and the result is rounded and saturated.
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct QuantizeV2Param {
  std::string out_type = "int8";
  std::optional<double> min_calib_range, max_calib_range;
};

WEFT_PARAM_SCHEMA(QuantizeV2Param, s) {
  s.Field("out_type", &QuantizeV2Param::out_type).Default("int8").Choices({"auto", "int8", "uint8"})
      .Describe("The integer type of the output; 'auto' is uint8 for a calibrated minimum >= 0, else int8.");
  s.Field("min_calib_range", &QuantizeV2Param::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the input; without it the data's minimum is used.");
  s.Field("max_calib_range", &QuantizeV2Param::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the input; without it the data's maximum is used.");
}

struct RequantizeParam {
  std::string out_type = "int8";
  std::optional<double> min_calib_range, max_calib_range;
};

WEFT_PARAM_SCHEMA(RequantizeParam, s) {
  s.Field("out_type", &RequantizeParam::out_type).Default("int8").Choices({"auto", "int8", "uint8"})
      .Describe("The integer type of the output; 'auto' is uint8 for a calibrated minimum >= 0, else int8.");
  s.Field("min_calib_range", &RequantizeParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the output; without it the data's extreme value sets the range.");
  s.Field("max_calib_range", &RequantizeParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the output; without it the data's extreme value sets the range.");
}

struct QuantizeParam {
  std::string out_type = "uint8";
};

WEFT_PARAM_SCHEMA(QuantizeParam, s) {
  s.Field("out_type", &QuantizeParam::out_type).Default("uint8").Choices({"int8", "uint8"})
      .Describe("The integer type of the output.");
}

struct QuantizeAsymParam {
  std::optional<double> min_calib_range, max_calib_range;
};

WEFT_PARAM_SCHEMA(QuantizeAsymParam, s) {
  s.Field("min_calib_range", &QuantizeAsymParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the input; without it the data's minimum is used.");
  s.Field("max_calib_range", &QuantizeAsymParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the input; without it the data's maximum is used.");
}

struct DequantizeParam {
  std::string out_type = "float32";
};

WEFT_PARAM_SCHEMA(DequantizeParam, s) {
  s.Field("out_type", &DequantizeParam::out_type).Default("float32").Choices({"float32"})
      .Describe("The floating type of the output.");
}

namespace {

constexpr float kInt8Range = 127.0f;
constexpr float kUint8Range = 255.0f;

DType QuantizedType(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<QuantizeV2Param>();
  if (p.out_type == "int8") return DType::kInt8;
  if (p.out_type == "uint8") return DType::kUint8;
  return p.min_calib_range && *p.min_calib_range >= 0 ? DType::kUint8 : DType::kInt8;
}

template <typename P>
void CheckCalib(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<P>();
  if (p.min_calib_range.has_value() != p.max_calib_range.has_value())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': give both min_calib_range and max_calib_range, or neither");
  if (p.min_calib_range && *p.min_calib_range > *p.max_calib_range)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected min_calib_range <= max_calib_range, got ",
          *p.min_calib_range, " > ", *p.max_calib_range);
}

bool QuantizeV2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckCalib<QuantizeV2Param>(attrs);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, out, 1, Shape({1}), "output");
  AssignShape(attrs, out, 2, Shape({1}), "output");
  return (*in)[0].is_known();
}

bool QuantizeV2Type(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (t != DType::kFloat32)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected float32 data, got ", DTypeName(t));
  AssignType(attrs, out, 0, QuantizedType(attrs), "output");
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  AssignType(attrs, out, 2, DType::kFloat32, "output");
  return true;
}

// The loops of QuantizeOver over n values, written so that the compiler vectorizes them
// (restrict pointers, the scalars by value, the saturation as selects: a NaN fails both
// comparisons and gives 0, as ConvertValue gives it): the same integers as rounding with
// ConvertValue, several times faster (a quantize_v2 of a 32x64x32x32 input took a quarter of
// two int8 convolutions after it).
void ToInt8(const float* __restrict x, int64_t n, float scale, int8_t* __restrict q) {
  for (int64_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]) * scale + 0.5f;
    a = a > 0.0f ? a : 0.0f;
    a = a < kInt8Range ? a : kInt8Range;
    const int v = static_cast<int>(a);
    q[i] = static_cast<int8_t>(x[i] < 0 ? -v : v);
  }
}

void ToUint8(const float* __restrict x, int64_t n, float lo, float scale, uint8_t* __restrict q) {
  for (int64_t i = 0; i < n; ++i) {
    float a = (x[i] - lo) * scale + 0.5f;
    a = a > 0.0f ? a : 0.0f;
    a = a < kUint8Range ? a : kUint8Range;
    q[i] = static_cast<uint8_t>(static_cast<int>(a));
  }
}

// Quantizes x over the range [lo, hi] into out (q, min, max) as the file's header says.
void QuantizeOver(const float* x, int64_t n, float lo, float hi, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  float* omin = out[1].ptr<float>();
  float* omax = out[2].ptr<float>();
  if (out[0].dtype == DType::kInt8) {
    const float r = std::max(std::fabs(lo), std::fabs(hi));
    // An all-zero range quantizes everything to 0 instead of dividing by it.
    const float scale = r > 0 ? kInt8Range / r : 0.0f;
    int8_t* q = out[0].ptr<int8_t>();
    // A NaN (in the data or from an infinite range) quantizes to 0 instead of an undefined
    // conversion (found by fuzz_c_api).
    ParallelFor(n, kElemGrain, [x, q, scale](int64_t b, int64_t e) { ToInt8(x + b, e - b, scale, q + b); });
    if (req[1] != OpReq::kNullOp) *omin = -r;
    if (req[2] != OpReq::kNullOp) *omax = r;
  } else {
    const float scale = hi > lo ? kUint8Range / (hi - lo) : 0.0f;
    uint8_t* q = out[0].ptr<uint8_t>();
    ParallelFor(n, kElemGrain, [x, q, lo, scale](int64_t b, int64_t e) { ToUint8(x + b, e - b, lo, scale, q + b); });
    if (req[1] != OpReq::kNullOp) *omin = lo;
    if (req[2] != OpReq::kNullOp) *omax = hi;
  }
}

void QuantizeV2Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizeV2Param>();
  const float* x = in[0].ptr<float>();
  const int64_t n = in[0].Size();
  float lo, hi;
  if (p.min_calib_range) {
    lo = static_cast<float>(*p.min_calib_range);
    hi = static_cast<float>(*p.max_calib_range);
  } else {
    lo = n > 0 ? *std::min_element(x, x + n) : 0.0f;
    hi = n > 0 ? *std::max_element(x, x + n) : 0.0f;
  }
  QuantizeOver(x, n, lo, hi, req, out);
}

// _contrib_quantize: the range comes as two input scalars (min_range, max_range).
bool QuantizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 1, Shape({1}), "input");
  AssignShape(attrs, in, 2, Shape({1}), "input");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, out, 1, Shape({1}), "output");
  AssignShape(attrs, out, 2, Shape({1}), "output");
  return (*in)[0].is_known();
}

bool QuantizeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  AssignType(attrs, in, 1, DType::kFloat32, "input");
  AssignType(attrs, in, 2, DType::kFloat32, "input");
  if (t == DType::kUnknown) return false;
  if (t != DType::kFloat32)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected float32 data, got ", DTypeName(t));
  const auto& p = attrs.Params<QuantizeParam>();
  AssignType(attrs, out, 0, p.out_type == "int8" ? DType::kInt8 : DType::kUint8, "output");
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  AssignType(attrs, out, 2, DType::kFloat32, "output");
  return true;
}

void QuantizeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const float lo = *in[1].ptr<float>(), hi = *in[2].ptr<float>();
  if (lo > hi)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected min_range <= max_range, got ", lo, " > ", hi);
  QuantizeOver(in[0].ptr<float>(), in[0].Size(), lo, hi, req, out);
}

// _contrib_quantize_asym: uint8 q = x * scale + shift, rounded (halves up) and saturated,
// with scale = 255 / (max - min) and shift = -min * scale, so that [min, max] fills
// [0, 255]; outputs q and the scalars scale and shift. int8 data is shifted by 128 (scale
// 1), uint8 passes through (scale 1, shift 0), as MXNet. A zero range gives scale 0.
bool QuantizeAsymShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckCalib<QuantizeAsymParam>(attrs);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, out, 1, Shape({1}), "output");
  AssignShape(attrs, out, 2, Shape({1}), "output");
  return (*in)[0].is_known();
}

bool QuantizeAsymType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (t != DType::kFloat32 && t != DType::kInt8 && t != DType::kUint8)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected float32, int8 or uint8 data, got ", DTypeName(t));
  AssignType(attrs, out, 0, DType::kUint8, "output");
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  AssignType(attrs, out, 2, DType::kFloat32, "output");
  return true;
}

void QuantizeAsymCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizeAsymParam>();
  const int64_t n = in[0].Size();
  uint8_t* q = out[0].ptr<uint8_t>();
  float scale = 1.0f, shift = 0.0f;
  if (in[0].dtype == DType::kUint8) {
    std::copy(in[0].ptr<uint8_t>(), in[0].ptr<uint8_t>() + n, q);
  } else if (in[0].dtype == DType::kInt8) {
    shift = 128.0f;
    const int8_t* x = in[0].ptr<int8_t>();
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) q[i] = static_cast<uint8_t>(x[i] + 128);
    });
  } else {
    const float* x = in[0].ptr<float>();
    float lo, hi;
    if (p.min_calib_range) {
      lo = static_cast<float>(*p.min_calib_range);
      hi = static_cast<float>(*p.max_calib_range);
    } else {
      lo = n > 0 ? *std::min_element(x, x + n) : 0.0f;
      hi = n > 0 ? *std::max_element(x, x + n) : 0.0f;
    }
    scale = hi > lo ? kUint8Range / (hi - lo) : 0.0f;
    shift = hi > lo ? kUint8Range - hi * scale : 0.0f;
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        q[i] = ConvertValue<uint8_t>(std::floor(std::min(std::max(x[i] * scale + shift + 0.5f, 0.0f), kUint8Range)));
    });
  }
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = scale;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = shift;
}

bool DequantizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 1, Shape({1}), "input");
  AssignShape(attrs, in, 2, Shape({1}), "input");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return (*in)[0].is_known();
}

bool DequantizeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (t != DType::kInt8 && t != DType::kUint8)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected int8 or uint8 data, got ", DTypeName(t));
  AssignType(attrs, in, 1, DType::kFloat32, "input");
  AssignType(attrs, in, 2, DType::kFloat32, "input");
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  return true;
}

void DequantizeCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                       const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const float lo = *in[1].ptr<float>(), hi = *in[2].ptr<float>();
  const int64_t n = in[0].Size();
  float* y = out[0].ptr<float>();
  const bool add = req[0] == OpReq::kAddTo;
  if (in[0].dtype == DType::kInt8) {
    const float scale = std::max(std::fabs(lo), std::fabs(hi)) / kInt8Range;
    const int8_t* q = in[0].ptr<int8_t>();
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = (add ? y[i] : 0.0f) + q[i] * scale;
    });
  } else {
    const float scale = (hi - lo) / kUint8Range;
    const uint8_t* q = in[0].ptr<uint8_t>();
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = (add ? y[i] : 0.0f) + q[i] * scale + lo;
    });
  }
}

bool RequantizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckCalib<RequantizeParam>(attrs);
  AssignShape(attrs, in, 1, Shape({1}), "input");
  AssignShape(attrs, in, 2, Shape({1}), "input");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, out, 1, Shape({1}), "output");
  AssignShape(attrs, out, 2, Shape({1}), "output");
  return (*in)[0].is_known();
}

DType RequantizedType(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<RequantizeParam>();
  if (p.out_type == "int8") return DType::kInt8;
  if (p.out_type == "uint8") return DType::kUint8;
  return p.min_calib_range && *p.min_calib_range >= 0 ? DType::kUint8 : DType::kInt8;
}

bool RequantizeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (t != DType::kInt32)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected int32 data, got ", DTypeName(t));
  AssignType(attrs, in, 1, DType::kFloat32, "input");
  AssignType(attrs, in, 2, DType::kFloat32, "input");
  AssignType(attrs, out, 0, RequantizedType(attrs), "output");
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  AssignType(attrs, out, 2, DType::kFloat32, "output");
  return true;
}

void RequantizeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RequantizeParam>();
  const int32_t* x = in[0].ptr<int32_t>();
  const int64_t n = in[0].Size();
  const double data_scale =
      std::max(std::fabs(*in[1].ptr<float>()), std::fabs(*in[2].ptr<float>())) / 2147483647.0;
  const bool u8 = out[0].dtype == DType::kUint8;
  double range;
  if (p.min_calib_range) {
    range = u8 ? *p.max_calib_range : std::max(std::fabs(*p.min_calib_range), std::fabs(*p.max_calib_range));
  } else {
    int64_t extreme = 0;
    for (int64_t i = 0; i < n; ++i) extreme = std::max<int64_t>(extreme, u8 ? x[i] : std::llabs(x[i]));
    range = extreme * data_scale;
  }
  const double limit = u8 ? kUint8Range : kInt8Range;
  const double scale = range > 0 ? data_scale * limit / range : 0.0;
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double v = std::min(std::max(std::nearbyint(x[i] * scale), u8 ? 0.0 : -limit), limit);
      if (u8)
        out[0].ptr<uint8_t>()[i] = ConvertValue<uint8_t>(v);
      else
        out[0].ptr<int8_t>()[i] = ConvertValue<int8_t>(v);
    }
  });
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = static_cast<float>(u8 ? 0.0 : -range);
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = static_cast<float>(range);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_requantize)
    .Describe("Narrows int32 data (the result of a quantized product, with the float range it stands for) to int8 "
              "or uint8 over a calibrated range or the data's own.")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "An int32 array")
    .AddArgument("min_range", "NDArray-or-Symbol", "The float the int32 minimum stands for, shape (1,)")
    .AddArgument("max_range", "NDArray-or-Symbol", "The float the int32 maximum stands for, shape (1,)")
    .SetParams<RequantizeParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "min_range", "max_range"}; })
    .SetAttr<FInferShape>("FInferShape", RequantizeShape)
    .SetAttr<FInferType>("FInferType", RequantizeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", RequantizeCompute);

WEFT_REGISTER_OP(_contrib_quantize_v2)
    .Describe("Quantizes float32 data to int8 (zero-centred) or uint8 over a calibrated or measured range; outputs "
              "the integers and the float range (min_range, max_range) they stand for.")
    .SetNumInputs(1)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "A float32 array")
    .SetParams<QuantizeV2Param>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "min_range", "max_range"}; })
    .SetAttr<FInferShape>("FInferShape", QuantizeV2Shape)
    .SetAttr<FInferType>("FInferType", QuantizeV2Type)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizeV2Compute);

WEFT_REGISTER_OP(_contrib_quantize)
    .Describe("Quantizes float32 data to int8 (zero-centred) or uint8 over the range given by the inputs min_range "
              "and max_range; outputs the integers and the float range they stand for.")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "A float32 array")
    .AddArgument("min_range", "NDArray-or-Symbol", "The minimum of the range to quantize over, shape (1,)")
    .AddArgument("max_range", "NDArray-or-Symbol", "The maximum of the range to quantize over, shape (1,)")
    .SetParams<QuantizeParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "min_range", "max_range"}; })
    .SetAttr<FInferShape>("FInferShape", QuantizeShape)
    .SetAttr<FInferType>("FInferType", QuantizeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizeCompute);

WEFT_REGISTER_OP(_contrib_quantize_asym)
    .Describe("Quantizes float32 data asymmetrically to uint8: q = x * scale + shift rounded, scale = 255 / (max - "
              "min), shift = 255 - max * scale, over the calibrated or the data's range; outputs q, scale and "
              "shift. int8 data is shifted by 128, uint8 data passes through.")
    .SetNumInputs(1)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "A float32, int8 or uint8 array")
    .SetParams<QuantizeAsymParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "scale", "shift"}; })
    .SetAttr<FInferShape>("FInferShape", QuantizeAsymShape)
    .SetAttr<FInferType>("FInferType", QuantizeAsymType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizeAsymCompute);

WEFT_REGISTER_OP(_contrib_dequantize)
    .Describe("Converts int8 or uint8 data with the float range it stands for (min_range, max_range) back to float32.")
    .SetNumInputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "An int8 or uint8 array")
    .AddArgument("min_range", "NDArray-or-Symbol", "The float the smallest integer stands for, shape (1,)")
    .AddArgument("max_range", "NDArray-or-Symbol", "The float the largest integer stands for, shape (1,)")
    .SetParams<DequantizeParam>()
    .SetAttr<FInferShape>("FInferShape", DequantizeShape)
    .SetAttr<FInferType>("FInferType", DequantizeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DequantizeCompute);

}  // namespace op
}  // namespace weft

// What the quantized operators share: how an integer array and its float range (two
// float32 scalars, min and max, beside it) stand for real values, and the shape and type
// rules of those ranges.
//
// The rules are those of _contrib_quantize_v2 (core/op/tensor/quantize.cc) and of MXNet's
// quantization_utils.h ranges:
// - int8 with range (lo, hi) stands for q * r / 127, r = max(|lo|, |hi|);
// - uint8 stands for q * r / 255 with a zero point of 0, which is what MXNet's oneDNN
//   kernels assume; so a uint8 input of a layer that computes with values (convolution,
//   fully connected, concat, add) must have lo = 0. quantize_v2 gives that for calibrated
//   non-negative data (min_calib_range = 0), requantize and the fused outputs always;
// - int32 (the accumulators of products) stands for q * r / (2^31 - 1).
// A product of an a-array and a b-array accumulated in int32 thus has the range
// +-step_a * step_b * (2^31 - 1), MXNet's QuantizationRangeForMultiplication.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace quant {

constexpr double kInt8Levels = 127.0;
constexpr double kUint8Levels = 255.0;
constexpr double kInt32Levels = 2147483647.0;

inline double Levels(DType t) {
  return t == DType::kInt8 ? kInt8Levels : t == DType::kUint8 ? kUint8Levels : kInt32Levels;
}

// The float one integer step of a `t` array with range (lo, hi) stands for.
inline double Step(DType t, double lo, double hi) { return std::max(std::fabs(lo), std::fabs(hi)) / Levels(t); }

// A range input: a float32 scalar.
inline float ReadScalar(const TBlob& b) { return *b.ptr<float>(); }

struct Range {
  float lo = 0, hi = 0;
};

// Reads the range (min, max) of input `what` of type `t`, refusing a uint8 range whose
// minimum is not 0 where the operator computes with the values (`values`).
inline Range ReadRange(const NodeAttrs& attrs, const TBlob& min, const TBlob& max, DType t, const char* what,
                       bool values) {
  Range r{ReadScalar(min), ReadScalar(max)};
  if (values && t == DType::kUint8 && r.lo != 0.0f)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': uint8 input '", what,
          "' must have a minimum of 0 (the quantized layers take uint8 with a zero point of 0), got range (", r.lo,
          ", ", r.hi, "); quantize it with min_calib_range=0 or as int8");
  return r;
}

// Range inputs [first, first + count) are scalars (1,) of float32.
inline void RangeShapes(const NodeAttrs& attrs, std::vector<Shape>* in, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) AssignShape(attrs, in, i, Shape({1}), "input");
}
// The weight's range inputs first, first + 1 of a product: scalars (1,), or with
// channel-wise ranges one value per output channel, (channels,).
inline void WeightRangeShapes(const NodeAttrs& attrs, std::vector<Shape>* in, size_t first, bool channel_wise,
                              int64_t channels) {
  for (size_t i = first; i < first + 2; ++i)
    AssignShape(attrs, in, i, channel_wise ? Shape({channels}) : Shape({1}), "input");
}
inline void RangeTypes(const NodeAttrs& attrs, std::vector<DType>* in, size_t first, size_t count) {
  for (size_t i = first; i < first + count; ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
}
// Outputs 1 and 2 are the output's range.
inline void OutputRangeShapes(const NodeAttrs& attrs, std::vector<Shape>* out) {
  AssignShape(attrs, out, 1, Shape({1}), "output");
  AssignShape(attrs, out, 2, Shape({1}), "output");
}
inline void OutputRangeTypes(const NodeAttrs& attrs, std::vector<DType>* out) {
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  AssignType(attrs, out, 2, DType::kFloat32, "output");
}

// Input i must be int8 or uint8 (or, with `int8_only`, int8); unknown stays unknown.
inline void CheckQuantized(const NodeAttrs& attrs, const std::vector<DType>& in, size_t i, bool int8_only = false) {
  DType t = in[i];
  if (t == DType::kUnknown) return;
  if (t == DType::kInt8 || (!int8_only && t == DType::kUint8)) return;
  Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " must be ",
        int8_only ? "int8" : "int8 or uint8", " (quantized data), got ", DTypeName(t));
}

// The calibrated output range of the operators that requantize their result themselves.
struct Calib {
  std::optional<double> min, max;
  bool given() const { return min.has_value(); }
};

inline void CheckCalib(const NodeAttrs& attrs, const Calib& c) {
  if (c.min.has_value() != c.max.has_value())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': give both min_calib_range and max_calib_range, or neither");
  if (c.min && *c.min > *c.max)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected min_calib_range <= max_calib_range, got ",
          *c.min, " > ", *c.max);
}

// The operators with enable_float_output write one float32 output (no range) and take no
// calibrated range.
inline void CheckFloatOutput(const NodeAttrs& attrs, const Calib& c, bool float_output) {
  if (float_output && c.given())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': enable_float_output and min_calib_range/max_calib_range exclude each other");
}

inline std::vector<std::string> ProductOutputNames(bool float_output) {
  if (float_output) return {"output"};
  return {"output", "min_output", "max_output"};
}

// The 8-bit type a calibrated result is written in: uint8 for a non-negative range (or
// one cut at 0 by a fused relu), int8 otherwise.
inline DType CalibratedType(const Calib& c, bool relu) {
  return relu || *c.min >= 0 ? DType::kUint8 : DType::kInt8;
}

// The range a calibrated 8-bit result of type t is given: (0, max) for uint8 (zero point
// 0), (-r, r) for int8.
inline Range CalibratedRange(const Calib& c, DType t) {
  double r = std::max(std::fabs(*c.min), std::fabs(*c.max));
  if (t == DType::kUint8) return Range{0.0f, static_cast<float>(std::max(*c.max, 0.0))};
  return Range{static_cast<float>(-r), static_cast<float>(r)};
}

// Rounds to nearest (ties to even, as oneDNN does) and saturates to `t`'s range. rint
// rounds as nearbyint does in the default rounding mode, but GCC inlines it (one roundsd)
// where nearbyint stays a libm call: the split int8 products' epilogue runs it per value.
template <typename T>
inline T Saturate(double v) {
  return ConvertValue<T>(std::rint(v));
}

}  // namespace quant
}  // namespace op
}  // namespace weft

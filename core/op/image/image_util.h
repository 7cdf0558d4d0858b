// Helpers of the _image_* operators: the image layouts they accept, the conversion of a
// float result back to the image's dtype, and the random draws of the random augmenters.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/op/nn/item_grain.h"
#include "core/op/op_util.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {
namespace image {

// Requires (H, W, C), or also (N, H, W, C) when `batch` is allowed; `channels13` asks for 1
// or 3 channels (the colour operators, as MXNet).
inline void CheckHWC(const NodeAttrs& attrs, const Shape& s, bool batch, bool channels13) {
  const bool rank_ok = s.ndim() == 3 || (batch && s.ndim() == 4);
  if (!rank_ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an image of shape (height, width, channels)",
          batch ? " or (N, height, width, channels)" : "", ", got shape ", s.ToString());
  const int64_t c = s[s.ndim() - 1];
  if (channels13 && c >= 0 && c != 1 && c != 3)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected 1 or 3 channels on the last axis, got shape ",
          s.ToString());
}

// The dtype rule of the augmenters: the output has the input's dtype; bool is refused.
inline bool ImageType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*out)[0];
  if (t == DType::kUnknown) return false;
  if (t == DType::kBool)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a numeric image, got dtype bool");
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

// A float result in the image's dtype: integer images saturate to their range and truncate
// towards zero (as MXNet's saturate_cast for uint8); floating images take the value as is.
template <typename T>
inline T Saturate(float v) {
  if constexpr (std::is_integral_v<T>) {
    const float lo = static_cast<float>(std::numeric_limits<T>::lowest());
    const float hi = static_cast<float>(std::numeric_limits<T>::max());
    if (!(v >= lo)) return std::numeric_limits<T>::lowest();  // NaN too
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// The numeric dtypes an image may have (bool is refused by ImageType first).
#define WEFT_IMAGE_TYPE_SWITCH(dtype, DT, ...)                                                  \
  switch (dtype) {                                                                              \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                      \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                     \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;            \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;          \
    case ::weft::DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                      \
    case ::weft::DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;                        \
    case ::weft::DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                      \
    case ::weft::DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;                      \
    default: ::weft::Throw(::weft::ErrorKind::kType, "image operators: unsupported dtype ", ::weft::DTypeName(dtype)); \
  }

// The stream of a random augmenter's draws for one call: they depend only on the seed and
// the draws before it (the random resource's counter), so a seeded run repeats.
inline random::ElementStream CallStream(const NodeAttrs& attrs, const OpContext& ctx) {
  return random::Reserve(attrs, ctx, 1).Stream(0);
}

inline std::vector<ResourceRequest> RandomResource(const NodeAttrs&) {
  return {ResourceRequest{ResourceType::kRandom}};
}

}  // namespace image
}  // namespace op
}  // namespace weft

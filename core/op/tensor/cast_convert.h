// The element conversion of Cast (cast.cc, cast_gpu.cu). MXNet's cast converts a floating
// value to uint8 or int8 through a 32-bit integer and keeps its low byte, so values outside
// the small type's range wrap around (300 -> 44, -1 -> 255 as uint8), and its operator
// documentation shows that. A value that does not fit 32 bits (and NaN) comes out as the
// 32-bit conversion's "invalid" result, INT32_MIN, whose low byte is 0. Every other pair of
// dtypes converts with ConvertValue (saturating to the type's ends, NaN to 0).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/base/convert.h"

namespace weft {
namespace op {

template <typename To, typename From>
WEFT_XINLINE To CastValue(From v) {
  using F = typename AccType<From>::type;
  if constexpr (std::is_floating_point_v<F> && (std::is_same_v<To, uint8_t> || std::is_same_v<To, int8_t>)) {
    const F x = static_cast<F>(v);
    // -2^31 <= x < 2^31, written so that NaN fails it.
    if (x >= F(-2147483648.0) && x < F(2147483648.0)) {
      return static_cast<To>(static_cast<uint8_t>(static_cast<uint32_t>(static_cast<int32_t>(x))));
    }
    return To(0);
  } else {
    return ConvertValue<To>(v);
  }
}

}  // namespace op
}  // namespace weft

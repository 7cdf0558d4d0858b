// Element conversion between dtypes with a defined result for every value. C++ leaves a
// floating value outside an integer type's range, and NaN, undefined when converted (and
// UBSan traps it): here such values saturate to the type's nearest end and NaN becomes 0.
// Every other conversion is the plain static_cast, through float for float16 and bfloat16.
#pragma once

#include <limits>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/base/macros.h"

namespace weft {

// Host and device (cast_gpu.cu runs the same conversion).
template <typename To, typename From>
WEFT_XINLINE To ConvertValue(From v) {
  using F = typename AccType<From>::type;
  const F x = static_cast<F>(v);
  if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> && std::is_floating_point_v<F>) {
    if (x != x) return To(0);
    // The float nearest an end may lie just past it (float(INT32_MAX) is 2^31): >= and <=
    // send it to the end itself.
    if (x <= static_cast<F>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<F>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace weft

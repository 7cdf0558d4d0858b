// float16 and bfloat16 storage types. Arithmetic happens in float: kernels load, compute
// in float and store, which is what both CPUs without native half math and the
// elementwise GPU kernels do anyway.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/base/macros.h"

namespace weft {

namespace detail {
WEFT_XINLINE uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u; std::memcpy(&u, &f, 4); return u;
#endif
}
WEFT_XINLINE float BitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f; std::memcpy(&f, &u, 4); return f;
#endif
}
}  // namespace detail

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  WEFT_XINLINE float16(float f) : bits(FromFloat(f)) {}
  WEFT_XINLINE operator float() const { return ToFloat(bits); }
  static WEFT_XINLINE float16 FromBits(uint16_t b) { float16 h; h.bits = b; return h; }

  // IEEE binary16 with round-to-nearest-even, handling subnormals, inf and NaN.
  static WEFT_XINLINE uint16_t FromFloat(float f) {
    uint32_t x = detail::FloatBits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) return static_cast<uint16_t>(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflows to inf
    if (mag < 0x38800000u) {  // subnormal or zero in half
      if (mag < 0x33000000u) return static_cast<uint16_t>(sign);
      uint32_t e = mag >> 23;
      uint32_t m = (mag & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126 - e;  // 113 - e + 13
      uint32_t half_m = m >> shift;
      uint32_t rem = m & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (half_m & 1))) ++half_m;
      return static_cast<uint16_t>(sign | half_m);
    }
    uint32_t h = ((mag - 0x38000000u) >> 13);
    uint32_t rem = mag & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  static WEFT_XINLINE float ToFloat(uint16_t h) {
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    uint32_t out;
    if (e == 0) {
      if (m == 0) out = sign;
      else {  // subnormal: normalise
        int shift = 0;
        while (!(m & 0x400)) { m <<= 1; ++shift; }
        m &= 0x3ff;
        out = sign | ((113 - shift) << 23) | (m << 13);
      }
    } else if (e == 31) {
      out = sign | 0x7f800000u | (m << 13);
    } else {
      out = sign | ((e + 112) << 23) | (m << 13);
    }
    return detail::BitsFloat(out);
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  WEFT_XINLINE bfloat16(float f) : bits(FromFloat(f)) {}
  WEFT_XINLINE operator float() const { return detail::BitsFloat(static_cast<uint32_t>(bits) << 16); }
  static WEFT_XINLINE bfloat16 FromBits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
  static WEFT_XINLINE uint16_t FromFloat(float f) {
    uint32_t x = detail::FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace weft

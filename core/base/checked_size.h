// Sizes that cannot wrap (DESIGN.md idea 10). Every element count or byte count computed
// from a shape, a file or a message goes through these: an overflow of int64 (elements) or
// of size_t (bytes) is an error naming what was being sized, never a small wrapped number
// that would let a tiny allocation pass for a huge array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/shape.h"

namespace weft {

// a * b, or an error "<what>: a x b overflows ...". Both must be >= 0.
inline int64_t CheckedMul(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    Throw(ErrorKind::kValue, what, ": ", a, " x ", b, " overflows a 64-bit size");
  return r;
}

// a + b, or an error naming `what`. Both must be >= 0.
inline int64_t CheckedAdd(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
    Throw(ErrorKind::kValue, what, ": ", a, " + ", b, " overflows a 64-bit size");
  return r;
}

// The number of elements of a known shape with non-negative dims; an error naming `what`
// when a dim is unknown or negative or when the product overflows int64.
inline int64_t CheckedNumElements(const Shape& s, const std::string& what) {
  WEFT_CHECK(s.is_known(), kShape, what, ": expected a fully known shape, got ", s.ToString());
  int64_t n = 1;
  for (int64_t d : s) {
    WEFT_CHECK(d >= 0, kShape, what, ": dimensions must be non-negative, got ", s.ToString());
    if (__builtin_mul_overflow(n, d, &n))
      Throw(ErrorKind::kValue, what, ": shape ", s.ToString(), " has more elements than a 64-bit size can count");
  }
  return n;
}

// The bytes of an array of shape `s` and dtype `t`; an error naming `what` when the count
// of elements or of bytes overflows.
inline size_t CheckedBytes(const Shape& s, DType t, const std::string& what) {
  int64_t n = CheckedNumElements(s, what);
  size_t bytes;
  if (__builtin_mul_overflow(static_cast<size_t>(n), DTypeSize(t), &bytes))
    Throw(ErrorKind::kValue, what, ": shape ", s.ToString(), " of ", DTypeName(t),
          " needs more bytes than a 64-bit size can count");
  return bytes;
}

}  // namespace weft

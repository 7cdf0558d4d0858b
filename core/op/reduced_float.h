// bfloat16 and float16 keep values, not sums: where a kernel in those types would add many
// terms into its output one by one (a convolution's column-to-image adds, a pooling
// gradient's overlapping windows, a gather's repeated rows), each partial sum is rounded to
// 8 or 11 bits of mantissa and the error grows with the number of terms. These helpers run
// such a kernel on float32 copies (Widen) and round its result once (Narrow). The copies
// live on the heap: the float32 kernels use the operator's temp space themselves.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/base/dtype.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

template <typename T>
constexpr bool kReducedFloat = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

inline bool ReducedFloat(DType dt) { return dt == DType::kBfloat16 || dt == DType::kFloat16; }

// The n values of type dt at src, as float32.
inline std::vector<float> Widen(DType dt, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  WEFT_TYPE_SWITCH(dt, T, {
    const T* s = static_cast<const T*>(src);
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = static_cast<float>(s[i]);
    });
  });
  return out;
}

// dst = src (kWriteTo, kWriteInplace) or dst += src (kAddTo), the sum taken in float32 and
// rounded once.
inline void Narrow(DType dt, const std::vector<float>& src, void* dst, OpReq req) {
  if (req == OpReq::kNullOp) return;
  const int64_t n = static_cast<int64_t>(src.size());
  WEFT_TYPE_SWITCH(dt, T, {
    T* d = static_cast<T*>(dst);
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        d[i] = static_cast<T>(req == OpReq::kAddTo ? static_cast<float>(d[i]) + src[i] : src[i]);
    });
  });
}

}  // namespace op
}  // namespace weft

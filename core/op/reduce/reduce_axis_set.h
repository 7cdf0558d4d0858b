// The axis sets of a reduction (op::SplitReduceAxes: kept and reduced axes, size-1 axes
// dropped, neighbours merged) in a fixed-size form that can be passed to a CUDA kernel
// by value. Plain C++ (WEFT_XINLINE), so it is tested on the CPU.
#pragma once

#include <cstdint>

#include "core/base/error.h"
#include "core/base/macros.h"
#include "core/op/reduce/reduce_kernel.h"

namespace weft {
namespace cuda {

constexpr int kMaxReduceDims = 10;

// Merged axes with their sizes and input strides, outermost first.
struct AxisSet {
  int ndim = 0;
  int64_t shape[kMaxReduceDims];
  int64_t stride[kMaxReduceDims];

  // Input offset of the i-th element of this set of axes (row-major over them).
  WEFT_XINLINE int64_t Offset(int64_t i) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
};

// Throws kUnsupported naming the operator when the set has more axes than kernels take
// (only possible with more than 2 * kMaxReduceDims input axes alternating kept/reduced).
inline AxisSet ToAxisSet(const op::ReduceAxisSet& set, const Shape& in_shape, const char* op_name) {
  int n = static_cast<int>(set.shape.size());
  WEFT_CHECK(n <= kMaxReduceDims, kUnsupported, "Operator '", op_name, "': reducing an input of shape ",
             in_shape.ToString(), " needs more than ", kMaxReduceDims, " axes on GPUs");
  AxisSet a;
  a.ndim = n;
  for (int d = 0; d < n; ++d) {
    a.shape[d] = set.shape[d];
    a.stride[d] = set.stride[d];
  }
  return a;
}

}  // namespace cuda
}  // namespace weft

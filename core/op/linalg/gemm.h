// Matrix products on the CPU for dot, batch_dot and their gradients. Row-major
// throughout: callers describe matrices as they lie in memory. float32 runs on oneDNN's
// GEMM when Weft is built with it; float64, the half types and integers (and float32
// without oneDNN) run on a blocked, register-tiled loop that accumulates in double,
// float and int64 respectively.
#pragma once

#include <cstdint>

#include "core/base/dtype.h"

namespace weft {
namespace op {

// One operand: a row-major matrix (or a batch of them, `batch_stride` elements apart) with
// rows `ld` elements apart, used as is or transposed.
struct GemmOperand {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  bool transpose = false;
};

// For each of `batch` products: C (m x n) = op(A) (m x k) * op(B) (k x n) + beta * C, with
// beta 0 (C is not read, so it may hold garbage) or 1 (accumulate). C's rows are `ldc`
// elements apart and its batches `c_stride` apart. Throws kType naming `op_name` for bool.
void Gemm(DType dtype, int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, double beta,
          void* c, int64_t ldc, int64_t c_stride, int64_t batch, const char* op_name);

}  // namespace op
}  // namespace weft

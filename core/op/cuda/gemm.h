// Matrix products on the GPU through cuBLAS, for dot, batch_dot and friends. Row-major
// throughout: callers describe their matrices as they lie in memory and never think about
// cuBLAS's column-major view. Operands are described as for the CPU GEMM (op::GemmOperand).
// Only for code built with WEFT_USE_CUDA.
#pragma once

#include <cstdint>

#include "core/base/dtype.h"
#include "core/engine/engine.h"
#include "core/op/linalg/gemm.h"

namespace weft {
namespace cuda {

// For each of `batch` products: C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C,
// in `dtype` (float32, float64 or float16; float16 accumulates in float32). C has rows `ldc`
// elements apart and batches `c_stride` elements apart. Runs on the run context's stream
// and device without waiting. beta = 0 never reads C, so C may hold garbage (or NaN).
// Throws kUnsupported for other dtypes and kRuntime, naming the call, when cuBLAS fails.
void Gemm(const engine::RunContext& rctx, DType dtype, int64_t m, int64_t n, int64_t k, double alpha,
          const op::GemmOperand& a, const op::GemmOperand& b, double beta, void* c, int64_t ldc, int64_t c_stride,
          int64_t batch, const char* op_name);

}  // namespace cuda
}  // namespace weft

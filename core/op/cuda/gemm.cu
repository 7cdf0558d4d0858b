#include "core/op/cuda/gemm.h"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "core/base/cuda_utils.h"

namespace weft {
namespace cuda {
namespace {

void CheckCublas(cublasStatus_t st, const char* call, Context ctx, const char* op_name) {
  if (st != CUBLAS_STATUS_SUCCESS)
    Throw(ErrorKind::kRuntime, "Operator '", op_name, "': cuBLAS call ", call, " failed on ", ctx.ToString(), ": ",
          cublasGetStatusString(st));
}

// cuBLAS handles are not safe to share between threads that use different streams, and
// creating one costs milliseconds, so each engine worker thread keeps one per device and
// points it at the stream of the operation it runs.
class HandleCache {
 public:
  ~HandleCache() {
    // At process exit the driver may already be gone; nothing useful can be done then.
    for (auto& kv : handles_) cublasDestroy(kv.second);
  }
  cublasHandle_t Get(Context ctx, cudaStream_t stream, const char* op_name) {
    auto it = handles_.find(ctx.dev_id);
    if (it == handles_.end()) {
      cublasHandle_t h = nullptr;
      CheckCublas(cublasCreate(&h), "cublasCreate", ctx, op_name);
      it = handles_.emplace(ctx.dev_id, h).first;
    }
    CheckCublas(cublasSetStream(it->second, stream), "cublasSetStream", ctx, op_name);
    return it->second;
  }

 private:
  std::unordered_map<int, cublasHandle_t> handles_;
};

int ToInt(int64_t v, const char* what, const char* op_name) {
  WEFT_CHECK(v >= 0 && v <= INT_MAX, kValue, "Operator '", op_name, "': ", what, " = ", v,
             " is beyond what cuBLAS accepts (at most ", INT_MAX, ")");
  return static_cast<int>(v);
}

}  // namespace

void Gemm(const engine::RunContext& rctx, DType dtype, int64_t m, int64_t n, int64_t k, double alpha,
          const op::GemmOperand& a, const op::GemmOperand& b, double beta, void* c, int64_t ldc, int64_t c_stride,
          int64_t batch, const char* op_name) {
  if (m == 0 || n == 0 || batch == 0) return;
  Context ctx = rctx.ctx;
  WEFT_CHECK(ctx.is_gpu(), kInternal, "Operator '", op_name, "': GPU matrix product run on ", ctx.ToString());
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (dtype) {
    case DType::kFloat32: type = CUDA_R_32F; compute = CUBLAS_COMPUTE_32F; break;
    case DType::kFloat64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
    case DType::kFloat16: type = CUDA_R_16F; compute = CUBLAS_COMPUTE_32F; break;
    // weft::bfloat16 is the bits of CUDA's __nv_bfloat16 (the top half of a float32).
    case DType::kBfloat16: type = CUDA_R_16BF; compute = CUBLAS_COMPUTE_32F; break;
    default:
      Throw(ErrorKind::kUnsupported, "Operator '", op_name,
            "': on GPUs, expected float32, float64, float16 or bfloat16, got ", DTypeName(dtype));
  }
  static thread_local HandleCache cache;
  DeviceGuard guard(ctx.dev_id);
  cublasHandle_t handle = cache.Get(ctx, StreamOf(rctx.stream), op_name);

  // cuBLAS is column-major; a row-major matrix is its transpose there. So C = op(A) op(B)
  // in row-major is C^T = op(B)^T op(A)^T in column-major: swap the operands, keep the flags.
  cublasOperation_t op_a = a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  int im = ToInt(m, "rows", op_name), in = ToInt(n, "columns", op_name), ik = ToInt(k, "inner size", op_name);
  // With k = 0 an operand may have rows of length 0; cuBLAS still wants a leading
  // dimension of at least 1, and reads nothing.
  int lda = std::max(1, ToInt(a.ld, "leading dimension of A", op_name));
  int ldb = std::max(1, ToInt(b.ld, "leading dimension of B", op_name));
  int ildc = std::max(1, ToInt(ldc, "leading dimension of C", op_name));
  int ibatch = ToInt(batch, "batch size", op_name);

  // Scaling factors have the compute type.
  float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* pa = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* pb = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&beta) : &beta_f;

  if (batch == 1) {
    CheckCublas(cublasGemmEx(handle, op_b, op_a, in, im, ik, pa, b.data, type, ldb, a.data, type, lda, pb, c, type,
                             ildc, compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx", ctx, op_name);
  } else {
    CheckCublas(cublasGemmStridedBatchedEx(handle, op_b, op_a, in, im, ik, pa, b.data, type, ldb, b.batch_stride,
                                           a.data, type, lda, a.batch_stride, pb, c, type, ildc, c_stride, ibatch,
                                           compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmStridedBatchedEx", ctx, op_name);
  }
}

}  // namespace cuda
}  // namespace weft

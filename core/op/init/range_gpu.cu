// Kernels of range_gpu.h: every element computes its value from its index alone, in double
// as the CPU loop does, so both devices store the same numbers.
#include <cstdint>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/init/range_gpu.h"

namespace weft {
namespace op {
namespace {

template <typename T>
struct AffineKernel {
  T* y;
  double start, step;
  int64_t repeat, n;
  bool has_last, add;
  double last;
  __device__ void operator()(int64_t i) const {
    const double v = has_last && i == n - 1 ? last : start + static_cast<double>(i / repeat) * step;
    // As Store(y + i, req, v) on the CPU.
    y[i] = add ? static_cast<T>(static_cast<double>(y[i]) + v) : static_cast<T>(v);
  }
};

}  // namespace

void AffineFillGPU(const OpContext& ctx, const TBlob& out, OpReq req, double start, double step, int64_t repeat,
                   bool has_last, double last) {
  const int64_t n = out.Size();
  if (req == OpReq::kNullOp || n == 0) return;
  if (repeat < 1) repeat = 1;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool add = req == OpReq::kAddTo;
  switch (out.dtype) {
#define WEFT_AFFINE_CASE(code, T)                                                                      \
  case DType::code:                                                                                    \
    cuda::ForEach(n, s, AffineKernel<T>{out.ptr<T>(), start, step, repeat, n, has_last, add, last}, "range"); \
    break;
    WEFT_AFFINE_CASE(kFloat32, float)
    WEFT_AFFINE_CASE(kFloat64, double)
    WEFT_AFFINE_CASE(kFloat16, float16)
    WEFT_AFFINE_CASE(kBfloat16, bfloat16)
    WEFT_AFFINE_CASE(kUint8, uint8_t)
    WEFT_AFFINE_CASE(kInt8, int8_t)
    WEFT_AFFINE_CASE(kInt32, int32_t)
    WEFT_AFFINE_CASE(kInt64, int64_t)
    WEFT_AFFINE_CASE(kBool, bool)
#undef WEFT_AFFINE_CASE
    default:
      Throw(ErrorKind::kType, "range on a GPU: unsupported dtype ", DTypeName(out.dtype));
  }
}

}  // namespace op
}  // namespace weft

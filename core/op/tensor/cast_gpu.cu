// GPU versions of the dtype conversions: Cast and its gradient (cast.cc), amp_cast,
// amp_multicast and their gradients (amp_cast.cc). Every pair of dtypes converts with
// CastValue (cast_convert.h), the function the CPU loops call, so out-of-range and NaN
// values come out the same way on both devices; equal dtypes are a plain copy.
#include <vector>

#include "core/op/tensor/cast_convert.h"
#include "core/op/data_move_gpu.h"
#include "core/op/elemwise/elemwise_kernels.cuh"

namespace weft {
namespace op {
namespace {

#define WEFT_GPU_CAST_TYPE_SWITCH(dtype, DT, ...)                                      \
  switch (dtype) {                                                                     \
    case DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                     \
    case DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                    \
    case DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;           \
    case DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;         \
    case DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                     \
    case DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;                       \
    case DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                     \
    case DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;                     \
    case DType::kBool: { using DT = bool; __VA_ARGS__ } break;                         \
    default: Throw(ErrorKind::kType, "unsupported dtype code ", static_cast<int>(dtype)); \
  }

// y[i] = convert(x[i]), or y[i] + convert(x[i]) for kAddTo, as the CPU loop writes it.
template <typename I, typename O>
struct ConvertKernel {
  const I* x;
  O* y;
  bool add;
  __device__ void operator()(int64_t i) const {
    const O v = CastValue<O>(x[i]);
    y[i] = add ? static_cast<O>(y[i] + v) : v;
  }
};

void ConvertGPU(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReq req, const char* name) {
  if (req == OpReq::kNullOp) return;
  if (in.dtype == out.dtype) return gpu::Copy(ctx, in, out, req);
  if (out.Size() == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_CAST_TYPE_SWITCH(in.dtype, I, {
    WEFT_GPU_CAST_TYPE_SWITCH(out.dtype, O, {
      cuda::ForEach(out.Size(), s, ConvertKernel<I, O>{in.ptr<I>(), out.ptr<O>(), req == OpReq::kAddTo}, name);
    });
  });
}

// Input i converts into output i (Cast has one pair; the AMP operators one per array).
void PairwiseConvertGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  for (size_t i = 0; i < out.size(); ++i) ConvertGPU(ctx, in[i], out[i], req[i], attrs.op->name.c_str());
}

}  // namespace

WEFT_REGISTER_OP(Cast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);
WEFT_REGISTER_OP(_backward_cast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);
WEFT_REGISTER_OP(amp_cast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);
WEFT_REGISTER_OP(_backward_amp_cast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);
WEFT_REGISTER_OP(amp_multicast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);
WEFT_REGISTER_OP(_backward_amp_multicast).SetAttr<FCompute>("FCompute<gpu>", PairwiseConvertGPU);

}  // namespace op
}  // namespace weft

// GPU versions of clip and _backward_clip with the CPU's functors (clip.h) and bounds
// (a_min, a_max converted to the compute type as on the CPU).
#include "core/base/convert.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/tensor/clip.h"

namespace weft {
namespace op {
namespace {

template <typename T>
struct ClipKernel {
  const T* x;
  T* y;
  cuda::ComputeT<T> lo, hi;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    cuda::Store(y, i, ClipOp::Map(static_cast<cuda::ComputeT<T>>(x[i]), lo, hi), req);
  }
};

template <typename T>
struct ClipGradKernel {
  const T* g;
  const T* x;
  T* y;
  cuda::ComputeT<T> lo, hi;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    cuda::Store(y, i, ClipGradOp::Map(static_cast<A>(g[i]), static_cast<A>(x[i]), lo, hi), req);
  }
};

void ClipComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const auto& p = attrs.Params<ClipParam>();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = cuda::ComputeT<T>;
    cuda::ForEach(in[0].Size(), s,
                  ClipKernel<T>{in[0].ptr<T>(), out[0].ptr<T>(), ConvertValue<A>(p.a_min), ConvertValue<A>(p.a_max),
                                req[0]},
                  name);
  });
}

// Inputs: ograd, data.
void ClipBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const auto& p = attrs.Params<ClipParam>();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[1].dtype, T, name, {
    using A = cuda::ComputeT<T>;
    cuda::ForEach(in[1].Size(), s,
                  ClipGradKernel<T>{in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), ConvertValue<A>(p.a_min),
                                    ConvertValue<A>(p.a_max), req[0]},
                  name);
  });
}

}  // namespace

WEFT_REGISTER_OP(clip).SetAttr<FCompute>("FCompute<gpu>", ClipComputeGPU);
WEFT_REGISTER_OP(_backward_clip).SetAttr<FCompute>("FCompute<gpu>", ClipBackwardGPU);

}  // namespace op
}  // namespace weft

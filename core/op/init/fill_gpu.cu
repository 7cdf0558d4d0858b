// GPU versions of the fill operators (fill.cc). The executor's backward pass makes its head
// gradients with ones_like and the gradients of *_like operators with zeros_like, so a
// graph trained on a GPU needs them there.
#include <vector>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/init/fill_param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {
namespace {

template <typename T>
struct FillKernel {
  T* out;
  cuda::ComputeT<T> value;
  OpReq req;
  __device__ void operator()(int64_t i) const { cuda::Store(out, i, value, req); }
};

void FillGPU(const OpContext& ctx, const TBlob& out, OpReq req, double value, const char* name) {
  if (req == OpReq::kNullOp) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out.dtype, T, name, {
    cuda::ForEach(out.Size(), s, FillKernel<T>{out.ptr<T>(), static_cast<cuda::ComputeT<T>>(value), req}, name);
  });
}

template <int kValue>
void FillConstantGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  FillGPU(ctx, out[0], req[0], kValue, attrs.op->name.c_str());
}

void FillFullGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  FillGPU(ctx, out[0], req[0], attrs.Params<FullParam>().value, attrs.op->name.c_str());
}

}  // namespace

WEFT_REGISTER_OP(_zeros).SetAttr<FCompute>("FCompute<gpu>", FillConstantGPU<0>);
WEFT_REGISTER_OP(_ones).SetAttr<FCompute>("FCompute<gpu>", FillConstantGPU<1>);
WEFT_REGISTER_OP(_full).SetAttr<FCompute>("FCompute<gpu>", FillFullGPU);
WEFT_REGISTER_OP(zeros_like).SetAttr<FCompute>("FCompute<gpu>", FillConstantGPU<0>);
WEFT_REGISTER_OP(ones_like).SetAttr<FCompute>("FCompute<gpu>", FillConstantGPU<1>);

}  // namespace op
}  // namespace weft

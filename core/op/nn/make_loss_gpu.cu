// GPU versions of BlockGrad (stop_gradient) and MakeLoss (make_loss), identities on the
// forward pass (a device-to-device copy, nothing when run in place), and of
// _backward_MakeLoss: grad_scale / norm everywhere, norm being 1, the batch size, or (for
// normalization 'valid') the number of output elements above valid_thresh, counted on the
// device so that no host read is needed; at least 1, as on the CPU.
#include <algorithm>

#include "core/op/data_move_gpu.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/loss_output.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

// The loss layers take floating-point data only.
#define WEFT_GPU_MAKE_LOSS_SWITCH(dtype, DT, what, ...)                                             \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "': on GPUs, expected float32, float64 or float16 data, got ", ::weft::DTypeName(dtype)); \
  }

void IdentityComputeGPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  gpu::Copy(ctx, in[0], out[0], req[0]);
}

// *count += the number of y[i] (read as double, like the CPU) above thresh.
template <typename T>
__global__ void CountAboveKernel(const T* y, int64_t n, double thresh, unsigned long long* count) {
  unsigned long long c = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    c += static_cast<double>(y[i]) > thresh ? 1 : 0;
  if (c) atomicAdd(count, c);
}

// dx[i] (req)= grad_scale / max(norm, 1), norm = *count when count is given.
template <typename T>
struct MakeLossGradFn {
  T* dx;
  double grad_scale;
  double norm;
  const unsigned long long* count;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    const double n = count ? static_cast<double>(*count) : norm;
    cuda::Store(dx, i, static_cast<A>(grad_scale / (n > 1.0 ? n : 1.0)), req);
  }
};

void MakeLossBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<MakeLossParam>();
  const char* name = attrs.op->name.c_str();
  const int64_t n = in[0].Size();
  double norm = 1;
  if (p.normalization == "batch") norm = in[0].ndim() > 0 ? static_cast<double>(in[0].shape[0]) : 1.0;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  unsigned long long* count = nullptr;
  if (p.normalization == "valid") {
    WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].temp != nullptr, kInternal, "Operator '", attrs.op->name,
               "': expected a temporary-space resource, got none (FResourceRequest not honoured)");
    count = static_cast<unsigned long long*>(ctx.requested[0].temp->Get(sizeof(unsigned long long)));
    WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaMemsetAsync(count, 0, sizeof(unsigned long long), s));
  }
  WEFT_GPU_MAKE_LOSS_SWITCH(in[0].dtype, T, name, {
    if (count && n > 0) {
      CountAboveKernel<T><<<cuda::GridFor(n), cuda::kBlockThreads, 0, s>>>(in[0].ptr<T>(), n, p.valid_thresh, count);
      cuda::CheckLaunch(name);
    }
    cuda::ForEach(out[0].Size(), s, MakeLossGradFn<T>{out[0].ptr<T>(), p.grad_scale, norm, count, req[0]}, name);
  });
}

#undef WEFT_GPU_MAKE_LOSS_SWITCH

}  // namespace

WEFT_REGISTER_OP(BlockGrad).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(MakeLoss).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(_backward_MakeLoss).SetAttr<FCompute>("FCompute<gpu>", MakeLossBackwardGPU);

}  // namespace op
}  // namespace weft

// GPU kernels of the random generators (sampler_gpu.h): each thread builds the stream of
// its element (counter first + i, as Draw::Stream on the CPU) and runs sampler.h's
// per-element draw (SampleFrom, RandIntFrom: the sampler and the conversion) and store
// (StoreSample), the functions the CPU loop in sample_op.cc runs.
#include <cstdint>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/random/sampler_gpu.h"

namespace weft {
namespace op {
namespace random {
namespace {

template <typename T, typename Dist>
struct SampleKernel {
  Philox4x32 gen;
  uint64_t first;
  Dist dist;
  T* y;
  bool add;
  __device__ void operator()(int64_t i) const {
    ElementStream s(gen, first + static_cast<uint64_t>(i));
    StoreSample(y, i, SampleFrom<T>(dist, s), add);
  }
};

template <typename T>
struct RandIntKernel {
  Philox4x32 gen;
  uint64_t first;
  int64_t low;
  uint64_t range;
  T* y;
  bool add;
  __device__ void operator()(int64_t i) const {
    ElementStream s(gen, first + static_cast<uint64_t>(i));
    StoreSample(y, i, RandIntFrom<T>(s, low, range), add);
  }
};

}  // namespace

template <typename Dist>
void FillSamplesGPU(const OpContext& ctx, const Draw& draw, const Dist& dist, const TBlob& out, OpReq req,
                    const char* name) {
  if (req == OpReq::kNullOp || out.Size() == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool add = req == OpReq::kAddTo;
  switch (out.dtype) {
    case DType::kFloat32:
      cuda::ForEach(out.Size(), s, SampleKernel<float, Dist>{draw.gen, draw.first, dist, out.ptr<float>(), add}, name);
      break;
    case DType::kFloat64:
      cuda::ForEach(out.Size(), s, SampleKernel<double, Dist>{draw.gen, draw.first, dist, out.ptr<double>(), add},
                    name);
      break;
    case DType::kFloat16:
      cuda::ForEach(out.Size(), s,
                    SampleKernel<float16, Dist>{draw.gen, draw.first, dist, out.ptr<float16>(), add}, name);
      break;
    case DType::kBfloat16:
      cuda::ForEach(out.Size(), s,
                    SampleKernel<bfloat16, Dist>{draw.gen, draw.first, dist, out.ptr<bfloat16>(), add}, name);
      break;
    default:
      Throw(ErrorKind::kType, "Operator '", name, "': expected a floating-point output, got ", DTypeName(out.dtype));
  }
}

void FillRandIntGPU(const OpContext& ctx, const Draw& draw, int64_t low, uint64_t range, const TBlob& out, OpReq req,
                    const char* name) {
  if (req == OpReq::kNullOp || out.Size() == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool add = req == OpReq::kAddTo;
  if (out.dtype == DType::kInt64) {
    cuda::ForEach(out.Size(), s, RandIntKernel<int64_t>{draw.gen, draw.first, low, range, out.ptr<int64_t>(), add},
                  name);
  } else if (out.dtype == DType::kInt32) {
    cuda::ForEach(out.Size(), s, RandIntKernel<int32_t>{draw.gen, draw.first, low, range, out.ptr<int32_t>(), add},
                  name);
  } else {
    Throw(ErrorKind::kType, "Operator '", name, "': expected an int32 or int64 output, got ", DTypeName(out.dtype));
  }
}

template void FillSamplesGPU(const OpContext&, const Draw&, const UniformDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const NormalDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const GammaDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const ExponentialDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const PoissonDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const NegBinomialDist&, const TBlob&, OpReq, const char*);
template void FillSamplesGPU(const OpContext&, const Draw&, const GenNegBinomialDist&, const TBlob&, OpReq,
                             const char*);

}  // namespace random
}  // namespace op
}  // namespace weft

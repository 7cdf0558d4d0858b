// GPU versions of the per-element samplers (multisample.cc: _sample_uniform, _sample_normal,
// _sample_gamma, _sample_exponential, _sample_poisson, _sample_negative_binomial,
// _sample_generalized_negative_binomial). Element i reads the parameters of distribution
// i / per on the device and runs sampler.h's FromParams, Valid, SampleFrom and StoreSample,
// the functions the CPU loop runs, with the counters reserved as the CPU reserves them: a seed gives the
// same values on either device.
//
// The CPU rejects invalid parameters (a negative gamma shape, p outside (0, 1]) with an
// error; that check needs the values on the host, so the GPU does not make it (as
// _sample_multinomial's is not made): the elements of such a distribution are NaN.
#include <cmath>
#include <cstdint>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/random/multisample.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {
namespace {

// A parameter value as the CPU reads it (ReadParams: the value in double, through float for
// float16 and bfloat16).
__device__ __forceinline__ double LoadParam(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<double>(static_cast<const float*>(p)[i]);
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kFloat16: return static_cast<double>(static_cast<float>(static_cast<const float16*>(p)[i]));
    case DType::kBfloat16: return static_cast<double>(static_cast<float>(static_cast<const bfloat16*>(p)[i]));
    default: return NAN;  // not reached: the host checks the dtype
  }
}

template <typename T, typename Dist>
struct MultiSampleFn {
  Philox4x32 gen;
  uint64_t first;
  const void* a;
  const void* b;  // null for one-parameter families
  DType param_dtype;
  int64_t per;
  T* y;
  bool add;
  __device__ void operator()(int64_t i) const {
    const int64_t d = i / per;
    const Dist dist = Dist::FromParams(LoadParam(a, param_dtype, d), b ? LoadParam(b, param_dtype, d) : 0.0);
    // The CPU throws for such a distribution before drawing; here its elements are NaN.
    random::ElementStream s(gen, first + static_cast<uint64_t>(i));
    const T v = dist.Valid() ? random::SampleFrom<T>(dist, s) : static_cast<T>(static_cast<double>(NAN));
    random::StoreSample(y, i, v, add);
  }
};

template <typename Dist>
void MultiSampleGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const DType pt = in[0].dtype;
  if (pt != DType::kFloat32 && pt != DType::kFloat64 && pt != DType::kFloat16 && pt != DType::kBfloat16)
    Throw(ErrorKind::kType, "Operator '", name, "': expected the distribution parameters in a floating-point dtype, got ",
          DTypeName(pt));
  const int64_t n_dist = in[0].Size();
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].Size() != n_dist || in[i].dtype != pt)
      Throw(ErrorKind::kShape, "Operator '", name, "': input ", i, " is ", DTypeName(in[i].dtype), " of shape ",
            in[i].shape.ToString(), ", expected ", DTypeName(pt), " of input 0's shape ", in[0].shape.ToString());
  const int64_t per = attrs.Params<MultiSampleParam>().shape.Size();
  const int64_t n = out[0].Size();
  if (n != n_dist * per)
    Throw(ErrorKind::kShape, "Operator '", name, "': output has ", n, " elements, expected ", n_dist * per);
  // Reserved only where the CPU reserves: after its checks, for a non-empty output.
  if (n == 0) return;
  const random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const void* a = in[0].dptr;
  const void* b = in.size() > 1 ? in[1].dptr : nullptr;
  const bool add = req[0] == OpReq::kAddTo;
  switch (out[0].dtype) {
    case DType::kFloat32:
      cuda::ForEach(n, s, MultiSampleFn<float, Dist>{draw.gen, draw.first, a, b, pt, per, out[0].ptr<float>(), add},
                    name);
      break;
    case DType::kFloat64:
      cuda::ForEach(n, s,
                    MultiSampleFn<double, Dist>{draw.gen, draw.first, a, b, pt, per, out[0].ptr<double>(), add}, name);
      break;
    case DType::kFloat16:
      cuda::ForEach(n, s,
                    MultiSampleFn<float16, Dist>{draw.gen, draw.first, a, b, pt, per, out[0].ptr<float16>(), add},
                    name);
      break;
    case DType::kBfloat16:
      cuda::ForEach(n, s,
                    MultiSampleFn<bfloat16, Dist>{draw.gen, draw.first, a, b, pt, per, out[0].ptr<bfloat16>(), add},
                    name);
      break;
    default:
      Throw(ErrorKind::kType, "Operator '", name, "': expected a floating-point output, got ",
            DTypeName(out[0].dtype));
  }
}

}  // namespace

WEFT_REGISTER_OP(_sample_uniform).SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::UniformDist>);
WEFT_REGISTER_OP(_sample_normal).SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::NormalDist>);
WEFT_REGISTER_OP(_sample_gamma).SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::GammaDist>);
WEFT_REGISTER_OP(_sample_exponential).SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::ExponentialDist>);
WEFT_REGISTER_OP(_sample_poisson).SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::PoissonDist>);
WEFT_REGISTER_OP(_sample_negative_binomial)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::NegBinomialDist>);
WEFT_REGISTER_OP(_sample_generalized_negative_binomial)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSampleGPU<random::GenNegBinomialDist>);

}  // namespace op
}  // namespace weft

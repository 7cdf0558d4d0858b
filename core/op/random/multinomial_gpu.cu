// GPU version of _sample_multinomial, drawing what multinomial.cc draws: the counters are
// reserved from the context's random state on the host (GPU i shares CPU i's stream of
// the seed), sample i uses the Philox stream first + i, takes one Uniform() scaled by its
// row's total and picks the first category whose cumulative sum (in double, summed in
// order) exceeds it, falling back to the last category with mass. The cumulative sums are
// computed once per row into temporary space.
//
// The CPU rejects rows that are not probability distributions; that check needs the
// values on the host, so the GPU does not make it (as take's mode='raise' is not checked
// on the GPU): such rows are sampled in proportion to their entries.
#include <cmath>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/random/multinomial.h"
#include "core/op/random/sampler.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

// The probabilities' dtypes.
#define WEFT_GPU_PROB_SWITCH(dtype, DT, what, ...)                                                  \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "': on GPUs, expected float32, float64 or float16 probabilities, got ",         \
                    ::weft::DTypeName(dtype));                                                      \
  }

// The sample dtypes MultinomialType allows.
#define WEFT_GPU_SAMPLE_SWITCH(dtype, DT, what, ...)                                                \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                          \
    case ::weft::DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "': on GPUs, expected int32, uint8, float16, float32 or float64 samples, got ", \
                    ::weft::DTypeName(dtype));                                                      \
  }

template <typename T>
__device__ __forceinline__ double AsDouble(T v) {
  return static_cast<double>(static_cast<cuda::ComputeT<T>>(v));
}

// cum[r*k + j] = p[r*k] + ... + p[r*k + j] in double, summed in order as on the CPU.
template <typename T>
struct CumulativeFn {
  const T* p;
  double* cum;
  int64_t k;
  __device__ void operator()(int64_t r) const {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      sum += AsDouble(p[r * k + j]);
      cum[r * k + j] = sum;
    }
  }
};

template <typename I, typename T>
struct SampleFn {
  Philox4x32 gen;
  uint64_t first;
  const T* p;
  const double* cum;
  int64_t k, per_row;
  I* idx;     // null when the samples are not wanted
  T* prob;    // null when the log probabilities are not wanted
  OpReq req_idx, req_prob;
  __device__ void operator()(int64_t i) const {
    const int64_t r = i / per_row;
    const double* c = cum + r * k;
    random::ElementStream s(gen, first + static_cast<uint64_t>(i));
    const double u = s.Uniform() * c[k - 1];
    // std::upper_bound: the first j with c[j] > u.
    int64_t lo = 0, hi = k;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (u < c[mid]) hi = mid;
      else lo = mid + 1;
    }
    int64_t j = lo;
    if (j == k) {
      j = k - 1;
      while (j > 0 && !(AsDouble(p[r * k + j]) > 0)) --j;
    }
    if (idx) cuda::Store(idx, i, static_cast<double>(j), req_idx);
    if (prob) cuda::Store(prob, i, log(AsDouble(p[r * k + j])), req_prob);
  }
};

void MultinomialComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const char* name = attrs.op->name.c_str();
  const TBlob& data = in[0];
  const int64_t k = data.shape[data.shape.ndim() - 1];
  const int64_t rows = data.Size() / k;
  const int64_t per_row = rows == 0 ? 0 : out[0].Size() / rows;
  const bool want_prob = out.size() > 1 && req[1] != OpReq::kNullOp;
  if (req[0] == OpReq::kNullOp && !want_prob) return;
  const int64_t n = out[0].Size();
  // Reserved as on the CPU, also when there is nothing to draw, so that the counters of
  // later draws agree on both devices.
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  if (n == 0) return;
  WEFT_CHECK(ctx.requested.size() > 1 && ctx.requested[1].temp != nullptr, kInternal, "Operator '", attrs.op->name,
             "': expected a temporary-space resource, got none (FResourceRequest not honoured)");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  double* cum = static_cast<double*>(ctx.requested[1].temp->Get(sizeof(double) * static_cast<size_t>(data.Size())));
  WEFT_GPU_PROB_SWITCH(data.dtype, T, name, {
    cuda::ForEach(rows, s, CumulativeFn<T>{data.ptr<T>(), cum, k}, name);
    WEFT_GPU_SAMPLE_SWITCH(out[0].dtype, I, name, {
      I* idx = req[0] != OpReq::kNullOp ? out[0].ptr<I>() : nullptr;
      T* prob = want_prob ? out[1].ptr<T>() : nullptr;
      cuda::ForEach(n, s,
                    SampleFn<I, T>{draw.gen, draw.first, data.ptr<T>(), cum, k, per_row, idx, prob, req[0],
                                   want_prob ? req[1] : OpReq::kNullOp},
                    name);
    });
  });
}

#undef WEFT_GPU_PROB_SWITCH
#undef WEFT_GPU_SAMPLE_SWITCH

}  // namespace

WEFT_REGISTER_OP(_sample_multinomial).SetAttr<FCompute>("FCompute<gpu>", MultinomialComputeGPU);

}  // namespace op
}  // namespace weft

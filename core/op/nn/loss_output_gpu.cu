// GPU versions of the loss layers of loss_output.cc and of their `_backward_*` operators:
// SoftmaxOutput, Linear/Logistic/MAERegressionOutput, softmax_cross_entropy and
// _sparse_softmax_cross_entropy (Gluon's SoftmaxCrossEntropyLoss). Same formulas and
// accumulation types as the CPU code (float for float16, bfloat16 and float32, double for float64).
//
// Row-wise work (a softmax over the class axis) runs one warp per row when the classes are
// contiguous (inner == 1) and there are enough of them to occupy a warp, lanes striding over
// the classes and shuffles combining them; otherwise one thread per row (neighbouring threads
// then read neighbouring positions when inner > 1).
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/op/indexing/index_gpu.cuh"
#include "core/op/nn/loss_output.h"
#include "core/resource/resource.h"

// The loss layers take floating-point data only.
#define WEFT_GPU_LOSS_SWITCH(dtype, DT, what, ...)                                                  \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;              \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "': on GPUs, expected float32, float64, float16 or bfloat16 data, got ", ::weft::DTypeName(dtype)); \
  }

namespace weft {
namespace op {
namespace {

// nn::Acc of norm_util.h.
template <typename T>
using LossAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }
__device__ __forceinline__ float Log(float x) { return logf(x); }
__device__ __forceinline__ double Log(double x) { return log(x); }

// A label as the CPU's LabelValues reads it (a double), and as the integer it names.
template <typename L>
__device__ __forceinline__ double LabelValue(L v) {
  return static_cast<double>(static_cast<typename AccType<L>::type>(v));
}
template <typename L>
__device__ __forceinline__ int64_t LabelIndex(L v) {
  return cuda::ToIndex(LabelValue(v));
}

// Data as outer x C x inner; a row is one position of (outer, inner), its classes `inner` apart.
struct RowGeom {
  int64_t outer = 1, C = 1, inner = 1;
  int64_t rows() const { return outer * inner; }
};

RowGeom SplitAt(const Shape& s, int axis) {
  RowGeom g;
  g.outer = s.ProdRange(0, axis);
  g.C = s[axis];
  g.inner = s.ProdRange(axis + 1, s.ndim());
  return g;
}

__device__ __forceinline__ int64_t RowBase(int64_t row, int64_t C, int64_t inner) {
  return (row / inner) * C * inner + row % inner;
}

// Max and sum over the lanes of a row's group (a whole warp when width is 32, else one
// thread). The xor butterfly leaves the same value in every lane; max is std::max's rule,
// so a NaN never replaces a number (as on the CPU).
template <typename A>
__device__ __forceinline__ A GroupMax(A v, int width) {
  if (width == 32)
    for (int off = 16; off > 0; off >>= 1) {
      const A o = __shfl_xor_sync(0xffffffffu, v, off);
      v = v < o ? o : v;
    }
  return v;
}
template <typename A>
__device__ __forceinline__ A GroupSum(A v, int width) {
  if (width == 32)
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// The row's maximum and sum of exp(x - max).
template <typename A, typename T>
__device__ __forceinline__ void RowMaxSum(const T* xr, int64_t C, int64_t inner, int lane, int width, A* mx, A* sum) {
  A m = -std::numeric_limits<A>::infinity();
  for (int64_t k = lane; k < C; k += width) {
    const A v = static_cast<A>(xr[k * inner]);
    m = m < v ? v : m;
  }
  m = GroupMax(m, width);
  A s = 0;
  for (int64_t k = lane; k < C; k += width) s += Exp(static_cast<A>(xr[k * inner]) - m);
  *mx = m;
  *sum = GroupSum(s, width);
}

// Runs f(row, lane, width) for every row, `width` lanes per row (32: a warp, whose `row`
// depends only on the warp, so whole warps enter and leave the loop together; or 1).
template <typename F>
__global__ void RowGroupsKernel(int64_t rows, int width, F f) {
  const int per_block = blockDim.x / width;
  const int lane = threadIdx.x % width;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / width; r < rows;
       r += static_cast<int64_t>(gridDim.x) * per_block)
    f(r, lane, width);
}

template <typename F>
void ForEachRow(int64_t rows, int64_t C, int64_t inner, cudaStream_t s, const F& f, const char* what) {
  if (rows <= 0) return;
  const int width = inner == 1 && C >= 16 ? 32 : 1;
  const int64_t per_block = cuda::kBlockThreads / width;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((rows + per_block - 1) / per_block, 65535));
  RowGroupsKernel<<<blocks, cuda::kBlockThreads, 0, s>>>(rows, width, f);
  cuda::CheckLaunch(what);
}

// ------------------------------------------------------------------ SoftmaxOutput
RowGeom SoftmaxOutputGeom(const SoftmaxOutputParam& p, const Shape& d) {
  if (p.multi_output) return SplitAt(d, 1);
  if (p.preserve_shape) return SplitAt(d, d.ndim() - 1);
  RowGeom g;
  g.outer = d[0];
  g.C = d.ProdRange(1, d.ndim());
  return g;
}

template <typename T>
struct SoftmaxRowFn {
  const T* x;
  T* y;
  int64_t C, inner;
  OpReq req;
  __device__ void operator()(int64_t row, int lane, int width) const {
    using A = LossAcc<T>;
    const int64_t base = RowBase(row, C, inner);
    A mx, sum;
    RowMaxSum(x + base, C, inner, lane, width, &mx, &sum);
    for (int64_t k = lane; k < C; k += width) {
      const int64_t j = base + k * inner;
      cuda::Store(y, j, Exp(static_cast<A>(x[j]) - mx) / sum, req);
    }
  }
};

void SoftmaxOutputComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const RowGeom g = SoftmaxOutputGeom(attrs.Params<SoftmaxOutputParam>(), in[0].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[0].dtype, T, name, {
    ForEachRow(g.rows(), g.C, g.inner, s, SoftmaxRowFn<T>{in[0].ptr<T>(), out[0].ptr<T>(), g.C, g.inner, req[0]},
               name);
  });
}

// Adds the labels not equal to `ignore` into *count (zeroed before).
template <typename L>
__global__ void CountValidKernel(const L* label, int64_t n, int64_t ignore, unsigned long long* count) {
  unsigned long long c = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    c += LabelIndex(label[i]) != ignore ? 1 : 0;
  for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31) == 0 && c > 0) atomicAdd(count, c);
}

template <typename T, typename L>
struct SoftmaxOutputGradFn {
  const T* g;
  const T* y;
  const L* label;
  T* dx;
  int64_t C, inner;
  bool use_ignore, out_grad;
  int64_t ignore;
  double on, off;
  double scale;                      // grad_scale / norm, unless `valid` is given
  double grad_scale;                 // with `valid`: divided by the count on the device
  const unsigned long long* valid;   // the labels not ignored, for normalization='valid'
  OpReq req;
  __device__ void operator()(int64_t j) const {
    using A = LossAcc<T>;
    const int64_t k = (j / inner) % C;
    const int64_t r = (j / (C * inner)) * inner + j % inner;
    const int64_t li = LabelIndex(label[r]);
    A v = 0;
    if (!(use_ignore && li == ignore)) {
      double sc = scale;
      if (valid) {
        const unsigned long long cnt = *valid;
        sc = grad_scale / static_cast<double>(cnt > 0 ? cnt : 1);
      }
      v = static_cast<A>((static_cast<double>(y[j]) - (k == li ? on : off)) * sc);
      if (out_grad) v *= static_cast<A>(g[j]);
    }
    cuda::Store(dx, j, v, req);
  }
};

// Inputs: out_grad, output, label. Output: d data.
void SoftmaxOutputBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SoftmaxOutputParam>();
  const char* name = attrs.op->name.c_str();
  if (in[2].shape == in[1].shape)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "': probability labels (a label of the data's shape ",
          in[1].shape.ToString(), ") are supported on the CPU only");
  const RowGeom geom = SoftmaxOutputGeom(p, in[1].shape);
  const int64_t nlabels = in[2].Size();
  const int64_t ignore = ConvertValue<int64_t>(p.ignore_label);
  // Only normalization='valid' with use_ignore needs the labels' values; without
  // use_ignore every label counts.
  const bool count_on_device = p.normalization == "valid" && p.use_ignore;
  double norm = 1;
  if (p.normalization == "batch") norm = static_cast<double>(in[1].shape[0]);
  else if (p.normalization == "valid") norm = static_cast<double>(std::max<int64_t>(nlabels, 1));
  // As on the CPU: multi_output also averages over the positions sharing a label, except under 'valid'.
  if (p.multi_output && p.normalization != "valid") norm *= static_cast<double>(geom.inner);
  const double scale = p.grad_scale / std::max(norm, 1e-300);
  const double off = geom.C > 1 ? p.smooth_alpha / static_cast<double>(geom.C - 1) : 0.0;
  const double on = 1.0 - p.smooth_alpha;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  unsigned long long* valid = nullptr;
  if (count_on_device) {
    WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].temp != nullptr, kInternal, "Operator '", attrs.op->name,
               "': expected a temporary-space resource, got none (FResourceRequest not honoured)");
    valid = static_cast<unsigned long long*>(ctx.requested[0].temp->Get(sizeof(unsigned long long)));
    WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaMemsetAsync(valid, 0, sizeof(unsigned long long), s));
  }
  WEFT_GPU_LOSS_SWITCH(in[1].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[2].dtype, L, name, {
      if (count_on_device && nlabels > 0) {
        CountValidKernel<L><<<cuda::GridFor(nlabels), cuda::kBlockThreads, 0, s>>>(in[2].ptr<L>(), nlabels, ignore,
                                                                                   valid);
        cuda::CheckLaunch(name);
      }
      cuda::ForEach(in[1].Size(), s,
                    SoftmaxOutputGradFn<T, L>{in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<L>(), out[0].ptr<T>(), geom.C,
                                              geom.inner, p.use_ignore, p.out_grad, ignore, on, off, scale,
                                              p.grad_scale, valid, req[0]},
                    name);
    });
  });
}

// ------------------------------------------------------------------ regression outputs
enum class Reg { kLinear, kLogistic, kMAE };

Reg RegOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("Logistic") != std::string::npos) return Reg::kLogistic;
  if (n.find("MAE") != std::string::npos) return Reg::kMAE;
  return Reg::kLinear;
}

template <typename T>
struct RegressionFn {
  const T* x;
  T* y;
  bool logistic;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = LossAcc<T>;
    const A v = static_cast<A>(x[i]);
    cuda::Store(y, i, logistic ? A(1) / (A(1) + Exp(-v)) : v, req);
  }
};

template <typename T, typename L>
struct RegressionGradFn {
  const T* y;
  const L* label;
  T* dx;
  double scale;
  bool mae;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = LossAcc<T>;
    double d = static_cast<double>(y[i]) - LabelValue(label[i]);
    if (mae) d = d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
    cuda::Store(dx, i, static_cast<A>(d * scale), req);
  }
};

void RegressionComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const bool logistic = RegOf(attrs) == Reg::kLogistic;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[0].dtype, T, name, {
    cuda::ForEach(in[0].Size(), s, RegressionFn<T>{in[0].ptr<T>(), out[0].ptr<T>(), logistic, req[0]}, name);
  });
}

// Inputs: output, label.
void RegressionBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const bool mae = RegOf(attrs) == Reg::kMAE;
  const int64_t batch = in[1].ndim() > 0 ? in[1].shape[0] : 1;
  const double per_sample = batch > 0 ? static_cast<double>(in[1].Size()) / static_cast<double>(batch) : 1.0;
  const double scale = attrs.Params<RegressionOutputParam>().grad_scale / std::max(per_sample, 1.0);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, L, name, {
      cuda::ForEach(in[0].Size(), s,
                    RegressionGradFn<T, L>{in[0].ptr<T>(), in[1].ptr<L>(), out[0].ptr<T>(), scale, mae, req[0]}, name);
    });
  });
}

// ------------------------------------------------------------------ softmax_cross_entropy
// The sum over rows of lse(row) - x[row, label] in one block of kSumWarps warps, a warp per
// row; the warps' partial sums (doubles, as the CPU adds) are added in a fixed order. A
// label outside [0, C) adds nothing: the CPU refuses such labels before computing, which
// on a GPU would mean copying the labels back and waiting inside the operator.
constexpr int kSumWarps = 32;

template <typename T, typename L>
__global__ void __launch_bounds__(kSumWarps * 32)
    CrossEntropySumKernel(const T* x, const L* label, int64_t N, int64_t C, T* out, OpReq req) {
  using A = LossAcc<T>;
  __shared__ double part[kSumWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double acc = 0;
  for (int64_t r = warp; r < N; r += kSumWarps) {
    A mx, sum;
    RowMaxSum(x + r * C, C, 1, lane, 32, &mx, &sum);
    const int64_t li = LabelIndex(label[r]);
    if (lane == 0 && li >= 0 && li < C) acc += static_cast<double>(mx + Log(sum) - static_cast<A>(x[r * C + li]));
  }
  if (lane == 0) part[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < kSumWarps; ++w) total += part[w];
    cuda::Store(out, 0, static_cast<A>(total), req);
  }
}

void CrossEntropyComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const int64_t N = in[0].shape[0], C = in[0].shape[1];
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, L, name, {
      CrossEntropySumKernel<T, L><<<1, kSumWarps * 32, 0, s>>>(in[0].ptr<T>(), in[1].ptr<L>(), N, C, out[0].ptr<T>(),
                                                               req[0]);
      cuda::CheckLaunch(name);
    });
  });
}

// d data = (softmax(data) - one_hot(label)) * out_grad[0], the probability in double as on
// the CPU.
template <typename T, typename L>
struct CrossEntropyGradFn {
  const T* og;
  const T* x;
  const L* label;
  T* dx;
  int64_t C;
  OpReq req;
  __device__ void operator()(int64_t row, int lane, int width) const {
    using A = LossAcc<T>;
    const T* xr = x + row * C;
    A mx, sum;
    RowMaxSum(xr, C, 1, lane, width, &mx, &sum);
    const A lse = mx + Log(sum);
    const int64_t li = LabelIndex(label[row]);
    const double gs = static_cast<double>(og[0]);
    for (int64_t k = lane; k < C; k += width) {
      const double p = exp(static_cast<double>(static_cast<A>(xr[k]) - lse));
      cuda::Store(dx, row * C + k, static_cast<A>((p - (k == li ? 1.0 : 0.0)) * gs), req);
    }
  }
};

// Inputs: out_grad (1,), data, label.
void CrossEntropyBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const int64_t N = in[1].shape[0], C = in[1].shape[1];
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[1].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[2].dtype, L, name, {
      ForEachRow(N, C, 1, s,
                 CrossEntropyGradFn<T, L>{in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<L>(), out[0].ptr<T>(), C, req[0]},
                 name);
    });
  });
}

// ------------------------------------------------------------------ _sparse_softmax_cross_entropy
RowGeom SparseCEGeom(const NodeAttrs& attrs, const Shape& data) {
  return SplitAt(data, CheckAxis(attrs, attrs.Params<SparseCEParam>().axis, data.ndim()));
}

// Per position: loss = lse - x[label] and/or grad = (softmax - one_hot(label)) * ograd, the
// label clipped into [0, C) as pick's default mode does.
template <typename T, typename L>
struct SparseCEFn {
  const T* x;
  const L* label;
  T* loss;         // or null
  T* grad;         // or null
  const T* ograd;  // with grad
  int64_t C, inner;
  OpReq req;       // for grad; the loss is always written
  __device__ void operator()(int64_t pos, int lane, int width) const {
    using A = LossAcc<T>;
    const int64_t base = RowBase(pos, C, inner);
    A mx, sum;
    RowMaxSum(x + base, C, inner, lane, width, &mx, &sum);
    const A lse = mx + Log(sum);
    const int64_t li = cuda::ResolveIndex(cuda::ToIndex(label[pos]), C, IndexMode::kClip);
    if (loss && lane == 0) loss[pos] = static_cast<T>(lse - static_cast<A>(x[base + li * inner]));
    if (grad) {
      const A g = static_cast<A>(ograd[pos]);
      for (int64_t k = lane; k < C; k += width) {
        const int64_t j = base + k * inner;
        cuda::Store(grad, j, (Exp(static_cast<A>(x[j]) - lse) - (k == li ? A(1) : A(0))) * g, req);
      }
    }
  }
};

void SparseCEComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_CHECK(req[0] == OpReq::kWriteTo || req[0] == OpReq::kWriteInplace, kValue, "Operator '", attrs.op->name,
             "': the loss output only supports write requests");
  const char* name = attrs.op->name.c_str();
  const RowGeom g = SparseCEGeom(attrs, in[0].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, L, name, {
      ForEachRow(g.rows(), g.C, g.inner, s,
                 SparseCEFn<T, L>{in[0].ptr<T>(), in[1].ptr<L>(), out[0].ptr<T>(), nullptr, nullptr, g.C, g.inner,
                                  OpReq::kWriteTo},
                 name);
    });
  });
}

// Inputs: out_grad (the loss's shape), data, label.
void SparseCEBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const RowGeom g = SparseCEGeom(attrs, in[1].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_LOSS_SWITCH(in[1].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[2].dtype, L, name, {
      ForEachRow(g.rows(), g.C, g.inner, s,
                 SparseCEFn<T, L>{in[1].ptr<T>(), in[2].ptr<L>(), nullptr, out[0].ptr<T>(), in[0].ptr<T>(), g.C,
                                  g.inner, req[0]},
                 name);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(SoftmaxOutput).SetAttr<FCompute>("FCompute<gpu>", SoftmaxOutputComputeGPU);
WEFT_REGISTER_OP(_backward_SoftmaxOutput).SetAttr<FCompute>("FCompute<gpu>", SoftmaxOutputBackwardGPU);
WEFT_REGISTER_OP(LinearRegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionComputeGPU);
WEFT_REGISTER_OP(_backward_LinearRegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionBackwardGPU);
WEFT_REGISTER_OP(LogisticRegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionComputeGPU);
WEFT_REGISTER_OP(_backward_LogisticRegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionBackwardGPU);
WEFT_REGISTER_OP(MAERegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionComputeGPU);
WEFT_REGISTER_OP(_backward_MAERegressionOutput).SetAttr<FCompute>("FCompute<gpu>", RegressionBackwardGPU);
WEFT_REGISTER_OP(softmax_cross_entropy).SetAttr<FCompute>("FCompute<gpu>", CrossEntropyComputeGPU);
WEFT_REGISTER_OP(_backward_softmax_cross_entropy).SetAttr<FCompute>("FCompute<gpu>", CrossEntropyBackwardGPU);
WEFT_REGISTER_OP(_sparse_softmax_cross_entropy).SetAttr<FCompute>("FCompute<gpu>", SparseCEComputeGPU);
WEFT_REGISTER_OP(_backward_sparse_softmax_cross_entropy).SetAttr<FCompute>("FCompute<gpu>", SparseCEBackwardGPU);

}  // namespace op
}  // namespace weft

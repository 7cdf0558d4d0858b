// GPU versions of BatchNorm and _backward_BatchNorm (batch_norm.cc), without cuDNN, with the
// CPU's formulas: the batch moments shifted by the channel's first value, the biased
// variance, the moving statistics updated as moving * momentum + batch * (1 - momentum),
// fix_gamma as gamma = 1, sums in the CPU's accumulation type (float for float16 and bfloat16).
//
// Two ways through, by size. Small tensors: one block per channel reduces the channel and
// then writes it (one launch). Large ones (a ResNet's activations): one block per channel
// leaves most of the GPU idle when channels are few and large (64 channels of 200,000
// elements at a ResNet-50's stem), so the reductions are split into chunks of a channel,
// partial sums go to temporary space, one thread per channel combines them in chunk order
// (deterministic) into per-channel coefficients, and the elementwise pass runs over every
// element at once.
#include <algorithm>
#include <vector>

#include "core/op/nn/batch_norm_param.h"
#include "core/op/nn/nn_gpu.cuh"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {
namespace {

using nngpu::Acc;

// What the forward saves as its third output (MXNet's "var"): 1 / sqrt(var + eps), the
// batch's 0 when a constant channel meets eps = 0 (as MXNet, rather than infinity). A replay
// (_BatchNorm_replay) reads a saved one as `var`.
template <typename A>
__device__ A InvStd(A var, A eps, bool batch_stats, bool replay) {
  if (replay) return var;
  return batch_stats && var == A(0) && eps == A(0) ? A(0) : A(1) / sqrt(var + eps);
}

struct ChannelLayout {
  int64_t outer, C, inner;
};

// A thread's elements of channel c: the j-th (j = threadIdx.x, + blockDim.x, ...; j < outer *
// inner) is at (j / inner) * C * inner + c * inner + j % inner. Next() steps j by blockDim.x
// with additions only (a 64-bit division per element would cost more than the load).
struct ChannelWalk {
  int64_t j, pos, i, stride, inner, step_pos, step_i;
  // (An empty inner run means no elements; 1 stands in for it so nothing divides by 0.)
  __device__ ChannelWalk(const ChannelLayout& l, int64_t c)
      : j(threadIdx.x), stride(l.C * l.inner), inner(l.inner > 0 ? l.inner : 1) {
    const int64_t o = threadIdx.x / inner;
    i = threadIdx.x - o * inner;
    pos = o * stride + c * l.inner + i;
    const int64_t q = blockDim.x / inner;
    step_i = blockDim.x - q * inner;
    step_pos = q * stride + step_i;
  }
  __device__ void Next() {
    j += blockDim.x;
    pos += step_pos;
    i += step_i;
    if (i >= inner) {
      i -= inner;
      pos += stride - inner;
    }
  }
};

template <typename T, typename P>
__global__ void __launch_bounds__(1024)
    BatchNormForwardKernel(ChannelLayout l, const T* x, const P* gamma, const P* beta, P* mmean, P* mvar, T* y,
                           P* smean, P* svar, Acc<T> eps, Acc<T> mom, bool batch_stats, bool replay, bool fix_gamma, OpReq req_y,
                           OpReq req_mean, OpReq req_var) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t per = l.outer * l.inner;
  const A count = static_cast<A>(per);
  for (int64_t c = blockIdx.x; c < l.C; c += gridDim.x) {
    A mean, var;
    if (batch_stats) {
      // Shifted by the channel's first value, as on the CPU, so that E[d^2] - E[d]^2 does
      // not cancel when the mean is large against the spread.
      const A shift = per > 0 ? static_cast<A>(x[c * l.inner]) : A(0);
      A sum = 0, sq = 0;
      for (ChannelWalk w(l, c); w.j < per; w.Next()) {
        A d = static_cast<A>(x[w.pos]) - shift;
        sum += d;
        sq += d * d;
      }
      sum = nngpu::BlockSum(sum, scratch);
      sq = nngpu::BlockSum(sq, scratch);
      A md = per > 0 ? sum / count : A(0);
      mean = shift + md;
      var = per > 0 ? max(A(0), sq / count - md * md) : A(0);
      if (threadIdx.x == 0) {
        mmean[c] = static_cast<P>(static_cast<A>(mmean[c]) * mom + mean * (A(1) - mom));
        mvar[c] = static_cast<P>(static_cast<A>(mvar[c]) * mom + var * (A(1) - mom));
      }
    } else {
      mean = static_cast<A>(mmean[c]);
      var = static_cast<A>(mvar[c]);
    }
    const A rstd = InvStd(var, eps, batch_stats, replay);
    if (threadIdx.x == 0) {
      if (req_mean != OpReq::kNullOp) nngpu::Put(smean + c, req_mean, mean);
      if (req_var != OpReq::kNullOp) nngpu::Put(svar + c, req_var, rstd);
    }
    if (req_y == OpReq::kNullOp) continue;
    const A g = fix_gamma ? A(1) : static_cast<A>(gamma[c]);
    const A scale = g * rstd;
    const A shift = static_cast<A>(beta[c]) - mean * scale;
    for (ChannelWalk w(l, c); w.j < per; w.Next()) {
      const int64_t i = w.pos;
      nngpu::Put(y + i, req_y, static_cast<A>(x[i]) * scale + shift);
    }
  }
}

// Inputs: out_grad, data, gamma, mean, var (the forward's saved 1 / sqrt(var + eps)); outputs d data,
// d gamma, d beta. With batch statistics mean and var depend on x:
// dx = g * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
template <typename T, typename P>
__global__ void __launch_bounds__(1024)
    BatchNormBackwardKernel(ChannelLayout l, const T* dy, const T* x, const P* gamma, const P* smean, const P* svar,
                            T* dx, P* dgamma, P* dbeta, bool batch_stats, bool fix_gamma, OpReq req_dx,
                            OpReq req_dg, OpReq req_db) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t per = l.outer * l.inner;
  const A count = static_cast<A>(per);
  for (int64_t c = blockIdx.x; c < l.C; c += gridDim.x) {
    const A mean = static_cast<A>(smean[c]);
    const A rstd = static_cast<A>(svar[c]);
    A sum_dy = 0, sum_dy_xhat = 0;
    for (ChannelWalk w(l, c); w.j < per; w.Next()) {
      const int64_t i = w.pos;
      A g = static_cast<A>(dy[i]);
      sum_dy += g;
      sum_dy_xhat += g * (static_cast<A>(x[i]) - mean);
    }
    sum_dy = nngpu::BlockSum(sum_dy, scratch);
    sum_dy_xhat = nngpu::BlockSum(sum_dy_xhat, scratch) * rstd;
    if (threadIdx.x == 0) {
      if (req_dg != OpReq::kNullOp) nngpu::Put(dgamma + c, req_dg, fix_gamma ? A(0) : sum_dy_xhat);
      if (req_db != OpReq::kNullOp) nngpu::Put(dbeta + c, req_db, sum_dy);
    }
    if (req_dx == OpReq::kNullOp) continue;
    const A g = fix_gamma ? A(1) : static_cast<A>(gamma[c]);
    const A k = g * rstd;
    const A mdy = batch_stats && per > 0 ? sum_dy / count : A(0);
    const A mdx = batch_stats && per > 0 ? sum_dy_xhat / count * rstd : A(0);
    for (ChannelWalk w(l, c); w.j < per; w.Next()) {
      const int64_t i = w.pos;
      nngpu::Put(dx + i, req_dx, k * (static_cast<A>(dy[i]) - mdy - (static_cast<A>(x[i]) - mean) * mdx));
    }
  }
}

// ---------------------------------------------------------------- the split path
// Elements [begin, end) of channel c, walked as ChannelWalk does from a starting index.
struct ChunkWalk {
  int64_t j, pos, i, stride, inner, step_pos, step_i;
  __device__ ChunkWalk(const ChannelLayout& l, int64_t c, int64_t begin)
      : j(begin + threadIdx.x), stride(l.C * l.inner), inner(l.inner > 0 ? l.inner : 1) {
    const int64_t o = j / inner;
    i = j - o * inner;
    pos = o * stride + c * l.inner + i;
    const int64_t q = blockDim.x / inner;
    step_i = blockDim.x - q * inner;
    step_pos = q * stride + step_i;
  }
  __device__ void Next() {
    j += blockDim.x;
    pos += step_pos;
    i += step_i;
    if (i >= inner) {
      i -= inner;
      pos += stride - inner;
    }
  }
};

// Block (chunk k, channel c) of grid (chunks, C): the chunk's sums of d = x - shift and d^2
// (forward, shift = the channel's first value) or of dy and dy * (x - mean) (backward),
// into partial[(c * chunks + k) * 2 + {0, 1}].
template <typename T, typename P, bool kBackward>
__global__ void BatchNormPartialKernel(ChannelLayout l, int64_t chunk, const T* x, const T* dy, const P* smean,
                                       Acc<T>* partial) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t c = blockIdx.y, k = blockIdx.x;
  const int64_t per = l.outer * l.inner;
  const int64_t begin = k * chunk, end = min(per, begin + chunk);
  const A center = kBackward ? static_cast<A>(smean[c]) : static_cast<A>(x[c * l.inner]);
  A s0 = 0, s1 = 0;
  for (ChunkWalk w(l, c, begin); w.j < end; w.Next()) {
    const A d = static_cast<A>(x[w.pos]) - center;
    if constexpr (kBackward) {
      const A g = static_cast<A>(dy[w.pos]);
      s0 += g;
      s1 += g * d;
    } else {
      s0 += d;
      s1 += d * d;
    }
  }
  s0 = nngpu::BlockSum(s0, scratch);
  s1 = nngpu::BlockSum(s1, scratch);
  if (threadIdx.x == 0) {
    partial[(c * gridDim.x + k) * 2] = s0;
    partial[(c * gridDim.x + k) * 2 + 1] = s1;
  }
}

// One thread per channel: the forward's statistics from the partial sums (or the moving
// ones), the moving statistics' update, the mean/var outputs, and y = x * coef[2c] + coef[2c+1].
template <typename T, typename P>
__global__ void BatchNormForwardFinishKernel(int64_t C, int64_t per, int64_t chunks, const Acc<T>* partial,
                                             const T* x, int64_t inner, const P* gamma, const P* beta, P* mmean,
                                             P* mvar, P* smean, P* svar, Acc<T>* coef, Acc<T> eps, Acc<T> mom,
                                             bool batch_stats, bool replay, bool fix_gamma, OpReq req_mean, OpReq req_var) {
  using A = Acc<T>;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < C;
       c += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    A mean, var;
    if (batch_stats) {
      A sum = 0, sq = 0;
      for (int64_t k = 0; k < chunks; ++k) {
        sum += partial[(c * chunks + k) * 2];
        sq += partial[(c * chunks + k) * 2 + 1];
      }
      const A count = static_cast<A>(per);
      const A md = sum / count;
      mean = static_cast<A>(x[c * inner]) + md;
      var = max(A(0), sq / count - md * md);
      mmean[c] = static_cast<P>(static_cast<A>(mmean[c]) * mom + mean * (A(1) - mom));
      mvar[c] = static_cast<P>(static_cast<A>(mvar[c]) * mom + var * (A(1) - mom));
    } else {
      mean = static_cast<A>(mmean[c]);
      var = static_cast<A>(mvar[c]);
    }
    const A rstd = InvStd(var, eps, batch_stats, replay);
    if (req_mean != OpReq::kNullOp) nngpu::Put(smean + c, req_mean, mean);
    if (req_var != OpReq::kNullOp) nngpu::Put(svar + c, req_var, rstd);
    const A g = fix_gamma ? A(1) : static_cast<A>(gamma[c]);
    const A scale = g * rstd;
    coef[2 * c] = scale;
    coef[2 * c + 1] = static_cast<A>(beta[c]) - mean * scale;
  }
}

// One thread per channel: d gamma and d beta, and the
// coefficients k, mdy and mdx of dx = k * (dy - mdy - (x - mean) * mdx) in coef[3c], [3c+1], [3c+2].
template <typename T, typename P>
__global__ void BatchNormBackwardFinishKernel(int64_t C, int64_t per, int64_t chunks, const Acc<T>* partial,
                                              const P* gamma, const P* svar, P* dgamma, P* dbeta, Acc<T>* coef,
                                              bool batch_stats, bool fix_gamma, OpReq req_dg,
                                              OpReq req_db) {
  using A = Acc<T>;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < C;
       c += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    A sum_dy = 0, sum_dy_d = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      sum_dy += partial[(c * chunks + k) * 2];
      sum_dy_d += partial[(c * chunks + k) * 2 + 1];
    }
    const A rstd = static_cast<A>(svar[c]);
    const A sum_dy_xhat = sum_dy_d * rstd;
    if (req_dg != OpReq::kNullOp) nngpu::Put(dgamma + c, req_dg, fix_gamma ? A(0) : sum_dy_xhat);
    if (req_db != OpReq::kNullOp) nngpu::Put(dbeta + c, req_db, sum_dy);
    const A count = static_cast<A>(per);
    const A g = fix_gamma ? A(1) : static_cast<A>(gamma[c]);
    coef[3 * c] = g * rstd;
    coef[3 * c + 1] = batch_stats ? sum_dy / count : A(0);
    coef[3 * c + 2] = batch_stats ? sum_dy_xhat / count * rstd : A(0);
  }
}

// The elementwise passes over every element, the channel of element (row r, position i) of
// rows of `inner` elements being r % C. A block covers kApplyRow elements of one row where
// rows are long; otherwise each element finds its channel by division.
constexpr int kApplyThreads = 256;
constexpr int64_t kApplyRowMin = 64;

template <typename T, typename P, bool kBackward>
__device__ inline void ApplyOne(int64_t idx, int64_t c, const T* x, const T* dy, const P* smean,
                                const Acc<T>* coef, T* out, OpReq req) {
  using A = Acc<T>;
  if constexpr (kBackward) {
    const A v = coef[3 * c] * (static_cast<A>(dy[idx]) - coef[3 * c + 1] -
                               (static_cast<A>(x[idx]) - static_cast<A>(smean[c])) * coef[3 * c + 2]);
    nngpu::Put(out + idx, req, v);
  } else {
    nngpu::Put(out + idx, req, static_cast<A>(x[idx]) * coef[2 * c] + coef[2 * c + 1]);
  }
}

template <typename T, typename P, bool kBackward>
__global__ void BatchNormApplyRowsKernel(int64_t rows, int64_t C, int64_t inner, const T* x, const T* dy,
                                         const P* smean, const Acc<T>* coef, T* out, OpReq req) {
  const int64_t blocks_per_row = (inner + kApplyThreads - 1) / kApplyThreads;
  for (int64_t b = blockIdx.x; b < rows * blocks_per_row; b += gridDim.x) {
    const int64_t r = b / blocks_per_row;
    const int64_t i = (b - r * blocks_per_row) * kApplyThreads + threadIdx.x;
    if (i < inner) ApplyOne<T, P, kBackward>(r * inner + i, r % C, x, dy, smean, coef, out, req);
  }
}

template <typename T, typename P, bool kBackward>
__global__ void BatchNormApplyFlatKernel(int64_t n, int64_t C, int64_t inner, const T* x, const T* dy,
                                         const P* smean, const Acc<T>* coef, T* out, OpReq req) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x)
    ApplyOne<T, P, kBackward>(idx, (idx / inner) % C, x, dy, smean, coef, out, req);
}

template <typename T, typename P, bool kBackward>
void LaunchApply(const ChannelLayout& l, const T* x, const T* dy, const P* smean, const Acc<T>* coef, T* out,
                 OpReq req, cudaStream_t s) {
  const int64_t rows = l.outer * l.C, n = rows * l.inner;
  constexpr int64_t kMaxBlocks = 1 << 20;
  if (l.inner >= kApplyRowMin) {
    const int64_t blocks = rows * ((l.inner + kApplyThreads - 1) / kApplyThreads);
    BatchNormApplyRowsKernel<T, P, kBackward><<<static_cast<unsigned>(std::min(blocks, kMaxBlocks)), kApplyThreads, 0, s>>>(
        rows, l.C, l.inner, x, dy, smean, coef, out, req);
  } else {
    const int64_t blocks = (n + kApplyThreads - 1) / kApplyThreads;
    BatchNormApplyFlatKernel<T, P, kBackward><<<static_cast<unsigned>(std::min(blocks, kMaxBlocks)), kApplyThreads, 0, s>>>(
        n, l.C, l.inner, x, dy, smean, coef, out, req);
  }
}

// Chunks per channel: enough blocks to cover the GPU several times over, none under 4096
// elements. Split only where one block per channel would leave SMs idle or run long.
constexpr int64_t kSplitMinElements = 1 << 18;
constexpr int64_t kMinChunk = 4096;

int SmCount(int dev) {
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) {
    cudaGetLastError();
    n = 108;
  }
  return n;
}

int64_t ChunksFor(const ChannelLayout& l, int dev) {
  const int64_t per = l.outer * l.inner;
  if (per * l.C < kSplitMinElements || l.C > 65535) return 0;  // one block per channel
  const int64_t want = std::max<int64_t>(1, (4 * SmCount(dev) + l.C - 1) / l.C);
  return std::clamp<int64_t>(want, 1, std::max<int64_t>(1, per / kMinChunk));
}

// Threads per channel: more for large channels (each channel is one block, and a ResNet's
// first layers have few channels of many elements); the kernels take under 64 registers, so
// 1024 threads fit an SM.
int ChannelThreads(const ChannelLayout& l) {
  if (l.outer * l.inner < (1 << 14)) return nngpu::kReduceThreads;
  return l.C < 256 ? 1024 : 512;
}

ChannelLayout LayoutOf(const BatchNormParam& p, const Shape& d) {
  int axis = p.axis < 0 ? p.axis + d.ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(d, axis);
  return ChannelLayout{sp.outer, sp.n, sp.inner};
}

TempSpace* TempOf(const NodeAttrs& attrs, const OpContext& ctx) {
  WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].temp != nullptr, kInternal, "Operator '", attrs.op->name,
             "': the GPU kernel needs its temporary space");
  return ctx.requested[0].temp;
}

// Half-precision data with float32 gamma, beta and statistics: MXNet's rule for float16
// data, and the CPU's mixed-precision case for bfloat16.
bool MixedHalf(DType data, DType param) {
  return (data == DType::kBfloat16 || data == DType::kFloat16) && param == DType::kFloat32;
}

// T, the data's dtype, and P, that of gamma, beta and the statistics: T itself, or float32
// for half-precision data with float32 parameters.
#define WEFT_BN_GPU_SWITCH(dtype, param_dtype, T, P, what, ...)                                        \
  switch (dtype) {                                                                                   \
    case ::weft::DType::kFloat32: { using T = float; using P = float; __VA_ARGS__ } break;             \
    case ::weft::DType::kFloat64: { using T = double; using P = double; __VA_ARGS__ } break;           \
    case ::weft::DType::kFloat16:                                                                    \
      if (MixedHalf(dtype, param_dtype)) {                                                           \
        using T = ::weft::float16; using P = float; __VA_ARGS__                                      \
      } else {                                                                                       \
        using T = ::weft::float16; using P = ::weft::float16; __VA_ARGS__                            \
      }                                                                                              \
      break;                                                                                         \
    case ::weft::DType::kBfloat16:                                                                   \
      if (MixedHalf(dtype, param_dtype)) {                                                           \
        using T = ::weft::bfloat16; using P = float; __VA_ARGS__                                     \
      } else {                                                                                       \
        using T = ::weft::bfloat16; using P = ::weft::bfloat16; __VA_ARGS__                          \
      }                                                                                              \
      break;                                                                                         \
    default:                                                                                         \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                             \
                    "': on GPUs, expected float32, float64, float16 or bfloat16, got ", ::weft::DTypeName(dtype)); \
  }

void BatchNormComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  const char* name = attrs.op->name.c_str();
  if (in[1].dtype != in[0].dtype && !MixedHalf(in[0].dtype, in[1].dtype))
    Throw(ErrorKind::kUnsupported, "Operator '", name,
          "': on GPUs, expected gamma, beta and the statistics in the data's dtype ", DTypeName(in[0].dtype),
          " (or float32 for float16 or bfloat16 data), got ", DTypeName(in[1].dtype));
  ChannelLayout l = LayoutOf(p, in[0].shape);
  if (l.C == 0) return;
  const bool replay = IsReplay(attrs);
  const bool batch_stats = !replay && ctx.is_train && !p.use_global_stats;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const int64_t chunks = ChunksFor(l, ctx.run_ctx.ctx.dev_id);
  const int64_t per = l.outer * l.inner;
  if (chunks > 0 && per > 0) {
    WEFT_BN_GPU_SWITCH(in[0].dtype, in[1].dtype, T, P, name, {
      using A = Acc<T>;
      A* partial = static_cast<A*>(TempOf(attrs, ctx)->Get(sizeof(A) * (2 * l.C * (batch_stats ? chunks : 0) + 2 * l.C)));
      A* coef = partial + 2 * l.C * (batch_stats ? chunks : 0);
      if (batch_stats) {
        BatchNormPartialKernel<T, P, false><<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(l.C)),
                                           nngpu::kReduceThreads, 0, s>>>(l, (per + chunks - 1) / chunks,
                                                                          in[0].ptr<T>(), nullptr, nullptr, partial);
        cuda::CheckLaunch(name);
      }
      BatchNormForwardFinishKernel<T, P><<<static_cast<unsigned>((l.C + 255) / 256), 256, 0, s>>>(
          l.C, per, chunks, partial, in[0].ptr<T>(), l.inner, in[1].ptr<P>(), in[2].ptr<P>(), in[3].ptr<P>(),
          in[4].ptr<P>(), out[1].ptr<P>(), out[2].ptr<P>(), coef, static_cast<A>(p.eps), static_cast<A>(p.momentum),
          batch_stats, replay, p.fix_gamma, req[1], req[2]);
      cuda::CheckLaunch(name);
      if (req[0] != OpReq::kNullOp) {
        LaunchApply<T, P, false>(l, in[0].ptr<T>(), nullptr, nullptr, coef, out[0].ptr<T>(), req[0], s);
        cuda::CheckLaunch(name);
      }
    });
    return;
  }
  WEFT_BN_GPU_SWITCH(in[0].dtype, in[1].dtype, T, P, name, {
    BatchNormForwardKernel<T, P><<<nngpu::BlocksFor(l.C), ChannelThreads(l), 0, s>>>(
        l, in[0].ptr<T>(), in[1].ptr<P>(), in[2].ptr<P>(), in[3].ptr<P>(), in[4].ptr<P>(), out[0].ptr<T>(),
        out[1].ptr<P>(), out[2].ptr<P>(), static_cast<Acc<T>>(p.eps), static_cast<Acc<T>>(p.momentum), batch_stats,
        replay, p.fix_gamma, req[0], req[1], req[2]);
    cuda::CheckLaunch(name);
  });
}

void BatchNormBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  const char* name = attrs.op->name.c_str();
  if (in[2].dtype != in[1].dtype && !MixedHalf(in[1].dtype, in[2].dtype))
    Throw(ErrorKind::kUnsupported, "Operator '", name,
          "': on GPUs, expected gamma and the statistics in the data's dtype ", DTypeName(in[1].dtype),
          " (or float32 for float16 or bfloat16 data), got ", DTypeName(in[2].dtype));
  ChannelLayout l = LayoutOf(p, in[1].shape);
  if (l.C == 0) return;
  const bool batch_stats = ctx.is_train && !p.use_global_stats;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const int64_t chunks = ChunksFor(l, ctx.run_ctx.ctx.dev_id);
  const int64_t per = l.outer * l.inner;
  if (chunks > 0 && per > 0) {
    WEFT_BN_GPU_SWITCH(in[1].dtype, in[2].dtype, T, P, name, {
      using A = Acc<T>;
      A* partial = static_cast<A*>(TempOf(attrs, ctx)->Get(sizeof(A) * (2 * l.C * chunks + 3 * l.C)));
      A* coef = partial + 2 * l.C * chunks;
      BatchNormPartialKernel<T, P, true><<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(l.C)),
                                           nngpu::kReduceThreads, 0, s>>>(l, (per + chunks - 1) / chunks,
                                                                          in[1].ptr<T>(), in[0].ptr<T>(),
                                                                          in[3].ptr<P>(), partial);
      cuda::CheckLaunch(name);
      BatchNormBackwardFinishKernel<T, P><<<static_cast<unsigned>((l.C + 255) / 256), 256, 0, s>>>(
          l.C, per, chunks, partial, in[2].ptr<P>(), in[4].ptr<P>(), out[1].ptr<P>(), out[2].ptr<P>(), coef,
          batch_stats, p.fix_gamma, req[1], req[2]);
      cuda::CheckLaunch(name);
      if (req[0] != OpReq::kNullOp) {
        LaunchApply<T, P, true>(l, in[1].ptr<T>(), in[0].ptr<T>(), in[3].ptr<P>(), coef, out[0].ptr<T>(), req[0], s);
        cuda::CheckLaunch(name);
      }
    });
    return;
  }
  WEFT_BN_GPU_SWITCH(in[1].dtype, in[2].dtype, T, P, name, {
    BatchNormBackwardKernel<T, P><<<nngpu::BlocksFor(l.C), ChannelThreads(l), 0, s>>>(
        l, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<P>(), in[3].ptr<P>(), in[4].ptr<P>(), out[0].ptr<T>(),
        out[1].ptr<P>(), out[2].ptr<P>(), batch_stats, p.fix_gamma, req[0], req[1],
        req[2]);
    cuda::CheckLaunch(name);
  });
}

}  // namespace

// The split path's partial sums and per-channel coefficients live in temporary space. Asked
// for in CUDA builds only: the CPU kernels need none, and a CPU-only build's BatchNorm stays
// free of the temporary space's serialisation.
std::vector<ResourceRequest> TempSpaceRequest(const NodeAttrs&) { return {{ResourceType::kTempSpace}}; }

WEFT_REGISTER_OP(BatchNorm)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpaceRequest)
    .SetAttr<FCompute>("FCompute<gpu>", BatchNormComputeGPU);
WEFT_REGISTER_OP(_BatchNorm_replay)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpaceRequest)
    .SetAttr<FCompute>("FCompute<gpu>", BatchNormComputeGPU);
WEFT_REGISTER_OP(_backward_BatchNorm)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpaceRequest)
    .SetAttr<FCompute>("FCompute<gpu>", BatchNormBackwardComputeGPU);

}  // namespace op
}  // namespace weft

// GPU versions of LRN, L2Normalization and their gradients, with lrn.cc's formulas and
// accumulation types (float for float16 and float32, double for float64).
//
// LRN: a thread per element sums the squares of its channel window; the gradient's thread
// also visits the windows that hold its channel (nsize^2 reads, nsize being small).
// L2Normalization: each normalised group of n elements (stride `inner`) is a row; rows
// along contiguous memory (inner == 1) get a block each, reduced in shared memory, others
// a thread each, so that neighbouring threads read neighbouring positions.
#include <algorithm>
#include <string>
#include <type_traits>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/lrn.h"

// Both operators take floating-point data only.
#define WEFT_GPU_LRN_SWITCH(dtype, DT, what, ...)                                                   \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "': on GPUs, expected float32, float64 or float16 data, got ", ::weft::DTypeName(dtype)); \
  }

namespace weft {
namespace op {
namespace {

// nn::Acc of norm_util.h.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

__device__ __forceinline__ float Pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double Pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float Sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double Sqrt(double x) { return sqrt(x); }

// ------------------------------------------------------------------ LRN
// The data as N x C x S; the window of channel c is [c - lo, c + hi] within [0, C).
struct LRNGeom {
  int64_t N, C, S, lo, hi;
  double alpha_n, beta, knorm;
};

LRNGeom MakeLRNGeom(const LRNParam& p, const Shape& d) {
  LRNGeom q;
  q.N = d[0];
  q.C = d[1];
  q.S = d.ProdRange(2, d.ndim());
  q.lo = p.nsize / 2;
  q.hi = (p.nsize - 1) / 2;
  q.alpha_n = p.alpha / p.nsize;
  q.beta = p.beta;
  q.knorm = p.knorm;
  return q;
}

// knorm + alpha/n * the window sum of x^2 for channel c at position s of one sample
// (`x` points at the sample), summed from the window's first channel as on the CPU.
template <typename A, typename T>
__device__ __forceinline__ A LRNScale(const LRNGeom& q, const T* x, int64_t c, int64_t s) {
  const int64_t b = c - q.lo < 0 ? 0 : c - q.lo, e = c + q.hi > q.C - 1 ? q.C - 1 : c + q.hi;
  A sum = A(0);
  for (int64_t j = b; j <= e; ++j) {
    const A v = static_cast<A>(x[j * q.S + s]);
    sum += v * v;
  }
  return static_cast<A>(q.knorm) + static_cast<A>(q.alpha_n) * sum;
}

template <typename T>
struct LRNForwardFn {
  LRNGeom q;
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t plane = q.C * q.S;
    const int64_t n = i / plane, c = (i % plane) / q.S, s = i % q.S;
    const A scale = LRNScale<A>(q, x + n * plane, c, s);
    cuda::Store(y, i, static_cast<A>(x[i]) * Pow(scale, static_cast<A>(-q.beta)), req);
  }
};

// dx_i = g_i s_i^-b - 2 a b / n * x_i * sum over the windows holding i of g_c x_c s_c^(-b-1).
template <typename T>
struct LRNBackwardFn {
  LRNGeom q;
  const T* g;
  const T* x;
  T* dx;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = Acc<T>;
    const int64_t plane = q.C * q.S;
    const int64_t n = i / plane, c = (i % plane) / q.S, s = i % q.S;
    const T* xs = x + n * plane;
    const T* gs = g + n * plane;
    const A b = static_cast<A>(q.beta);
    // Channel c lies in the window of channel k when k - lo <= c <= k + hi.
    const int64_t kb = c - q.hi < 0 ? 0 : c - q.hi, ke = c + q.lo > q.C - 1 ? q.C - 1 : c + q.lo;
    A acc = A(0);
    for (int64_t k = kb; k <= ke; ++k) {
      const int64_t j = k * q.S + s;
      acc += static_cast<A>(gs[j]) * static_cast<A>(xs[j]) * Pow(LRNScale<A>(q, xs, k, s), -b - A(1));
    }
    const A v = static_cast<A>(g[i]) * Pow(LRNScale<A>(q, xs, c, s), -b) -
                A(2) * static_cast<A>(q.alpha_n) * b * static_cast<A>(x[i]) * acc;
    cuda::Store(dx, i, v, req);
  }
};

void LRNComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const LRNGeom q = MakeLRNGeom(attrs.Params<LRNParam>(), in[0].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_LRN_SWITCH(in[0].dtype, T, name, {
    cuda::ForEach(in[0].Size(), cuda::StreamOf(ctx.run_ctx.stream),
                  LRNForwardFn<T>{q, in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
  });
}

// Inputs: out_grad, data.
void LRNBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const LRNGeom q = MakeLRNGeom(attrs.Params<LRNParam>(), in[1].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_LRN_SWITCH(in[1].dtype, T, name, {
    cuda::ForEach(in[1].Size(), cuda::StreamOf(ctx.run_ctx.stream),
                  LRNBackwardFn<T>{q, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
  });
}

// ------------------------------------------------------------------ L2Normalization
// The data as outer x n x inner; each (outer, inner) pair is one row of n elements.
struct L2Geom {
  int64_t outer = 1, n = 1, inner = 1;
};

// lrn.cc's L2Split (the shape was checked by shape inference).
L2Geom MakeL2Geom(const NodeAttrs& attrs, const Shape& d) {
  const std::string& mode = attrs.Params<L2NormalizationParam>().mode;
  L2Geom g;
  if (mode == "instance") {
    g.outer = d[0];
    g.n = d[0] > 0 ? d.Size() / d[0] : 0;
  } else if (mode == "channel") {
    g.outer = d[0];
    g.n = d[1];
    g.inner = d.ProdRange(2, d.ndim());
  } else {
    g.outer = d[0] * d[1];
    g.n = d[0] * d[1] > 0 ? d.Size() / (d[0] * d[1]) : 0;
  }
  return g;
}

// Forward: y = x / sqrt(sum x^2 + eps). Backward (g, y given): dx = (g - y * sum(g y)) / norm.
template <typename T, bool kBackward>
struct L2Row {
  L2Geom geom;
  const T* x;
  const T* g;   // backward only
  const T* y;   // backward only
  T* out;
  double eps;
  OpReq req;

  __device__ int64_t Base(int64_t row) const { return (row / geom.inner) * geom.n * geom.inner + row % geom.inner; }

  // This lane's partial sums of x^2 and (backward) g*y over k = lane, lane + width, ...
  __device__ void Partial(int64_t base, int lane, int width, Acc<T>* sq, Acc<T>* dot) const {
    using A = Acc<T>;
    A s = A(0), d = A(0);
    for (int64_t k = lane; k < geom.n; k += width) {
      const int64_t j = base + k * geom.inner;
      const A v = static_cast<A>(x[j]);
      s += v * v;
      if (kBackward) d += static_cast<A>(g[j]) * static_cast<A>(y[j]);
    }
    *sq = s;
    *dot = d;
  }

  __device__ void Write(int64_t base, int lane, int width, Acc<T> sq, Acc<T> dot) const {
    using A = Acc<T>;
    const A inv = A(1) / Sqrt(sq + static_cast<A>(eps));
    for (int64_t k = lane; k < geom.n; k += width) {
      const int64_t j = base + k * geom.inner;
      if (kBackward) cuda::Store(out, j, (static_cast<A>(g[j]) - static_cast<A>(y[j]) * dot) * inv, req);
      else cuda::Store(out, j, static_cast<A>(x[j]) * inv, req);
    }
  }
};

// One block (kBlockThreads) per row, rows grid-strided.
template <typename T, bool kBackward>
__global__ void L2BlockPerRowKernel(L2Row<T, kBackward> f, int64_t rows) {
  using A = Acc<T>;
  __shared__ A sq_part[cuda::kBlockThreads];
  __shared__ A dot_part[cuda::kBlockThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = f.Base(r);
    A sq, dot;
    f.Partial(base, threadIdx.x, blockDim.x, &sq, &dot);
    sq_part[threadIdx.x] = sq;
    dot_part[threadIdx.x] = dot;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        sq_part[threadIdx.x] += sq_part[threadIdx.x + s];
        dot_part[threadIdx.x] += dot_part[threadIdx.x + s];
      }
      __syncthreads();
    }
    const A total_sq = sq_part[0], total_dot = dot_part[0];
    __syncthreads();  // the partials are reused by the next row
    f.Write(base, threadIdx.x, blockDim.x, total_sq, total_dot);
  }
}

// One thread per row.
template <typename T, bool kBackward>
struct L2ThreadPerRowFn {
  L2Row<T, kBackward> f;
  __device__ void operator()(int64_t r) const {
    const int64_t base = f.Base(r);
    Acc<T> sq, dot;
    f.Partial(base, 0, 1, &sq, &dot);
    f.Write(base, 0, 1, sq, dot);
  }
};

template <typename T, bool kBackward>
void RunL2(const L2Row<T, kBackward>& f, cudaStream_t s, const char* name) {
  const int64_t rows = f.geom.outer * f.geom.inner;
  if (rows <= 0 || f.geom.n <= 0) return;
  if (f.geom.inner == 1 && f.geom.n >= 64) {
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    L2BlockPerRowKernel<T, kBackward><<<grid, cuda::kBlockThreads, 0, s>>>(f, rows);
    cuda::CheckLaunch(name);
  } else {
    cuda::ForEach(rows, s, L2ThreadPerRowFn<T, kBackward>{f}, name);
  }
}

void L2ComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const L2Geom geom = MakeL2Geom(attrs, in[0].shape);
  const double eps = attrs.Params<L2NormalizationParam>().eps;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_LRN_SWITCH(in[0].dtype, T, name, {
    RunL2(L2Row<T, false>{geom, in[0].ptr<T>(), nullptr, nullptr, out[0].ptr<T>(), eps, req[0]},
          cuda::StreamOf(ctx.run_ctx.stream), name);
  });
}

// Inputs: out_grad, data, output.
void L2BackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const L2Geom geom = MakeL2Geom(attrs, in[1].shape);
  const double eps = attrs.Params<L2NormalizationParam>().eps;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_LRN_SWITCH(in[1].dtype, T, name, {
    RunL2(L2Row<T, true>{geom, in[1].ptr<T>(), in[0].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), eps, req[0]},
          cuda::StreamOf(ctx.run_ctx.stream), name);
  });
}

}  // namespace

WEFT_REGISTER_OP(LRN).SetAttr<FCompute>("FCompute<gpu>", LRNComputeGPU);
WEFT_REGISTER_OP(_backward_LRN).SetAttr<FCompute>("FCompute<gpu>", LRNBackwardGPU);
WEFT_REGISTER_OP(L2Normalization).SetAttr<FCompute>("FCompute<gpu>", L2ComputeGPU);
WEFT_REGISTER_OP(_backward_L2Normalization).SetAttr<FCompute>("FCompute<gpu>", L2BackwardGPU);

}  // namespace op
}  // namespace weft

#undef WEFT_GPU_LRN_SWITCH

// GPU versions of Pooling and _backward_Pooling (pooling.cc): max, avg (with or without the
// padding in the divisor), sum and lp over 1, 2 or 3 spatial axes, every pooling convention
// and global pooling, through the same geometry (pooling_geom.h).
//
// Forward: one thread per output scans its window in row-major order (max keeps the first
// maximum, as std::max does on the CPU). Backward without atomics:
//  - windows that cannot overlap (kernel <= stride, or one output, on every axis): the input
//    gradient is zeroed and each output's thread adds to its own window (max: to the first
//    maximum of its window, the CPU's tie rule);
//  - overlapping windows: one thread per input cell sums what every window holding it gives
//    it (max: when it is that window's first maximum).
#include <limits>
#include <vector>

#include "core/op/nn/nn_gpu.cuh"
#include "core/op/nn/pooling_geom.h"

namespace weft {
namespace op {
namespace {

template <typename T>
using PoolAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Output index o's window along axis i: input cells [b, e) and the include-pad span.
struct AxisWindow {
  int64_t b, e, span;
};

__device__ inline AxisWindow WindowOnAxis(const PoolGeom& g, int i, int64_t o) {
  const int64_t start = o * g.s[i] - g.pl[i];
  const int64_t stop = min(start + g.k[i], g.limit[i]);
  return {max(start, int64_t{0}), min(stop, g.in[i]), max(stop - start, int64_t{0})};
}

struct Window {
  AxisWindow a[3];
  __device__ int64_t Cells() const {
    int64_t n = 1;
    for (int i = 0; i < 3; ++i) n *= max(a[i].e - a[i].b, int64_t{0});
    return n;
  }
  __device__ int64_t Span() const { return a[0].span * a[1].span * a[2].span; }
};

__device__ inline Window WindowAt(const PoolGeom& g, const int64_t* o) {
  Window w;
  for (int i = 0; i < 3; ++i) w.a[i] = WindowOnAxis(g, i, o[i]);
  return w;
}

// Splits a plane offset into its three coordinates along `dims`.
__device__ inline void Coords(int64_t idx, const int64_t* dims, int64_t* c) {
  c[2] = idx % dims[2];
  idx /= dims[2];
  c[1] = idx % dims[1];
  c[0] = idx / dims[1];
}

template <typename A>
__device__ inline A PowP(A v, int p) {
  A r = v;
  for (int i = 1; i < p; ++i) r *= v;
  return r;
}

template <typename A>
__device__ inline A RootP(A v, int p) {
  if (p == 1) return v;
  if (p == 2) return sqrt(v);
  if (p == 3) return cbrt(v);
  return pow(v, A(1) / A(p));
}

// Plane offset of the first maximum of window w in row-major order (-1 when it is empty).
template <typename T>
__device__ inline int64_t FirstMax(const PoolGeom& g, const T* xp, const Window& w) {
  using A = PoolAcc<T>;
  int64_t best = -1;
  A bv = std::numeric_limits<A>::lowest();
  for (int64_t a = w.a[0].b; a < w.a[0].e; ++a)
    for (int64_t b = w.a[1].b; b < w.a[1].e; ++b)
      for (int64_t c = w.a[2].b; c < w.a[2].e; ++c) {
        const int64_t idx = (a * g.in[1] + b) * g.in[2] + c;
        const A v = static_cast<A>(xp[idx]);
        if (best < 0 || v > bv) {
          best = idx;
          bv = v;
        }
      }
  return best;
}

template <typename T>
__global__ void PoolForwardKernel(PoolGeom g, const T* x, T* y, int64_t total, OpReq req) {
  using A = PoolAcc<T>;
  const int64_t I = g.in[0] * g.in[1] * g.in[2], O = g.out[0] * g.out[1] * g.out[2];
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t plane = t / O;
    int64_t o[3];
    Coords(t - plane * O, g.out, o);
    const Window w = WindowAt(g, o);
    const T* xp = x + plane * I;
    A acc = g.kind == PoolKind::kMax ? std::numeric_limits<A>::lowest() : A(0);
    for (int64_t a = w.a[0].b; a < w.a[0].e; ++a)
      for (int64_t b = w.a[1].b; b < w.a[1].e; ++b)
        for (int64_t c = w.a[2].b; c < w.a[2].e; ++c) {
          const A v = static_cast<A>(xp[(a * g.in[1] + b) * g.in[2] + c]);
          if (g.kind == PoolKind::kMax) acc = acc < v ? v : acc;
          else if (g.kind == PoolKind::kLp) acc += PowP(v, g.p);
          else acc += v;
        }
    if (g.kind == PoolKind::kAvg) {
      const int64_t div = g.include_pad ? w.Span() : w.Cells();
      acc = div > 0 ? acc / static_cast<A>(div) : A(0);
    } else if (g.kind == PoolKind::kLp) {
      acc = RootP(acc, g.p);
    }
    cuda::Store(y, t, acc, req);
  }
}

// What output window w (output value `out`, gradient `grad`) gives input cell idx, a cell
// of that window.
template <typename T>
__device__ inline PoolAcc<T> Share(const PoolGeom& g, const Window& w, PoolAcc<T> grad, PoolAcc<T> out, const T* xp,
                                   int64_t idx) {
  using A = PoolAcc<T>;
  if (g.kind == PoolKind::kAvg) {
    const int64_t div = g.include_pad ? w.Span() : w.Cells();
    return div > 0 ? grad / static_cast<A>(div) : A(0);
  }
  // d out / d x = (x / out)^(p - 1) for out = (sum x^p)^(1/p).
  if (g.kind == PoolKind::kLp && g.p > 1)
    return out != A(0) ? grad * PowP(static_cast<A>(xp[idx]) / out, g.p - 1) : A(0);
  return grad;
}

// Disjoint windows: each output adds to its own window's cells (dx zeroed first unless added to).
template <typename T>
__global__ void PoolBackwardScatterKernel(PoolGeom g, const T* dy, const T* x, const T* y, T* dx, int64_t total) {
  using A = PoolAcc<T>;
  const int64_t I = g.in[0] * g.in[1] * g.in[2], O = g.out[0] * g.out[1] * g.out[2];
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t plane = t / O;
    int64_t o[3];
    Coords(t - plane * O, g.out, o);
    const Window w = WindowAt(g, o);
    const T* xp = x + plane * I;
    T* dxp = dx + plane * I;
    const A grad = static_cast<A>(dy[t]);
    if (g.kind == PoolKind::kMax) {
      const int64_t best = FirstMax(g, xp, w);
      if (best >= 0) dxp[best] = static_cast<T>(static_cast<A>(dxp[best]) + grad);
      continue;
    }
    const A out = static_cast<A>(y[t]);
    for (int64_t a = w.a[0].b; a < w.a[0].e; ++a)
      for (int64_t b = w.a[1].b; b < w.a[1].e; ++b)
        for (int64_t c = w.a[2].b; c < w.a[2].e; ++c) {
          const int64_t idx = (a * g.in[1] + b) * g.in[2] + c;
          dxp[idx] = static_cast<T>(static_cast<A>(dxp[idx]) + Share(g, w, grad, out, xp, idx));
        }
  }
}

// The outputs [*lo, *hi] along axis i whose windows hold input cell v: o * s - pl <= v and
// v < o * s - pl + k (a window never stops before the input's end, so the limit cannot
// exclude v).
__device__ inline void Holders(const PoolGeom& g, int i, int64_t v, int64_t* lo, int64_t* hi) {
  const int64_t top = v + g.pl[i];
  *lo = top < g.k[i] ? 0 : (top - g.k[i]) / g.s[i] + 1;
  *hi = top < 0 ? -1 : min(g.out[i] - 1, top / g.s[i]);
}

// Overlapping windows: each input cell gathers from every window that holds it.
template <typename T>
__global__ void PoolBackwardGatherKernel(PoolGeom g, const T* dy, const T* x, const T* y, T* dx, int64_t total,
                                         OpReq req) {
  using A = PoolAcc<T>;
  const int64_t I = g.in[0] * g.in[1] * g.in[2], O = g.out[0] * g.out[1] * g.out[2];
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t plane = t / I, idx = t - plane * I;
    int64_t v[3], lo[3], hi[3];
    Coords(idx, g.in, v);
    for (int i = 0; i < 3; ++i) Holders(g, i, v[i], &lo[i], &hi[i]);
    const T* xp = x + plane * I;
    const T* dyp = dy + plane * O;
    const T* yp = y + plane * O;
    A sum = 0;
    int64_t o[3];
    for (o[0] = lo[0]; o[0] <= hi[0]; ++o[0])
      for (o[1] = lo[1]; o[1] <= hi[1]; ++o[1])
        for (o[2] = lo[2]; o[2] <= hi[2]; ++o[2]) {
          const Window w = WindowAt(g, o);
          const int64_t oi = (o[0] * g.out[1] + o[1]) * g.out[2] + o[2];
          const A grad = static_cast<A>(dyp[oi]);
          if (g.kind == PoolKind::kMax) {
            if (FirstMax(g, xp, w) == idx) sum += grad;
          } else {
            sum += Share(g, w, grad, static_cast<A>(yp[oi]), xp, idx);
          }
        }
    cuda::Store(dx, t, sum, req);
  }
}

void PoolingComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  PoolGeom g = MakePoolGeom(attrs, in[0].shape);
  const int64_t total = g.n * g.c * g.OutSize();
  if (total <= 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  // As on the CPU.
  if (in[0].dtype == DType::kBool) Throw(ErrorKind::kType, "Operator '", name, "': bool arrays are not supported");
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    PoolForwardKernel<T><<<cuda::GridFor(total), cuda::kBlockThreads, 0, s>>>(g, in[0].ptr<T>(), out[0].ptr<T>(),
                                                                              total, req[0]);
    cuda::CheckLaunch(name);
  });
}

// Inputs: out_grad, data, output; output: d data.
void PoolingBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  PoolGeom g = MakePoolGeom(attrs, in[1].shape);
  const int64_t inputs = g.n * g.c * g.InSize(), outputs = g.n * g.c * g.OutSize();
  if (inputs <= 0) return;
  bool disjoint = true;
  for (int i = 0; i < 3; ++i) disjoint = disjoint && (g.k[i] <= g.s[i] || g.out[i] == 1);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (in[1].dtype == DType::kBool) Throw(ErrorKind::kType, "Operator '", name, "': bool arrays are not supported");
  WEFT_GPU_TYPE_SWITCH(in[1].dtype, T, name, {
    if (disjoint) {
      if (req[0] != OpReq::kAddTo)
        WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaMemsetAsync(out[0].dptr, 0, out[0].Bytes(), s));
      if (outputs > 0) {
        PoolBackwardScatterKernel<T><<<cuda::GridFor(outputs), cuda::kBlockThreads, 0, s>>>(
            g, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), outputs);
        cuda::CheckLaunch(name);
      }
    } else {
      PoolBackwardGatherKernel<T><<<cuda::GridFor(inputs), cuda::kBlockThreads, 0, s>>>(
          g, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), inputs, req[0]);
      cuda::CheckLaunch(name);
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(Pooling).SetAttr<FCompute>("FCompute<gpu>", PoolingComputeGPU);
WEFT_REGISTER_OP(_backward_Pooling).SetAttr<FCompute>("FCompute<gpu>", PoolingBackwardGPU);

}  // namespace op
}  // namespace weft

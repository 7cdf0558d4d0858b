// Weft's own GPU convolution kernels (core/op/nn/conv_gpu.h): direct convolution passes,
// one thread per output element, for cudnn_off and for problems cuDNN has no engine for;
// and the bias addition and bias gradient every path uses. Accumulation is in float for
// float16 and bfloat16 and in the dtype otherwise.
#include "core/op/nn/conv_gpu.h"

#include "core/base/cuda_utils.h"
#include "core/op/elemwise/elemwise_kernels.cuh"

// The dtypes GPU convolutions are built for.
#define WEFT_CONV_GPU_TYPE_SWITCH(dtype, DT, what, ...)                                                        \
  switch (dtype) {                                                                                            \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                                    \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                                   \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                          \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;                        \
    default:                                                                                                  \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                                      \
                    "': on GPUs, expected float32, float64, float16 or bfloat16, got ",                       \
                    ::weft::DTypeName(dtype));                                                                \
  }

namespace weft {
namespace op {
namespace {

using cuda::ComputeT;
using cuda::Store;

// y (n, f, out...) from x (n, c, in...) and w (f, c/g, k...). Thread per output element.
template <typename T>
__global__ void DirectForwardKernel(ConvGeom g, const T* x, const T* w, T* y, OpReq req) {
  using A = ComputeT<T>;
  const int64_t cg = g.c / g.g, fg = g.f / g.g;
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2], k_size = g.k[0] * g.k[1] * g.k[2];
  const int64_t total = g.n * g.f * g.out[0] * g.out[1] * g.out[2];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t t = i;
    const int64_t o2 = t % g.out[2]; t /= g.out[2];
    const int64_t o1 = t % g.out[1]; t /= g.out[1];
    const int64_t o0 = t % g.out[0]; t /= g.out[0];
    const int64_t fo = t % g.f, b = t / g.f;
    const int64_t grp = fo / fg;
    A acc = A(0);
    for (int64_t ci = 0; ci < cg; ++ci) {
      const T* xp = x + (b * g.c + grp * cg + ci) * in_size;
      const T* wp = w + (fo * cg + ci) * k_size;
      for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
        const int64_t i0 = o0 * g.s[0] - g.pl[0] + k0 * g.d[0];
        if (i0 < 0 || i0 >= g.in[0]) continue;
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
          const int64_t i1 = o1 * g.s[1] - g.pl[1] + k1 * g.d[1];
          if (i1 < 0 || i1 >= g.in[1]) continue;
          for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
            const int64_t i2 = o2 * g.s[2] - g.pl[2] + k2 * g.d[2];
            if (i2 < 0 || i2 >= g.in[2]) continue;
            acc += static_cast<A>(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]) *
                   static_cast<A>(wp[(k0 * g.k[1] + k1) * g.k[2] + k2]);
          }
        }
      }
    }
    Store(y, i, acc, req);
  }
}

// The output cell along one axis that input cell i meets through kernel tap k, or -1.
__device__ __forceinline__ int64_t OutCell(int64_t i, int64_t k, int64_t s, int64_t d, int64_t p, int64_t out) {
  const int64_t v = i + p - k * d;
  if (v < 0 || v % s != 0) return -1;
  const int64_t o = v / s;
  return o < out ? o : -1;
}

// dx (n, c, in...) from dy (n, f, out...) and w. Thread per input element.
template <typename T>
__global__ void DirectBackwardDataKernel(ConvGeom g, T* dx, const T* w, const T* dy, OpReq req) {
  using A = ComputeT<T>;
  const int64_t cg = g.c / g.g, fg = g.f / g.g;
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2], k_size = g.k[0] * g.k[1] * g.k[2];
  const int64_t total = g.n * g.c * g.in[0] * g.in[1] * g.in[2];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t t = i;
    const int64_t i2 = t % g.in[2]; t /= g.in[2];
    const int64_t i1 = t % g.in[1]; t /= g.in[1];
    const int64_t i0 = t % g.in[0]; t /= g.in[0];
    const int64_t ci = t % g.c, b = t / g.c;
    const int64_t grp = ci / cg, cl = ci % cg;
    A acc = A(0);
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t o0 = OutCell(i0, k0, g.s[0], g.d[0], g.pl[0], g.out[0]);
      if (o0 < 0) continue;
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
        const int64_t o1 = OutCell(i1, k1, g.s[1], g.d[1], g.pl[1], g.out[1]);
        if (o1 < 0) continue;
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          const int64_t o2 = OutCell(i2, k2, g.s[2], g.d[2], g.pl[2], g.out[2]);
          if (o2 < 0) continue;
          const int64_t o = (o0 * g.out[1] + o1) * g.out[2] + o2;
          const int64_t kk = (k0 * g.k[1] + k1) * g.k[2] + k2;
          for (int64_t fl = 0; fl < fg; ++fl) {
            const int64_t fo = grp * fg + fl;
            acc += static_cast<A>(dy[(b * g.f + fo) * out_size + o]) * static_cast<A>(w[(fo * cg + cl) * k_size + kk]);
          }
        }
      }
    }
    Store(dx, i, acc, req);
  }
}

// dw (f, c/g, k...) from x and dy. Thread per weight element, summing over the batch and
// the output cells.
template <typename T>
__global__ void DirectBackwardFilterKernel(ConvGeom g, const T* x, T* dw, const T* dy, OpReq req) {
  using A = ComputeT<T>;
  const int64_t cg = g.c / g.g, fg = g.f / g.g;
  const int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  const int64_t total = g.f * cg * g.k[0] * g.k[1] * g.k[2];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t t = i;
    const int64_t k2 = t % g.k[2]; t /= g.k[2];
    const int64_t k1 = t % g.k[1]; t /= g.k[1];
    const int64_t k0 = t % g.k[0]; t /= g.k[0];
    const int64_t cl = t % cg, fo = t / cg;
    const int64_t ci = (fo / fg) * cg + cl;
    A acc = A(0);
    for (int64_t b = 0; b < g.n; ++b) {
      const T* xp = x + (b * g.c + ci) * in_size;
      const T* dyp = dy + (b * g.f + fo) * out_size;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
        const int64_t i0 = o0 * g.s[0] - g.pl[0] + k0 * g.d[0];
        if (i0 < 0 || i0 >= g.in[0]) continue;
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          const int64_t i1 = o1 * g.s[1] - g.pl[1] + k1 * g.d[1];
          if (i1 < 0 || i1 >= g.in[1]) continue;
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            const int64_t i2 = o2 * g.s[2] - g.pl[2] + k2 * g.d[2];
            if (i2 < 0 || i2 >= g.in[2]) continue;
            acc += static_cast<A>(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]) *
                   static_cast<A>(dyp[(o0 * g.out[1] + o1) * g.out[2] + o2]);
          }
        }
      }
    }
    Store(dw, i, acc, req);
  }
}

template <typename T>
__global__ void AddBiasKernel(T* y, const T* bias, int64_t total, int64_t channels, int64_t spatial) {
  using A = ComputeT<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = static_cast<T>(static_cast<A>(y[i]) + static_cast<A>(bias[(i / spatial) % channels]));
}

// One block per channel: its threads stride over (n, spatial) and reduce in shared memory.
template <typename T>
__global__ void BiasGradKernel(const T* dy, T* db, OpReq req, int64_t n, int64_t channels, int64_t spatial) {
  using A = ComputeT<T>;
  __shared__ A partial[cuda::kBlockThreads];
  const int64_t ch = blockIdx.x;
  const int64_t count = n * spatial;
  A acc = A(0);
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t b = j / spatial, s = j % spatial;
    acc += static_cast<A>(dy[(b * channels + ch) * spatial + s]);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) Store(db, ch, partial[0], req);
}

}  // namespace

void GpuConvolutionDirect(const char* op, const OpContext& ctx, GpuConvPass pass, const ConvGeom& g, DType dt,
                          const void* x, const void* w, const void* y, OpReq req) {
  cudaStream_t stream = cuda::StreamOf(ctx.run_ctx.stream);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  int64_t total = 0;
  switch (pass) {
    case GpuConvPass::kForward: total = g.n * g.f * g.out[0] * g.out[1] * g.out[2]; break;
    case GpuConvPass::kBackwardData: total = g.n * g.c * g.in[0] * g.in[1] * g.in[2]; break;
    case GpuConvPass::kBackwardFilter: total = g.f * (g.c / g.g) * g.k[0] * g.k[1] * g.k[2]; break;
  }
  if (total == 0) return;
  WEFT_CONV_GPU_TYPE_SWITCH(dt, T, op, {
    const T* tx = static_cast<const T*>(x);
    const T* tw = static_cast<const T*>(w);
    const T* ty = static_cast<const T*>(y);
    switch (pass) {
      case GpuConvPass::kForward:
        DirectForwardKernel<T><<<cuda::GridFor(total), cuda::kBlockThreads, 0, stream>>>(g, tx, tw, const_cast<T*>(ty), req);
        break;
      case GpuConvPass::kBackwardData:
        DirectBackwardDataKernel<T><<<cuda::GridFor(total), cuda::kBlockThreads, 0, stream>>>(g, const_cast<T*>(tx), tw, ty, req);
        break;
      case GpuConvPass::kBackwardFilter:
        DirectBackwardFilterKernel<T><<<cuda::GridFor(total), cuda::kBlockThreads, 0, stream>>>(g, tx, const_cast<T*>(tw), ty, req);
        break;
    }
    cuda::CheckLaunch(op);
  });
}

void GpuAddBias(const char* op, const OpContext& ctx, DType dt, void* y, const void* bias, int64_t n, int64_t channels,
                int64_t spatial) {
  const int64_t total = n * channels * spatial;
  if (total == 0) return;
  cudaStream_t stream = cuda::StreamOf(ctx.run_ctx.stream);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_CONV_GPU_TYPE_SWITCH(dt, T, op, {
    AddBiasKernel<T><<<cuda::GridFor(total), cuda::kBlockThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), total, channels, spatial);
    cuda::CheckLaunch(op);
  });
}

void GpuBiasGrad(const char* op, const OpContext& ctx, DType dt, const void* dy, void* db, OpReq req, int64_t n,
                 int64_t channels, int64_t spatial) {
  if (req == OpReq::kNullOp || channels == 0) return;
  cudaStream_t stream = cuda::StreamOf(ctx.run_ctx.stream);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_CONV_GPU_TYPE_SWITCH(dt, T, op, {
    BiasGradKernel<T><<<static_cast<unsigned>(channels), cuda::kBlockThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(db), req, n, channels, spatial);
    cuda::CheckLaunch(op);
  });
}

}  // namespace op
}  // namespace weft

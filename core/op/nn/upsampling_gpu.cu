// GPU versions of UpSampling and _backward_UpSampling, as upsampling.cc computes them:
// 'nearest' repeats each input (several are concatenated along the channels or summed),
// its gradient sums each repeated block; 'bilinear' is the depthwise transposed
// convolution with the weight input (kernel k = 2*scale - scale%2, stride scale, padding
// scale/2), written as direct kernels: a thread per output element gathering the taps
// that reach it, a thread per data-gradient element, and a block per weight element
// reducing over the batch and the input positions in shared memory.
#include <algorithm>
#include <type_traits>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/upsampling.h"

namespace weft {
namespace op {
namespace {

// 'bilinear' takes floating-point data only.
#define WEFT_GPU_BILINEAR_SWITCH(dtype, DT, what, ...)                                              \
  switch (dtype) {                                                                                  \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                         \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                \
    default:                                                                                        \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                            \
                    "' ('bilinear'): on GPUs, expected float32, float64 or float16 data, got ",     \
                    ::weft::DTypeName(dtype));                                                      \
  }

bool IsBilinear(const NodeAttrs& attrs) { return attrs.Params<UpSamplingParam>().sample_type == "bilinear"; }

// ---------------------------------------------------------------- nearest
struct NearestGeom {
  int64_t N, C, H, W;  // this input
  int64_t OC, OH, OW;  // the output
  int64_t sy, sx, c0;  // repeats and the first output channel of this input
};

NearestGeom MakeNearest(const Shape& x, const Shape& y, int64_t c0) {
  return NearestGeom{x[0], x[1], x[2], x[3], y[1], y[2], y[3], y[2] / x[2], y[3] / x[3], c0};
}

// out[n, c0 + c, oy, ox] (req)= in[n, c, oy / sy, ox / sx]; i indexes this input's block
// of the output, N x C x OH x OW.
template <typename T>
struct NearestForwardFn {
  NearestGeom g;
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    const int64_t ox = i % g.OW;
    int64_t r = i / g.OW;
    const int64_t oy = r % g.OH;
    r /= g.OH;
    const int64_t c = r % g.C, n = r / g.C;
    const cuda::ComputeT<T> v = static_cast<cuda::ComputeT<T>>(x[((n * g.C + c) * g.H + oy / g.sy) * g.W + ox / g.sx]);
    cuda::Store(y, ((n * g.OC + g.c0 + c) * g.OH + oy) * g.OW + ox, v, req);
  }
};

// dx[n, c, iy, ix] (req)= the sum of g[n, c0 + c] over the sy x sx block it was copied to.
template <typename T>
struct NearestBackwardFn {
  NearestGeom g;
  const T* gy;
  T* dx;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    const int64_t ix = i % g.W;
    int64_t r = i / g.W;
    const int64_t iy = r % g.H;
    r /= g.H;
    const int64_t c = r % g.C, n = r / g.C;
    const T* block = gy + ((n * g.OC + g.c0 + c) * g.OH + iy * g.sy) * g.OW + ix * g.sx;
    A acc = A(0);
    for (int64_t ky = 0; ky < g.sy; ++ky)
      for (int64_t kx = 0; kx < g.sx; ++kx) acc += static_cast<A>(block[ky * g.OW + kx]);
    cuda::Store(dx, i, acc, req);
  }
};

// ---------------------------------------------------------------- bilinear
// Input (iy, ix) contributes to output (iy*s - pad + ky, ix*s - pad + kx) with w[c, 0, ky, kx].
struct DeconvGeom {
  int64_t N, C, H, W, OH, OW, k, s, pad;
};

DeconvGeom MakeDeconv(const NodeAttrs& attrs, const Shape& data) {
  const int64_t scale = attrs.Params<UpSamplingParam>().scale;
  return DeconvGeom{data[0], data[1], data[2], data[3], data[2] * scale, data[3] * scale,
                    2 * scale - scale % 2, scale, scale / 2};
}

// The input position that output position o reaches through tap kk, or -1.
__device__ __forceinline__ int64_t TapSource(int64_t o, int64_t kk, int64_t s, int64_t pad, int64_t n) {
  const int64_t t = o + pad - kk;
  if (t < 0 || t % s != 0) return -1;
  const int64_t i = t / s;
  return i < n ? i : -1;
}

template <typename T>
struct BilinearForwardFn {
  DeconvGeom g;
  const T* x;
  const T* w;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    const int64_t ox = i % g.OW;
    const int64_t oy = (i / g.OW) % g.OH;
    const int64_t nc = i / (g.OW * g.OH);
    const T* xs = x + nc * g.H * g.W;
    const T* ws = w + (nc % g.C) * g.k * g.k;
    A acc = A(0);
    for (int64_t ky = 0; ky < g.k; ++ky) {
      const int64_t iy = TapSource(oy, ky, g.s, g.pad, g.H);
      if (iy < 0) continue;
      for (int64_t kx = 0; kx < g.k; ++kx) {
        const int64_t ix = TapSource(ox, kx, g.s, g.pad, g.W);
        if (ix >= 0) acc += static_cast<A>(xs[iy * g.W + ix]) * static_cast<A>(ws[ky * g.k + kx]);
      }
    }
    cuda::Store(y, i, acc, req);
  }
};

// dx[n, c, iy, ix] = sum over the taps of g[oy, ox] * w[ky, kx].
template <typename T>
struct BilinearDataGradFn {
  DeconvGeom g;
  const T* gy;
  const T* w;
  T* dx;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    const int64_t ix = i % g.W;
    const int64_t iy = (i / g.W) % g.H;
    const int64_t nc = i / (g.W * g.H);
    const T* gs = gy + nc * g.OH * g.OW;
    const T* ws = w + (nc % g.C) * g.k * g.k;
    A acc = A(0);
    for (int64_t ky = 0; ky < g.k; ++ky) {
      const int64_t oy = iy * g.s - g.pad + ky;
      if (oy < 0 || oy >= g.OH) continue;
      for (int64_t kx = 0; kx < g.k; ++kx) {
        const int64_t ox = ix * g.s - g.pad + kx;
        if (ox >= 0 && ox < g.OW) acc += static_cast<A>(gs[oy * g.OW + ox]) * static_cast<A>(ws[ky * g.k + kx]);
      }
    }
    cuda::Store(dx, i, acc, req);
  }
};

// dw[c, ky, kx] = sum over n, iy, ix of g[n, c, oy, ox] * x[n, c, iy, ix]: a block per
// weight element (blockDim.x == kBlockThreads), grid-strided.
template <typename T>
__global__ void BilinearWeightGradKernel(DeconvGeom g, const T* gy, const T* x, T* dw, OpReq req) {
  using A = cuda::ComputeT<T>;
  __shared__ A part[cuda::kBlockThreads];
  const int64_t kk = g.k * g.k, in_plane = g.H * g.W, per_channel = g.N * in_plane;
  for (int64_t e = blockIdx.x; e < g.C * kk; e += gridDim.x) {
    const int64_t c = e / kk, ky = (e % kk) / g.k, kx = e % g.k;
    A acc = A(0);
    for (int64_t r = threadIdx.x; r < per_channel; r += blockDim.x) {
      const int64_t n = r / in_plane, iy = (r % in_plane) / g.W, ix = r % g.W;
      const int64_t oy = iy * g.s - g.pad + ky, ox = ix * g.s - g.pad + kx;
      if (oy < 0 || oy >= g.OH || ox < 0 || ox >= g.OW) continue;
      const int64_t nc = n * g.C + c;
      acc += static_cast<A>(gy[(nc * g.OH + oy) * g.OW + ox]) * static_cast<A>(x[nc * in_plane + iy * g.W + ix]);
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) cuda::Store(dw, e, part[0], req);
    __syncthreads();  // part is reused by the next weight element
  }
}

// ---------------------------------------------------------------- compute functions
void UpSamplingComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (IsBilinear(attrs)) {
    const DeconvGeom g = MakeDeconv(attrs, in[0].shape);
    WEFT_GPU_BILINEAR_SWITCH(in[0].dtype, T, name, {
      cuda::ForEach(out[0].Size(), s, BilinearForwardFn<T>{g, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]},
                    name);
    });
    return;
  }
  const bool sum = attrs.Params<UpSamplingParam>().multi_input_mode == "sum";
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    int64_t c0 = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      // With 'sum' the first input writes (or adds, for kAddTo) and the rest add; the
      // launches are ordered on the stream.
      const bool add = req[0] == OpReq::kAddTo || (sum && i > 0);
      const NearestGeom g = MakeNearest(in[i].shape, out[0].shape, c0);
      // A thread per element of this input's block of the output.
      cuda::ForEach(g.N * g.C * g.OH * g.OW, s,
                    NearestForwardFn<T>{g, in[i].ptr<T>(), out[0].ptr<T>(), add ? OpReq::kAddTo : OpReq::kWriteTo},
                    name);
      if (!sum) c0 += in[i].shape[1];
    }
  });
}

// Inputs: ograd, then the forward inputs. Outputs: one gradient per forward input.
void UpSamplingBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (IsBilinear(attrs)) {
    const DeconvGeom g = MakeDeconv(attrs, in[1].shape);
    WEFT_GPU_BILINEAR_SWITCH(in[0].dtype, T, name, {
      if (req[0] != OpReq::kNullOp)
        cuda::ForEach(out[0].Size(), s,
                      BilinearDataGradFn<T>{g, in[0].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
      const int64_t weights = g.C * g.k * g.k;
      if (req[1] != OpReq::kNullOp && weights > 0) {
        const unsigned grid = static_cast<unsigned>(std::min<int64_t>(weights, 65535));
        BilinearWeightGradKernel<T><<<grid, cuda::kBlockThreads, 0, s>>>(g, in[0].ptr<T>(), in[1].ptr<T>(),
                                                                         out[1].ptr<T>(), req[1]);
        cuda::CheckLaunch(name);
      }
    });
    return;
  }
  const bool sum = attrs.Params<UpSamplingParam>().multi_input_mode == "sum";
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    int64_t c0 = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (req[i] != OpReq::kNullOp)
        cuda::ForEach(out[i].Size(), s,
                      NearestBackwardFn<T>{MakeNearest(out[i].shape, in[0].shape, c0), in[0].ptr<T>(),
                                           out[i].ptr<T>(), req[i]},
                      name);
      if (!sum) c0 += out[i].shape[1];
    }
  });
}

#undef WEFT_GPU_BILINEAR_SWITCH

}  // namespace

WEFT_REGISTER_OP(UpSampling).SetAttr<FCompute>("FCompute<gpu>", UpSamplingComputeGPU);
WEFT_REGISTER_OP(_backward_UpSampling).SetAttr<FCompute>("FCompute<gpu>", UpSamplingBackwardGPU);

}  // namespace op
}  // namespace weft

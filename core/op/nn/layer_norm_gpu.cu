// GPU versions of LayerNorm, GroupNorm, InstanceNorm and their `_backward_*` operators
// (layer_norm.cc). Rows as on the CPU: row r's element k is at
// (r / inner) * len * inner + k * inner + r % inner and uses gamma / beta at AffIndex(r, k).
// One block per row computes the mean, then the biased variance around it (two passes, as the
// CPU), and writes the row; the backward computes d data per row the same way, and d gamma /
// d beta with one block per channel over the (row, position) pairs that use it, so nothing
// is scattered with atomics.
#include <vector>

#include "core/op/nn/layer_norm_param.h"
#include "core/op/nn/nn_gpu.cuh"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {
namespace {

using nngpu::Acc;

enum Kind { kLayer = 0, kGroup = 1, kInstance = 2 };

Kind KindOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("GroupNorm") != std::string::npos) return kGroup;
  if (n.find("InstanceNorm") != std::string::npos) return kInstance;
  return kLayer;
}

struct Layout {
  int64_t rows = 0, len = 0, inner = 1;
  int64_t channels = 0;     // gamma / beta size
  int64_t groups = 1;       // GroupNorm
  int64_t per_channel = 1;  // GroupNorm / InstanceNorm: elements per channel in a row
  __device__ int64_t Offset(int64_t r, int64_t k) const { return (r / inner) * len * inner + k * inner + r % inner; }
};

// The shape inference has checked the parameters against the data (num_groups divides C).
Layout MakeLayout(const NodeAttrs& attrs, Kind kind, const Shape& d) {
  Layout l;
  if (kind == kLayer) {
    const auto& p = attrs.Params<LayerNormParam>();
    int axis = p.axis < 0 ? p.axis + d.ndim() : p.axis;
    nn::AxisSplit sp = nn::SplitAt(d, axis);
    l.rows = sp.outer * sp.inner;
    l.len = sp.n;
    l.inner = sp.inner;
    l.channels = sp.n;
    return l;
  }
  int64_t S = 1;
  for (int k = 2; k < d.ndim(); ++k) S *= d[k];
  l.per_channel = S;
  l.channels = d[1];
  if (kind == kGroup) {
    const int64_t G = attrs.Params<GroupNormParam>().num_groups;
    l.rows = d[0] * G;
    l.len = d[1] / G * S;
    l.groups = G;
    l.channels = G;  // gamma / beta are per group (MXNet 1.9)
  } else {
    l.rows = d[0] * d[1];
    l.len = S;
  }
  return l;
}

double EpsOf(const NodeAttrs& attrs, Kind kind) {
  if (kind == kLayer) return attrs.Params<LayerNormParam>().eps;
  if (kind == kGroup) return attrs.Params<GroupNormParam>().eps;
  return attrs.Params<InstanceNormParam>().eps;
}

template <int K>
__device__ inline int64_t AffIndex(const Layout& l, int64_t r, int64_t k) {
  if constexpr (K == kLayer) return k;
  if constexpr (K == kGroup) return r % l.groups;
  return r % l.channels;
}

// Channel c's uses: `Uses` (row, position) pairs, the j-th of them given by At.
template <int K>
__device__ inline int64_t Uses(const Layout& l) {
  if constexpr (K == kLayer) return l.rows;
  if constexpr (K == kGroup) return l.rows / l.groups * l.len;
  return l.rows / l.channels * l.per_channel;
}

template <int K>
__device__ inline void At(const Layout& l, int64_t c, int64_t j, int64_t* r, int64_t* k) {
  if constexpr (K == kLayer) {
    *r = j;
    *k = c;
  } else if constexpr (K == kGroup) {
    // c is a group: its uses are every position of that group's row in each sample.
    const int64_t n = j / l.len;
    *r = n * l.groups + c;
    *k = j - n * l.len;
  } else {
    const int64_t n = j / l.per_channel;
    *r = n * l.channels + c;
    *k = j - n * l.per_channel;
  }
}

template <int K, typename T>
__global__ void NormForwardKernel(Layout l, const T* x, const T* gamma, const T* beta, T* y, T* mean_out, T* std_out,
                                  Acc<T> eps, OpReq req_y, OpReq req_mean, OpReq req_std) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const A count = static_cast<A>(l.len);
  for (int64_t r = blockIdx.x; r < l.rows; r += gridDim.x) {
    A sum = 0;
    for (int64_t k = threadIdx.x; k < l.len; k += blockDim.x) sum += static_cast<A>(x[l.Offset(r, k)]);
    sum = nngpu::BlockSum(sum, scratch);
    const A mean = l.len > 0 ? sum / count : A(0);
    A sq = 0;
    for (int64_t k = threadIdx.x; k < l.len; k += blockDim.x) {
      A d = static_cast<A>(x[l.Offset(r, k)]) - mean;
      sq += d * d;
    }
    sq = nngpu::BlockSum(sq, scratch);
    const A sd = sqrt((l.len > 0 ? sq / count : A(0)) + eps);
    const A rstd = A(1) / sd;
    if (threadIdx.x == 0) {
      if (req_mean != OpReq::kNullOp) nngpu::Put(mean_out + r, req_mean, mean);
      if (req_std != OpReq::kNullOp) nngpu::Put(std_out + r, req_std, sd);
    }
    if (req_y == OpReq::kNullOp) continue;
    for (int64_t k = threadIdx.x; k < l.len; k += blockDim.x) {
      const int64_t i = l.Offset(r, k), a = AffIndex<K>(l, r, k);
      const A v = (static_cast<A>(x[i]) - mean) * rstd * static_cast<A>(gamma[a]) + static_cast<A>(beta[a]);
      nngpu::Put(y + i, req_y, v);
    }
  }
}

// d data of each row: rstd * (gg - mean(gg) - xhat * mean(gg * xhat)) with gg = dy * gamma.
template <int K, typename T>
__global__ void NormBackwardDataKernel(Layout l, const T* dy, const T* x, const T* gamma, const T* mean_in,
                                       const T* std_in, T* dx, OpReq req) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const A count = static_cast<A>(l.len);
  for (int64_t r = blockIdx.x; r < l.rows; r += gridDim.x) {
    const A mean = static_cast<A>(mean_in[r]);
    const A rstd = A(1) / static_cast<A>(std_in[r]);
    A sum_g = 0, sum_gx = 0;
    for (int64_t k = threadIdx.x; k < l.len; k += blockDim.x) {
      const int64_t i = l.Offset(r, k);
      const A gg = static_cast<A>(dy[i]) * static_cast<A>(gamma[AffIndex<K>(l, r, k)]);
      sum_g += gg;
      sum_gx += gg * ((static_cast<A>(x[i]) - mean) * rstd);
    }
    sum_g = nngpu::BlockSum(sum_g, scratch);
    sum_gx = nngpu::BlockSum(sum_gx, scratch);
    const A mg = l.len > 0 ? sum_g / count : A(0), mgx = l.len > 0 ? sum_gx / count : A(0);
    for (int64_t k = threadIdx.x; k < l.len; k += blockDim.x) {
      const int64_t i = l.Offset(r, k);
      const A xhat = (static_cast<A>(x[i]) - mean) * rstd;
      const A gg = static_cast<A>(dy[i]) * static_cast<A>(gamma[AffIndex<K>(l, r, k)]);
      nngpu::Put(dx + i, req, rstd * (gg - mg - xhat * mgx));
    }
  }
}

// d gamma[c] = sum of dy * xhat and d beta[c] = sum of dy over channel c's uses.
template <int K, typename T>
__global__ void NormBackwardAffineKernel(Layout l, const T* dy, const T* x, const T* mean_in, const T* std_in,
                                         T* dgamma, T* dbeta, OpReq req_g, OpReq req_b) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t uses = Uses<K>(l);
  for (int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
    A dg = 0, db = 0;
    for (int64_t j = threadIdx.x; j < uses; j += blockDim.x) {
      int64_t r, k;
      At<K>(l, c, j, &r, &k);
      const int64_t i = l.Offset(r, k);
      const A g = static_cast<A>(dy[i]);
      dg += g * ((static_cast<A>(x[i]) - static_cast<A>(mean_in[r])) * (A(1) / static_cast<A>(std_in[r])));
      db += g;
    }
    dg = nngpu::BlockSum(dg, scratch);
    db = nngpu::BlockSum(db, scratch);
    if (threadIdx.x == 0) {
      if (req_g != OpReq::kNullOp) nngpu::Put(dgamma + c, req_g, dg);
      if (req_b != OpReq::kNullOp) nngpu::Put(dbeta + c, req_b, db);
    }
  }
}

// LayerNorm over the last axis (inner 1, rows contiguous): d gamma / d beta with a warp's
// lanes on 32 neighbouring channels, so that the reads of each row are coalesced, and the
// block's kTileRows row lanes summed through shared memory at the end.
constexpr int kTileRows = 16;

template <typename T>
__global__ void __launch_bounds__(32 * kTileRows)
    LayerNormAffineTiledKernel(Layout l, const T* dy, const T* x, const T* mean_in, const T* std_in, T* dgamma,
                               T* dbeta, OpReq req_g, OpReq req_b) {
  using A = Acc<T>;
  __shared__ A part_g[kTileRows][33], part_b[kTileRows][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32; c0 < l.len; c0 += static_cast<int64_t>(gridDim.x) * 32) {
    const int64_t c = c0 + tx;
    A dg = 0, db = 0;
    if (c < l.len) {
      for (int64_t r = ty; r < l.rows; r += kTileRows) {
        const int64_t i = r * l.len + c;
        const A g = static_cast<A>(dy[i]);
        dg += g * ((static_cast<A>(x[i]) - static_cast<A>(mean_in[r])) * (A(1) / static_cast<A>(std_in[r])));
        db += g;
      }
    }
    part_g[ty][tx] = dg;
    part_b[ty][tx] = db;
    __syncthreads();
    if (ty == 0 && c < l.len) {
      for (int k = 1; k < kTileRows; ++k) {
        dg += part_g[k][tx];
        db += part_b[k][tx];
      }
      if (req_g != OpReq::kNullOp) nngpu::Put(dgamma + c, req_g, dg);
      if (req_b != OpReq::kNullOp) nngpu::Put(dbeta + c, req_b, db);
    }
    __syncthreads();  // the partial sums are read before the next tile overwrites them
  }
}

template <typename F>
void KindDispatch(Kind k, F&& f) {
  switch (k) {
    case kLayer: f(std::integral_constant<int, kLayer>()); break;
    case kGroup: f(std::integral_constant<int, kGroup>()); break;
    case kInstance: f(std::integral_constant<int, kInstance>()); break;
  }
}

void NormComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const char* name = attrs.op->name.c_str();
  Kind kind = KindOf(attrs);
  Layout l = MakeLayout(attrs, kind, in[0].shape);
  if (l.rows == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, T, name, {
    KindDispatch(kind, [&](auto kc) {
      NormForwardKernel<decltype(kc)::value, T><<<nngpu::BlocksFor(l.rows), nngpu::kReduceThreads, 0, s>>>(
          l, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), out[1].ptr<T>(), out[2].ptr<T>(),
          static_cast<Acc<T>>(EpsOf(attrs, kind)), req[0], req[1], req[2]);
      cuda::CheckLaunch(name);
    });
  });
}

// Inputs: out_grad, data, gamma, mean, std; outputs: d data, d gamma, d beta.
void NormBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const char* name = attrs.op->name.c_str();
  Kind kind = KindOf(attrs);
  Layout l = MakeLayout(attrs, kind, in[1].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, T, name, {
    KindDispatch(kind, [&](auto kc) {
      constexpr int K = decltype(kc)::value;
      if (req[0] != OpReq::kNullOp && l.rows > 0) {
        NormBackwardDataKernel<K, T><<<nngpu::BlocksFor(l.rows), nngpu::kReduceThreads, 0, s>>>(
            l, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), in[3].ptr<T>(), in[4].ptr<T>(), out[0].ptr<T>(),
            req[0]);
        cuda::CheckLaunch(name);
      }
      if ((req[1] != OpReq::kNullOp || req[2] != OpReq::kNullOp) && l.channels > 0) {
        if constexpr (K == kLayer) {
          if (l.inner == 1) {
            LayerNormAffineTiledKernel<T><<<nngpu::BlocksFor((l.len + 31) / 32), dim3(32, kTileRows), 0, s>>>(
                l, in[0].ptr<T>(), in[1].ptr<T>(), in[3].ptr<T>(), in[4].ptr<T>(), out[1].ptr<T>(), out[2].ptr<T>(),
                req[1], req[2]);
            cuda::CheckLaunch(name);
            return;
          }
        }
        NormBackwardAffineKernel<K, T><<<nngpu::BlocksFor(l.channels), nngpu::kReduceThreads, 0, s>>>(
            l, in[0].ptr<T>(), in[1].ptr<T>(), in[3].ptr<T>(), in[4].ptr<T>(), out[1].ptr<T>(), out[2].ptr<T>(),
            req[1], req[2]);
        cuda::CheckLaunch(name);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(LayerNorm).SetAttr<FCompute>("FCompute<gpu>", NormComputeGPU);
WEFT_REGISTER_OP(GroupNorm).SetAttr<FCompute>("FCompute<gpu>", NormComputeGPU);
WEFT_REGISTER_OP(InstanceNorm).SetAttr<FCompute>("FCompute<gpu>", NormComputeGPU);
WEFT_REGISTER_OP(_backward_LayerNorm).SetAttr<FCompute>("FCompute<gpu>", NormBackwardComputeGPU);
WEFT_REGISTER_OP(_backward_GroupNorm).SetAttr<FCompute>("FCompute<gpu>", NormBackwardComputeGPU);
WEFT_REGISTER_OP(_backward_InstanceNorm).SetAttr<FCompute>("FCompute<gpu>", NormBackwardComputeGPU);

}  // namespace op
}  // namespace weft

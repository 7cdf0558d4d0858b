// GPU versions of BatchNorm and _backward_BatchNorm (batch_norm.cc), without cuDNN: one block
// per channel reduces the channel's outer x inner elements through shared memory in the
// CPU's accumulation type (float for float16), with the CPU's formulas: the batch moments
// shifted by the channel's first value, the biased variance, the moving statistics updated
// as moving * momentum + batch * (1 - momentum), fix_gamma as gamma = 1.
#include <vector>

#include "core/op/nn/batch_norm_param.h"
#include "core/op/nn/nn_gpu.cuh"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {
namespace {

using nngpu::Acc;

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

template <typename T>
__global__ void __launch_bounds__(1024)
    BatchNormForwardKernel(ChannelLayout l, const T* x, const T* gamma, const T* beta, T* mmean, T* mvar, T* y,
                           T* smean, T* svar, Acc<T> eps, Acc<T> mom, bool batch_stats, bool fix_gamma, OpReq req_y,
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
        mmean[c] = static_cast<T>(static_cast<A>(mmean[c]) * mom + mean * (A(1) - mom));
        mvar[c] = static_cast<T>(static_cast<A>(mvar[c]) * mom + var * (A(1) - mom));
      }
    } else {
      mean = static_cast<A>(mmean[c]);
      var = static_cast<A>(mvar[c]);
    }
    if (threadIdx.x == 0) {
      if (req_mean != OpReq::kNullOp) nngpu::Put(smean + c, req_mean, mean);
      if (req_var != OpReq::kNullOp) nngpu::Put(svar + c, req_var, var);
    }
    if (req_y == OpReq::kNullOp) continue;
    const A g = fix_gamma ? A(1) : static_cast<A>(gamma[c]);
    const A scale = g / sqrt(var + eps);
    const A shift = static_cast<A>(beta[c]) - mean * scale;
    for (ChannelWalk w(l, c); w.j < per; w.Next()) {
      const int64_t i = w.pos;
      nngpu::Put(y + i, req_y, static_cast<A>(x[i]) * scale + shift);
    }
  }
}

// Inputs: out_grad, data, gamma, mean, var (what the forward used); outputs d data,
// d gamma, d beta. With batch statistics mean and var depend on x:
// dx = g * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
template <typename T>
__global__ void __launch_bounds__(1024)
    BatchNormBackwardKernel(ChannelLayout l, const T* dy, const T* x, const T* gamma, const T* smean, const T* svar,
                            T* dx, T* dgamma, T* dbeta, Acc<T> eps, bool batch_stats, bool fix_gamma, OpReq req_dx,
                            OpReq req_dg, OpReq req_db) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t per = l.outer * l.inner;
  const A count = static_cast<A>(per);
  for (int64_t c = blockIdx.x; c < l.C; c += gridDim.x) {
    const A mean = static_cast<A>(smean[c]);
    const A rstd = A(1) / sqrt(static_cast<A>(svar[c]) + eps);
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

void BatchNormComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  const char* name = attrs.op->name.c_str();
  if (in[1].dtype != in[0].dtype)
    Throw(ErrorKind::kUnsupported, "Operator '", name,
          "': on GPUs, expected gamma, beta and the statistics in the data's dtype ", DTypeName(in[0].dtype),
          ", got ", DTypeName(in[1].dtype));
  ChannelLayout l = LayoutOf(p, in[0].shape);
  if (l.C == 0) return;
  const bool batch_stats = ctx.is_train && !p.use_global_stats;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, T, name, {
    BatchNormForwardKernel<T><<<nngpu::BlocksFor(l.C), ChannelThreads(l), 0, s>>>(
        l, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), in[3].ptr<T>(), in[4].ptr<T>(), out[0].ptr<T>(),
        out[1].ptr<T>(), out[2].ptr<T>(), static_cast<Acc<T>>(p.eps), static_cast<Acc<T>>(p.momentum), batch_stats,
        p.fix_gamma, req[0], req[1], req[2]);
    cuda::CheckLaunch(name);
  });
}

void BatchNormBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  const char* name = attrs.op->name.c_str();
  if (in[2].dtype != in[1].dtype)
    Throw(ErrorKind::kUnsupported, "Operator '", name,
          "': on GPUs, expected gamma and the statistics in the data's dtype ", DTypeName(in[1].dtype),
          ", got ", DTypeName(in[2].dtype));
  ChannelLayout l = LayoutOf(p, in[1].shape);
  if (l.C == 0) return;
  const bool batch_stats = ctx.is_train && !p.use_global_stats;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, T, name, {
    BatchNormBackwardKernel<T><<<nngpu::BlocksFor(l.C), ChannelThreads(l), 0, s>>>(
        l, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), in[3].ptr<T>(), in[4].ptr<T>(), out[0].ptr<T>(),
        out[1].ptr<T>(), out[2].ptr<T>(), static_cast<Acc<T>>(p.eps), batch_stats, p.fix_gamma, req[0], req[1],
        req[2]);
    cuda::CheckLaunch(name);
  });
}

}  // namespace

WEFT_REGISTER_OP(BatchNorm).SetAttr<FCompute>("FCompute<gpu>", BatchNormComputeGPU);
WEFT_REGISTER_OP(_backward_BatchNorm).SetAttr<FCompute>("FCompute<gpu>", BatchNormBackwardComputeGPU);

}  // namespace op
}  // namespace weft

// GPU versions of softmax, log_softmax, softmin, SoftmaxActivation and their `_backward_*`
// operators (softmax.cc). The data is outer x n x inner with n the softmax axis; one block
// reduces each row (the n values `inner` apart) through shared memory: its maximum, then the
// sum of exponentials, in the CPU's accumulation type and with the CPU's formulas. Rows along
// a non-last axis (`inner` >= 32) take one thread each instead, for coalesced reads.
//
// Row lengths (use_length) are read on the device in any of the GPU dtypes; a length is
// clipped to [0, n] (the CPU refuses a negative one, which the GPU cannot report without
// waiting for the device: there such a row is all zeros).
#include <limits>
#include <vector>

#include "core/op/nn/nn_gpu.cuh"
#include "core/op/nn/norm_util.h"
#include "core/op/nn/softmax_param.h"

namespace weft {
namespace op {
namespace {

enum class Kind { kSoftmax, kLogSoftmax, kSoftmin };

Kind KindOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("log_softmax") != std::string::npos) return Kind::kLogSoftmax;
  if (n.find("softmin") != std::string::npos) return Kind::kSoftmin;
  return Kind::kSoftmax;
}

// Where a row's length comes from: nothing (n), or the length array in one of these types.
enum class LenType { kNone, kFloat32, kFloat64, kFloat16, kBfloat16, kUint8, kInt8, kInt32, kInt64, kBool };

struct RowLength {
  const void* p = nullptr;
  LenType type = LenType::kNone;
  __device__ int64_t operator()(int64_t r, int64_t n) const {
    double v;
    switch (type) {
      case LenType::kNone: return n;
      case LenType::kFloat32: v = static_cast<const float*>(p)[r]; break;
      case LenType::kFloat64: v = static_cast<const double*>(p)[r]; break;
      case LenType::kFloat16: v = static_cast<float>(static_cast<const float16*>(p)[r]); break;
      case LenType::kBfloat16: v = static_cast<float>(static_cast<const bfloat16*>(p)[r]); break;
      case LenType::kUint8: v = static_cast<const uint8_t*>(p)[r]; break;
      case LenType::kInt8: v = static_cast<const int8_t*>(p)[r]; break;
      case LenType::kBool: v = static_cast<const bool*>(p)[r] ? 1.0 : 0.0; break;
      case LenType::kInt32: v = static_cast<const int32_t*>(p)[r]; break;
      default: v = static_cast<double>(static_cast<const int64_t*>(p)[r]); break;
    }
    if (!(v >= 0)) return 0;
    return v < static_cast<double>(n) ? static_cast<int64_t>(v) : n;
  }
};

RowLength LengthOf(const NodeAttrs& attrs, const TBlob* len) {
  RowLength l;
  if (len == nullptr) return l;
  l.p = len->dptr;
  switch (len->dtype) {
    case DType::kFloat32: l.type = LenType::kFloat32; break;
    case DType::kFloat64: l.type = LenType::kFloat64; break;
    case DType::kFloat16: l.type = LenType::kFloat16; break;
    case DType::kBfloat16: l.type = LenType::kBfloat16; break;
    case DType::kUint8: l.type = LenType::kUint8; break;
    case DType::kInt8: l.type = LenType::kInt8; break;
    case DType::kBool: l.type = LenType::kBool; break;
    case DType::kInt32: l.type = LenType::kInt32; break;
    case DType::kInt64: l.type = LenType::kInt64; break;
    default:
      Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
            "': on GPUs, unsupported dtype of input 'length': ",
            DTypeName(len->dtype));
  }
  return l;
}

template <typename TI, typename TO>
using RowAcc = std::conditional_t<std::is_same_v<TI, double> || std::is_same_v<TO, double>, double, float>;

template <typename TI, typename TO>
__global__ void SoftmaxForwardKernel(const TI* x, TO* y, int64_t rows, int64_t n, int64_t inner, RowLength lens,
                                     RowAcc<TI, TO> inv_t, bool is_log, OpReq req) {
  using A = RowAcc<TI, TO>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    const int64_t len = lens(r, n);
    A mx = -std::numeric_limits<A>::infinity();
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      A v = static_cast<A>(x[base + k * inner]) * inv_t;
      mx = mx < v ? v : mx;
    }
    mx = nngpu::BlockMax(mx, scratch);
    A sum = 0;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
      sum += exp(static_cast<A>(x[base + k * inner]) * inv_t - mx);
    sum = nngpu::BlockSum(sum, scratch);
    const A lse = mx + log(sum), inv = A(1) / sum;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      A v = A(0);
      if (k < len) {
        A xv = static_cast<A>(x[base + k * inner]) * inv_t;
        v = is_log ? xv - lse : exp(xv - mx) * inv;
      }
      nngpu::Put(y + base + k * inner, req, v);
    }
  }
}

// dx from out_grad g and the output y: softmax / softmin y * (g - sum(g y)) * s, log_softmax
// (g - exp(y) * sum(g)) * s.
template <typename TO, typename TI>
__global__ void SoftmaxBackwardKernel(const TO* g, const TO* y, TI* dx, int64_t rows, int64_t n, int64_t inner,
                                      RowLength lens, RowAcc<TI, TO> s, bool is_log, OpReq req) {
  using A = RowAcc<TI, TO>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    const int64_t len = lens(r, n);
    A dot = 0;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      const int64_t j = base + k * inner;
      dot += is_log ? static_cast<A>(g[j]) : static_cast<A>(g[j]) * static_cast<A>(y[j]);
    }
    dot = nngpu::BlockSum(dot, scratch);
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const int64_t j = base + k * inner;
      A v = A(0);
      if (k < len) {
        A gj = static_cast<A>(g[j]), yj = static_cast<A>(y[j]);
        v = is_log ? (gj - exp(yj) * dot) * s : yj * (gj - dot) * s;
      }
      nngpu::Put(dx + j, req, v);
    }
  }
}

// Softmax along a non-last axis (inner >= 32): one thread per row, neighbouring threads on
// neighbouring rows, so that every read of the n-long loops is coalesced across the warp.
template <typename TI, typename TO>
__global__ void SoftmaxForwardRowKernel(const TI* x, TO* y, int64_t rows, int64_t n, int64_t inner, RowLength lens,
                                        RowAcc<TI, TO> inv_t, bool is_log, OpReq req) {
  using A = RowAcc<TI, TO>;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    const int64_t len = lens(r, n);
    A mx = -std::numeric_limits<A>::infinity();
    for (int64_t k = 0; k < len; ++k) {
      A v = static_cast<A>(x[base + k * inner]) * inv_t;
      mx = mx < v ? v : mx;
    }
    A sum = 0;
    for (int64_t k = 0; k < len; ++k) sum += exp(static_cast<A>(x[base + k * inner]) * inv_t - mx);
    const A lse = mx + log(sum), inv = A(1) / sum;
    for (int64_t k = 0; k < n; ++k) {
      A v = A(0);
      if (k < len) {
        A xv = static_cast<A>(x[base + k * inner]) * inv_t;
        v = is_log ? xv - lse : exp(xv - mx) * inv;
      }
      nngpu::Put(y + base + k * inner, req, v);
    }
  }
}

template <typename TO, typename TI>
__global__ void SoftmaxBackwardRowKernel(const TO* g, const TO* y, TI* dx, int64_t rows, int64_t n, int64_t inner,
                                         RowLength lens, RowAcc<TI, TO> s, bool is_log, OpReq req) {
  using A = RowAcc<TI, TO>;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    const int64_t len = lens(r, n);
    A dot = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t j = base + k * inner;
      dot += is_log ? static_cast<A>(g[j]) : static_cast<A>(g[j]) * static_cast<A>(y[j]);
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t j = base + k * inner;
      A v = A(0);
      if (k < len) {
        A gj = static_cast<A>(g[j]), yj = static_cast<A>(y[j]);
        v = is_log ? (gj - exp(yj) * dot) * s : yj * (gj - dot) * s;
      }
      nngpu::Put(dx + j, req, v);
    }
  }
}

// Rows `inner` apart by at least a warp take the thread-per-row kernels.
bool ThreadPerRow(const nn::AxisSplit& sp) { return sp.inner >= 32; }

// Threads per row: fewer for short rows, so that small rows do not leave most threads idle.
int RowThreads(int64_t n) { return n <= 64 ? 64 : (n <= 128 ? 128 : nngpu::kReduceThreads); }

template <typename TI, typename TO>
void LaunchForward(const char* name, const TBlob& x, const TBlob& y, OpReq req, const nn::AxisSplit& sp,
                   RowLength lens, double inv_t, bool is_log, cudaStream_t s) {
  const int64_t rows = sp.outer * sp.inner;
  if (rows == 0 || sp.n == 0) return;
  if (ThreadPerRow(sp)) {
    SoftmaxForwardRowKernel<TI, TO><<<cuda::GridFor(rows), cuda::kBlockThreads, 0, s>>>(
        x.ptr<TI>(), y.ptr<TO>(), rows, sp.n, sp.inner, lens, static_cast<RowAcc<TI, TO>>(inv_t), is_log, req);
    cuda::CheckLaunch(name);
    return;
  }
  SoftmaxForwardKernel<TI, TO><<<nngpu::BlocksFor(rows), RowThreads(sp.n), 0, s>>>(
      x.ptr<TI>(), y.ptr<TO>(), rows, sp.n, sp.inner, lens, static_cast<RowAcc<TI, TO>>(inv_t), is_log, req);
  cuda::CheckLaunch(name);
}

template <typename TO, typename TI>
void LaunchBackward(const char* name, const TBlob& g, const TBlob& y, const TBlob& dx, OpReq req,
                    const nn::AxisSplit& sp, RowLength lens, double scale, bool is_log, cudaStream_t s) {
  const int64_t rows = sp.outer * sp.inner;
  if (rows == 0 || sp.n == 0) return;
  if (ThreadPerRow(sp)) {
    SoftmaxBackwardRowKernel<TO, TI><<<cuda::GridFor(rows), cuda::kBlockThreads, 0, s>>>(
        g.ptr<TO>(), y.ptr<TO>(), dx.ptr<TI>(), rows, sp.n, sp.inner, lens, static_cast<RowAcc<TI, TO>>(scale),
        is_log, req);
    cuda::CheckLaunch(name);
    return;
  }
  SoftmaxBackwardKernel<TO, TI><<<nngpu::BlocksFor(rows), RowThreads(sp.n), 0, s>>>(
      g.ptr<TO>(), y.ptr<TO>(), dx.ptr<TI>(), rows, sp.n, sp.inner, lens, static_cast<RowAcc<TI, TO>>(scale), is_log,
      req);
  cuda::CheckLaunch(name);
}

// 1/T, negated for softmin (the shape inference has refused a zero or infinite T).
double Scale(const NodeAttrs& attrs, const SoftmaxParam& p) {
  double t = p.temperature.value_or(1.0);
  return KindOf(attrs) == Kind::kSoftmin ? -1.0 / t : 1.0 / t;
}

void SoftmaxComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SoftmaxParam>();
  const char* name = attrs.op->name.c_str();
  int axis = p.axis < 0 ? p.axis + in[0].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[0].shape, axis);
  RowLength lens = LengthOf(attrs, p.use_length ? &in[1] : nullptr);
  bool is_log = KindOf(attrs) == Kind::kLogSoftmax;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, TI, name, {
    WEFT_GPU_FLOAT_SWITCH(out[0].dtype, TO, name, {
      LaunchForward<TI, TO>(name, in[0], out[0], req[0], sp, lens, Scale(attrs, p), is_log, s);
    });
  });
}

// Inputs: out_grad, output [, length] [, data]; outputs: d data [, d length].
void SoftmaxBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<SoftmaxParam>();
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  // The lengths are integers in effect: their gradient is zero.
  if (out.size() > 1 && (req[1] == OpReq::kWriteTo || req[1] == OpReq::kWriteInplace) && out[1].Bytes() > 0)
    WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaMemsetAsync(out[1].dptr, 0, out[1].Bytes(), s));
  if (req[0] == OpReq::kNullOp) return;
  int axis = p.axis < 0 ? p.axis + in[1].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[1].shape, axis);
  RowLength lens = LengthOf(attrs, p.use_length ? &in[2] : nullptr);
  bool is_log = KindOf(attrs) == Kind::kLogSoftmax;
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, TO, name, {
    WEFT_GPU_FLOAT_SWITCH(out[0].dtype, TI, name, {
      LaunchBackward<TO, TI>(name, in[0], in[1], out[0], req[0], sp, lens, Scale(attrs, p), is_log, s);
    });
  });
}

// SoftmaxActivation: mode instance is a softmax over all axes but the first, mode channel
// one over axis 1.
nn::AxisSplit ActivationSplit(const NodeAttrs& attrs, const Shape& s) {
  if (attrs.Params<SoftmaxActivationParam>().mode == "channel") return nn::SplitAt(s, 1);
  nn::AxisSplit sp;
  sp.outer = s.ndim() > 0 ? s[0] : 1;
  sp.n = sp.outer > 0 ? s.Size() / sp.outer : 0;
  return sp;
}

void SoftmaxActivationComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  nn::AxisSplit sp = ActivationSplit(attrs, in[0].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, T, name, {
    LaunchForward<T, T>(name, in[0], out[0], req[0], sp, RowLength(), 1.0, false, s);
  });
}

void SoftmaxActivationBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  nn::AxisSplit sp = ActivationSplit(attrs, in[1].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, T, name, {
    LaunchBackward<T, T>(name, in[0], in[1], out[0], req[0], sp, RowLength(), 1.0, false, s);
  });
}

}  // namespace

WEFT_REGISTER_OP(softmax).SetAttr<FCompute>("FCompute<gpu>", SoftmaxComputeGPU);
WEFT_REGISTER_OP(log_softmax).SetAttr<FCompute>("FCompute<gpu>", SoftmaxComputeGPU);
WEFT_REGISTER_OP(softmin).SetAttr<FCompute>("FCompute<gpu>", SoftmaxComputeGPU);
WEFT_REGISTER_OP(_backward_softmax).SetAttr<FCompute>("FCompute<gpu>", SoftmaxBackwardComputeGPU);
WEFT_REGISTER_OP(_backward_log_softmax).SetAttr<FCompute>("FCompute<gpu>", SoftmaxBackwardComputeGPU);
WEFT_REGISTER_OP(_backward_softmin).SetAttr<FCompute>("FCompute<gpu>", SoftmaxBackwardComputeGPU);
WEFT_REGISTER_OP(SoftmaxActivation).SetAttr<FCompute>("FCompute<gpu>", SoftmaxActivationComputeGPU);
WEFT_REGISTER_OP(_backward_SoftmaxActivation).SetAttr<FCompute>("FCompute<gpu>", SoftmaxActivationBackwardComputeGPU);

}  // namespace op
}  // namespace weft

// GPU versions of norm and _backward_norm, with the CPU's reducers and accumulation
// (double for floating types, int64 for integers; the accumulated value converted once
// to out_dtype) and its gradient rule, evaluated in double as on the CPU:
// d|x|_1/dx = g * sign(x), d|x|_2/dx = g * x / |x|_2 (0 where the norm is 0).
#include "core/op/elemwise/broadcast_index.h"
#include "core/op/reduce/norm.h"
#include "core/op/reduce/reduce_axes.h"
#include "core/op/reduce/reduce_kernels.cuh"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

std::vector<bool> NormFlags(const NodeAttrs& attrs, const Shape& in) {
  return ReduceFlags(attrs, in, attrs.Params<NormParam>().axis, false);
}

void NormComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  std::vector<bool> flags = NormFlags(attrs, in[0].shape);
  const bool l1 = attrs.Params<NormParam>().ord == 1;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_TYPE_SWITCH(out[0].dtype, O, name, {
      if (l1) cuda::Reduce<Norm1Reducer, T, O>(in[0], flags, out[0], req[0], s, name);
      else cuda::Reduce<Norm2Reducer, T, O>(in[0], flags, out[0], req[0], s, name);
    });
  });
}

// dst[i] = src[i] as double.
template <typename T>
struct ToDoubleFn {
  const T* src;
  double* dst;
  __device__ void operator()(int64_t i) const {
    dst[i] = static_cast<double>(static_cast<cuda::ComputeT<T>>(src[i]));
  }
};

void ToDouble(const TBlob& b, double* dst, cudaStream_t s, const char* name) {
  WEFT_GPU_TYPE_SWITCH(b.dtype, T, name, { cuda::ForEach(b.Size(), s, ToDoubleFn<T>{b.ptr<T>(), dst}, name); });
}

template <typename T>
struct NormGradFn {
  cuda::BroadcastIndex to_output;  // input element -> its output element (lhs offset)
  const double* g;
  const double* y;
  const T* x;
  T* dx;
  bool l1;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    int64_t j, unused;
    to_output.Offsets(i, &j, &unused);
    const double xi = static_cast<double>(static_cast<cuda::ComputeT<T>>(x[i]));
    double v;
    if (l1) v = g[j] * (xi > 0 ? 1.0 : (xi < 0 ? -1.0 : 0.0));
    else v = y[j] == 0 ? 0.0 : g[j] * xi / y[j];
    cuda::Store(dx, i, v, req);
  }
};

// Inputs: ograd, data, out (the reduced shape for ograd and out).
void NormBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const TBlob& data = in[1];
  if (req[0] == OpReq::kNullOp || data.Size() == 0) return;
  const char* name = attrs.op->name.c_str();
  std::vector<bool> flags = NormFlags(attrs, data.shape);
  Shape keep = ReducedShape(data.shape, flags, true);
  cuda::BroadcastIndex to_output = cuda::MakeBroadcastIndex(keep, data.shape, data.shape, name);
  const bool l1 = attrs.Params<NormParam>().ord == 1;
  const int64_t m = in[0].Size();
  WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].temp != nullptr, kInternal, "Operator '", attrs.op->name,
             "': expected a temporary-space resource, got none (FResourceRequest not honoured)");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  // The output gradient and the norms in double, as the CPU reads them.
  double* g = static_cast<double*>(ctx.requested[0].temp->Get(sizeof(double) * static_cast<size_t>(2 * m)));
  double* y = g + m;
  ToDouble(in[0], g, s, name);
  ToDouble(in[2], y, s, name);
  WEFT_GPU_TYPE_SWITCH(data.dtype, T, name, {
    cuda::ForEach(data.Size(), s, NormGradFn<T>{to_output, g, y, data.ptr<T>(), out[0].ptr<T>(), l1, req[0]}, name);
  });
}

}  // namespace

WEFT_REGISTER_OP(norm).SetAttr<FCompute>("FCompute<gpu>", NormComputeGPU);
WEFT_REGISTER_OP(_backward_norm).SetAttr<FCompute>("FCompute<gpu>", NormBackwardGPU);

}  // namespace op
}  // namespace weft

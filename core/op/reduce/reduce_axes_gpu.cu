// GPU versions of the axis reductions (sum, mean, prod, nansum, nanprod, max, min) and of
// their `_backward_*` operators, with the CPU versions' reducers and gradient rules.
#include "core/op/elemwise/broadcast_index.h"
#include "core/op/reduce/reduce_kernels.cuh"
#include "core/op/reduce/reduce_axes.h"

namespace weft {
namespace op {
namespace {

template <typename R>
void ReduceAxesComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  std::vector<bool> flags = ReduceFlags(attrs, in[0].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    cuda::Reduce<R, T>(in[0], flags, out[0], req[0], cuda::StreamOf(ctx.run_ctx.stream), name);
  });
}

// What each gradient does with an input element x_i of output y_j (as on the CPU).
enum class GradKind { kSum, kMean, kProd, kNanSum, kNanProd, kMaxMin };

template <GradKind K, typename T>
struct ReduceGradKernel {
  cuda::BroadcastIndex to_output;  // input element -> its output element (lhs offset)
  cuda::AxisSet kept, reduced;     // for the product of the others at a zero
  const T* g;
  const T* x;
  const T* y;  // the forward output, for prod, nanprod, max and min
  T* grad;
  int64_t count;
  OpReq req;

  __device__ void operator()(int64_t i) const {
    using A = typename ReduceAcc<T>::type;
    int64_t j, unused;
    to_output.Offsets(i, &j, &unused);
    A gj = static_cast<A>(g[j]);
    A v;
    if constexpr (K == GradKind::kSum) {
      v = gj;
    } else if constexpr (K == GradKind::kMean) {
      v = gj / static_cast<A>(count);
    } else if constexpr (K == GradKind::kNanSum) {
      v = IsNaN(static_cast<A>(x[i])) ? A(0) : gj;
    } else if constexpr (K == GradKind::kMaxMin) {
      v = static_cast<A>(x[i]) == static_cast<A>(y[j]) ? gj : A(0);
    } else {
      constexpr bool kSkipNaN = K == GradKind::kNanProd;
      A xi = static_cast<A>(x[i]);
      if (kSkipNaN && IsNaN(xi)) {
        v = A(0);
      } else if (xi != A(0)) {
        v = gj * (static_cast<A>(y[j]) / xi);
      } else {
        // At a zero, out / x does not work: multiply the group's other elements.
        int64_t base = kept.Offset(j);
        A p = A(1);
        for (int64_t r = 0; r < count; ++r) {
          int64_t off = base + reduced.Offset(r);
          A xr = static_cast<A>(x[off]);
          if (off == i || (kSkipNaN && IsNaN(xr))) continue;
          p *= xr;
        }
        v = gj * p;
      }
    }
    cuda::Store(grad, i, v, req);
  }
};

// Inputs: ograd (the reduced shape), data, and for some kinds the forward output.
template <GradKind K>
void ReduceAxesBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const char* name = attrs.op->name.c_str();
  const TBlob& ograd = in[0];
  const TBlob& data = in[1];
  if (req[0] == OpReq::kNullOp || data.Size() == 0) return;
  std::vector<bool> flags = ReduceFlags(attrs, data.shape);
  Shape keep = ReducedShape(data.shape, flags, true);
  ReduceAxisSet kept_set, reduced_set;
  SplitReduceAxes(data.shape, flags, &kept_set, &reduced_set);
  cuda::BroadcastIndex to_output = cuda::MakeBroadcastIndex(keep, data.shape, data.shape, name);
  cuda::AxisSet kept = cuda::ToAxisSet(kept_set, data.shape, name);
  cuda::AxisSet reduced = cuda::ToAxisSet(reduced_set, data.shape, name);
  int64_t count = ograd.Size() > 0 ? data.Size() / ograd.Size() : 0;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_TYPE_SWITCH(data.dtype, T, name, {
    const T* y = in.size() > 2 ? in[2].ptr<T>() : nullptr;
    cuda::ForEach(data.Size(), cuda::StreamOf(ctx.run_ctx.stream),
                  ReduceGradKernel<K, T>{to_output, kept, reduced, ograd.ptr<T>(), data.ptr<T>(), y,
                                         out[0].ptr<T>(), count, req[0]},
                  name);
  });
}

}  // namespace

WEFT_REGISTER_OP(sum).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<SumReducer>);
WEFT_REGISTER_OP(mean).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<MeanReducer>);
WEFT_REGISTER_OP(prod).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<ProdReducer>);
WEFT_REGISTER_OP(nansum).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<NanSumReducer>);
WEFT_REGISTER_OP(nanprod).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<NanProdReducer>);
WEFT_REGISTER_OP(max).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<MaxReducer>);
WEFT_REGISTER_OP(min).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesComputeGPU<MinReducer>);

WEFT_REGISTER_OP(_backward_sum).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kSum>);
WEFT_REGISTER_OP(_backward_mean).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kMean>);
WEFT_REGISTER_OP(_backward_nansum).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kNanSum>);
WEFT_REGISTER_OP(_backward_prod).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kProd>);
WEFT_REGISTER_OP(_backward_nanprod).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kNanProd>);
WEFT_REGISTER_OP(_backward_max).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kMaxMin>);
WEFT_REGISTER_OP(_backward_min).SetAttr<FCompute>("FCompute<gpu>", ReduceAxesBackwardGPU<GradKind::kMaxMin>);

}  // namespace op
}  // namespace weft

// GPU versions of the broadcast operators (broadcast.cc), broadcast comparisons (logic.cc)
// and `_reduce_sum_to` (reduce_sum_to.cc), which returns their gradients to the inputs'
// shapes.
#include "core/op/reduce/reduce_kernels.cuh"
#include "core/op/elemwise/compute_gpu.cuh"
#include "core/op/elemwise/functors.h"

namespace weft {
namespace op {
namespace {

// Shape inference has checked that `like` broadcasts to `data`: every axis where their
// (right-aligned) dims differ is summed.
void ReduceSumToComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const TBlob& data = in[0];
  const Shape& like = in[1].shape;
  int nd = data.ndim(), nl = like.ndim();
  std::vector<bool> flags(nd);
  for (int d = 0; d < nd; ++d) flags[d] = (d - (nd - nl) >= 0 ? like[d - (nd - nl)] : 1) != data.shape[d];
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(data.dtype, T, name, {
    if (data.Size() == out[0].Size())
      cuda::UnaryMap<identity_op, T>(data.ptr<T>(), out[0].ptr<T>(), data.Size(), req[0], s, name);
    else
      cuda::Reduce<SumReducer, T>(data, flags, out[0], req[0], s, name);
  });
}

}  // namespace

WEFT_GPU_BROADCAST_OP(broadcast_add, add_op);
WEFT_GPU_BROADCAST_OP(broadcast_sub, sub_op);
WEFT_GPU_BROADCAST_OP(broadcast_mul, mul_op);
WEFT_GPU_BROADCAST_OP(broadcast_div, div_op);
WEFT_GPU_BROADCAST_OP(broadcast_mod, mod_op);
WEFT_GPU_BROADCAST_OP(broadcast_power, power_op);
WEFT_GPU_BROADCAST_OP(broadcast_maximum, maximum_op);
WEFT_GPU_BROADCAST_OP(broadcast_minimum, minimum_op);
WEFT_GPU_BROADCAST_OP(broadcast_hypot, hypot_op);

WEFT_GPU_BROADCAST_OP(broadcast_equal, equal_op);
WEFT_GPU_BROADCAST_OP(broadcast_not_equal, not_equal_op);
WEFT_GPU_BROADCAST_OP(broadcast_greater, greater_op);
WEFT_GPU_BROADCAST_OP(broadcast_greater_equal, greater_equal_op);
WEFT_GPU_BROADCAST_OP(broadcast_lesser, lesser_op);
WEFT_GPU_BROADCAST_OP(broadcast_lesser_equal, lesser_equal_op);
WEFT_GPU_BROADCAST_OP(broadcast_logical_and, logical_and_op);
WEFT_GPU_BROADCAST_OP(broadcast_logical_or, logical_or_op);
WEFT_GPU_BROADCAST_OP(broadcast_logical_xor, logical_xor_op);

WEFT_REGISTER_OP(_reduce_sum_to).SetAttr<FCompute>("FCompute<gpu>", ReduceSumToComputeGPU);

}  // namespace op
}  // namespace weft

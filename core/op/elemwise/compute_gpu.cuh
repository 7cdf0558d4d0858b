// GPU FCompute functions of the elementwise families, the counterparts of compute.h: the
// same functors, the same scalar conversion, dtypes dispatched with WEFT_GPU_TYPE_SWITCH.
// The *_gpu.cu files beside the CPU registrations add them to the operators:
//
//   WEFT_GPU_UNARY_OP(exp, exp_op);
#pragma once

#include <vector>

#include "core/op/elemwise/broadcast_kernels.cuh"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/elemwise/math.h"
#include "core/op/elemwise/scalar_param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

template <typename OP>
void UnaryComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    cuda::UnaryMap<OP, T>(in[0].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0], s, name);
  });
}

// Two inputs of one shape.
template <typename OP>
void BinaryComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    cuda::BinaryMap<OP, T>(in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), out[0].Size(), req[0], s, name);
  });
}

// out = OP(x, scalar); the scalar is converted to the compute type as on the CPU.
template <typename OP>
void ScalarComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  double scalar = attrs.Params<ScalarParam>().scalar;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    cuda::ScalarRightMap<OP, T>(in[0].ptr<T>(), SaturateCast<cuda::ComputeT<T>>(scalar), out[0].ptr<T>(),
                                out[0].Size(), req[0], s, name);
  });
}

template <typename OP>
void BroadcastComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  int64_t n = out[0].Size();
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    // Equal sizes mean equal layouts: no index arithmetic needed.
    if (in[0].Size() == n && in[1].Size() == n)
      cuda::BinaryMap<OP, T>(in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), n, req[0], s, name);
    else
      cuda::BroadcastMap<OP, T>(in[0], in[1], out[0], req[0], s, name);
  });
}

}  // namespace op
}  // namespace weft

// Adds the GPU compute function to an operator registered elsewhere (with the CPU one).
#define WEFT_GPU_UNARY_OP(name, OP) \
  WEFT_REGISTER_OP(name).SetAttr<::weft::FCompute>("FCompute<gpu>", ::weft::op::UnaryComputeGPU<OP>)
#define WEFT_GPU_BINARY_OP(name, OP) \
  WEFT_REGISTER_OP(name).SetAttr<::weft::FCompute>("FCompute<gpu>", ::weft::op::BinaryComputeGPU<OP>)
#define WEFT_GPU_SCALAR_OP(name, OP) \
  WEFT_REGISTER_OP(name).SetAttr<::weft::FCompute>("FCompute<gpu>", ::weft::op::ScalarComputeGPU<OP>)
#define WEFT_GPU_BROADCAST_OP(name, OP) \
  WEFT_REGISTER_OP(name).SetAttr<::weft::FCompute>("FCompute<gpu>", ::weft::op::BroadcastComputeGPU<OP>)

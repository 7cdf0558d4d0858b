// Broadcast binary operators on the GPU: out = OP(lhs, rhs) with numpy broadcasting, each
// output element finding its inputs through a BroadcastIndex. Functors are the elementwise
// ones (see elemwise_kernels.cuh); core/op/elemwise/compute_gpu.cuh registers them.
#pragma once

#include "core/op/elemwise/broadcast_index.h"
#include "core/op/elemwise/elemwise_kernels.cuh"

namespace weft {
namespace cuda {

template <typename OP, typename T>
struct BroadcastKernel {
  BroadcastIndex idx;
  const T* lhs;
  const T* rhs;
  T* out;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    int64_t lo, ro;
    idx.Offsets(i, &lo, &ro);
    Store(out, i, OP::Map(static_cast<ComputeT<T>>(lhs[lo]), static_cast<ComputeT<T>>(rhs[ro])), req);
  }
};

// out = OP(lhs, rhs) with numpy broadcasting; all three have dtype T.
template <typename OP, typename T>
void BroadcastMap(const TBlob& lhs, const TBlob& rhs, const TBlob& out, OpReq req, cudaStream_t stream,
                  const char* what) {
  if (req == OpReq::kNullOp || out.Size() == 0) return;
  BroadcastIndex idx = MakeBroadcastIndex(lhs.shape, rhs.shape, out.shape, what);
  ForEach(out.Size(), stream, BroadcastKernel<OP, T>{idx, lhs.ptr<T>(), rhs.ptr<T>(), out.ptr<T>(), req}, what);
}

}  // namespace cuda
}  // namespace weft

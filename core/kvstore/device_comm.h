// The GPU side of the "device" store (builds with WEFT_USE_CUDA): the sum of several arrays
// on one GPU, and with NCCL (WEFT_USE_NCCL) the reduce and the broadcast over one array per
// GPU as grouped collectives.
#pragma once

#include <vector>

#include "core/ndarray/ndarray.h"

namespace weft {
namespace kvstore {

#if WEFT_USE_CUDA
// out = sum of srcs (n elements of dtype each, on the current GPU), queued on `stream` (a
// cudaStream_t; null: the legacy default stream).
void LaunchSum(const std::vector<const void*>& srcs, void* out, int64_t n, DType dtype, void* stream);
// out = sum of srcs, every array on out's GPU, as one engine operation on that GPU.
void SumOnGPU(const std::vector<NDArray>& srcs, const NDArray& out, int priority);
// The sum of vals (any devices) on out's GPU: values elsewhere are copied into *copies
// there (kept by the caller and grown as needed), then summed into out. Returns out, or
// the one value on that GPU when there is nothing to sum.
NDArray ReduceOnGPU(const std::vector<NDArray>& vals, const NDArray& out, std::vector<NDArray>* copies,
                    int priority);
#endif

#if WEFT_USE_NCCL
// True when NCCL moves this dtype (it has no bool and no bfloat16 before 2.10).
bool NcclSupports(DType dtype);
// dst = sum of vals, one value per distinct GPU, dst on one of those GPUs: one
// ncclReduce per GPU in a group, as one engine operation.
void NcclReduce(const std::vector<NDArray>& vals, const NDArray& dst, int priority);
// Every out (one per distinct GPU, src's GPU among them) = src: one ncclBroadcast per GPU
// in a group, as one engine operation.
void NcclBroadcast(const NDArray& src, const std::vector<NDArray>& outs, int priority);
#endif

}  // namespace kvstore
}  // namespace weft

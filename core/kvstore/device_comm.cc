// The GPU sums of the "device" store as engine operations (builds with WEFT_USE_CUDA); the
// kernel is in device_comm.cu.
#if WEFT_USE_CUDA

#include "core/kvstore/device_comm.h"

#include <algorithm>

#include "core/base/cuda_utils.h"

namespace weft {
namespace kvstore {

void SumOnGPU(const std::vector<NDArray>& srcs, const NDArray& out, int priority) {
  WEFT_CHECK(out.ctx().is_gpu(), kInternal, "kvstore: the GPU sum needs a GPU output, got ", out.ctx().ToString());
  std::vector<engine::VarHandle> reads;
  for (const NDArray& s : srcs) {
    WEFT_CHECK(s.ctx() == out.ctx() && !s.SameChunk(out), kInternal, "kvstore: the GPU sum reads other arrays on ",
               out.ctx().ToString(), ", got one on ", s.ctx().ToString());
    reads.push_back(s.var());
  }
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  engine::Engine::Get()->PushSync(
      [srcs, out](engine::RunContext rctx) {
        TBlob o = out.data();
        std::vector<const void*> ptrs;
        for (const NDArray& s : srcs) ptrs.push_back(s.data().dptr);
        cuda::DeviceGuard guard(o.ctx.dev_id);
        LaunchSum(ptrs, o.dptr, o.Size(), o.dtype, rctx.stream);
        // On a worker's stream the engine records the completion event after the sum; on
        // the legacy stream (the naive engine) the sum must be over when this returns.
        if (rctx.stream == nullptr) WEFT_CUDA_CALL_ON(o.ctx, cudaStreamSynchronize(cuda::StreamOf(rctx.stream)));
      },
      out.ctx(), reads, {out.var()}, engine::FnProperty::kNormal, priority, "KVStoreDeviceReduce");
}

NDArray ReduceOnGPU(const std::vector<NDArray>& vals, const NDArray& out, std::vector<NDArray>* copies,
                    int priority) {
  const Context where = out.ctx();
  std::vector<NDArray> here;
  size_t used = 0;
  for (const NDArray& v : vals) {
    if (v.ctx() == where) {
      here.push_back(v);
      continue;
    }
    if (used == copies->size()) copies->emplace_back(out.shape(), where, out.dtype());
    CopyFromTo(v, (*copies)[used], priority);
    here.push_back((*copies)[used++]);
  }
  if (here.size() == 1) return here[0];
  SumOnGPU(here, out, priority);
  return out;
}

}  // namespace kvstore
}  // namespace weft

#endif  // WEFT_USE_CUDA

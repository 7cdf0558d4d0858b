// Copies with a GPU side: host to device, device to host, device to device (same device or
// peer). Bytes move with cudaMemcpyAsync on the run context's stream; a dtype change runs a
// cast kernel on the GPU, staging the unconverted bytes on the device when the other side is
// the host. On an engine worker's stream the copy only queues its work: the engine records
// the completion event after it (threaded_engine.cc). Without one (the naive engine, code
// outside the engine) it runs on the legacy stream and waits for it before returning.
#include <memory>

#include "core/base/cuda_utils.h"
#include "core/ndarray/copy.h"
#include "core/storage/storage.h"

namespace weft {
namespace {

template <typename SrcT, typename DstT>
__global__ void CastKernel(const SrcT* __restrict__ src, DstT* __restrict__ dst, int64_t n) {
  // The same two-step conversion as the host copy, so both give identical values.
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    dst[i] = static_cast<DstT>(static_cast<typename AccType<SrcT>::type>(src[i]));
}

// Converts n elements between two buffers on the current device.
void CastOnDevice(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, cudaStream_t stream) {
  WEFT_TYPE_SWITCH(src_type, SrcT, {
    WEFT_TYPE_SWITCH(dst_type, DstT, {
      CastKernel<SrcT, DstT><<<cuda::GridFor(n), cuda::kBlockThreads, 0, stream>>>(static_cast<const SrcT*>(src),
                                                                                   static_cast<DstT*>(dst), n);
    });
  });
  cuda::CheckLaunch("a dtype conversion");
}

// A pooled device buffer for staging. It waits for the stream before giving the block back,
// also when an error unwinds, so that no queued work still uses it.
class StagingBuffer {
 public:
  StagingBuffer(size_t bytes, Context ctx, cudaStream_t stream)
      : handle_(Storage::Get()->Alloc(bytes, ctx)), stream_(stream) {}
  ~StagingBuffer() {
    cudaStreamSynchronize(stream_);
    Storage::Get()->Free(handle_);
  }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  void* get() const { return handle_.dptr; }

 private:
  StorageHandle handle_;
  cudaStream_t stream_;
};

// Moves `bytes` bytes between any two places, peer copies included.
void MoveBytes(const void* src, Context src_ctx, void* dst, Context dst_ctx, size_t bytes, cudaStream_t stream,
               Context work_ctx) {
  if (src_ctx.is_gpu() && dst_ctx.is_gpu() && src_ctx.dev_id != dst_ctx.dev_id) {
    WEFT_CUDA_CALL_ON(work_ctx, cudaMemcpyPeerAsync(dst, dst_ctx.dev_id, src, src_ctx.dev_id, bytes, stream));
    return;
  }
  cudaMemcpyKind kind = !src_ctx.is_gpu() ? cudaMemcpyHostToDevice
                        : dst_ctx.is_gpu() ? cudaMemcpyDeviceToDevice
                                           : cudaMemcpyDeviceToHost;
  WEFT_CUDA_CALL_ON(work_ctx, cudaMemcpyAsync(dst, src, bytes, kind, stream));
}

}  // namespace

void CopyBlobCUDA(const TBlob& from, const TBlob& to, engine::RunContext rctx) {
  WEFT_CHECK(from.Size() == to.Size(), kShape, "CopyBlobCUDA: expected equal sizes, got ", from.shape.ToString(),
             " and ", to.shape.ToString());
  int64_t n = from.Size();
  if (n == 0) return;
  if (from.ctx.is_host() && to.ctx.is_host()) {
    CopyBlobHost(from, to);
    return;
  }
  // Work runs on the receiving GPU, or on the sending one for a copy to the host; the
  // engine pushes such copies on that device, so a stream it hands over belongs to it.
  Context work_ctx = to.ctx.is_gpu() ? to.ctx : from.ctx;
  WEFT_CHECK(rctx.stream == nullptr || rctx.ctx == work_ctx, kInternal, "CopyBlobCUDA: copy from ",
             from.ctx.ToString(), " to ", to.ctx.ToString(), " was given a stream of ", rctx.ctx.ToString());
  cuda::DeviceGuard guard(work_ctx.dev_id);
  cudaStream_t stream = cuda::StreamOf(rctx.stream);

  std::unique_ptr<StagingBuffer> staged;
  if (from.dtype == to.dtype) {
    MoveBytes(from.dptr, from.ctx, to.dptr, to.ctx, from.Bytes(), stream, work_ctx);
  } else if (from.ctx == to.ctx) {
    CastOnDevice(from.dptr, from.dtype, to.dptr, to.dtype, n, stream);
  } else if (to.ctx.is_gpu()) {
    // From the host or another GPU: bring the source bytes over as they are, cast here.
    staged = std::make_unique<StagingBuffer>(from.Bytes(), to.ctx, stream);
    MoveBytes(from.dptr, from.ctx, staged->get(), to.ctx, from.Bytes(), stream, work_ctx);
    CastOnDevice(staged->get(), from.dtype, to.dptr, to.dtype, n, stream);
  } else {
    // To the host: cast on the GPU into the destination dtype, then bring it over.
    staged = std::make_unique<StagingBuffer>(to.Bytes(), from.ctx, stream);
    CastOnDevice(from.dptr, from.dtype, staged->get(), to.dtype, n, stream);
    MoveBytes(staged->get(), from.ctx, to.dptr, to.ctx, to.Bytes(), stream, work_ctx);
  }
  if (rctx.stream == nullptr) WEFT_CUDA_CALL_ON(work_ctx, cudaStreamSynchronize(stream));
}

}  // namespace weft

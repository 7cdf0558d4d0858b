// The CUDA raw allocators: cudaMalloc on the context's device for gpu(i) and page-locked
// host memory for cpu_pinned, so that copies to and from GPUs can run asynchronously.
#include <cstdlib>
#include <memory>

#include "core/base/cuda_utils.h"
#include "core/storage/device_memory.h"

namespace weft {
namespace {

// MXNET_GPU_MEM_POOL_RESERVE: the percentage of a GPU's memory the pool leaves to others
// (cuDNN, NCCL, other processes) before growing further (default 5, as MXNet).
double ReservePercent() {
  const char* s = std::getenv("MXNET_GPU_MEM_POOL_RESERVE");
  if (s == nullptr || *s == '\0') return 5.0;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  WEFT_CHECK(*end == '\0' && v >= 0 && v <= 100, kValue,
             "MXNET_GPU_MEM_POOL_RESERVE: expected a percentage in [0, 100], got '", s, "'");
  return v;
}

}  // namespace

std::unique_ptr<BlockPool> MakeCudaPool(Context ctx) {
  int n = NumGPUs();
  if (n == 0)
    Throw(ErrorKind::kUnsupported, "cannot allocate on ", ctx.ToString(), ": no GPU is visible to the CUDA runtime");
  WEFT_CHECK(ctx.dev_id >= 0 && ctx.dev_id < n, kValue, "cannot allocate on ", ctx.ToString(), ": ", n,
             n == 1 ? " GPU is" : " GPUs are", " visible (gpu(0) to gpu(", n - 1, "))");
  const double reserve = ReservePercent() / 100.0;
  // The pool asks again, after releasing its cache, when an allocation returns null: a
  // request that would eat into the reserve is refused once so that the cache goes back
  // to the driver first, and then allowed (a real shortage still fails in cudaMalloc).
  auto refused = std::make_shared<bool>(false);
  auto alloc = [ctx, reserve, refused](size_t bytes) -> void* {
    cuda::DeviceGuard guard(ctx.dev_id);
    if (reserve > 0 && !*refused) {
      size_t free_b = 0, total_b = 0;
      cuda::Check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", &ctx);
      if (static_cast<double>(free_b) - static_cast<double>(bytes) < reserve * static_cast<double>(total_b)) {
        *refused = true;
        return nullptr;
      }
    }
    *refused = false;
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is recoverable: the pool frees its cache and retries
      return nullptr;
    }
    cuda::Check(err, "cudaMalloc", &ctx);
    return p;
  };
  auto release = [ctx](void* p, size_t) {
    cuda::DeviceGuard guard(ctx.dev_id);
    cuda::Check(cudaFree(p), "cudaFree", &ctx);
  };
  return std::make_unique<BlockPool>(alloc, release);
}

std::unique_ptr<BlockPool> MakePinnedPool(Context ctx) {
  // Page-locking needs a driver; without a GPU, pinned memory is ordinary memory.
  if (NumGPUs() == 0) return std::make_unique<BlockPool>(AlignedHostAlloc, AlignedHostFree);
  auto alloc = [ctx](size_t bytes) -> void* {
    void* p = nullptr;
    // Portable: pinned for every device, not only the current one.
    cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    cuda::Check(err, "cudaHostAlloc", &ctx);
    return p;
  };
  auto release = [ctx](void* p, size_t) { cuda::Check(cudaFreeHost(p), "cudaFreeHost", &ctx); };
  return std::make_unique<BlockPool>(alloc, release);
}

}  // namespace weft

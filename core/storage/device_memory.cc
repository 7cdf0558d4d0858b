#include "core/storage/device_memory.h"

#include <cstdlib>

#include "core/base/error.h"
#include "core/storage/shared_memory.h"
#include "core/storage/storage.h"

namespace weft {

// Defined in cuda_memory.cu in builds with CUDA, below otherwise.
std::unique_ptr<BlockPool> MakeCudaPool(Context ctx);
std::unique_ptr<BlockPool> MakePinnedPool(Context ctx);

void* AlignedHostAlloc(size_t bytes) { return std::aligned_alloc(kStorageAlignment, bytes); }
void AlignedHostFree(void* ptr, size_t) { std::free(ptr); }

std::unique_ptr<BlockPool> MakeDevicePool(Context ctx) {
  switch (ctx.dev_type) {
    case DeviceType::kCPU: return std::make_unique<BlockPool>(AlignedHostAlloc, AlignedHostFree);
    case DeviceType::kCPUPinned: return MakePinnedPool(ctx);
    case DeviceType::kGPU: return MakeCudaPool(ctx);
    case DeviceType::kCPUShared: return std::make_unique<BlockPool>(shm::AllocSegment, shm::FreeSegment);
  }
  Throw(ErrorKind::kValue, "unknown device type ", static_cast<int>(ctx.dev_type));
}

#ifndef WEFT_USE_CUDA
std::unique_ptr<BlockPool> MakeCudaPool(Context ctx) {
  Throw(ErrorKind::kUnsupported, "cannot allocate on ", ctx.ToString(), ": this build of Weft has no CUDA support");
}
std::unique_ptr<BlockPool> MakePinnedPool(Context) {
  return std::make_unique<BlockPool>(AlignedHostAlloc, AlignedHostFree);
}
#endif

}  // namespace weft

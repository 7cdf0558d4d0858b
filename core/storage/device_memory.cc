#include "core/storage/device_memory.h"

#include <cstdlib>

#include "core/base/error.h"

namespace weft {

std::unique_ptr<BlockPool> MakeCudaPool(Context ctx);        // cuda_memory.cu / below
std::unique_ptr<BlockPool> MakePinnedPool(Context ctx);

namespace {
void* AlignedAlloc(size_t n) { return std::aligned_alloc(kStorageAlignment, n); }
void AlignedFree(void* p, size_t) { std::free(p); }
}  // namespace

std::unique_ptr<BlockPool> MakeDevicePool(Context ctx) {
  switch (ctx.dev_type) {
    case DeviceType::kCPU: return std::make_unique<BlockPool>(AlignedAlloc, AlignedFree);
    case DeviceType::kCPUPinned: return MakePinnedPool(ctx);
    case DeviceType::kGPU: return MakeCudaPool(ctx);
  }
  Throw(ErrorKind::kValue, "unknown device type ", static_cast<int>(ctx.dev_type));
}

#ifndef WEFT_USE_CUDA
std::unique_ptr<BlockPool> MakeCudaPool(Context ctx) {
  Throw(ErrorKind::kUnsupported, "cannot allocate on ", ctx.ToString(), ": this build of Weft has no CUDA support");
}
std::unique_ptr<BlockPool> MakePinnedPool(Context) {
  return std::make_unique<BlockPool>(AlignedAlloc, AlignedFree);
}
#endif

}  // namespace weft

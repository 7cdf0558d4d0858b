// The raw allocators behind each context's pool: aligned host memory for cpu, page-locked
// memory for cpu_pinned (plain aligned memory when no GPU runtime exists), cudaMalloc for
// gpu, and shared-memory segments for cpu_shared (shared_memory.h).
#pragma once

#include <memory>

#include "core/base/context.h"
#include "core/storage/cpu_pool.h"

namespace weft {

std::unique_ptr<BlockPool> MakeDevicePool(Context ctx);

// Host memory aligned to kStorageAlignment; nullptr when memory is exhausted. `bytes` must be
// a multiple of the alignment (every bucket size is).
void* AlignedHostAlloc(size_t bytes);
void AlignedHostFree(void* ptr, size_t bytes);

}  // namespace weft

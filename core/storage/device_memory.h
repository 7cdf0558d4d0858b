// The raw allocators behind each context's pool: aligned host memory for cpu, page-locked
// memory for cpu_pinned (plain aligned memory when no GPU runtime exists) and cudaMalloc
// for gpu.
#pragma once

#include <memory>

#include "core/storage/cpu_pool.h"

namespace weft {

std::unique_ptr<BlockPool> MakeDevicePool(Context ctx);

}  // namespace weft

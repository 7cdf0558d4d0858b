// Memory for arrays, per context. CPU memory comes from a pool of 64-byte aligned blocks in
// size buckets that are reused without going back to the OS in steady state; pinned host
// memory and GPU memory are pooled the same way. Statistics are kept per context.
//
// WEFT_STORAGE_POOL=0 in the environment turns pooling off: every Free goes back to the OS or
// driver at once, so that memory checkers (ASan, compute-sanitizer) see each block's life.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/base/context.h"

namespace weft {

struct StorageHandle {
  void* dptr = nullptr;
  size_t size = 0;  // bytes requested
  Context ctx;
};

struct StorageStats {
  int64_t bytes_in_use = 0;  // handed out and not yet freed
  int64_t peak_bytes = 0;    // high-water mark of bytes_in_use
  int64_t bytes_pooled = 0;  // held by the pool for reuse
  int64_t num_allocs = 0;    // calls to Alloc
  int64_t num_os_allocs = 0; // calls that had to go to the OS or driver
};

class Storage {
 public:
  static Storage* Get();
  virtual ~Storage() = default;

  // A size of 0 gives a handle with a null dptr. Throws kRuntime when memory runs out.
  virtual StorageHandle Alloc(size_t size, Context ctx) = 0;
  // Returns the block to its pool; `handle` must be the one Alloc returned (its size picks
  // the bucket). A null dptr is ignored.
  virtual void Free(StorageHandle handle) = 0;
  // Like Free, but the block goes back to the OS or driver instead of the pool: for blocks
  // replaced by a larger one (a growing workspace), which the pool would keep for nothing.
  virtual void FreeToSystem(StorageHandle handle) = 0;
  // Returns every pooled but unused block to the OS or driver.
  virtual void ReleaseAll(Context ctx) = 0;
  virtual StorageStats Stats(Context ctx) const = 0;
};

constexpr size_t kStorageAlignment = 64;

}  // namespace weft

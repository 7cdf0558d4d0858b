// A size-bucketed pool of aligned blocks. The same structure serves plain CPU memory,
// pinned host memory and GPU memory; only the raw allocate/free functions differ.
#pragma once

#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/storage/storage.h"

namespace weft {

class BlockPool {
 public:
  using RawAlloc = std::function<void*(size_t)>;
  using RawFree = std::function<void(void*, size_t)>;

  BlockPool(RawAlloc alloc, RawFree free) : raw_alloc_(std::move(alloc)), raw_free_(std::move(free)) {}
  ~BlockPool();

  // Returns a block of at least `size` bytes; `*os_alloc` tells whether the pool was empty.
  void* Alloc(size_t size, size_t* bucket, bool* os_alloc);
  void Free(void* ptr, size_t bucket);
  void ReleaseAll();
  size_t pooled_bytes() const { return pooled_bytes_; }

  // The bucket a request of `size` bytes lands in.
  static size_t BucketSize(size_t size);

 private:
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t pooled_bytes_ = 0;
};

}  // namespace weft

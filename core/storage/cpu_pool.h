// A size-bucketed pool of aligned blocks. The same structure serves plain CPU memory,
// pinned host memory and GPU memory; only the raw allocate/free functions differ.
//
// Buckets: requests up to 4 KiB round up to a power of two (64 B at least); larger ones to a
// quarter step between powers of two (5/8, 6/8, 7/8 or 8/8 of the next power), so no more
// than 1/5 of a block is wasted. A bucket has a small integer class, and free blocks sit in a
// vector per class: the hot path is an index and a push or pop, no hashing.
//
// Not thread-safe: Storage guards each pool with its context's mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace weft {

class BlockPool {
 public:
  // Returns nullptr when the device is out of memory (the pool then releases its cache and
  // tries once more); throws for any other failure.
  using RawAlloc = std::function<void*(size_t)>;
  using RawFree = std::function<void(void*, size_t)>;

  BlockPool(RawAlloc alloc, RawFree free) : raw_alloc_(std::move(alloc)), raw_free_(std::move(free)) {}
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of BucketSize(size) bytes, or nullptr when memory is exhausted; `*os_alloc`
  // tells whether the pool had to ask the OS or driver.
  void* Alloc(size_t size, bool* os_alloc);
  // Takes back a block obtained from Alloc(size). While the cache would then hold more than
  // its limit, the largest cached blocks go back to the OS or driver first (a block above the
  // limit goes back itself).
  void Free(void* ptr, size_t size);
  // Returns a block obtained from Alloc(size) to the OS or driver at once, skipping the
  // cache: for a block that nothing of its size will ask for again (a grown buffer's old one).
  void FreeToSystem(void* ptr, size_t size) { raw_free_(ptr, BucketSize(size)); }
  // Returns every cached block to the OS or driver.
  void ReleaseAll();
  size_t pooled_bytes() const { return pooled_bytes_; }
  // With pooling off every Free goes straight back to the OS or driver, which lets memory
  // checkers see each block's lifetime (WEFT_STORAGE_POOL=0).
  void set_pooling(bool on) { pooling_ = on; if (!on) ReleaseAll(); }
  bool pooling() const { return pooling_; }
  // The most bytes the cache may hold (default: no limit). Lowering it releases at once.
  void set_cache_limit(size_t bytes);
  size_t cache_limit() const { return cache_limit_; }

  // The bytes a request of `size` bytes really takes (0 for 0).
  static size_t BucketSize(size_t size);
  // The dense index of BucketSize(size), for size > 0.
  static size_t BucketClass(size_t size);

 private:
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  // Returns one cached block of the largest class that has any to the OS or driver.
  void ReleaseLargest();

  bool pooling_ = true;
  size_t cache_limit_ = SIZE_MAX;
  std::vector<std::vector<void*>> free_;  // by bucket class
  size_t pooled_bytes_ = 0;
};

}  // namespace weft

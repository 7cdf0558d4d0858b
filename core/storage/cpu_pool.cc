#include "core/storage/cpu_pool.h"

namespace weft {

BlockPool::~BlockPool() { ReleaseAll(); }

size_t BlockPool::BucketSize(size_t size) {
  // Small requests round up to a power of two (at least one cache-line multiple); large
  // ones to a 1/8 step of their power of two, so waste stays under 12.5 %.
  if (size <= kStorageAlignment) return kStorageAlignment;
  size_t p = kStorageAlignment;
  while (p < size) p <<= 1;
  if (p <= 4096) return p;
  size_t step = p / 8;
  return (size + step - 1) / step * step;
}

void* BlockPool::Alloc(size_t size, size_t* bucket, bool* os_alloc) {
  *bucket = BucketSize(size);
  auto it = free_.find(*bucket);
  if (it != free_.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    pooled_bytes_ -= *bucket;
    *os_alloc = false;
    return p;
  }
  *os_alloc = true;
  void* p = raw_alloc_(*bucket);
  if (p == nullptr) {
    // Give everything cached back and try once more before reporting failure.
    ReleaseAll();
    p = raw_alloc_(*bucket);
  }
  return p;
}

void BlockPool::Free(void* ptr, size_t bucket) {
  free_[bucket].push_back(ptr);
  pooled_bytes_ += bucket;
}

void BlockPool::ReleaseAll() {
  for (auto& kv : free_)
    for (void* p : kv.second) raw_free_(p, kv.first);
  free_.clear();
  pooled_bytes_ = 0;
}

}  // namespace weft

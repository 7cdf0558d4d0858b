#include "core/storage/cpu_pool.h"

#include "core/storage/storage.h"

namespace weft {
namespace {

constexpr int kLog2Align = 6;        // 64-byte blocks at least
constexpr int kLog2SmallMax = 12;    // powers of two up to 4 KiB
constexpr size_t kNumSmallClasses = kLog2SmallMax - kLog2Align + 1;
// Larger requests would overflow the power-of-two rounding; nothing that big exists.
constexpr size_t kMaxRequest = size_t{1} << 62;

int Log2Ceil(size_t n) { return n <= 1 ? 0 : 64 - __builtin_clzll(n - 1); }

// The inverse of BucketClass: the block size of a class.
size_t ClassBytes(size_t cls) {
  if (cls < kNumSmallClasses) return kStorageAlignment << cls;
  size_t j = cls - kNumSmallClasses;
  int lg = kLog2SmallMax + 1 + static_cast<int>(j / 4);
  return (5 + j % 4) << (lg - 3);
}

}  // namespace

static_assert((size_t{1} << kLog2Align) == kStorageAlignment, "the smallest bucket is one alignment unit");

BlockPool::~BlockPool() { ReleaseAll(); }

size_t BlockPool::BucketSize(size_t size) {
  if (size == 0) return 0;
  int lg = Log2Ceil(size);
  if (lg <= kLog2Align) return kStorageAlignment;
  if (lg <= kLog2SmallMax) return size_t{1} << lg;
  size_t step = size_t{1} << (lg - 3);
  return (size + step - 1) / step * step;
}

size_t BlockPool::BucketClass(size_t size) {
  int lg = Log2Ceil(size);
  if (lg <= kLog2Align) return 0;
  if (lg <= kLog2SmallMax) return static_cast<size_t>(lg - kLog2Align);
  size_t step = size_t{1} << (lg - 3);
  size_t eighths = (size + step - 1) / step;  // 5..8: the request is above half the power of two
  return kNumSmallClasses + static_cast<size_t>(lg - kLog2SmallMax - 1) * 4 + (eighths - 5);
}

void* BlockPool::Alloc(size_t size, bool* os_alloc) {
  *os_alloc = false;
  if (size == 0 || size > kMaxRequest) return nullptr;
  size_t cls = BucketClass(size);
  if (cls < free_.size() && !free_[cls].empty()) {
    void* p = free_[cls].back();
    free_[cls].pop_back();
    pooled_bytes_ -= BucketSize(size);
    return p;
  }
  *os_alloc = true;
  size_t bytes = BucketSize(size);
  void* p = raw_alloc_(bytes);
  if (p == nullptr && pooled_bytes_ > 0) {
    // Cached blocks of other sizes may be what stands in the way.
    ReleaseAll();
    p = raw_alloc_(bytes);
  }
  return p;
}

void BlockPool::Free(void* ptr, size_t size) {
  if (!pooling_) {
    raw_free_(ptr, BucketSize(size));
    return;
  }
  size_t bytes = BucketSize(size);
  if (bytes > cache_limit_) {
    raw_free_(ptr, bytes);
    return;
  }
  // The largest blocks go first: they give back the most memory for the fewest future
  // misses, and a block just freed is the likeliest to be asked for again.
  while (pooled_bytes_ + bytes > cache_limit_) ReleaseLargest();
  size_t cls = BucketClass(size);
  if (cls >= free_.size()) free_.resize(cls + 1);
  free_[cls].push_back(ptr);
  pooled_bytes_ += bytes;
}

void BlockPool::ReleaseLargest() {
  for (size_t cls = free_.size(); cls-- > 0;) {
    if (free_[cls].empty()) continue;
    size_t bytes = ClassBytes(cls);
    raw_free_(free_[cls].back(), bytes);
    free_[cls].pop_back();
    pooled_bytes_ -= bytes;
    return;
  }
}

void BlockPool::set_cache_limit(size_t bytes) {
  cache_limit_ = bytes;
  while (pooled_bytes_ > cache_limit_) ReleaseLargest();
}

void BlockPool::ReleaseAll() {
  for (size_t cls = 0; cls < free_.size(); ++cls) {
    for (void* p : free_[cls]) raw_free_(p, ClassBytes(cls));
    free_[cls].clear();
  }
  pooled_bytes_ = 0;
}

}  // namespace weft

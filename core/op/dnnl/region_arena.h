// What both oneDNN regions (dnnl_region.cc for inference, dnnl_train_region.cc for
// training) use to lay out their own memory: 64-byte aligned sizes and buffers, and an
// arena of blocks handed to values and temporaries as the region's steps are planned.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/base/error.h"

namespace weft {
namespace op {

inline size_t Align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// A 64-byte aligned buffer of at least `bytes` (free with std::free); `who` names the
// operator in the out-of-memory error.
inline char* AlignedAlloc(size_t bytes, const char* who) {
  char* p = static_cast<char*>(std::aligned_alloc(64, Align64(std::max<size_t>(bytes, 64))));
  WEFT_CHECK(p != nullptr, kRuntime, who, ": out of memory allocating ", bytes, " bytes");
  return p;
}

// Blocks of an arena, planned before it exists: a value or temporary holds a block while it
// is live and frees it after its last use; a request takes the smallest free block that
// fits, else the largest free one, else a new one, and a block grows to its largest tenant.
struct ArenaBlocks {
  std::vector<size_t> bytes;  // per block
  std::vector<int> free;

  int Alloc(size_t b) {
    int best = -1;
    for (int k : free)
      if (bytes[k] >= b && (best < 0 || bytes[k] < bytes[best])) best = k;
    if (best < 0)
      for (int k : free)
        if (best < 0 || bytes[k] > bytes[best]) best = k;
    if (best < 0) {
      bytes.push_back(0);
      best = static_cast<int>(bytes.size()) - 1;
    } else {
      free.erase(std::find(free.begin(), free.end(), best));
    }
    bytes[best] = std::max(bytes[best], Align64(b));
    return best;
  }
  void Free(int k) { free.push_back(k); }
};

}  // namespace op
}  // namespace weft

// Offsets for blocks of memory with known lifetimes, shared by the executor's planner
// (core/executor/plan_memory.cc) and the oneDNN training regions' own plan
// (core/op/dnnl/dnnl_train_region.cc).
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft {

// Gives each block of `ids` in *st an offset so that blocks live at the same time never
// overlap: the largest first, each in the smallest gap between the blocks already placed
// that are live with it, else above them all (greedy by size, which on networks comes
// close to the peak of the bytes live at once). T has `bytes`, `offset` (written) and
// `start`, `end`: the first and last step it is live at, inclusive. `placed` may name
// blocks of *st placed before (by offset), which the new ones then fit around; with a
// `limit`, a block that would end above it is left out and returned instead.
template <typename T>
std::vector<int> PlaceBySize(std::vector<T>* st, std::vector<int> ids, std::vector<int> placed = {},
                             size_t limit = SIZE_MAX) {
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    const T &x = (*st)[a], &y = (*st)[b];
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.start < y.start;
  });
  std::vector<int> left;
  for (int id : ids) {
    T& s = (*st)[id];
    size_t cursor = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (int p : placed) {
      const T& o = (*st)[p];
      if (!(s.start <= o.end && o.start <= s.end)) continue;
      if (o.offset >= cursor) {
        size_t gap = o.offset - cursor;
        if (gap >= s.bytes && gap < best_gap) {
          best = cursor;
          best_gap = gap;
        }
      }
      cursor = std::max(cursor, o.offset + o.bytes);
    }
    s.offset = best != SIZE_MAX ? best : cursor;
    if (s.offset + s.bytes > limit) {
      left.push_back(id);
      continue;
    }
    auto at = std::upper_bound(placed.begin(), placed.end(), s.offset,
                               [&](size_t off, int p) { return off < (*st)[p].offset; });
    placed.insert(at, id);
  }
  return left;
}

}  // namespace weft

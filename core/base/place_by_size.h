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

// Gives each block of `ids` in *st an offset, in the order given, so that blocks live at
// the same time never overlap: each in the smallest gap between the blocks already placed
// that are live with it, else above them all. T has `bytes`, `offset` (written) and
// `start`, `end`: the first and last step it is live at, inclusive. `placed` may name
// blocks of *st placed before (by offset), which the new ones then fit around; with a
// `limit`, a block that would end above it is left out and returned instead.
template <typename T>
std::vector<int> PlaceInOrder(std::vector<T>* st, const std::vector<int>& ids, std::vector<int> placed = {},
                              size_t limit = SIZE_MAX) {
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

// PlaceInOrder with the largest blocks first (greedy by size, which on networks comes
// close to the peak of the bytes live at once).
template <typename T>
std::vector<int> PlaceBySize(std::vector<T>* st, std::vector<int> ids, std::vector<int> placed = {},
                             size_t limit = SIZE_MAX) {
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    const T &x = (*st)[a], &y = (*st)[b];
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.start < y.start;
  });
  return PlaceInOrder(st, ids, std::move(placed), limit);
}

// Places every block of `ids` (no limit, nothing placed before) by size, and again with
// the longest-lived first and with the largest bytes times lifetime first, keeping the
// offsets of whichever ends lowest: by size alone, a short-lived large block (a pass's
// temporaries) can land between long-lived ones and push the nested values of a network's
// forward and backward above the peak of the bytes live at once. Returns the end.
template <typename T>
size_t PlaceBest(std::vector<T>* st, const std::vector<int>& ids) {
  auto end_of = [&]() {
    size_t end = 0;
    for (int id : ids) end = std::max(end, (*st)[id].offset + (*st)[id].bytes);
    return end;
  };
  auto life = [&](int id) { return static_cast<int64_t>((*st)[id].end) - (*st)[id].start + 1; };
  PlaceBySize(st, ids);
  size_t best = end_of();
  std::vector<size_t> offsets;
  for (int id : ids) offsets.push_back((*st)[id].offset);
  for (int order = 0; order < 2; ++order) {
    std::vector<int> sorted = ids;
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
      const T &x = (*st)[a], &y = (*st)[b];
      if (order == 0) return life(a) != life(b) ? life(a) > life(b) : x.bytes > y.bytes;
      double ka = static_cast<double>(x.bytes) * life(a), kb = static_cast<double>(y.bytes) * life(b);
      return ka > kb;
    });
    PlaceInOrder(st, sorted);
    size_t end = end_of();
    if (end < best) {
      best = end;
      for (size_t i = 0; i < ids.size(); ++i) offsets[i] = (*st)[ids[i]].offset;
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) (*st)[ids[i]].offset = offsets[i];
  return best;
}

}  // namespace weft

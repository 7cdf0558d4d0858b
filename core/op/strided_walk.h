// Walking an array in row-major order while a second position moves through other memory
// with arbitrary per-axis strides: the index arithmetic behind transpose, broadcast,
// slice, flip and the backward passes of reductions. Axes of size 1 are dropped and an
// axis is merged into its inner neighbour when the strides allow, so most walks reduce to
// one or two axes with a tight inner loop.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/shape.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct StridedAxes {
  std::vector<int64_t> shape;   // merged axes, outermost first
  std::vector<int64_t> stride;  // the moving position's stride along each
};

// Merges the axes of `shape` (row-major, contiguous) walked with `stride`.
inline StridedAxes MergeStridedAxes(const Shape& shape, const std::vector<int64_t>& stride) {
  StridedAxes m;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1) continue;
    if (!m.shape.empty() && m.stride.back() == stride[d] * shape[d]) {
      m.shape.back() *= shape[d];
      m.stride.back() = stride[d];
      continue;
    }
    m.shape.push_back(shape[d]);
    m.stride.push_back(stride[d]);
  }
  return m;
}

// Calls row(i, off, n, step) for runs of the walk: elements i .. i+n-1 of `shape` (in
// row-major order) sit at positions off, off+step, ..., off+(n-1)*step. Runs are split
// across threads; each call covers part of one innermost axis.
template <typename F>
void ForEachStridedRow(const Shape& shape, const std::vector<int64_t>& stride, int64_t base, F&& row,
                       int64_t grain = kElemGrain) {
  int64_t total = shape.Size();
  if (total <= 0) return;
  StridedAxes m = MergeStridedAxes(shape, stride);
  if (m.shape.empty()) {
    row(int64_t{0}, base, int64_t{1}, int64_t{0});
    return;
  }
  int nd = static_cast<int>(m.shape.size());
  int64_t inner = m.shape[nd - 1], step = m.stride[nd - 1];
  ParallelFor(total, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(nd);
    int64_t rem = begin, off = base;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % m.shape[d];
      rem /= m.shape[d];
      off += idx[d] * m.stride[d];
    }
    int64_t i = begin;
    while (i < end) {
      int64_t n = std::min(inner - idx[nd - 1], end - i);
      row(i, off, n, step);
      i += n;
      off += n * step;
      idx[nd - 1] += n;
      for (int d = nd - 1; d > 0 && idx[d] == m.shape[d]; --d) {
        off -= idx[d] * m.stride[d];
        idx[d] = 0;
        ++idx[d - 1];
        off += m.stride[d - 1];
      }
    }
  });
}

// Calls f(i, off) for every element i of `shape` with its position off in the other memory.
template <typename F>
void ForEachStrided(const Shape& shape, const std::vector<int64_t>& stride, int64_t base, F&& f,
                    int64_t grain = kElemGrain) {
  ForEachStridedRow(
      shape, stride, base,
      [&](int64_t i, int64_t off, int64_t n, int64_t step) {
        for (int64_t k = 0; k < n; ++k) f(i + k, off + k * step);
      },
      grain);
}

// Strides that read an array of shape `from` as if broadcast to `to` (from aligned to
// the right of to, each dim 1 or equal): 0 along broadcast axes.
inline std::vector<int64_t> BroadcastStrides(const Shape& from, const Shape& to) {
  int nd = to.ndim(), off = to.ndim() - from.ndim();
  std::vector<int64_t> st(nd, 0);
  int64_t run = 1;
  for (int d = from.ndim() - 1; d >= 0; --d) {
    st[d + off] = from[d] == 1 ? 0 : run;
    run *= from[d];
  }
  return st;
}

}  // namespace op
}  // namespace weft

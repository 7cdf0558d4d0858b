// Reductions over any set of axes on the CPU, generic in the reducer (reducers.h).
//
// The input's axes split into kept ones (which pick the output element) and reduced ones
// (which are combined); size-1 axes are dropped and neighbours in the same set merged.
// The innermost remaining axis is contiguous and belongs to one of the two sets:
//   - reduced: each output folds contiguous runs, with eight independent accumulators so
//     that the compiler vectorises and rounding errors grow slowly;
//   - kept: contiguous output rows accumulate whole input rows at a time (vectorised
//     across the row).
// Outputs are split across threads; when there are too few of them to keep every thread
// busy, the reduced range is split instead and the partial results combined.
#pragma once

#include <algorithm>
#include <type_traits>
#include <cstdint>
#include <vector>

#include "core/op/op_util.h"
#include "core/op/reduce/reducers.h"
#include "core/base/tblob.h"

namespace weft {
namespace op {

// A set of merged axes with their sizes and input strides, outermost first.
struct ReduceAxisSet {
  std::vector<int64_t> shape, stride;

  int64_t Size() const {
    int64_t s = 1;
    for (int64_t d : shape) s *= d;
    return s;
  }
  // Input offset of element i of the set (row-major over the set's axes).
  int64_t Offset(int64_t i) const {
    int64_t off = 0;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0 && i > 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
  // The set without its innermost axis.
  ReduceAxisSet Outer() const {
    ReduceAxisSet o = *this;
    o.shape.pop_back();
    o.stride.pop_back();
    return o;
  }
};

inline void SplitReduceAxes(const Shape& in, const std::vector<bool>& reduce, ReduceAxisSet* kept,
                            ReduceAxisSet* reduced) {
  std::vector<int64_t> stride = ContiguousStrides(in);
  int last_set = -1;  // 0 kept, 1 reduced: the set of the previous non-unit axis
  for (int d = 0; d < in.ndim(); ++d) {
    if (in[d] == 1) continue;
    int set_id = reduce[d] ? 1 : 0;
    ReduceAxisSet* set = reduce[d] ? reduced : kept;
    if (set_id == last_set) {
      set->shape.back() *= in[d];
      set->stride.back() = stride[d];
    } else {
      set->shape.push_back(in[d]);
      set->stride.push_back(stride[d]);
    }
    last_set = set_id;
  }
}

// Folds the n contiguous elements at x into acc.
template <typename R, typename A, typename T>
inline A ReduceContiguous(const T* x, int64_t n, A acc) {
  constexpr int kLanes = 8;
  // GCC 12.2's AVX-512 vectorizer miscompiles the eight-lane loop below for integer
  // accumulators widened from int32 (a sum of 16 ones came to 8); integers need no lanes
  // for exactness, so they take the plain loop, which it vectorizes correctly.
  if (n >= 2 * kLanes && !std::is_integral_v<A>) {
    A lanes[kLanes];
    for (int j = 0; j < kLanes; ++j) lanes[j] = R::template Init<A>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] = R::Reduce(lanes[j], static_cast<A>(x[i + j]));
    for (; i < n; ++i) lanes[0] = R::Reduce(lanes[0], static_cast<A>(x[i]));
    for (int j = 0; j < kLanes; ++j) acc = R::Combine(acc, lanes[j]);
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) acc = R::Reduce(acc, static_cast<A>(x[i]));
  return acc;
}

// Folds reduced elements [rb, re) (row-major over `reduced`, whose innermost axis is
// contiguous) of the group starting at x.
template <typename R, typename A, typename T>
inline A ReduceSpan(const T* x, const ReduceAxisSet& outer, int64_t inner, int64_t rb, int64_t re) {
  A acc = R::template Init<A>();
  int64_t r = rb;
  while (r < re) {
    int64_t o = r / inner, pos = r % inner;
    int64_t n = std::min(inner - pos, re - r);
    acc = ReduceContiguous<R, A>(x + outer.Offset(o) + pos, n, acc);
    r += n;
  }
  return acc;
}

// Folds the rows of length len at x + reduced.Offset(r), r in [rb, re), into acc[0..len).
template <typename R, typename A, typename T>
inline void ReduceRows(const T* x, const ReduceAxisSet& reduced, int64_t rb, int64_t re, int64_t len, A* acc) {
  for (int64_t r = rb; r < re; ++r) {
    const T* row = x + reduced.Offset(r);
    for (int64_t l = 0; l < len; ++l) acc[l] = R::Reduce(acc[l], static_cast<A>(row[l]));
  }
}

// out = R over the input axes flagged in `reduce`. out holds the kept axes' elements in
// order (with the reduced axes dropped or kept as 1: the layout is the same), in dtype O.
template <typename R, typename T, typename O = T>
void Reduce(const TBlob& in, const std::vector<bool>& reduce, const TBlob& out, OpReq req) {
  using A = typename ReduceAcc<T>::type;
  if (req == OpReq::kNullOp) return;
  const T* x = in.ptr<T>();
  O* y = out.ptr<O>();
  int64_t m = out.Size();
  if (m == 0) return;
  ReduceAxisSet kept, reduced;
  SplitReduceAxes(in.shape, reduce, &kept, &reduced);
  int64_t k = in.Size() / m;
  if (in.Size() == 0) k = 0;
  int threads = omp_get_max_threads();
  auto store = [&](int64_t j, A acc) { Store(y + j, req, R::Finalize(acc, k)); };

  if (k == 0 || reduced.shape.empty()) {
    ParallelFor(m, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        A acc = R::template Init<A>();
        if (k) acc = R::Reduce(acc, static_cast<A>(x[kept.Offset(j)]));
        store(j, acc);
      }
    });
    return;
  }

  bool reduced_inner = reduced.stride.back() == 1;
  if (reduced_inner) {
    ReduceAxisSet outer = reduced.Outer();
    int64_t inner = reduced.shape.back();
    if (m >= threads || k * m < 4 * kElemGrain) {
      ParallelFor(m, std::max<int64_t>(1, kElemGrain / k), [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) store(j, ReduceSpan<R, A>(x + kept.Offset(j), outer, inner, 0, k));
      });
      return;
    }
    // Few outputs, much to reduce: split each output's range across threads.
    int64_t parts = std::clamp<int64_t>(k / kElemGrain, 1, threads);
    for (int64_t j = 0; j < m; ++j) {
      std::vector<A> partial(parts);
      const T* base = x + kept.Offset(j);
      ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) partial[p] = ReduceSpan<R, A>(base, outer, inner, p * k / parts, (p + 1) * k / parts);
      });
      A acc = R::template Init<A>();
      for (const A& p : partial) acc = R::Combine(acc, p);
      store(j, acc);
    }
    return;
  }

  // The innermost axis is kept: output rows of `len` contiguous elements.
  ReduceAxisSet kouter = kept.Outer();
  int64_t len = kept.shape.back();
  constexpr int64_t kBlock = 512;
  int64_t blocks = (len + kBlock - 1) / kBlock;
  int64_t tasks = kouter.Size() * blocks;
  if (tasks >= threads || k * m < 4 * kElemGrain) {
    ParallelFor(tasks, std::max<int64_t>(1, kElemGrain / (k * std::min(len, kBlock))), [&](int64_t b, int64_t e) {
      A acc[kBlock];
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / blocks, l0 = (t % blocks) * kBlock, n = std::min(kBlock, len - l0);
        for (int64_t l = 0; l < n; ++l) acc[l] = R::template Init<A>();
        ReduceRows<R, A>(x + kouter.Offset(o) + l0, reduced, 0, k, n, acc);
        for (int64_t l = 0; l < n; ++l) store(o * len + l0 + l, acc[l]);
      }
    });
    return;
  }
  // Few output rows: each part of the reduced range is folded into its own partials.
  int64_t parts = std::clamp<int64_t>(k * m / kElemGrain, 1, threads);
  std::vector<A> partial(static_cast<size_t>(parts * m), R::template Init<A>());
  ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      A* acc = partial.data() + p * m;
      for (int64_t o = 0; o < kouter.Size(); ++o)
        ReduceRows<R, A>(x + kouter.Offset(o), reduced, p * k / parts, (p + 1) * k / parts, len, acc + o * len);
    }
  });
  for (int64_t j = 0; j < m; ++j) {
    A acc = R::template Init<A>();
    for (int64_t p = 0; p < parts; ++p) acc = R::Combine(acc, partial[p * m + j]);
    store(j, acc);
  }
}

}  // namespace op
}  // namespace weft

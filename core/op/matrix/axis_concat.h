// Moving data between one array and pieces of it laid side by side along an axis: the
// kernel of concat, stack, split and their gradients. Both sides are seen as
// (outer, size, inner) with the pieces' sizes adding up to the whole's.
#pragma once

#include <algorithm>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {

enum class ConcatDirection { kPiecesToWhole, kWholeToPieces };

// `sizes[p]` is piece p's extent along the axis; `reqs` has one request for the whole
// (kPiecesToWhole) or one per piece (kWholeToPieces).
inline void AxisConcat(ConcatDirection dir, const TBlob& whole, const std::vector<TBlob>& pieces,
                       const std::vector<int64_t>& sizes, int64_t outer, int64_t inner, const std::vector<OpReq>& reqs) {
  size_t np = pieces.size();
  std::vector<int64_t> prefix(np + 1, 0);
  for (size_t p = 0; p < np; ++p) prefix[p + 1] = prefix[p] + sizes[p];
  int64_t total = prefix[np];
  int64_t tasks = outer * static_cast<int64_t>(np);
  int64_t avg = tasks > 0 ? std::max<int64_t>(1, total * inner / static_cast<int64_t>(np)) : 1;
  WEFT_TYPE_SWITCH(whole.dtype, T, {
    T* w = whole.ptr<T>();
    ParallelFor(tasks, std::max<int64_t>(1, kElemGrain / avg), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / static_cast<int64_t>(np);
        size_t p = static_cast<size_t>(t % static_cast<int64_t>(np));
        OpReq req = dir == ConcatDirection::kPiecesToWhole ? reqs[0] : reqs[p];
        if (req == OpReq::kNullOp) continue;
        int64_t n = sizes[p] * inner;
        T* wrow = w + (o * total + prefix[p]) * inner;
        T* prow = pieces[p].ptr<T>() + o * n;
        const T* src = dir == ConcatDirection::kPiecesToWhole ? prow : wrow;
        T* dst = dir == ConcatDirection::kPiecesToWhole ? wrow : prow;
        if (req == OpReq::kAddTo) {
          for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
        } else {
          std::copy(src, src + n, dst);
        }
      }
    });
  });
}

}  // namespace op
}  // namespace weft

// out = OP(a, b) with numpy broadcasting on the CPU.
//
// Equal sizes and a size-1 side are plain maps (kernels.h). Otherwise the output's axes are
// merged into as few as possible (size-1 axes dropped, neighbours fused when both inputs
// step through them as through one axis) and walked row by row: along the innermost axis
// each input either advances by one element or stays put, so every row is one of the plain
// maps again, and only the row starts need index arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/shape.h"
#include "core/op/elemwise/kernels.h"
#include "core/base/tblob.h"

namespace weft {
namespace op {

struct BroadcastPlan {
  std::vector<int64_t> shape, lstride, rstride;  // merged output axes, outermost first
};

// Assumes `ls` and `rs` broadcast to `os` (shape inference checked it).
inline BroadcastPlan MakeBroadcastPlan(const Shape& ls, const Shape& rs, const Shape& os) {
  int nd = os.ndim();
  BroadcastPlan p;
  int64_t lrun = 1, rrun = 1;
  std::vector<int64_t> shape(nd), lst(nd), rst(nd);
  for (int d = nd - 1; d >= 0; --d) {
    int li = d - (nd - ls.ndim()), ri = d - (nd - rs.ndim());
    int64_t ld = li >= 0 ? ls[li] : 1, rd = ri >= 0 ? rs[ri] : 1;
    shape[d] = os[d];
    lst[d] = ld == 1 ? 0 : lrun;
    rst[d] = rd == 1 ? 0 : rrun;
    lrun *= ld;
    rrun *= rd;
  }
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!p.shape.empty() && p.lstride.back() == lst[d] * shape[d] && p.rstride.back() == rst[d] * shape[d]) {
      p.shape.back() *= shape[d];
      p.lstride.back() = lst[d];
      p.rstride.back() = rst[d];
      continue;
    }
    p.shape.push_back(shape[d]);
    p.lstride.push_back(lst[d]);
    p.rstride.push_back(rst[d]);
  }
  return p;
}

template <typename OP, typename T>
void BroadcastMap(const TBlob& lhs, const TBlob& rhs, const TBlob& out, OpReq req) {
  using A = ComputeT<T>;
  int64_t n = out.Size();
  if (req == OpReq::kNullOp || n == 0) return;
  const T* a = lhs.ptr<T>();
  const T* b = rhs.ptr<T>();
  T* o = out.ptr<T>();
  if (lhs.Size() == n && rhs.Size() == n) return BinaryMap<OP, T>(a, b, o, n, req);
  if (rhs.Size() == 1) return ScalarRightMap<OP, T>(a, static_cast<A>(b[0]), o, n, req);
  if (lhs.Size() == 1) return ScalarLeftMap<OP, T>(static_cast<A>(a[0]), b, o, n, req);

  BroadcastPlan p = MakeBroadcastPlan(lhs.shape, rhs.shape, out.shape);
  int outer_nd = static_cast<int>(p.shape.size()) - 1;
  int64_t inner = p.shape.back();
  bool l_moves = p.lstride.back() != 0, r_moves = p.rstride.back() != 0;
  int64_t rows = n / inner;
  ParallelFor(rows, std::max<int64_t>(1, kElemGrain / inner), [&](int64_t rb, int64_t re) {
    // The row index as an odometer over the outer axes, with both inputs' offsets.
    std::vector<int64_t> idx(outer_nd, 0);
    int64_t loff = 0, roff = 0;
    for (int64_t rem = rb, d = outer_nd - 1; d >= 0; --d) {
      idx[d] = rem % p.shape[d];
      rem /= p.shape[d];
      loff += idx[d] * p.lstride[d];
      roff += idx[d] * p.rstride[d];
    }
    for (int64_t r = rb; r < re; ++r) {
      T* orow = o + r * inner;
      const T* arow = a + loff;
      const T* brow = b + roff;
      if (l_moves && r_moves) {
        StoreRun(orow, inner, req, [&](int64_t k) { return OP::Map(static_cast<A>(arow[k]), static_cast<A>(brow[k])); });
      } else if (l_moves) {
        A s = static_cast<A>(brow[0]);
        StoreRun(orow, inner, req, [&](int64_t k) { return OP::Map(static_cast<A>(arow[k]), s); });
      } else {
        A s = static_cast<A>(arow[0]);
        StoreRun(orow, inner, req, [&](int64_t k) { return OP::Map(s, static_cast<A>(brow[k])); });
      }
      for (int d = outer_nd - 1; d >= 0; --d) {
        loff += p.lstride[d];
        roff += p.rstride[d];
        if (++idx[d] < p.shape[d]) break;
        loff -= idx[d] * p.lstride[d];
        roff -= idx[d] * p.rstride[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace op
}  // namespace weft

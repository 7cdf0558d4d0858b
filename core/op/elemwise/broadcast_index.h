// Where each output element of a numpy-style broadcast reads its two inputs. Each input's
// shape aligns with the output's from the right and each of its dims is 1 or the output's;
// the index holds per-input strides (0 along broadcast axes) with size-1 axes dropped and
// neighbouring axes merged when both inputs step through them as through one, so the
// common cases (same shapes, a row or a column against a matrix) need one or two axes.
// Plain C++ usable in CUDA kernels (WEFT_XINLINE), and testable on the CPU.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/error.h"
#include "core/base/macros.h"
#include "core/base/shape.h"

namespace weft {
namespace cuda {

// Output axes after merging; more than this is unusual enough to be an error.
constexpr int kMaxBroadcastDims = 10;

// Where output element i reads each input.
struct BroadcastIndex {
  int ndim = 0;
  int64_t shape[kMaxBroadcastDims];
  int64_t lstride[kMaxBroadcastDims];
  int64_t rstride[kMaxBroadcastDims];

  WEFT_XINLINE void Offsets(int64_t i, int64_t* lo, int64_t* ro) const {
    int64_t l = 0, r = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t c = i % shape[d];
      i /= shape[d];
      l += c * lstride[d];
      r += c * rstride[d];
    }
    *lo = l;
    *ro = r;
  }
};

// Builds the index for inputs of shapes `ls` and `rs` broadcast to `os`; throws kShape
// naming the operator when they do not broadcast.
inline BroadcastIndex MakeBroadcastIndex(const Shape& ls, const Shape& rs, const Shape& os, const char* op_name) {
  int nd = os.ndim();
  WEFT_CHECK(ls.ndim() <= nd && rs.ndim() <= nd, kShape, "Operator '", op_name, "': inputs of shapes ", ls.ToString(),
             " and ", rs.ToString(), " do not broadcast to the output shape ", os.ToString());
  // Per input, contiguous strides aligned to the output's axes; 0 where broadcast.
  std::vector<int64_t> shape(nd), lstride(nd), rstride(nd);
  int64_t lrun = 1, rrun = 1;
  for (int d = nd - 1; d >= 0; --d) {
    int li = d - (nd - ls.ndim()), ri = d - (nd - rs.ndim());
    int64_t ld = li >= 0 ? ls[li] : 1, rd = ri >= 0 ? rs[ri] : 1;
    WEFT_CHECK((ld == os[d] || ld == 1) && (rd == os[d] || rd == 1), kShape, "Operator '", op_name,
               "': inputs of shapes ", ls.ToString(), " and ", rs.ToString(), " do not broadcast to the output shape ",
               os.ToString());
    shape[d] = os[d];
    lstride[d] = ld == 1 ? 0 : lrun;
    rstride[d] = rd == 1 ? 0 : rrun;
    lrun *= ld;
    rrun *= rd;
  }
  // Drop size-1 axes and merge an axis into its inner neighbour when both inputs step
  // through the pair as through one axis.
  BroadcastIndex idx;
  int n = 0;
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (n > 0 && idx.lstride[n - 1] == lstride[d] * shape[d] && idx.rstride[n - 1] == rstride[d] * shape[d]) {
      idx.shape[n - 1] *= shape[d];
      idx.lstride[n - 1] = lstride[d];
      idx.rstride[n - 1] = rstride[d];
      continue;
    }
    WEFT_CHECK(n < kMaxBroadcastDims, kUnsupported, "Operator '", op_name, "': broadcasting ", ls.ToString(), " and ",
               rs.ToString(), " needs more than ", kMaxBroadcastDims, " axes on GPUs");
    idx.shape[n] = shape[d];
    idx.lstride[n] = lstride[d];
    idx.rstride[n] = rstride[d];
    ++n;
  }
  idx.ndim = n;
  return idx;
}

}  // namespace cuda
}  // namespace weft

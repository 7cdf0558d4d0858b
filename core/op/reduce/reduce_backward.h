// The shape of every reduction's gradient: each input element i gets a value computed
// from itself and from the output element j it was reduced into.
#pragma once

#include <vector>

#include "core/op/op_util.h"
#include "core/op/reduce/reduce_kernel.h"
#include "core/op/strided_walk.h"

namespace weft {
namespace op {

// Strides that walk the reduced output (keepdims layout) along the input's axes: 0 on
// reduced axes.
inline std::vector<int64_t> ReducedOutputStrides(const Shape& in, const std::vector<bool>& reduce) {
  std::vector<int64_t> st(in.ndim(), 0);
  int64_t run = 1;
  for (int d = in.ndim() - 1; d >= 0; --d) {
    if (reduce[d]) continue;
    st[d] = run;
    run *= in[d];
  }
  return st;
}

// grad[i] (as req says) = f(i, j) for every input element i, with j its output element.
// f returns the value in a compute type.
template <typename T, typename F>
void ReduceBackwardMap(const Shape& in, const std::vector<bool>& reduce, T* grad, OpReq req, F&& f) {
  if (req == OpReq::kNullOp) return;
  ForEachStridedRow(in, ReducedOutputStrides(in, reduce), 0, [&](int64_t i, int64_t j, int64_t n, int64_t step) {
    for (int64_t k = 0; k < n; ++k) Store(grad + i + k, req, f(i + k, j + k * step));
  });
}

// The product of the elements of i's group other than i itself, computed directly (for
// the gradient of a product at a zero, where out / x does not work). NaNs are skipped
// when `skip_nan`.
template <typename A, typename T>
A ProductOfOthers(const T* x, const Shape& in, const std::vector<bool>& reduce, int64_t i, bool skip_nan) {
  ReduceAxisSet kept, reduced;
  SplitReduceAxes(in, reduce, &kept, &reduced);
  // i's offset within its group: the reduced axes' part of its position.
  std::vector<int64_t> stride = ContiguousStrides(in);
  int64_t rem = i, base = 0;
  for (int d = in.ndim() - 1; d >= 0; --d) {
    int64_t c = rem % in[d];
    rem /= in[d];
    if (!reduce[d]) base += c * stride[d];
  }
  A p = A(1);
  int64_t k = reduced.Size();
  for (int64_t r = 0; r < k; ++r) {
    int64_t off = base + reduced.Offset(r);
    if (off == i) continue;
    A v = static_cast<A>(x[off]);
    if (skip_nan && IsNaN(v)) continue;
    p *= v;
  }
  return p;
}

}  // namespace op
}  // namespace weft

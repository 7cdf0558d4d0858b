// Strided boxes of an array: the kernel behind slice, slice_axis and their gradients. A
// box takes, along every input axis, `size` elements from `begin` in steps of `step`
// (negative steps walk backwards).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "core/op/data_move.h"

namespace weft {
namespace op {

struct SliceBox {
  std::vector<int64_t> begin, step, size;  // one entry per input axis
};

// A full box of `in`, to be narrowed axis by axis.
inline SliceBox FullBox(const Shape& in) {
  SliceBox box;
  for (int d = 0; d < in.ndim(); ++d) {
    box.begin.push_back(0);
    box.step.push_back(1);
    box.size.push_back(in[d]);
  }
  return box;
}

// Narrows axis d of a box over an axis of length len with Python slice semantics
// (begin/end None or negative, clamped to the axis); step must not be 0.
inline void NarrowAxis(SliceBox* box, int d, int64_t len, std::optional<int64_t> b, std::optional<int64_t> e,
                       int64_t step) {
  int64_t lo, hi;
  if (step > 0) {
    lo = b ? (*b < 0 ? std::max<int64_t>(*b + len, 0) : std::min(*b, len)) : 0;
    hi = e ? (*e < 0 ? std::max<int64_t>(*e + len, 0) : std::min(*e, len)) : len;
    box->size[d] = hi > lo ? (hi - lo + step - 1) / step : 0;
  } else {
    lo = b ? (*b < 0 ? std::max<int64_t>(*b + len, -1) : std::min(*b, len - 1)) : len - 1;
    hi = e ? (*e < 0 ? std::max<int64_t>(*e + len, -1) : std::min(*e, len - 1)) : -1;
    box->size[d] = lo > hi ? (lo - hi - step - 1) / (-step) : 0;
  }
  box->begin[d] = box->size[d] > 0 ? lo : 0;
  box->step[d] = step;
}

inline Shape BoxShape(const SliceBox& box) { return Shape(box.size); }

// The output shape of a slice of an input whose rank is known but some of whose dimensions are
// not (-1): MXNet's partial inference keeps the known axes and leaves the unknown ones unknown.
// `box_of` maps an input shape to its SliceBox; unknown axes are probed with a length no index
// can exceed.
template <typename BoxOf>
Shape PartialSliceShape(const Shape& in, BoxOf box_of) {
  constexpr int64_t kProbe = int64_t{1} << 40;
  Shape probe = in;
  for (int d = 0; d < in.ndim(); ++d)
    if (in[d] < 0) probe[d] = kProbe;
  Shape out = BoxShape(box_of(probe));
  for (int d = 0; d < in.ndim(); ++d)
    if (in[d] < 0) out[d] = -1;
  return out;
}

// Where the box's elements sit in the input: a base offset and per-axis strides.
inline std::vector<int64_t> BoxStrides(const Shape& in, const SliceBox& box, int64_t* base) {
  std::vector<int64_t> st = ContiguousStrides(in);
  *base = 0;
  for (int d = 0; d < in.ndim(); ++d) {
    *base += box.begin[d] * st[d];
    st[d] *= box.step[d];
  }
  return st;
}

// out = in[box].
inline void SliceForward(const OpContext& ctx, const TBlob& in, const SliceBox& box, const TBlob& out, OpReq req) {
  int64_t base;
  std::vector<int64_t> st = BoxStrides(in.shape, box, &base);
  StridedGather(ctx, out.shape, st, base, in, out, req);
}

// grad = zeros with grad[box] = ograd (or grad[box] += ograd for kAddTo).
inline void SliceBackward(const OpContext& ctx, const TBlob& ograd, const SliceBox& box, const TBlob& grad, OpReq req) {
  int64_t base;
  std::vector<int64_t> st = BoxStrides(grad.shape, box, &base);
  StridedScatterGrad(ctx, ograd.shape, st, base, ograd, grad, req);
}

}  // namespace op
}  // namespace weft

// Strided boxes of an array: the kernel behind slice, slice_axis and their gradients. A
// box takes, along every input axis, `size` elements from `begin` in steps of `step`
// (negative steps walk backwards).
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "core/op/strided_walk.h"

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
inline void SliceForward(const TBlob& in, const SliceBox& box, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  int64_t base;
  std::vector<int64_t> st = BoxStrides(in.shape, box, &base);
  WEFT_TYPE_SWITCH(in.dtype, T, {
    const T* x = in.ptr<T>();
    T* y = out.ptr<T>();
    ForEachStridedRow(out.shape, st, base, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      if (req == OpReq::kAddTo) {
        for (int64_t k = 0; k < n; ++k) y[i + k] = static_cast<T>(y[i + k] + x[off + k * step]);
      } else {
        for (int64_t k = 0; k < n; ++k) y[i + k] = x[off + k * step];
      }
    });
  });
}

// grad = zeros with grad[box] = ograd (or grad[box] += ograd for kAddTo).
inline void SliceBackward(const TBlob& ograd, const SliceBox& box, const TBlob& grad, OpReq req) {
  if (req == OpReq::kNullOp) return;
  int64_t base;
  std::vector<int64_t> st = BoxStrides(grad.shape, box, &base);
  WEFT_TYPE_SWITCH(grad.dtype, T, {
    const T* g = ograd.ptr<T>();
    T* y = grad.ptr<T>();
    if (req != OpReq::kAddTo) std::fill(y, y + grad.Size(), T(0));
    // Box elements are distinct positions, so rows never collide across threads.
    ForEachStridedRow(ograd.shape, st, base, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) y[off + k * step] = static_cast<T>(y[off + k * step] + g[i + k]);
    });
  });
}

}  // namespace op
}  // namespace weft

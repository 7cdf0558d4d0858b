// Helpers shared by the normalisation, activation, softmax and loss operators of
// core/op/nn: floating-point dtype rules, axis splitting and parameter errors.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace nn {

// Accumulation type: double for double arrays, float for the narrower floating types.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

#define WEFT_NN_FLOAT_SWITCH(attrs, dtype, DT, ...) \
  WEFT_FLOAT_TYPE_SWITCH(dtype, DT, "Operator '" + (attrs).op->name + "'", __VA_ARGS__)

[[noreturn]] inline void BadParam(const NodeAttrs& attrs, const std::string& key, const std::string& expected,
                                  const std::string& got) {
  Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", key, "': expected ", expected, ", got ",
        got);
}

// The data shape split around one axis: outer x n x inner.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit SplitAt(const Shape& s, int axis) {
  AxisSplit r;
  for (int d = 0; d < axis; ++d) r.outer *= s[d];
  r.n = s[axis];
  for (int d = axis + 1; d < s.ndim(); ++d) r.inner *= s[d];
  return r;
}

// Requires a known data shape of at least `min_ndim` dimensions.
inline void CheckMinNdim(const NodeAttrs& attrs, const Shape& s, int min_ndim, const char* what = "data") {
  if (s.ndim() < min_ndim)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what, "' must have at least ", min_ndim,
          " dimension", min_ndim == 1 ? "" : "s", ", got shape ", s.ToString());
}

// y = v under the request (the callers skip kNullOp outputs).
template <typename T, typename A>
inline void Put(T* y, OpReq req, A v) {
  if (req == OpReq::kAddTo) *y = static_cast<T>(static_cast<A>(*y) + v);
  else *y = static_cast<T>(v);
}

// Sets a whole output to zero (or leaves it, for kAddTo / kNullOp).
inline void ZeroOut(const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp || req == OpReq::kAddTo) return;
  std::memset(out.dptr, 0, out.Bytes());
}

}  // namespace nn
}  // namespace op
}  // namespace weft

// Reading index arrays (any dtype; fractions truncate) and resolving out-of-range indices
// as take and pick do: clip to the ends, wrap around, or raise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/convert.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

enum class IndexMode { kClip, kWrap, kRaise };

inline IndexMode ParseIndexMode(const std::string& mode) {
  if (mode == "wrap") return IndexMode::kWrap;
  if (mode == "raise") return IndexMode::kRaise;
  return IndexMode::kClip;
}

// The indices as int64, each resolved into [0, n) by `mode`. kRaise accepts [0, n) only, as
// MXNet's take (a negative index is out of bounds), and throws kIndex naming the operator.
inline std::vector<int64_t> ResolveIndices(const TBlob& idx, int64_t n, IndexMode mode, const NodeAttrs& attrs,
                                           int axis) {
  std::vector<int64_t> out(idx.Size());
  WEFT_TYPE_SWITCH(idx.dtype, I, {
    const I* p = idx.ptr<I>();
    // Saturating: a float index far out of range (or NaN, taken as 0) is resolved by `mode`
    // like any other, not converted with undefined behaviour.
    for (size_t i = 0; i < out.size(); ++i) out[i] = ConvertValue<int64_t>(p[i]);
  });
  for (int64_t& k : out) {
    if (mode == IndexMode::kClip) {
      k = k < 0 ? 0 : (k >= n ? n - 1 : k);
    } else if (mode == IndexMode::kWrap) {
      k = n > 0 ? ((k % n) + n) % n : 0;
    } else {
      if (k < 0 || k >= n)
        Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': index ", k, " is out of bounds for axis ", axis,
              " with size ", n, " (mode 'raise' takes indices in [0, ", n, "))");
    }
  }
  return out;
}

}  // namespace op
}  // namespace weft

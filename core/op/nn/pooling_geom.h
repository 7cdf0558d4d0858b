// Pooling's geometry (window sizes, strides, pads and output sizes per spatial axis), shared
// by its CPU (pooling.cc) and GPU (pooling_gpu.cu) code.
#pragma once

#include <cstdint>

#include "core/op/registry.h"

namespace weft {
namespace op {

enum class PoolKind { kMax, kAvg, kSum, kLp };

struct PoolGeom {
  int nd = 2;
  int64_t n = 0, c = 0;
  // Right-aligned like ConvGeom: a 2-D pooling uses entries 1 and 2.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, pl[3] = {0, 0, 0};
  // Where windows stop for the include-pad divisor: in + the symmetric pad.
  int64_t limit[3] = {1, 1, 1};
  PoolKind kind = PoolKind::kMax;
  bool include_pad = true;
  int p = 2;
  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t OutSize() const { return out[0] * out[1] * out[2]; }
};

// The geometry of Pooling (or _backward_Pooling) on data of shape `data`; refuses bad
// parameters with the operator's name. `channels_last` lets a channels-last layout
// through (data (n, in..., c), the geometry that of its channels-first transpose); without
// it such a layout is refused.
PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& data, bool channels_last = false);

}  // namespace op
}  // namespace weft

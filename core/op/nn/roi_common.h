// What the region-of-interest operators (roi_pooling.cc, deformable_psroi_pooling.cc)
// share: the check of their data and rois inputs and the rule for an ROI's image.
#pragma once

#include <cstdint>

#include "core/op/op_util.h"

namespace weft {
namespace op {

// Checks data (N, C, H, W) and rois (R, cols), `layout` naming a row's fields.
inline void CheckRoiInputs(const NodeAttrs& attrs, const Shape& d, const Shape& r, int64_t cols = 5,
                           const char* layout = "[batch_index, x1, y1, x2, y2]") {
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data (batch, channel, h, w), got shape ",
          d.ToString());
  if (r.ndim() != 2 || r[1] != cols)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected rois (num_rois, ", cols, ") of ", layout,
          ", got shape ", r.ToString());
}

// The batch index of an ROI row, or -1 when it names no image of the batch.
template <typename T>
int64_t RoiBatch(const T* roi, int64_t N) {
  double b = static_cast<double>(roi[0]);
  if (!(b >= 0 && b < static_cast<double>(N))) return -1;
  return static_cast<int64_t>(b);
}

}  // namespace op
}  // namespace weft

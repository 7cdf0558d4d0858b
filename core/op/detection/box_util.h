// Boxes as the detection operators read them: a box is 4 values in 'corner'
// [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height] encoding, turned into
// corners once, and their intersection over union.
#pragma once

#include <algorithm>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct Box {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

template <typename T>
inline Box ReadBox(const T* p, bool center) {
  double a = static_cast<double>(p[0]), b = static_cast<double>(p[1]), c = static_cast<double>(p[2]),
         d = static_cast<double>(p[3]);
  if (center) return Box{a - c / 2, b - d / 2, a + c / 2, b + d / 2};
  return Box{a, b, c, d};
}

// The area, zero for a box whose corners are swapped.
inline double Area(const Box& b) {
  double w = b.x2 - b.x1, h = b.y2 - b.y1;
  return w < 0 || h < 0 ? 0.0 : w * h;
}

// Intersection over union; 0 when the boxes do not overlap (MXNet's rule, which also
// makes two empty boxes at one point 0 rather than NaN).
inline double Iou(const Box& a, const Box& b) {
  double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (!(w > 0 && h > 0)) return 0.0;
  double inter = w * h;
  return inter / (Area(a) + Area(b) - inter);
}

// FGradient of the detection operators MXNet gives zero gradients: zeros for every input.
inline std::vector<GradValue> ZeroGrads(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  std::vector<GradValue> r;
  for (const auto& x : a.inputs) r.push_back(b.Op("zeros_like", {x}));
  return r;
}

}  // namespace op
}  // namespace weft

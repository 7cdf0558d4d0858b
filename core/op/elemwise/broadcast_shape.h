// Numpy broadcasting of two shapes, as the broadcast_* operators infer it: shapes align from
// the right, a missing dim counts as 1, and each pair of dims must be equal or contain a 1.
#pragma once

#include <vector>

#include "core/base/shape.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

// The broadcast of `a` and `b` (both of known rank). Dims that are unknown (-1) stay unknown
// unless the other side fixes them. Throws kShape naming the operator and both shapes when
// they do not broadcast.
Shape BroadcastShapes(const NodeAttrs& attrs, const Shape& a, const Shape& b);

// FInferShape of two-input broadcast operators.
bool BroadcastBinaryShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out);

}  // namespace op
}  // namespace weft

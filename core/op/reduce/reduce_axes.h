// Which axes a reduction combines and the shape it leaves, for the reductions with MXNet's
// `axis` / `keepdims` / `exclude` parameters (sum, mean, prod, max, min, nansum, nanprod,
// norm) and for the one-axis searches (argmax, argmin).
#pragma once

#include <optional>
#include <vector>

#include "core/base/param.h"
#include "core/base/shape.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct ReduceAxesParam {
  std::optional<Shape> axis;
  bool keepdims = false;
  bool exclude = false;
};

WEFT_PARAM_SCHEMA(ReduceAxesParam, s) {
  s.Field("axis", &ReduceAxesParam::axis)
      .Default(std::nullopt)
      .Describe("The axis or axes to reduce (negative counts from the end); None or () reduces all axes.");
  s.Field("keepdims", &ReduceAxesParam::keepdims)
      .Default(false)
      .Describe("Keep the reduced axes in the result as axes of size 1.");
  s.Field("exclude", &ReduceAxesParam::exclude)
      .Default(false)
      .Describe("Reduce the axes that are NOT in axis instead.");
}

// One flag per input axis, true where the axis is reduced. `axis` unset or empty means
// every axis. Throws kIndex for an axis out of range and kValue for a repeated axis,
// naming the operator and the input shape.
std::vector<bool> ReduceFlags(const NodeAttrs& attrs, const Shape& in, const std::optional<Shape>& axis, bool exclude);

// The result shape: reduced axes become 1 with keepdims and disappear without. A result
// with no axis left is (1,), as in MXNet 1.x.
Shape ReducedShape(const Shape& in, const std::vector<bool>& flags, bool keepdims);

// The flags and result shape of a ReduceAxesParam operator.
inline std::vector<bool> ReduceFlags(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<ReduceAxesParam>();
  return ReduceFlags(attrs, in, p.axis, p.exclude);
}

// FInferShape of the ReduceAxesParam operators.
bool ReduceAxesShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out);

}  // namespace op
}  // namespace weft

// squeeze: removes axes of size 1 (all of them, or the ones listed). Removing every axis
// leaves shape (1,), as in MXNet 1.x.
#include <optional>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct SqueezeParam {
  std::optional<Shape> axis;
};

WEFT_PARAM_SCHEMA(SqueezeParam, s) {
  s.Field("axis", &SqueezeParam::axis)
      .Default(std::nullopt)
      .Describe("The axes to remove (each must have size 1); None removes every axis of size 1.");
}

namespace {

bool SqueezeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  const auto& axis = attrs.Params<SqueezeParam>().axis;
  std::vector<bool> drop(x.ndim(), false);
  if (axis && axis->ndim() >= 0) {
    for (int64_t a : *axis) {
      int d = CheckAxis(attrs, a, x.ndim());
      if (x[d] != 1)
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot remove axis ", a, " of size ", x[d],
              " from an input of shape ", x.ToString(), " (only axes of size 1 can be squeezed)");
      drop[d] = true;
    }
  } else {
    for (int d = 0; d < x.ndim(); ++d) drop[d] = x[d] == 1;
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < x.ndim(); ++d)
    if (!drop[d]) dims.push_back(x[d]);
  if (dims.empty()) dims.push_back(1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(squeeze)
    .Describe("Removes axes of size 1: the listed ones, or all when axis is None.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SqueezeParam>()
    .SetAttr<FInferShape>("FInferShape", SqueezeShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", ReshapeLikeInputGrad);

}  // namespace op
}  // namespace weft

// expand_dims: inserts an axis of size 1.
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ExpandDimsParam {
  int axis = 0;
};

WEFT_PARAM_SCHEMA(ExpandDimsParam, s) {
  s.Field("axis", &ExpandDimsParam::axis)
      .Describe("Position of the new axis in the result, in [-ndim-1, ndim]; negative counts from the end.");
}

namespace {

bool ExpandDimsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.known_ndim()) return false;
  int axis = CheckAxis(attrs, attrs.Params<ExpandDimsParam>().axis, x.ndim() + 1);
  std::vector<int64_t> dims = x.ToVector();
  dims.insert(dims.begin() + axis, 1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return x.is_known();
}

}  // namespace

WEFT_REGISTER_OP(expand_dims)
    .Describe("Inserts a new axis of size 1 at position axis.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ExpandDimsParam>()
    .SetAttr<FInferShape>("FInferShape", ExpandDimsShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", ReshapeLikeInputGrad);

}  // namespace op
}  // namespace weft

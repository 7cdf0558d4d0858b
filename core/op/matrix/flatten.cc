// flatten (Flatten): (d0, d1, ..., dn) -> (d0, d1 * ... * dn).
#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

bool FlattenShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  if (x.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an input with at least 1 dimension, got shape ",
          x.ToString());
  AssignShape(attrs, out, 0, Shape{x[0], x.ProdRange(1, x.ndim())}, "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(Flatten)
    .Describe("Collapses every axis but the first: (d0, d1, ..., dn) -> (d0, d1*...*dn).")
    .AddAlias("flatten")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", FlattenShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", ReshapeLikeInputGrad);

}  // namespace op
}  // namespace weft

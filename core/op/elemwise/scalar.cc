// Arithmetic between an array and the `scalar` parameter (MXNet's `_plus_scalar` family and
// its Symbol-operator aliases); `_r...` forms put the scalar on the left. The scalar is
// converted to the array's dtype first, and the result keeps the array's dtype.
#include <cmath>
#include <string>

#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/gradients.h"
#include "core/op/elemwise/registration.h"

namespace weft {
namespace op {
namespace {

double Scalar(const NodeAttrs& attrs) { return attrs.Params<ScalarParam>().scalar; }

std::vector<GradValue> PassGrad(GradBuilder&, const NodeAttrs&, const GradArgs& a) { return {a.out_grads[0]}; }

std::vector<GradValue> NegateGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("negative", {a.out_grads[0]})};
}

// The same scalar operator applied to the out-gradient (x * s, x / s are linear in x).
std::vector<GradValue> SameOpGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  return {b.Op(attrs.op->name, {a.out_grads[0]}, ScalarArg(Scalar(attrs)))};
}

// d/dx s / x = -s / x^2
std::vector<GradValue> RDivGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  GradValue d = b.Op("_rdiv_scalar", {b.Op("square", {a.inputs[0]})}, ScalarArg(-Scalar(attrs)));
  return {b.Op("elemwise_mul", {a.out_grads[0], d})};
}

// s mod x = s - x * floor(s / x)
std::vector<GradValue> RModGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  GradValue quotient = b.Op("floor", {b.Op("_rdiv_scalar", {a.inputs[0]}, ScalarArg(Scalar(attrs)))});
  return {b.Op("negative", {b.Op("elemwise_mul", {a.out_grads[0], quotient})})};
}

// d/dx x^s = s * x^(s-1)
std::vector<GradValue> PowerGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  double s = Scalar(attrs);
  GradValue d = b.Op("_mul_scalar", {b.Op("_power_scalar", {a.inputs[0]}, ScalarArg(s - 1))}, ScalarArg(s));
  return {b.Op("elemwise_mul", {a.out_grads[0], d})};
}

// d/dx s^x = s^x * log(s)
std::vector<GradValue> RPowerGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  GradValue d = b.Op("_mul_scalar", {a.outputs[0]}, ScalarArg(std::log(Scalar(attrs))));
  return {b.Op("elemwise_mul", {a.out_grads[0], d})};
}

// The out-gradient where x wins the comparison `mask` against the scalar, 0 elsewhere.
FGradient MaskedGrad(const std::string& mask) {
  return [mask](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    GradValue m = b.Op(mask, {a.inputs[0]}, ScalarArg(Scalar(attrs)));
    return std::vector<GradValue>{b.Op("elemwise_mul", {a.out_grads[0], m})};
  };
}

// d/dx hypot(x, s) = x / hypot(x, s)
std::vector<GradValue> HypotGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  GradValue d = b.Op("elemwise_div", {a.inputs[0], a.outputs[0]});
  return {b.Op("elemwise_mul", {a.out_grads[0], d})};
}

}  // namespace

WEFT_BINARY_SCALAR_OP(_plus_scalar, add_op)
    .AddAlias("_PlusScalar")
    .Describe("x + scalar.")
    .SetAttr<FGradient>("FGradient", PassGrad);

WEFT_BINARY_SCALAR_OP(_minus_scalar, sub_op)
    .AddAlias("_MinusScalar")
    .Describe("x - scalar.")
    .SetAttr<FGradient>("FGradient", PassGrad);

// Operators of their own (not aliases) so that their sparse kernels can differ from
// _plus_scalar's: a sparse input keeps its storage and only its stored values change
// (core/op/sparse/sparse_kernels.cc); on dense arrays the same as _plus_scalar / _minus_scalar.
WEFT_BINARY_SCALAR_OP(_scatter_plus_scalar, add_op)
    .Describe("x + scalar; for a csr or row_sparse x only its stored values, keeping its storage.")
    .SetAttr<FGradient>("FGradient", PassGrad);

WEFT_BINARY_SCALAR_OP(_scatter_minus_scalar, sub_op)
    .Describe("x - scalar; for a csr or row_sparse x only its stored values, keeping its storage.")
    .SetAttr<FGradient>("FGradient", PassGrad);

WEFT_BINARY_SCALAR_OP(_rminus_scalar, Reversed<sub_op>)
    .AddAlias("_RMinusScalar")
    .Describe("scalar - x.")
    .SetAttr<FGradient>("FGradient", NegateGrad);

WEFT_BINARY_SCALAR_OP(_mul_scalar, mul_op)
    .AddAlias("_MulScalar")
    .Describe("x * scalar.")
    .SetAttr<FGradient>("FGradient", SameOpGrad);

WEFT_BINARY_SCALAR_OP(_div_scalar, div_op)
    .AddAlias("_DivScalar")
    .Describe("x / scalar (integers truncate; x / 0 is 0 for integers).")
    .SetAttr<FGradient>("FGradient", SameOpGrad);

WEFT_BINARY_SCALAR_OP(_rdiv_scalar, Reversed<div_op>)
    .AddAlias("_RDivScalar")
    .Describe("scalar / x (integers truncate; s / 0 is 0 for integers).")
    .SetAttr<FGradient>("FGradient", RDivGrad);

WEFT_BINARY_SCALAR_OP(_mod_scalar, mod_op)
    .AddAlias("_ModScalar")
    .Describe("x mod scalar with the sign of the scalar (Python's %); x mod 0 is 0.")
    .SetAttr<FGradient>("FGradient", PassGrad);

WEFT_BINARY_SCALAR_OP(_rmod_scalar, Reversed<mod_op>)
    .AddAlias("_RModScalar")
    .Describe("scalar mod x with the sign of x (Python's %); s mod 0 is 0.")
    .SetAttr<FGradient>("FGradient", RModGrad);

WEFT_BINARY_SCALAR_OP(_power_scalar, power_op)
    .AddAlias("_PowerScalar")
    .Describe("x ** scalar.")
    .SetAttr<FGradient>("FGradient", PowerGrad);

WEFT_BINARY_SCALAR_OP(_rpower_scalar, Reversed<power_op>)
    .AddAlias("_RPowerScalar")
    .Describe("scalar ** x.")
    .SetAttr<FGradient>("FGradient", RPowerGrad);

WEFT_BINARY_SCALAR_OP(_maximum_scalar, maximum_op)
    .AddAlias("_MaximumScalar")
    .Describe("The larger of x and scalar (NaN if x is NaN).")
    .SetAttr<FGradient>("FGradient", MaskedGrad("_greater_equal_scalar"));

WEFT_BINARY_SCALAR_OP(_minimum_scalar, minimum_op)
    .AddAlias("_MinimumScalar")
    .Describe("The smaller of x and scalar (NaN if x is NaN).")
    .SetAttr<FGradient>("FGradient", MaskedGrad("_lesser_equal_scalar"));

WEFT_BINARY_SCALAR_OP(_hypot_scalar, hypot_op)
    .AddAlias("_HypotScalar")
    .Describe("sqrt(x^2 + scalar^2).")
    .SetAttr<FGradient>("FGradient", HypotGrad);

}  // namespace op
}  // namespace weft

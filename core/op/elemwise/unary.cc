// Unary elementwise operators (MXNet names). Every dtype is accepted; integer arrays compute
// floating-point functions in double and convert back to their own dtype, as MXNet 1.x
// does (see math.h for the conversion rule). Gradients are built from other operators,
// with the `_backward_<name>` kernels in unary_backward.cc where the derivative needs one.
#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/gradients.h"
#include "core/op/elemwise/registration.h"

namespace weft {
namespace op {
namespace {

std::vector<GradValue> ExpGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("elemwise_mul", {a.out_grads[0], a.outputs[0]})};
}

std::vector<GradValue> LogGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("elemwise_div", {a.out_grads[0], a.inputs[0]})};
}

std::vector<GradValue> NegativeGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("negative", {a.out_grads[0]})};
}

std::vector<GradValue> CopyGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("_copy", {a.out_grads[0]})};
}

}  // namespace

WEFT_ELEMWISE_UNARY_OP(_copy, identity_op)
    .AddAlias("identity")
    .Describe("Returns a copy of the input.")
    .SetAttr<FGradient>("FGradient", CopyGrad);

WEFT_ELEMWISE_UNARY_OP(negative, negative_op)
    .Describe("Numerical negative: -x.")
    .SetAttr<FGradient>("FGradient", NegativeGrad);

WEFT_ELEMWISE_UNARY_OP(abs, abs_op)
    .Describe("Absolute value: |x|.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_abs"));

WEFT_ELEMWISE_UNARY_OP(sign, sign_op)
    .Describe("Sign: -1, 0 or 1 (NaN stays NaN).")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(reciprocal, reciprocal_op)
    .Describe("Reciprocal: 1 / x (integer 1 / 0 gives 0).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_reciprocal"));

WEFT_ELEMWISE_UNARY_OP(square, square_op)
    .Describe("Square: x * x.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_square"));

WEFT_ELEMWISE_UNARY_OP(sqrt, sqrt_op)
    .Describe("Square root.")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_sqrt"));

WEFT_ELEMWISE_UNARY_OP(rsqrt, rsqrt_op)
    .Describe("Inverse square root: 1 / sqrt(x).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_rsqrt"));

WEFT_ELEMWISE_UNARY_OP(cbrt, cbrt_op)
    .Describe("Cube root.")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_cbrt"));

WEFT_ELEMWISE_UNARY_OP(rcbrt, rcbrt_op)
    .Describe("Inverse cube root: 1 / cbrt(x).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_rcbrt"));

WEFT_ELEMWISE_UNARY_OP(exp, exp_op)
    .Describe("Natural exponential: e^x.")
    .SetAttr<FGradient>("FGradient", ExpGrad);

WEFT_ELEMWISE_UNARY_OP(expm1, expm1_op)
    .Describe("e^x - 1, accurate for small x.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_expm1"));

WEFT_ELEMWISE_UNARY_OP(log, log_op)
    .Describe("Natural logarithm.")
    .SetAttr<FGradient>("FGradient", LogGrad);

WEFT_ELEMWISE_UNARY_OP(log1p, log1p_op)
    .Describe("log(1 + x), accurate for small x.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_log1p"));

WEFT_ELEMWISE_UNARY_OP(log2, log2_op)
    .Describe("Base-2 logarithm.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_log2"));

WEFT_ELEMWISE_UNARY_OP(log10, log10_op)
    .Describe("Base-10 logarithm.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_log10"));

WEFT_ELEMWISE_UNARY_OP(sin, sin_op)
    .Describe("Sine (radians).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_sin"));

WEFT_ELEMWISE_UNARY_OP(cos, cos_op)
    .Describe("Cosine (radians).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_cos"));

WEFT_ELEMWISE_UNARY_OP(tan, tan_op)
    .Describe("Tangent (radians).")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_tan"));

WEFT_ELEMWISE_UNARY_OP(arcsin, arcsin_op)
    .Describe("Inverse sine, in [-pi/2, pi/2].")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arcsin"));

WEFT_ELEMWISE_UNARY_OP(arccos, arccos_op)
    .Describe("Inverse cosine, in [0, pi].")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arccos"));

WEFT_ELEMWISE_UNARY_OP(arctan, arctan_op)
    .Describe("Inverse tangent, in (-pi/2, pi/2).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arctan"));

WEFT_ELEMWISE_UNARY_OP(sinh, sinh_op)
    .Describe("Hyperbolic sine.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_sinh"));

WEFT_ELEMWISE_UNARY_OP(cosh, cosh_op)
    .Describe("Hyperbolic cosine.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_cosh"));

WEFT_ELEMWISE_UNARY_OP(tanh, tanh_op)
    .Describe("Hyperbolic tangent.")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_tanh"));

WEFT_ELEMWISE_UNARY_OP(arcsinh, arcsinh_op)
    .Describe("Inverse hyperbolic sine.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arcsinh"));

WEFT_ELEMWISE_UNARY_OP(arccosh, arccosh_op)
    .Describe("Inverse hyperbolic cosine.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arccosh"));

WEFT_ELEMWISE_UNARY_OP(arctanh, arctanh_op)
    .Describe("Inverse hyperbolic tangent.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_arctanh"));

WEFT_ELEMWISE_UNARY_OP(sigmoid, sigmoid_op)
    .Describe("Logistic sigmoid: 1 / (1 + e^-x).")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_sigmoid"));

WEFT_ELEMWISE_UNARY_OP(relu, relu_op)
    .Describe("Rectified linear unit: max(x, 0).")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_relu"));

WEFT_ELEMWISE_UNARY_OP(softsign, softsign_op)
    .Describe("Softsign: x / (1 + |x|).")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_softsign"));

WEFT_ELEMWISE_UNARY_OP(erf, erf_op)
    .Describe("Gauss error function.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_erf"));

WEFT_ELEMWISE_UNARY_OP(erfinv, erfinv_op)
    .Describe("Inverse of the error function, on (-1, 1).")
    .SetAttr<FGradient>("FGradient", GradFromOutput("_backward_erfinv"));

WEFT_ELEMWISE_UNARY_OP(gamma, gamma_op)
    .Describe("The gamma function.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_gamma"));

WEFT_ELEMWISE_UNARY_OP(gammaln, gammaln_op)
    .Describe("Natural logarithm of the absolute value of the gamma function.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_gammaln"));

WEFT_ELEMWISE_UNARY_OP(floor, floor_op)
    .Describe("Largest integer not above x.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(ceil, ceil_op)
    .Describe("Smallest integer not below x.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(round, round_op)
    .Describe("Nearest integer, halves away from zero.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(rint, rint_op)
    .Describe("Nearest integer; at a tie the lower one (1.5 -> 1, -1.5 -> -2), as MXNet's rint.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(trunc, trunc_op)
    .Describe("Integer part: rounds toward zero.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(fix, trunc_op)
    .Describe("Rounds toward zero (the same as trunc).")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_ELEMWISE_UNARY_OP(degrees, degrees_op)
    .Describe("Converts radians to degrees.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_degrees"));

WEFT_ELEMWISE_UNARY_OP(radians, radians_op)
    .Describe("Converts degrees to radians.")
    .SetAttr<FGradient>("FGradient", GradFromInput("_backward_radians"));

}  // namespace op
}  // namespace weft

// The `_backward_<name>` operators of unary functions whose derivative needs its own kernel:
// (out_grad, v) -> out_grad * f'(x), where v is the forward input x or, for the functions
// whose derivative is cheaper from the result (sqrt, tanh, sigmoid, ...), the forward output.
// Each has a gradient itself, built from differentiable operators, so that gradients of
// gradients (autograd.grad with create_graph=True) can be taken to any order.
#include <cmath>

#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/gradients.h"
#include "core/op/elemwise/registration.h"

// The second input is named after what the gradient reads.
#define WEFT_UNARY_BACKWARD_OP(name, OP, value)                                     \
  WEFT_REGISTER_OP(name)                                                            \
      .SetNumInputs(2)                                                              \
      .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the forward output") \
      .AddArgument(value, "NDArray-or-Symbol", "The forward " value)                \
      .Include("ElemwiseBinary")                                                    \
      .SetAttr<::weft::FCompute>("FCompute<cpu>", ::weft::op::BinaryCompute<OP>)

namespace weft {
namespace op {
namespace {

GradValue Mul(GradBuilder& b, const GradValue& x, const GradValue& y) { return b.Op("elemwise_mul", {x, y}); }
GradValue Scale(GradBuilder& b, const GradValue& x, double s) { return b.Op("_mul_scalar", {x}, ScalarArg(s)); }
GradValue Pow(GradBuilder& b, const GradValue& x, double s) { return b.Op("_power_scalar", {x}, ScalarArg(s)); }
GradValue Plus(GradBuilder& b, const GradValue& x, double s) { return b.Op("_plus_scalar", {x}, ScalarArg(s)); }
GradValue Apply(GradBuilder& b, const char* op, const GradValue& x) { return b.Op(op, {x}); }

// x * (c + s * x^2)^p: the shape of the inverse trigonometric and hyperbolic second derivatives.
GradValue XTimesQuadPow(GradBuilder& b, const GradValue& x, double c, double s, double p) {
  return Mul(b, x, Pow(b, Plus(b, Scale(b, Apply(b, "square", x), s), c), p));
}

// `_backward_f(og, v)` computes og * h(v). A FactorDerivative builds h'(v) from
// differentiable operators; v is the forward input x or output y, as the operator reads.
using FactorDerivative = GradValue (*)(GradBuilder& b, const GradValue& v);

// reciprocal: h(x) = -x^-2
GradValue ReciprocalDh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, x, -3), 2); }
// square: h(x) = 2x
GradValue SquareDh(GradBuilder& b, const GradValue& x) { return Scale(b, b.Op("ones_like", {x}), 2); }
// sqrt: h(y) = 1 / (2y)
GradValue SqrtDh(GradBuilder& b, const GradValue& y) { return Scale(b, Pow(b, y, -2), -0.5); }
// rsqrt: h(x) = -x^-1.5 / 2, so h'(x) = 3/4 x^-2.5 = 3/4 rsqrt(x)^5
GradValue RsqrtDh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, Apply(b, "rsqrt", x), 5), 0.75); }
// cbrt: h(y) = 1 / (3y^2)
GradValue CbrtDh(GradBuilder& b, const GradValue& y) { return Scale(b, Pow(b, y, -3), -2.0 / 3.0); }
// rcbrt: h(x) = -x^(-4/3) / 3, so h'(x) = 4/9 x^(-7/3) = 4/9 rcbrt(x)^7 (also right for x < 0)
GradValue RcbrtDh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, Apply(b, "rcbrt", x), 7), 4.0 / 9.0); }
// expm1: h(x) = e^x
GradValue Expm1Dh(GradBuilder& b, const GradValue& x) { return Apply(b, "exp", x); }
// log1p: h(x) = 1 / (1 + x)
GradValue Log1pDh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, Plus(b, x, 1), -2), -1); }
// log2, log10: h(x) = 1 / (x ln base)
GradValue Log2Dh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, x, -2), -1 / std::log(2.0)); }
GradValue Log10Dh(GradBuilder& b, const GradValue& x) { return Scale(b, Pow(b, x, -2), -1 / std::log(10.0)); }
// sin: h(x) = cos x; cos: h(x) = -sin x
GradValue SinDh(GradBuilder& b, const GradValue& x) { return Apply(b, "negative", Apply(b, "sin", x)); }
GradValue CosDh(GradBuilder& b, const GradValue& x) { return Apply(b, "negative", Apply(b, "cos", x)); }
// tan: h(y) = 1 + y^2
GradValue TanDh(GradBuilder& b, const GradValue& y) { return Scale(b, y, 2); }
// arcsin: h(x) = (1 - x^2)^-0.5; arccos is its negative
GradValue ArcsinDh(GradBuilder& b, const GradValue& x) { return XTimesQuadPow(b, x, 1, -1, -1.5); }
GradValue ArccosDh(GradBuilder& b, const GradValue& x) { return Scale(b, XTimesQuadPow(b, x, 1, -1, -1.5), -1); }
// arctan: h(x) = (1 + x^2)^-1
GradValue ArctanDh(GradBuilder& b, const GradValue& x) { return Scale(b, XTimesQuadPow(b, x, 1, 1, -2), -2); }
// sinh: h(x) = cosh x; cosh: h(x) = sinh x
GradValue SinhDh(GradBuilder& b, const GradValue& x) { return Apply(b, "sinh", x); }
GradValue CoshDh(GradBuilder& b, const GradValue& x) { return Apply(b, "cosh", x); }
// tanh: h(y) = 1 - y^2
GradValue TanhDh(GradBuilder& b, const GradValue& y) { return Scale(b, y, -2); }
// arcsinh: h(x) = (x^2 + 1)^-0.5; arccosh: h(x) = (x^2 - 1)^-0.5
GradValue ArcsinhDh(GradBuilder& b, const GradValue& x) { return Scale(b, XTimesQuadPow(b, x, 1, 1, -1.5), -1); }
GradValue ArccoshDh(GradBuilder& b, const GradValue& x) { return Scale(b, XTimesQuadPow(b, x, -1, 1, -1.5), -1); }
// arctanh: h(x) = (1 - x^2)^-1
GradValue ArctanhDh(GradBuilder& b, const GradValue& x) { return Scale(b, XTimesQuadPow(b, x, 1, -1, -2), 2); }
// sigmoid: h(y) = y (1 - y)
GradValue SigmoidDh(GradBuilder& b, const GradValue& y) {
  return b.Op("_rminus_scalar", {Scale(b, y, 2)}, ScalarArg(1));
}
// softsign: h(x) = (1 + |x|)^-2
GradValue SoftsignDh(GradBuilder& b, const GradValue& x) {
  return Scale(b, Mul(b, Apply(b, "sign", x), Pow(b, Plus(b, Apply(b, "abs", x), 1), -3)), -2);
}
// erf: h(x) = 2/sqrt(pi) e^(-x^2)
GradValue ErfDh(GradBuilder& b, const GradValue& x) {
  GradValue gauss = Apply(b, "exp", Scale(b, Apply(b, "square", x), -1));
  return Scale(b, Mul(b, x, gauss), -4 / std::sqrt(math::kPi));
}
// erfinv: h(y) = sqrt(pi)/2 e^(y^2)
GradValue ErfinvDh(GradBuilder& b, const GradValue& y) {
  return Scale(b, Mul(b, y, Apply(b, "exp", Apply(b, "square", y))), std::sqrt(math::kPi));
}

// og * h(v) is linear in og: its gradient to og is the same operator applied to the incoming
// gradient g, and to v it is g * og * h'(v).
FGradient BackwardGrad(FactorDerivative dh) {
  return [dh](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    const GradValue& g = a.out_grads[0];
    const GradValue& v = a.inputs[1];
    GradValue d_og = b.Op(attrs.op->name, {g, v}, attrs.dict);
    GradValue d_v = Mul(b, Mul(b, g, a.inputs[0]), dh(b, v));
    return std::vector<GradValue>{d_og, d_v};
  };
}

// For piecewise-constant factors (abs, relu, degrees, radians): h'(v) = 0 wherever it is defined.
std::vector<GradValue> ConstantFactorGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  return {b.Op(attrs.op->name, {a.out_grads[0], a.inputs[1]}, attrs.dict), b.Op("zeros_like", {a.inputs[1]})};
}

}  // namespace

WEFT_UNARY_BACKWARD_OP(_backward_abs, abs_grad, "input").Describe("Gradient of abs.")
    .SetAttr<FGradient>("FGradient", ConstantFactorGrad);
WEFT_UNARY_BACKWARD_OP(_backward_reciprocal, reciprocal_grad, "input").Describe("Gradient of reciprocal.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ReciprocalDh));
WEFT_UNARY_BACKWARD_OP(_backward_square, square_grad, "input").Describe("Gradient of square.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SquareDh));
WEFT_UNARY_BACKWARD_OP(_backward_sqrt, sqrt_grad, "output").Describe("Gradient of sqrt.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SqrtDh));
WEFT_UNARY_BACKWARD_OP(_backward_rsqrt, rsqrt_grad, "input").Describe("Gradient of rsqrt.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(RsqrtDh));
WEFT_UNARY_BACKWARD_OP(_backward_cbrt, cbrt_grad, "output").Describe("Gradient of cbrt.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(CbrtDh));
WEFT_UNARY_BACKWARD_OP(_backward_rcbrt, rcbrt_grad, "input").Describe("Gradient of rcbrt.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(RcbrtDh));
WEFT_UNARY_BACKWARD_OP(_backward_expm1, expm1_grad, "input").Describe("Gradient of expm1.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(Expm1Dh));
WEFT_UNARY_BACKWARD_OP(_backward_log1p, log1p_grad, "input").Describe("Gradient of log1p.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(Log1pDh));
WEFT_UNARY_BACKWARD_OP(_backward_log2, log2_grad, "input").Describe("Gradient of log2.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(Log2Dh));
WEFT_UNARY_BACKWARD_OP(_backward_log10, log10_grad, "input").Describe("Gradient of log10.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(Log10Dh));
WEFT_UNARY_BACKWARD_OP(_backward_sin, sin_grad, "input").Describe("Gradient of sin.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SinDh));
WEFT_UNARY_BACKWARD_OP(_backward_cos, cos_grad, "input").Describe("Gradient of cos.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(CosDh));
WEFT_UNARY_BACKWARD_OP(_backward_tan, tan_grad, "output").Describe("Gradient of tan.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(TanDh));
WEFT_UNARY_BACKWARD_OP(_backward_arcsin, arcsin_grad, "input").Describe("Gradient of arcsin.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArcsinDh));
WEFT_UNARY_BACKWARD_OP(_backward_arccos, arccos_grad, "input").Describe("Gradient of arccos.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArccosDh));
WEFT_UNARY_BACKWARD_OP(_backward_arctan, arctan_grad, "input").Describe("Gradient of arctan.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArctanDh));
WEFT_UNARY_BACKWARD_OP(_backward_sinh, sinh_grad, "input").Describe("Gradient of sinh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SinhDh));
WEFT_UNARY_BACKWARD_OP(_backward_cosh, cosh_grad, "input").Describe("Gradient of cosh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(CoshDh));
WEFT_UNARY_BACKWARD_OP(_backward_tanh, tanh_grad, "output").Describe("Gradient of tanh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(TanhDh));
WEFT_UNARY_BACKWARD_OP(_backward_arcsinh, arcsinh_grad, "input").Describe("Gradient of arcsinh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArcsinhDh));
WEFT_UNARY_BACKWARD_OP(_backward_arccosh, arccosh_grad, "input").Describe("Gradient of arccosh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArccoshDh));
WEFT_UNARY_BACKWARD_OP(_backward_arctanh, arctanh_grad, "input").Describe("Gradient of arctanh.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ArctanhDh));
WEFT_UNARY_BACKWARD_OP(_backward_sigmoid, sigmoid_grad, "output").Describe("Gradient of sigmoid.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SigmoidDh));
WEFT_UNARY_BACKWARD_OP(_backward_relu, relu_grad, "output").Describe("Gradient of relu.")
    .SetAttr<FGradient>("FGradient", ConstantFactorGrad);
WEFT_UNARY_BACKWARD_OP(_backward_softsign, softsign_grad, "input").Describe("Gradient of softsign.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(SoftsignDh));
WEFT_UNARY_BACKWARD_OP(_backward_erf, erf_grad, "input").Describe("Gradient of erf.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ErfDh));
WEFT_UNARY_BACKWARD_OP(_backward_erfinv, erfinv_grad, "output").Describe("Gradient of erfinv.")
    .SetAttr<FGradient>("FGradient", BackwardGrad(ErfinvDh));
WEFT_UNARY_BACKWARD_OP(_backward_degrees, degrees_grad, "input").Describe("Gradient of degrees.")
    .SetAttr<FGradient>("FGradient", ConstantFactorGrad);
WEFT_UNARY_BACKWARD_OP(_backward_radians, radians_grad, "input").Describe("Gradient of radians.")
    .SetAttr<FGradient>("FGradient", ConstantFactorGrad);
WEFT_UNARY_BACKWARD_OP(_backward_gamma, gamma_grad, "input").Describe("Gradient of gamma.");
WEFT_UNARY_BACKWARD_OP(_backward_gammaln, gammaln_grad, "input").Describe("Gradient of gammaln.");

}  // namespace op
}  // namespace weft

// The `_backward_<name>` operators of unary functions whose derivative needs its own kernel:
// (out_grad, v) -> out_grad * f'(x), where v is the forward input x or, for the functions
// whose derivative is cheaper from the result (sqrt, tanh, sigmoid, ...), the forward output.
#include "core/op/elemwise/functors.h"
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

WEFT_UNARY_BACKWARD_OP(_backward_abs, abs_grad, "input").Describe("Gradient of abs.");
WEFT_UNARY_BACKWARD_OP(_backward_reciprocal, reciprocal_grad, "input").Describe("Gradient of reciprocal.");
WEFT_UNARY_BACKWARD_OP(_backward_square, square_grad, "input").Describe("Gradient of square.");
WEFT_UNARY_BACKWARD_OP(_backward_sqrt, sqrt_grad, "output").Describe("Gradient of sqrt.");
WEFT_UNARY_BACKWARD_OP(_backward_rsqrt, rsqrt_grad, "input").Describe("Gradient of rsqrt.");
WEFT_UNARY_BACKWARD_OP(_backward_cbrt, cbrt_grad, "output").Describe("Gradient of cbrt.");
WEFT_UNARY_BACKWARD_OP(_backward_rcbrt, rcbrt_grad, "input").Describe("Gradient of rcbrt.");
WEFT_UNARY_BACKWARD_OP(_backward_expm1, expm1_grad, "input").Describe("Gradient of expm1.");
WEFT_UNARY_BACKWARD_OP(_backward_log1p, log1p_grad, "input").Describe("Gradient of log1p.");
WEFT_UNARY_BACKWARD_OP(_backward_log2, log2_grad, "input").Describe("Gradient of log2.");
WEFT_UNARY_BACKWARD_OP(_backward_log10, log10_grad, "input").Describe("Gradient of log10.");
WEFT_UNARY_BACKWARD_OP(_backward_sin, sin_grad, "input").Describe("Gradient of sin.");
WEFT_UNARY_BACKWARD_OP(_backward_cos, cos_grad, "input").Describe("Gradient of cos.");
WEFT_UNARY_BACKWARD_OP(_backward_tan, tan_grad, "output").Describe("Gradient of tan.");
WEFT_UNARY_BACKWARD_OP(_backward_arcsin, arcsin_grad, "input").Describe("Gradient of arcsin.");
WEFT_UNARY_BACKWARD_OP(_backward_arccos, arccos_grad, "input").Describe("Gradient of arccos.");
WEFT_UNARY_BACKWARD_OP(_backward_arctan, arctan_grad, "input").Describe("Gradient of arctan.");
WEFT_UNARY_BACKWARD_OP(_backward_sinh, sinh_grad, "input").Describe("Gradient of sinh.");
WEFT_UNARY_BACKWARD_OP(_backward_cosh, cosh_grad, "input").Describe("Gradient of cosh.");
WEFT_UNARY_BACKWARD_OP(_backward_tanh, tanh_grad, "output").Describe("Gradient of tanh.");
WEFT_UNARY_BACKWARD_OP(_backward_arcsinh, arcsinh_grad, "input").Describe("Gradient of arcsinh.");
WEFT_UNARY_BACKWARD_OP(_backward_arccosh, arccosh_grad, "input").Describe("Gradient of arccosh.");
WEFT_UNARY_BACKWARD_OP(_backward_arctanh, arctanh_grad, "input").Describe("Gradient of arctanh.");
WEFT_UNARY_BACKWARD_OP(_backward_sigmoid, sigmoid_grad, "output").Describe("Gradient of sigmoid.");
WEFT_UNARY_BACKWARD_OP(_backward_relu, relu_grad, "output").Describe("Gradient of relu.");
WEFT_UNARY_BACKWARD_OP(_backward_softsign, softsign_grad, "input").Describe("Gradient of softsign.");
WEFT_UNARY_BACKWARD_OP(_backward_erf, erf_grad, "input").Describe("Gradient of erf.");
WEFT_UNARY_BACKWARD_OP(_backward_erfinv, erfinv_grad, "output").Describe("Gradient of erfinv.");
WEFT_UNARY_BACKWARD_OP(_backward_gamma, gamma_grad, "input").Describe("Gradient of gamma.");
WEFT_UNARY_BACKWARD_OP(_backward_gammaln, gammaln_grad, "input").Describe("Gradient of gammaln.");

}  // namespace op
}  // namespace weft

// GPU versions of the unary operators (unary.cc, logic.cc) and of the `_backward_*`
// kernels of their gradients (unary_backward.cc).
#include "core/op/elemwise/compute_gpu.cuh"
#include "core/op/elemwise/functors.h"

namespace weft {
namespace op {

WEFT_GPU_UNARY_OP(_copy, identity_op);
WEFT_GPU_UNARY_OP(negative, negative_op);
WEFT_GPU_UNARY_OP(abs, abs_op);
WEFT_GPU_UNARY_OP(sign, sign_op);
WEFT_GPU_UNARY_OP(reciprocal, reciprocal_op);
WEFT_GPU_UNARY_OP(square, square_op);
WEFT_GPU_UNARY_OP(sqrt, sqrt_op);
WEFT_GPU_UNARY_OP(rsqrt, rsqrt_op);
WEFT_GPU_UNARY_OP(cbrt, cbrt_op);
WEFT_GPU_UNARY_OP(rcbrt, rcbrt_op);
WEFT_GPU_UNARY_OP(exp, exp_op);
WEFT_GPU_UNARY_OP(expm1, expm1_op);
WEFT_GPU_UNARY_OP(log, log_op);
WEFT_GPU_UNARY_OP(log1p, log1p_op);
WEFT_GPU_UNARY_OP(log2, log2_op);
WEFT_GPU_UNARY_OP(log10, log10_op);
WEFT_GPU_UNARY_OP(sin, sin_op);
WEFT_GPU_UNARY_OP(cos, cos_op);
WEFT_GPU_UNARY_OP(tan, tan_op);
WEFT_GPU_UNARY_OP(arcsin, arcsin_op);
WEFT_GPU_UNARY_OP(arccos, arccos_op);
WEFT_GPU_UNARY_OP(arctan, arctan_op);
WEFT_GPU_UNARY_OP(sinh, sinh_op);
WEFT_GPU_UNARY_OP(cosh, cosh_op);
WEFT_GPU_UNARY_OP(tanh, tanh_op);
WEFT_GPU_UNARY_OP(arcsinh, arcsinh_op);
WEFT_GPU_UNARY_OP(arccosh, arccosh_op);
WEFT_GPU_UNARY_OP(arctanh, arctanh_op);
WEFT_GPU_UNARY_OP(sigmoid, sigmoid_op);
WEFT_GPU_UNARY_OP(relu, relu_op);
WEFT_GPU_UNARY_OP(softsign, softsign_op);
WEFT_GPU_UNARY_OP(erf, erf_op);
WEFT_GPU_UNARY_OP(erfinv, erfinv_op);
WEFT_GPU_UNARY_OP(gamma, gamma_op);
WEFT_GPU_UNARY_OP(gammaln, gammaln_op);
WEFT_GPU_UNARY_OP(floor, floor_op);
WEFT_GPU_UNARY_OP(ceil, ceil_op);
WEFT_GPU_UNARY_OP(round, round_op);
WEFT_GPU_UNARY_OP(rint, rint_op);
WEFT_GPU_UNARY_OP(trunc, trunc_op);
WEFT_GPU_UNARY_OP(fix, trunc_op);
WEFT_GPU_UNARY_OP(degrees, degrees_op);
WEFT_GPU_UNARY_OP(radians, radians_op);
WEFT_GPU_UNARY_OP(logical_not, logical_not_op);

// Gradient kernels: Map(out_grad, input or output).
WEFT_GPU_BINARY_OP(_backward_abs, abs_grad);
WEFT_GPU_BINARY_OP(_backward_reciprocal, reciprocal_grad);
WEFT_GPU_BINARY_OP(_backward_square, square_grad);
WEFT_GPU_BINARY_OP(_backward_sqrt, sqrt_grad);
WEFT_GPU_BINARY_OP(_backward_rsqrt, rsqrt_grad);
WEFT_GPU_BINARY_OP(_backward_cbrt, cbrt_grad);
WEFT_GPU_BINARY_OP(_backward_rcbrt, rcbrt_grad);
WEFT_GPU_BINARY_OP(_backward_expm1, expm1_grad);
WEFT_GPU_BINARY_OP(_backward_log1p, log1p_grad);
WEFT_GPU_BINARY_OP(_backward_log2, log2_grad);
WEFT_GPU_BINARY_OP(_backward_log10, log10_grad);
WEFT_GPU_BINARY_OP(_backward_sin, sin_grad);
WEFT_GPU_BINARY_OP(_backward_cos, cos_grad);
WEFT_GPU_BINARY_OP(_backward_tan, tan_grad);
WEFT_GPU_BINARY_OP(_backward_arcsin, arcsin_grad);
WEFT_GPU_BINARY_OP(_backward_arccos, arccos_grad);
WEFT_GPU_BINARY_OP(_backward_arctan, arctan_grad);
WEFT_GPU_BINARY_OP(_backward_sinh, sinh_grad);
WEFT_GPU_BINARY_OP(_backward_cosh, cosh_grad);
WEFT_GPU_BINARY_OP(_backward_tanh, tanh_grad);
WEFT_GPU_BINARY_OP(_backward_arcsinh, arcsinh_grad);
WEFT_GPU_BINARY_OP(_backward_arccosh, arccosh_grad);
WEFT_GPU_BINARY_OP(_backward_arctanh, arctanh_grad);
WEFT_GPU_BINARY_OP(_backward_sigmoid, sigmoid_grad);
WEFT_GPU_BINARY_OP(_backward_relu, relu_grad);
WEFT_GPU_BINARY_OP(_backward_softsign, softsign_grad);
WEFT_GPU_BINARY_OP(_backward_erf, erf_grad);
WEFT_GPU_BINARY_OP(_backward_erfinv, erfinv_grad);
WEFT_GPU_BINARY_OP(_backward_gamma, gamma_grad);
WEFT_GPU_BINARY_OP(_backward_gammaln, gammaln_grad);
WEFT_GPU_BINARY_OP(_backward_degrees, degrees_grad);
WEFT_GPU_BINARY_OP(_backward_radians, radians_grad);

}  // namespace op
}  // namespace weft

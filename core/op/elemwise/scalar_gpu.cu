// GPU versions of the array-scalar operators (scalar.cc) and scalar comparisons (logic.cc).
#include "core/op/elemwise/compute_gpu.cuh"
#include "core/op/elemwise/functors.h"

namespace weft {
namespace op {

WEFT_GPU_SCALAR_OP(_plus_scalar, add_op);
WEFT_GPU_SCALAR_OP(_minus_scalar, sub_op);
WEFT_GPU_SCALAR_OP(_rminus_scalar, Reversed<sub_op>);
WEFT_GPU_SCALAR_OP(_mul_scalar, mul_op);
WEFT_GPU_SCALAR_OP(_div_scalar, div_op);
WEFT_GPU_SCALAR_OP(_rdiv_scalar, Reversed<div_op>);
WEFT_GPU_SCALAR_OP(_mod_scalar, mod_op);
WEFT_GPU_SCALAR_OP(_rmod_scalar, Reversed<mod_op>);
WEFT_GPU_SCALAR_OP(_power_scalar, power_op);
WEFT_GPU_SCALAR_OP(_rpower_scalar, Reversed<power_op>);
WEFT_GPU_SCALAR_OP(_maximum_scalar, maximum_op);
WEFT_GPU_SCALAR_OP(_minimum_scalar, minimum_op);
WEFT_GPU_SCALAR_OP(_hypot_scalar, hypot_op);

WEFT_GPU_SCALAR_OP(_equal_scalar, equal_op);
WEFT_GPU_SCALAR_OP(_not_equal_scalar, not_equal_op);
WEFT_GPU_SCALAR_OP(_greater_scalar, greater_op);
WEFT_GPU_SCALAR_OP(_greater_equal_scalar, greater_equal_op);
WEFT_GPU_SCALAR_OP(_lesser_scalar, lesser_op);
WEFT_GPU_SCALAR_OP(_lesser_equal_scalar, lesser_equal_op);
WEFT_GPU_SCALAR_OP(_logical_and_scalar, logical_and_op);
WEFT_GPU_SCALAR_OP(_logical_or_scalar, logical_or_op);
WEFT_GPU_SCALAR_OP(_logical_xor_scalar, logical_xor_op);

}  // namespace op
}  // namespace weft

// GPU versions of the same-shape binary operators (binary.cc) and comparisons (logic.cc).
#include "core/op/elemwise/compute_gpu.cuh"
#include "core/op/elemwise/functors.h"

namespace weft {
namespace op {

WEFT_GPU_BINARY_OP(elemwise_add, add_op);
WEFT_GPU_BINARY_OP(elemwise_sub, sub_op);
WEFT_GPU_BINARY_OP(elemwise_mul, mul_op);
WEFT_GPU_BINARY_OP(elemwise_div, div_op);
WEFT_GPU_BINARY_OP(_mod, mod_op);
WEFT_GPU_BINARY_OP(_power, power_op);
WEFT_GPU_BINARY_OP(_maximum, maximum_op);
WEFT_GPU_BINARY_OP(_minimum, minimum_op);
WEFT_GPU_BINARY_OP(_hypot, hypot_op);

WEFT_GPU_BINARY_OP(_equal, equal_op);
WEFT_GPU_BINARY_OP(_not_equal, not_equal_op);
WEFT_GPU_BINARY_OP(_greater, greater_op);
WEFT_GPU_BINARY_OP(_greater_equal, greater_equal_op);
WEFT_GPU_BINARY_OP(_lesser, lesser_op);
WEFT_GPU_BINARY_OP(_lesser_equal, lesser_equal_op);
WEFT_GPU_BINARY_OP(_logical_and, logical_and_op);
WEFT_GPU_BINARY_OP(_logical_or, logical_or_op);
WEFT_GPU_BINARY_OP(_logical_xor, logical_xor_op);

}  // namespace op
}  // namespace weft

// Arithmetic on two arrays with numpy broadcasting (MXNet's broadcast_* operators). Each
// input's gradient is computed in the output's shape and summed back to the input's shape
// by `_reduce_sum_to` (reduce_sum_to.cc).
#include "core/op/elemwise/binary_gradients.h"
#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/registration.h"

namespace weft {
namespace op {

WEFT_BROADCAST_BINARY_OP(broadcast_add, add_op)
    .AddAlias("broadcast_plus")
    .Describe("lhs + rhs with broadcasting.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kAdd, true));

WEFT_BROADCAST_BINARY_OP(broadcast_sub, sub_op)
    .AddAlias("broadcast_minus")
    .Describe("lhs - rhs with broadcasting.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kSub, true));

WEFT_BROADCAST_BINARY_OP(broadcast_mul, mul_op)
    .Describe("lhs * rhs with broadcasting.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMul, true));

WEFT_BROADCAST_BINARY_OP(broadcast_div, div_op)
    .Describe("lhs / rhs with broadcasting (integers truncate; x / 0 is 0 for integers).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kDiv, true));

WEFT_BROADCAST_BINARY_OP(broadcast_mod, mod_op)
    .Describe("lhs mod rhs with the sign of rhs (Python's %), with broadcasting; x mod 0 is 0.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMod, true));

WEFT_BROADCAST_BINARY_OP(broadcast_power, power_op)
    .Describe("lhs ** rhs with broadcasting.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kPower, true));

WEFT_BROADCAST_BINARY_OP(broadcast_maximum, maximum_op)
    .Describe("The larger of lhs and rhs with broadcasting (NaN if either is NaN).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMaximum, true));

WEFT_BROADCAST_BINARY_OP(broadcast_minimum, minimum_op)
    .Describe("The smaller of lhs and rhs with broadcasting (NaN if either is NaN).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMinimum, true));

WEFT_BROADCAST_BINARY_OP(broadcast_hypot, hypot_op)
    .Describe("sqrt(lhs^2 + rhs^2) with broadcasting.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kHypot, true));

}  // namespace op
}  // namespace weft

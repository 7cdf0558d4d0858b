// Arithmetic on two arrays of one shape (MXNet's elemwise_* and their Symbol-operator
// aliases). Integer division and mod by zero give 0; see functors.h for every dtype rule.
#include "core/op/elemwise/binary_gradients.h"
#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/registration.h"

namespace weft {
namespace op {

WEFT_ELEMWISE_BINARY_OP(elemwise_add, add_op)
    .AddAlias("_add").AddAlias("_plus").AddAlias("_Plus")
    .Describe("lhs + rhs, elementwise, for arrays of one shape.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kAdd, false));

WEFT_ELEMWISE_BINARY_OP(elemwise_sub, sub_op)
    .AddAlias("_sub").AddAlias("_minus").AddAlias("_Minus")
    .Describe("lhs - rhs, elementwise, for arrays of one shape.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kSub, false));

WEFT_ELEMWISE_BINARY_OP(elemwise_mul, mul_op)
    .AddAlias("_mul").AddAlias("_Mul")
    .Describe("lhs * rhs, elementwise, for arrays of one shape.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMul, false));

WEFT_ELEMWISE_BINARY_OP(elemwise_div, div_op)
    .AddAlias("_div").AddAlias("_Div")
    .Describe("lhs / rhs, elementwise, for arrays of one shape (integers truncate; x / 0 is 0 for integers).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kDiv, false));

// An operator of its own (not an alias) so that its sparse kernel can differ from
// elemwise_div's: a row_sparse lhs keeps its rows (core/op/sparse/sparse_kernels.cc).
WEFT_ELEMWISE_BINARY_OP(_scatter_elemwise_div, div_op)
    .Describe("lhs / rhs, elementwise; for a row_sparse lhs only its stored rows are computed and the result is "
              "row_sparse with those rows, otherwise the same as elemwise_div.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kDiv, false));

WEFT_ELEMWISE_BINARY_OP(_mod, mod_op)
    .AddAlias("_Mod")
    .Describe("lhs mod rhs with the sign of rhs (Python's %), elementwise; x mod 0 is 0.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMod, false));

WEFT_ELEMWISE_BINARY_OP(_power, power_op)
    .AddAlias("_Power")
    .Describe("lhs ** rhs, elementwise, for arrays of one shape.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kPower, false));

WEFT_ELEMWISE_BINARY_OP(_maximum, maximum_op)
    .AddAlias("_Maximum")
    .Describe("The larger of lhs and rhs, elementwise (NaN if either is NaN).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMaximum, false));

WEFT_ELEMWISE_BINARY_OP(_minimum, minimum_op)
    .AddAlias("_Minimum")
    .Describe("The smaller of lhs and rhs, elementwise (NaN if either is NaN).")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kMinimum, false));

WEFT_ELEMWISE_BINARY_OP(_hypot, hypot_op)
    .AddAlias("_Hypot")
    .Describe("sqrt(lhs^2 + rhs^2), elementwise, without undue overflow.")
    .SetAttr<FGradient>("FGradient", BinaryGradient(BinaryFn::kHypot, false));

}  // namespace op
}  // namespace weft

// Comparisons and logic in every form: same-shape (`_equal`), with a scalar
// (`_equal_scalar`) and with broadcasting (`broadcast_equal`), plus `logical_not`. Results
// are 1 or 0 in the inputs' dtype, as in MXNet 1.x; gradients are zero.
#include "core/op/elemwise/functors.h"
#include "core/op/elemwise/gradients.h"
#include "core/op/elemwise/registration.h"

// One predicate in its three forms. `alias` and `scalar_alias` are the Symbol-operator
// names MXNet registers.
#define WEFT_PREDICATE_OPS(name, OP, alias, scalar_alias, doc)                                     \
  WEFT_ELEMWISE_BINARY_OP(_##name, OP)                                                             \
      .AddAlias(alias)                                                                              \
      .Describe(std::string(doc) + ", elementwise, for arrays of one shape: 1 where true, 0 elsewhere.") \
      .SetAttr<FGradient>("FGradient", ZeroGradient);                                              \
  WEFT_BINARY_SCALAR_OP(_##name##_scalar, OP)                                                      \
      .AddAlias(scalar_alias)                                                                       \
      .Describe(std::string(doc) + " with rhs = scalar: 1 where true, 0 elsewhere.")              \
      .SetAttr<FGradient>("FGradient", ZeroGradient);                                              \
  WEFT_BROADCAST_BINARY_OP(broadcast_##name, OP)                                                   \
      .Describe(std::string(doc) + " with broadcasting: 1 where true, 0 elsewhere.")              \
      .SetAttr<FGradient>("FGradient", ZeroGradient)

namespace weft {
namespace op {

WEFT_PREDICATE_OPS(equal, equal_op, "_Equal", "_EqualScalar", "lhs == rhs");
WEFT_PREDICATE_OPS(not_equal, not_equal_op, "_Not_Equal", "_NotEqualScalar", "lhs != rhs");
WEFT_PREDICATE_OPS(greater, greater_op, "_Greater", "_GreaterScalar", "lhs > rhs");
WEFT_PREDICATE_OPS(greater_equal, greater_equal_op, "_Greater_Equal", "_GreaterEqualScalar", "lhs >= rhs");
WEFT_PREDICATE_OPS(lesser, lesser_op, "_Lesser", "_LesserScalar", "lhs < rhs");
WEFT_PREDICATE_OPS(lesser_equal, lesser_equal_op, "_Lesser_Equal", "_LesserEqualScalar", "lhs <= rhs");
WEFT_PREDICATE_OPS(logical_and, logical_and_op, "_Logical_And", "_LogicalAndScalar", "lhs and rhs (nonzero is true)");
WEFT_PREDICATE_OPS(logical_or, logical_or_op, "_Logical_Or", "_LogicalOrScalar", "lhs or rhs (nonzero is true)");
WEFT_PREDICATE_OPS(logical_xor, logical_xor_op, "_Logical_Xor", "_LogicalXorScalar", "lhs xor rhs (nonzero is true)");

WEFT_ELEMWISE_UNARY_OP(logical_not, logical_not_op)
    .Describe("Logical not: 1 where x is 0, 0 elsewhere, in x's dtype.")
    .SetAttr<FGradient>("FGradient", ZeroGradient);

}  // namespace op
}  // namespace weft

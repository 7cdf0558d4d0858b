// The parameters of the operators with a scalar operand (`_plus_scalar`, `_rdiv_scalar`,
// `_greater_scalar`, ...), named as in MXNet 1.x.
#pragma once

#include "core/base/param.h"

namespace weft {
namespace op {

struct ScalarParam {
  double scalar = 1.0;
  bool is_int = true;
};

WEFT_PARAM_SCHEMA(ScalarParam, s) {
  s.Field("scalar", &ScalarParam::scalar)
      .Default(1.0)
      .Describe("The scalar operand. It is converted to the array's dtype first (integer dtypes truncate it).");
  s.Field("is_int", &ScalarParam::is_int)
      .Default(true)
      .Describe("Whether the front end saw an integer scalar; accepted for MXNet compatibility, the result's "
                "dtype is always the array's.");
}

}  // namespace op
}  // namespace weft

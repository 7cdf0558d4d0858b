// dot and batch_dot: parameters and how their inputs are seen as (batches of) matrices,
// shared by the CPU compute functions and any device backend.
//
// dot(a, b) contracts the last axis of a with the first axis of b: a is seen as the
// matrix (prod(a.shape[:-1]), a.shape[-1]) and b as (b.shape[0], prod(b.shape[1:])); with
// transpose_a, a is (a.shape[0], prod(a.shape[1:])) used transposed, and with
// transpose_b, b is (prod(b.shape[:-1]), b.shape[-1]) used transposed. The result has
// a's kept axes then b's; two vectors give shape (1,), as in MXNet 1.x.
// batch_dot(a, b) multiplies matching matrices of two (..., M, K) x (..., K, N) batches.
#pragma once

#include <string>

#include "core/base/param.h"
#include "core/op/linalg/gemm.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct DotParam {
  bool transpose_a = false;
  bool transpose_b = false;
  std::string forward_stype;
};

WEFT_PARAM_SCHEMA(DotParam, s) {
  s.Field("transpose_a", &DotParam::transpose_a).Default(false).Describe("Use the transpose of the first input.");
  s.Field("transpose_b", &DotParam::transpose_b).Default(false).Describe("Use the transpose of the second input.");
  s.Field("forward_stype", &DotParam::forward_stype)
      .Default("None")
      .Choices({"None", "default", "csr", "row_sparse"})
      .Describe("The storage type of the output. None: MXNet's rule (csr.T . dense is row_sparse, dense . csr is csr, the rest dense); another value asks for that storage type when an input is sparse (a product without a sparse kernel is computed densely, then converted; dense inputs give a dense result).");
}

// A product C (m x n) = op(A) (m x k) * op(B) (k x n), batched `batch` times, with the
// operands' layouts (data pointers left unset) and the output shape.
struct DotPlan {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmOperand a, b;
  Shape out;
};

// Throws kShape naming the operator, both shapes and the flags when they do not fit.
DotPlan PlanDot(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs);
DotPlan PlanBatchDot(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs);

}  // namespace op
}  // namespace weft

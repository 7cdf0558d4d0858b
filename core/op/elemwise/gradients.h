// Small builders for the gradients of elementwise operators, written as calls to other
// registered operators (see GradBuilder in registry.h).
#pragma once

#include <string>
#include <vector>

#include "core/base/param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

// d input = backward(out_grad, input): `backward` computes out_grad * f'(input).
inline FGradient GradFromInput(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
    return std::vector<GradValue>{b.Op(backward, {a.out_grads[0], a.inputs[0]})};
  };
}

// d input = backward(out_grad, output), for derivatives cheaper from the result (sqrt, tanh).
inline FGradient GradFromOutput(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
    return std::vector<GradValue>{b.Op(backward, {a.out_grads[0], a.outputs[0]})};
  };
}

// Piecewise-constant functions (rounding, comparisons, logic): zero for every input.
inline std::vector<GradValue> ZeroGradient(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  std::vector<GradValue> grads;
  for (const auto& x : a.inputs) grads.push_back(b.Op("zeros_like", {x}));
  return grads;
}

// The `scalar` parameter of a scalar operator, written so that it parses back exactly.
inline KwArgs ScalarArg(double v) { return {{"scalar", param_parse::Format(v)}}; }

}  // namespace op
}  // namespace weft

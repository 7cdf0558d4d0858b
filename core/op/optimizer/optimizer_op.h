// Shared pieces of the update operators (core/op/optimizer/*.cc): MXNet 1.x's optimizer
// kernels, each one fused pass over a parameter that reads the weight, the gradient and the
// states and writes the new weight (the output, normally given as out=weight) and the
// states (inputs the operator writes, declared with FMutateInputs) element by element,
// with no temporaries.
//
// Every kernel computes in the accumulation type of the weight (float for float16, the
// type itself for float32 and float64) and takes the hyper-parameters as doubles converted
// once to that type, so float32 updates round like MXNet's float kernels. The formulas
// themselves are in update_math.h, shared with the CUDA kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/op/op_util.h"
#include "core/op/optimizer/update_math.h"

namespace weft {
namespace op {
namespace optim {

// Runs body(i) for every element, split over threads for large arrays. Bodies capture by
// value and each range runs on its own copy: the pointers and hyper-parameters then live
// in registers (the compiler cannot assume that of a shared closure, which the stores
// through the state pointers might alias) and the loop vectorises.
template <typename Body>
inline void ForEach(int64_t n, const Body& body) {
  ParallelFor(n, kElemGrain, [&body](int64_t b, int64_t e) {
    Body local = body;
    for (int64_t i = b; i < e; ++i) local(i);
  });
}

// Shape rule of an update whose inputs [0, n_same) and every output share the weight's
// shape; inputs from n_same on (scalars such as LAMB's norms) have shape (1,).
inline bool UpdateShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, size_t n_same) {
  Shape s = (*in)[0];
  for (size_t i = 1; i < n_same && !s.known_ndim(); ++i) s = (*in)[i];
  if (!s.known_ndim()) s = (*out)[0];
  if (!s.known_ndim()) return false;
  for (size_t i = 0; i < n_same; ++i) AssignShape(attrs, in, i, s, "input");
  for (size_t i = n_same; i < in->size(); ++i) AssignShape(attrs, in, i, Shape{1}, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, s, "output");
  for (const auto& x : *in) if (!x.is_known()) return false;
  return s.is_known();
}

// Type rule of the multi-precision updates: weight and grad (inputs 0, 1) and the output
// share the weight's dtype; the states from input 2 on (momentum, master weight) are
// float32.
inline bool MPUpdateType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*in)[1] != DType::kUnknown ? (*in)[1] : (*out)[0];
  for (size_t i = 2; i < in->size(); ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point weights, got ", DTypeName(t));
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, in, 1, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

// Every update operator includes the attribute group "OptimizerUpdate" (registered in
// sgd.cc): opaque to fusion, and output 0 may be the weight's own memory (out=weight).
// None registers FGradient: updates are not differentiable.

}  // namespace optim
}  // namespace op
}  // namespace weft

// The parameters of _sample_multinomial, shared by its CPU (multinomial.cc) and GPU
// (multinomial_gpu.cu) code.
#pragma once

#include "core/base/dtype.h"
#include "core/base/shape.h"

namespace weft {
namespace op {

struct MultinomialParam {
  Shape shape = Shape::Scalar();
  bool get_prob = false;
  DType dtype = DType::kInt32;
};

}  // namespace op
}  // namespace weft

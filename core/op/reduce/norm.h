// The parameters of norm, shared by its CPU (norm.cc) and GPU (norm_gpu.cu) code.
#pragma once

#include <optional>

#include "core/base/dtype.h"
#include "core/base/shape.h"

namespace weft {
namespace op {

struct NormParam {
  int ord = 2;
  std::optional<Shape> axis;
  std::optional<DType> out_dtype;
  bool keepdims = false;
};

}  // namespace op
}  // namespace weft

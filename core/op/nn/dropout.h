// Dropout's parameters, shared by its CPU (dropout.cc) and GPU (dropout_gpu.cu) code.
#pragma once

#include <string>

#include "core/base/shape.h"

namespace weft {
namespace op {

struct DropoutParam {
  double p = 0.5;
  std::string mode = "training";
  Shape axes = Shape::Scalar();
  bool cudnn_off = false;
};

}  // namespace op
}  // namespace weft

// The parameters of Pad, shared by its CPU (pad.cc) and GPU (pad_gpu.cu) code.
#pragma once

#include <string>

#include "core/base/shape.h"

namespace weft {
namespace op {

struct PadParam {
  std::string mode = "constant";
  Shape pad_width;
  double constant_value = 0;
};

}  // namespace op
}  // namespace weft

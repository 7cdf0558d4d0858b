// one_hot's parameters, shared by its CPU (one_hot.cc) and GPU (indexing_gpu.cu) code.
#pragma once

#include "core/base/dtype.h"

namespace weft {
namespace op {

struct OneHotParam {
  int depth = 0;
  double on_value = 1;
  double off_value = 0;
  DType dtype = DType::kFloat32;
};

}  // namespace op
}  // namespace weft

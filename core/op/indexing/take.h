// take's parameters, shared by its CPU (take.cc) and GPU (indexing_gpu.cu) code.
#pragma once

#include <string>

namespace weft {
namespace op {

struct TakeParam {
  int axis = 0;
  std::string mode = "clip";
};

}  // namespace op
}  // namespace weft

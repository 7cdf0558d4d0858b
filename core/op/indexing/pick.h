// pick's parameters, shared by its CPU (pick.cc) and GPU (indexing_gpu.cu) code.
#pragma once

#include <optional>
#include <string>

namespace weft {
namespace op {

struct PickParam {
  std::optional<int> axis = -1;
  bool keepdims = false;
  std::string mode = "clip";
};

}  // namespace op
}  // namespace weft

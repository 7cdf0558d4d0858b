// The parameters of argmax and argmin, shared by their CPU (arg_search.cc) and GPU
// (arg_search_gpu.cu) code.
#pragma once

#include <optional>

namespace weft {
namespace op {

struct ReduceAxisParam {
  std::optional<int> axis;
  bool keepdims = false;
};

}  // namespace op
}  // namespace weft

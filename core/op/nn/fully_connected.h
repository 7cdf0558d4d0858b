// FullyConnected's parameters, shared by its CPU (fully_connected.cc) and GPU (fully_connected_gpu.cu) code.
#pragma once

namespace weft {
namespace op {

struct FullyConnectedParam {
  int num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
};

}  // namespace op
}  // namespace weft

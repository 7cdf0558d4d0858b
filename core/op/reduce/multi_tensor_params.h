// The parameter structs of the multi-array helpers (multi_tensor.cc), shared with their
// GPU code (multi_tensor_gpu.cu); the schemas stay beside the CPU registrations.
#pragma once

namespace weft {
namespace op {

struct AllFiniteParam {
  bool init_output = true;
};

struct MultiArraysParam {
  int num_arrays = 1;
  bool init_output = true;
};

struct CountParam {
  int num_arrays = 1;
};

struct LARSParam {
  double eta = 0, eps = 0, rescale_grad = 1.0;
};

}  // namespace op
}  // namespace weft

// The parameters of UpSampling, shared by its CPU (upsampling.cc) and GPU (upsampling_gpu.cu) code.
#pragma once

#include <string>

namespace weft {
namespace op {

struct UpSamplingParam {
  int scale = 1;
  int num_filter = 0;
  std::string sample_type;
  std::string multi_input_mode = "concat";
  int num_args = 1;
  int workspace = 512;
};

}  // namespace op
}  // namespace weft

// The parameters of SoftmaxOutput, the regression outputs, _sparse_softmax_cross_entropy and MakeLoss,
// shared by their CPU (loss_output.cc) and GPU (loss_output_gpu.cu) code.
#pragma once

#include <string>

namespace weft {
namespace op {

struct SoftmaxOutputParam {
  double grad_scale = 1;
  double ignore_label = -1;
  bool multi_output = false;
  bool use_ignore = false;
  bool preserve_shape = false;
  std::string normalization = "null";
  bool out_grad = false;
  double smooth_alpha = 0;
};

struct SparseCEParam {
  int axis = -1;
};

struct RegressionOutputParam {
  double grad_scale = 1;
};

struct MakeLossParam {
  double grad_scale = 1;
  double valid_thresh = 0;
  std::string normalization = "null";
};

}  // namespace op
}  // namespace weft

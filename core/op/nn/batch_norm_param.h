// Parameters of BatchNorm, shared by its CPU (batch_norm.cc) and GPU (batch_norm_gpu.cu) code.
#pragma once

#include "core/op/registry.h"

namespace weft {
namespace op {

struct BatchNormParam {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
  int axis = 1;
  bool cudnn_off = false;
};

WEFT_PARAM_SCHEMA(BatchNormParam, s) {
  s.Field("eps", &BatchNormParam::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
  s.Field("momentum", &BatchNormParam::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving statistics.");
  s.Field("fix_gamma", &BatchNormParam::fix_gamma).Default(true).Describe("Treat gamma as 1 (its gradient is 0).");
  s.Field("use_global_stats", &BatchNormParam::use_global_stats)
      .Default(false)
      .Describe("Use the moving statistics in training too.");
  s.Field("output_mean_var", &BatchNormParam::output_mean_var).Default(false).Describe("Also output mean and var.");
  s.Field("axis", &BatchNormParam::axis).Default(1).Describe("The channel axis.");
  s.Field("cudnn_off", &BatchNormParam::cudnn_off).Default(false).Describe("Do not use cuDNN (GPU only).");
}

}  // namespace op
}  // namespace weft

// Parameters of LayerNorm, GroupNorm and InstanceNorm, shared by their CPU (layer_norm.cc) and
// GPU (layer_norm_gpu.cu) code.
#pragma once

#include "core/op/registry.h"

namespace weft {
namespace op {

struct LayerNormParam {
  int axis = -1;
  double eps = 1e-5;
  bool output_mean_var = false;
};

WEFT_PARAM_SCHEMA(LayerNormParam, s) {
  s.Field("axis", &LayerNormParam::axis).Default(-1).Describe("The axis to normalise over.");
  s.Field("eps", &LayerNormParam::eps).Default(1e-5).Min(0).Describe("Added to the variance before the square root.");
  s.Field("output_mean_var", &LayerNormParam::output_mean_var).Default(false).Describe("Also output mean and std.");
}

struct GroupNormParam {
  int num_groups = 1;
  double eps = 1e-5;
  bool output_mean_var = false;
};

WEFT_PARAM_SCHEMA(GroupNormParam, s) {
  s.Field("num_groups", &GroupNormParam::num_groups).Default(1).Min(1).Describe("Number of channel groups.");
  s.Field("eps", &GroupNormParam::eps).Default(1e-5).Min(0).Describe("Added to the variance before the square root.");
  s.Field("output_mean_var", &GroupNormParam::output_mean_var).Default(false).Describe("Also output mean and std.");
}

struct InstanceNormParam {
  double eps = 1e-3;
};

WEFT_PARAM_SCHEMA(InstanceNormParam, s) {
  s.Field("eps", &InstanceNormParam::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
}

}  // namespace op
}  // namespace weft

// Parameters of softmax, log_softmax, softmin and SoftmaxActivation, shared by their CPU
// (softmax.cc) and GPU (softmax_gpu.cu) code.
#pragma once

#include <optional>
#include <string>

#include "core/op/registry.h"

namespace weft {
namespace op {

struct SoftmaxParam {
  int axis = -1;
  std::optional<double> temperature;
  std::optional<DType> dtype;
  bool use_length = false;
};

WEFT_PARAM_SCHEMA(SoftmaxParam, s) {
  s.Field("axis", &SoftmaxParam::axis).Default(-1).Describe("The axis along which to compute.");
  s.Field("temperature", &SoftmaxParam::temperature).Default(std::nullopt).Describe("Temperature (None: 1).");
  s.Field("dtype", &SoftmaxParam::dtype)
      .Default(std::nullopt)
      .Describe("Output dtype: float16, float32 or float64 (None: the data's).");
  s.Field("use_length", &SoftmaxParam::use_length).Default(false).Describe("Mask each row beyond `length`.");
}

struct SoftmaxActivationParam {
  std::string mode = "instance";
};

WEFT_PARAM_SCHEMA(SoftmaxActivationParam, s) {
  s.Field("mode", &SoftmaxActivationParam::mode)
      .Default("instance")
      .Choices({"instance", "channel"})
      .Describe("instance: over all axes but the first; channel: over axis 1.");
}

}  // namespace op
}  // namespace weft

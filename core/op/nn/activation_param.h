// Parameters of Activation and LeakyReLU, shared by their CPU (activation.cc) and GPU
// (activation_gpu.cu) code.
#pragma once

#include <string>

#include "core/op/registry.h"

namespace weft {
namespace op {

struct ActivationParam {
  std::string act_type;
};

WEFT_PARAM_SCHEMA(ActivationParam, s) {
  s.Field("act_type", &ActivationParam::act_type)
      .Choices({"relu", "sigmoid", "tanh", "softrelu", "softsign"})
      .Describe("The activation function.");
}

// Activation's act_type as the kernels of both devices switch on it (the schema's Choices
// have already refused any other string).
enum class Act { kRelu, kSigmoid, kTanh, kSoftrelu, kSoftsign };

inline Act ParseAct(const std::string& s) {
  if (s == "relu") return Act::kRelu;
  if (s == "sigmoid") return Act::kSigmoid;
  if (s == "tanh") return Act::kTanh;
  if (s == "softrelu") return Act::kSoftrelu;
  return Act::kSoftsign;
}

struct LeakyReLUParam {
  std::string act_type = "leaky";
  double slope = 0.25;
  double lower_bound = 0.125;
  double upper_bound = 0.334;
};

WEFT_PARAM_SCHEMA(LeakyReLUParam, s) {
  s.Field("act_type", &LeakyReLUParam::act_type)
      .Default("leaky")
      .Choices({"elu", "gelu", "leaky", "prelu", "rrelu", "selu"})
      .Describe("The activation function.");
  s.Field("slope", &LeakyReLUParam::slope).Default(0.25).Describe("Negative slope (leaky) or alpha (elu).");
  s.Field("lower_bound", &LeakyReLUParam::lower_bound).Default(0.125).Describe("Lower bound of rrelu's slope.");
  s.Field("upper_bound", &LeakyReLUParam::upper_bound).Default(0.334).Describe("Upper bound of rrelu's slope.");
}

}  // namespace op
}  // namespace weft

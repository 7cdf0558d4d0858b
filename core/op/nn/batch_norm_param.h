// Parameters of BatchNorm, shared by its CPU (batch_norm.cc) and GPU (batch_norm_gpu.cu) code.
#pragma once

#include <optional>

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
  // MXNet 1.9's calibrated output range for its oneDNN int8 path, kept with the node so that
  // quantizing a calibrated graph gives the quantized BatchNorm its range.
  std::optional<double> min_calib_range, max_calib_range;
};

// BatchNorm's fields, declared for any struct that extends BatchNormParam (the quantized
// BatchNorm requires the calibrated range that the float one only keeps).
template <typename P>
void BatchNormFields(ParamSchema<P>& s) {
  s.template Field<double>("eps", &P::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
  s.template Field<double>("momentum", &P::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving statistics.");
  s.template Field<bool>("fix_gamma", &P::fix_gamma).Default(true).Describe("Treat gamma as 1 (its gradient is 0).");
  s.template Field<bool>("use_global_stats", &P::use_global_stats)
      .Default(false)
      .Describe("Use the moving statistics in training too.");
  s.template Field<bool>("output_mean_var", &P::output_mean_var).Default(false).Describe("Also output mean and var.");
  s.template Field<int>("axis", &P::axis).Default(1).Describe("The channel axis.");
  s.template Field<bool>("cudnn_off", &P::cudnn_off).Default(false).Describe("Do not use cuDNN (GPU only).");
  s.template Field<std::optional<double>>("min_calib_range", &P::min_calib_range)
      .Default(std::nullopt)
      .Describe("The calibrated minimum of the output, for the int8 path (MXNet's oneDNN quantization).");
  s.template Field<std::optional<double>>("max_calib_range", &P::max_calib_range)
      .Default(std::nullopt)
      .Describe("The calibrated maximum of the output, for the int8 path (MXNet's oneDNN quantization).");
}

WEFT_PARAM_SCHEMA(BatchNormParam, s) { BatchNormFields(s); }

// Whether a call is of _BatchNorm_replay, whose input 4 is a saved 1 / sqrt(var + eps).
bool IsReplay(const NodeAttrs& attrs);

}  // namespace op
}  // namespace weft

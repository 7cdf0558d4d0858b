// The parameter structs of the update operators, shared by their CPU registrations
// (sgd.cc, adam.cc, adaptive.cc, multi_update.cc) and their GPU code (*_gpu.cu); the
// schemas (names, defaults, docs) stay beside the CPU registrations.
#pragma once

#include <vector>

namespace weft {
namespace op {

// sgd.cc
struct SGDParam {
  double lr = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  bool lazy_update = true;
};

struct SGDMomParam {
  double lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
  bool lazy_update = true;
};

struct NAGMomParam {
  double lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct SignSGDParam {
  double lr = 0, wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct SignumParam {
  double lr = 0, momentum = 0, wd = 0, rescale_grad = 1, clip_gradient = -1, wd_lh = 0;
};

struct MultiSGDParam {
  std::vector<double> lrs, wds;
  double rescale_grad = 1, clip_gradient = -1;
  int num_weights = 1;
};

struct MultiSGDMomParam {
  std::vector<double> lrs, wds;
  double momentum = 0, rescale_grad = 1, clip_gradient = -1;
  int num_weights = 1;
};

// preloaded_multi_*: as multi_*, with the learning rates and weight decays given as two
// float32 arrays of num_weights values after the groups (LARS computes them on the device).
struct PreloadedMultiSGDParam {
  double rescale_grad = 1, clip_gradient = -1;
  int num_weights = 1;
};

struct PreloadedMultiSGDMomParam {
  double momentum = 0, rescale_grad = 1, clip_gradient = -1;
  int num_weights = 1;
};

// adam.cc
struct AdamParam {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, wd = 0, rescale_grad = 1, clip_gradient = -1;
  bool lazy_update = true;
};

struct AdamWParam {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, wd = 0, eta = 0, clip_gradient = -1;
};

struct LambPhase1Param {
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6;
  int t = 0;
  bool bias_correction = true;
  double wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct LambPhase2Param {
  double lr = 0, lower_bound = -1, upper_bound = -1;
};

// adaptive.cc
struct RMSPropParam {
  double lr = 0, gamma1 = 0.95, epsilon = 1e-8, wd = 0, rescale_grad = 1, clip_gradient = -1, clip_weights = -1;
};

struct RMSPropAlexParam {
  double lr = 0, gamma1 = 0.95, gamma2 = 0.9, epsilon = 1e-8, wd = 0, rescale_grad = 1, clip_gradient = -1,
         clip_weights = -1;
};

struct AdagradParam {
  double lr = 0, epsilon = 1e-7, wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct AdaDeltaParam {
  double rho = 0.9, epsilon = 1e-5, wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct FtrlParam {
  double lr = 0, lamda1 = 0.01, beta = 1, wd = 0, rescale_grad = 1, clip_gradient = -1;
};

struct FtmlParam {
  double lr = 0, beta1 = 0.6, beta2 = 0.999, epsilon = 1e-8;
  int t = 0;
  double wd = 0, rescale_grad = 1, clip_grad = -1;
};

// multi_update.cc
struct MultiAdamWParam {
  std::vector<double> lrs, wds, etas;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, clip_gradient = -1;
  int num_weights = 1;
};

struct MultiLAMBParam {
  std::vector<double> learning_rates, wds, step_count;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6, rescale_grad = 1, lower_bound = -1, upper_bound = -1,
         clip_gradient = -1;
  bool bias_correction = true;
  int num_tensors = 1;
};

struct GroupAdagradParam {
  double lr = 0, rescale_grad = 1, clip_gradient = -1, epsilon = 1e-5;
};

}  // namespace op
}  // namespace weft

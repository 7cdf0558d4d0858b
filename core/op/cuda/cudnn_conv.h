// Convolutions through cuDNN 9's graph API: forward, data gradient and weight gradient of
// one convolution geometry (op::ConvGeom), with plans cached per thread
// (core/op/cuda/conv_plan_key.h). Only for builds with WEFT_USE_CUDNN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/dtype.h"
#include "core/op/cuda/conv_plan_key.h"
#include "core/op/nn/conv_common.h"

namespace weft {
namespace cuda {

// The tuning mode of a cudnn_tune parameter; "None" takes MXNET_CUDNN_AUTOTUNE_DEFAULT
// (0 heuristics, 1 limited workspace, 2 fastest; Weft's default is 0, see
// docs/env_vars.md).
ConvTune ConvTuneOf(const std::string& cudnn_tune);

// WEFT_CUDNN_ALLOW_TF32 (default 1): whether float32 convolutions may run on TF32 tensor
// cores. Read at every call, so a process can switch it.
bool CudnnAllowTf32();

// Runs one pass of the convolution whose input, weight and output are x, w and y (the pass
// writes y, x or w for kForward, kBackwardData, kBackwardFilter, as `req` says, and reads
// the other two) on the run context's stream, with its workspace from the operator's
// first requested resource (temp space). Returns false, having done nothing, when cuDNN
// has no engine for the problem (the caller then runs its own kernel); throws naming the
// call when cuDNN fails otherwise.
bool CudnnConvolution(const char* op, const OpContext& ctx, ConvPass pass, const op::ConvGeom& g, DType dt,
                      const void* x, const void* w, const void* y, OpReq req, ConvTune tune, int64_t workspace_limit);

// How many plans (and known no-engine problems) the calling thread has cached.
size_t CudnnConvPlanCount();

}  // namespace cuda
}  // namespace weft

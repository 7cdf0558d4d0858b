// Convolution and Deconvolution on the GPU (CUDA builds): the passes of one ConvGeom
// through cuDNN (core/op/cuda/cudnn_conv.h) where Weft is built with it and cudnn_off is
// not set, else through Weft's own direct kernels (conv_gpu_kernels.cu), which are slow
// but cover every geometry the CPU operators accept. Everything runs on the operation's
// stream without waiting for it.
#pragma once

#include <cstdint>
#include <string>

#include "core/op/nn/conv_common.h"

namespace weft {
namespace op {

enum class GpuConvPass : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

// The parameters of Convolution / Deconvolution that choose how the GPU runs them.
struct GpuConvOptions {
  bool cudnn_off = false;
  std::string cudnn_tune = "None";
  int64_t workspace_mb = 1024;
};

// One pass of the convolution whose input, weight and output are x, w and y: kForward
// writes y from x and w, kBackwardData writes x from y and w, kBackwardFilter writes w
// from x and y, as `req` says.
void GpuConvolution(const char* op, const OpContext& ctx, GpuConvPass pass, const ConvGeom& g, DType dt,
                    const void* x, const void* w, const void* y, OpReq req, const GpuConvOptions& opt);

// Weft's own kernels for the same passes (what cudnn_off selects).
void GpuConvolutionDirect(const char* op, const OpContext& ctx, GpuConvPass pass, const ConvGeom& g, DType dt,
                          const void* x, const void* w, const void* y, OpReq req);

// y[:, ch, ...] += bias[ch] over (n, channels, spatial).
void GpuAddBias(const char* op, const OpContext& ctx, DType dt, void* y, const void* bias, int64_t n, int64_t channels,
                int64_t spatial);
// db[ch] = (or +=, per req) the sum of dy[:, ch, ...].
void GpuBiasGrad(const char* op, const OpContext& ctx, DType dt, const void* dy, void* db, OpReq req, int64_t n,
                 int64_t channels, int64_t spatial);

}  // namespace op
}  // namespace weft

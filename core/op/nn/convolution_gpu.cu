// GPU versions of Convolution, Deconvolution and their `_backward_*` operators: cuDNN's
// graph API where Weft is built with cuDNN and cudnn_off is not set (falling back to Weft's
// direct kernels for the rare problem cuDNN has no engine for), the direct kernels
// otherwise. Deconvolution is the convolution run backwards: its forward is the
// convolution's data gradient, its data gradient the convolution's forward.
#include <cuda_runtime.h>

#include "core/base/cuda_utils.h"
#include "core/op/nn/conv_gpu.h"
#ifdef WEFT_USE_CUDNN
#include "core/op/cuda/cudnn_conv.h"
#endif

namespace weft {
namespace op {

void GpuConvolution(const char* op, const OpContext& ctx, GpuConvPass pass, const ConvGeom& g, DType dt,
                    const void* x, const void* w, const void* y, OpReq req, const GpuConvOptions& opt) {
  if (req == OpReq::kNullOp) return;
  const int64_t x_elems = g.n * g.c * g.in[0] * g.in[1] * g.in[2];
  const int64_t w_elems = g.f * (g.c / g.g) * g.k[0] * g.k[1] * g.k[2];
  const int64_t y_elems = g.n * g.f * g.out[0] * g.out[1] * g.out[2];
  const void* out = pass == GpuConvPass::kForward ? y : pass == GpuConvPass::kBackwardData ? x : w;
  const int64_t out_elems = pass == GpuConvPass::kForward ? y_elems : pass == GpuConvPass::kBackwardData ? x_elems : w_elems;
  if (out_elems == 0) return;
  if (x_elems == 0 || w_elems == 0 || y_elems == 0) {
    // Nothing to sum over (an empty batch, say): the gradient is zero.
    if (req != OpReq::kAddTo) {
      cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
      Context dev = ctx.run_ctx.ctx;
      cuda::Check(cudaMemsetAsync(const_cast<void*>(out), 0, static_cast<size_t>(out_elems) * DTypeSize(dt),
                                  cuda::StreamOf(ctx.run_ctx.stream)),
                  "cudaMemsetAsync", &dev);
    }
    return;
  }
#ifdef WEFT_USE_CUDNN
  if (!opt.cudnn_off &&
      cuda::CudnnConvolution(op, ctx, static_cast<cuda::ConvPass>(pass), g, dt, x, w, y, req,
                             cuda::ConvTuneOf(opt.cudnn_tune), opt.workspace_mb << 20))
    return;
#endif
  GpuConvolutionDirect(op, ctx, pass, g, dt, x, w, y, req);
}

namespace {

template <typename Param>
GpuConvOptions OptionsOf(const Param& p) {
  GpuConvOptions o;
  o.cudnn_off = p.cudnn_off;
  o.cudnn_tune = p.cudnn_tune;
  o.workspace_mb = p.workspace;
  return o;
}

void ConvolutionComputeGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<ConvolutionParam>();
  const char* op = attrs.op->name.c_str();
  ConvGeom g = ConvolutionGeom(attrs, in[0].shape);
  DType dt = in[0].dtype;
  GpuConvolution(op, ctx, GpuConvPass::kForward, g, dt, in[0].dptr, in[1].dptr, out[0].dptr, req[0], OptionsOf(p));
  if (!p.no_bias) GpuAddBias(op, ctx, dt, out[0].dptr, in[2].dptr, g.n, g.f, g.OutSize());
}

// Inputs: ograd, data, weight. Outputs: data, weight and (unless no_bias) bias gradients.
void ConvolutionBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ConvolutionParam>();
  const char* op = attrs.op->name.c_str();
  ConvGeom g = ConvolutionGeom(attrs, in[1].shape);
  DType dt = in[0].dtype;
  GpuConvOptions o = OptionsOf(p);
  GpuConvolution(op, ctx, GpuConvPass::kBackwardData, g, dt, out[0].dptr, in[2].dptr, in[0].dptr, req[0], o);
  GpuConvolution(op, ctx, GpuConvPass::kBackwardFilter, g, dt, in[1].dptr, out[1].dptr, in[0].dptr, req[1], o);
  if (!p.no_bias) GpuBiasGrad(op, ctx, dt, in[0].dptr, out[2].dptr, req[2], g.n, g.f, g.OutSize());
}

// In the geometry of the convolution it transposes, Deconvolution's output is that
// convolution's input x and its data is the convolution's output y.
void DeconvolutionComputeGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<DeconvolutionParam>();
  const char* op = attrs.op->name.c_str();
  ConvGeom g = DeconvolutionGeom(attrs, in[0].shape);
  DType dt = in[0].dtype;
  GpuConvolution(op, ctx, GpuConvPass::kBackwardData, g, dt, out[0].dptr, in[1].dptr, in[0].dptr, req[0],
                 OptionsOf(p));
  if (!p.no_bias) GpuAddBias(op, ctx, dt, out[0].dptr, in[2].dptr, g.n, g.c, g.InSize());
}

void DeconvolutionBackwardGpu(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<DeconvolutionParam>();
  const char* op = attrs.op->name.c_str();
  ConvGeom g = DeconvolutionGeom(attrs, in[1].shape);
  DType dt = in[0].dtype;
  GpuConvOptions o = OptionsOf(p);
  GpuConvolution(op, ctx, GpuConvPass::kForward, g, dt, in[0].dptr, in[2].dptr, out[0].dptr, req[0], o);
  GpuConvolution(op, ctx, GpuConvPass::kBackwardFilter, g, dt, in[0].dptr, out[1].dptr, in[1].dptr, req[1], o);
  if (!p.no_bias) GpuBiasGrad(op, ctx, dt, in[0].dptr, out[2].dptr, req[2], g.n, g.c, g.InSize());
}

}  // namespace

WEFT_REGISTER_OP(Convolution).SetAttr<FCompute>("FCompute<gpu>", ConvolutionComputeGpu);
WEFT_REGISTER_OP(_backward_Convolution).SetAttr<FCompute>("FCompute<gpu>", ConvolutionBackwardGpu);
WEFT_REGISTER_OP(Deconvolution).SetAttr<FCompute>("FCompute<gpu>", DeconvolutionComputeGpu);
WEFT_REGISTER_OP(_backward_Deconvolution).SetAttr<FCompute>("FCompute<gpu>", DeconvolutionBackwardGpu);

}  // namespace op
}  // namespace weft

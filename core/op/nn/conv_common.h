// Convolution, Deconvolution and Pooling: parameters, geometry and the CPU kernels they
// share.
//
// Every kernel works on one convolution geometry: an input (n, c, in...) seen through a
// kernel (f, c/g, k...) gives an output (n, f, out...). Deconvolution is the same
// arithmetic with the roles swapped (its forward is the convolution's data gradient and
// its data gradient is the convolution's forward), so both operators run the three
// kernels below. float32 runs on oneDNN primitives when Weft is built with it; every other
// dtype (and float32 without oneDNN, or a geometry oneDNN refuses) runs on im2col + Gemm.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/base/param.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct ConvolutionParam {
  Shape kernel, stride, dilate, pad;
  int num_filter = 0;
  int num_group = 1;
  int64_t workspace = 1024;
  bool no_bias = false;
  std::string cudnn_tune;
  bool cudnn_off = false;
  std::string layout;
};

struct DeconvolutionParam {
  Shape kernel, stride, dilate, pad, adj, target_shape;
  int num_filter = 0;
  int num_group = 1;
  int64_t workspace = 512;
  bool no_bias = true;
  std::string cudnn_tune;
  bool cudnn_off = false;
  std::string layout;
};

struct PoolingParam {
  Shape kernel, stride, pad;
  std::string pool_type;
  bool global_pool = false;
  bool cudnn_off = false;
  std::string pooling_convention;
  std::optional<int> p_value;
  // MXNet's optional<bool>: "None" behaves as True.
  std::string count_include_pad;
  std::string layout;
};

inline const std::vector<std::string>& LayoutChoices() {
  static const std::vector<std::string> c = {"None", "NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"};
  return c;
}
inline const std::vector<std::string>& TuneChoices() {
  static const std::vector<std::string> c = {"None", "off", "limited_workspace", "fastest"};
  return c;
}

// Convolution's fields, declared for any struct that extends ConvolutionParam (the
// quantized convolution adds its own after them).
template <typename P>
void ConvolutionFields(ParamSchema<P>& s) {
  s.template Field<Shape>("kernel", &P::kernel).Describe("Convolution kernel size: (w,), (h, w) or (d, h, w).");
  s.template Field<Shape>("stride", &P::stride).Default(Shape::Scalar()).Describe("Stride; 1 per axis when empty.");
  s.template Field<Shape>("dilate", &P::dilate).Default(Shape::Scalar()).Describe("Dilation; 1 per axis when empty.");
  s.template Field<Shape>("pad", &P::pad).Default(Shape::Scalar()).Describe("Zero padding on both sides; 0 when empty.");
  s.template Field<int>("num_filter", &P::num_filter).Range(1, 100000).Describe("Number of output channels.");
  s.template Field<int>("num_group", &P::num_group).Default(1).Range(1, 100000).Describe("Number of groups.");
  s.template Field<int64_t>("workspace", &P::workspace).Default(1024).Min(0).Describe("Workspace limit in MB (unused on the CPU).");
  s.template Field<bool>("no_bias", &P::no_bias).Default(false).Describe("Whether to leave out the bias input.");
  s.template Field<std::string>("cudnn_tune", &P::cudnn_tune).Default("None").Choices(TuneChoices()).Describe("cuDNN algorithm choice (unused on the CPU).");
  s.template Field<bool>("cudnn_off", &P::cudnn_off).Default(false).Describe("Turn off cuDNN (unused on the CPU).");
  s.template Field<std::string>("layout", &P::layout).Default("None").Choices(LayoutChoices()).Describe("Data layout: NCW, NCHW, NCDHW (None), or channels-last NWC, NHWC, NDHWC (CPU only).");
}

WEFT_PARAM_SCHEMA(ConvolutionParam, s) { ConvolutionFields(s); }

WEFT_PARAM_SCHEMA(DeconvolutionParam, s) {
  s.Field("kernel", &DeconvolutionParam::kernel).Describe("Deconvolution kernel size: (w,), (h, w) or (d, h, w).");
  s.Field("stride", &DeconvolutionParam::stride).Default(Shape::Scalar()).Describe("Stride; 1 per axis when empty.");
  s.Field("dilate", &DeconvolutionParam::dilate).Default(Shape::Scalar()).Describe("Dilation; 1 per axis when empty.");
  s.Field("pad", &DeconvolutionParam::pad).Default(Shape::Scalar()).Describe("Padding removed from both sides of the output; 0 when empty.");
  s.Field("adj", &DeconvolutionParam::adj).Default(Shape::Scalar()).Describe("Extra cells added at the end of each output axis.");
  s.Field("target_shape", &DeconvolutionParam::target_shape).Default(Shape::Scalar()).Describe("Output spatial shape; when given, pad and adj are derived from it.");
  s.Field("num_filter", &DeconvolutionParam::num_filter).Range(1, 100000).Describe("Number of output channels.");
  s.Field("num_group", &DeconvolutionParam::num_group).Default(1).Range(1, 100000).Describe("Number of groups.");
  s.Field("workspace", &DeconvolutionParam::workspace).Default(512).Min(0).Describe("Workspace limit in MB (unused on the CPU).");
  s.Field("no_bias", &DeconvolutionParam::no_bias).Default(true).Describe("Whether to leave out the bias input.");
  s.Field("cudnn_tune", &DeconvolutionParam::cudnn_tune).Default("None").Choices(TuneChoices()).Describe("cuDNN algorithm choice (unused on the CPU).");
  s.Field("cudnn_off", &DeconvolutionParam::cudnn_off).Default(false).Describe("Turn off cuDNN (unused on the CPU).");
  s.Field("layout", &DeconvolutionParam::layout).Default("None").Choices(LayoutChoices()).Describe("Data layout: NCW, NCHW, NCDHW (None), or channels-last NWC, NHWC, NDHWC (CPU only).");
}

WEFT_PARAM_SCHEMA(PoolingParam, s) {
  s.Field("kernel", &PoolingParam::kernel).Default(Shape::Scalar()).Describe("Pooling kernel size: (w,), (h, w) or (d, h, w).");
  s.Field("pool_type", &PoolingParam::pool_type).Default("max").Choices({"max", "avg", "sum", "lp"}).Describe("Pooling type.");
  s.Field("global_pool", &PoolingParam::global_pool).Default(false).Describe("Pool over the whole spatial extent, ignoring kernel, stride and pad.");
  s.Field("cudnn_off", &PoolingParam::cudnn_off).Default(false).Describe("Turn off cuDNN (unused on the CPU).");
  s.Field("pooling_convention", &PoolingParam::pooling_convention).Default("valid").Choices({"full", "valid", "same"}).Describe("How the output size is rounded: valid (floor), full (ceil), same (ceil(in / stride), 1-D only).");
  s.Field("stride", &PoolingParam::stride).Default(Shape::Scalar()).Describe("Stride; 1 per axis when empty.");
  s.Field("pad", &PoolingParam::pad).Default(Shape::Scalar()).Describe("Padding on both sides; 0 when empty.");
  s.Field("p_value", &PoolingParam::p_value).Default(std::nullopt).Range(1, 1000).Describe("The p of Lp pooling (required for pool_type='lp').");
  s.Field("count_include_pad", &PoolingParam::count_include_pad).Default("None").Choices({"None", "True", "False", "true", "false", "1", "0"}).Describe("Whether padded cells count in the divisor of average pooling (None means True).");
  s.Field("layout", &PoolingParam::layout).Default("None").Choices(LayoutChoices()).Describe("Data layout: NCW, NCHW, NCDHW (None), or channels-last NWC, NHWC, NDHWC (CPU only).");
}

// One convolution's geometry. Spatial axes are right-aligned in arrays of 3: a 2-D
// convolution has in[0] = out[0] = k[0] = 1 and its (h, w) in entries 1 and 2.
struct ConvGeom {
  int nd = 2;                                // spatial axes as given
  int64_t n = 0, c = 0, f = 0, g = 1;        // batch, input channels, output channels, groups
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pl[3] = {0, 0, 0};
  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t OutSize() const { return out[0] * out[1] * out[2]; }
  int64_t KSize() const { return k[0] * k[1] * k[2]; }
  // Padding after the last input cell that the output's last window reaches (negative when
  // the window stops short of the end).
  int64_t PadRight(int i) const { return (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i] - pl[i]; }
};

// Whether oneDNN's blocked kernels would pad this ungrouped convolution's channels to
// whole blocks of the CPU (16 with AVX-512, 8 otherwise) wastefully: neither side a whole
// number of blocks and the padded input times output channels at least 1.5x the real
// ones, from 16 input channels up (fewer have rules of their own). LeNet's 20 -> 50 on
// AVX-512 computes 32 x 64, 2.05x, the case this was measured on. Such a
// convolution runs as oneDNN's gemm convolution on NCHW in all three passes and stays out
// of the training regions: LeNet's training step at batch 64 on Zen 4 then took 0.84-0.95
// of the time, in 12 interleaved pairs of runs. False without oneDNN.
bool ConvPadsChannelsWastefully(int64_t c, int64_t f, int64_t groups);

// y (n, f, out...) = conv(x, w) (+ bias) written or added per `req`.
void ConvForward(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* x, const void* w,
                 const void* bias, void* y, OpReq req);
// dx (n, c, in...) from dy (n, f, out...) and w.
void ConvBackwardData(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* dy,
                      const void* w, void* dx, OpReq req);
// dw (f, c/g, k...) and, when db is given, db (f,) from x and dy.
void ConvBackwardWeights(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* x,
                         const void* dy, void* dw, OpReq req_w, void* db, OpReq req_b);
// Both gradients of a convolution: ConvBackwardData then ConvBackwardWeights, with dy
// reordered to oneDNN's blocked layout once for the two passes where both use it.
void ConvBackward(const char* op, const OpContext& ctx, const ConvGeom& g, DType dt, const void* dy, const void* x,
                  const void* w, void* dx, OpReq req_d, void* dw, OpReq req_w, void* db, OpReq req_b);
// y[:, ch, ...] += bias[ch].
void AddBias(DType dt, void* y, const void* bias, int64_t n, int64_t channels, int64_t spatial);
// db[ch] = (or +=) the sum of dy[:, ch, ...].
void BiasGrad(DType dt, const void* dy, void* db, OpReq req, int64_t n, int64_t channels, int64_t spatial);

// The geometry of Convolution / Deconvolution on `data` (the CPU and GPU kernels share
// it); throws naming the operator, the parameter and the shapes when they do not fit.
// With unknown dims the matching entries are -1.
// `channels_last` lets a channels-last layout through: `data` is then (n, in..., c) and the
// geometry is that of its channels-first transpose. Without it (the GPU kernels, which run
// channels-first only) such a layout is refused.
ConvGeom ConvolutionGeom(const NodeAttrs& attrs, const Shape& data, bool channels_last = false);
// The same for parameters `p` of operator `op` (the quantized convolution's extend them).
ConvGeom ConvolutionGeom(const std::string& op, const ConvolutionParam& p, const Shape& data,
                         bool channels_last = false);
ConvGeom DeconvolutionGeom(const NodeAttrs& attrs, const Shape& data, bool channels_last = false);

// Formats a spatial tuple "(a,b)" from the first nd entries.
std::string TupleString(const int64_t* v, int nd);

// kernel, stride, dilate and pad checked and filled with their defaults; entries [0, nd).
struct WindowAxes {
  int nd = 0;
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
};
// Throws kValue naming `op` and the parameter: a kernel of other than 1-3 axes or with a
// zero entry, a stride/dilate/pad of another length than the kernel, a zero stride or
// dilation. `dilate` may be null (Pooling has none).
WindowAxes ParseWindow(const std::string& op, const Shape& kernel, const Shape& stride, const Shape* dilate,
                       const Shape& pad);
// Checks that `layout` has nd spatial axes and is channels-first, or channels-last when
// `channels_last` allows it (kUnsupported otherwise), and that data has rank nd + 2.
void CheckLayoutAndRank(const std::string& op, const std::string& layout, int nd, const Shape& data,
                        bool channels_last = false);

// ---------------------------------------------------------------- channels-last layouts
// NWC, NHWC and NDHWC run the channels-first kernels on transposed copies: data, weights
// and outputs of a channels-last operator are the channels-first ones with the channel
// axis (axis 1) moved to the end, for the weights too ((f, k..., c/g) for (f, c/g, k...)).
bool IsChannelsLast(const std::string& layout);
// NWC -> NCW, NHWC -> NCHW, NDHWC -> NCDHW.
std::string ChannelsFirstLayout(const std::string& layout);
// (n, s..., c) -> (n, c, s...); shapes of rank below 3 or unknown rank come back unchanged.
Shape ToChannelsFirst(const Shape& s);
// (n, c, s...) -> (n, s..., c), the inverse.
Shape ToChannelsLast(const Shape& s);
// Runs the channels-first `inner` (given attributes `cf_attrs` whose layout is the
// channels-first one) on channels-first copies of every input and output of rank 3 or
// more, then moves the outputs back to channels-last (honouring `req`). CPU only.
void RunOnChannelsFirst(const NodeAttrs& cf_attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out, const FCompute& inner);

// RunOnChannelsFirst for an operator with parameters P (which have a `layout` field).
template <typename P>
void RunChannelsFirst(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out, const FCompute& inner) {
  auto p = std::make_shared<P>(attrs.Params<P>());
  p->layout = ChannelsFirstLayout(p->layout);
  NodeAttrs cf = attrs;
  cf.parsed = p;
  for (auto& kv : cf.dict)
    if (kv.first == "layout") kv.second = p->layout;
  RunOnChannelsFirst(cf, ctx, in, req, out, inner);
}

}  // namespace op
}  // namespace weft

// Dropout with MXNet's parameters (p, mode, axes, cudnn_off) and outputs (output, mask;
// only the output is visible). When it applies (training mode, or mode='always') each
// mask element is 1/(1-p) with probability 1-p and 0 otherwise, and output = data * mask;
// with `axes` the mask has size 1 along those axes and is shared across them. Otherwise
// the output is the data and the mask is all ones, so that the backward (ograd * mask) is
// right in both cases.
//
// The mask is drawn from the context's random resource: one Philox block gives the words
// of four consecutive mask elements, so a result depends only on the seed and the draws
// before it, never on the thread count.
#include <cmath>
#include <limits>
#include <string>

#include "core/op/nn/dropout.h"
#include "core/op/op_util.h"
#include "core/op/strided_walk.h"
#include "core/resource/philox.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(DropoutParam, s) {
  s.Field("p", &DropoutParam::p).Default(0.5).Range(0, 1).Describe("Fraction of the input that is dropped.");
  s.Field("mode", &DropoutParam::mode)
      .Default("training")
      .Choices({"training", "always"})
      .Describe("'training': drop only in training mode; 'always': drop in prediction mode too.");
  s.Field("axes", &DropoutParam::axes)
      .Default(Shape::Scalar())
      .Describe("Axes along which one mask value is shared (variational dropout).");
  s.Field("cudnn_off", &DropoutParam::cudnn_off).Default(false).Describe("Accepted for compatibility (no cuDNN here).");
}

namespace {

constexpr int64_t kMaskGrain = 1 << 12;

// The mask shape: the data's with 1 along `axes`.
Shape MaskShape(const NodeAttrs& attrs, const Shape& data) {
  Shape m = data;
  for (int64_t a : attrs.Params<DropoutParam>().axes) m[CheckAxis(attrs, a, data.ndim(), "axes")] = 1;
  return m;
}

// Strides that walk the mask while the data is walked in row-major order.
std::vector<int64_t> MaskStrides(const Shape& data, const Shape& mask) {
  std::vector<int64_t> st(data.ndim(), 0);
  int64_t s = 1;
  for (int d = data.ndim() - 1; d >= 0; --d) {
    st[d] = mask[d] == data[d] ? s : 0;
    s *= mask[d];
  }
  return st;
}

bool DropoutShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape data = (*in)[0];
  if (!data.known_ndim()) data = (*out)[0];
  if (!data.is_known()) return false;
  AssignShape(attrs, in, 0, data, "input");
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, out, 1, MaskShape(attrs, data), "output");
  return true;
}

bool Applies(const NodeAttrs& attrs, const OpContext& ctx) {
  return ctx.is_train || attrs.Params<DropoutParam>().mode == "always";
}

// y (op)= x * broadcast(mask).
template <typename T>
void MultiplyByMask(const TBlob& x, const T* mask, const Shape& mask_shape, const TBlob& y, OpReq req) {
  using A = typename AccType<T>::type;
  const T* xp = x.ptr<T>();
  T* yp = y.ptr<T>();
  ForEachStridedRow(x.shape, MaskStrides(x.shape, mask_shape), 0, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
    if (req == OpReq::kAddTo) {
      for (int64_t k = 0; k < n; ++k)
        yp[i + k] = static_cast<T>(static_cast<A>(yp[i + k]) +
                                   static_cast<A>(xp[i + k]) * static_cast<A>(mask[off + k * step]));
    } else {
      for (int64_t k = 0; k < n; ++k)
        yp[i + k] = static_cast<T>(static_cast<A>(xp[i + k]) * static_cast<A>(mask[off + k * step]));
    }
  });
}

// Fills m[0, n) with 1/(1-p) (kept) or 0 (dropped) from a fresh draw.
template <typename T>
void DrawMask(const NodeAttrs& attrs, const OpContext& ctx, T* m, int64_t n, double p) {
  WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].random != nullptr, kInternal, "Operator '", attrs.op->name,
             "': expected a random resource, got none (FResourceRequest not honoured)");
  RandomState* state = ctx.requested[0].random;
  const int64_t blocks = DropoutMaskBlocks(n);
  const uint64_t first = state->Reserve(static_cast<uint64_t>(blocks));
  const Philox4x32 gen(state->seed);
  const uint64_t threshold = DropoutKeepThreshold(p);
  const T scale = static_cast<T>(DropoutScale(p));
  // Dropped is 0 * scale, as MXNet computes it: with p = 1 the scale is infinite and every
  // mask value NaN (MXNet's output for p = 1), not a silent 0.
  const T zero = static_cast<T>(0.0 * DropoutScale(p));
  ParallelFor(blocks, kMaskGrain, [&](int64_t b, int64_t e) {
    bool keep[4];
    for (int64_t blk = b; blk < e; ++blk) {
      const int cnt = DropoutKeepBlock(gen, first, blk, threshold, n, keep);
      for (int k = 0; k < cnt; ++k) m[blk * 4 + k] = keep[k] ? scale : zero;
    }
  });
}

void DropoutCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& prm = attrs.Params<DropoutParam>();
  const TBlob& mask = out[1];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "': input 'data'", {
    if (!Applies(attrs, ctx)) {
      CopyWithReq(in[0], out[0], req[0]);
      if (req[1] != OpReq::kNullOp) {
        T* mp = mask.ptr<T>();
        const int64_t n = mask.Size();
        ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) Store(mp + i, req[1], 1.0);
        });
      }
      return;
    }
    // The fresh mask goes straight into the mask output unless that output accumulates
    // or is not wanted; then it is drawn into temporary space first.
    const int64_t n = mask.Size();
    const bool direct = req[1] == OpReq::kWriteTo || req[1] == OpReq::kWriteInplace;
    T* m = direct ? mask.ptr<T>()
                  : static_cast<T*>(ctx.requested.at(1).temp->Get(static_cast<size_t>(n) * sizeof(T)));
    DrawMask(attrs, ctx, m, n, prm.p);
    if (req[0] != OpReq::kNullOp) MultiplyByMask(in[0], m, mask.shape, out[0], req[0]);
    if (req[1] == OpReq::kAddTo) {
      T* mp = mask.ptr<T>();
      for (int64_t i = 0; i < n; ++i) mp[i] = static_cast<T>(mp[i] + m[i]);
    }
  });
}

// Inputs: ograd, mask. Output: ograd * broadcast(mask).
void DropoutBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "': input 'ograd'", {
    MultiplyByMask(in[0], in[1].ptr<T>(), in[1].shape, out[0], req[0]);
  });
}

bool DropoutBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape g = (*in)[0];
  if (!g.known_ndim()) g = (*out)[0];
  if (!g.is_known()) return false;
  AssignShape(attrs, in, 0, g, "input");
  AssignShape(attrs, in, 1, MaskShape(attrs, g), "input");
  AssignShape(attrs, out, 0, g, "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(Dropout)
    .Describe(
        "Sets each element (or, with axes, each slice along those axes) to zero with probability p and scales the "
        "rest by 1/(1-p), in training mode or with mode='always'; the identity otherwise. The second output, the "
        "mask (hidden), holds the factor each element was multiplied by.")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input array")
    .SetParams<DropoutParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "mask"}; })
    .SetAttr<FInferShape>("FInferShape", DropoutShape)
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) {
                                 return std::vector<ResourceRequest>{{ResourceType::kRandom},
                                                                     {ResourceType::kTempSpace}};
                               })
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DropoutCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_Dropout", {a.out_grads[0], a.outputs[1]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_Dropout)
    .Describe("Gradient of Dropout: the output gradient times the mask.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("mask", "NDArray-or-Symbol", "The forward mask")
    .SetParams<DropoutParam>()
    .SetAttr<FInferShape>("FInferShape", DropoutBackwardShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<FCompute>("FCompute<cpu>", DropoutBackward)
    // Linear in ograd; the mask is drawn, not computed from the data, so it takes no gradient.
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_Dropout", {a.out_grads[0], a.inputs[1]}, attrs.dict),
                                    b.Op("zeros_like", {a.inputs[1]})};
    });

}  // namespace op
}  // namespace weft

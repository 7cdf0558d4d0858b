// BatchNorm (MXNet 1.x names and defaults): normalises every channel (the `axis`
// dimension) over all other dimensions, then scales by gamma and shifts by beta.
//
// Inputs: data, gamma, beta, moving_mean, moving_var; the last two are auxiliary states the
// operator writes (FMutateInputs). Outputs: out, mean, var; mean and var (the statistics
// used, per channel) are visible only with output_mean_var. As in MXNet, "var" holds the
// inverse standard deviation 1 / sqrt(var + eps) (what the backward needs), not the variance. In training (and without
// use_global_stats) the batch statistics are used (biased variance, as MXNet) and the
// moving ones are updated as moving = moving * momentum + batch * (1 - momentum); otherwise
// the moving statistics are used. fix_gamma treats gamma as 1 and gives it a zero gradient.
//
// Half-precision data (float16, bfloat16) takes float32 parameters and statistics, as in
// MXNet (Gluon's BatchNorm keeps them in float32 when a network is cast to float16; automatic
// mixed precision and oneDNN's bf16 batch normalisation do the same): the data, output and
// data gradient are half, everything per channel stays float32. Parameters given in the
// data's own half type are accepted too; unknown ones are inferred as float32.
//
// The data is seen as outer x C x inner; a channel's elements are `outer` contiguous runs of
// `inner` values, so one thread handles whole channels and the inner loops vectorise.
// (oneDNN 2.6's batch_normalization was slower than these loops for training forward +
// backward on ResNet shapes here, so it is not used.)
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op/nn/batch_norm_param.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

namespace {

using nn::Acc;
using nn::Put;

bool BatchNormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<BatchNormParam>();
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.known_ndim()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  int axis = CheckAxis(attrs, p.axis, d.ndim());
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  Shape c{d[axis]};
  for (int i = 1; i < 5; ++i) AssignShape(attrs, in, i, c, "input");
  AssignShape(attrs, out, 1, c, "output");
  AssignShape(attrs, out, 2, c, "output");
  return d.is_known();
}

// Types in two groups: the data group (data, output, and for the backward out_grad and the
// data gradient) has one floating type; the per-channel group (gamma, beta, statistics and
// their gradients) has the same, except that with bfloat16 data it may be float32 (the
// default when nothing says otherwise).
bool TwoGroupType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out,
                  const std::vector<int>& data_in, const std::vector<int>& data_out) {
  auto in_data = [&](int i) { return std::find(data_in.begin(), data_in.end(), i) != data_in.end(); };
  auto out_data = [&](int i) { return std::find(data_out.begin(), data_out.end(), i) != data_out.end(); };
  DType dt = DType::kUnknown, pt = DType::kUnknown;
  for (int i = 0; i < static_cast<int>(in->size()); ++i) {
    DType t = (*in)[i];
    if (t == DType::kUnknown) continue;
    if (in_data(i) && dt == DType::kUnknown) dt = t;
    if (!in_data(i) && pt == DType::kUnknown) pt = t;
  }
  for (int i = 0; i < static_cast<int>(out->size()); ++i) {
    DType t = (*out)[i];
    if (t == DType::kUnknown) continue;
    if (out_data(i) && dt == DType::kUnknown) dt = t;
    if (!out_data(i) && pt == DType::kUnknown) pt = t;
  }
  // Without a known data type the parameters' type is taken, as before mixed types existed.
  if (dt == DType::kUnknown) dt = pt;
  if (dt == DType::kUnknown) return false;
  if (!IsFloatDType(dt))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point data, got ", DTypeName(dt));
  if (dt != DType::kBfloat16 && dt != DType::kFloat16)
    pt = dt;
  else if (pt != dt)
    pt = DType::kFloat32;  // any type but float32 and the data's own is refused below
  for (int i = 0; i < static_cast<int>(in->size()); ++i) AssignType(attrs, in, i, in_data(i) ? dt : pt, "input");
  for (int i = 0; i < static_cast<int>(out->size()); ++i) AssignType(attrs, out, i, out_data(i) ? dt : pt, "output");
  return true;
}

bool BatchNormType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return TwoGroupType(attrs, in, out, {0}, {0});
}

bool BatchNormBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return TwoGroupType(attrs, in, out, {0, 1}, {0});
}

// Whether this call normalises with the batch's own statistics.
bool UsesBatchStats(const BatchNormParam& p, const OpContext& ctx) { return ctx.is_train && !p.use_global_stats; }

// With `replay` (_BatchNorm_replay), in[4] holds a saved 1 / sqrt(var + eps) rather than a variance.
template <typename T, typename P = T>
void Forward(const BatchNormParam& p, bool batch_stats, bool replay, const std::vector<TBlob>& in,
             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  using A = Acc<T>;
  int axis = p.axis < 0 ? p.axis + in[0].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[0].shape, axis);
  const int64_t outer = sp.outer, C = sp.n, inner = sp.inner, stride = C * inner;
  const A count = static_cast<A>(outer * inner);
  const T* x = in[0].ptr<T>();
  const P* gamma = in[1].ptr<P>();
  const P* beta = in[2].ptr<P>();
  P* mmean = in[3].ptr<P>();
  P* mvar = in[4].ptr<P>();
  T* y = out[0].ptr<T>();
  P* smean = out[1].ptr<P>();
  P* svar = out[2].ptr<P>();
  const A mom = static_cast<A>(p.momentum);
  ParallelFor(C, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      A mean, var;
      if (batch_stats) {
        // One pass for both moments (the data is read twice in all, not three times: this
        // loop is memory-bound). The values are shifted by the channel's first one so that
        // E[d^2] - E[d]^2 does not cancel catastrophically when the mean is large against
        // the spread.
        const A shift = count > 0 ? static_cast<A>(x[c * inner]) : A(0);
        A sum = 0, sq = 0;
        for (int64_t o = 0; o < outer; ++o) {
          const T* xr = x + o * stride + c * inner;
#pragma omp simd reduction(+ : sum, sq)
          for (int64_t i = 0; i < inner; ++i) {
            A d = static_cast<A>(xr[i]) - shift;
            sum += d;
            sq += d * d;
          }
        }
        A md = count > 0 ? sum / count : A(0);
        mean = shift + md;
        var = count > 0 ? std::max(A(0), sq / count - md * md) : A(0);
        mmean[c] = static_cast<P>(static_cast<A>(mmean[c]) * mom + mean * (A(1) - mom));
        mvar[c] = static_cast<P>(static_cast<A>(mvar[c]) * mom + var * (A(1) - mom));
      } else {
        mean = static_cast<A>(mmean[c]);
        var = static_cast<A>(mvar[c]);
      }
      // A constant channel with eps = 0 gets 0 rather than infinity (as MXNet): y = beta.
      const A rstd = replay                                   ? var
                     : batch_stats && var == A(0) && p.eps == 0 ? A(0)
                                                                : A(1) / std::sqrt(var + static_cast<A>(p.eps));
      if (req[1] != OpReq::kNullOp) Put(smean + c, req[1], mean);
      if (req[2] != OpReq::kNullOp) Put(svar + c, req[2], rstd);
      if (req[0] == OpReq::kNullOp) continue;
      A g = p.fix_gamma ? A(1) : static_cast<A>(gamma[c]);
      A scale = g * rstd;
      A shift = static_cast<A>(beta[c]) - mean * scale;
      for (int64_t o = 0; o < outer; ++o) {
        const T* xr = x + o * stride + c * inner;
        T* yr = y + o * stride + c * inner;
        if (req[0] == OpReq::kAddTo) {
          for (int64_t i = 0; i < inner; ++i)
            yr[i] = static_cast<T>(static_cast<A>(yr[i]) + static_cast<A>(xr[i]) * scale + shift);
        } else {
          for (int64_t i = 0; i < inner; ++i) yr[i] = static_cast<T>(static_cast<A>(xr[i]) * scale + shift);
        }
      }
    }
  });
}

}  // namespace

bool IsReplay(const NodeAttrs& attrs) {
  static const Op* replay = Op::Get("_BatchNorm_replay");
  return attrs.op == replay;
}

namespace {

void BatchNormCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  const bool replay = IsReplay(attrs);
  const bool batch_stats = !replay && UsesBatchStats(p, ctx);
  if (in[0].dtype == DType::kBfloat16 && in[1].dtype == DType::kFloat32) {
    Forward<bfloat16, float>(p, batch_stats, replay, in, req, out);
    return;
  }
  if (in[0].dtype == DType::kFloat16 && in[1].dtype == DType::kFloat32) {
    Forward<float16, float>(p, batch_stats, replay, in, req, out);
    return;
  }
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, { Forward<T>(p, batch_stats, replay, in, req, out); });
}

// Inputs: out_grad, data, gamma, mean, var (the statistics the forward used; var is the saved
// 1 / sqrt(var + eps)).
// Outputs: d data, d gamma, d beta.
template <typename T, typename P = T>
void Backward(const BatchNormParam& p, bool batch_stats, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
              const std::vector<TBlob>& out) {
  using A = Acc<T>;
  int axis = p.axis < 0 ? p.axis + in[1].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[1].shape, axis);
  const int64_t outer = sp.outer, C = sp.n, inner = sp.inner, stride = C * inner;
  const A count = static_cast<A>(outer * inner);
  const T* dy = in[0].ptr<T>();
  const T* x = in[1].ptr<T>();
  const P* gamma = in[2].ptr<P>();
  const P* smean = in[3].ptr<P>();
  const P* svar = in[4].ptr<P>();
  T* dx = out[0].ptr<T>();
  P* dgamma = out[1].ptr<P>();
  P* dbeta = out[2].ptr<P>();
  ParallelFor(C, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const A mean = static_cast<A>(smean[c]);
      const A rstd = static_cast<A>(svar[c]);
      A sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t o = 0; o < outer; ++o) {
        const T* xr = x + o * stride + c * inner;
        const T* gr = dy + o * stride + c * inner;
#pragma omp simd reduction(+ : sum_dy, sum_dy_xhat)
        for (int64_t i = 0; i < inner; ++i) {
          A g = static_cast<A>(gr[i]);
          sum_dy += g;
          sum_dy_xhat += g * (static_cast<A>(xr[i]) - mean);
        }
      }
      sum_dy_xhat *= rstd;
      const A g = p.fix_gamma ? A(1) : static_cast<A>(gamma[c]);
      if (req[1] != OpReq::kNullOp) Put(dgamma + c, req[1], p.fix_gamma ? A(0) : sum_dy_xhat);
      if (req[2] != OpReq::kNullOp) Put(dbeta + c, req[2], sum_dy);
      if (req[0] == OpReq::kNullOp) continue;
      // With batch statistics, mean and var depend on x:
      // dx = g * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
      const A k = g * rstd;
      const A mdy = batch_stats && count > 0 ? sum_dy / count : A(0);
      const A mdx = batch_stats && count > 0 ? sum_dy_xhat / count * rstd : A(0);
      for (int64_t o = 0; o < outer; ++o) {
        const T* xr = x + o * stride + c * inner;
        const T* gr = dy + o * stride + c * inner;
        T* dr = dx + o * stride + c * inner;
        for (int64_t i = 0; i < inner; ++i) {
          A v = k * (static_cast<A>(gr[i]) - mdy - (static_cast<A>(xr[i]) - mean) * mdx);
          Put(dr + i, req[0], v);
        }
      }
    }
  });
}

void BatchNormBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BatchNormParam>();
  if (in[1].dtype == DType::kBfloat16 && in[2].dtype == DType::kFloat32) {
    Backward<bfloat16, float>(p, UsesBatchStats(p, ctx), in, req, out);
    return;
  }
  if (in[1].dtype == DType::kFloat16 && in[2].dtype == DType::kFloat32) {
    Backward<float16, float>(p, UsesBatchStats(p, ctx), in, req, out);
    return;
  }
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, { Backward<T>(p, UsesBatchStats(p, ctx), in, req, out); });
}

bool BatchNormBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  int axis = CheckAxis(attrs, attrs.Params<BatchNormParam>().axis, d.ndim());
  Shape c{d[axis]};
  for (int i = 2; i < 5; ++i) AssignShape(attrs, in, i, c, "input");
  AssignShape(attrs, out, 1, c, "output");
  AssignShape(attrs, out, 2, c, "output");
  return true;
}

// The moving statistics are auxiliary states: they get no gradient.
std::vector<GradValue> BatchNormGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  std::vector<GradValue> g = b.Call("_backward_BatchNorm",
                                    {a.out_grads[0], a.inputs[0], a.inputs[1], a.outputs[1], a.outputs[2]}, attrs.dict);
  return {g[0], g[1], g[2], GradValue(), GradValue()};
}

}  // namespace

WEFT_REGISTER_OP(BatchNorm)
    .Describe("Batch normalisation over every axis but `axis`, with moving statistics as auxiliary states.")
    .SetNumInputs(5)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("gamma", "NDArray-or-Symbol", "Scale, one per channel")
    .AddArgument("beta", "NDArray-or-Symbol", "Shift, one per channel")
    .AddArgument("moving_mean", "NDArray-or-Symbol", "Moving mean (auxiliary state)")
    .AddArgument("moving_var", "NDArray-or-Symbol", "Moving variance (auxiliary state)")
    .SetParams<BatchNormParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) {
                                   return attrs.Params<BatchNormParam>().output_mean_var ? 3 : 1;
                                 })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "mean", "var"}; })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{3, 4}; })
    .SetAttr<FInferShape>("FInferShape", BatchNormShape)
    .SetAttr<FInferType>("FInferType", BatchNormType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BatchNormCompute)
    .SetAttr<FGradient>("FGradient", BatchNormGrad);

// The mirror of executor memory planning recomputes a BatchNorm in the backward from the
// statistics its forward saved; the saved third output is 1 / sqrt(var + eps), which this
// operator reads as it is, so the recomputed output has the forward's bits.
WEFT_REGISTER_OP(_BatchNorm_replay)
    .Describe("BatchNorm recomputed from the mean and 1 / sqrt(var + eps) a BatchNorm forward saved (its outputs 1 "
              "and 2); it updates no moving statistics.")
    .SetNumInputs(5)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("gamma", "NDArray-or-Symbol", "Scale, one per channel")
    .AddArgument("beta", "NDArray-or-Symbol", "Shift, one per channel")
    .AddArgument("mean", "NDArray-or-Symbol", "The mean the forward saved")
    .AddArgument("invstd", "NDArray-or-Symbol", "The 1 / sqrt(var + eps) the forward saved")
    .SetParams<BatchNormParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs",
                                 [](const NodeAttrs& attrs) {
                                   return attrs.Params<BatchNormParam>().output_mean_var ? 3 : 1;
                                 })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "mean", "var"}; })
    .SetAttr<FInferShape>("FInferShape", BatchNormShape)
    .SetAttr<FInferType>("FInferType", BatchNormType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BatchNormCompute);

WEFT_REGISTER_OP(_backward_BatchNorm)
    .Describe("Gradient of BatchNorm: (out_grad, data, gamma, mean, var) -> (d data, d gamma, d beta).")
    .SetNumInputs(5)
    .SetNumOutputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("gamma", "NDArray-or-Symbol", "The forward gamma")
    .AddArgument("mean", "NDArray-or-Symbol", "The mean the forward used")
    .AddArgument("var", "NDArray-or-Symbol", "The inverse standard deviation the forward saved")
    .SetParams<BatchNormParam>()
    .SetAttr<FInferShape>("FInferShape", BatchNormBackwardShape)
    .SetAttr<FInferType>("FInferType", BatchNormBackwardType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BatchNormBackwardCompute);

}  // namespace op
}  // namespace weft

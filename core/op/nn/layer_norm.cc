// LayerNorm, GroupNorm and InstanceNorm (MXNet 1.x parameters): each normalises groups of
// elements ("rows") by their own mean and (biased) variance, then applies a per-channel
// gamma and beta:
//   LayerNorm     rows are the positions along `axis` (gamma, beta: (data.shape[axis],));
//   GroupNorm     a row is one sample's group of C / num_groups channels; as in MXNet 1.9,
//                 gamma and beta are per group, (num_groups,);
//   InstanceNorm  a row is one sample's channel (gamma, beta: (C,)).
// Outputs: out, mean, std (std = sqrt(var + eps)); mean and std are visible with
// output_mean_var (InstanceNorm never shows them). The gradients are `_backward_<op>`
// (out_grad, data, gamma, mean, std) -> (d data, d gamma, d beta); like MXNet they ignore
// gradients arriving at mean and std.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "core/op/nn/layer_norm_param.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

namespace {

using nn::Acc;
using nn::Put;

enum Kind { kLayer = 0, kGroup = 1, kInstance = 2 };

// How the data splits into rows: row r's element k is at
// (r / inner) * len * inner + k * inner + r % inner; `aff` gives its gamma index.
struct Layout {
  int64_t rows = 0, len = 0, inner = 1;
  int64_t channels = 0;     // gamma / beta size
  int64_t groups = 1;       // GroupNorm
  double eps = 0;
  Shape stat_shape;         // shape of mean / std
};

Layout MakeLayout(const NodeAttrs& attrs, Kind kind, const Shape& d) {
  Layout l;
  if (kind == kLayer) {
    const auto& p = attrs.Params<LayerNormParam>();
    nn::CheckMinNdim(attrs, d, 1);
    int axis = CheckAxis(attrs, p.axis, d.ndim());
    nn::AxisSplit sp = nn::SplitAt(d, axis);
    l.rows = sp.outer * sp.inner;
    l.len = sp.n;
    l.inner = sp.inner;
    l.channels = sp.n;
    l.eps = p.eps;
    l.stat_shape = d;
    l.stat_shape[axis] = 1;
  } else if (kind == kGroup) {
    const auto& p = attrs.Params<GroupNormParam>();
    nn::CheckMinNdim(attrs, d, 2);
    const int64_t C = d[1], G = p.num_groups;
    if (C % G != 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'num_groups' = ", G,
            " must divide the channels (axis 1) of data ", d.ToString());
    int64_t S = 1;
    for (int k = 2; k < d.ndim(); ++k) S *= d[k];
    l.rows = d[0] * G;
    l.len = C / G * S;
    l.channels = G;
    l.groups = G;
    l.eps = p.eps;
    l.stat_shape = Shape{d[0], G};
  } else {
    const auto& p = attrs.Params<InstanceNormParam>();
    nn::CheckMinNdim(attrs, d, 3);
    int64_t S = 1;
    for (int k = 2; k < d.ndim(); ++k) S *= d[k];
    l.rows = d[0] * d[1];
    l.len = S;
    l.channels = d[1];
    l.eps = p.eps;
    l.stat_shape = Shape{d[0], d[1]};
  }
  return l;
}

template <int K>
inline int64_t AffIndex(const Layout& l, int64_t r, int64_t k) {
  if constexpr (K == kLayer) return k;
  if constexpr (K == kGroup) return r % l.groups;
  return r % l.channels;
}

Kind KindOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("GroupNorm") != std::string::npos) return kGroup;
  if (n.find("InstanceNorm") != std::string::npos) return kInstance;
  return kLayer;
}

bool NormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.is_known()) return false;
  Layout l = MakeLayout(attrs, KindOf(attrs), d);
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, in, 1, Shape{l.channels}, "input");
  AssignShape(attrs, in, 2, Shape{l.channels}, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, l.stat_shape, "output");
  AssignShape(attrs, out, 2, l.stat_shape, "output");
  return true;
}

template <int K, typename T>
void Forward(const Layout& l, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
             const std::vector<TBlob>& out) {
  using A = Acc<T>;
  const T* x = in[0].ptr<T>();
  const T* gamma = in[1].ptr<T>();
  const T* beta = in[2].ptr<T>();
  T* y = out[0].ptr<T>();
  T* mean_out = out[1].ptr<T>();
  T* std_out = out[2].ptr<T>();
  const int64_t len = l.len, inner = l.inner;
  const A count = static_cast<A>(len);
  ParallelFor(l.rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* xr = x + (r / inner) * len * inner + r % inner;
      T* yr = y + (r / inner) * len * inner + r % inner;
      A sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t k = 0; k < len; ++k) sum += static_cast<A>(xr[k * inner]);
      const A mean = len > 0 ? sum / count : A(0);
      A sq = 0;
#pragma omp simd reduction(+ : sq)
      for (int64_t k = 0; k < len; ++k) {
        A d = static_cast<A>(xr[k * inner]) - mean;
        sq += d * d;
      }
      const A sd = std::sqrt((len > 0 ? sq / count : A(0)) + static_cast<A>(l.eps));
      const A rstd = A(1) / sd;
      if (req[1] != OpReq::kNullOp) Put(mean_out + r, req[1], mean);
      if (req[2] != OpReq::kNullOp) Put(std_out + r, req[2], sd);
      if (req[0] == OpReq::kNullOp) continue;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t a = AffIndex<K>(l, r, k);
        A v = (static_cast<A>(xr[k * inner]) - mean) * rstd * static_cast<A>(gamma[a]) + static_cast<A>(beta[a]);
        Put(yr + k * inner, req[0], v);
      }
    }
  });
}

template <int K, typename T>
void Backward(const Layout& l, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
              const std::vector<TBlob>& out) {
  using A = Acc<T>;
  const T* dy = in[0].ptr<T>();
  const T* x = in[1].ptr<T>();
  const T* gamma = in[2].ptr<T>();
  const T* mean_in = in[3].ptr<T>();
  const T* std_in = in[4].ptr<T>();
  T* dx = out[0].ptr<T>();
  const int64_t len = l.len, inner = l.inner, C = l.channels;
  const A count = static_cast<A>(len);
  // gamma / beta gradients sum over every row (4096 x 512 data sums 4096 terms per channel):
  // they accumulate in double so that float32 keeps its precision, as MXNet's safe accumulation.
  std::vector<double> dgamma(static_cast<size_t>(C), 0.0), dbeta(static_cast<size_t>(C), 0.0);
  std::mutex mu;
  ParallelFor(l.rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t rb, int64_t re) {
    // Each thread sums its rows' gamma / beta gradients, then merges them once.
    std::vector<double> dg(static_cast<size_t>(C), 0.0), db(static_cast<size_t>(C), 0.0);
    for (int64_t r = rb; r < re; ++r) {
      const int64_t off = (r / inner) * len * inner + r % inner;
      const T* xr = x + off;
      const T* gr = dy + off;
      const A mean = static_cast<A>(mean_in[r]);
      const A rstd = A(1) / static_cast<A>(std_in[r]);
      A sum_g = 0, sum_gx = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t a = AffIndex<K>(l, r, k);
        const A g = static_cast<A>(gr[k * inner]);
        const A xhat = (static_cast<A>(xr[k * inner]) - mean) * rstd;
        dg[static_cast<size_t>(a)] += g * xhat;
        db[static_cast<size_t>(a)] += g;
        const A gg = g * static_cast<A>(gamma[a]);
        sum_g += gg;
        sum_gx += gg * xhat;
      }
      if (req[0] == OpReq::kNullOp) continue;
      const A mg = len > 0 ? sum_g / count : A(0), mgx = len > 0 ? sum_gx / count : A(0);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t a = AffIndex<K>(l, r, k);
        const A xhat = (static_cast<A>(xr[k * inner]) - mean) * rstd;
        const A gg = static_cast<A>(gr[k * inner]) * static_cast<A>(gamma[a]);
        Put(dx + off + k * inner, req[0], rstd * (gg - mg - xhat * mgx));
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t c = 0; c < C; ++c) {
      dgamma[static_cast<size_t>(c)] += dg[static_cast<size_t>(c)];
      dbeta[static_cast<size_t>(c)] += db[static_cast<size_t>(c)];
    }
  });
  if (req[1] != OpReq::kNullOp)
    for (int64_t c = 0; c < C; ++c) Put(out[1].ptr<T>() + c, req[1], dgamma[static_cast<size_t>(c)]);
  if (req[2] != OpReq::kNullOp)
    for (int64_t c = 0; c < C; ++c) Put(out[2].ptr<T>() + c, req[2], dbeta[static_cast<size_t>(c)]);
}

template <typename F>
void KindDispatch(Kind k, F&& f) {
  switch (k) {
    case kLayer: f(std::integral_constant<int, kLayer>()); break;
    case kGroup: f(std::integral_constant<int, kGroup>()); break;
    case kInstance: f(std::integral_constant<int, kInstance>()); break;
  }
}

void NormCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  Kind kind = KindOf(attrs);
  Layout l = MakeLayout(attrs, kind, in[0].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    KindDispatch(kind, [&](auto kc) { Forward<decltype(kc)::value, T>(l, in, req, out); });
  });
}

void NormBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  Kind kind = KindOf(attrs);
  Layout l = MakeLayout(attrs, kind, in[1].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    KindDispatch(kind, [&](auto kc) { Backward<decltype(kc)::value, T>(l, in, req, out); });
  });
}

bool NormBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  Layout l = MakeLayout(attrs, KindOf(attrs), d);
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, in, 2, Shape{l.channels}, "input");
  AssignShape(attrs, in, 3, l.stat_shape, "input");
  AssignShape(attrs, in, 4, l.stat_shape, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, Shape{l.channels}, "output");
  AssignShape(attrs, out, 2, Shape{l.channels}, "output");
  return true;
}

std::vector<GradValue> NormGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  return b.Call("_backward_" + attrs.op->name, {a.out_grads[0], a.inputs[0], a.inputs[1], a.outputs[1], a.outputs[2]},
                attrs.dict);
}

}  // namespace

#define WEFT_NORM_OP(name, P, visible, doc)                                                        \
  WEFT_REGISTER_OP(name)                                                                           \
      .Describe(doc)                                                                               \
      .SetNumInputs(3)                                                                             \
      .SetNumOutputs(3)                                                                            \
      .AddArgument("data", "NDArray-or-Symbol", "Input data")                                      \
      .AddArgument("gamma", "NDArray-or-Symbol", "Scale")                                          \
      .AddArgument("beta", "NDArray-or-Symbol", "Shift")                                           \
      .SetParams<P>()                                                                              \
      .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", visible)                                  \
      .SetAttr<FListNames>("FListOutputNames",                                                     \
                           [](const NodeAttrs&) { return std::vector<std::string>{"output", "mean", "std"}; }) \
      .SetAttr<FInferShape>("FInferShape", NormShape)                                              \
      .SetAttr<FInferType>("FInferType", SameFloatType)                                        \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                       \
      .SetAttr<FCompute>("FCompute<cpu>", NormCompute)                                             \
      .SetAttr<FGradient>("FGradient", NormGrad);                                                  \
  WEFT_REGISTER_OP(_backward_##name)                                                               \
      .Describe("Gradient of " #name ": (out_grad, data, gamma, mean, std) -> (d data, d gamma, d beta).") \
      .SetNumInputs(5)                                                                             \
      .SetNumOutputs(3)                                                                            \
      .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")                      \
      .AddArgument("data", "NDArray-or-Symbol", "The forward data")                                \
      .AddArgument("gamma", "NDArray-or-Symbol", "The forward gamma")                              \
      .AddArgument("mean", "NDArray-or-Symbol", "The forward mean")                                \
      .AddArgument("std", "NDArray-or-Symbol", "The forward std")                                  \
      .SetParams<P>()                                                                              \
      .SetAttr<FInferShape>("FInferShape", NormBackwardShape)                                      \
      .SetAttr<FInferType>("FInferType", SameFloatType)                                        \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                       \
      .SetAttr<FCompute>("FCompute<cpu>", NormBackwardCompute)

WEFT_NORM_OP(LayerNorm, LayerNormParam,
             [](const NodeAttrs& attrs) { return attrs.Params<LayerNormParam>().output_mean_var ? 3 : 1; },
             "Layer normalisation along `axis`, with gamma and beta of that axis' length.");
WEFT_NORM_OP(GroupNorm, GroupNormParam,
             [](const NodeAttrs& attrs) { return attrs.Params<GroupNormParam>().output_mean_var ? 3 : 1; },
             "Group normalisation: each sample's channels (axis 1) in num_groups groups; gamma and beta of shape "
             "(num_groups,), one scale and shift per group as in MXNet 1.9.");
WEFT_NORM_OP(InstanceNorm, InstanceNormParam, [](const NodeAttrs&) { return 1; },
             "Instance normalisation: each sample's channel (axis 1) over its spatial axes; per-channel gamma, beta.");

#undef WEFT_NORM_OP

}  // namespace op
}  // namespace weft

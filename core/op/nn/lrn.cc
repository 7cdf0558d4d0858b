// LRN (local response normalisation across channels) and L2Normalization, with MXNet 1.x
// parameters.
//
// LRN: out = x / (knorm + alpha / nsize * sum of x^2 over the nsize channels centred on
// the channel)^beta, the window clipped at the edges (alpha is divided by nsize, as in
// MXNet and torch.nn.functional.local_response_norm).
// L2Normalization: out = x / sqrt(sum x^2 + eps) over all but axis 0 (instance), over
// axis 1 (channel) or over the axes after 1 (spatial).
// Both gradients recompute the norms from the data: _backward_LRN(out_grad, data) and
// _backward_L2Normalization(out_grad, data, output).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/op/nn/norm_util.h"
#include "core/op/nn/lrn.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(LRNParam, s) {
  s.Field("alpha", &LRNParam::alpha).Default(1e-4).Describe("Scale of the sum of squares (divided by nsize).");
  s.Field("beta", &LRNParam::beta).Default(0.75).Describe("Exponent.");
  s.Field("knorm", &LRNParam::knorm).Default(2.0).Describe("Additive constant.");
  s.Field("nsize", &LRNParam::nsize).Min(1).Describe("Number of channels in the window.");
}

WEFT_PARAM_SCHEMA(L2NormalizationParam, s) {
  s.Field("eps", &L2NormalizationParam::eps).Default(1e-10).Min(0).Describe("Added to the sum of squares.");
  s.Field("mode", &L2NormalizationParam::mode)
      .Default("instance")
      .Choices({"instance", "channel", "spatial"})
      .Describe("Normalise over all but axis 0, over axis 1, or over the axes after 1.");
}

namespace {

using nn::Acc;
using nn::Put;

// ------------------------------------------------------------------ LRN
bool LRNShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 2);
  return SameShape(attrs, in, out);
}

// The data as N x C x S; window of channel c: [c - nsize/2, c + (nsize-1)/2] within [0, C).
struct LRNPlan {
  int64_t N, C, S, lo, hi;
  double alpha_n, beta, knorm;
};

LRNPlan MakeLRNPlan(const LRNParam& p, const Shape& d) {
  LRNPlan q;
  q.N = d[0];
  q.C = d[1];
  q.S = 1;
  for (int k = 2; k < d.ndim(); ++k) q.S *= d[k];
  q.lo = p.nsize / 2;
  q.hi = (p.nsize - 1) / 2;
  q.alpha_n = p.alpha / p.nsize;
  q.beta = p.beta;
  q.knorm = p.knorm;
  return q;
}

// scale[c][s] = knorm + alpha/n * window sum of x^2, for one sample (C x S values).
template <typename T, typename A>
void LRNScale(const LRNPlan& q, const T* x, A* scale) {
  for (int64_t c = 0; c < q.C; ++c) {
    A* sc = scale + c * q.S;
    std::fill(sc, sc + q.S, A(0));
    int64_t b = std::max<int64_t>(0, c - q.lo), e = std::min<int64_t>(q.C - 1, c + q.hi);
    for (int64_t j = b; j <= e; ++j) {
      const T* xr = x + j * q.S;
      for (int64_t s = 0; s < q.S; ++s) {
        A v = static_cast<A>(xr[s]);
        sc[s] += v * v;
      }
    }
    for (int64_t s = 0; s < q.S; ++s) sc[s] = static_cast<A>(q.knorm) + static_cast<A>(q.alpha_n) * sc[s];
  }
}

void LRNCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  LRNPlan q = MakeLRNPlan(attrs.Params<LRNParam>(), in[0].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(q.N, 1, [&](int64_t nb, int64_t ne) {
      std::vector<A> scale(static_cast<size_t>(q.C * q.S));
      for (int64_t n = nb; n < ne; ++n) {
        const int64_t off = n * q.C * q.S;
        LRNScale(q, x + off, scale.data());
        for (int64_t i = 0; i < q.C * q.S; ++i)
          Put(y + off + i, req[0], static_cast<A>(x[off + i]) * std::pow(scale[static_cast<size_t>(i)], static_cast<A>(-q.beta)));
      }
    });
  });
}

// dx_i = g_i s_i^-b - 2 a b / n * x_i * sum over the windows holding i of g_c x_c s_c^(-b-1).
void LRNBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  LRNPlan q = MakeLRNPlan(attrs.Params<LRNParam>(), in[1].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    using A = Acc<T>;
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    T* dx = out[0].ptr<T>();
    const A b = static_cast<A>(q.beta);
    ParallelFor(q.N, 1, [&](int64_t nb, int64_t ne) {
      std::vector<A> scale(static_cast<size_t>(q.C * q.S)), t(static_cast<size_t>(q.C * q.S));
      for (int64_t n = nb; n < ne; ++n) {
        const int64_t off = n * q.C * q.S;
        LRNScale(q, x + off, scale.data());
        for (int64_t i = 0; i < q.C * q.S; ++i)
          t[static_cast<size_t>(i)] = static_cast<A>(g[off + i]) * static_cast<A>(x[off + i]) *
                                      std::pow(scale[static_cast<size_t>(i)], -b - A(1));
        // Channel i lies in the window of channel c when c - lo <= i <= c + hi.
        for (int64_t i = 0; i < q.C; ++i) {
          int64_t cb = std::max<int64_t>(0, i - q.hi), ce = std::min<int64_t>(q.C - 1, i + q.lo);
          for (int64_t s = 0; s < q.S; ++s) {
            A acc = 0;
            for (int64_t c = cb; c <= ce; ++c) acc += t[static_cast<size_t>(c * q.S + s)];
            const int64_t j = i * q.S + s;
            A v = static_cast<A>(g[off + j]) * std::pow(scale[static_cast<size_t>(j)], -b) -
                  A(2) * static_cast<A>(q.alpha_n) * b * static_cast<A>(x[off + j]) * acc;
            Put(dx + off + j, req[0], v);
          }
        }
      }
    });
  });
}

// ------------------------------------------------------------------ L2Normalization
// The data as outer x n x inner where each (outer, inner) pair is normalised over n.
nn::AxisSplit L2Split(const NodeAttrs& attrs, const Shape& d) {
  const std::string& mode = attrs.Params<L2NormalizationParam>().mode;
  nn::AxisSplit sp;
  if (mode == "instance") {
    sp.outer = d[0];
    sp.n = d[0] > 0 ? d.Size() / d[0] : 0;
    return sp;
  }
  if (d.ndim() < (mode == "spatial" ? 3 : 2))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': mode '", mode, "' needs data with at least ",
          mode == "spatial" ? 3 : 2, " dimensions, got shape ", d.ToString());
  if (mode == "channel") return nn::SplitAt(d, 1);
  sp.outer = d[0] * d[1];
  sp.n = d[0] * d[1] > 0 ? d.Size() / (d[0] * d[1]) : 0;
  return sp;
}

bool L2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  L2Split(attrs, d);
  return SameShape(attrs, in, out);
}

template <typename F>
void ForRows(const nn::AxisSplit& sp, F&& f) {
  ParallelFor(sp.outer * sp.inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(sp.n, 1)),
              [&](int64_t rb, int64_t re) {
                for (int64_t r = rb; r < re; ++r) f((r / sp.inner) * sp.n * sp.inner + r % sp.inner);
              });
}

void L2Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
               const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = L2Split(attrs, in[0].shape);
  const double eps = attrs.Params<L2NormalizationParam>().eps;
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ForRows(sp, [&](int64_t base) {
      A sq = 0;
      for (int64_t k = 0; k < sp.n; ++k) {
        A v = static_cast<A>(x[base + k * sp.inner]);
        sq += v * v;
      }
      const A inv = A(1) / std::sqrt(sq + static_cast<A>(eps));
      for (int64_t k = 0; k < sp.n; ++k) Put(y + base + k * sp.inner, req[0], static_cast<A>(x[base + k * sp.inner]) * inv);
    });
  });
}

// Inputs: out_grad, data, output. dx = (g - y * sum(g y)) / norm.
void L2BackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = L2Split(attrs, in[1].shape);
  const double eps = attrs.Params<L2NormalizationParam>().eps;
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    using A = Acc<T>;
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    const T* y = in[2].ptr<T>();
    T* dx = out[0].ptr<T>();
    ForRows(sp, [&](int64_t base) {
      A sq = 0, dot = 0;
      for (int64_t k = 0; k < sp.n; ++k) {
        const int64_t j = base + k * sp.inner;
        A v = static_cast<A>(x[j]);
        sq += v * v;
        dot += static_cast<A>(g[j]) * static_cast<A>(y[j]);
      }
      const A inv = A(1) / std::sqrt(sq + static_cast<A>(eps));
      for (int64_t k = 0; k < sp.n; ++k) {
        const int64_t j = base + k * sp.inner;
        Put(dx + j, req[0], (static_cast<A>(g[j]) - static_cast<A>(y[j]) * dot) * inv);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(LRN)
    .Describe("Local response normalisation across channels (axis 1).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data (N, C, ...)")
    .SetParams<LRNParam>()
    .SetAttr<FInferShape>("FInferShape", LRNShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", LRNCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_LRN", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_LRN)
    .Describe("Gradient of LRN: (out_grad, data) -> d data.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .SetParams<LRNParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", LRNBackwardCompute);

WEFT_REGISTER_OP(L2Normalization)
    .Describe("Divides by the L2 norm over all but axis 0 (instance), axis 1 (channel) or the axes after 1 (spatial).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .SetParams<L2NormalizationParam>()
    .SetAttr<FInferShape>("FInferShape", L2Shape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", L2Compute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_L2Normalization", {a.out_grads[0], a.inputs[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_L2Normalization)
    .Describe("Gradient of L2Normalization: (out_grad, data, output) -> d data.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .SetParams<L2NormalizationParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", L2BackwardCompute);

}  // namespace op
}  // namespace weft

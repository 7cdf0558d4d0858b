// Elementwise operators with parameters of their own: smooth_l1, hard_sigmoid and the
// contributed quadratic, gradientmultiplier, div_sqrt_dim and the straight-through
// estimators round_ste and sign_ste (whose gradient passes through unchanged). The
// backward operators take (ograd, data) and check that both have the output's shape.
#include <cmath>

#include "core/op/elemwise/registration.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct HardSigmoidParam {
  double alpha = 0.2;
  double beta = 0.5;
};

WEFT_PARAM_SCHEMA(HardSigmoidParam, s) {
  s.Field("alpha", &HardSigmoidParam::alpha).Default(0.2).Describe("Slope of hard sigmoid");
  s.Field("beta", &HardSigmoidParam::beta).Default(0.5).Describe("Bias of hard sigmoid.");
}

struct QuadraticParam {
  double a = 0, b = 0, c = 0;
};

WEFT_PARAM_SCHEMA(QuadraticParam, s) {
  s.Field("a", &QuadraticParam::a).Default(0.0).Describe("Coefficient of the quadratic term in the quadratic function.");
  s.Field("b", &QuadraticParam::b).Default(0.0).Describe("Coefficient of the linear term in the quadratic function.");
  s.Field("c", &QuadraticParam::c).Default(0.0).Describe("Constant term in the quadratic function.");
}

namespace {

// y = f(x) elementwise, computed in double.
template <typename F>
void MapUnary(const TBlob& x, const TBlob& y, OpReq req, F f) {
  if (req == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(y.dtype, T, {
    const T* xp = x.ptr<T>();
    T* yp = y.ptr<T>();
    ParallelFor(y.Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Store(yp + i, req, f(static_cast<double>(xp[i])));
    });
  });
}

// Backward operators: inputs (ograd, data), dx = ograd * f'(data).
template <typename F>
void MapGrad(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
             const std::vector<TBlob>& out, F dfdx) {
  if (req[0] == OpReq::kNullOp) return;
  if (in[0].shape != in[1].shape || out[0].shape != in[1].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the operator expects the data's shape ", in[1].shape.ToString());
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(out[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        Store(y + i, req[0], static_cast<double>(g[i]) * dfdx(static_cast<double>(x[i])));
    });
  });
}

double Scalar(const NodeAttrs& attrs) { return attrs.Params<ScalarParam>().scalar; }

// smooth_l1 with sigma s: quadratic within 1/s^2 of zero, |x| - 0.5/s^2 beyond.
double SmoothL1(double x, double s) {
  double inv = 1.0 / (s * s);
  if (x > inv) return x - 0.5 * inv;
  if (x < -inv) return -x - 0.5 * inv;
  return 0.5 * x * x * s * s;
}

double SmoothL1Grad(double x, double s) {
  double inv = 1.0 / (s * s);
  if (x > inv) return 1;
  if (x < -inv) return -1;
  return x * s * s;
}

std::vector<GradValue> GradFromBackwardOp(GradBuilder& b, const std::string& op, const NodeAttrs& attrs,
                                          const GradArgs& a) {
  return {b.Op(op, {a.out_grads[0], a.inputs[0]}, attrs.dict)};
}

// The scale of div_sqrt_dim: 1 / sqrt(the last axis' length).
double DivSqrtScale(const NodeAttrs& attrs, const Shape& s) {
  if (s.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an input with at least 1 dimension, got ",
          s.ToString());
  return 1.0 / std::sqrt(static_cast<double>(s[s.ndim() - 1]));
}

std::vector<GradValue> PassThrough(GradBuilder&, const NodeAttrs&, const GradArgs& a) { return {a.out_grads[0]}; }

WEFT_REGISTER_OP_GROUP(ParamUnary)
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise);

}  // namespace

WEFT_REGISTER_OP(smooth_l1)
    .Describe("Smooth L1 loss of each element with sigma = scalar: (sigma x)^2 / 2 where |x| < 1 / sigma^2, "
              "|x| - 0.5 / sigma^2 elsewhere.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "source input")
    .SetParams<ScalarParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         double s = Scalar(attrs);
                         MapUnary(in[0], out[0], req[0], [s](double x) { return SmoothL1(x, s); });
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return GradFromBackwardOp(b, "_backward_smooth_l1", attrs, a);
    });

WEFT_REGISTER_OP(_backward_smooth_l1)
    .Describe("Gradient of smooth_l1: ograd times sigma^2 x within 1 / sigma^2 of zero, times sign(x) elsewhere.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ScalarParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      double s = Scalar(attrs);
      MapGrad(attrs, in, req, out, [s](double x) { return SmoothL1Grad(x, s); });
    });

WEFT_REGISTER_OP(hard_sigmoid)
    .Describe("max(0, min(1, alpha * x + beta)) of each element.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array.")
    .SetParams<HardSigmoidParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         const auto& p = attrs.Params<HardSigmoidParam>();
                         MapUnary(in[0], out[0], req[0],
                                  [&p](double x) { return std::max(0.0, std::min(1.0, p.alpha * x + p.beta)); });
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return GradFromBackwardOp(b, "_backward_hard_sigmoid", attrs, a);
    });

WEFT_REGISTER_OP(_backward_hard_sigmoid)
    .Describe("Gradient of hard_sigmoid: ograd times alpha where 0 < alpha * x + beta < 1, zero elsewhere.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<HardSigmoidParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      const auto& p = attrs.Params<HardSigmoidParam>();
      MapGrad(attrs, in, req, out, [&p](double x) {
        double v = p.alpha * x + p.beta;
        return v > 0 && v < 1 ? p.alpha : 0.0;
      });
    });

WEFT_REGISTER_OP(_contrib_quadratic)
    .Describe("a * x^2 + b * x + c of each element.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<QuadraticParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         const auto& p = attrs.Params<QuadraticParam>();
                         MapUnary(in[0], out[0], req[0], [&p](double x) { return (p.a * x + p.b) * x + p.c; });
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return GradFromBackwardOp(b, "_contrib_backward_quadratic", attrs, a);
    });

WEFT_REGISTER_OP(_contrib_backward_quadratic)
    .Describe("Gradient of quadratic: ograd times 2 a x + b.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<QuadraticParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      const auto& p = attrs.Params<QuadraticParam>();
      MapGrad(attrs, in, req, out, [&p](double x) { return 2 * p.a * x + p.b; });
    });

WEFT_REGISTER_OP(_contrib_gradientmultiplier)
    .Describe("The identity, whose gradient is the output gradient times scalar (a negative scalar reverses "
              "gradients, as in domain-adversarial training).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array.")
    .SetParams<ScalarParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_contrib_backward_gradientmultiplier", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_contrib_backward_gradientmultiplier)
    .Describe("Gradient of gradientmultiplier: the output gradient times scalar.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Gradient of the output")
    .SetParams<ScalarParam>()
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>", [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      double s = Scalar(attrs);
      MapUnary(in[0], out[0], req[0], [s](double g) { return g * s; });
    });

WEFT_REGISTER_OP(_contrib_div_sqrt_dim)
    .Describe("The input divided by the square root of its last axis' length (attention score scaling).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array.")
    .Include("ParamUnary")
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            if ((*in)[0].known_ndim()) DivSqrtScale(attrs, (*in)[0]);
                            return SameShape(attrs, in, out);
                          })
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         double k = DivSqrtScale(attrs, in[0].shape);
                         MapUnary(in[0], out[0], req[0], [k](double x) { return x * k; });
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_contrib_div_sqrt_dim", {a.out_grads[0]})};
    });

WEFT_REGISTER_OP(_contrib_round_ste)
    .Describe("Rounds each element to the nearest integer (halves away from zero); the gradient passes through "
              "unchanged (straight-through estimator).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array.")
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         MapUnary(in[0], out[0], req[0], [](double x) { return std::round(x); });
                       })
    .SetAttr<FGradient>("FGradient", PassThrough);

WEFT_REGISTER_OP(_contrib_sign_ste)
    .Describe("The sign of each element (-1, 0 or 1); the gradient passes through unchanged (straight-through "
              "estimator).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array.")
    .Include("ParamUnary")
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         MapUnary(in[0], out[0], req[0], [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); });
                       })
    .SetAttr<FGradient>("FGradient", PassThrough);

}  // namespace op
}  // namespace weft

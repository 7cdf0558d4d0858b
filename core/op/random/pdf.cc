// Densities of samples with MXNet 1.x names: _random_pdf_uniform (low, high), _normal (mu,
// sigma), _gamma (alpha, beta as a rate), _exponential (lam), _poisson (lam),
// _negative_binomial (k, p), _generalized_negative_binomial (mu, alpha) and _dirichlet
// (alpha), each the probability density (or mass) of `sample`, or its logarithm with
// is_log. The parameters share one shape [s]; `sample` has shape [s] x [t], the samples at
// index i read the distribution of parameters i. For the Dirichlet the last axis of alpha
// and of sample holds the vector: alpha is [s] x [k], sample [s] x [t] x [k] and the output
// [s] x [t] (shape (1,) for one vector).
//
// As in MXNet: the uniform density is 1 / (high - low) whatever the sample (its support is
// not checked), parameter values are not checked (a density of invalid parameters is NaN
// or infinite), and the gradients (_backward_pdf_*) with respect to the parameters sum
// over the samples of each distribution, while those with respect to discrete samples
// (Poisson, negative binomials) and the uniform's are zero.
#include <cmath>
#include <string>
#include <vector>

#include "core/op/elemwise/math.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct PdfParam {
  bool is_log = false;
};

WEFT_PARAM_SCHEMA(PdfParam, s) {
  s.Field("is_log", &PdfParam::is_log)
      .Default(false)
      .Describe("Compute the logarithm of the density instead of the density.");
}

namespace {

// Each family: the log density of x under parameters (a, b) and its partial derivatives
// with respect to x, a and b.
struct UniformPdf {
  static double LogPdf(double, double l, double h) { return -std::log(h - l); }
  static void Grad(double, double l, double h, double* dx, double* da, double* db) {
    *dx = 0;
    *da = 1 / (h - l);
    *db = -1 / (h - l);
  }
};

struct NormalPdf {
  static double LogPdf(double x, double u, double s) {
    return -0.5 * (x - u) * (x - u) / (s * s) - std::log(s) - 0.5 * std::log(2 * M_PI);
  }
  static void Grad(double x, double u, double s, double* dx, double* da, double* db) {
    const double s2 = s * s;
    *dx = (u - x) / s2;
    *da = (x - u) / s2;
    *db = ((x - u) * (x - u) - s2) / (s2 * s);
  }
};

// alpha is the shape, beta the rate (MXNet's densities use the rate, its sampler the scale).
struct GammaPdf {
  static double LogPdf(double x, double a, double b) {
    return a * std::log(b) + (a - 1) * std::log(x) - b * x - math::lgamma(a);
  }
  static void Grad(double x, double a, double b, double* dx, double* da, double* db) {
    *dx = (a - 1) / x - b;
    *da = std::log(b) + std::log(x) - math::digamma(a);
    *db = a / b - x;
  }
};

struct ExponentialPdf {
  static double LogPdf(double x, double l, double) { return std::log(l) - l * x; }
  static void Grad(double x, double l, double, double* dx, double* da, double* db) {
    *dx = -l;
    *da = 1 / l - x;
    *db = 0;
  }
};

struct PoissonPdf {
  static double LogPdf(double x, double l, double) { return x * std::log(l) - math::lgamma(x + 1) - l; }
  static void Grad(double x, double l, double, double* dx, double* da, double* db) {
    *dx = 0;
    *da = x / l - 1;
    *db = 0;
  }
};

// k successes to wait for, success probability p: C(x + k - 1, x) p^k (1 - p)^x.
struct NegBinomialPdf {
  static double LogPdf(double x, double k, double p) {
    return math::lgamma(x + k) - math::lgamma(x + 1) - math::lgamma(k) + k * std::log(p) + x * std::log(1 - p);
  }
  static void Grad(double x, double k, double p, double* dx, double* da, double* db) {
    *dx = 0;
    *da = math::digamma(x + k) - math::digamma(k) + std::log(p);
    *db = k / p - x / (1 - p);
  }
};

// Mean mu, dispersion alpha: the negative binomial with k = 1 / alpha, p = 1 / (mu alpha + 1).
struct GenNegBinomialPdf {
  static double LogPdf(double x, double mu, double alpha) {
    return NegBinomialPdf::LogPdf(x, 1 / alpha, 1 / (mu * alpha + 1));
  }
  static void Grad(double x, double mu, double alpha, double* dx, double* da, double* db) {
    const double den = mu * alpha + 1;
    double dk, dp;
    NegBinomialPdf::Grad(x, 1 / alpha, 1 / den, dx, &dk, &dp);
    *da = -dp * alpha / (den * den);
    *db = -dk / (alpha * alpha) - dp * mu / (den * den);
  }
};

// The output shape for `sample` and parameters of shape `param` (after checking that they
// fit), `vec` for the Dirichlet, whose last axis is the vector.
Shape PdfOutShape(const NodeAttrs& attrs, const Shape& sample, const Shape& param, bool vec) {
  auto bad = [&](const std::string& why) {
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", why, "; got sample ", sample.ToString(),
          " and parameters ", param.ToString());
  };
  if (vec) {
    if (param.ndim() < 1 || sample.ndim() < param.ndim())
      bad("expected parameters [s] x [k] and samples [s] x [t] x [k]");
    for (int i = 0; i + 1 < param.ndim(); ++i)
      if (sample[i] != param[i]) bad("expected the leading axes of the samples to be the parameters' [s]");
    if (sample[sample.ndim() - 1] != param[param.ndim() - 1])
      bad("expected the samples' last axis to be the vector length of the parameters' last axis");
    if (sample.ndim() == 1) return Shape{1};
    return Shape(std::vector<int64_t>(sample.begin(), sample.end() - 1));
  }
  if (sample.ndim() < param.ndim()) bad("expected samples of shape [s] x [t] for parameters of shape [s]");
  for (int i = 0; i < param.ndim(); ++i)
    if (sample[i] != param[i]) bad("expected the leading axes of the samples to be the parameters' shape");
  return sample;
}

template <bool kVec>
bool PdfShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape param;
  for (size_t i = 1; i < in->size(); ++i) {
    const Shape& p = (*in)[i];
    if (!p.known_ndim()) continue;
    if (param.known_ndim() && p.is_known() && param.is_known() && p != param)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the distribution parameters have shapes ",
            param.ToString(), " and ", p.ToString(), "; expected one shape");
    param = p;
  }
  if (!param.known_ndim() || !(*in)[0].is_known()) return false;
  for (size_t i = 1; i < in->size(); ++i) AssignShape(attrs, in, i, param, "input");
  if (!param.is_known()) return false;
  AssignShape(attrs, out, 0, PdfOutShape(attrs, (*in)[0], param, kVec), "output");
  return true;
}

// Backward: inputs (ograd, sample, parameters..., out); outputs the gradients of sample
// and of each parameter.
template <bool kVec>
bool PdfBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const size_t np = out->size() - 1;
  std::vector<Shape> fin(in->begin() + 1, in->begin() + 2 + np);
  std::vector<Shape> fout{Shape()};
  if (!PdfShape<kVec>(attrs, &fin, &fout)) return false;
  for (size_t i : {size_t{0}, in->size() - 1}) {
    const Shape& g = (*in)[i];
    if (g.known_ndim() && g != fout[0])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i == 0 ? "'ograd'" : "'out'",
            ": expected the forward output's shape ", fout[0].ToString(), ", got ", g.ToString());
    AssignShape(attrs, in, i, fout[0], "input");
  }
  for (size_t i = 0; i <= np; ++i) {
    AssignShape(attrs, in, i + 1, fin[i], "input");
    AssignShape(attrs, out, i, fin[i], "output");
  }
  return true;
}

bool PdfType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return SameFloatType(attrs, in, out);
}

// Every input and the output share the samples' dtype (the kernels read them all as one type).
void CheckForwardTypes(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input ", i, " is ", DTypeName(in[i].dtype),
            ", expected the samples' dtype ", DTypeName(in[0].dtype));
  if (out[0].dtype != in[0].dtype)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': output is ", DTypeName(out[0].dtype),
          ", expected the samples' dtype ", DTypeName(in[0].dtype));
}

template <typename F, int NP>
void PdfForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const bool is_log = attrs.Params<PdfParam>().is_log;
  const TBlob& x = in[0];
  CheckForwardTypes(attrs, in, out);
  for (int j = 2; j <= NP; ++j)
    if (in[j].shape != in[1].shape)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the parameters have shapes ", in[1].shape.ToString(),
            " and ", in[j].shape.ToString(), "; expected one shape");
  const Shape oshape = PdfOutShape(attrs, x.shape, in[1].shape, false);
  if (out[0].shape != oshape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output: expected shape ", oshape.ToString(), ", got ",
          out[0].shape.ToString());
  const int64_t n = x.Size(), nd = in[1].Size();
  if (n == 0) return;
  const int64_t per = n / nd;
  WEFT_FLOAT_TYPE_SWITCH(x.dtype, T, "Operator '" + attrs.op->name + "'", {
    const T* xs = x.ptr<T>();
    const T* a = in[1].ptr<T>();
    const T* b = NP > 1 ? in[2].ptr<T>() : nullptr;
    T* o = out[0].ptr<T>();
    const OpReq r = req[0];
    ParallelFor(n, kElemGrain / 8, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t d = i / per;
        const double lp = F::LogPdf(static_cast<double>(xs[i]), static_cast<double>(a[d]),
                                    b ? static_cast<double>(b[d]) : 0.0);
        Store(o + i, r, is_log ? lp : std::exp(lp));
      }
    });
  });
}

// Checks every input of a hand-called backward against the forward geometry.
void CheckBackwardInputs(const NodeAttrs& attrs, const std::vector<TBlob>& in, size_t np, bool vec) {
  for (size_t j = 2; j <= np; ++j)
    if (in[j + 1].shape != in[2].shape || in[j + 1].dtype != in[1].dtype)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': parameter ", j, " has shape ",
            in[j + 1].shape.ToString(), ", expected ", in[2].shape.ToString());
  const Shape oshape = PdfOutShape(attrs, in[1].shape, in[2].shape, vec);
  for (size_t i : {size_t{0}, in.size() - 1})
    if (in[i].shape != oshape || in[i].dtype != in[1].dtype)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i == 0 ? "'ograd'" : "'out'",
            ": expected ", DTypeName(in[1].dtype), " of shape ", oshape.ToString(), ", got ", DTypeName(in[i].dtype),
            " of shape ", in[i].shape.ToString());
  if (in[2].dtype != in[1].dtype)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': the parameters' dtype ", DTypeName(in[2].dtype),
          " differs from the samples' ", DTypeName(in[1].dtype));
}

void CheckBackwardOutputs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].shape != in[i + 1].shape || out[i].dtype != in[i + 1].dtype)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output ", i, ": expected ", DTypeName(in[i + 1].dtype),
            " of shape ", in[i + 1].shape.ToString(), ", got shape ", out[i].shape.ToString());
}

template <typename F, int NP>
void PdfBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  CheckBackwardInputs(attrs, in, NP, false);
  CheckBackwardOutputs(attrs, in, out);
  const bool is_log = attrs.Params<PdfParam>().is_log;
  const int64_t n = in[1].Size(), nd = in[2].Size();
  const int64_t per = nd == 0 ? 0 : n / nd;
  WEFT_FLOAT_TYPE_SWITCH(in[1].dtype, T, "Operator '" + attrs.op->name + "'", {
    const T* og = in[0].ptr<T>();
    const T* xs = in[1].ptr<T>();
    const T* a = in[2].ptr<T>();
    const T* b = NP > 1 ? in[3].ptr<T>() : nullptr;
    const T* o = in[2 + NP].ptr<T>();
    T* gx = out[0].ptr<T>();
    T* ga = out[1].ptr<T>();
    T* gb = NP > 1 ? out[2].ptr<T>() : nullptr;
    // One distribution per task: its parameters' gradients sum over its samples.
    ParallelFor(nd, std::max<int64_t>(1, kElemGrain / 8 / std::max<int64_t>(per, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t d = lo; d < hi; ++d) {
        const double pa = static_cast<double>(a[d]), pb = b ? static_cast<double>(b[d]) : 0.0;
        double sa = 0, sb = 0;
        for (int64_t i = d * per; i < (d + 1) * per; ++i) {
          const double scale = static_cast<double>(og[i]) * (is_log ? 1.0 : static_cast<double>(o[i]));
          double dx, da, db;
          F::Grad(static_cast<double>(xs[i]), pa, pb, &dx, &da, &db);
          if (req[0] != OpReq::kNullOp) Store(gx + i, req[0], scale * dx);
          sa += scale * da;
          sb += scale * db;
        }
        if (req[1] != OpReq::kNullOp) Store(ga + d, req[1], sa);
        if (gb && req[2] != OpReq::kNullOp) Store(gb + d, req[2], sb);
      }
    });
  });
}

// ---------------------------------------------------------------- Dirichlet
void DirichletForward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const bool is_log = attrs.Params<PdfParam>().is_log;
  CheckForwardTypes(attrs, in, out);
  const Shape oshape = PdfOutShape(attrs, in[0].shape, in[1].shape, true);
  if (out[0].shape != oshape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output: expected shape ", oshape.ToString(), ", got ",
          out[0].shape.ToString());
  const int64_t k = in[1].shape[in[1].shape.ndim() - 1];
  if (k == 0 || in[0].Size() == 0) return;
  const int64_t nv = in[0].Size() / k, nd = in[1].Size() / k, per = nv / nd;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '_random_pdf_dirichlet'", {
    const T* xs = in[0].ptr<T>();
    const T* al = in[1].ptr<T>();
    T* o = out[0].ptr<T>();
    ParallelFor(nv, std::max<int64_t>(1, kElemGrain / 8 / k), [&](int64_t lo, int64_t hi) {
      for (int64_t v = lo; v < hi; ++v) {
        const T* x = xs + v * k;
        const T* a = al + (v / per) * k;
        double sum_a = 0, sum_lg = 0, sum_x = 0;
        for (int64_t j = 0; j < k; ++j) {
          const double aj = static_cast<double>(a[j]);
          sum_a += aj;
          sum_lg += math::lgamma(aj);
          sum_x += (aj - 1) * std::log(static_cast<double>(x[j]));
        }
        const double lp = sum_x + math::lgamma(sum_a) - sum_lg;
        Store(o + v, req[0], is_log ? lp : std::exp(lp));
      }
    });
  });
}

void DirichletBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckBackwardInputs(attrs, in, 1, true);
  CheckBackwardOutputs(attrs, in, out);
  const bool is_log = attrs.Params<PdfParam>().is_log;
  const int64_t k = in[2].shape[in[2].shape.ndim() - 1];
  const int64_t nv = k == 0 ? 0 : in[1].Size() / k, nd = k == 0 ? 0 : in[2].Size() / k;
  const int64_t per = nd == 0 ? 0 : nv / nd;
  WEFT_FLOAT_TYPE_SWITCH(in[1].dtype, T, "Operator '_backward_pdf_dirichlet'", {
    const T* og = in[0].ptr<T>();
    const T* xs = in[1].ptr<T>();
    const T* al = in[2].ptr<T>();
    const T* o = in[3].ptr<T>();
    T* gx = out[0].ptr<T>();
    T* ga = out[1].ptr<T>();
    ParallelFor(nd, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc(static_cast<size_t>(k)), psi(static_cast<size_t>(k));
      for (int64_t d = lo; d < hi; ++d) {
        const T* a = al + d * k;
        double sum_a = 0;
        for (int64_t j = 0; j < k; ++j) {
          sum_a += static_cast<double>(a[j]);
          psi[j] = math::digamma(static_cast<double>(a[j]));
          acc[j] = 0;
        }
        const double psi_sum = math::digamma(sum_a);
        for (int64_t v = d * per; v < (d + 1) * per; ++v) {
          const double scale = static_cast<double>(og[v]) * (is_log ? 1.0 : static_cast<double>(o[v]));
          for (int64_t j = 0; j < k; ++j) {
            const double x = static_cast<double>(xs[v * k + j]), aj = static_cast<double>(a[j]);
            acc[j] += scale * (std::log(x) + psi_sum - psi[j]);
            if (req[0] != OpReq::kNullOp) Store(gx + v * k + j, req[0], scale * (aj - 1) / x);
          }
        }
        if (req[1] != OpReq::kNullOp)
          for (int64_t j = 0; j < k; ++j) Store(ga + d * k + j, req[1], acc[j]);
      }
    });
  });
}

template <int NP>
FGradient PdfGrad(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    std::vector<GradValue> ins{a.out_grads[0]};
    ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
    ins.push_back(a.outputs[0]);
    return b.Call(backward, ins, attrs.dict);
  };
}

}  // namespace

#define WEFT_PDF_OP(name, NP, kVec, forward, backward, what)                                              \
  WEFT_REGISTER_OP(_random_pdf_##name)                                                                   \
      .AddAlias("random_pdf_" #name)                                                                     \
      .Describe("The density of each sample under the " what " distribution of its parameters (the "    \
                "log-density with is_log); the samples' leading axes are the parameters' shape.")       \
      .SetNumInputs(NP + 1)                                                                              \
      .AddArgument("sample", "NDArray-or-Symbol", "Samples from the distributions")                      \
      .SetParams<PdfParam>()                                                                             \
      .SetAttr<FInferShape>("FInferShape", PdfShape<kVec>)                                               \
      .SetAttr<FInferType>("FInferType", PdfType)                                                        \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                             \
      .SetAttr<FGradient>("FGradient", PdfGrad<NP>("_backward_pdf_" #name))                             \
      .SetAttr<FCompute>("FCompute<cpu>", forward);                                                      \
  WEFT_REGISTER_OP(_backward_pdf_##name)                                                                 \
      .Describe("Gradients of _random_pdf_" #name " with respect to the samples and the parameters.")   \
      .SetNumInputs(NP + 3)                                                                              \
      .SetNumOutputs(NP + 1)                                                                             \
      .AddArgument("data", "NDArray-or-Symbol[]", "ograd, sample, the parameters, the forward output")  \
      .SetParams<PdfParam>()                                                                             \
      .SetAttr<FInferShape>("FInferShape", PdfBackwardShape<kVec>)                                       \
      .SetAttr<FInferType>("FInferType", PdfType)                                                        \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                             \
      .SetAttr<FCompute>("FCompute<cpu>", backward);                                                     \
  WEFT_REGISTER_OP(_random_pdf_##name)

WEFT_PDF_OP(uniform, 2, false, (PdfForward<UniformPdf, 2>), (PdfBackward<UniformPdf, 2>), "uniform [low, high)")
    .AddArgument("low", "NDArray-or-Symbol", "Lower bounds of the distributions")
    .AddArgument("high", "NDArray-or-Symbol", "Upper bounds of the distributions");
WEFT_PDF_OP(normal, 2, false, (PdfForward<NormalPdf, 2>), (PdfBackward<NormalPdf, 2>), "normal")
    .AddArgument("mu", "NDArray-or-Symbol", "Means of the distributions")
    .AddArgument("sigma", "NDArray-or-Symbol", "Standard deviations of the distributions");
WEFT_PDF_OP(gamma, 2, false, (PdfForward<GammaPdf, 2>), (PdfBackward<GammaPdf, 2>), "gamma (shape alpha, rate beta)")
    .AddArgument("alpha", "NDArray-or-Symbol", "Shapes (alpha) of the distributions")
    .AddArgument("beta", "NDArray-or-Symbol", "Rates (beta) of the distributions");
WEFT_PDF_OP(exponential, 1, false, (PdfForward<ExponentialPdf, 1>), (PdfBackward<ExponentialPdf, 1>),
            "exponential (rate lam)")
    .AddArgument("lam", "NDArray-or-Symbol", "Rates (lambda) of the distributions");
WEFT_PDF_OP(poisson, 1, false, (PdfForward<PoissonPdf, 1>), (PdfBackward<PoissonPdf, 1>), "Poisson (rate lam)")
    .AddArgument("lam", "NDArray-or-Symbol", "Rates (lambda) of the distributions");
WEFT_PDF_OP(negative_binomial, 2, false, (PdfForward<NegBinomialPdf, 2>), (PdfBackward<NegBinomialPdf, 2>),
            "negative binomial (k successes, success probability p)")
    .AddArgument("k", "NDArray-or-Symbol", "Numbers of successes to wait for")
    .AddArgument("p", "NDArray-or-Symbol", "Success probabilities of each trial");
WEFT_PDF_OP(generalized_negative_binomial, 2, false, (PdfForward<GenNegBinomialPdf, 2>),
            (PdfBackward<GenNegBinomialPdf, 2>), "generalized negative binomial (mean mu, dispersion alpha)")
    .AddArgument("mu", "NDArray-or-Symbol", "Means of the distributions")
    .AddArgument("alpha", "NDArray-or-Symbol", "Dispersions of the distributions");
WEFT_PDF_OP(dirichlet, 1, true, DirichletForward, DirichletBackward, "Dirichlet (concentrations alpha)")
    .AddArgument("alpha", "NDArray-or-Symbol", "Concentrations of the distributions (the last axis is the vector)");

#undef WEFT_PDF_OP

}  // namespace op
}  // namespace weft

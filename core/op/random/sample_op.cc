// Random generators with MXNet 1.x names and parameters: _random_uniform, _random_normal,
// _random_randint, _random_exponential, _random_gamma, _random_poisson,
// _random_negative_binomial and _random_generalized_negative_binomial. They take no
// inputs, make an array of `shape` and `dtype`, draw from the context's random resource
// (so `random.seed` reproduces them, whatever the thread count) and have no gradient, as
// in MXNet. Their _like forms (_random_uniform_like, ...) take the shape and dtype of an
// input array instead, whose values they ignore (its gradient is zero).
#include <cmath>
#include <optional>
#include <string>

#include "core/op/op_util.h"
#include "core/op/random/sampler_gpu.h"

namespace weft {
namespace op {

struct UniformParam {
  double low = 0, high = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct NormalParam {
  double loc = 0, scale = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct RandIntParam {
  int64_t low = 0, high = 0;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct ExponentialParam {
  double lam = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct GammaParam {
  double alpha = 1, beta = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct PoissonParam {
  double lam = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct NegBinomialParam {
  int k = 1;
  double p = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

struct GenNegBinomialParam {
  double mu = 1, alpha = 1;
  Shape shape = Shape::Unknown();
  std::string ctx;
  std::optional<DType> dtype;
};

// The _like forms: the distribution's fields alone.
struct UniformLikeParam {
  double low = 0, high = 1;
};
struct NormalLikeParam {
  double loc = 0, scale = 1;
};
struct GammaLikeParam {
  double alpha = 1, beta = 1;
};
struct ExponentialLikeParam {
  double lam = 1;
};
struct PoissonLikeParam {
  double lam = 1;
};
struct NegBinomialLikeParam {
  int k = 1;
  double p = 1;
};
struct GenNegBinomialLikeParam {
  double mu = 1, alpha = 1;
};

// Each distribution's fields, shared by the generator and its _like form.
template <typename P>
void UniformFields(ParamSchema<P>& s) {
  s.Field("low", &P::low).Default(0.0).Describe("Lower bound of the distribution (inclusive).");
  s.Field("high", &P::high).Default(1.0).Describe("Upper bound of the distribution (exclusive).");
}
template <typename P>
void NormalFields(ParamSchema<P>& s) {
  s.Field("loc", &P::loc).Default(0.0).Describe("Mean of the distribution.");
  s.Field("scale", &P::scale).Default(1.0).Describe("Standard deviation of the distribution (>= 0).");
}
template <typename P>
void GammaFields(ParamSchema<P>& s) {
  s.Field("alpha", &P::alpha).Default(1.0).Describe("Shape (alpha) of the distribution.");
  s.Field("beta", &P::beta).Default(1.0).Describe("Scale (beta) of the distribution; the mean is alpha * beta.");
}
template <typename P>
void ExponentialFields(ParamSchema<P>& s) {
  s.Field("lam", &P::lam).Default(1.0).Describe("Rate (lambda) of the distribution; the mean is 1 / lam.");
}
template <typename P>
void PoissonFields(ParamSchema<P>& s) {
  s.Field("lam", &P::lam).Default(1.0).Describe("Rate (lambda) of the distribution (>= 0).");
}
template <typename P>
void NegBinomialFields(ParamSchema<P>& s) {
  s.Field("k", &P::k).Default(1).Describe("Number of successes to wait for (k > 0).");
  s.Field("p", &P::p).Default(1.0).Describe("Success probability of each trial, in (0, 1]; the mean is k (1 - p) / p.");
}
template <typename P>
void GenNegBinomialFields(ParamSchema<P>& s) {
  s.Field("mu", &P::mu).Default(1.0).Describe("Mean of the distribution.");
  s.Field("alpha", &P::alpha)
      .Default(1.0)
      .Describe("Dispersion of the distribution (variance mu + alpha mu^2; 0 gives Poisson(mu)).");
}

// The fields every generator shares, after its distribution's own.
template <typename P>
void CommonFields(ParamSchema<P>& s, const char* dtype_doc) {
  // MXNet's default is an unknown shape (None), not the scalar shape (): without `shape` the
  // output's shape comes from the graph (GeneratorShape reads whether it was given).
  s.Field("shape", &P::shape).Default(Shape::Unknown()).Describe("The shape of the output.");
  s.Field("ctx", &P::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &P::dtype).Default(std::nullopt).Describe(dtype_doc);
}

constexpr const char* kFloatDTypeDoc = "The dtype of the output: float16, float32 or float64 (None: float32).";

WEFT_PARAM_SCHEMA(UniformParam, s) {
  UniformFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(NormalParam, s) {
  NormalFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(RandIntParam, s) {
  s.Field("low", &RandIntParam::low).Describe("Lower bound of the distribution (inclusive).");
  s.Field("high", &RandIntParam::high).Describe("Upper bound of the distribution (exclusive).");
  CommonFields(s, "The dtype of the output: int32 or int64 (None: int32).");
}

WEFT_PARAM_SCHEMA(ExponentialParam, s) {
  ExponentialFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(GammaParam, s) {
  GammaFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(PoissonParam, s) {
  PoissonFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(NegBinomialParam, s) {
  NegBinomialFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(GenNegBinomialParam, s) {
  GenNegBinomialFields(s);
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(UniformLikeParam, s) { UniformFields(s); }
WEFT_PARAM_SCHEMA(NormalLikeParam, s) { NormalFields(s); }
WEFT_PARAM_SCHEMA(GammaLikeParam, s) { GammaFields(s); }
WEFT_PARAM_SCHEMA(ExponentialLikeParam, s) { ExponentialFields(s); }
WEFT_PARAM_SCHEMA(PoissonLikeParam, s) { PoissonFields(s); }
WEFT_PARAM_SCHEMA(NegBinomialLikeParam, s) { NegBinomialFields(s); }
WEFT_PARAM_SCHEMA(GenNegBinomialLikeParam, s) { GenNegBinomialFields(s); }

namespace {

[[noreturn]] void BadParam(const NodeAttrs& attrs, const std::string& key, const std::string& expected,
                           const std::string& got) {
  Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", key, "': expected ", expected, ", got ",
        got);
}

void CheckPositive(const NodeAttrs& attrs, const char* key, double v) {
  if (!(v > 0)) BadParam(attrs, key, "a value > 0", param_parse::Format(v));
}

void CheckFinite(const NodeAttrs& attrs, const char* key, double v) {
  if (!std::isfinite(v)) BadParam(attrs, key, "a finite value", param_parse::Format(v));
}

// Distribution parameters are checked by the kernel, as MXNet does: a bad value is the
// error of the array the call made, raised where that array is read or waited for
// (asnumpy, wait_to_read, waitall), not at the call; scripts written for MXNet make such
// calls and only then expect the error. Each check reads the distribution's fields, which
// the generator and its _like form share.
template <typename P>
void CheckUniform(const NodeAttrs& attrs, const P& p) {
  CheckFinite(attrs, "low", p.low);
  CheckFinite(attrs, "high", p.high);
  if (!(p.low <= p.high))
    BadParam(attrs, "high", "high >= low = " + param_parse::Format(p.low), param_parse::Format(p.high));
}
template <typename P>
void CheckNormal(const NodeAttrs& attrs, const P& p) {
  CheckFinite(attrs, "loc", p.loc);
  CheckFinite(attrs, "scale", p.scale);
  if (!(p.scale >= 0)) BadParam(attrs, "scale", "a value >= 0", param_parse::Format(p.scale));
}
template <typename P>
void CheckExponential(const NodeAttrs& attrs, const P& p) {
  CheckPositive(attrs, "lam", p.lam);
  CheckFinite(attrs, "lam", p.lam);
}
template <typename P>
void CheckGamma(const NodeAttrs& attrs, const P& p) {
  CheckPositive(attrs, "alpha", p.alpha);
  CheckFinite(attrs, "alpha", p.alpha);
  CheckPositive(attrs, "beta", p.beta);
  CheckFinite(attrs, "beta", p.beta);
}
template <typename P>
void CheckPoisson(const NodeAttrs& attrs, const P& p) {
  CheckFinite(attrs, "lam", p.lam);
  if (!(p.lam >= 0)) BadParam(attrs, "lam", "a value >= 0", param_parse::Format(p.lam));
}
template <typename P>
void CheckNegBinomial(const NodeAttrs& attrs, const P& p) {
  if (p.k <= 0) BadParam(attrs, "k", "a value > 0", param_parse::Format(p.k));
  if (!(p.p > 0 && p.p <= 1)) BadParam(attrs, "p", "a probability in (0, 1]", param_parse::Format(p.p));
}
template <typename P>
void CheckGenNegBinomial(const NodeAttrs& attrs, const P& p) {
  CheckFinite(attrs, "mu", p.mu);
  CheckFinite(attrs, "alpha", p.alpha);
  if (!(p.mu >= 0)) BadParam(attrs, "mu", "a value >= 0", param_parse::Format(p.mu));
  if (!(p.alpha >= 0)) BadParam(attrs, "alpha", "a value >= 0", param_parse::Format(p.alpha));
}

void CheckParams(const NodeAttrs& a, const UniformParam& p) { CheckUniform(a, p); }
void CheckParams(const NodeAttrs& a, const UniformLikeParam& p) { CheckUniform(a, p); }
void CheckParams(const NodeAttrs& a, const NormalParam& p) { CheckNormal(a, p); }
void CheckParams(const NodeAttrs& a, const NormalLikeParam& p) { CheckNormal(a, p); }
void CheckParams(const NodeAttrs& a, const ExponentialParam& p) { CheckExponential(a, p); }
void CheckParams(const NodeAttrs& a, const ExponentialLikeParam& p) { CheckExponential(a, p); }
void CheckParams(const NodeAttrs& a, const GammaParam& p) { CheckGamma(a, p); }
void CheckParams(const NodeAttrs& a, const GammaLikeParam& p) { CheckGamma(a, p); }
void CheckParams(const NodeAttrs& a, const PoissonParam& p) { CheckPoisson(a, p); }
void CheckParams(const NodeAttrs& a, const PoissonLikeParam& p) { CheckPoisson(a, p); }
void CheckParams(const NodeAttrs& a, const NegBinomialParam& p) { CheckNegBinomial(a, p); }
void CheckParams(const NodeAttrs& a, const NegBinomialLikeParam& p) { CheckNegBinomial(a, p); }
void CheckParams(const NodeAttrs& a, const GenNegBinomialParam& p) { CheckGenNegBinomial(a, p); }
void CheckParams(const NodeAttrs& a, const GenNegBinomialLikeParam& p) { CheckGenNegBinomial(a, p); }
void CheckParams(const NodeAttrs& attrs, const RandIntParam& p) {
  if (!(p.low < p.high))
    BadParam(attrs, "high", "high > low = " + param_parse::Format(p.low), param_parse::Format(p.high));
  if (p.dtype.value_or(DType::kInt32) == DType::kInt32) {
    const int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    if (p.low < lo) BadParam(attrs, "low", "a value in the int32 range for dtype int32", param_parse::Format(p.low));
    if (p.high - 1 > hi)
      BadParam(attrs, "high", "a value <= 2147483648 for dtype int32", param_parse::Format(p.high));
  }
}

// The distribution a generator's (or _like form's) parameters describe.
random::UniformDist DistOf(const UniformParam& p) { return {p.low, p.high}; }
random::UniformDist DistOf(const UniformLikeParam& p) { return {p.low, p.high}; }
random::NormalDist DistOf(const NormalParam& p) { return {p.loc, p.scale}; }
random::NormalDist DistOf(const NormalLikeParam& p) { return {p.loc, p.scale}; }
random::ExponentialDist DistOf(const ExponentialParam& p) { return {p.lam}; }
random::ExponentialDist DistOf(const ExponentialLikeParam& p) { return {p.lam}; }
random::GammaDist DistOf(const GammaParam& p) { return {p.alpha, p.beta}; }
random::GammaDist DistOf(const GammaLikeParam& p) { return {p.alpha, p.beta}; }
random::PoissonDist DistOf(const PoissonParam& p) { return {p.lam}; }
random::PoissonDist DistOf(const PoissonLikeParam& p) { return {p.lam}; }
random::NegBinomialDist DistOf(const NegBinomialParam& p) { return {static_cast<double>(p.k), p.p}; }
random::NegBinomialDist DistOf(const NegBinomialLikeParam& p) { return {static_cast<double>(p.k), p.p}; }
random::GenNegBinomialDist DistOf(const GenNegBinomialParam& p) { return {p.mu, p.alpha}; }
random::GenNegBinomialDist DistOf(const GenNegBinomialLikeParam& p) { return {p.mu, p.alpha}; }

template <typename P>
bool GeneratorShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  // Without a shape parameter the output's shape is left to the graph, as MXNet 1.x's
  // empty shape: randn() + x draws x's shape.
  bool given = false;
  for (const auto& kv : attrs.dict) given |= kv.first == "shape";
  if (!given) return (*out)[0].is_known();
  const P& p = attrs.Params<P>();
  for (int64_t d : p.shape)
    if (d < 0) BadParam(attrs, "shape", "non-negative dimensions", p.shape.ToString());
  AssignShape(attrs, out, 0, p.shape, "output");
  return true;
}

template <typename P>
bool FloatGeneratorType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  DType t = attrs.Params<P>().dtype.value_or(DType::kFloat32);
  if (!IsFloatDType(t)) BadParam(attrs, "dtype", "a floating-point dtype (float16, float32, float64)", DTypeName(t));
  return OutputTypeFromParam(attrs, out, t);
}

bool RandIntType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  DType t = attrs.Params<RandIntParam>().dtype.value_or(DType::kInt32);
  if (t != DType::kInt32 && t != DType::kInt64) BadParam(attrs, "dtype", "int32 or int64", DTypeName(t));
  return OutputTypeFromParam(attrs, out, t);
}

std::vector<ResourceRequest> RandomResource(const NodeAttrs&) { return {ResourceRequest{ResourceType::kRandom}}; }

// Fills out[0] with value(stream of element i), one counter per element; `value` is one of
// sampler.h's per-element draws, which the GPU kernels (sample_op_gpu.cu) run too.
template <typename T, typename Value>
void FillSamples(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& out, OpReq req, Value value) {
  if (req == OpReq::kNullOp) return;
  const int64_t n = out.Size();
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  T* y = out.ptr<T>();
  const bool add = req == OpReq::kAddTo;
  ParallelFor(n, random::kSampleGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      random::ElementStream s = draw.Stream(static_cast<uint64_t>(i));
      random::StoreSample(y, i, value(s), add);
    }
  });
}

// The generators of the floating distributions and their _like forms: one draw per
// element of the output, in its floating dtype.
template <typename P>
void DistCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckParams(attrs, attrs.Params<P>());
  const auto dist = DistOf(attrs.Params<P>());
  if (ctx.run_ctx.ctx.is_gpu()) {
    // The same reservation as FillSamples: nothing for kNullOp, one counter per element.
    if (req[0] == OpReq::kNullOp) return;
    const random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(out[0].Size()));
    return random::FillSamplesGPU(ctx, draw, dist, out[0], req[0], attrs.op->name.c_str());
  }
  WEFT_FLOAT_TYPE_SWITCH(out[0].dtype, T, "Operator '" + attrs.op->name + "': output", {
    FillSamples<T>(attrs, ctx, out[0], req[0],
                   [&](random::ElementStream& s) { return random::SampleFrom<T>(dist, s); });
  });
}

void RandIntCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RandIntParam>();
  CheckParams(attrs, p);
  const int64_t low = p.low;
  // high - low may exceed INT64_MAX; it always fits in uint64.
  const uint64_t range = static_cast<uint64_t>(p.high) - static_cast<uint64_t>(p.low);
  if (ctx.run_ctx.ctx.is_gpu()) {
    if (req[0] == OpReq::kNullOp) return;
    if (out[0].dtype != DType::kInt64 && out[0].dtype != DType::kInt32)
      BadParam(attrs, "dtype", "int32 or int64", DTypeName(out[0].dtype));
    const random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(out[0].Size()));
    return random::FillRandIntGPU(ctx, draw, low, range, out[0], req[0], attrs.op->name.c_str());
  }
  if (out[0].dtype == DType::kInt64) {
    FillSamples<int64_t>(attrs, ctx, out[0], req[0],
                         [&](random::ElementStream& s) { return random::RandIntFrom<int64_t>(s, low, range); });
  } else if (out[0].dtype == DType::kInt32) {
    FillSamples<int32_t>(attrs, ctx, out[0], req[0],
                         [&](random::ElementStream& s) { return random::RandIntFrom<int32_t>(s, low, range); });
  } else {
    BadParam(attrs, "dtype", "int32 or int64", DTypeName(out[0].dtype));
  }
}

// _like forms: the output takes the input's shape and floating dtype.
template <typename P>
bool LikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return SameShape(attrs, in, out);
}

bool LikeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*out)[0];
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name,
          "': input 'data': expected a floating-point array (the samples take its dtype), got ", DTypeName(t));
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

std::vector<GradValue> ZeroGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("zeros_like", {a.inputs[0]})};
}

}  // namespace

#define WEFT_RANDOM_GENERATOR(name, P, type_fn, compute) \
  WEFT_REGISTER_OP(name)                                 \
      .SetNumInputs(0)                                   \
      .SetParams<P>()                                    \
      .SetAttr<FInferShape>("FInferShape", GeneratorShape<P>) \
      .SetAttr<FInferType>("FInferType", type_fn)        \
      .SetAttr<FResourceRequest>("FResourceRequest", RandomResource) \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque) \
      .SetAttr<FCompute>("FCompute<cpu>", compute)

WEFT_RANDOM_GENERATOR(_random_uniform, UniformParam, FloatGeneratorType<UniformParam>, DistCompute<UniformParam>)
    .AddAlias("random_uniform")
    .AddAlias("uniform")
    .Describe("Samples from the uniform distribution on [low, high).");

WEFT_RANDOM_GENERATOR(_random_normal, NormalParam, FloatGeneratorType<NormalParam>, DistCompute<NormalParam>)
    .AddAlias("random_normal")
    .AddAlias("normal")
    .Describe("Samples from the normal distribution with mean loc and standard deviation scale.");

WEFT_RANDOM_GENERATOR(_random_randint, RandIntParam, RandIntType, RandIntCompute)
    .AddAlias("random_randint")
    .Describe("Samples integers uniformly from [low, high).");

WEFT_RANDOM_GENERATOR(_random_exponential, ExponentialParam, FloatGeneratorType<ExponentialParam>,
                      DistCompute<ExponentialParam>)
    .AddAlias("random_exponential")
    .Describe("Samples from the exponential distribution with rate lam (mean 1 / lam).");

WEFT_RANDOM_GENERATOR(_random_gamma, GammaParam, FloatGeneratorType<GammaParam>, DistCompute<GammaParam>)
    .AddAlias("random_gamma")
    .Describe("Samples from the gamma distribution with shape alpha and scale beta (mean alpha * beta).");

WEFT_RANDOM_GENERATOR(_random_poisson, PoissonParam, FloatGeneratorType<PoissonParam>, DistCompute<PoissonParam>)
    .AddAlias("random_poisson")
    .Describe("Samples from the Poisson distribution with rate lam; counts are stored in a floating dtype.");

WEFT_RANDOM_GENERATOR(_random_negative_binomial, NegBinomialParam, FloatGeneratorType<NegBinomialParam>,
                      DistCompute<NegBinomialParam>)
    .AddAlias("random_negative_binomial")
    .Describe("Samples from the negative binomial distribution: failures before the k-th success, each trial "
              "succeeding with probability p (mean k (1 - p) / p); counts are stored in a floating dtype.");

WEFT_RANDOM_GENERATOR(_random_generalized_negative_binomial, GenNegBinomialParam,
                      FloatGeneratorType<GenNegBinomialParam>, DistCompute<GenNegBinomialParam>)
    .AddAlias("random_generalized_negative_binomial")
    .Describe("Samples from the generalized negative binomial distribution with mean mu and dispersion alpha "
              "(variance mu + alpha mu^2; Poisson(mu) when alpha is 0); counts are stored in a floating dtype.");

#undef WEFT_RANDOM_GENERATOR

#define WEFT_RANDOM_LIKE(name, P, what)                                                                \
  WEFT_REGISTER_OP(name)                                                                              \
      .Describe("Samples from the " what " distribution an array of the shape and dtype of data (whose " \
                "values are not read).")                                                              \
      .SetNumInputs(1)                                                                                \
      .AddArgument("data", "NDArray-or-Symbol", "The array whose shape and dtype the output takes")   \
      .SetParams<P>()                                                                                 \
      .SetAttr<FInferShape>("FInferShape", LikeShape<P>)                                              \
      .SetAttr<FInferType>("FInferType", LikeType)                                                    \
      .SetAttr<FResourceRequest>("FResourceRequest", RandomResource)                                  \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                          \
      .SetAttr<FGradient>("FGradient", ZeroGrad)                                                      \
      .SetAttr<FCompute>("FCompute<cpu>", DistCompute<P>)

WEFT_RANDOM_LIKE(_random_uniform_like, UniformLikeParam, "uniform [low, high)");
WEFT_RANDOM_LIKE(_random_normal_like, NormalLikeParam, "normal (mean loc, standard deviation scale)");
WEFT_RANDOM_LIKE(_random_gamma_like, GammaLikeParam, "gamma (shape alpha, scale beta)");
WEFT_RANDOM_LIKE(_random_exponential_like, ExponentialLikeParam, "exponential (rate lam)");
WEFT_RANDOM_LIKE(_random_poisson_like, PoissonLikeParam, "Poisson (rate lam)");
WEFT_RANDOM_LIKE(_random_negative_binomial_like, NegBinomialLikeParam,
                 "negative binomial (k successes, success probability p)");
WEFT_RANDOM_LIKE(_random_generalized_negative_binomial_like, GenNegBinomialLikeParam,
                 "generalized negative binomial (mean mu, dispersion alpha)");

#undef WEFT_RANDOM_LIKE

// Every generator above serves both devices (DistCompute and RandIntCompute hand a GPU
// context's draw to sampler_gpu.h).
#ifdef WEFT_USE_CUDA
WEFT_REGISTER_OP(_random_uniform).SetAttr<FCompute>("FCompute<gpu>", DistCompute<UniformParam>);
WEFT_REGISTER_OP(_random_normal).SetAttr<FCompute>("FCompute<gpu>", DistCompute<NormalParam>);
WEFT_REGISTER_OP(_random_randint).SetAttr<FCompute>("FCompute<gpu>", RandIntCompute);
WEFT_REGISTER_OP(_random_exponential).SetAttr<FCompute>("FCompute<gpu>", DistCompute<ExponentialParam>);
WEFT_REGISTER_OP(_random_gamma).SetAttr<FCompute>("FCompute<gpu>", DistCompute<GammaParam>);
WEFT_REGISTER_OP(_random_poisson).SetAttr<FCompute>("FCompute<gpu>", DistCompute<PoissonParam>);
WEFT_REGISTER_OP(_random_negative_binomial).SetAttr<FCompute>("FCompute<gpu>", DistCompute<NegBinomialParam>);
WEFT_REGISTER_OP(_random_generalized_negative_binomial)
    .SetAttr<FCompute>("FCompute<gpu>", DistCompute<GenNegBinomialParam>);
WEFT_REGISTER_OP(_random_uniform_like).SetAttr<FCompute>("FCompute<gpu>", DistCompute<UniformLikeParam>);
WEFT_REGISTER_OP(_random_normal_like).SetAttr<FCompute>("FCompute<gpu>", DistCompute<NormalLikeParam>);
WEFT_REGISTER_OP(_random_gamma_like).SetAttr<FCompute>("FCompute<gpu>", DistCompute<GammaLikeParam>);
WEFT_REGISTER_OP(_random_exponential_like).SetAttr<FCompute>("FCompute<gpu>", DistCompute<ExponentialLikeParam>);
WEFT_REGISTER_OP(_random_poisson_like).SetAttr<FCompute>("FCompute<gpu>", DistCompute<PoissonLikeParam>);
WEFT_REGISTER_OP(_random_negative_binomial_like)
    .SetAttr<FCompute>("FCompute<gpu>", DistCompute<NegBinomialLikeParam>);
WEFT_REGISTER_OP(_random_generalized_negative_binomial_like)
    .SetAttr<FCompute>("FCompute<gpu>", DistCompute<GenNegBinomialLikeParam>);
#endif

}  // namespace op
}  // namespace weft

// Random generators with MXNet 1.x names and parameters: _random_uniform, _random_normal,
// _random_randint, _random_exponential, _random_gamma and _random_poisson. They take no
// inputs, make an array of `shape` and `dtype`, draw from the context's random resource
// (so `random.seed` reproduces them, whatever the thread count) and have no gradient, as
// in MXNet.
#include <cmath>
#include <optional>
#include <string>

#include "core/op/op_util.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {

struct UniformParam {
  double low = 0, high = 1;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

struct NormalParam {
  double loc = 0, scale = 1;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

struct RandIntParam {
  int64_t low = 0, high = 0;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

struct ExponentialParam {
  double lam = 1;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

struct GammaParam {
  double alpha = 1, beta = 1;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

struct PoissonParam {
  double lam = 1;
  Shape shape = Shape::Scalar();
  std::string ctx;
  std::optional<DType> dtype;
};

// The fields every generator shares, after its distribution's own.
template <typename P>
void CommonFields(ParamSchema<P>& s, const char* dtype_doc) {
  s.Field("shape", &P::shape).Default(Shape::Scalar()).Describe("The shape of the output.");
  s.Field("ctx", &P::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &P::dtype).Default(std::nullopt).Describe(dtype_doc);
}

constexpr const char* kFloatDTypeDoc = "The dtype of the output: float16, float32 or float64 (None: float32).";

WEFT_PARAM_SCHEMA(UniformParam, s) {
  s.Field("low", &UniformParam::low).Default(0.0).Describe("Lower bound of the distribution (inclusive).");
  s.Field("high", &UniformParam::high).Default(1.0).Describe("Upper bound of the distribution (exclusive).");
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(NormalParam, s) {
  s.Field("loc", &NormalParam::loc).Default(0.0).Describe("Mean of the distribution.");
  s.Field("scale", &NormalParam::scale).Default(1.0).Min(0).Describe("Standard deviation of the distribution.");
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(RandIntParam, s) {
  s.Field("low", &RandIntParam::low).Describe("Lower bound of the distribution (inclusive).");
  s.Field("high", &RandIntParam::high).Describe("Upper bound of the distribution (exclusive).");
  CommonFields(s, "The dtype of the output: int32 or int64 (None: int32).");
}

WEFT_PARAM_SCHEMA(ExponentialParam, s) {
  s.Field("lam", &ExponentialParam::lam).Default(1.0).Describe("Rate (lambda) of the distribution; the mean is 1 / lam.");
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(GammaParam, s) {
  s.Field("alpha", &GammaParam::alpha).Default(1.0).Describe("Shape (alpha) of the distribution.");
  s.Field("beta", &GammaParam::beta).Default(1.0).Describe("Scale (beta) of the distribution; the mean is alpha * beta.");
  CommonFields(s, kFloatDTypeDoc);
}

WEFT_PARAM_SCHEMA(PoissonParam, s) {
  s.Field("lam", &PoissonParam::lam).Default(1.0).Min(0).Describe("Rate (lambda) of the distribution.");
  CommonFields(s, kFloatDTypeDoc);
}

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

// Distribution parameters are checked here, where every call (imperative or graph) passes
// before anything runs, so a bad value fails at the call rather than inside the engine.
void CheckParams(const NodeAttrs& attrs, const UniformParam& p) {
  CheckFinite(attrs, "low", p.low);
  CheckFinite(attrs, "high", p.high);
  if (!(p.low < p.high))
    BadParam(attrs, "high", "high > low = " + param_parse::Format(p.low), param_parse::Format(p.high));
}
void CheckParams(const NodeAttrs& attrs, const NormalParam& p) {
  CheckFinite(attrs, "loc", p.loc);
  CheckFinite(attrs, "scale", p.scale);
}
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
void CheckParams(const NodeAttrs& attrs, const ExponentialParam& p) {
  CheckPositive(attrs, "lam", p.lam);
  CheckFinite(attrs, "lam", p.lam);
}
void CheckParams(const NodeAttrs& attrs, const GammaParam& p) {
  CheckPositive(attrs, "alpha", p.alpha);
  CheckFinite(attrs, "alpha", p.alpha);
  CheckPositive(attrs, "beta", p.beta);
  CheckFinite(attrs, "beta", p.beta);
}
void CheckParams(const NodeAttrs& attrs, const PoissonParam& p) { CheckFinite(attrs, "lam", p.lam); }

template <typename P>
bool GeneratorShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const P& p = attrs.Params<P>();
  CheckParams(attrs, p);
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

// Fills out[0] with sample(stream of element i) converted by `convert`, one counter per
// element.
template <typename T, typename Sample, typename Convert>
void FillSamples(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& out, OpReq req, Sample sample,
                 Convert convert) {
  if (req == OpReq::kNullOp) return;
  const int64_t n = out.Size();
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  T* y = out.ptr<T>();
  ParallelFor(n, random::kSampleGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      random::ElementStream s = draw.Stream(static_cast<uint64_t>(i));
      T v = convert(sample(s));
      if (req == OpReq::kAddTo) Store(y + i, req, static_cast<double>(v));
      else y[i] = v;
    }
  });
}

template <typename Sample>
void FillFloat(const NodeAttrs& attrs, const OpContext& ctx, const TBlob& out, OpReq req, Sample sample) {
  WEFT_FLOAT_TYPE_SWITCH(out.dtype, T, "Operator '" + attrs.op->name + "': output", {
    FillSamples<T>(attrs, ctx, out, req, sample, [](double v) { return static_cast<T>(v); });
  });
}

void UniformCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<UniformParam>();
  const double low = p.low, high = p.high, width = p.high - p.low;
  WEFT_FLOAT_TYPE_SWITCH(out[0].dtype, T, "Operator '" + attrs.op->name + "': output", {
    FillSamples<T>(
        attrs, ctx, out[0], req[0], [&](random::ElementStream& s) { return low + width * s.Uniform(); },
        [&](double v) { return random::BelowHigh<T>(v, low, high); });
  });
}

void NormalCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<NormalParam>();
  const double loc = p.loc, scale = p.scale;
  FillFloat(attrs, ctx, out[0], req[0], [&](random::ElementStream& s) { return loc + scale * s.Normal(); });
}

void RandIntCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RandIntParam>();
  const int64_t low = p.low;
  // high - low may exceed INT64_MAX; it always fits in uint64.
  const uint64_t range = static_cast<uint64_t>(p.high) - static_cast<uint64_t>(p.low);
  auto sample = [&](random::ElementStream& s) { return static_cast<uint64_t>(low) + s.Below(range); };
  if (out[0].dtype == DType::kInt64) {
    FillSamples<int64_t>(attrs, ctx, out[0], req[0], sample, [](uint64_t v) { return static_cast<int64_t>(v); });
  } else if (out[0].dtype == DType::kInt32) {
    FillSamples<int32_t>(attrs, ctx, out[0], req[0], sample,
                         [](uint64_t v) { return static_cast<int32_t>(static_cast<int64_t>(v)); });
  } else {
    BadParam(attrs, "dtype", "int32 or int64", DTypeName(out[0].dtype));
  }
}

void ExponentialCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const double inv_lam = 1.0 / attrs.Params<ExponentialParam>().lam;
  FillFloat(attrs, ctx, out[0], req[0],
            [&](random::ElementStream& s) { return -std::log(s.UniformPositive()) * inv_lam; });
}

void GammaCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<GammaParam>();
  const double alpha = p.alpha, beta = p.beta;
  FillFloat(attrs, ctx, out[0], req[0], [&](random::ElementStream& s) { return random::Gamma(s, alpha) * beta; });
}

void PoissonCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const double lam = attrs.Params<PoissonParam>().lam;
  FillFloat(attrs, ctx, out[0], req[0], [&](random::ElementStream& s) { return random::Poisson(s, lam); });
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

WEFT_RANDOM_GENERATOR(_random_uniform, UniformParam, FloatGeneratorType<UniformParam>, UniformCompute)
    .AddAlias("random_uniform")
    .AddAlias("uniform")
    .Describe("Samples from the uniform distribution on [low, high).");

WEFT_RANDOM_GENERATOR(_random_normal, NormalParam, FloatGeneratorType<NormalParam>, NormalCompute)
    .AddAlias("random_normal")
    .AddAlias("normal")
    .Describe("Samples from the normal distribution with mean loc and standard deviation scale.");

WEFT_RANDOM_GENERATOR(_random_randint, RandIntParam, RandIntType, RandIntCompute)
    .AddAlias("random_randint")
    .Describe("Samples integers uniformly from [low, high).");

WEFT_RANDOM_GENERATOR(_random_exponential, ExponentialParam, FloatGeneratorType<ExponentialParam>,
                      ExponentialCompute)
    .AddAlias("random_exponential")
    .Describe("Samples from the exponential distribution with rate lam (mean 1 / lam).");

WEFT_RANDOM_GENERATOR(_random_gamma, GammaParam, FloatGeneratorType<GammaParam>, GammaCompute)
    .AddAlias("random_gamma")
    .Describe("Samples from the gamma distribution with shape alpha and scale beta (mean alpha * beta).");

WEFT_RANDOM_GENERATOR(_random_poisson, PoissonParam, FloatGeneratorType<PoissonParam>, PoissonCompute)
    .AddAlias("random_poisson")
    .Describe("Samples from the Poisson distribution with rate lam; counts are stored in a floating dtype.");

#undef WEFT_RANDOM_GENERATOR

}  // namespace op
}  // namespace weft

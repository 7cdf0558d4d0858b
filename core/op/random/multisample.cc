// Per-element samplers with MXNet 1.x names: _sample_uniform (low, high), _sample_normal
// (mu, sigma), _sample_gamma (alpha, beta), _sample_exponential (lam), _sample_poisson
// (lam), _sample_negative_binomial (k, p) and _sample_generalized_negative_binomial (mu,
// alpha). The parameters come as arrays of one shape [s]; the output has shape [s] x
// `shape`, the `shape`-sized block at index i drawn from the distribution of parameters i.
// Each output element reads its own Philox stream, as the generators' do, so a seed
// reproduces the draws whatever the thread count. The gradient is zero, as in MXNet.
//
// And _sample_unique_zipfian: for each row of shape (batch, num_sampled), num_sampled
// distinct integers of [0, range_max) from the approximately log-uniform distribution
// P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1), with the number of draws taken.
#include <cmath>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/op/op_util.h"
#include "core/op/random/multisample.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {

struct UniqueZipfianParam {
  int64_t range_max = 0;
  Shape shape = Shape::Unknown();
};

WEFT_PARAM_SCHEMA(MultiSampleParam, s) {
  s.Field("shape", &MultiSampleParam::shape)
      .Default(Shape::Scalar())
      .Describe("The shape drawn from each distribution; the output shape is the parameters' shape + shape.");
  s.Field("dtype", &MultiSampleParam::dtype)
      .Default(std::nullopt)
      .Describe("The dtype of the output: float16, float32 or float64 (None: float32 unless the output gives one).");
}

WEFT_PARAM_SCHEMA(UniqueZipfianParam, s) {
  s.Field("range_max", &UniqueZipfianParam::range_max).Describe("The samples are drawn from [0, range_max).");
  s.Field("shape", &UniqueZipfianParam::shape)
      .Default(Shape::Unknown())
      .Describe("(batch_size, num_sampled): num_sampled distinct samples per row.");
}

namespace {

// The inputs' names of a _sample_ operator, for its messages.
struct Family {
  const char* name1;
  const char* name2;  // null for one-parameter families
};

std::string Describe(double v) { return param_parse::Format(v); }

// What the parameters of an invalid distribution (Valid() false: values the samplers
// cannot draw from, such as a negative gamma shape or a NaN rate, which would loop or give
// NaN) were expected to be.

std::string Expected(const random::UniformDist& d) {
  return "finite low < high, got low = " + Describe(d.low) + ", high = " + Describe(d.high);
}
std::string Expected(const random::NormalDist& d) {
  return "finite mu and sigma >= 0, got mu = " + Describe(d.loc) + ", sigma = " + Describe(d.scale);
}
std::string Expected(const random::GammaDist& d) {
  return "finite alpha > 0 and beta > 0, got alpha = " + Describe(d.alpha) + ", beta = " + Describe(d.beta);
}
std::string Expected(const random::ExponentialDist& d) { return "a finite lam > 0, got " + Describe(d.lam); }
std::string Expected(const random::PoissonDist& d) { return "a finite lam >= 0, got " + Describe(d.lam); }
std::string Expected(const random::NegBinomialDist& d) {
  return "finite k > 0 and p in (0, 1], got k = " + Describe(d.k) + ", p = " + Describe(d.p);
}
std::string Expected(const random::GenNegBinomialDist& d) {
  return "finite mu >= 0 and alpha >= 0, got mu = " + Describe(d.mu) + ", alpha = " + Describe(d.alpha);
}

bool MultiSampleShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& t = attrs.Params<MultiSampleParam>().shape;
  for (int64_t d : t)
    if (d < 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape': expected non-negative dimensions, got ",
            t.ToString());
  // The parameters' shape: from any input, else from the output without the sampled axes.
  Shape s;
  for (const Shape& x : *in)
    if (x.known_ndim()) {
      s = x;
      break;
    }
  const Shape& o = (*out)[0];
  if (!s.known_ndim() && o.known_ndim()) {
    if (o.ndim() < t.ndim())
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output: expected at least ", t.ndim(),
            " dimensions (the sampled shape ", t.ToString(), "), got shape ", o.ToString());
    s = Shape(std::vector<int64_t>(o.begin(), o.end() - t.ndim()));
  }
  if (!s.known_ndim()) return false;
  for (size_t i = 0; i < in->size(); ++i) AssignShape(attrs, in, i, s, "input");
  std::vector<int64_t> dims(s.begin(), s.end());
  dims.insert(dims.end(), t.begin(), t.end());
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return s.is_known();
}

bool MultiSampleType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = DType::kUnknown;
  for (DType x : *in)
    if (x != DType::kUnknown) t = x;
  if (t != DType::kUnknown && !IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name,
          "': expected the distribution parameters in a floating-point dtype, got ", DTypeName(t));
  if (t != DType::kUnknown)
    for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, t, "input");
  const std::optional<DType>& want = attrs.Params<MultiSampleParam>().dtype;
  DType o = (*out)[0];
  if (o == DType::kUnknown) o = want.value_or(DType::kFloat32);
  if (!IsFloatDType(o))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'dtype': expected float16, float32 or ",
          "float64, got ", DTypeName(o));
  if (want && *want != o)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': parameter 'dtype' is ", DTypeName(*want),
          " but the output is ", DTypeName(o));
  AssignType(attrs, out, 0, o, "output");
  return t != DType::kUnknown;
}

// The parameter arrays, read once into doubles (they hold one value per distribution).
std::vector<double> ReadParams(const NodeAttrs& attrs, const TBlob& b) {
  std::vector<double> v(static_cast<size_t>(b.Size()));
  WEFT_FLOAT_TYPE_SWITCH(b.dtype, T, "Operator '" + attrs.op->name + "': parameters", {
    const T* p = b.ptr<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  });
  return v;
}

template <typename Dist>
void MultiSampleCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out, const Family& fam) {
  if (req[0] == OpReq::kNullOp) return;
  const int64_t n_dist = in[0].Size();
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].Size() != n_dist)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", fam.name2, "' has shape ",
            in[i].shape.ToString(), ", expected that of '", fam.name1, "', ", in[0].shape.ToString());
  const int64_t per = attrs.Params<MultiSampleParam>().shape.Size();
  const int64_t n = out[0].Size();
  if (n != n_dist * per)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output has ", n, " elements, expected ", n_dist * per);
  const std::vector<double> a = ReadParams(attrs, in[0]);
  const std::vector<double> b = in.size() > 1 ? ReadParams(attrs, in[1]) : std::vector<double>();
  std::vector<Dist> dists;
  dists.reserve(static_cast<size_t>(n_dist));
  for (int64_t i = 0; i < n_dist; ++i) {
    const Dist d = Dist::FromParams(a[i], b.empty() ? 0.0 : b[i]);
    if (!d.Valid())
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': distribution ", i, ": expected ", Expected(d));
    dists.push_back(d);
  }
  if (n == 0) return;
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(out[0].dtype, T, "Operator '" + attrs.op->name + "': output", {
    T* y = out[0].ptr<T>();
    ParallelFor(n, random::kSampleGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
      {
        random::ElementStream s = draw.Stream(static_cast<uint64_t>(i));
        random::StoreSample(y, i, random::SampleFrom<T>(dists[static_cast<size_t>(i / per)], s), add);
      }
    });
  });
}

std::vector<GradValue> ZeroGrads(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  std::vector<GradValue> r;
  for (const GradValue& x : a.inputs) r.push_back(b.Op("zeros_like", {x}));
  return r;
}

std::vector<ResourceRequest> RandomResource(const NodeAttrs&) { return {ResourceRequest{ResourceType::kRandom}}; }

// ---------------------------------------------------------------- _sample_unique_zipfian
bool UniqueZipfianShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const auto& p = attrs.Params<UniqueZipfianParam>();
  if (p.shape.ndim() != 2 || p.shape[0] < 0 || p.shape[1] < 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': parameter 'shape': expected (batch_size, num_sampled), got ", p.shape.ToString());
  if (p.range_max <= 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'range_max': expected a value > 0, got ",
          p.range_max);
  if (p.shape[1] > p.range_max)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape': num_sampled = ", p.shape[1],
          " distinct samples cannot be drawn from range_max = ", p.range_max, " values");
  AssignShape(attrs, out, 0, p.shape, "output");
  AssignShape(attrs, out, 1, Shape{p.shape[0]}, "output");
  return true;
}

bool UniqueZipfianType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kInt64, "output");
  AssignType(attrs, out, 1, DType::kInt64, "output");
  return true;
}

// One stream per row: a row draws until it has num_sampled distinct values, however many
// words that takes, without touching another row's stream.
void UniqueZipfianCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>&,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<UniqueZipfianParam>();
  const int64_t rows = p.shape[0], k = p.shape[1];
  for (size_t j = 0; j < 2; ++j)
    if (out[j].dtype != DType::kInt64 || out[j].Size() != (j == 0 ? rows * k : rows))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output ", j, ": expected int64 of ",
            j == 0 ? rows * k : rows, " elements, got ", DTypeName(out[j].dtype), " of shape ", out[j].shape.ToString());
  if (rows == 0) return;
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(rows));
  int64_t* samples = out[0].ptr<int64_t>();
  int64_t* tries = out[1].ptr<int64_t>();
  const double log_range = std::log(static_cast<double>(p.range_max));
  const OpReq r0 = req[0], r1 = req[1];
  ParallelFor(rows, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      random::ElementStream s = draw.Stream(static_cast<uint64_t>(row));
      std::unordered_set<int64_t> seen;
      int64_t n_tries = 0;
      int64_t* dst = samples + row * k;
      while (static_cast<int64_t>(seen.size()) < k) {
        const int64_t v = std::llround(std::exp(s.Uniform() * log_range)) - 1;
        ++n_tries;
        if (seen.insert(v).second && r0 != OpReq::kNullOp) Store(dst + seen.size() - 1, r0, static_cast<double>(v));
      }
      if (r1 != OpReq::kNullOp) Store(tries + row, r1, static_cast<double>(n_tries));
    }
  });
}

}  // namespace

#define WEFT_SAMPLE_OP(name, Dist, n_in, in1, doc1, in2, what)                                     \
  WEFT_REGISTER_OP(_sample_##name)                                                                      \
      .AddAlias("sample_" #name)                                                                        \
      .Describe("Samples from " what " distributions whose parameters are given as arrays of one shape; " \
                "the output has that shape followed by `shape`, each `shape`-sized block drawn from "   \
                "the distribution of the parameters at its index.")                                     \
      .SetNumInputs(n_in)                                                                               \
      .SetParams<MultiSampleParam>()                                                                    \
      .SetAttr<FInferShape>("FInferShape", MultiSampleShape)                                            \
      .SetAttr<FInferType>("FInferType", MultiSampleType)                                               \
      .SetAttr<FResourceRequest>("FResourceRequest", RandomResource)                                    \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                            \
      .SetAttr<FGradient>("FGradient", ZeroGrads)                                                       \
      .SetAttr<FCompute>("FCompute<cpu>",                                                               \
                         [](const NodeAttrs& a, const OpContext& c, const std::vector<TBlob>& i,        \
                            const std::vector<OpReq>& r, const std::vector<TBlob>& o) {                 \
                           MultiSampleCompute<random::Dist>(a, c, i, r, o, Family{in1, in2});           \
                         })                                                                             \
      .AddArgument(in1, "NDArray-or-Symbol", doc1)

WEFT_SAMPLE_OP(uniform, UniformDist, 2, "low", "Lower bounds of the distributions", "high", "uniform [low, high)")
    .AddArgument("high", "NDArray-or-Symbol", "Upper bounds of the distributions");
WEFT_SAMPLE_OP(normal, NormalDist, 2, "mu", "Means of the distributions", "sigma", "normal")
    .AddArgument("sigma", "NDArray-or-Symbol", "Standard deviations of the distributions");
WEFT_SAMPLE_OP(gamma, GammaDist, 2, "alpha", "Shapes (alpha) of the distributions", "beta",
               "gamma (shape alpha, scale beta)")
    .AddArgument("beta", "NDArray-or-Symbol", "Scales (beta) of the distributions");
WEFT_SAMPLE_OP(exponential, ExponentialDist, 1, "lam", "Rates (lambda) of the distributions", nullptr,
               "exponential (rate lam)");
WEFT_SAMPLE_OP(poisson, PoissonDist, 1, "lam", "Rates (lambda) of the distributions", nullptr,
               "Poisson (rate lam; counts in a floating dtype)");
WEFT_SAMPLE_OP(negative_binomial, NegBinomialDist, 2, "k", "Numbers of successes to wait for", "p",
               "negative binomial (failures before the k-th success)")
    .AddArgument("p", "NDArray-or-Symbol", "Success probabilities of each trial");
WEFT_SAMPLE_OP(generalized_negative_binomial, GenNegBinomialDist, 2, "mu", "Means of the distributions", "alpha",
               "generalized negative binomial (mean mu, dispersion alpha)")
    .AddArgument("alpha", "NDArray-or-Symbol", "Dispersions of the distributions (variance mu + alpha mu^2)");

#undef WEFT_SAMPLE_OP

WEFT_REGISTER_OP(_sample_unique_zipfian)
    .Describe("Draws, for each of batch_size rows, num_sampled distinct integers of [0, range_max) from the "
              "approximately log-uniform (Zipfian) distribution P(c) = (log(c + 2) - log(c + 1)) / "
              "log(range_max + 1), without replacement; the second output is the number of draws each row took.")
    .SetNumInputs(0)
    .SetNumOutputs(2)
    .SetParams<UniqueZipfianParam>()
    .SetAttr<FInferShape>("FInferShape", UniqueZipfianShape)
    .SetAttr<FInferType>("FInferType", UniqueZipfianType)
    .SetAttr<FResourceRequest>("FResourceRequest", RandomResource)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", UniqueZipfianCompute);

}  // namespace op
}  // namespace weft

// Random operators: moments against the distributions' formulas, ranges, reproducibility
// from the seed and across thread counts, multinomial frequencies, shuffle as a row
// permutation, and the errors for bad parameters.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/resource/resource.h"
#include "tests/cpp/op_test_util.h"

namespace weft {
namespace test {
namespace {

constexpr int64_t kN = 100000;

void Seed(uint64_t seed) { ResourceManager::Get()->SeedRandom(seed); }

std::vector<double> Draw(const std::string& op, const KwArgs& params) { return ToVector(Run1(op, {}, params)); }

struct Moments {
  double mean = 0, var = 0;
};

Moments MomentsOf(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

// Sample mean and variance within 5 standard errors of the distribution's mean `mu`,
// variance `var` and fourth central moment `mu4` (the variance of the sample variance is
// (mu4 - var^2) / n).
void ExpectMoments(const std::vector<double>& v, double mu, double var, double mu4, const std::string& what) {
  const double n = static_cast<double>(v.size());
  Moments m = MomentsOf(v);
  EXPECT_NEAR(m.mean, mu, 5 * std::sqrt(var / n)) << what << ": mean";
  EXPECT_NEAR(m.var, var, 5 * std::sqrt((mu4 - var * var) / n)) << what << ": variance";
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message of the error a call raises, wherever it surfaces (at the call for parameter
// checks, at the read for checks of input values).
std::string ErrorOfRun(const std::string& op, const std::vector<NDArray>& in, const KwArgs& params) {
  return ErrorOf([&] {
    for (const NDArray& o : Run(op, in, params)) ToVector(o);
  });
}

void ExpectMentions(const std::string& msg, const std::vector<std::string>& parts) {
  ASSERT_FALSE(msg.empty()) << "expected an error mentioning " << parts[0];
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

// ---------------------------------------------------------------- moments and ranges
TEST(Random, UniformMomentsAndRange) {
  Seed(11);
  for (const char* dtype : {"float32", "float64"}) {
    std::vector<double> v = Draw("_random_uniform", {{"low", "-2"}, {"high", "3"}, {"shape", "(100000,)"}, {"dtype", dtype}});
    ASSERT_EQ(static_cast<int64_t>(v.size()), kN);
    for (double x : v) {
      ASSERT_GE(x, -2.0);
      ASSERT_LT(x, 3.0);
    }
    const double w = 5;
    ExpectMoments(v, 0.5, w * w / 12, std::pow(w, 4) / 80, std::string("uniform ") + dtype);
  }
}

TEST(Random, UniformWithLowEqualToHighGivesLow) {
  // MXNet allows low == high (the interval shrinks to one point).
  Seed(13);
  ExpectAllNear(Draw("_random_uniform", {{"low", "2.5"}, {"high", "2.5"}, {"shape", "(7,)"}}),
                std::vector<double>(7, 2.5), 0, 0, "uniform [2.5, 2.5]");
}

TEST(Random, UniformStaysBelowHighAfterRounding) {
  Seed(12);
  // Near 1, float16 steps by 2^-10 = 0.000977: draws in [1.000488, 1.0009) round up to
  // 1.000977, past high, and must come back to 1, the only float16 value in range.
  NDArray y = Run1("uniform", {}, {{"low", "1"}, {"high", "1.0009"}, {"shape", "(5000,)"}, {"dtype", "float16"}});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  ExpectAllNear(ToVector(y), std::vector<double>(5000, 1.0), 0, 0, "float16 [1, 1.0009)");
  // The wider range [1, 1.001) holds both 1 and 1 + 2^-10.
  std::map<double, int> seen;
  for (double x : Draw("uniform", {{"low", "1"}, {"high", "1.001"}, {"shape", "(5000,)"}, {"dtype", "float16"}})) {
    ASSERT_GE(x, 1.0);
    ASSERT_LT(x, 1.001);
    ++seen[x];
  }
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Random, NormalMoments) {
  Seed(13);
  for (const char* dtype : {"float32", "float64"}) {
    std::vector<double> v = Draw("_random_normal", {{"loc", "1.5"}, {"scale", "2"}, {"shape", "(200,500)"}, {"dtype", dtype}});
    ASSERT_EQ(static_cast<int64_t>(v.size()), kN);
    ExpectMoments(v, 1.5, 4, 3 * 16, std::string("normal ") + dtype);
    // The fraction within one standard deviation is 0.6827.
    double inside = 0;
    for (double x : v) inside += std::fabs(x - 1.5) < 2;
    EXPECT_NEAR(inside / kN, 0.682689, 5 * std::sqrt(0.68 * 0.32 / kN));
  }
  std::vector<double> zero_scale = Draw("normal", {{"loc", "-4"}, {"scale", "0"}, {"shape", "(10,)"}});
  ExpectAllNear(zero_scale, std::vector<double>(10, -4.0), 0, 0, "scale 0");
}

TEST(Random, ExponentialMoments) {
  Seed(14);
  const double lam = 2.5;
  std::vector<double> v = Draw("_random_exponential", {{"lam", "2.5"}, {"shape", "(100000,)"}});
  for (double x : v) ASSERT_GE(x, 0.0);
  ExpectMoments(v, 1 / lam, 1 / (lam * lam), 9 / std::pow(lam, 4), "exponential");
}

TEST(Random, GammaMomentsSmallAndLargeShape) {
  Seed(15);
  for (double alpha : {0.5, 3.0}) {
    const double beta = 1.5;
    std::vector<double> v = Draw("_random_gamma", {{"alpha", param_parse::Format(alpha)}, {"beta", "1.5"},
                                                   {"shape", "(100000,)"}, {"dtype", "float64"}});
    for (double x : v) ASSERT_GT(x, 0.0);
    const double var = alpha * beta * beta;
    ExpectMoments(v, alpha * beta, var, (3 * alpha * alpha + 6 * alpha) * std::pow(beta, 4),
                  "gamma alpha=" + param_parse::Format(alpha));
  }
}

TEST(Random, PoissonMomentsBothAlgorithms) {
  Seed(16);
  for (double lam : {3.5, 50.0}) {  // multiplication below 10, transformed rejection above
    std::vector<double> v = Draw("_random_poisson", {{"lam", param_parse::Format(lam)}, {"shape", "(100000,)"}});
    for (double x : v) {
      ASSERT_GE(x, 0.0);
      ASSERT_EQ(x, std::floor(x));
    }
    ExpectMoments(v, lam, lam, lam * (1 + 3 * lam), "poisson lam=" + param_parse::Format(lam));
    // P(X = floor(lam)) against the probability mass function.
    const double k = std::floor(lam);
    const double pk = std::exp(k * std::log(lam) - lam - std::lgamma(k + 1));
    double hits = 0;
    for (double x : v) hits += x == k;
    EXPECT_NEAR(hits / kN, pk, 5 * std::sqrt(pk * (1 - pk) / kN)) << "lam=" << lam;
  }
  std::vector<double> zero = Draw("_random_poisson", {{"lam", "0"}, {"shape", "(8,)"}});
  ExpectAllNear(zero, std::vector<double>(8, 0.0), 0, 0, "lam 0");
}

TEST(Random, RandIntRangeMomentsAndBins) {
  Seed(17);
  NDArray y = Run1("_random_randint", {}, {{"low", "-3"}, {"high", "7"}, {"shape", "(100000,)"}});
  ASSERT_EQ(y.dtype(), DType::kInt32);
  std::vector<double> v = ToVector(y);
  std::vector<double> counts(10, 0);
  for (double x : v) {
    ASSERT_GE(x, -3.0);
    ASSERT_LT(x, 7.0);
    ++counts[static_cast<int>(x) + 3];
  }
  const double m = 10;
  ExpectMoments(v, 1.5, (m * m - 1) / 12, (m * m - 1) * (3 * m * m - 7) / 240, "randint");
  // Chi-square over the 10 values (9 degrees of freedom; 40 is beyond the 1e-5 quantile).
  double chi2 = 0;
  for (double c : counts) chi2 += (c - kN / m) * (c - kN / m) / (kN / m);
  EXPECT_LT(chi2, 40.0);

  // A range wider than INT64_MAX, in int64.
  NDArray w = Run1("random_randint", {}, {{"low", "-9000000000000000000"}, {"high", "9000000000000000000"},
                                          {"shape", "(1000,)"}, {"dtype", "int64"}});
  ASSERT_EQ(w.dtype(), DType::kInt64);
  std::vector<int64_t> wide(1000);
  w.SyncCopyToCPU(wide.data(), wide.size() * sizeof(int64_t));
  int negative = 0;
  for (int64_t x : wide) {
    ASSERT_GE(x, -9000000000000000000LL);
    ASSERT_LT(x, 9000000000000000000LL);
    negative += x < 0;
  }
  EXPECT_NEAR(negative, 500, 5 * std::sqrt(250.0));
}

TEST(Random, OutputShapeAndDefaultDType) {
  Seed(18);
  NDArray y = Run1("random_uniform", {}, {{"shape", "(3,4,5)"}});
  EXPECT_EQ(y.shape(), Shape({3, 4, 5}));
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  NDArray e = Run1("_random_gamma", {}, {{"shape", "(0,4)"}});
  EXPECT_EQ(e.shape(), Shape({0, 4}));
  EXPECT_EQ(Op::Get("uniform"), Op::Get("_random_uniform"));
  EXPECT_EQ(Op::Get("normal"), Op::Get("_random_normal"));
  EXPECT_EQ(Op::Get("shuffle"), Op::Get("_shuffle"));
  EXPECT_EQ(Op::Get("sample_multinomial"), Op::Get("_sample_multinomial"));
  // MXNet gives the samplers no gradient (_sample_multinomial has one for its log
  // probabilities).
  for (const char* op : {"_random_uniform", "_random_normal", "_random_randint", "_random_exponential", "_random_gamma",
                         "_random_poisson", "_shuffle"})
    EXPECT_FALSE(Op::GetAttr<FGradient>("FGradient").Contains(Op::Get(op))) << op;
}

// ---------------------------------------------------------------- reproducibility
TEST(Random, SameSeedSameDrawsNextDrawDiffers) {
  const std::vector<std::pair<std::string, KwArgs>> cases = {
      {"_random_uniform", {{"shape", "(1000,)"}}},
      {"_random_normal", {{"shape", "(1000,)"}, {"dtype", "float64"}}},
      {"_random_randint", {{"low", "0"}, {"high", "1000000"}, {"shape", "(1000,)"}}},
      {"_random_exponential", {{"shape", "(1000,)"}}},
      {"_random_gamma", {{"alpha", "0.7"}, {"shape", "(1000,)"}}},
      {"_random_poisson", {{"lam", "20"}, {"shape", "(1000,)"}}},
  };
  for (const auto& c : cases) {
    Seed(42);
    std::vector<double> a = Draw(c.first, c.second);
    std::vector<double> a_next = Draw(c.first, c.second);
    Seed(42);
    std::vector<double> b = Draw(c.first, c.second);
    Seed(43);
    std::vector<double> other = Draw(c.first, c.second);
    ExpectAllNear(b, a, 0, 0, c.first + " same seed");
    EXPECT_NE(a, a_next) << c.first << ": the next draw repeats the first";
    EXPECT_NE(a, other) << c.first << ": seeds 42 and 43 draw the same";
  }
}

// Calls the CPU kernel directly, with a generator state of its own, so that the OpenMP
// thread count of this thread is the one the kernel sees.
std::vector<double> KernelDraw(const std::string& op, const KwArgs& params, const Shape& shape, DType dtype, int threads) {
  NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
  RandomState state;
  state.seed = 1234;
  state.offset = 77;
  Resource res;
  res.type = ResourceType::kRandom;
  res.random = &state;
  OpContext ctx;
  ctx.requested = {res};
  // float64 and int64 are both 8 bytes: one buffer serves either.
  std::vector<int64_t> raw(static_cast<size_t>(shape.Size()));
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  Op::GetAttr<FCompute>("FCompute<cpu>")[attrs.op](attrs, ctx, {}, {OpReq::kWriteTo},
                                                  {TBlob(raw.data(), shape, dtype, Context::CPU())});
  omp_set_num_threads(before);
  EXPECT_EQ(state.offset, 77u + static_cast<uint64_t>(shape.Size())) << op << ": one counter per element";
  std::vector<double> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (dtype == DType::kInt64) out[i] = static_cast<double>(raw[i]);
    else std::memcpy(&out[i], &raw[i], sizeof(double));
  }
  return out;
}

TEST(Random, DrawsDoNotDependOnThreadCount) {
  const Shape shape{50000};  // several chunks of the parallel loop
  for (const std::string op : {"_random_uniform", "_random_normal", "_random_exponential", "_random_gamma",
                                "_random_poisson", "_random_randint"}) {
    const DType dtype = op == "_random_randint" ? DType::kInt64 : DType::kFloat64;
    KwArgs p = {{"shape", "(50000,)"}, {"dtype", DTypeName(dtype)}};
    if (op == "_random_poisson") p.push_back({"lam", "30"});
    if (op == "_random_gamma") p.push_back({"alpha", "0.4"});
    if (op == "_random_randint") p.insert(p.end(), {{"low", "-5"}, {"high", "1000000007"}});
    std::vector<double> one = KernelDraw(op, p, shape, dtype, 1);
    std::vector<double> four = KernelDraw(op, p, shape, dtype, 4);
    ExpectAllNear(four, one, 0, 0, op + ": 1 vs 4 threads");
    EXPECT_NE(one[0], one[1]) << op;
  }
}

// ---------------------------------------------------------------- multinomial
TEST(Random, MultinomialFrequenciesAndLogProb) {
  Seed(19);
  NDArray probs = MakeArray({2, 3}, {0.1, 0.2, 0.7, 0.5, 0.0, 0.5}, DType::kFloat32);
  std::vector<NDArray> outs = test::Run("_sample_multinomial", {probs}, {{"shape", "(50000,)"}, {"get_prob", "True"}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].shape(), Shape({2, 50000}));
  EXPECT_EQ(outs[0].dtype(), DType::kInt32);
  EXPECT_EQ(outs[1].dtype(), DType::kFloat32);
  std::vector<double> idx = ToVector(outs[0]), logp = ToVector(outs[1]);
  const double p[2][3] = {{0.1, 0.2, 0.7}, {0.5, 0.0, 0.5}};
  for (int r = 0; r < 2; ++r) {
    std::vector<double> count(3, 0);
    for (int s = 0; s < 50000; ++s) {
      const int j = static_cast<int>(idx[r * 50000 + s]);
      ASSERT_TRUE(j >= 0 && j < 3) << j;
      ++count[j];
      ASSERT_NEAR(logp[r * 50000 + s], std::log(static_cast<float>(p[r][j])), 1e-6);
    }
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(count[j] / 50000, p[r][j], 5 * std::sqrt(p[r][j] * (1 - p[r][j]) / 50000) + 1e-12)
          << "row " << r << " category " << j;
  }
  // One sample per distribution by default, in the requested dtype.
  NDArray one = Run1("sample_multinomial", {probs}, {{"dtype", "float64"}});
  EXPECT_EQ(one.shape(), Shape({2}));
  EXPECT_EQ(one.dtype(), DType::kFloat64);
  EXPECT_NE(ToVector(one)[1], 1.0);  // category 1 of row 1 has probability 0
}

// ---------------------------------------------------------------- shuffle
TEST(Random, ShuffleIsARowPermutation) {
  Seed(20);
  const int rows = 1000;
  std::vector<double> v;
  for (int r = 0; r < rows; ++r) v.insert(v.end(), {double(r), r + 0.5, -double(r)});
  NDArray x = MakeArray({rows, 3}, v, DType::kFloat64);
  std::vector<double> y = ToVector(Run1("shuffle", {x}));
  ASSERT_EQ(y.size(), v.size());
  std::vector<bool> seen(rows, false);
  int moved = 0;
  for (int r = 0; r < rows; ++r) {
    const double first = y[r * 3];
    const int src = static_cast<int>(first);
    ASSERT_TRUE(src >= 0 && src < rows && first == src);
    EXPECT_FALSE(seen[src]) << "row " << src << " appears twice";
    seen[src] = true;
    EXPECT_EQ(y[r * 3 + 1], src + 0.5);
    EXPECT_EQ(y[r * 3 + 2], -src);
    moved += src != r;
  }
  EXPECT_GT(moved, rows / 2);  // a random permutation of 1000 fixes about one row

  // Reproducible from the seed, and the same when the output is the input.
  Seed(21);
  std::vector<double> a = ToVector(Run1("_shuffle", {x}));
  Seed(21);
  std::vector<NDArray> outs = {x};
  Context cpu = Context::CPU();
  imperative::Invoke(MakeAttrs(Op::Get("_shuffle"), {}), {x}, &outs, &cpu, nullptr, false);
  ExpectAllNear(ToVector(x), a, 0, 0, "in place");

  // int32, 1-D.
  NDArray ints = MakeArray({6}, {10, 11, 12, 13, 14, 15}, DType::kInt32);
  std::vector<double> s = ToVector(Run1("_shuffle", {ints}));
  std::sort(s.begin(), s.end());
  ExpectAllNear(s, {10, 11, 12, 13, 14, 15}, 0, 0, "int32 permutation");
}

// ---------------------------------------------------------------- errors
TEST(Random, BadParametersNameOpKeyExpectedAndGot) {
  // A shape is given: without one the output shape is left to a graph to infer.
  ExpectMentions(ErrorOfRun("_random_uniform", {}, {{"shape", "(2)"}, {"low", "2"}, {"high", "1"}}),
                 {"_random_uniform", "'high'", "high >= low = 2", "got 1"});
  ExpectMentions(ErrorOfRun("_random_normal", {}, {{"shape", "(2)"}, {"scale", "-1"}}), {"_random_normal", "'scale'", ">= 0", "-1"});
  ExpectMentions(ErrorOfRun("_random_exponential", {}, {{"shape", "(2)"}, {"lam", "0"}}), {"_random_exponential", "'lam'", "> 0", "got 0"});
  ExpectMentions(ErrorOfRun("_random_poisson", {}, {{"shape", "(2)"}, {"lam", "-0.5"}}), {"_random_poisson", "'lam'", "-0.5"});
  ExpectMentions(ErrorOfRun("_random_gamma", {}, {{"shape", "(2)"}, {"alpha", "-1"}}), {"_random_gamma", "'alpha'", "> 0", "got -1"});
  ExpectMentions(ErrorOfRun("_random_gamma", {}, {{"shape", "(2)"}, {"beta", "0"}}), {"_random_gamma", "'beta'", "> 0", "got 0"});
  ExpectMentions(ErrorOfRun("_random_randint", {}, {{"shape", "(2)"}, {"low", "5"}, {"high", "5"}}),
                 {"_random_randint", "'high'", "high > low = 5", "got 5"});
  ExpectMentions(ErrorOfRun("_random_randint", {}, {{"shape", "(2)"}, {"low", "0"}, {"high", "5000000000"}}),
                 {"_random_randint", "'high'", "int32", "5000000000"});
  ExpectMentions(ErrorOfRun("_random_randint", {}, {{"shape", "(2)"}, {"high", "5"}}), {"_random_randint", "required", "'low'"});
  ExpectMentions(ErrorOfRun("_random_uniform", {}, {{"shape", "(2)"}, {"dtype", "int32"}}), {"_random_uniform", "'dtype'", "floating", "int32"});
  ExpectMentions(ErrorOfRun("_random_randint", {}, {{"shape", "(2)"}, {"low", "0"}, {"high", "3"}, {"dtype", "float32"}}),
                 {"_random_randint", "'dtype'", "int32 or int64", "float32"});
  ExpectMentions(ErrorOfRun("_random_normal", {}, {{"shape", "(2,-3)"}}), {"_random_normal", "'shape'", "(2,-3)"});
}

TEST(Random, MultinomialBadInputs) {
  // A row need not sum to 1 (it is drawn in proportion), but it needs some mass.
  NDArray no_mass = MakeArray({2, 2}, {0.5, 0.5, 0, 0}, DType::kFloat32);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {no_mass}, {}),
                 {"_sample_multinomial", "'data'", "distribution 1", "positive total", "got 0"});
  // Sums to 1, but not with probabilities.
  NDArray negative = MakeArray({3}, {0.5, -0.5, 1}, DType::kFloat64);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {negative}, {}), {"_sample_multinomial", "[0, 1]", "-0.5", "category 1"});
  NDArray above_one = MakeArray({2}, {1.5, -0.5}, DType::kFloat64);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {above_one}, {}), {"_sample_multinomial", "[0, 1]", "1.5", "category 0"});
  NDArray ints = MakeArray({2}, {0, 1}, DType::kInt32);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {ints}, {}), {"_sample_multinomial", "'data'", "floating", "int32"});
  NDArray scalar = MakeArray(Shape::Scalar(), {1}, DType::kFloat32);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {scalar}, {}), {"_sample_multinomial", "at least 1 dimension", "()"});
  NDArray wide = MakeArray({300}, std::vector<double>(300, 1.0 / 300), DType::kFloat64);
  ExpectMentions(ErrorOfRun("_sample_multinomial", {wide}, {{"dtype", "uint8"}}),
                 {"_sample_multinomial", "'dtype'", "299", "uint8"});
  ExpectMentions(ErrorOfRun("_sample_multinomial", {wide}, {{"dtype", "int64"}}),
                 {"_sample_multinomial", "'dtype'", "int32, uint8", "int64"});
  // A failed call leaves the generator usable.
  Seed(5);
  NDArray ok = MakeArray({2}, {0.25, 0.75}, DType::kFloat32);
  std::vector<double> s = ToVector(Run1("_sample_multinomial", {ok}, {{"shape", "(4,)"}}));
  for (double j : s) EXPECT_TRUE(j == 0 || j == 1);
}

}  // namespace
}  // namespace test
}  // namespace weft

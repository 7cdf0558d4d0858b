// Scalar samplers shared by the random operators, drawn from per-element Philox streams.
// They compile for the host and the device (WEFT_XINLINE), so the GPU kernels
// (sample_op_gpu.cu, multisample_gpu.cu, shuffle_gpu.cu) draw exactly as the CPU loops do:
// the per-element functions (the distributions' FromParams, Valid and Draw, and at the end
// SampleFrom, RandIntFrom, StoreSample, ShufflePermutation) are the one definition both run.
//
// A draw reserves one counter per output element from the context's RandomState; element i
// reads the Philox blocks (counter = first + i, stream = 0, 1, 2, ...) one 32-bit word at a
// time. Its value therefore depends only on the seed, the draws before it and i, never on
// how the loop is split across threads, and rejection samplers (gamma, Poisson, randint)
// can take as many words as they need without touching a neighbour's stream.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/base/convert.h"
#include "core/base/error.h"
#include "core/op/elemwise/math.h"
#include "core/op/registry.h"
#include "core/resource/philox.h"

namespace weft {
namespace op {
namespace random {

// Elements per thread chunk: a Philox block costs tens of nanoseconds, so threads pay off
// much earlier than for plain elementwise loops.
constexpr int64_t kSampleGrain = 1 << 12;

WEFT_XINLINE bool Finite(double x) {
#if defined(__CUDA_ARCH__)
  return isfinite(x);
#else
  return std::isfinite(x);
#endif
}

class ElementStream {
 public:
  WEFT_XINLINE ElementStream(const Philox4x32& gen, uint64_t counter) : gen_(gen), counter_(counter) {}

  WEFT_XINLINE uint32_t Next32() {
    if (used_ == 4) {
      gen_.Generate(counter_, block_++, buf_);
      used_ = 0;
    }
    return buf_[used_++];
  }
  WEFT_XINLINE uint64_t Next64() {
    uint64_t hi = Next32();
    return (hi << 32) | Next32();
  }
  // Uniform in [0, 1), 53 random bits.
  WEFT_XINLINE double Uniform() { return static_cast<double>(Next64() >> 11) * 0x1p-53; }
  // Uniform in (0, 1], for logarithms.
  WEFT_XINLINE double UniformPositive() { return static_cast<double>((Next64() >> 11) + 1) * 0x1p-53; }
  // Standard normal (Box-Muller; the second value of the pair is not kept so that every
  // call is independent of the ones before it in the same stream).
  WEFT_XINLINE double Normal() {
    double r = std::sqrt(-2.0 * std::log(UniformPositive()));
    return r * std::cos(6.283185307179586476925 * Uniform());
  }
  // Uniform in [0, range) for range >= 1, unbiased: 64-bit words below 2^64 mod range are
  // rejected so that every residue is hit by the same number of words.
  WEFT_XINLINE uint64_t Below(uint64_t range) {
    uint64_t threshold = (0 - range) % range;
    for (;;) {
      uint64_t x = Next64();
      if (x >= threshold) return x % range;
    }
  }

 private:
  Philox4x32 gen_;
  uint64_t counter_;
  uint64_t block_ = 0;
  uint32_t buf_[4] = {0, 0, 0, 0};
  int used_ = 4;
};

// The generator and first counter of a draw of `n` elements. The operator holds the
// random resource for writing while it runs, so reserving needs no lock.
struct Draw {
  Philox4x32 gen;
  uint64_t first;
  ElementStream Stream(uint64_t i) const { return ElementStream(gen, first + i); }
};

inline Draw Reserve(const NodeAttrs& attrs, const OpContext& ctx, uint64_t n) {
  WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].random != nullptr, kInternal, "Operator '", attrs.op->name,
             "': expected a random resource, got none (FResourceRequest not honoured)");
  RandomState* state = ctx.requested[0].random;
  return Draw{Philox4x32(state->seed), state->Reserve(n)};
}

// Gamma(alpha, 1) by Marsaglia and Tsang ("A simple method for generating gamma
// variables", 2000); alpha < 1 draws Gamma(alpha + 1) and scales by U^(1 / alpha).
WEFT_XINLINE double Gamma(ElementStream& s, double alpha) {
  double boost = 1.0;
  if (alpha < 1.0) {
    boost = std::pow(s.UniformPositive(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = s.Normal();
    double t = 1.0 + c * x;
    if (t <= 0) continue;
    double v = t * t * t;
    double u = s.UniformPositive();
    double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v * boost;
  }
}

// Poisson(lam): multiplication of uniforms below lam = 10, where it takes lam + 1 draws
// on average; above, the transformed rejection of Hoermann ("The transformed rejection
// method for generating Poisson random variables", 1993), which takes about 1.2.
WEFT_XINLINE double Poisson(ElementStream& s, double lam) {
  if (lam <= 0) return 0;
  // A rate that overflowed in a mixture (negative binomials) or is NaN has no draws to
  // make: the rejection loop below would never accept.
  if (!(lam < std::numeric_limits<double>::infinity())) return lam;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = s.UniformPositive();
    double k = 0;
    while (prod > limit) {
      k += 1;
      prod *= s.UniformPositive();
    }
    return k;
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double v_r = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double u = s.Uniform() - 0.5;
    double v = s.UniformPositive();
    double us = 0.5 - std::fabs(u);
    double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    // math::lgamma: std::lgamma writes the global signgam, a race in the parallel loop.
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -lam + k * loglam - math::lgamma(k + 1))
      return k;
  }
}

// `v` (drawn in [low, high) in double) as T, kept below `high` when rounding to T would
// reach it.
template <typename T>
WEFT_XINLINE T BelowHigh(double v, double low, double high) {
  T t = static_cast<T>(v);
  if (static_cast<double>(t) < high) return t;
  // A fraction of the larger of |high| and the range: small enough to stay in range, large
  // enough to cross a rounding step of T near high in a few tens of iterations (bfloat16).
  const double step = std::fmax(std::fabs(high), high - low) * 0x1p-12;
  while (static_cast<double>(t) >= high && v > low) {
    v -= step;
    t = static_cast<T>(v);
  }
  return static_cast<double>(t) < low ? static_cast<T>(low) : t;
}

// The distributions, one struct each: Draw takes one value from an element's stream;
// Convert<T> turns it into the output type (uniform keeps it below `high` after rounding).
// The generators (_random_*), their _like forms and the per-element samplers (_sample_*)
// share them, so one distribution draws the same way everywhere.
//
// The per-element samplers (_sample_*) build a distribution from each pair of parameter
// values with FromParams (the second is ignored by one-parameter families) and draw only
// from those that are Valid (the CPU rejects the others with a message, the GPU, which
// cannot stop on a value it reads, writes NaN for them).
struct UniformDist {
  double low, high;
  WEFT_XINLINE static UniformDist FromParams(double a, double b) { return {a, b}; }
  WEFT_XINLINE bool Valid() const { return Finite(low) && Finite(high) && low < high; }
  WEFT_XINLINE double Draw(ElementStream& s) const { return low + (high - low) * s.Uniform(); }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return BelowHigh<T>(v, low, high); }
};

struct NormalDist {
  double loc, scale;
  WEFT_XINLINE static NormalDist FromParams(double a, double b) { return {a, b}; }
  WEFT_XINLINE bool Valid() const { return Finite(loc) && Finite(scale) && scale >= 0; }
  WEFT_XINLINE double Draw(ElementStream& s) const { return loc + scale * s.Normal(); }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

// Shape alpha, scale beta (mean alpha * beta).
struct GammaDist {
  double alpha, beta;
  WEFT_XINLINE static GammaDist FromParams(double a, double b) { return {a, b}; }
  WEFT_XINLINE bool Valid() const { return alpha > 0 && Finite(alpha) && beta > 0 && Finite(beta); }
  WEFT_XINLINE double Draw(ElementStream& s) const { return Gamma(s, alpha) * beta; }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

struct ExponentialDist {
  double lam;
  WEFT_XINLINE static ExponentialDist FromParams(double a, double) { return {a}; }
  WEFT_XINLINE bool Valid() const { return lam > 0 && Finite(lam); }
  WEFT_XINLINE double Draw(ElementStream& s) const { return -std::log(s.UniformPositive()) * (1.0 / lam); }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

struct PoissonDist {
  double lam;
  WEFT_XINLINE static PoissonDist FromParams(double a, double) { return {a}; }
  WEFT_XINLINE bool Valid() const { return lam >= 0 && Finite(lam); }
  WEFT_XINLINE double Draw(ElementStream& s) const { return Poisson(s, lam); }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

// Failures before the k-th success with success probability p (mean k (1 - p) / p), as
// the Poisson mixture Poisson(Gamma(k, (1 - p) / p)).
struct NegBinomialDist {
  double k, p;
  WEFT_XINLINE static NegBinomialDist FromParams(double a, double b) { return {a, b}; }
  WEFT_XINLINE bool Valid() const { return k > 0 && Finite(k) && p > 0 && p <= 1; }
  WEFT_XINLINE double Draw(ElementStream& s) const { return Poisson(s, Gamma(s, k) * ((1 - p) / p)); }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

// Mean mu, dispersion alpha (variance mu + alpha mu^2): Poisson(Gamma(1/alpha, alpha mu)),
// Poisson(mu) when alpha is 0.
struct GenNegBinomialDist {
  double mu, alpha;
  WEFT_XINLINE static GenNegBinomialDist FromParams(double a, double b) { return {a, b}; }
  WEFT_XINLINE bool Valid() const { return mu >= 0 && Finite(mu) && alpha >= 0 && Finite(alpha); }
  WEFT_XINLINE double Draw(ElementStream& s) const {
    return Poisson(s, alpha == 0 ? mu : Gamma(s, 1 / alpha) * alpha * mu);
  }
  template <typename T>
  WEFT_XINLINE T Convert(double v) const { return static_cast<T>(v); }
};

// ---------------------------------------------------------------- per-element draws
// The value of one element of a draw from `dist`, converted to the output type, from the
// element's stream (element i of a draw that reserved counters from `first` reads
// ElementStream(gen, first + i), Draw::Stream(i) on the host).
template <typename T, typename Dist>
WEFT_XINLINE T SampleFrom(const Dist& dist, ElementStream& s) {
  return dist.template Convert<T>(dist.Draw(s));
}

// One element of a randint draw: low + Below(range), through int64 (int32 keeps the low
// bits).
template <typename T>
WEFT_XINLINE T RandIntFrom(ElementStream& s, int64_t low, uint64_t range) {
  return static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + s.Below(range)));
}

// Writes a drawn value as the request says: kAddTo adds in double (as Store does).
template <typename T>
WEFT_XINLINE void StoreSample(T* y, int64_t i, T v, bool add) {
  if (add) y[i] = ConvertValue<T>(static_cast<double>(y[i]) + static_cast<double>(v));
  else y[i] = v;
}

// _shuffle's permutation: Fisher-Yates over perm[0, rows), which holds 0..rows-1, from one
// stream (the permutation is sequential by nature; one counter keeps it reproducible).
WEFT_XINLINE void ShufflePermutation(ElementStream& s, int64_t* perm, int64_t rows) {
  for (int64_t i = rows - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(s.Below(static_cast<uint64_t>(i) + 1));
    const int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

}  // namespace random
}  // namespace op
}  // namespace weft

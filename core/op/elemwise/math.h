// The scalar math the elementwise functors are written with, usable from CPU and CUDA code
// alike (WEFT_XINLINE): one overload for float and one for double of each function, so that
// float32 arrays stay in single precision, plus the rule for integer inputs.
//
// Integer and bool inputs to a floating-point function (exp, sqrt, ...) compute in double and
// convert the result back to their own dtype, as MXNet 1.x does: the result truncates toward
// zero, NaN becomes 0 and values beyond the dtype's range saturate (so log(0) on an int32
// array gives INT32_MIN instead of undefined behaviour).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/base/macros.h"

namespace weft {
namespace op {

// The type a math function runs in for element type T.
template <typename T> struct MathOf { using type = double; };
template <> struct MathOf<float> { using type = float; };
template <typename T> using MathT = typename MathOf<T>::type;

template <typename T>
WEFT_XINLINE MathT<T> ToMath(T a) { return static_cast<MathT<T>>(a); }

// Converts a floating value to T: integer targets truncate toward zero, saturate at their
// range and take NaN to 0; bool is "nonzero"; floating targets round as usual.
template <typename T, typename M>
WEFT_XINLINE T SaturateCast(M v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != M(0);
  } else {
    if (!(v == v)) return T(0);
    if (v <= static_cast<M>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    // M(max) may round up (2^63 for int64): values at or above it saturate too.
    if (v >= static_cast<M>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Integer arithmetic that wraps around on overflow (two's complement) instead of being
// undefined; plain arithmetic for floating types and bool.
template <typename T>
WEFT_XINLINE T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
WEFT_XINLINE T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T>
WEFT_XINLINE T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<T>(a * b);
  }
}
template <typename T>
WEFT_XINLINE T WrapNeg(T a) {
  if constexpr (std::is_same_v<T, bool>) {
    return a;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(0) - static_cast<U>(a));
  } else {
    return -a;
  }
}

namespace math {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;

// The math functions that are one C library call per type (float_fn for float, double_fn
// for double), listed once: expanded below for host and device code, and into the CUDA
// source of fused kernels, which NVRTC compiles (core/op/fused/fused_codegen.cc).
#define WEFT_MATH_FUNCTIONS(UNARY, BINARY) \
  UNARY(abs, fabsf, fabs) \
  UNARY(exp, expf, exp) \
  UNARY(expm1, expm1f, expm1) \
  UNARY(log, logf, log) \
  UNARY(log1p, log1pf, log1p) \
  UNARY(log2, log2f, log2) \
  UNARY(log10, log10f, log10) \
  UNARY(sqrt, sqrtf, sqrt) \
  UNARY(cbrt, cbrtf, cbrt) \
  UNARY(sin, sinf, sin) \
  UNARY(cos, cosf, cos) \
  UNARY(tan, tanf, tan) \
  UNARY(asin, asinf, asin) \
  UNARY(acos, acosf, acos) \
  UNARY(atan, atanf, atan) \
  UNARY(sinh, sinhf, sinh) \
  UNARY(cosh, coshf, cosh) \
  UNARY(tanh, tanhf, tanh) \
  UNARY(asinh, asinhf, asinh) \
  UNARY(acosh, acoshf, acosh) \
  UNARY(atanh, atanhf, atanh) \
  UNARY(erf, erff, erf) \
  UNARY(floor, floorf, floor) \
  UNARY(ceil, ceilf, ceil) \
  UNARY(round, roundf, round) \
  UNARY(rint, rintf, rint) \
  UNARY(trunc, truncf, trunc) \
  UNARY(tgamma, tgammaf, tgamma) \
  BINARY(fmod, fmodf, fmod) \
  BINARY(pow, powf, pow) \
  BINARY(hypot, hypotf, hypot) \
  BINARY(copysign, copysignf, copysign)

#define WEFT_MATH_UNARY(name, float_fn, double_fn)                       \
  WEFT_XINLINE float name(float x) { return ::float_fn(x); }             \
  WEFT_XINLINE double name(double x) { return ::double_fn(x); }
#define WEFT_MATH_BINARY(name, float_fn, double_fn)                              \
  WEFT_XINLINE float name(float x, float y) { return ::float_fn(x, y); }         \
  WEFT_XINLINE double name(double x, double y) { return ::double_fn(x, y); }
WEFT_MATH_FUNCTIONS(WEFT_MATH_UNARY, WEFT_MATH_BINARY)
#undef WEFT_MATH_UNARY
#undef WEFT_MATH_BINARY

// glibc's lgamma writes the global `signgam`, a data race inside parallel loops; the
// reentrant form does not.
WEFT_XINLINE float lgamma(float x) {
#if defined(__CUDA_ARCH__)
  return ::lgammaf(x);
#else
  int sign;
  return ::lgammaf_r(x, &sign);
#endif
}
WEFT_XINLINE double lgamma(double x) {
#if defined(__CUDA_ARCH__)
  return ::lgamma(x);
#else
  int sign;
  return ::lgamma_r(x, &sign);
#endif
}

// The inverse error function. A polynomial in w = -log(1 - x^2) on two ranges (M. Giles,
// "Approximating the erfinv function", GPU Computing Gems, 2011) gives single precision;
// double precision adds two Newton steps on erf(y) = x.
template <typename M>
WEFT_XINLINE M ErfinvPoly(M x) {
  M w = -log((M(1) - x) * (M(1) + x));
  M p;
  if (w < M(5)) {
    w = w - M(2.5);
    p = M(2.81022636e-08);
    p = M(3.43273939e-07) + p * w;
    p = M(-3.5233877e-06) + p * w;
    p = M(-4.39150654e-06) + p * w;
    p = M(0.00021858087) + p * w;
    p = M(-0.00125372503) + p * w;
    p = M(-0.00417768164) + p * w;
    p = M(0.246640727) + p * w;
    p = M(1.50140941) + p * w;
  } else {
    w = sqrt(w) - M(3);
    p = M(-0.000200214257);
    p = M(0.000100950558) + p * w;
    p = M(0.00134934322) + p * w;
    p = M(-0.00367342844) + p * w;
    p = M(0.00573950773) + p * w;
    p = M(-0.0076224613) + p * w;
    p = M(0.00943887047) + p * w;
    p = M(1.00167406) + p * w;
    p = M(2.83297682) + p * w;
  }
  return p * x;
}

WEFT_XINLINE float erfinv(float x) {
#if defined(__CUDA_ARCH__)
  return ::erfinvf(x);
#else
  if (!(x > -1.0f && x < 1.0f)) {
    if (x == 1.0f) return std::numeric_limits<float>::infinity();
    if (x == -1.0f) return -std::numeric_limits<float>::infinity();
    return std::numeric_limits<float>::quiet_NaN();
  }
  // Refined in double: the float polynomial alone is off by a few ulps.
  double y = ErfinvPoly<double>(x);
  double two_over_sqrt_pi = 2.0 / ::sqrt(kPi);
  y -= (::erf(y) - x) / (two_over_sqrt_pi * ::exp(-y * y));
  return static_cast<float>(y);
#endif
}
WEFT_XINLINE double erfinv(double x) {
#if defined(__CUDA_ARCH__)
  return ::erfinv(x);
#else
  if (!(x > -1.0 && x < 1.0)) {
    if (x == 1.0) return std::numeric_limits<double>::infinity();
    if (x == -1.0) return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  double y = ErfinvPoly<double>(x);
  double two_over_sqrt_pi = 2.0 / ::sqrt(kPi);
  for (int i = 0; i < 2; ++i) y -= (::erf(y) - x) / (two_over_sqrt_pi * ::exp(-y * y));
  return y;
#endif
}

// The digamma function psi = lgamma'. Negative arguments use the reflection
// psi(1 - x) - pi / tan(pi x); small ones move up with psi(x) = psi(x + 1) - 1 / x until
// the asymptotic series (Bernoulli numbers up to B10) is accurate to double precision.
// Poles (0, -1, -2, ...) give the largest double, as MXNet's psi (cephes), so that its
// gradients there (gamma's, gammaln's) are infinite in float32 and huge in float64.
template <typename M>
WEFT_XINLINE M Digamma(M x) {
  if (!(x == x)) return x;
  M result = M(0);
  if (x <= M(0)) {
    if (x == floor(x)) return std::numeric_limits<M>::max();
    result = -M(kPi) / tan(M(kPi) * x);
    x = M(1) - x;
  }
  while (x < M(10)) {
    result -= M(1) / x;
    x += M(1);
  }
  M inv2 = M(1) / (x * x);
  M series = inv2 * (M(1) / 12 - inv2 * (M(1) / 120 - inv2 * (M(1) / 252 - inv2 * (M(1) / 240 - inv2 * (M(1) / 132)))));
  return result + log(x) - M(0.5) / x - series;
}
WEFT_XINLINE float digamma(float x) {
  double d = Digamma<double>(x);
  return d > static_cast<double>(std::numeric_limits<float>::max()) ? std::numeric_limits<float>::infinity()
                                                                    : static_cast<float>(d);
}
WEFT_XINLINE double digamma(double x) { return Digamma<double>(x); }

}  // namespace math
}  // namespace op
}  // namespace weft

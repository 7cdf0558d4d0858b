// What each elementwise operator computes, one small struct per function, shared by the CPU
// kernels (kernels.h) and the CUDA ones (core/op/elemwise/elemwise_kernels.cuh):
//
//   struct exp_op { template <typename T> static WEFT_XINLINE T Map(T a); };      // unary
//   struct add_op { template <typename T> static WEFT_XINLINE T Map(T a, T b); }; // binary
//
// T is the compute type of the array's dtype (AccType: float for float16 and bfloat16, the
// dtype itself otherwise), so a functor sees float, double, int8, uint8, int32, int64 or bool.
// Scalar operators are binary functors called with the scalar as `b`; Reversed<OP> swaps
// the arguments for the `_r...` forms (s - x, s / x, ...).
//
// Integer rules, chosen so that no input crashes or is undefined:
//   - add, sub, mul, negative, square and abs wrap around on overflow;
//   - x / 0 and x % 0 give 0 (for floating types x % 0 gives 0 too, as in MXNet; x / 0 is
//     IEEE inf or NaN); INT_MIN / -1 wraps to INT_MIN;
//   - division truncates toward zero (C semantics), mod takes the sign of the divisor
//     (Python semantics, for every dtype);
//   - power is exact repeated multiplication (wrapping); a negative exponent gives the
//     truncated real result: 1 for base 1, +-1 for base -1, 0 otherwise (0 for base 0);
//   - floating-point functions compute in double and convert back (see math.h).
// Floating maximum and minimum propagate NaN, as numpy's do; so do sign and relu.
//
// kCuda, where present, is the float/double case of Map as CUDA C++ (the body of
// `T f(T a, T b)`, b unused by unary functors): the GPU fusion pass compiles chains of these
// at run time with NVRTC (core/op/fused/fused_codegen.h), where the `math` overloads below
// exist as device functions.
#pragma once

#include <type_traits>

#include "core/base/macros.h"
#include "core/op/elemwise/math.h"

namespace weft {
namespace op {

// ---------------------------------------------------------------- unary
struct identity_op {
  static constexpr const char* kCuda = "return a;";
  template <typename T> static WEFT_XINLINE T Map(T a) { return a; }
};

struct negative_op {
  static constexpr const char* kCuda = "return -a;";
  template <typename T> static WEFT_XINLINE T Map(T a) { return WrapNeg(a); }
};

struct abs_op {
  static constexpr const char* kCuda = "return math::abs(a);";
  template <typename T> static WEFT_XINLINE T Map(T a) {
    if constexpr (std::is_floating_point_v<T>) return math::abs(a);
    else if constexpr (std::is_signed_v<T>) return a < T(0) ? WrapNeg(a) : a;
    else return a;
  }
};

struct sign_op {
  static constexpr const char* kCuda = "return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a);";
  template <typename T> static WEFT_XINLINE T Map(T a) {
    if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return static_cast<T>(a != T(0));
    else return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a);  // keeps 0 and NaN
  }
};

struct square_op {
  static constexpr const char* kCuda = "return a * a;";
  template <typename T> static WEFT_XINLINE T Map(T a) { return WrapMul(a, a); }
};

struct relu_op {
  static constexpr const char* kCuda = "return a < T(0) ? T(0) : a;";
  template <typename T> static WEFT_XINLINE T Map(T a) {
    if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return a;
    else return a < T(0) ? T(0) : a;
  }
};

struct logical_not_op {
  static constexpr const char* kCuda = "return T(a == T(0));";
  template <typename T> static WEFT_XINLINE T Map(T a) { return static_cast<T>(a == T(0)); }
};

// Rounding is the identity on integers.
#define WEFT_ROUNDING_FUNCTOR(name, fn)                      \
  struct name {                                              \
    static constexpr const char* kCuda = "return " #fn "(a);"; \
    template <typename T> static WEFT_XINLINE T Map(T a) {   \
      if constexpr (std::is_floating_point_v<T>) return fn(a); \
      else return a;                                         \
    }                                                        \
  };
WEFT_ROUNDING_FUNCTOR(floor_op, math::floor)
WEFT_ROUNDING_FUNCTOR(ceil_op, math::ceil)
WEFT_ROUNDING_FUNCTOR(round_op, math::round)  // halves away from zero
WEFT_ROUNDING_FUNCTOR(trunc_op, math::trunc)  // also `fix`
#undef WEFT_ROUNDING_FUNCTOR
// MXNet's rint takes the nearer of floor and ceil and, at a tie, floor: 1.5 -> 1, -1.5 -> -2,
// 2.5 -> 2 (not C's rint, which goes to even). NaN and infinities come back unchanged.
struct rint_op {
  static constexpr const char* kCuda =
      "T f = math::floor(a); T c = math::ceil(a); return (a - f) <= (c - a) ? f : c;";
  template <typename T> static WEFT_XINLINE T Map(T a) {
    if constexpr (std::is_floating_point_v<T>) {
      const T f = math::floor(a);
      const T c = math::ceil(a);
      return (a - f) <= (c - a) ? f : c;
    } else {
      return a;
    }
  }
};

// f(x) computed in MathT<T> and converted back.
#define WEFT_MATH_FUNCTOR(name, expr)                            \
  struct name {                                                  \
    static constexpr const char* kCuda = "typedef T M; M x = a; return " #expr ";"; \
    template <typename T> static WEFT_XINLINE T Map(T a) {       \
      using M = MathT<T>;                                        \
      M x = ToMath(a);                                           \
      return SaturateCast<T>(expr);                              \
    }                                                            \
  };
WEFT_MATH_FUNCTOR(sqrt_op, math::sqrt(x))
WEFT_MATH_FUNCTOR(rsqrt_op, M(1) / math::sqrt(x))
WEFT_MATH_FUNCTOR(cbrt_op, math::cbrt(x))
WEFT_MATH_FUNCTOR(rcbrt_op, M(1) / math::cbrt(x))
WEFT_MATH_FUNCTOR(exp_op, math::exp(x))
WEFT_MATH_FUNCTOR(expm1_op, math::expm1(x))
WEFT_MATH_FUNCTOR(log_op, math::log(x))
WEFT_MATH_FUNCTOR(log1p_op, math::log1p(x))
WEFT_MATH_FUNCTOR(log2_op, math::log2(x))
WEFT_MATH_FUNCTOR(log10_op, math::log10(x))
WEFT_MATH_FUNCTOR(sin_op, math::sin(x))
WEFT_MATH_FUNCTOR(cos_op, math::cos(x))
WEFT_MATH_FUNCTOR(tan_op, math::tan(x))
WEFT_MATH_FUNCTOR(arcsin_op, math::asin(x))
WEFT_MATH_FUNCTOR(arccos_op, math::acos(x))
WEFT_MATH_FUNCTOR(arctan_op, math::atan(x))
WEFT_MATH_FUNCTOR(sinh_op, math::sinh(x))
WEFT_MATH_FUNCTOR(cosh_op, math::cosh(x))
WEFT_MATH_FUNCTOR(tanh_op, math::tanh(x))
WEFT_MATH_FUNCTOR(arcsinh_op, math::asinh(x))
WEFT_MATH_FUNCTOR(arccosh_op, math::acosh(x))
WEFT_MATH_FUNCTOR(arctanh_op, math::atanh(x))
WEFT_MATH_FUNCTOR(sigmoid_op, M(1) / (M(1) + math::exp(-x)))
WEFT_MATH_FUNCTOR(softsign_op, x / (M(1) + math::abs(x)))
WEFT_MATH_FUNCTOR(erf_op, math::erf(x))
WEFT_MATH_FUNCTOR(erfinv_op, math::erfinv(x))
WEFT_MATH_FUNCTOR(gamma_op, math::tgamma(x))
WEFT_MATH_FUNCTOR(gammaln_op, math::lgamma(x))
WEFT_MATH_FUNCTOR(degrees_op, x * M(180.0 / math::kPi))
WEFT_MATH_FUNCTOR(radians_op, x * M(math::kPi / 180.0))
#undef WEFT_MATH_FUNCTOR

// ---------------------------------------------------------------- binary
struct add_op {
  static constexpr const char* kCuda = "return a + b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return WrapAdd(a, b); }
};

struct sub_op {
  static constexpr const char* kCuda = "return a - b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return WrapSub(a, b); }
};

struct mul_op {
  static constexpr const char* kCuda = "return a * b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return WrapMul(a, b); }
};

struct div_op {
  static constexpr const char* kCuda = "return a / b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return WrapNeg(a);
      }
      return static_cast<T>(a / b);
    }
  }
};

struct reciprocal_op {
  static constexpr const char* kCuda = "return T(1) / a;";
  template <typename T> static WEFT_XINLINE T Map(T a) {
    if constexpr (std::is_floating_point_v<T>) return T(1) / a;
    else return div_op::Map(T(1), a);
  }
};

// The remainder with the sign of the divisor (Python's %).
struct mod_op {
  static constexpr const char* kCuda =
      "if (b == T(0)) return T(0); T r = math::fmod(a, b); if (r == T(0)) return math::copysign(T(0), b); "
      "return ((r < T(0)) != (b < T(0))) ? r + b : r;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) {
    if (b == T(0)) return T(0);
    if constexpr (std::is_floating_point_v<T>) {
      T r = math::fmod(a, b);
      if (r == T(0)) return math::copysign(T(0), b);
      return ((r < T(0)) != (b < T(0))) ? r + b : r;
    } else if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);
      T r = static_cast<T>(a % b);
      return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? static_cast<T>(r + b) : r;
    } else {
      return static_cast<T>(a % b);
    }
  }
};

struct power_op {
  static constexpr const char* kCuda = "return math::pow(a, b);";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return math::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (b < T(0)) {
          if (a == T(1)) return T(1);
          if (a == T(-1)) return (b % 2 == 0) ? T(1) : T(-1);
          return T(0);
        }
      }
      T result = T(1), base = a;
      for (T e = b; e != T(0); e = static_cast<T>(e / 2)) {
        if (e % 2 != 0) result = WrapMul(result, base);
        base = WrapMul(base, base);
      }
      return result;
    }
  }
};

struct maximum_op {
  static constexpr const char* kCuda = "return (a > b || !(a == a)) ? a : b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return (a > b || !(a == a)) ? a : b; }
};

struct minimum_op {
  static constexpr const char* kCuda = "return (a < b || !(a == a)) ? a : b;";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return (a < b || !(a == a)) ? a : b; }
};

struct hypot_op {
  static constexpr const char* kCuda = "return math::hypot(a, b);";
  template <typename T> static WEFT_XINLINE T Map(T a, T b) {
    return SaturateCast<T>(math::hypot(ToMath(a), ToMath(b)));
  }
};

// Comparisons and logic give 1 or 0 in the inputs' dtype (MXNet 1.x).
#define WEFT_PREDICATE_FUNCTOR(name, expr)                       \
  struct name {                                                  \
    static constexpr const char* kCuda = "return T(" #expr ");"; \
    template <typename T> static WEFT_XINLINE T Map(T a, T b) {  \
      return static_cast<T>(expr);                               \
    }                                                            \
  };
WEFT_PREDICATE_FUNCTOR(equal_op, a == b)
WEFT_PREDICATE_FUNCTOR(not_equal_op, a != b)
WEFT_PREDICATE_FUNCTOR(greater_op, a > b)
WEFT_PREDICATE_FUNCTOR(greater_equal_op, a >= b)
WEFT_PREDICATE_FUNCTOR(lesser_op, a < b)
WEFT_PREDICATE_FUNCTOR(lesser_equal_op, a <= b)
WEFT_PREDICATE_FUNCTOR(logical_and_op, a != T(0) && b != T(0))
WEFT_PREDICATE_FUNCTOR(logical_or_op, a != T(0) || b != T(0))
WEFT_PREDICATE_FUNCTOR(logical_xor_op, (a != T(0)) != (b != T(0)))
#undef WEFT_PREDICATE_FUNCTOR

// OP with its arguments swapped: the scalar on the left (`_rminus_scalar` is s - x).
template <typename OP>
struct Reversed {
  template <typename T> static WEFT_XINLINE T Map(T a, T b) { return OP::Map(b, a); }
};

// ---------------------------------------------------------------- unary gradients
// Binary functors Map(g, v) = g * f'(x), where v is the forward input x or, when the
// derivative is cheaper from it, the forward output y. Named after the forward function.
#define WEFT_GRAD_FUNCTOR(name, expr)                            \
  struct name {                                                  \
    template <typename T> static WEFT_XINLINE T Map(T g, T v) {  \
      using M = MathT<T>;                                        \
      M x = ToMath(v);                                           \
      M dy = ToMath(g);                                          \
      return SaturateCast<T>(expr);                              \
    }                                                            \
  };
WEFT_GRAD_FUNCTOR(abs_grad, x > M(0) ? dy : (x < M(0) ? -dy : M(0)))
WEFT_GRAD_FUNCTOR(reciprocal_grad, -dy / (x * x))
WEFT_GRAD_FUNCTOR(square_grad, M(2) * x * dy)
WEFT_GRAD_FUNCTOR(sqrt_grad, M(0.5) * dy / x)                           // v = y
WEFT_GRAD_FUNCTOR(rsqrt_grad, M(-0.5) * dy / (x * math::sqrt(x)))
WEFT_GRAD_FUNCTOR(cbrt_grad, dy / (M(3) * x * x))                      // v = y
WEFT_GRAD_FUNCTOR(rcbrt_grad, -dy / (M(3) * x * math::cbrt(x)))
WEFT_GRAD_FUNCTOR(expm1_grad, dy * math::exp(x))
WEFT_GRAD_FUNCTOR(log1p_grad, dy / (M(1) + x))
WEFT_GRAD_FUNCTOR(log2_grad, dy / (x * M(math::kLn2)))
WEFT_GRAD_FUNCTOR(log10_grad, dy / (x * M(math::kLn10)))
WEFT_GRAD_FUNCTOR(sin_grad, dy * math::cos(x))
WEFT_GRAD_FUNCTOR(cos_grad, -dy * math::sin(x))
WEFT_GRAD_FUNCTOR(tan_grad, dy * (M(1) + x * x))                       // v = y
WEFT_GRAD_FUNCTOR(arcsin_grad, dy / math::sqrt(M(1) - x * x))
WEFT_GRAD_FUNCTOR(arccos_grad, -dy / math::sqrt(M(1) - x * x))
WEFT_GRAD_FUNCTOR(arctan_grad, dy / (M(1) + x * x))
WEFT_GRAD_FUNCTOR(sinh_grad, dy * math::cosh(x))
WEFT_GRAD_FUNCTOR(cosh_grad, dy * math::sinh(x))
WEFT_GRAD_FUNCTOR(tanh_grad, dy * (M(1) - x * x))                      // v = y
WEFT_GRAD_FUNCTOR(arcsinh_grad, dy / math::sqrt(x * x + M(1)))
WEFT_GRAD_FUNCTOR(arccosh_grad, dy / math::sqrt(x * x - M(1)))
WEFT_GRAD_FUNCTOR(arctanh_grad, dy / (M(1) - x * x))
WEFT_GRAD_FUNCTOR(sigmoid_grad, dy * x * (M(1) - x))                   // v = y
// A NaN output passes NaN on (x != x), as MXNet's relu_grad.
WEFT_GRAD_FUNCTOR(relu_grad, x > M(0) ? dy : (x != x ? x : M(0)))      // v = y
WEFT_GRAD_FUNCTOR(softsign_grad, dy / ((M(1) + math::abs(x)) * (M(1) + math::abs(x))))
WEFT_GRAD_FUNCTOR(erf_grad, dy * M(1.12837916709551257390) * math::exp(-x * x))    // 2 / sqrt(pi)
WEFT_GRAD_FUNCTOR(erfinv_grad, dy * M(0.88622692545275801365) * math::exp(x * x))  // sqrt(pi) / 2, v = y
WEFT_GRAD_FUNCTOR(gamma_grad, dy * math::tgamma(x) * math::digamma(x))
WEFT_GRAD_FUNCTOR(gammaln_grad, dy * math::digamma(x))
#undef WEFT_GRAD_FUNCTOR

// Linear functions: the derivative is a constant; the input is read only so that the gradient
// stays connected to it in a recorded graph (as MXNet's _backward_degrees/_backward_radians).
template <typename Factor>
struct constant_grad {
  template <typename T> static WEFT_XINLINE T Map(T g, T) {
    using M = MathT<T>;
    return SaturateCast<T>(ToMath(g) * M(Factor::kValue));
  }
};
struct degrees_factor { static constexpr double kValue = 180.0 / math::kPi; };
struct radians_factor { static constexpr double kValue = math::kPi / 180.0; };
using degrees_grad = constant_grad<degrees_factor>;
using radians_grad = constant_grad<radians_factor>;

}  // namespace op
}  // namespace weft

// Elementwise operators (unary, same-shape binary, scalar, broadcast, comparison and logic):
// values against references computed here in double for every dtype class, gradients
// against finite differences, the integer rules (division by zero, wrap-around, Python's
// mod), write requests, and the error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace weft {
namespace {

using test::CheckNumericGradient;
using test::ExpectAllNear;
using test::ExpectError;
using test::MakeArray;
using test::RandomValues;
using test::Run1;
using test::ToVector;

using Fn1 = std::function<double(double)>;
using Fn2 = std::function<double(double, double)>;

const std::vector<DType> kFloatTypes = {DType::kFloat64, DType::kFloat32, DType::kFloat16, DType::kBfloat16};
const std::vector<DType> kIntTypes = {DType::kInt32, DType::kInt64, DType::kInt8, DType::kUint8, DType::kBool};

// Tolerances that cover one rounding of the result to the dtype plus the float math.
double Rtol(DType t) {
  switch (t) {
    case DType::kFloat64: return 1e-12;
    case DType::kFloat32: return 1e-5;
    case DType::kFloat16: return 1.5e-3;
    default: return 1e-2;  // bfloat16
  }
}
double Atol(DType t) { return t == DType::kFloat64 ? 1e-14 : t == DType::kFloat32 ? 1e-6 : Rtol(t); }

bool IsSigned(DType t) { return t != DType::kUint8 && t != DType::kBool; }

// The integer conversion the operators document: truncation toward zero, NaN -> 0,
// saturation at the dtype's range; bool is "nonzero".
double IntResult(double v, DType t) {
  if (t == DType::kBool) return v != 0 ? 1 : 0;
  if (std::isnan(v)) return 0;
  double lo = 0, hi = 0;
  switch (t) {
    case DType::kInt8: lo = -128; hi = 127; break;
    case DType::kUint8: lo = 0; hi = 255; break;
    case DType::kInt32: lo = -2147483648.0; hi = 2147483647.0; break;
    default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
  }
  if (v <= lo) return lo;
  if (v >= hi) return hi;
  return std::trunc(v);
}

// Two's-complement wrap-around of an exact integer result.
double Wrap(int64_t v, DType t) {
  switch (t) {
    case DType::kBool: return v != 0;
    case DType::kInt8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::kUint8: return static_cast<uint8_t>(v);
    case DType::kInt32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    default: return static_cast<double>(v);
  }
}

// Random integer values that every integer dtype holds (and 0/1 for bool).
std::vector<double> IntValues(int64_t n, DType t, uint32_t seed) {
  double lo = t == DType::kBool ? 0 : IsSigned(t) ? -5 : 0;
  double hi = t == DType::kBool ? 1.99 : IsSigned(t) ? 5.99 : 10.99;
  std::vector<double> v = RandomValues(n, lo, hi, seed);
  for (double& x : v) x = std::floor(x);
  return v;
}

double PyMod(double a, double b) {
  if (b == 0) return 0;
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// The inverse error function by bisection on std::erf.
double RefErfinv(double y) {
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  if (!(y > -1 && y < 1)) return NAN;
  // Bisection only approaches 0 (to about -6e-60), which a bool result would read as true.
  if (y == 0) return y;
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    double mid = 0.5 * (lo + hi);
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// ---------------------------------------------------------------- unary
struct UnaryCase {
  std::string name;
  Fn1 ref;
  double lo, hi;    // forward domain
  double glo, ghi;  // gradient-check domain; glo == ghi means no gradient check
};

std::vector<UnaryCase> UnaryCases() {
  const double pi = 3.14159265358979323846;
  return {
      {"_copy", [](double x) { return x; }, -3, 3, -3, 3},
      {"identity", [](double x) { return x; }, -3, 3, -3, 3},
      {"negative", [](double x) { return -x; }, -3, 3, -3, 3},
      {"abs", [](double x) { return std::fabs(x); }, -3, 3, -3, 3},
      {"sign", [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }, -3, 3, -3, 3},
      {"reciprocal", [](double x) { return 1 / x; }, 0.5, 3, 0.5, 3},
      {"square", [](double x) { return x * x; }, -3, 3, -3, 3},
      {"sqrt", [](double x) { return std::sqrt(x); }, 0.1, 5, 0.1, 5},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.1, 5, 0.1, 5},
      {"cbrt", [](double x) { return std::cbrt(x); }, -5, 5, 0.2, 5},
      {"rcbrt", [](double x) { return 1 / std::cbrt(x); }, 0.2, 5, 0.2, 5},
      {"exp", [](double x) { return std::exp(x); }, -3, 3, -3, 3},
      {"expm1", [](double x) { return std::expm1(x); }, -1, 1, -1, 1},
      {"log", [](double x) { return std::log(x); }, 0.1, 5, 0.1, 5},
      {"log1p", [](double x) { return std::log1p(x); }, -0.5, 3, -0.5, 3},
      {"log2", [](double x) { return std::log2(x); }, 0.1, 5, 0.1, 5},
      {"log10", [](double x) { return std::log10(x); }, 0.1, 5, 0.1, 5},
      {"sin", [](double x) { return std::sin(x); }, -3, 3, -3, 3},
      {"cos", [](double x) { return std::cos(x); }, -3, 3, -3, 3},
      {"tan", [](double x) { return std::tan(x); }, -1.2, 1.2, -1.2, 1.2},
      {"arcsin", [](double x) { return std::asin(x); }, -0.95, 0.95, -0.9, 0.9},
      {"arccos", [](double x) { return std::acos(x); }, -0.95, 0.95, -0.9, 0.9},
      {"arctan", [](double x) { return std::atan(x); }, -3, 3, -3, 3},
      {"sinh", [](double x) { return std::sinh(x); }, -2, 2, -2, 2},
      {"cosh", [](double x) { return std::cosh(x); }, -2, 2, -2, 2},
      {"tanh", [](double x) { return std::tanh(x); }, -2, 2, -2, 2},
      {"arcsinh", [](double x) { return std::asinh(x); }, -3, 3, -3, 3},
      {"arccosh", [](double x) { return std::acosh(x); }, 1.1, 4, 1.1, 4},
      {"arctanh", [](double x) { return std::atanh(x); }, -0.9, 0.9, -0.9, 0.9},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -4, 4, -4, 4},
      {"relu", [](double x) { return x < 0 ? 0 : x; }, -3, 3, -3, 3},
      {"softsign", [](double x) { return x / (1 + std::fabs(x)); }, -3, 3, -3, 3},
      {"erf", [](double x) { return std::erf(x); }, -2, 2, -2, 2},
      {"erfinv", RefErfinv, -0.95, 0.95, -0.9, 0.9},
      {"gamma", [](double x) { return std::tgamma(x); }, 0.2, 5, 0.3, 4},
      {"gammaln", [](double x) { return std::lgamma(x); }, 0.2, 5, 0.3, 4},
      {"floor", [](double x) { return std::floor(x); }, -3, 3, -3, 3},
      {"ceil", [](double x) { return std::ceil(x); }, -3, 3, -3, 3},
      {"round", [](double x) { return std::round(x); }, -3, 3, -3, 3},
      {"rint", [](double x) { return std::nearbyint(x); }, -3, 3, -3, 3},
      {"trunc", [](double x) { return std::trunc(x); }, -3, 3, -3, 3},
      {"fix", [](double x) { return std::trunc(x); }, -3, 3, -3, 3},
      {"degrees", [pi](double x) { return x * (180.0 / pi); }, -3, 3, -3, 3},
      {"radians", [pi](double x) { return x * (pi / 180.0); }, -200, 200, -200, 200},
      {"logical_not", [](double x) { return x == 0 ? 1.0 : 0.0; }, -2, 2, -2, 2},
  };
}

const std::vector<Shape> kShapes = {Shape::Scalar(), Shape{0}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 0, 3},
                                    Shape{2, 3, 5}};

std::vector<double> Map1(const std::vector<double>& x, const Fn1& f) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return y;
}

TEST(ElemwiseUnary, FloatValuesMatchReference) {
  for (const auto& c : UnaryCases())
    for (DType t : kFloatTypes)
      for (const Shape& s : kShapes) {
        NDArray x = MakeArray(s, RandomValues(s.Size(), c.lo, c.hi, 3), t);
        NDArray y = Run1(c.name, {x});
        std::string what = c.name + " " + DTypeName(t) + " " + s.ToString();
        ASSERT_EQ(y.shape(), s) << what;
        ASSERT_EQ(y.dtype(), t) << what;
        ExpectAllNear(ToVector(y), Map1(ToVector(x), c.ref), Rtol(t), Atol(t), what);
      }
}

TEST(ElemwiseUnary, LargeArraysRunInParallelChunks) {
  const Shape s{100003};  // over the threading threshold, not a multiple of anything
  for (const std::string name : {"exp", "negative", "sqrt", "relu"})
    for (DType t : {DType::kFloat32, DType::kFloat16}) {
      NDArray x = MakeArray(s, RandomValues(s.Size(), 0.1, 3, 5), t);
      NDArray y = Run1(name, {x});
      const UnaryCase* c = nullptr;
      std::vector<UnaryCase> cases = UnaryCases();
      for (const auto& u : cases) if (u.name == name) c = &u;
      ExpectAllNear(ToVector(y), Map1(ToVector(x), c->ref), Rtol(t), Atol(t), name);
    }
}

// Integer arrays compute in double and convert back with truncation, saturation and NaN -> 0.
TEST(ElemwiseUnary, IntegerValuesFollowTheConversionRule) {
  for (const auto& c : UnaryCases())
    for (DType t : kIntTypes) {
      Shape s{23};
      std::vector<double> v = IntValues(s.Size(), t, 11);
      NDArray x = MakeArray(s, v, t);
      NDArray y = Run1(c.name, {x});
      ASSERT_EQ(y.dtype(), t);
      std::vector<double> expected(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        if (c.name == "negative") expected[i] = Wrap(-static_cast<int64_t>(v[i]), t);
        else if (c.name == "square") expected[i] = Wrap(static_cast<int64_t>(v[i] * v[i]), t);
        else if (c.name == "reciprocal") expected[i] = v[i] == 0 ? 0 : IntResult(1 / v[i], t);
        else expected[i] = IntResult(c.ref(v[i]), t);
      }
      ExpectAllNear(ToVector(y), expected, 0, 0, c.name + " " + DTypeName(t));
    }
}

TEST(ElemwiseUnary, IntegerEdgeCases) {
  NDArray x = MakeArray({4}, {0, -4, std::numeric_limits<int32_t>::min(), 8}, DType::kInt32);
  const double int_min = std::numeric_limits<int32_t>::min();
  ExpectAllNear(ToVector(Run1("log", {x})), {int_min, 0, 0, 2}, 0, 0, "log");  // -inf saturates, NaN -> 0
  ExpectAllNear(ToVector(Run1("sqrt", {x})), {0, 0, 0, 2}, 0, 0, "sqrt");
  ExpectAllNear(ToVector(Run1("abs", {x})), {0, 4, int_min, 8}, 0, 0, "abs wraps at INT_MIN");
  ExpectAllNear(ToVector(Run1("negative", {x})), {0, 4, int_min, -8}, 0, 0, "negative wraps at INT_MIN");
  ExpectAllNear(ToVector(Run1("reciprocal", {x})), {0, 0, 0, 0}, 0, 0, "reciprocal, 1 / 0 = 0");
  NDArray u = MakeArray({3}, {0, 3, 255}, DType::kUint8);
  ExpectAllNear(ToVector(Run1("negative", {u})), {0, 253, 1}, 0, 0, "uint8 negative wraps");
  ExpectAllNear(ToVector(Run1("sign", {u})), {0, 1, 1}, 0, 0, "uint8 sign");
}

TEST(ElemwiseUnary, RoundingHalvesAndSpecialValues) {
  std::vector<double> v = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.2, 0.7};
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    NDArray x = MakeArray({8}, v, t);
    ExpectAllNear(ToVector(Run1("round", {x})), {-3, -2, -1, 1, 2, 3, -0.0, 1}, 0, 0, "round");
    // MXNet's rint takes floor at a tie (not C's halves-to-even).
    ExpectAllNear(ToVector(Run1("rint", {x})), {-3, -2, -1, 0, 1, 2, -0.0, 1}, 0, 0, "rint");
    ExpectAllNear(ToVector(Run1("fix", {x})), {-2, -1, -0.0, 0, 1, 2, -0.0, 0}, 0, 0, "fix");
    ExpectAllNear(ToVector(Run1("floor", {x})), {-3, -2, -1, 0, 1, 2, -1, 0}, 0, 0, "floor");
    ExpectAllNear(ToVector(Run1("ceil", {x})), {-2, -1, -0.0, 1, 2, 3, -0.0, 1}, 0, 0, "ceil");
  }
  NDArray s = MakeArray({4}, {NAN, 0, -2, 3}, DType::kFloat32);
  ExpectAllNear(ToVector(Run1("sign", {s})), {NAN, 0, -1, 1}, 0, 0, "sign keeps NaN");
  ExpectAllNear(ToVector(Run1("relu", {s})), {NAN, 0, 0, 3}, 0, 0, "relu keeps NaN");
  ExpectAllNear(ToVector(Run1("logical_not", {s})), {0, 1, 0, 0}, 0, 0, "logical_not");
  NDArray e = MakeArray({4}, {-1, 1, 1.5, 0}, DType::kFloat64);
  std::vector<double> ev = ToVector(Run1("erfinv", {e}));
  EXPECT_TRUE(std::isinf(ev[0]) && ev[0] < 0);
  EXPECT_TRUE(std::isinf(ev[1]) && ev[1] > 0);
  EXPECT_TRUE(std::isnan(ev[2]));
  EXPECT_EQ(ev[3], 0);
}

TEST(ElemwiseUnary, GradientsMatchFiniteDifferences) {
  for (const auto& c : UnaryCases()) {
    NDArray x = MakeArray({3, 4}, RandomValues(12, c.glo, c.ghi, 17));
    CheckNumericGradient(c.name, {}, {x});
  }
}

TEST(ElemwiseUnary, PiecewiseConstantOpsHaveZeroGradient) {
  for (const std::string name : {"sign", "floor", "ceil", "round", "rint", "trunc", "fix", "logical_not"}) {
    NDArray x = MakeArray({5}, {-1.5, -0.5, 0, 0.5, 2});
    NodeAttrs attrs = MakeAttrs(Op::Get(name), {});
    NDArray y = Run1(name, {x});
    std::vector<NDArray> g = imperative::Gradient(attrs, {x}, {y}, {MakeArray({5}, {1, 2, 3, 4, 5})});
    ExpectAllNear(ToVector(g[0]), {0, 0, 0, 0, 0}, 0, 0, name);
  }
}

// ---------------------------------------------------------------- binary, same shape
struct BinaryCase {
  std::string elemwise, broadcast;
  Fn2 ref;
  double alo, ahi, blo, bhi;
  bool predicate;  // 1/0 results: integer-valued inputs so that ties occur; zero gradient
};

std::vector<BinaryCase> BinaryCases() {
  return {
      {"elemwise_add", "broadcast_add", [](double a, double b) { return a + b; }, -3, 3, -3, 3, false},
      {"elemwise_sub", "broadcast_sub", [](double a, double b) { return a - b; }, -3, 3, -3, 3, false},
      {"elemwise_mul", "broadcast_mul", [](double a, double b) { return a * b; }, -3, 3, -3, 3, false},
      {"elemwise_div", "broadcast_div", [](double a, double b) { return a / b; }, -3, 3, 0.5, 2, false},
      {"_mod", "broadcast_mod", PyMod, -5, 5, 0.7, 3, false},
      {"_power", "broadcast_power", [](double a, double b) { return std::pow(a, b); }, 0.5, 2, -2, 2, false},
      {"_maximum", "broadcast_maximum", [](double a, double b) { return std::max(a, b); }, -3, 3, -3, 3, false},
      {"_minimum", "broadcast_minimum", [](double a, double b) { return std::min(a, b); }, -3, 3, -3, 3, false},
      {"_hypot", "broadcast_hypot", [](double a, double b) { return std::hypot(a, b); }, -3, 3, -3, 3, false},
      {"_equal", "broadcast_equal", [](double a, double b) { return double(a == b); }, -2, 2, -2, 2, true},
      {"_not_equal", "broadcast_not_equal", [](double a, double b) { return double(a != b); }, -2, 2, -2, 2, true},
      {"_greater", "broadcast_greater", [](double a, double b) { return double(a > b); }, -2, 2, -2, 2, true},
      {"_greater_equal", "broadcast_greater_equal", [](double a, double b) { return double(a >= b); }, -2, 2, -2, 2,
       true},
      {"_lesser", "broadcast_lesser", [](double a, double b) { return double(a < b); }, -2, 2, -2, 2, true},
      {"_lesser_equal", "broadcast_lesser_equal", [](double a, double b) { return double(a <= b); }, -2, 2, -2, 2,
       true},
      {"_logical_and", "broadcast_logical_and", [](double a, double b) { return double(a != 0 && b != 0); }, -2, 2,
       -2, 2, true},
      {"_logical_or", "broadcast_logical_or", [](double a, double b) { return double(a != 0 || b != 0); }, -2, 2, -2,
       2, true},
      {"_logical_xor", "broadcast_logical_xor", [](double a, double b) { return double((a != 0) != (b != 0)); }, -2,
       2, -2, 2, true},
  };
}

std::vector<double> CaseValues(int64_t n, double lo, double hi, bool integral, uint32_t seed) {
  std::vector<double> v = RandomValues(n, lo, integral ? hi + 0.99 : hi, seed);
  if (integral)
    for (double& x : v) x = std::floor(x);
  return v;
}

// The exact integer result of a binary function under the documented integer rules.
double IntBinary(const std::string& name, double a, double b, DType t) {
  int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("add") || has("plus")) return Wrap(x + y, t);
  if (has("sub") || has("minus")) return Wrap(x - y, t);
  if (has("mul")) return Wrap(x * y, t);
  if (has("div")) return y == 0 ? 0 : Wrap(x / y, t);
  if (has("mod")) return Wrap(static_cast<int64_t>(PyMod(static_cast<double>(x), static_cast<double>(y))), t);
  if (has("power")) {
    if (y < 0) return x == 0 ? 0 : IntResult(std::pow(static_cast<double>(x), static_cast<double>(y)), t);
    int64_t r = 1;
    for (int64_t k = 0; k < y; ++k) r *= x;
    return Wrap(r, t);
  }
  if (has("hypot")) return IntResult(std::hypot(a, b), t);
  ADD_FAILURE() << "no integer reference for " << name;
  return 0;
}

TEST(ElemwiseBinary, FloatValuesMatchReference) {
  for (const auto& c : BinaryCases())
    for (DType t : kFloatTypes)
      for (const Shape& s : kShapes) {
        NDArray a = MakeArray(s, CaseValues(s.Size(), c.alo, c.ahi, c.predicate, 1), t);
        NDArray b = MakeArray(s, CaseValues(s.Size(), c.blo, c.bhi, c.predicate, 2), t);
        std::vector<double> av = ToVector(a), bv = ToVector(b), expected(av.size());
        for (size_t i = 0; i < av.size(); ++i) expected[i] = c.ref(av[i], bv[i]);
        std::string what = c.elemwise + " " + DTypeName(t) + " " + s.ToString();
        NDArray y = Run1(c.elemwise, {a, b});
        ASSERT_EQ(y.dtype(), t) << what;
        ASSERT_EQ(y.shape(), s) << what;
        ExpectAllNear(ToVector(y), expected, Rtol(t), Atol(t), what);
      }
}

TEST(ElemwiseBinary, IntegerValuesFollowTheIntegerRules) {
  for (const auto& c : BinaryCases())
    for (DType t : kIntTypes) {
      Shape s{31};
      NDArray a = MakeArray(s, IntValues(s.Size(), t, 5), t);
      NDArray b = MakeArray(s, IntValues(s.Size(), t, 6), t);
      std::vector<double> av = ToVector(a), bv = ToVector(b), expected(av.size());
      for (size_t i = 0; i < av.size(); ++i) {
        bool minmax = c.elemwise == "_maximum" || c.elemwise == "_minimum";
        expected[i] = c.predicate || minmax ? c.ref(av[i], bv[i]) : IntBinary(c.elemwise, av[i], bv[i], t);
      }
      NDArray y = Run1(c.elemwise, {a, b});
      ASSERT_EQ(y.dtype(), t);
      ExpectAllNear(ToVector(y), expected, 0, 0, c.elemwise + " " + DTypeName(t));
    }
}

TEST(ElemwiseBinary, DivisionModAndOverflowAreDefined) {
  const double int_min = std::numeric_limits<int32_t>::min(), int_max = std::numeric_limits<int32_t>::max();
  NDArray a = MakeArray({6}, {7, -7, 7, -7, int_min, int_max}, DType::kInt32);
  NDArray b = MakeArray({6}, {0, 3, -3, -3, -1, 1}, DType::kInt32);
  ExpectAllNear(ToVector(Run1("elemwise_div", {a, b})), {0, -2, -2, 2, int_min, int_max}, 0, 0, "int div");
  ExpectAllNear(ToVector(Run1("_mod", {a, b})), {0, 2, -2, -1, 0, 0}, 0, 0, "int mod");
  ExpectAllNear(ToVector(Run1("elemwise_add", {a, b})), {7, -4, 4, -10, int_max, int_min}, 0, 0, "int add wraps");
  NDArray p = MakeArray({6}, {2, 2, -1, 1, 0, 0}, DType::kInt64);
  NDArray q = MakeArray({6}, {10, -1, -3, -5, 0, -2}, DType::kInt64);
  ExpectAllNear(ToVector(Run1("_power", {p, q})), {1024, 0, -1, 1, 1, 0}, 0, 0, "int power");
  NDArray f = MakeArray({5}, {7.5, -7.5, 7.5, -7.5, 3}, DType::kFloat32);
  NDArray g = MakeArray({5}, {2, 2, -2, -2, 0}, DType::kFloat32);
  ExpectAllNear(ToVector(Run1("_mod", {f, g})), {1.5, 0.5, -0.5, -1.5, 0}, 0, 0, "float mod, x mod 0 = 0");
  std::vector<double> d = ToVector(Run1("elemwise_div", {f, g}));
  EXPECT_TRUE(std::isinf(d[4])) << "float x / 0 is inf";
  NDArray n = MakeArray({2}, {NAN, 1}, DType::kFloat64);
  NDArray m = MakeArray({2}, {1, NAN}, DType::kFloat64);
  for (const std::string op : {"_maximum", "_minimum"}) {
    std::vector<double> r = ToVector(Run1(op, {n, m}));
    EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1])) << op << " propagates NaN from either side";
  }
}

TEST(ElemwiseBinary, GradientsMatchFiniteDifferences) {
  for (const auto& c : BinaryCases()) {
    if (c.predicate) continue;
    NDArray a = MakeArray({3, 4}, RandomValues(12, c.alo, c.ahi, 21));
    NDArray b = MakeArray({3, 4}, RandomValues(12, c.blo, c.bhi, 22));
    CheckNumericGradient(c.elemwise, {}, {a, b});
  }
}

TEST(ElemwiseBinary, PredicatesHaveZeroGradient) {
  for (const auto& c : BinaryCases()) {
    if (!c.predicate) continue;
    for (const std::string& name : {c.elemwise, c.broadcast}) {
      NDArray a = MakeArray({3}, {1, 2, 3}), b = MakeArray({3}, {1, 0, 5});
      NodeAttrs attrs = MakeAttrs(Op::Get(name), {});
      NDArray y = Run1(name, {a, b});
      std::vector<NDArray> g = imperative::Gradient(attrs, {a, b}, {y}, {MakeArray({3}, {1, 1, 1})});
      ExpectAllNear(ToVector(g[0]), {0, 0, 0}, 0, 0, name);
      ExpectAllNear(ToVector(g[1]), {0, 0, 0}, 0, 0, name);
    }
  }
}

TEST(ElemwiseBinary, AliasesNameTheSameOperator) {
  std::vector<std::vector<std::string>> groups = {
      {"elemwise_add", "_add", "_plus", "_Plus"},    {"elemwise_sub", "_sub", "_minus", "_Minus"},
      {"elemwise_mul", "_mul", "_Mul"},              {"elemwise_div", "_div", "_Div"},
      {"_mod", "_Mod"},                              {"_power", "_Power"},
      {"_maximum", "_Maximum"},                      {"_minimum", "_Minimum"},
      {"_hypot", "_Hypot"},                          {"_equal", "_Equal"},
      {"_not_equal", "_Not_Equal"},                  {"_greater", "_Greater"},
      {"_greater_equal", "_Greater_Equal"},          {"_lesser", "_Lesser"},
      {"_lesser_equal", "_Lesser_Equal"},            {"_copy", "identity"},
      {"broadcast_add", "broadcast_plus"},           {"broadcast_sub", "broadcast_minus"},
      {"_plus_scalar", "_PlusScalar"},               {"_minus_scalar", "_MinusScalar"},
      {"_rminus_scalar", "_RMinusScalar"},           {"_mul_scalar", "_MulScalar"},
      {"_div_scalar", "_DivScalar"},                 {"_rdiv_scalar", "_RDivScalar"},
      {"_mod_scalar", "_ModScalar"},                 {"_rmod_scalar", "_RModScalar"},
      {"_power_scalar", "_PowerScalar"},             {"_rpower_scalar", "_RPowerScalar"},
      {"_maximum_scalar", "_MaximumScalar"},         {"_minimum_scalar", "_MinimumScalar"},
      {"_hypot_scalar", "_HypotScalar"},             {"_equal_scalar", "_EqualScalar"},
      {"_not_equal_scalar", "_NotEqualScalar"},      {"_greater_scalar", "_GreaterScalar"},
      {"_greater_equal_scalar", "_GreaterEqualScalar"}, {"_lesser_scalar", "_LesserScalar"},
      {"_lesser_equal_scalar", "_LesserEqualScalar"}, {"_logical_and_scalar", "_LogicalAndScalar"},
      {"_logical_or_scalar", "_LogicalOrScalar"},    {"_logical_xor_scalar", "_LogicalXorScalar"},
  };
  for (const auto& g : groups)
    for (const auto& alias : g) EXPECT_EQ(Op::Get(alias), Op::Get(g[0])) << alias;
  EXPECT_EQ(Op::Get("_Plus")->name, "elemwise_add");
}

TEST(ElemwiseBinary, SharedAttributesComeFromTheGroups) {
  const auto& pattern = Op::GetAttr<TOpPattern>("TOpPattern");
  const auto& inplace = Op::GetAttr<FInplaceOption>("FInplaceOption");
  EXPECT_EQ(pattern[Op::Get("exp")], OpPattern::kElemwise);
  EXPECT_EQ(pattern[Op::Get("elemwise_add")], OpPattern::kElemwise);
  EXPECT_EQ(pattern[Op::Get("_plus_scalar")], OpPattern::kElemwise);
  EXPECT_EQ(pattern[Op::Get("broadcast_add")], OpPattern::kBroadcast);
  EXPECT_EQ(pattern[Op::Get("_reduce_sum_to")], OpPattern::kReduce);
  EXPECT_EQ(inplace[Op::Get("exp")](NodeAttrs()).size(), 1u);
  EXPECT_EQ(inplace[Op::Get("elemwise_mul")](NodeAttrs()).size(), 2u);
  EXPECT_FALSE(inplace.Contains(Op::Get("broadcast_add")));
}

// ---------------------------------------------------------------- broadcast
// numpy's broadcast of two shapes (known to be compatible).
Shape RefBroadcastShape(const Shape& a, const Shape& b) {
  int nd = std::max(a.ndim(), b.ndim());
  Shape out(nd);
  for (int d = 0; d < nd; ++d) {
    int ia = d - (nd - a.ndim()), ib = d - (nd - b.ndim());
    int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    out[d] = x == 1 ? y : x;
  }
  return out;
}

// Element i of the output read from an input of shape `in`.
int64_t SourceIndex(const Shape& out, const Shape& in, int64_t i) {
  int64_t src = 0, run = 1;
  for (int d = out.ndim() - 1; d >= 0; --d) {
    int64_t c = i % out[d];
    i /= out[d];
    int k = d - (out.ndim() - in.ndim());
    if (k < 0) continue;
    if (in[k] != 1) src += c * run;
    run *= in[k];
  }
  return src;
}

std::vector<double> RefBroadcast(const Shape& sa, const std::vector<double>& a, const Shape& sb,
                                 const std::vector<double>& b, const Fn2& f) {
  Shape so = RefBroadcastShape(sa, sb);
  std::vector<double> out(so.Size());
  for (int64_t i = 0; i < so.Size(); ++i) out[i] = f(a[SourceIndex(so, sa, i)], b[SourceIndex(so, sb, i)]);
  return out;
}

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair> kBroadcastPairs = {
    {{3, 4}, {3, 4}},       {{1}, {3, 4}},         {{3, 4}, {1}},          {{2, 1, 3}, {4, 1}},
    {{4, 1}, {2, 1, 3}},    {Shape::Scalar(), {2, 3}}, {{2, 3}, Shape::Scalar()}, {{5, 1, 4, 1}, {1, 3, 1, 2}},
    {{3, 1}, {1, 4}},       {{0, 3}, {1, 3}},      {{2, 0}, {2, 1}},       {{2, 3, 4}, {3, 1}},
    {{2, 3, 4}, {2, 1, 4}}, {{300, 200}, {200}},   {{300, 1}, {1, 200}},   {{1, 3}, {3}},
};

TEST(BroadcastBinary, ValuesMatchReference) {
  for (const auto& c : BinaryCases())
    for (DType t : {DType::kFloat64, DType::kFloat32, DType::kFloat16, DType::kInt32, DType::kUint8})
      for (const auto& p : kBroadcastPairs) {
        bool integral = !IsFloatDType(t);
        if (integral && !c.predicate && c.elemwise != "elemwise_add" && c.elemwise != "elemwise_mul") continue;
        NDArray a = MakeArray(p.a, integral ? IntValues(p.a.Size(), t, 7)
                                            : CaseValues(p.a.Size(), c.alo, c.ahi, c.predicate, 7), t);
        NDArray b = MakeArray(p.b, integral ? IntValues(p.b.Size(), t, 8)
                                            : CaseValues(p.b.Size(), c.blo, c.bhi, c.predicate, 8), t);
        Fn2 ref = c.ref;
        if (integral && !c.predicate) {
          std::string name = c.elemwise;
          ref = [name, t](double x, double y) { return IntBinary(name, x, y, t); };
        }
        std::string what = c.broadcast + " " + DTypeName(t) + " " + p.a.ToString() + " " + p.b.ToString();
        NDArray y = Run1(c.broadcast, {a, b});
        ASSERT_EQ(y.shape(), RefBroadcastShape(p.a, p.b)) << what;
        ASSERT_EQ(y.dtype(), t) << what;
        ExpectAllNear(ToVector(y), RefBroadcast(p.a, ToVector(a), p.b, ToVector(b), ref), integral ? 0 : Rtol(t),
                      integral ? 0 : Atol(t), what);
      }
}

TEST(BroadcastBinary, GradientsReduceToEachInputShape) {
  const std::vector<ShapePair> pairs = {
      {{2, 3}, {2, 3}}, {{1}, {3, 4}}, {{2, 1, 3}, {4, 1}}, {Shape::Scalar(), {2, 3}}, {{3, 1}, {1, 4}}, {{1, 3}, {3}}};
  for (const auto& c : BinaryCases()) {
    if (c.predicate) continue;
    for (const auto& p : pairs) {
      NDArray a = MakeArray(p.a, RandomValues(p.a.Size(), c.alo, c.ahi, 31));
      NDArray b = MakeArray(p.b, RandomValues(p.b.Size(), c.blo, c.bhi, 32));
      SCOPED_TRACE(c.broadcast + " " + p.a.ToString() + " " + p.b.ToString());
      CheckNumericGradient(c.broadcast, {}, {a, b});
    }
  }
}

TEST(BroadcastBinary, MismatchNamesTheOperatorAndBothShapes) {
  NDArray a = MakeArray({2, 3}, std::vector<double>(6, 1.0));
  NDArray b = MakeArray({4}, std::vector<double>(4, 1.0));
  ExpectError([&] { Run1("broadcast_add", {a, b}); }, ErrorKind::kShape, {"broadcast_add", "(2,3)", "(4,)"});
  NDArray c = MakeArray({2, 1, 3}, std::vector<double>(6, 1.0));
  NDArray d = MakeArray({4, 2}, std::vector<double>(8, 1.0));
  ExpectError([&] { Run1("broadcast_greater", {c, d}); }, ErrorKind::kShape, {"broadcast_greater", "(2,1,3)", "(4,2)"});
  NDArray e = MakeArray({0}, {});
  ExpectError([&] { Run1("broadcast_mul", {e, b}); }, ErrorKind::kShape, {"broadcast_mul", "(0,)", "(4,)"});
}

TEST(ReduceSumTo, SumsOverBroadcastAxes) {
  NDArray data = MakeArray({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectAllNear(ToVector(Run1("_reduce_sum_to", {data, MakeArray({1, 3}, {0, 0, 0})})), {5, 7, 9}, 0, 0, "(1,3)");
  ExpectAllNear(ToVector(Run1("_reduce_sum_to", {data, MakeArray({3}, {0, 0, 0})})), {5, 7, 9}, 0, 0, "(3,)");
  ExpectAllNear(ToVector(Run1("_reduce_sum_to", {data, MakeArray({2, 1}, {0, 0})})), {6, 15}, 0, 0, "(2,1)");
  NDArray all = Run1("_reduce_sum_to", {data, MakeArray(Shape::Scalar(), {0})});
  EXPECT_EQ(all.shape(), Shape::Scalar());
  ExpectAllNear(ToVector(all), {21}, 0, 0, "()");
  ExpectAllNear(ToVector(Run1("_reduce_sum_to", {data, MakeArray({2, 3}, std::vector<double>(6, 0))})),
                {1, 2, 3, 4, 5, 6}, 0, 0, "same shape");
  NDArray empty = MakeArray({0, 3}, {});
  ExpectAllNear(ToVector(Run1("_reduce_sum_to", {empty, MakeArray({1, 3}, {9, 9, 9})})), {0, 0, 0}, 0, 0, "empty");
  ExpectError([&] { Run1("_reduce_sum_to", {data, MakeArray({2}, {0, 0})}); }, ErrorKind::kShape,
              {"_reduce_sum_to", "(2,3)", "(2,)"});
  CheckNumericGradient("_reduce_sum_to", {}, {MakeArray({2, 3}, RandomValues(6, -1, 1, 3)), MakeArray({1, 3}, {0, 0, 0})},
                       {1e-5, 1e-4, 1e-6, {0}});
}

// ---------------------------------------------------------------- scalar
struct ScalarCase {
  std::string name;
  Fn2 ref;  // (x, scalar)
  double lo, hi;
  std::vector<double> scalars;
  bool predicate;
};

std::vector<ScalarCase> ScalarCases() {
  auto rev = [](Fn2 f) { return [f](double x, double s) { return f(s, x); }; };
  auto pow = [](double a, double b) { return std::pow(a, b); };
  return {
      {"_plus_scalar", [](double x, double s) { return x + s; }, -3, 3, {2.5, -1.5}, false},
      {"_minus_scalar", [](double x, double s) { return x - s; }, -3, 3, {2.5, -1.5}, false},
      {"_rminus_scalar", [](double x, double s) { return s - x; }, -3, 3, {2.5, -1.5}, false},
      {"_mul_scalar", [](double x, double s) { return x * s; }, -3, 3, {2.5, -1.5}, false},
      {"_div_scalar", [](double x, double s) { return x / s; }, -3, 3, {2.5, -1.5}, false},
      {"_rdiv_scalar", [](double x, double s) { return s / x; }, 0.5, 3, {2.5, -1.5}, false},
      {"_mod_scalar", PyMod, -5, 5, {2.5, -1.5}, false},
      {"_rmod_scalar", rev(PyMod), 0.7, 3, {5.5, -4.5}, false},
      {"_power_scalar", pow, 0.5, 2, {2.5, -1.5, 2}, false},
      {"_rpower_scalar", rev(pow), -2, 2, {2.5, 0.5}, false},
      {"_maximum_scalar", [](double x, double s) { return std::max(x, s); }, -3, 3, {0.5, -1.5}, false},
      {"_minimum_scalar", [](double x, double s) { return std::min(x, s); }, -3, 3, {0.5, -1.5}, false},
      {"_hypot_scalar", [](double x, double s) { return std::hypot(x, s); }, -3, 3, {2.5, -1.5}, false},
      {"_equal_scalar", [](double x, double s) { return double(x == s); }, -2, 2, {1, 0}, true},
      {"_not_equal_scalar", [](double x, double s) { return double(x != s); }, -2, 2, {1, 0}, true},
      {"_greater_scalar", [](double x, double s) { return double(x > s); }, -2, 2, {1, -0.5}, true},
      {"_greater_equal_scalar", [](double x, double s) { return double(x >= s); }, -2, 2, {1, -0.5}, true},
      {"_lesser_scalar", [](double x, double s) { return double(x < s); }, -2, 2, {1, -0.5}, true},
      {"_lesser_equal_scalar", [](double x, double s) { return double(x <= s); }, -2, 2, {1, -0.5}, true},
      {"_logical_and_scalar", [](double x, double s) { return double(x != 0 && s != 0); }, -2, 2, {1, 0}, true},
      {"_logical_or_scalar", [](double x, double s) { return double(x != 0 || s != 0); }, -2, 2, {1, 0}, true},
      {"_logical_xor_scalar", [](double x, double s) { return double((x != 0) != (s != 0)); }, -2, 2, {1, 0}, true},
  };
}

TEST(BinaryScalar, FloatValuesMatchReference) {
  for (const auto& c : ScalarCases())
    for (double s : c.scalars)
      for (DType t : kFloatTypes)
        for (const Shape& shape : {Shape::Scalar(), Shape{0}, Shape{1}, Shape{3, 4}, Shape{40000}}) {
          NDArray x = MakeArray(shape, CaseValues(shape.Size(), c.lo, c.hi, c.predicate, 9), t);
          NDArray y = Run1(c.name, {x}, {{"scalar", param_parse::Format(s)}});
          // The scalar is converted to the compute type first (float for half types).
          double sc = t == DType::kFloat64 ? s : static_cast<double>(static_cast<float>(s));
          std::string what = c.name + " " + DTypeName(t) + " scalar=" + std::to_string(s);
          ASSERT_EQ(y.dtype(), t) << what;
          ExpectAllNear(ToVector(y), Map1(ToVector(x), [&](double v) { return c.ref(v, sc); }), Rtol(t), Atol(t),
                        what);
        }
}

// Integer arrays truncate the scalar to their dtype first.
TEST(BinaryScalar, IntegerArraysTruncateTheScalar) {
  for (const auto& c : ScalarCases())
    for (double s : c.scalars)
      for (DType t : kIntTypes) {
        NDArray x = MakeArray({17}, IntValues(17, t, 13), t);
        NDArray y = Run1(c.name, {x}, {{"scalar", param_parse::Format(s)}});
        double si = IntResult(s, t);
        bool reversed = c.name.compare(0, 2, "_r") == 0;
        std::string base = reversed ? "_" + c.name.substr(2) : c.name;
        std::vector<double> xv = ToVector(x), expected(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          double a = reversed ? si : xv[i], b = reversed ? xv[i] : si;
          bool exact = c.predicate || base == "_maximum_scalar" || base == "_minimum_scalar";
          expected[i] = exact ? c.ref(xv[i], si) : IntBinary(base, a, b, t);
        }
        ExpectAllNear(ToVector(y), expected, 0, 0, c.name + " " + DTypeName(t) + " scalar=" + std::to_string(s));
      }
}

TEST(BinaryScalar, GradientsMatchFiniteDifferences) {
  for (const auto& c : ScalarCases()) {
    if (c.predicate) continue;
    for (double s : c.scalars) {
      NDArray x = MakeArray({3, 4}, RandomValues(12, c.lo, c.hi, 41));
      SCOPED_TRACE(c.name + " scalar=" + std::to_string(s));
      CheckNumericGradient(c.name, {{"scalar", param_parse::Format(s)}}, {x});
    }
  }
}

TEST(BinaryScalar, ParametersFollowMXNet) {
  NDArray x = MakeArray({2}, {1, 2});
  // `scalar` defaults to 1 and `is_int` is accepted.
  ExpectAllNear(ToVector(Run1("_plus_scalar", {x})), {2, 3}, 0, 0, "default scalar");
  ExpectAllNear(ToVector(Run1("_mul_scalar", {x}, {{"scalar", "3"}, {"is_int", "False"}})), {3, 6}, 0, 0, "is_int");
  ExpectError([&] { Run1("_plus_scalar", {x}, {{"scalar", "abc"}}); }, ErrorKind::kValue, {"scalar", "abc"});
  ExpectError([&] { Run1("_plus_scalar", {x}, {{"scalr", "1"}}); }, ErrorKind::kValue, {"scalr"});
  // An operator without parameters leaves extra attributes unread, as MXNet does.
  ExpectAllNear(ToVector(Run1("exp", {x}, {{"scalar", "1"}})), ToVector(Run1("exp", {x})), 0, 0, "unread scalar");
}

// ---------------------------------------------------------------- requests and errors
TEST(Elemwise, WriteRequestsAreHonoured) {
  Context cpu = Context::CPU();
  auto run = [&](const std::string& op, const std::vector<NDArray>& in, NDArray out, OpReq req,
                 const KwArgs& params = {}) {
    std::vector<NDArray> outs = {out};
    std::vector<OpReq> reqs = {req};
    imperative::Invoke(MakeAttrs(Op::Get(op), params), in, &outs, &cpu, &reqs);
  };
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt32}) {
    std::string what = DTypeName(t);
    NDArray a = MakeArray({2, 3}, {1, 2, 3, 4, 5, 6}, t);
    NDArray b = MakeArray({3}, {10, 20, 30}, t);
    NDArray out = MakeArray({2, 3}, {100, 100, 100, 100, 100, 100}, t);
    run("broadcast_add", {a, b}, out, OpReq::kAddTo);
    ExpectAllNear(ToVector(out), {111, 122, 133, 114, 125, 136}, 0, 0, what + " broadcast kAddTo");
    run("elemwise_mul", {a, a}, out, OpReq::kAddTo);
    ExpectAllNear(ToVector(out), {112, 126, 142, 130, 150, 172}, 0, 0, what + " binary kAddTo");
    run("negative", {a}, out, OpReq::kNullOp);
    ExpectAllNear(ToVector(out), {112, 126, 142, 130, 150, 172}, 0, 0, what + " kNullOp");
    run("_mul_scalar", {a}, out, OpReq::kWriteTo, {{"scalar", "2"}});
    ExpectAllNear(ToVector(out), {2, 4, 6, 8, 10, 12}, 0, 0, what + " kWriteTo");
    run("_plus_scalar", {out}, out, OpReq::kWriteInplace, {{"scalar", "1"}});
    ExpectAllNear(ToVector(out), {3, 5, 7, 9, 11, 13}, 0, 0, what + " kWriteInplace");
    run("elemwise_sub", {out, a}, out, OpReq::kWriteInplace);
    ExpectAllNear(ToVector(out), {2, 3, 4, 5, 6, 7}, 0, 0, what + " binary kWriteInplace");
  }
}

// A kAddTo request in a signed integer dtype wraps around as numpy's sums do, where the
// plain sum overflowed (undefined behaviour: CI's UBSan build aborts on it): Store's adds in
// _backward_diag (placing a gradient and extracting one) and CopyWithReq's in Flatten.
template <typename T>
void CheckAddToWraps() {
  SCOPED_TRACE(DTypeName(DTypeOf<T>::value));
  Context cpu = Context::CPU();
  auto make = [](const Shape& shape, std::vector<T> v) {
    NDArray a(shape, Context::CPU(), DTypeOf<T>::value);
    a.SyncCopyFromCPU(v.data(), v.size() * sizeof(T));
    return a;
  };
  auto add_to = [&](const std::string& op, const std::vector<NDArray>& in, const NDArray& out) {
    std::vector<NDArray> outs = {out};
    std::vector<OpReq> reqs = {OpReq::kAddTo};
    imperative::Invoke(MakeAttrs(Op::Get(op), {}), in, &outs, &cpu, &reqs);
    std::vector<T> got(out.Size());
    out.SyncCopyToCPU(got.data(), got.size() * sizeof(T));
    return got;
  };
  const T max = std::numeric_limits<T>::max(), min = std::numeric_limits<T>::min();
  // 2-D data: the output gradient is added onto the diagonal.
  EXPECT_EQ(add_to("_backward_diag", {make({2}, {1, -1}), make({2, 2}, {0, 0, 0, 0})}, make({2, 2}, {max, 7, 8, min})),
            (std::vector<T>{min, 7, 8, max}));
  // 1-D data: the output gradient's diagonal is added to the gradient.
  EXPECT_EQ(add_to("_backward_diag", {make({2, 2}, {3, 9, 9, -3}), make({2}, {0, 0})}, make({2}, {max - 1, min + 1})),
            (std::vector<T>{min + 1, max - 1}));
  EXPECT_EQ(add_to("Flatten", {make({2, 2}, {1, -1, 2, -2})}, make({2, 2}, {max, min, max, min})),
            (std::vector<T>{min, max, min + 1, max - 1}));
}

TEST(Elemwise, IntegerAddToRequestsWrapAround) {
  CheckAddToWraps<int64_t>();
  CheckAddToWraps<int32_t>();
}

TEST(Elemwise, BadInputsGiveClearErrors) {
  NDArray a = MakeArray({2, 3}, std::vector<double>(6, 1.0));
  NDArray b = MakeArray({3, 2}, std::vector<double>(6, 1.0));
  ExpectError([&] { Run1("elemwise_add", {a, b}); }, ErrorKind::kShape, {"elemwise_add", "(3,2)", "(2,3)"});
  ExpectError([&] { Run1("elemwise_add", {a}); }, ErrorKind::kValue, {"elemwise_add", "expected 2 inputs", "got 1"});
  ExpectError([&] { Run1("exp", {a, a}); }, ErrorKind::kValue, {"exp", "expected 1 input", "got 2"});
  NDArray f = MakeArray({2, 3}, std::vector<double>(6, 1.0), DType::kFloat32);
  ExpectError([&] { Run1("elemwise_mul", {a, f}); }, ErrorKind::kType, {"elemwise_mul", "float32", "float64"});
  ExpectError([&] { Run1("broadcast_mul", {a, f}); }, ErrorKind::kType, {"broadcast_mul", "float32", "float64"});
  ExpectError([&] { Run1("_plus_scalar", {a}, {{"axis", "1"}}); }, ErrorKind::kValue, {"_plus_scalar", "axis"});
}

}  // namespace
}  // namespace weft

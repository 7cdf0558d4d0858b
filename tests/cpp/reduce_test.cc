// Reductions (sum, mean, prod, max, min, nansum, nanprod, norm, argmax, argmin): values
// against double-precision references computed here, gradients against finite
// differences, and the error messages for bad axes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace weft {
namespace {

using test::CheckNumericGradient;
using test::ExpectAllNear;
using test::MakeArray;
using test::RandomArray;
using test::RandomValues;
using test::Run1;
using test::ToVector;

// Reference reduction: for every input element, folds it into the output element it
// belongs to; `fold` works on (accumulator, value) in double.
template <typename Fold>
std::vector<double> RefReduce(const Shape& shape, const std::vector<double>& x, const std::vector<bool>& reduce,
                              double init, Fold fold) {
  int nd = shape.ndim();
  std::vector<int64_t> ostride(nd, 0);
  int64_t run = 1, m = 1;
  for (int d = nd - 1; d >= 0; --d) {
    if (reduce[d]) continue;
    ostride[d] = run;
    run *= shape[d];
    m *= shape[d];
  }
  std::vector<double> out(m, init);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rem = i, j = 0;
    for (int d = nd - 1; d >= 0; --d) {
      j += (rem % shape[d]) * ostride[d];
      rem /= shape[d];
    }
    out[j] = fold(out[j], x[i]);
  }
  return out;
}

std::vector<bool> Flags(int nd, std::vector<int> axes) {
  std::vector<bool> f(nd, axes.empty());
  for (int a : axes) f[a < 0 ? a + nd : a] = true;
  return f;
}

struct ReduceCase {
  Shape shape;
  std::string axis;  // parameter text; empty = default (all)
  std::vector<int> axes;
};

std::vector<ReduceCase> Cases() {
  return {
      {Shape{7}, "", {}},
      {Shape{3, 5}, "0", {0}},
      {Shape{3, 5}, "1", {1}},
      {Shape{3, 5}, "-1", {1}},
      {Shape{2, 3, 4}, "(0,2)", {0, 2}},
      {Shape{2, 3, 4}, "(1,)", {1}},
      {Shape{4, 1, 5, 3}, "(1,2)", {1, 2}},
      {Shape{3, 33, 17}, "(0,1)", {0, 1}},
      {Shape{2, 3, 4}, "()", {}},
      {Shape{1000, 3}, "0", {0}},
      {Shape{3, 70000}, "1", {1}},
  };
}

double SumFold(double a, double x) { return a + x; }
double ProdFold(double a, double x) { return a * x; }
double MaxFold(double a, double x) { return std::max(a, x); }
double MinFold(double a, double x) { return std::min(a, x); }

TEST(Reduce, SumMeanProdMaxMinMatchReference) {
  for (const auto& c : Cases()) {
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      std::vector<double> x = RandomValues(c.shape.Size(), 0.5, 1.5, 7);
      NDArray a = MakeArray(c.shape, x, dt);
      KwArgs kw;
      if (!c.axis.empty()) kw.push_back({"axis", c.axis});
      std::vector<bool> f = Flags(c.shape.ndim(), c.axes);
      std::string what = c.shape.ToString() + " axis=" + c.axis + " " + DTypeName(dt);
      std::vector<double> sum = RefReduce(c.shape, x, f, 0.0, SumFold);
      ExpectAllNear(ToVector(Run1("sum", {a}, kw)), sum, 1e-5, 1e-6, "sum " + what);
      std::vector<double> mean = sum;
      int64_t count = c.shape.Size() / static_cast<int64_t>(sum.size());
      for (auto& v : mean) v /= count;
      ExpectAllNear(ToVector(Run1("mean", {a}, kw)), mean, 1e-5, 1e-7, "mean " + what);
      ExpectAllNear(ToVector(Run1("max", {a}, kw)), RefReduce(c.shape, x, f, -1e300, MaxFold), 1e-7, 0, "max " + what);
      ExpectAllNear(ToVector(Run1("min", {a}, kw)), RefReduce(c.shape, x, f, 1e300, MinFold), 1e-7, 0, "min " + what);
      if (c.shape.Size() < 200) {
        ExpectAllNear(ToVector(Run1("prod", {a}, kw)), RefReduce(c.shape, x, f, 1.0, ProdFold), 1e-5, 0,
                      "prod " + what);
      }
    }
  }
}

TEST(Reduce, Float32SumOfManyElementsKeepsPrecision) {
  // 2^22 values: a float accumulator drifts by ~1e-4 relative; double accumulation does not.
  int64_t n = int64_t{1} << 22;
  std::vector<double> x = RandomValues(n, 0.0, 1.0, 3);
  std::vector<float> xf(x.begin(), x.end());
  double ref = 0;
  for (float v : xf) ref += v;
  NDArray a = MakeArray(Shape{n}, std::vector<double>(xf.begin(), xf.end()), DType::kFloat32);
  ExpectAllNear(ToVector(Run1("sum", {a})), {ref}, 1e-6, 0, "sum of 2^22 float32");
  NDArray b = a.Reshape(Shape{1024, 4096});
  std::vector<double> cols = RefReduce(Shape{1024, 4096}, std::vector<double>(xf.begin(), xf.end()), {true, false},
                                       0.0, SumFold);
  ExpectAllNear(ToVector(Run1("sum", {b}, {{"axis", "0"}})), cols, 1e-6, 0, "column sums");
}

TEST(Reduce, KeepdimsExcludeAndAliases) {
  NDArray a = RandomArray(Shape{2, 3, 4});
  EXPECT_EQ(Run1("sum", {a}, {{"axis", "1"}, {"keepdims", "True"}}).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(Run1("sum", {a}, {{"axis", "1"}, {"exclude", "True"}}).shape(), (Shape{3}));
  EXPECT_EQ(Run1("sum", {a}, {{"axis", "(0,2)"}, {"exclude", "True"}, {"keepdims", "1"}}).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(Run1("sum", {a}).shape(), (Shape{1}));
  EXPECT_EQ(Run1("sum", {a}, {{"keepdims", "True"}}).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(Run1("sum_axis", {a}, {{"axis", "2"}}).shape(), (Shape{2, 3}));
  EXPECT_EQ(Run1("max_axis", {a}, {{"axis", "0"}}).shape(), (Shape{3, 4}));
  EXPECT_EQ(Run1("min_axis", {a}, {{"axis", "-1"}}).shape(), (Shape{2, 3}));
  std::vector<double> excl = ToVector(Run1("sum", {a}, {{"axis", "1"}, {"exclude", "True"}}));
  std::vector<double> ref = RefReduce(Shape{2, 3, 4}, ToVector(a), {true, false, true}, 0.0, SumFold);
  ExpectAllNear(excl, ref, 1e-12, 1e-12, "exclude");
}

TEST(Reduce, ZeroSizeInputs) {
  NDArray a = MakeArray(Shape{0, 3}, {});
  std::vector<double> s = ToVector(Run1("sum", {a}, {{"axis", "0"}}));
  ExpectAllNear(s, {0, 0, 0}, 0, 0, "sum over an empty axis");
  ExpectAllNear(ToVector(Run1("prod", {a}, {{"axis", "0"}})), {1, 1, 1}, 0, 0, "prod over an empty axis");
  std::vector<double> m = ToVector(Run1("mean", {a}, {{"axis", "0"}}));
  for (double v : m) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(Run1("sum", {a}, {{"axis", "1"}}).shape(), (Shape{0}));
}

TEST(Reduce, IntegerInputsKeepTheirDtype) {
  NDArray a = MakeArray(Shape{2, 3}, {1, 2, 3, 4, 5, 6}, DType::kInt32);
  NDArray s = Run1("sum", {a}, {{"axis", "1"}});
  EXPECT_EQ(s.dtype(), DType::kInt32);
  ExpectAllNear(ToVector(s), {6, 15}, 0, 0, "int sum");
  ExpectAllNear(ToVector(Run1("prod", {a}, {{"axis", "0"}})), {4, 10, 18}, 0, 0, "int prod");
  ExpectAllNear(ToVector(Run1("max", {a})), {6}, 0, 0, "int max");
}

TEST(Reduce, NaNHandling) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  NDArray a = MakeArray(Shape{2, 3}, {1, nan, 3, 4, 5, 6});
  ExpectAllNear(ToVector(Run1("nansum", {a}, {{"axis", "1"}})), {4, 15}, 0, 0, "nansum");
  ExpectAllNear(ToVector(Run1("nanprod", {a}, {{"axis", "1"}})), {3, 120}, 0, 0, "nanprod");
  std::vector<double> mx = ToVector(Run1("max", {a}, {{"axis", "1"}}));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 6);
  std::vector<double> s = ToVector(Run1("sum", {a}, {{"axis", "1"}}));
  EXPECT_TRUE(std::isnan(s[0]));
}

TEST(Reduce, Norm) {
  std::vector<double> x = RandomValues(24, -2, 2, 11);
  NDArray a = MakeArray(Shape{2, 3, 4}, x);
  double ss = 0, s1 = 0;
  for (double v : x) { ss += v * v; s1 += std::fabs(v); }
  NDArray n2 = Run1("norm", {a});
  EXPECT_EQ(n2.shape(), (Shape{1}));
  ExpectAllNear(ToVector(n2), {std::sqrt(ss)}, 1e-12, 0, "norm ord=2");
  ExpectAllNear(ToVector(Run1("norm", {a}, {{"ord", "1"}})), {s1}, 1e-12, 0, "norm ord=1");
  std::vector<double> rows = RefReduce(Shape{2, 3, 4}, x, {false, false, true}, 0.0,
                                       [](double acc, double v) { return acc + v * v; });
  for (auto& r : rows) r = std::sqrt(r);
  NDArray n = Run1("norm", {a}, {{"axis", "-1"}, {"keepdims", "True"}});
  EXPECT_EQ(n.shape(), (Shape{2, 3, 1}));
  ExpectAllNear(ToVector(n), rows, 1e-12, 0, "norm over the last axis");
  NDArray h = Run1("norm", {a}, {{"out_dtype", "float32"}});
  EXPECT_EQ(h.dtype(), DType::kFloat32);
  ExpectAllNear(ToVector(h), {std::sqrt(ss)}, 1e-6, 0, "norm with out_dtype");
  test::ExpectError([&] { Run1("norm", {a}, {{"ord", "3"}}); }, ErrorKind::kValue, {"norm", "ord", "3"});
}

TEST(Reduce, ArgmaxArgmin) {
  NDArray a = MakeArray(Shape{2, 3}, {1, 5, 5, 7, -2, 0}, DType::kFloat32);
  NDArray am = Run1("argmax", {a}, {{"axis", "1"}});
  EXPECT_EQ(am.dtype(), DType::kFloat32);
  ExpectAllNear(ToVector(am), {1, 0}, 0, 0, "argmax axis 1 (first of ties)");
  ExpectAllNear(ToVector(Run1("argmin", {a}, {{"axis", "0"}})), {0, 1, 1}, 0, 0, "argmin axis 0");
  NDArray flat = Run1("argmax", {a});
  EXPECT_EQ(flat.shape(), (Shape{1}));
  ExpectAllNear(ToVector(flat), {3}, 0, 0, "argmax of the flattened input");
  EXPECT_EQ(Run1("argmax", {a}, {{"axis", "0"}, {"keepdims", "True"}}).shape(), (Shape{1, 3}));
  ExpectAllNear(ToVector(Run1("argmax_channel", {a})), {1, 0}, 0, 0, "argmax_channel");
  double nan = std::numeric_limits<double>::quiet_NaN();
  NDArray b = MakeArray(Shape{4}, {1, nan, 9, nan});
  ExpectAllNear(ToVector(Run1("argmax", {b}, {{"axis", "0"}})), {1}, 0, 0, "argmax picks the first NaN");
  // A larger case with blocks across the inner axis.
  std::vector<double> x = RandomValues(5 * 7 * 300, -1, 1, 5);
  NDArray c = MakeArray(Shape{5, 7, 300}, x);
  std::vector<double> got = ToVector(Run1("argmin", {c}, {{"axis", "1"}}));
  for (int o = 0; o < 5; ++o)
    for (int i = 0; i < 300; ++i) {
      int best = 0;
      for (int r = 1; r < 7; ++r)
        if (x[(o * 7 + r) * 300 + i] < x[(o * 7 + best) * 300 + i]) best = r;
      ASSERT_EQ(got[o * 300 + i], best);
    }
}

TEST(Reduce, Gradients) {
  NDArray a = RandomArray(Shape{2, 3, 4}, DType::kFloat64, 0.5, 1.5);
  for (const char* op : {"sum", "mean", "prod", "nansum", "nanprod", "max", "min"}) {
    for (const KwArgs& kw : std::vector<KwArgs>{{},
                                                {{"axis", "1"}},
                                                {{"axis", "(0,2)"}, {"keepdims", "True"}},
                                                {{"axis", "1"}, {"exclude", "True"}}}) {
      SCOPED_TRACE(std::string(op) + " with " + std::to_string(kw.size()) + " params");
      CheckNumericGradient(op, kw, {a});
    }
  }
  CheckNumericGradient("norm", {}, {a});
  CheckNumericGradient("norm", {{"axis", "(1,2)"}, {"keepdims", "True"}}, {a});
  CheckNumericGradient("norm", {{"ord", "1"}, {"axis", "0"}}, {a});
}

TEST(Reduce, ProdGradientAtZeros) {
  // One zero in a group: only it gets a nonzero gradient (the product of the others);
  // two zeros: every gradient of the group is zero.
  NDArray a = MakeArray(Shape{2, 3}, {2, 0, 3, 0, 0, 5});
  NDArray out = Run1("prod", {a}, {{"axis", "1"}});
  NDArray head = MakeArray(Shape{2}, {1, 1});
  NodeAttrs attrs = MakeAttrs(Op::Get("prod"), {{"axis", "1"}});
  std::vector<NDArray> g = imperative::Gradient(attrs, {a}, {out}, {head});
  ExpectAllNear(ToVector(g[0]), {0, 6, 0, 0, 0, 0}, 0, 0, "prod gradient with zeros");
}

TEST(Reduce, Errors) {
  NDArray a = RandomArray(Shape{2, 3});
  test::ExpectError([&] { Run1("sum", {a}, {{"axis", "2"}}); }, ErrorKind::kIndex, {"Operator 'sum'", "axis 2", "(2,3)"});
  test::ExpectError([&] { Run1("mean", {a}, {{"axis", "(0,-2)"}}); }, ErrorKind::kValue,
                    {"Operator 'mean'", "appears twice"});
  test::ExpectError([&] { Run1("argmax", {a}, {{"axis", "-3"}}); }, ErrorKind::kIndex,
                    {"Operator 'argmax'", "axis", "-3"});
  test::ExpectError([&] { Run1("sum", {a}, {{"axes", "1"}}); }, ErrorKind::kValue, {"sum", "axes"});
  NDArray e = MakeArray(Shape{0, 2}, {});
  test::ExpectError([&] { Run1("argmax", {e}, {{"axis", "0"}}); }, ErrorKind::kValue, {"argmax", "empty"});
}

}  // namespace
}  // namespace weft

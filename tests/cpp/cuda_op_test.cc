// GPU operators against their CPU versions: the same call on copies of the same inputs
// must give the same values (to rounding). Every test skips when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace weft {
namespace {

using test::ExpectAllNear;
using test::MakeArray;
using test::RandomValues;
using test::ToVector;

#define REQUIRE_GPU() \
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible"

std::vector<NDArray> RunOn(Context ctx, const std::string& op, const std::vector<NDArray>& inputs,
                           const KwArgs& params) {
  NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
  std::vector<NDArray> on_ctx, outs;
  for (const NDArray& a : inputs) on_ctx.push_back(a.Copy(ctx));
  imperative::Invoke(attrs, on_ctx, &outs, &ctx);
  return outs;
}

// Runs `op` on the CPU and on gpu(0) and compares every output.
void ExpectGpuMatchesCpu(const std::string& op, const std::vector<NDArray>& inputs, const KwArgs& params,
                         double rtol, double atol, const std::string& what) {
  std::vector<NDArray> cpu = RunOn(Context::CPU(), op, inputs, params);
  std::vector<NDArray> gpu = RunOn(Context::GPU(0), op, inputs, params);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t k = 0; k < cpu.size(); ++k) {
    EXPECT_EQ(gpu[k].ctx(), Context::GPU(0));
    EXPECT_EQ(gpu[k].shape(), cpu[k].shape()) << what;
    EXPECT_EQ(gpu[k].dtype(), cpu[k].dtype()) << what;
    ExpectAllNear(ToVector(gpu[k]), ToVector(cpu[k]), rtol, atol, what + " output " + std::to_string(k));
  }
}

double Rtol(DType t) { return t == DType::kFloat16 ? 2e-3 : t == DType::kFloat32 ? 1e-5 : 1e-12; }

TEST(CudaOps, ReductionsMatchTheCpu) {
  REQUIRE_GPU();
  struct Case {
    Shape shape;
    KwArgs params;
  };
  std::vector<Case> cases = {
      {{7}, {}},
      {{4, 5}, {{"axis", "1"}}},
      {{4, 5}, {{"axis", "0"}}},
      {{3, 4, 5}, {{"axis", "(0, 2)"}}},
      {{3, 4, 5}, {{"axis", "1"}, {"keepdims", "True"}}},
      {{2, 3, 4, 5}, {{"axis", "(1, 3)"}, {"exclude", "True"}}},
      {{1000, 300}, {{"axis", "0"}}},  // many outputs, reduced across rows
      {{3, 100000}, {{"axis", "1"}}},  // few outputs, long contiguous rows
      {{100000, 3}, {{"axis", "0"}}},  // few outputs, strided
      {{0, 4}, {{"axis", "0"}}},       // empty reduction
  };
  for (const std::string op : {"sum", "mean", "prod", "max", "min", "nansum", "nanprod"})
    for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32, DType::kInt64})
      for (const Case& c : cases) {
        if (c.shape.Size() == 0 && (op == "max" || op == "min")) continue;
        bool integral = t == DType::kInt32 || t == DType::kInt64;
        // Products of many values stay finite only near 1; integers stay small.
        double lo = op.find("prod") != std::string::npos ? 0.9 : -1.0, hi = op.find("prod") != std::string::npos ? 1.1 : 1.0;
        if (integral) {
          lo = op.find("prod") != std::string::npos ? 1 : -50;
          hi = op.find("prod") != std::string::npos ? 2 : 50;
        }
        std::vector<double> v = RandomValues(c.shape.Size(), lo, hi, 7);
        if (integral)
          for (double& x : v) x = std::floor(x);
        NDArray x = MakeArray(c.shape, v, t);
        double rtol = Rtol(t) * (c.shape.Size() > 1000 ? 10 : 1);
        ExpectGpuMatchesCpu(op, {x}, c.params, rtol, integral ? 0 : 1e-6,
                            op + " " + DTypeName(t) + " " + c.shape.ToString());
      }
}

TEST(CudaOps, ReductionsPropagateNaN) {
  REQUIRE_GPU();
  double nan = std::nan("");
  NDArray x = MakeArray({2, 3}, {1, nan, 3, 4, 5, 6}, DType::kFloat32);
  for (const char* op : {"sum", "max", "min", "nansum"})
    ExpectGpuMatchesCpu(op, {x}, {{"axis", "1"}}, 1e-6, 0, op);
}

TEST(CudaOps, ReductionGradientsMatchTheCpu) {
  REQUIRE_GPU();
  // Zeros exercise prod's product-of-the-others path; repeated maxima, max's ties.
  std::vector<double> v = {0.5, 0, 2, 2, -1, 3, 0, 0, 1.5, 2, 2, -3};
  for (const char* op : {"sum", "mean", "prod", "nansum", "nanprod", "max", "min"})
    for (const KwArgs& params : {KwArgs{{"axis", "1"}}, KwArgs{{"axis", "0"}, {"keepdims", "True"}}, KwArgs{}}) {
      NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
      std::vector<std::vector<double>> grads;
      for (Context ctx : {Context::CPU(), Context::GPU(0)}) {
        NDArray x = MakeArray({3, 4}, v, DType::kFloat64).Copy(ctx);
        std::vector<NDArray> outs;
        imperative::Invoke(attrs, {x}, &outs, &ctx);
        NDArray head = MakeArray(outs[0].shape(), RandomValues(outs[0].Size(), -1, 1, 3), DType::kFloat64).Copy(ctx);
        std::vector<NDArray> g = imperative::Gradient(attrs, {x}, outs, {head});
        ASSERT_EQ(g.size(), 1u);
        EXPECT_EQ(g[0].ctx(), ctx);
        grads.push_back(ToVector(g[0]));
      }
      ExpectAllNear(grads[1], grads[0], 1e-12, 1e-12, std::string(op) + " gradient");
    }
}

TEST(CudaOps, DotAndBatchDotMatchTheCpu) {
  REQUIRE_GPU();
  struct Case {
    const char* op;
    Shape a, b;
    bool ta, tb;
  };
  std::vector<Case> cases = {
      {"dot", {3, 4}, {4, 5}, false, false},   {"dot", {4, 3}, {4, 5}, true, false},
      {"dot", {3, 4}, {5, 4}, false, true},    {"dot", {4, 3}, {5, 4}, true, true},
      {"dot", {2, 3, 4}, {4, 5}, false, false}, {"dot", {7}, {7}, false, false},
      {"dot", {64, 128}, {128, 96}, false, false}, {"dot", {3, 0}, {0, 5}, false, false},
      {"batch_dot", {2, 3, 4}, {2, 4, 5}, false, false}, {"batch_dot", {2, 4, 3}, {2, 4, 5}, true, false},
      {"batch_dot", {2, 3, 4}, {2, 5, 4}, false, true},  {"batch_dot", {3, 2, 4, 3}, {3, 2, 5, 4}, true, true},
  };
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16})
    for (const Case& c : cases) {
      NDArray a = MakeArray(c.a, RandomValues(c.a.Size(), -1, 1, 1), t);
      NDArray b = MakeArray(c.b, RandomValues(c.b.Size(), -1, 1, 2), t);
      KwArgs params = {{"transpose_a", c.ta ? "True" : "False"}, {"transpose_b", c.tb ? "True" : "False"}};
      double rtol = t == DType::kFloat16 ? 1e-2 : t == DType::kFloat32 ? 1e-4 : 1e-12;
      ExpectGpuMatchesCpu(c.op, {a, b}, params, rtol, rtol,
                          std::string(c.op) + " " + DTypeName(t) + " " + c.a.ToString() + " " + c.b.ToString());
    }
}

TEST(CudaOps, DotGradientMatchesTheCpu) {
  REQUIRE_GPU();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      KwArgs params = {{"transpose_a", ta ? "True" : "False"}, {"transpose_b", tb ? "True" : "False"}};
      NodeAttrs attrs = MakeAttrs(Op::Get("dot"), params);
      Shape sa = ta ? Shape{4, 3} : Shape{3, 4}, sb = tb ? Shape{5, 4} : Shape{4, 5};
      std::vector<std::vector<double>> results;
      for (Context ctx : {Context::CPU(), Context::GPU(0)}) {
        NDArray a = MakeArray(sa, RandomValues(sa.Size(), -1, 1, 1)).Copy(ctx);
        NDArray b = MakeArray(sb, RandomValues(sb.Size(), -1, 1, 2)).Copy(ctx);
        std::vector<NDArray> outs;
        imperative::Invoke(attrs, {a, b}, &outs, &ctx);
        NDArray head = MakeArray(outs[0].shape(), RandomValues(outs[0].Size(), -1, 1, 3)).Copy(ctx);
        std::vector<NDArray> g = imperative::Gradient(attrs, {a, b}, outs, {head});
        std::vector<double> flat = ToVector(g[0]);
        std::vector<double> gb = ToVector(g[1]);
        flat.insert(flat.end(), gb.begin(), gb.end());
        results.push_back(flat);
      }
      ExpectAllNear(results[1], results[0], 1e-12, 1e-12, "dot gradient");
    }
}

TEST(CudaOps, DotOnIntegersIsUnsupportedOnGpus) {
  REQUIRE_GPU();
  NDArray a = MakeArray({2, 2}, {1, 2, 3, 4}, DType::kInt32).Copy(Context::GPU(0));
  test::ExpectError(
      [&] {
        std::vector<NDArray> outs;
        Context gpu = Context::GPU(0);
        imperative::Invoke(MakeAttrs(Op::Get("dot"), {}), {a, a}, &outs, &gpu);
        outs[0].WaitToRead();
      },
      ErrorKind::kUnsupported, {"dot", "int32"});
}

// The executor's backward makes head gradients with ones_like, so training on a GPU needs
// the fills there; the parameterised ones take their context from the call.
TEST(CudaOps, FillsMatchTheCpu) {
  REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32, DType::kInt64}) {
    std::string dtype = DTypeName(t);
    NDArray x = MakeArray({3, 1001}, RandomValues(3003, -5, 5, 3), t);
    ExpectGpuMatchesCpu("ones_like", {x}, {}, 0, 0, "ones_like " + dtype);
    ExpectGpuMatchesCpu("zeros_like", {x}, {}, 0, 0, "zeros_like " + dtype);
    KwArgs shaped{{"shape", "(4, 257)"}, {"dtype", dtype}};
    ExpectGpuMatchesCpu("_ones", {}, shaped, 0, 0, "_ones " + dtype);
    ExpectGpuMatchesCpu("_zeros", {}, shaped, 0, 0, "_zeros " + dtype);
    shaped.emplace_back("value", "-7");
    std::vector<NDArray> full = RunOn(Context::GPU(0), "_full", {}, shaped);
    ASSERT_EQ(full.size(), 1u);
    EXPECT_EQ(full[0].ctx(), Context::GPU(0));
    ExpectAllNear(ToVector(full[0]), std::vector<double>(4 * 257, -7.0), 0, 0, "_full " + dtype);
  }
}

}  // namespace
}  // namespace weft

// The update operators as the graph and the engine see them: what they declare (states
// they write, no gradient, output 0 on the weight's memory) and in-place updates queued
// back to back on the engine, whose order only the declared writes guarantee.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/op/registry.h"
#include "op_test_util.h"

namespace weft {
namespace {

using test::MakeArray;
using test::ToVector;

struct Declared {
  std::string op;
  KwArgs params;
  std::vector<int> mutated;
};

TEST(OptimizerOps, DeclareWrittenStatesAndNoGradient) {
  const std::vector<Declared> cases = {
      {"sgd_update", {{"lr", "0.1"}}, {}},
      {"sgd_mom_update", {{"lr", "0.1"}}, {2}},
      {"mp_sgd_update", {{"lr", "0.1"}}, {2}},
      {"mp_sgd_mom_update", {{"lr", "0.1"}}, {2, 3}},
      {"nag_mom_update", {{"lr", "0.1"}}, {2}},
      {"mp_nag_mom_update", {{"lr", "0.1"}}, {2, 3}},
      {"adam_update", {{"lr", "0.1"}}, {2, 3}},
      {"_adamw_update", {{"lr", "0.1"}, {"eta", "1"}}, {2, 3}},
      {"adamw_update", {{"lr", "0.1"}, {"eta", "1"}}, {2, 3}},
      {"rmsprop_update", {{"lr", "0.1"}}, {2}},
      {"rmspropalex_update", {{"lr", "0.1"}}, {2, 3, 4}},
      {"adagrad_update", {{"lr", "0.1"}}, {2}},
      {"adadelta_update", {}, {2, 3}},
      {"ftrl_update", {{"lr", "0.1"}}, {2, 3}},
      {"ftml_update", {{"lr", "0.1"}, {"t", "1"}}, {2, 3, 4}},
      {"signsgd_update", {{"lr", "0.1"}}, {}},
      {"signum_update", {{"lr", "0.1"}}, {2}},
      {"lamb_update_phase1", {{"t", "1"}, {"wd", "0"}}, {2, 3}},
      {"lamb_update_phase2", {{"lr", "0.1"}}, {}},
      {"multi_sgd_update", {{"lrs", "(0.1,0.1)"}, {"wds", "(0,0)"}, {"num_weights", "2"}}, {}},
      {"multi_sgd_mom_update", {{"lrs", "(0.1,0.1)"}, {"wds", "(0,0)"}, {"num_weights", "2"}}, {2, 5}},
      {"multi_mp_sgd_update", {{"lrs", "(0.1,0.1)"}, {"wds", "(0,0)"}, {"num_weights", "2"}}, {2, 5}},
      {"multi_mp_sgd_mom_update", {{"lrs", "(0.1,0.1)"}, {"wds", "(0,0)"}, {"num_weights", "2"}}, {2, 3, 6, 7}},
  };
  const auto& mutate = Op::GetAttr<FMutateInputs>("FMutateInputs");
  const auto& grad = Op::GetAttr<FGradient>("FGradient");
  const auto& compute = Op::GetAttr<FCompute>("FCompute<cpu>");
  const auto& pattern = Op::GetAttr<TOpPattern>("TOpPattern");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    NodeAttrs attrs = MakeAttrs(Op::Get(c.op), c.params);
    EXPECT_TRUE(compute.Contains(attrs.op));
    EXPECT_FALSE(grad.Contains(attrs.op));
    EXPECT_EQ(pattern.Get(attrs.op, OpPattern::kElemwise), OpPattern::kOpaque);
    std::vector<int> got = mutate.Contains(attrs.op) ? mutate[attrs.op](attrs) : std::vector<int>{};
    EXPECT_EQ(got, c.mutated);
  }
}

TEST(OptimizerOps, MultiTensorInplacePairsEveryWeightWithItsOutput) {
  NodeAttrs attrs = MakeAttrs(Op::Get("multi_mp_sgd_mom_update"),
                                          {{"lrs", "(1,1,1)"}, {"wds", "(0,0,0)"}, {"num_weights", "3"}});
  EXPECT_EQ(attrs.op->NumInputs(attrs), 12);
  EXPECT_EQ(attrs.op->NumOutputs(attrs), 3);
  auto pairs = Op::GetAttr<FInplaceOption>("FInplaceOption")[attrs.op](attrs);
  std::vector<std::pair<int, int>> expected = {{0, 0}, {4, 1}, {8, 2}};
  EXPECT_EQ(pairs, expected);
}

// Many asynchronous in-place steps on an array too large to run inline: each step reads
// what the previous one wrote to the weight (its output) and to the momentum (an input it
// declares written), so a missing dependency shows as a wrong value.
TEST(OptimizerOps, QueuedInplaceStepsSeeEachOthersWrites) {
  const int64_t n = 1 << 20;
  NDArray w = MakeArray(Shape{n}, std::vector<double>(n, 1.0), DType::kFloat32);
  NDArray g = MakeArray(Shape{n}, std::vector<double>(n, 0.5), DType::kFloat32);
  NDArray mom = MakeArray(Shape{n}, std::vector<double>(n, 0.0), DType::kFloat32);
  NodeAttrs attrs = MakeAttrs(Op::Get("sgd_mom_update"), {{"lr", "0.1"}, {"momentum", "0.5"}});
  double w_ref = 1.0, m_ref = 0.0;
  Context cpu = Context::CPU();
  for (int step = 0; step < 8; ++step) {
    std::vector<NDArray> outs = {w};
    imperative::Invoke(attrs, {w, g, mom}, &outs, &cpu, nullptr, false);
    m_ref = 0.5 * m_ref - 0.1 * 0.5;
    w_ref += m_ref;
  }
  std::vector<double> wv = ToVector(w), mv = ToVector(mom);
  for (int64_t i : {int64_t{0}, n / 3, n - 1}) {
    EXPECT_NEAR(wv[i], w_ref, 1e-5) << "element " << i;
    EXPECT_NEAR(mv[i], m_ref, 1e-6) << "element " << i;
  }
}

TEST(OptimizerOps, BadParametersNameOperatorAndParameter) {
  NDArray w = MakeArray(Shape{2}, {1.0, 2.0}, DType::kFloat32);
  try {
    test::Run("multi_sgd_update", {w, w}, {{"lrs", "(0.1, 0.2)"}, {"wds", "(0)"}, {"num_weights", "1"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'multi_sgd_update': parameter 'lrs' must hold one value per weight"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(test::Run("ftrl_update", {w, w, w, w}, {}), Error);  // lr is required
}

}  // namespace
}  // namespace weft

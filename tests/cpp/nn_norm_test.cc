// Write requests of the normalisation, activation, softmax and loss operators: with kAddTo
// every output must hold what was there plus what kWriteTo writes, and kNullOp outputs must
// be left alone. In float32, kWriteTo takes the oneDNN paths (softmax, eltwise) and kAddTo
// the loops, so the comparison also checks the two against each other.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op_test_util.h"

namespace weft {
namespace {

using test::ExpectAllNear;
using test::RandomArray;
using test::ToVector;

struct Case {
  std::string op;
  std::vector<Shape> inputs;
  KwArgs params;
  bool is_train;
};

// Runs `c` with kWriteTo, then again into outputs pre-filled with 1.5 under kAddTo, and
// with the first output under kNullOp (it must keep its 1.5s).
void CheckRequests(const Case& c, DType dtype) {
  std::vector<NDArray> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    ins.push_back(RandomArray(c.inputs[i], dtype, 0.1, 1.0, static_cast<uint32_t>(7 + i)));
  NodeAttrs attrs = MakeAttrs(Op::Get(c.op), c.params);
  Context cpu = Context::CPU();
  std::vector<NDArray> written;
  imperative::Invoke(attrs, ins, &written, &cpu, nullptr, c.is_train);
  const size_t n = written.size();
  std::vector<NDArray> added, skipped;
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> fill(written[k].Size(), 1.5);
    added.push_back(test::MakeArray(written[k].shape(), fill, written[k].dtype()));
    skipped.push_back(test::MakeArray(written[k].shape(), fill, written[k].dtype()));
  }
  std::vector<OpReq> add(n, OpReq::kAddTo), null_first(n, OpReq::kWriteTo);
  null_first[0] = OpReq::kNullOp;
  imperative::Invoke(attrs, ins, &added, &cpu, &add, c.is_train);
  imperative::Invoke(attrs, ins, &skipped, &cpu, &null_first, c.is_train);
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> expect = ToVector(written[k]);
    for (double& v : expect) v += 1.5;
    SCOPED_TRACE(c.op + " output " + std::to_string(k) + " dtype " + DTypeName(dtype));
    ExpectAllNear(ToVector(added[k]), expect, 1e-5, 1e-5);
  }
  ExpectAllNear(ToVector(skipped[0]), std::vector<double>(written[0].Size(), 1.5), 0, 0);
}

TEST(NNNormRequests, AddToAndNullOpOnEveryOutput) {
  const Shape d{3, 4, 5};
  const std::vector<Case> cases = {
      // Moving statistics are left as they are by predict-mode BatchNorm, so repeated calls agree.
      {"BatchNorm", {d, {4}, {4}, {4}, {4}}, {{"fix_gamma", "False"}, {"output_mean_var", "True"}}, false},
      {"_backward_BatchNorm", {d, d, {4}, {4}, {4}}, {{"fix_gamma", "False"}}, true},
      {"LayerNorm", {d, {5}, {5}}, {{"output_mean_var", "True"}}, false},
      {"_backward_LayerNorm", {d, d, {5}, Shape{3, 4, 1}, Shape{3, 4, 1}}, {}, false},
      {"GroupNorm", {d, {2}, {2}}, {{"num_groups", "2"}, {"output_mean_var", "True"}}, false},
      {"_backward_GroupNorm", {d, d, {2}, Shape{3, 2}, Shape{3, 2}}, {{"num_groups", "2"}}, false},
      {"InstanceNorm", {d, {4}, {4}}, {}, false},
      {"LRN", {d}, {{"nsize", "3"}}, false},
      {"_backward_LRN", {d, d}, {{"nsize", "3"}}, false},
      {"L2Normalization", {d}, {{"mode", "channel"}}, false},
      {"_backward_L2Normalization", {d, d, d}, {{"mode", "channel"}}, false},
      {"Activation", {d}, {{"act_type", "softsign"}}, false},
      {"_backward_Activation", {d, d}, {{"act_type", "softrelu"}}, false},
      {"LeakyReLU", {d, {4}}, {{"act_type", "prelu"}}, false},
      {"_backward_LeakyReLU", {d, d, {4}}, {{"act_type", "prelu"}}, false},
      {"LeakyReLU", {d}, {{"act_type", "gelu"}}, false},
      {"_backward_LeakyReLU", {d, d}, {{"act_type", "elu"}, {"slope", "0.5"}}, false},
      {"_backward_Activation", {d, d}, {{"act_type", "tanh"}}, false},
      {"softmax", {d}, {}, false},
      {"log_softmax", {d}, {{"axis", "1"}}, false},
      {"_backward_softmin", {d, d}, {{"temperature", "2"}}, false},
      {"SoftmaxActivation", {d}, {{"mode", "channel"}}, false},
      {"SoftmaxOutput", {Shape{3, 4}, Shape{3}}, {}, false},
      {"_backward_SoftmaxOutput", {Shape{3, 4}, Shape{3, 4}, Shape{3}}, {{"normalization", "batch"}}, false},
      {"_backward_LinearRegressionOutput", {d, d}, {}, false},
      {"softmax_cross_entropy", {Shape{3, 4}, Shape{3}}, {}, false},
      {"_backward_MakeLoss", {d}, {{"normalization", "valid"}}, false},
  };
  for (const Case& c : cases) {
    CheckRequests(c, DType::kFloat32);
    CheckRequests(c, DType::kFloat64);
  }
}

}  // namespace
}  // namespace weft

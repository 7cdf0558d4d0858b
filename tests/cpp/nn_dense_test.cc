// Write requests of the dense and layout operators (FullyConnected, Dropout, Embedding,
// SwapAxis, Pad, UpSampling, Sequence*), forward and backward: kAddTo adds exactly what
// kWriteTo writes, on every output, and kNullOp leaves outputs untouched. The front ends
// cannot ask for these requests, so they are tested here.
#include <gtest/gtest.h>

#include "op_test_util.h"

namespace weft {
namespace test {
namespace {

// Runs `op` once with kWriteTo, then into outputs holding random values with kAddTo and
// checks out = before + written; then with kNullOp and checks nothing changed.
void CheckRequests(const std::string& op, const std::vector<NDArray>& inputs, const KwArgs& params,
                   double rtol = 1e-12) {
  SCOPED_TRACE(op);
  std::vector<NDArray> written = Run(op, inputs, params);
  std::vector<NDArray> outs;
  std::vector<std::vector<double>> before;
  for (size_t i = 0; i < written.size(); ++i) {
    outs.push_back(RandomArray(written[i].shape(), written[i].dtype(), -1, 1, 100 + static_cast<uint32_t>(i)));
    before.push_back(ToVector(outs.back()));
  }
  Context cpu = Context::CPU();
  NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
  std::vector<OpReq> add(written.size(), OpReq::kAddTo);
  imperative::Invoke(attrs, inputs, &outs, &cpu, &add);
  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<double> w = ToVector(written[i]), expected(w.size());
    for (size_t j = 0; j < w.size(); ++j) expected[j] = before[i][j] + w[j];
    ExpectAllNear(ToVector(outs[i]), expected, rtol, 1e-12, op + " kAddTo output " + std::to_string(i));
  }
  std::vector<std::vector<double>> after_add;
  for (const auto& o : outs) after_add.push_back(ToVector(o));
  std::vector<OpReq> null(written.size(), OpReq::kNullOp);
  imperative::Invoke(attrs, inputs, &outs, &cpu, &null);
  for (size_t i = 0; i < outs.size(); ++i)
    ExpectAllNear(ToVector(outs[i]), after_add[i], 0, 0, op + " kNullOp output " + std::to_string(i));
}

TEST(NnDense, FullyConnectedRequests) {
  for (DType t : {DType::kFloat64, DType::kFloat32}) {
    NDArray x = RandomArray({3, 2, 4}, t, -1, 1, 1), w = RandomArray({5, 8}, t, -1, 1, 2);
    NDArray b = RandomArray({5}, t, -1, 1, 3), g = RandomArray({3, 5}, t, -1, 1, 4);
    double tol = t == DType::kFloat32 ? 1e-5 : 1e-12;
    KwArgs p = {{"num_hidden", "5"}};
    CheckRequests("FullyConnected", {x, w, b}, p, tol);
    CheckRequests("_backward_FullyConnected", {g, x, w, b}, p, tol);
    KwArgs q = {{"num_hidden", "5"}, {"no_bias", "True"}, {"flatten", "False"}};
    NDArray w4 = RandomArray({5, 4}, t, -1, 1, 5), g3 = RandomArray({3, 2, 5}, t, -1, 1, 6);
    CheckRequests("FullyConnected", {x, w4}, q, tol);
    CheckRequests("_backward_FullyConnected", {g3, x, w4}, q, tol);
    // A skinny product (run on one thread) and one large enough to be split, with the bias
    // put into the output before the product adds to it. Positive values keep the long sums
    // away from 0, where float32's rounding would exceed a relative tolerance.
    for (int64_t in : {512, 4096}) {
      NDArray xs = RandomArray({64, in}, t, 0, 1, 7), ws = RandomArray({20, in}, t, 0, 1, 8);
      NDArray bs = RandomArray({20}, t, 0, 1, 9), gs = RandomArray({64, 20}, t, 0, 1, 10);
      KwArgs r = {{"num_hidden", "20"}};
      CheckRequests("FullyConnected", {xs, ws, bs}, r, tol * 10);
      CheckRequests("_backward_FullyConnected", {gs, xs, ws, bs}, r, tol * 10);
    }
  }
}

TEST(NnDense, DropoutRequests) {
  // Prediction mode: the output is the data and the mask ones, on both outputs.
  NDArray x = RandomArray({4, 6}, DType::kFloat64, -1, 1, 7);
  CheckRequests("Dropout", {x}, {{"p", "0.5"}});
  NDArray mask = MakeArray({4, 1}, {2, 0, 2, 2});
  CheckRequests("_backward_Dropout", {x, mask}, {{"p", "0.5"}, {"axes", "(1,)"}});
}

TEST(NnDense, DropoutMaskSharedAlongAxes) {
  NDArray x = RandomArray({3, 4, 5}, DType::kFloat32, 1, 2, 8);
  std::vector<NDArray> outs = test::Run("Dropout", {x}, {{"p", "0.5"}, {"axes", "(0,2)"}}, /*is_train=*/true);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].shape(), Shape({1, 4, 1}));
  std::vector<double> xv = ToVector(x), y = ToVector(outs[0]), m = ToVector(outs[1]);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k) {
        size_t e = static_cast<size_t>((i * 4 + j) * 5 + k);
        EXPECT_TRUE(m[j] == 0 || m[j] == 2) << m[j];
        EXPECT_NEAR(y[e], xv[e] * m[j], 1e-6);
      }
}

TEST(NnDense, EmbeddingRequests) {
  NDArray idx = MakeArray({2, 3}, {0, 3, 1, 1, 9, -2}, DType::kInt32);
  NDArray w = RandomArray({4, 5}, DType::kFloat64, -1, 1, 9), g = RandomArray({2, 3, 5}, DType::kFloat64, -1, 1, 10);
  KwArgs p = {{"input_dim", "4"}, {"output_dim", "5"}, {"dtype", "float64"}};
  CheckRequests("Embedding", {idx, w}, p);
  CheckRequests("_backward_Embedding", {g, idx}, p);
}

TEST(NnDense, LayoutRequests) {
  NDArray x4 = RandomArray({2, 3, 4, 5}, DType::kFloat64, -1, 1, 11);
  CheckRequests("SwapAxis", {x4}, {{"dim1", "1"}, {"dim2", "3"}});
  for (const char* mode : {"constant", "edge", "reflect"}) {
    KwArgs p = {{"mode", mode}, {"pad_width", "(0,0,0,0,1,2,3,1)"}, {"constant_value", "0.5"}};
    CheckRequests("Pad", {x4}, p);
    CheckRequests("_backward_Pad", {RandomArray({2, 3, 7, 9}, DType::kFloat64, -1, 1, 12), x4}, p);
  }
  KwArgs near = {{"scale", "2"}, {"sample_type", "nearest"}, {"num_args", "2"}};
  NDArray a = RandomArray({1, 2, 2, 3}, DType::kFloat64, -1, 1, 13), b = RandomArray({1, 1, 4, 6}, DType::kFloat64);
  CheckRequests("UpSampling", {a, b}, near);
  CheckRequests("_backward_UpSampling", {RandomArray({1, 3, 4, 6}, DType::kFloat64, -1, 1, 14), a, b}, near);
  KwArgs bil = {{"scale", "2"}, {"sample_type", "bilinear"}, {"num_args", "2"}};
  NDArray w = RandomArray({2, 1, 4, 4}, DType::kFloat64, -1, 1, 15);
  CheckRequests("UpSampling", {a, w}, bil);
  CheckRequests("_backward_UpSampling", {RandomArray({1, 2, 4, 6}, DType::kFloat64, -1, 1, 16), a, w}, bil);
}

TEST(NnDense, SequenceRequests) {
  NDArray x = RandomArray({4, 3, 2}, DType::kFloat64, -1, 1, 17);
  NDArray len = MakeArray({3}, {2, 4, 1}, DType::kFloat32);
  KwArgs p = {{"use_sequence_length", "True"}};
  CheckRequests("SequenceMask", {x, len}, {{"use_sequence_length", "True"}, {"value", "-1"}});
  CheckRequests("_backward_SequenceMask", {x, len}, p);
  CheckRequests("SequenceLast", {x, len}, p);
  CheckRequests("_backward_SequenceLast", {RandomArray({3, 2}, DType::kFloat64, -1, 1, 18), x, len}, p);
  CheckRequests("SequenceReverse", {x, len}, p);
  NDArray xb = RandomArray({3, 4, 2}, DType::kFloat64, -1, 1, 19);
  CheckRequests("SequenceLast", {xb, len}, {{"use_sequence_length", "True"}, {"axis", "1"}});
}

}  // namespace
}  // namespace test
}  // namespace weft

// Convolution, Deconvolution and Pooling: write requests on every output of the forward
// and backward operators (kAddTo adds to what is there, kNullOp leaves it), in float32
// (oneDNN) and float64 (plain loops). Values are checked against the kWriteTo result.
#include <string>
#include <vector>

#include "tests/cpp/op_test_util.h"

namespace weft {
namespace test {
namespace {

struct Case {
  std::string op;
  std::vector<Shape> inputs;
  KwArgs params;
};

void CheckRequests(const Case& c, DType dt) {
  std::string what = c.op + " " + DTypeName(dt);
  std::vector<NDArray> in;
  uint32_t seed = 1;
  for (const Shape& s : c.inputs) in.push_back(RandomArray(s, dt, -1, 1, seed++));
  std::vector<NDArray> written = Run(c.op, in, c.params);
  const size_t n = written.size();
  Context cpu = Context::CPU();
  std::vector<NDArray> outs;
  std::vector<std::vector<double>> before;
  for (size_t i = 0; i < n; ++i) {
    before.push_back(RandomValues(written[i].Size(), -2, 2, 100 + static_cast<uint32_t>(i)));
    outs.push_back(MakeArray(written[i].shape(), before[i], dt));
  }
  // The last output of a multi-output operator is skipped; the others accumulate.
  std::vector<OpReq> reqs(n, OpReq::kAddTo);
  if (n > 1) reqs.back() = OpReq::kNullOp;
  imperative::Invoke(MakeAttrs(Op::Get(c.op), c.params), in, &outs, &cpu, &reqs);
  double tol = dt == DType::kFloat32 ? 1e-4 : 1e-10;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> expect = before[i];
    if (reqs[i] == OpReq::kAddTo) {
      std::vector<double> w = ToVector(written[i]);
      for (size_t j = 0; j < expect.size(); ++j) expect[j] += w[j];
    }
    ExpectAllNear(ToVector(outs[i]), expect, tol, tol, what + " output " + std::to_string(i));
  }
}

TEST(NnConv, WriteRequestsAreHonoured) {
  KwArgs conv{{"kernel", "(3,3)"}, {"num_filter", "4"}, {"num_group", "2"}, {"stride", "(2,1)"}, {"pad", "(1,1)"}};
  KwArgs deconv{{"kernel", "(3,2)"}, {"num_filter", "4"}, {"stride", "(2,1)"}, {"pad", "(1,0)"}, {"adj", "(1,0)"},
                {"no_bias", "False"}};
  KwArgs maxpool{{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}, {"pool_type", "max"}};
  KwArgs avgpool{{"kernel", "(2,3)"}, {"stride", "(2,1)"}, {"pool_type", "avg"}, {"count_include_pad", "False"}};
  KwArgs lppool{{"kernel", "(2,2)"}, {"pool_type", "lp"}, {"p_value", "2"}};
  std::vector<Case> cases = {
      {"Convolution", {{2, 4, 7, 6}, {4, 2, 3, 3}, {4}}, conv},
      {"_backward_Convolution", {{2, 4, 4, 6}, {2, 4, 7, 6}, {4, 2, 3, 3}}, conv},
      {"Deconvolution", {{2, 3, 4, 5}, {3, 4, 3, 2}, {4}}, deconv},
      {"_backward_Deconvolution", {{2, 4, 8, 6}, {2, 3, 4, 5}, {3, 4, 3, 2}}, deconv},
      {"Pooling", {{2, 3, 7, 8}}, maxpool},
      {"_backward_Pooling", {{2, 3, 4, 4}, {2, 3, 7, 8}, {2, 3, 4, 4}}, maxpool},
      {"Pooling", {{2, 3, 7, 8}}, avgpool},
      {"_backward_Pooling", {{2, 3, 3, 6}, {2, 3, 7, 8}, {2, 3, 3, 6}}, avgpool},
      {"Pooling", {{1, 2, 5, 4}}, lppool},
  };
  for (const Case& c : cases)
    for (DType dt : {DType::kFloat32, DType::kFloat64}) CheckRequests(c, dt);
}

// A second call with the same geometry gives the same values (the cached oneDNN plan is
// reused with new arrays, not the first call's memory).
TEST(NnConv, RepeatedCallsUseTheirOwnArrays) {
  KwArgs conv{{"kernel", "(3,3)"}, {"num_filter", "8"}, {"pad", "(1,1)"}};
  NDArray w = RandomArray({8, 16, 3, 3}, DType::kFloat32, -1, 1, 5);
  NDArray b = RandomArray({8}, DType::kFloat32, -1, 1, 6);
  NDArray x1 = RandomArray({2, 16, 9, 9}, DType::kFloat32, -1, 1, 7);
  NDArray x2 = RandomArray({2, 16, 9, 9}, DType::kFloat32, -1, 1, 8);
  std::vector<double> y1 = ToVector(Run1("Convolution", {x1, w, b}, conv));
  std::vector<double> y2 = ToVector(Run1("Convolution", {x2, w, b}, conv));
  NDArray x1d = MakeArray({2, 16, 9, 9}, ToVector(x1), DType::kFloat64);
  NDArray x2d = MakeArray({2, 16, 9, 9}, ToVector(x2), DType::kFloat64);
  NDArray wd = MakeArray({8, 16, 3, 3}, ToVector(w), DType::kFloat64);
  NDArray bd = MakeArray({8}, ToVector(b), DType::kFloat64);
  ExpectAllNear(y1, ToVector(Run1("Convolution", {x1d, wd, bd}, conv)), 1e-4, 1e-4, "first call");
  ExpectAllNear(y2, ToVector(Run1("Convolution", {x2d, wd, bd}, conv)), 1e-4, 1e-4, "second call");
}

}  // namespace
}  // namespace test
}  // namespace weft

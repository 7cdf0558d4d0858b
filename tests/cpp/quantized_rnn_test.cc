// _contrib_quantized_rnn's kept int8 weights: called through the dispatcher (which hands it
// the parameters array's version) it quantizes and lays out the weights once per state of
// the array; called directly (no versions) it makes them for the call alone; all three give
// the same outputs.
#include <gtest/gtest.h>

#include <vector>

#include "core/op/quantization/quantized_product.h"
#include "core/op/registry.h"
#include "core/resource/resource.h"
#include "op_test_util.h"

namespace weft {
namespace {

using test::MakeArray;
using test::RandomValues;
using test::ToVector;

constexpr int64_t kT = 4, kN = 3, kI = 5, kH = 4, kL = 2;

int64_t ParamSize() {
  int64_t size = 0;
  for (int64_t l = 0; l < kL; ++l) size += 4 * kH * (l == 0 ? kI : kH) + 4 * kH * kH + 8 * kH;
  return size;
}

struct Inputs {
  std::vector<NDArray> arrays;  // data, parameters, state, state_cell, scale, shift
  KwArgs params{{"state_size", "4"}, {"num_layers", "2"}, {"mode", "lstm"}, {"state_outputs", "True"}};
};

Inputs MakeInputs() {
  Inputs in;
  std::vector<double> data = RandomValues(kT * kN * kI, 0, 255, 1);
  for (auto& v : data) v = static_cast<double>(static_cast<int>(v));
  in.arrays.push_back(MakeArray(Shape({kT, kN, kI}), data, DType::kUint8));
  in.arrays.push_back(MakeArray(Shape({ParamSize()}), RandomValues(ParamSize(), -0.5, 0.5, 2), DType::kFloat32));
  in.arrays.push_back(MakeArray(Shape({kL, kN, kH}), RandomValues(kL * kN * kH, -0.5, 0.5, 3), DType::kFloat32));
  in.arrays.push_back(MakeArray(Shape({kL, kN, kH}), RandomValues(kL * kN * kH, -0.5, 0.5, 4), DType::kFloat32));
  in.arrays.push_back(MakeArray(Shape({1}), {127.5}, DType::kFloat32));  // [-1, 1] onto [0, 255]
  in.arrays.push_back(MakeArray(Shape({1}), {127.5}, DType::kFloat32));
  return in;
}

TEST(QuantizedRnn, KeepsWeightsPerStateOfTheParametersArray) {
  Inputs in = MakeInputs();
  const size_t start = op::quant::Int8WeightReorders();
  auto first = test::Run("_contrib_quantized_rnn", in.arrays, in.params);
  ASSERT_EQ(first.size(), 3u);
  const std::vector<double> y = ToVector(first[0]);
  const size_t after_first = op::quant::Int8WeightReorders();
  EXPECT_EQ(ToVector(test::Run("_contrib_quantized_rnn", in.arrays, in.params)[0]), y);
#if defined(WEFT_USE_ONEDNN)
  // Two layers' i2h and h2h weights, laid out by the first call only.
  EXPECT_EQ(after_first, start + 4);
  EXPECT_EQ(op::quant::Int8WeightReorders(), after_first);
#endif

  // Called directly, without the dispatcher's versions: the same outputs.
  NodeAttrs attrs = MakeAttrs(Op::Get("_contrib_quantized_rnn"), in.params);
  std::vector<NDArray> outs;
  for (const auto& o : first) outs.emplace_back(o.shape(), Context::CPU(), o.dtype());
  std::vector<TBlob> ins_b, outs_b;
  for (const auto& a : in.arrays) {
    a.WaitToRead();
    ins_b.push_back(a.data());
  }
  for (const auto& o : outs) outs_b.push_back(o.data());
  OpContext ctx;
  ctx.requested.push_back(ResourceManager::Get()->Request(Context::CPU(), ResourceRequest{ResourceType::kTempSpace}));
  Op::GetAttr<FCompute>("FCompute<cpu>")[attrs.op](attrs, ctx, ins_b, std::vector<OpReq>(3, OpReq::kWriteTo),
                                                  outs_b);
  EXPECT_EQ(ToVector(outs[0]), y);
  EXPECT_EQ(ToVector(outs[1]), ToVector(first[1]));
  EXPECT_EQ(ToVector(outs[2]), ToVector(first[2]));

  // Written: new weights, laid out again, and a new result.
  CopyFromTo(MakeArray(Shape({ParamSize()}), RandomValues(ParamSize(), -0.5, 0.5, 9), DType::kFloat32),
             in.arrays[1]);
  const size_t before_write = op::quant::Int8WeightReorders();
  EXPECT_NE(ToVector(test::Run("_contrib_quantized_rnn", in.arrays, in.params)[0]), y);
#if defined(WEFT_USE_ONEDNN)
  EXPECT_EQ(op::quant::Int8WeightReorders(), before_write + 4);
#endif
}

}  // namespace
}  // namespace weft

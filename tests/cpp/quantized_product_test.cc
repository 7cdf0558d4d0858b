// The two paths of the int8 products (quantized_product.h) agree: oneDNN's primitives and
// the reference loops, which run where oneDNN is missing or refuses a geometry and which
// the Python tests (always on oneDNN here) do not reach. int32 outputs must match exactly,
// requantized 8-bit ones within one unit (oneDNN rounds in float).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/op/quantization/quantized_product.h"

namespace weft {
namespace op {
namespace quant {
namespace {

ConvGeom Geom(int64_t n, int64_t c, int64_t f, int64_t g, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p,
              int64_t d) {
  ConvGeom geom;
  geom.nd = 2;
  geom.n = n;
  geom.c = c;
  geom.f = f;
  geom.g = g;
  geom.in[1] = h;
  geom.in[2] = w;
  for (int i = 1; i < 3; ++i) {
    geom.k[i] = k;
    geom.s[i] = s;
    geom.pl[i] = p;
    geom.d[i] = d;
    geom.out[i] = (geom.in[i] + 2 * p - d * (k - 1) - 1) / s + 1;
  }
  return geom;
}

template <typename T>
std::vector<T> Random(size_t n, int lo, int hi, std::mt19937* rng) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(*rng));
  return v;
}

// Runs both paths into outputs of e.out's type and compares them.
void Compare(const ConvGeom* g, int64_t m, int64_t k, int64_t n, DType src, const Epilogue& e, bool bias,
             bool channels_last = false) {
  std::mt19937 rng(7);
  const size_t xs = g ? g->n * g->c * g->InSize() : m * k;
  const size_t ws = g ? g->f * (g->c / g->g) * g->KSize() : n * k;
  const size_t ys = g ? g->n * g->f * g->OutSize() : m * n;
  const size_t bs = g ? g->f : n;
  auto x = src == DType::kUint8 ? Random<uint8_t>(xs, 0, 255, &rng) : std::vector<uint8_t>();
  auto xi = src == DType::kInt8 ? Random<int8_t>(xs, -127, 127, &rng) : std::vector<int8_t>();
  const void* xp = src == DType::kUint8 ? static_cast<const void*>(x.data()) : xi.data();
  auto w = Random<int8_t>(ws, -127, 127, &rng);
  auto b = Random<int32_t>(bs, -50000, 50000, &rng);
  auto sum = e.sum_type == DType::kUint8 ? Random<uint8_t>(ys, 0, 255, &rng)
                                          : [&] {
                                              auto s = Random<int8_t>(ys, -127, 127, &rng);
                                              return std::vector<uint8_t>(s.begin(), s.end());
                                            }();
  const size_t width = WideOutput(e.out) ? 4 : 1;
  std::vector<char> dnnl_out(ys * width), ref_out(ys * width), temp;
  auto plan = g ? Int8ConvPlan(*g, src, bias, e, channels_last) : Int8FcPlan(m, k, n, src, bias, e);
#if defined(WEFT_USE_ONEDNN)
  ASSERT_TRUE(plan != nullptr) << "oneDNN refused the geometry";
#endif
  if (!plan) GTEST_SKIP() << "built without oneDNN";
  temp.resize(Int8TempBytes(*plan));
  const int32_t* bp = bias ? b.data() : nullptr;
  const void* sp = e.sum ? sum.data() : nullptr;
  RunInt8(*plan, xp, w.data(), bp, sp, dnnl_out.data(), temp.data());
  if (g) ReferenceConv(*g, src, xp, w.data(), bp, e, sp, ref_out.data(), channels_last);
  else ReferenceFc(m, k, n, src, xp, w.data(), bp, e, sp, ref_out.data());
  int64_t worst = 0;
  for (size_t i = 0; i < ys; ++i) {
    int64_t a, r;
    if (e.out == DType::kFloat32) {
      // Real values: within a millionth of the output's scale.
      const float fa = reinterpret_cast<float*>(dnnl_out.data())[i], fr = reinterpret_cast<float*>(ref_out.data())[i];
      EXPECT_NEAR(fa, fr, 1e-5 * (std::fabs(fr) + 1.0f)) << "element " << i;
      continue;
    }
    if (e.out == DType::kInt32) {
      a = reinterpret_cast<int32_t*>(dnnl_out.data())[i];
      r = reinterpret_cast<int32_t*>(ref_out.data())[i];
    } else if (e.out == DType::kUint8) {
      a = reinterpret_cast<uint8_t*>(dnnl_out.data())[i];
      r = reinterpret_cast<uint8_t*>(ref_out.data())[i];
    } else {
      a = reinterpret_cast<int8_t*>(dnnl_out.data())[i];
      r = reinterpret_cast<int8_t*>(ref_out.data())[i];
    }
    worst = std::max<int64_t>(worst, std::llabs(a - r));
  }
  // An int32 result without sum (exact integers) must match exactly; a scaled one within one unit.
  EXPECT_LE(worst, e.out == DType::kInt32 && !e.sum && e.scales.empty() ? 0 : 1);
}

TEST(QuantizedProduct, ConvInt32MatchesReference) {
  for (DType src : {DType::kInt8, DType::kUint8}) {
    Epilogue e;
    ConvGeom a = Geom(2, 16, 32, 1, 9, 7, 3, 1, 1, 1);
    ConvGeom b = Geom(1, 8, 16, 2, 10, 10, 3, 2, 0, 1);
    ConvGeom c = Geom(1, 8, 8, 1, 11, 11, 3, 1, 2, 2);
    Compare(&a, 0, 0, 0, src, e, true);
    Compare(&b, 0, 0, 0, src, e, false);
    Compare(&c, 0, 0, 0, src, e, true);
  }
}

TEST(QuantizedProduct, ConvRequantizedWithSumAndReluMatchesReference) {
  ConvGeom g = Geom(2, 16, 16, 1, 8, 8, 3, 1, 1, 1);
  for (DType out : {DType::kInt8, DType::kUint8, DType::kInt32, DType::kFloat32}) {
    for (DType sum : {DType::kInt8, DType::kUint8}) {
      Epilogue e;
      e.out = out;
      e.scale = out == DType::kInt32 ? 1.0f : 3.1e-4f;
      e.relu = out != DType::kInt8;
      e.sum = true;
      e.sum_type = sum;
      e.sum_scale = out == DType::kInt32 ? 1234.5f : 0.37f;
      Compare(&g, 0, 0, 0, DType::kUint8, e, true);
    }
  }
}

TEST(QuantizedProduct, InnerProductMatchesReference) {
  for (DType src : {DType::kInt8, DType::kUint8}) {
    Epilogue e;
    Compare(nullptr, 5, 300, 17, src, e, true);
    e.out = DType::kInt8;
    e.scale = 2e-4f;
    Compare(nullptr, 5, 300, 17, src, e, false);
    e.out = DType::kUint8;
    e.relu = true;
    Compare(nullptr, 3, 64, 9, src, e, true);
  }
}

TEST(QuantizedProduct, ChannelWiseScalesMatchReference) {
  ConvGeom plain = Geom(2, 16, 24, 1, 8, 8, 3, 1, 1, 1);
  ConvGeom grouped = Geom(1, 16, 24, 2, 7, 7, 3, 2, 1, 1);
  for (DType out : {DType::kInt8, DType::kUint8, DType::kInt32, DType::kFloat32}) {
    Epilogue e;
    e.out = out;
    e.relu = out == DType::kUint8;
    // One scale per output channel, over two orders of magnitude, one of them 0.
    for (int c = 0; c < 24; ++c) e.scales.push_back(c == 3 ? 0.0f : (out == DType::kInt32 ? 1.0f : 1e-4f) * std::pow(10.0f, -(c % 5) / 2.0f));
    Compare(&plain, 0, 0, 0, DType::kUint8, e, true);
    Compare(&grouped, 0, 0, 0, DType::kInt8, e, false);
    Compare(nullptr, 6, 100, 24, DType::kUint8, e, true);
  }
}

// Channels-last data, sum and output and (f, kh, kw, c/g) weights: both paths read the
// same buffers that way.
TEST(QuantizedProduct, ChannelsLastMatchesReference) {
  ConvGeom a = Geom(2, 16, 32, 1, 9, 7, 3, 1, 1, 1);
  ConvGeom b = Geom(1, 16, 16, 2, 10, 10, 3, 2, 0, 1);
  Epilogue e;
  Compare(&a, 0, 0, 0, DType::kUint8, e, true, true);
  Compare(&b, 0, 0, 0, DType::kInt8, e, false, true);
  e.out = DType::kUint8;
  e.scale = 3.1e-4f;
  e.relu = true;
  e.sum = true;
  e.sum_scale = 0.37f;
  Compare(&a, 0, 0, 0, DType::kUint8, e, true, true);
  for (int c = 0; c < 32; ++c) e.scales.push_back(1e-4f * (1 + c % 7));
  Compare(&a, 0, 0, 0, DType::kInt8, e, true, true);
}

// The weights in oneDNN's layout are kept for an unchanged weight array and prepared again
// when the array was written (its write count moved) or is another array.
TEST(QuantizedProduct, KeptWeightsFollowTheArraysVersion) {
#if !defined(WEFT_USE_ONEDNN)
  GTEST_SKIP() << "built without oneDNN";
#endif
  ConvGeom g = Geom(1, 16, 32, 1, 6, 6, 3, 1, 1, 1);
  Epilogue e;
  auto plan = Int8ConvPlan(g, DType::kUint8, false, e);
  ASSERT_TRUE(plan != nullptr);
  std::mt19937 rng(3);
  auto x = Random<uint8_t>(16 * 36, 0, 255, &rng);
  auto w = Random<int8_t>(32 * 16 * 9, -127, 127, &rng);
  std::vector<int32_t> y(32 * 36), ref(32 * 36);
  std::vector<char> temp(Int8TempBytes(*plan));
  auto array = std::make_shared<int>(0);
  InputVersion v{array, 5};
  auto run_and_check = [&](const InputVersion& ver) {
    RunInt8(*plan, x.data(), w.data(), nullptr, nullptr, y.data(), temp.data(), &ver);
    ReferenceConv(g, DType::kUint8, x.data(), w.data(), nullptr, e, nullptr, ref.data());
    EXPECT_EQ(y, ref);
  };
  const size_t start = Int8WeightReorders();
  run_and_check(v);
  EXPECT_EQ(Int8WeightReorders(), start + 1);  // int8 convolutions take blocked weights
  run_and_check(v);
  run_and_check(v);
  EXPECT_EQ(Int8WeightReorders(), start + 1);
  // Written: the same memory, new values, the count moved.
  for (auto& val : w) val = static_cast<int8_t>(-val);
  v.writes = 6;
  run_and_check(v);
  EXPECT_EQ(Int8WeightReorders(), start + 2);
  // Another array at the same address is not the same array.
  auto other = std::make_shared<int>(0);
  run_and_check(InputVersion{other, 6});
  EXPECT_EQ(Int8WeightReorders(), start + 3);
  // Without a version the weights are reordered at every call, through the temp space.
  RunInt8(*plan, x.data(), w.data(), nullptr, nullptr, y.data(), temp.data());
  EXPECT_EQ(y, ref);
  EXPECT_EQ(Int8WeightReorders(), start + 3);
}

}  // namespace
}  // namespace quant
}  // namespace op
}  // namespace weft

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
void Compare(const ConvGeom* g, int64_t m, int64_t k, int64_t n, DType src, const Epilogue& e, bool bias) {
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
  auto plan = g ? Int8ConvPlan(*g, src, bias, e) : Int8FcPlan(m, k, n, src, bias, e);
#if defined(WEFT_USE_ONEDNN)
  ASSERT_TRUE(plan != nullptr) << "oneDNN refused the geometry";
#endif
  if (!plan) GTEST_SKIP() << "built without oneDNN";
  temp.resize(Int8TempBytes(*plan));
  const int32_t* bp = bias ? b.data() : nullptr;
  const void* sp = e.sum ? sum.data() : nullptr;
  RunInt8(*plan, xp, w.data(), bp, sp, dnnl_out.data(), temp.data());
  if (g) ReferenceConv(*g, src, xp, w.data(), bp, e, sp, ref_out.data());
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
  EXPECT_LE(worst, e.out == DType::kInt32 && !e.sum ? 0 : 1);
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

}  // namespace
}  // namespace quant
}  // namespace op
}  // namespace weft

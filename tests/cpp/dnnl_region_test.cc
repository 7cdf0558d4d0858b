// The oneDNN region node on its own: a convolution with a folded BatchNorm and ReLU equals
// a direct computation, and its weights are reordered again only when the weight array was
// written or the folded scale changed (no work repeated per call otherwise).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/imperative/imperative.h"
#include "core/op/dnnl/dnnl_region.h"

namespace weft {
namespace op {
namespace {

NDArray Array(const Shape& shape, const std::vector<float>& v) {
  NDArray a(shape, Context::CPU(), DType::kFloat32);
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> Values(size_t n, float lo, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + step * static_cast<float>((i * 7919) % 23);
  return v;
}

struct ConvBnRelu {
  static constexpr int64_t N = 2, C = 3, H = 5, W = 6, F = 4;
  std::vector<float> x = Values(N * C * H * W, -1.f, 0.09f), w = Values(F * C * 9, -0.5f, 0.05f);
  std::vector<float> gamma{1.5f, -0.5f, 0.8f, 1.f}, beta{0.1f, 0.2f, -0.3f, 0.f};
  std::vector<float> mean{0.05f, -0.1f, 0.2f, 0.f}, var{1.f, 0.5f, 2.f, 0.25f};
  double eps = 1e-3;

  // conv 3x3 (pad 1) -> BatchNorm (moving statistics) -> relu, in double.
  std::vector<float> Reference() const {
    std::vector<float> y(N * F * H * W);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t i = 0; i < H; ++i)
          for (int64_t j = 0; j < W; ++j) {
            double s = 0;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t a = 0; a < 3; ++a)
                for (int64_t b = 0; b < 3; ++b) {
                  int64_t ii = i + a - 1, jj = j + b - 1;
                  if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                  s += static_cast<double>(x[((n * C + c) * H + ii) * W + jj]) * w[((f * C + c) * 3 + a) * 3 + b];
                }
            double v = (s - mean[f]) / std::sqrt(var[f] + eps) * gamma[f] + beta[f];
            y[((n * F + f) * H + i) * W + j] = static_cast<float>(std::max(0.0, v));
          }
    return y;
  }

  DnnlRegionSpec Spec() const {
    DnnlRegionSpec s;
    s.values = {{Shape({N, C, H, W}), 0, -1}, {Shape({N, F, H, W}), -1, 0}};
    DnnlRegionSpec::Unit u;
    u.kind = DnnlRegionSpec::Kind::kConv;
    u.name = "conv";
    NodeAttrs attrs = MakeAttrs(
        Op::Get("Convolution"), {{"kernel", "(3,3)"}, {"pad", "(1,1)"}, {"num_filter", "4"}, {"no_bias", "True"}});
    u.conv = attrs.Params<ConvolutionParam>();
    u.src = 0;
    u.dst = 1;
    u.weight = 1;
    u.bn = true;
    u.gamma = 2, u.beta = 3, u.mean = 4, u.var = 5;
    u.eps = eps;
    u.fix_gamma = false;
    u.act = DnnlRegionSpec::Act::kRelu;
    s.units.push_back(u);
    s.num_inputs = 6;
    s.outputs = {1};
    return s;
  }
};

std::vector<float> RunRegion(DnnlRegion* r, const std::vector<NDArray>& in, const NDArray& out) {
  std::vector<TBlob> blobs;
  for (const auto& a : in) {
    a.WaitToRead();
    blobs.push_back(a.data());
  }
  out.WaitToWrite();
  r->Run(blobs, {OpReq::kWriteTo}, {out.data()});
  std::vector<float> v(static_cast<size_t>(out.Size()));
  out.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4 * (1 + std::fabs(b[i]))) << "at " << i;
}

TEST(DnnlRegion, ConvBatchNormReluEqualsTheDirectComputation) {
  if (!DnnlRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  ConvBnRelu t;
  DnnlRegion r(t.Spec());
  std::vector<NDArray> in{Array({t.N, t.C, t.H, t.W}, t.x), Array({t.F, t.C, 3, 3}, t.w), Array({t.F}, t.gamma),
                          Array({t.F}, t.beta),          Array({t.F}, t.mean),          Array({t.F}, t.var)};
  NDArray out(Shape({t.N, t.F, t.H, t.W}), Context::CPU());
  r.Watch(in);
  ExpectNear(RunRegion(&r, in, out), t.Reference());
  EXPECT_GT(r.internal_bytes(), 0u);
}

TEST(DnnlRegion, WeightsAreReorderedOnlyWhenTheyOrTheFoldedScaleChange) {
  if (!DnnlRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  ConvBnRelu t;
  DnnlRegion r(t.Spec());
  std::vector<NDArray> in{Array({t.N, t.C, t.H, t.W}, t.x), Array({t.F, t.C, 3, 3}, t.w), Array({t.F}, t.gamma),
                          Array({t.F}, t.beta),          Array({t.F}, t.mean),          Array({t.F}, t.var)};
  NDArray out(Shape({t.N, t.F, t.H, t.W}), Context::CPU());
  r.Watch(in);
  RunRegion(&r, in, out);
  EXPECT_EQ(r.weight_reorders(), 1u);
  RunRegion(&r, in, out);
  EXPECT_EQ(r.weight_reorders(), 1u);  // nothing changed
  // New weights, written through the engine: seen at the next call.
  for (auto& v : t.w) v = -v * 0.5f;
  in[1].SyncCopyFromCPU(t.w.data(), t.w.size() * sizeof(float));
  ExpectNear(RunRegion(&r, in, out), t.Reference());
  EXPECT_EQ(r.weight_reorders(), 2u);
  // beta and the mean only move the bias; gamma and the variance change the scale.
  t.beta[0] = 1.f;
  t.mean[2] = -0.4f;
  in[3].SyncCopyFromCPU(t.beta.data(), t.beta.size() * sizeof(float));
  in[4].SyncCopyFromCPU(t.mean.data(), t.mean.size() * sizeof(float));
  ExpectNear(RunRegion(&r, in, out), t.Reference());
  EXPECT_EQ(r.weight_reorders(), 2u);
  t.var[1] = 3.f;
  in[5].SyncCopyFromCPU(t.var.data(), t.var.size() * sizeof(float));
  ExpectNear(RunRegion(&r, in, out), t.Reference());
  EXPECT_EQ(r.weight_reorders(), 3u);
}

TEST(DnnlRegion, UnwatchedWeightsAreReorderedAtEveryCall) {
  if (!DnnlRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  ConvBnRelu t;
  DnnlRegion r(t.Spec());
  std::vector<NDArray> in{Array({t.N, t.C, t.H, t.W}, t.x), Array({t.F, t.C, 3, 3}, t.w), Array({t.F}, t.gamma),
                          Array({t.F}, t.beta),          Array({t.F}, t.mean),          Array({t.F}, t.var)};
  NDArray out(Shape({t.N, t.F, t.H, t.W}), Context::CPU());
  RunRegion(&r, in, out);
  ExpectNear(RunRegion(&r, in, out), t.Reference());
  EXPECT_EQ(r.weight_reorders(), 2u);
}

TEST(DnnlRegion, ARegionMadeForOtherShapesRefusesTheCall) {
  if (!DnnlRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  ConvBnRelu t;
  DnnlRegion r(t.Spec());
  std::vector<NDArray> in{Array({1, t.C, t.H, t.W}, std::vector<float>(t.C * t.H * t.W)),
                          Array({t.F, t.C, 3, 3}, t.w), Array({t.F}, t.gamma), Array({t.F}, t.beta),
                          Array({t.F}, t.mean), Array({t.F}, t.var)};
  NDArray out(Shape({t.N, t.F, t.H, t.W}), Context::CPU());
  try {
    RunRegion(&r, in, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 has shape (1,3,5,6) but the region was made for (2,3,5,6)"),
              std::string::npos)
        << e.what();
  }
}

TEST(DnnlRegion, PrimitivesNameEachUnitItsImplementationAndLayouts) {
  if (!DnnlRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  ConvBnRelu t;
  DnnlRegion r(t.Spec());
  // The input reordered into the layout oneDNN picked for the convolution (when that is
  // not plain NCHW), the convolution, and its result copied out to the plain output.
  std::vector<std::string> p = r.primitives();
  ASSERT_GE(p.size(), 2u);
  ASSERT_LE(p.size(), 3u);
  if (p.size() == 3) EXPECT_EQ(p[0], "conv: reorder nchw -> " + p[1].substr(p[1].rfind(' ') + 1) + " (an operand)");
  const std::string& c = p[p.size() - 2];
  EXPECT_EQ(c.rfind("conv: convolution ", 0), 0u) << c;
  EXPECT_NE(c.find(p.size() == 3 ? " -> " : " nchw -> "), std::string::npos) << c;
  EXPECT_EQ(p.back(), "conv: reorder " + c.substr(c.rfind(' ') + 1) + " -> nchw (output 0)");
}

}  // namespace
}  // namespace op
}  // namespace weft

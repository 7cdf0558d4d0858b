// The key of cuDNN's per-thread convolution plan cache (core/op/cuda/conv_plan_key.h):
// calls with the same problem share one plan, and anything cuDNN's plan depends on (pass,
// shapes, dtype, pointer alignment, device, tuning, TF32, accumulation) gives another.
// Pure host code, so it runs in every build.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/op/cuda/conv_plan_key.h"

namespace weft {
namespace cuda {
namespace {

op::ConvGeom Geom() {
  op::ConvGeom g;
  g.nd = 2;
  g.n = 8;
  g.c = 16;
  g.f = 32;
  g.g = 1;
  g.in[1] = g.in[2] = 28;
  g.out[1] = g.out[2] = 28;
  g.k[1] = g.k[2] = 3;
  g.pl[1] = g.pl[2] = 1;
  return g;
}

// Addresses with a known alignment; never dereferenced.
const void* At(uintptr_t a) { return reinterpret_cast<const void*>(a); }

ConvPlanKey Key(const op::ConvGeom& g, DType dt = DType::kFloat32, uintptr_t x = 0x10000, int dev = 0,
                ConvTune tune = ConvTune::kHeuristic, bool tf32 = true, bool acc = false,
                ConvPass pass = ConvPass::kForward, int64_t limit = int64_t(1) << 30) {
  return MakeConvPlanKey(pass, g, dt, At(x), At(0x20000), At(0x30000), dev, tune, limit, tf32, acc);
}

TEST(ConvPlanKey, AlignmentIsTheLargestPowerOfTwoUpTo16) {
  EXPECT_EQ(ByteAlignment(At(0x1000)), 16);
  EXPECT_EQ(ByteAlignment(At(0x1010)), 16);
  EXPECT_EQ(ByteAlignment(At(0x1008)), 8);
  EXPECT_EQ(ByteAlignment(At(0x1004)), 4);
  EXPECT_EQ(ByteAlignment(At(0x1002)), 2);
  EXPECT_EQ(ByteAlignment(At(0x1001)), 1);
}

TEST(ConvPlanKey, EqualProblemsShareOneEntry) {
  ConvPlanCache<int> cache;
  op::ConvGeom g = Geom();
  cache.Insert(Key(g), 1);
  // Other addresses with the same alignment are the same problem.
  EXPECT_EQ(Key(g), Key(g, DType::kFloat32, 0x50000));
  ASSERT_NE(cache.Find(Key(g, DType::kFloat32, 0x50000)), nullptr);
  EXPECT_EQ(*cache.Find(Key(g)), 1);
  cache.Insert(Key(g, DType::kFloat32, 0x70000), 2);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(*cache.Find(Key(g)), 2);
}

TEST(ConvPlanKey, EveryPlanInputMakesANewEntry) {
  ConvPlanCache<int> cache;
  op::ConvGeom g = Geom();
  cache.Insert(Key(g), 0);
  op::ConvGeom batch = g, channels = g, stride = g, pad = g, dilate = g, groups = g, kernel = g, depth = g;
  batch.n = 4;
  channels.c = 8;
  stride.s[2] = 2;
  pad.pl[1] = 0;
  dilate.d[1] = 2;
  groups.g = 4;
  kernel.k[2] = 5;
  depth.nd = 3;
  std::vector<ConvPlanKey> others = {
      Key(batch), Key(channels), Key(stride), Key(pad), Key(dilate), Key(groups), Key(kernel), Key(depth),
      Key(g, DType::kFloat16), Key(g, DType::kFloat64),
      Key(g, DType::kFloat32, 0x10008),  // 8-byte aligned
      Key(g, DType::kFloat32, 0x10000, 1),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kFastest),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kHeuristic, false),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kHeuristic, true, true),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kHeuristic, true, false, ConvPass::kBackwardData),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kHeuristic, true, false, ConvPass::kBackwardFilter),
      Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kHeuristic, true, false, ConvPass::kForward, 1 << 20),
  };
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_NE(others[i], Key(g)) << "variant " << i;
    EXPECT_EQ(cache.Find(others[i]), nullptr) << "variant " << i;
    cache.Insert(others[i], static_cast<int>(i + 1));
  }
  EXPECT_EQ(cache.size(), others.size() + 1);
  for (size_t i = 0; i < others.size(); ++i) EXPECT_EQ(*cache.Find(others[i]), static_cast<int>(i + 1));
}

TEST(ConvPlanKey, Tf32AndWorkspaceLimitOnlyCountWhereTheyMatter) {
  op::ConvGeom g = Geom();
  // TF32 changes nothing for float16; the limit is ignored when tuning for the fastest.
  EXPECT_EQ(Key(g, DType::kFloat16, 0x10000, 0, ConvTune::kHeuristic, true),
            Key(g, DType::kFloat16, 0x10000, 0, ConvTune::kHeuristic, false));
  EXPECT_EQ(Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kFastest, true, false, ConvPass::kForward, 1 << 20),
            Key(g, DType::kFloat32, 0x10000, 0, ConvTune::kFastest, true, false, ConvPass::kForward, 1 << 30));
}

}  // namespace
}  // namespace cuda
}  // namespace weft

// Resources: the Philox generator against its published answers, random state, temporary
// space and reproducible seeding through the resource manager.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "core/engine/engine.h"
#include "core/resource/philox.h"
#include "core/resource/resource.h"
#include "core/storage/cpu_pool.h"
#include "core/storage/storage.h"

namespace weft {
namespace {

using Words = std::array<uint32_t, 4>;

// Runs Philox4x32-10 on the 128-bit counter (c0, c1, c2, c3) with key (k0, k1), mapped the
// way philox.h documents it: ctr = c1:c0, stream = c3:c2, seed = k1:k0.
Words Philox(Words c, uint32_t k0, uint32_t k1) {
  Philox4x32 gen((static_cast<uint64_t>(k1) << 32) | k0);
  Words out{};
  gen.Generate((static_cast<uint64_t>(c[1]) << 32) | c[0], (static_cast<uint64_t>(c[3]) << 32) | c[2], out.data());
  return out;
}

// The known-answer tests published with Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST(Philox, MatchesPublishedTestVectors) {
  EXPECT_EQ(Philox({0, 0, 0, 0}, 0, 0), (Words{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(Philox({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu),
            (Words{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(Philox({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u),
            (Words{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, CountersAndStreamsGiveDistinctWords) {
  Philox4x32 gen(42);
  std::set<uint32_t> seen;
  uint32_t out[4];
  for (uint64_t stream = 0; stream < 4; ++stream)
    for (uint64_t ctr = 0; ctr < 256; ++ctr) {
      gen.Generate(ctr, stream, out);
      for (uint32_t w : out) seen.insert(w);
    }
  // 4096 random 32-bit words: a collision is possible but rare (p ~ 0.002).
  EXPECT_GE(seen.size(), 4094u);
}

TEST(Philox, UniformConversionsStayInTheUnitInterval) {
  EXPECT_EQ(Philox4x32::ToUniformFloat(0), 0.0f);
  EXPECT_LT(Philox4x32::ToUniformFloat(0xffffffffu), 1.0f);
  EXPECT_FLOAT_EQ(Philox4x32::ToUniformFloat(0x80000000u), 0.5f);
  EXPECT_EQ(Philox4x32::ToUniformDouble(0, 0), 0.0);
  EXPECT_LT(Philox4x32::ToUniformDouble(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_DOUBLE_EQ(Philox4x32::ToUniformDouble(0x80000000u, 0), 0.5);
  // The mean of many draws is close to 1/2: 4e5 draws have a standard error of 4.6e-4,
  // so the bound is six and a half of them.
  Philox4x32 gen(7);
  double sum = 0;
  uint32_t out[4];
  constexpr int kDraws = 100000;
  for (uint64_t i = 0; i < kDraws; ++i) {
    gen.Generate(i, 0, out);
    for (uint32_t w : out) sum += Philox4x32::ToUniformFloat(w);
  }
  EXPECT_NEAR(sum / (4 * kDraws), 0.5, 0.003);
}

TEST(RandomState, ReserveHandsOutDisjointCounterRanges) {
  RandomState st;
  st.seed = 1;
  EXPECT_EQ(st.Reserve(10), 0u);
  EXPECT_EQ(st.Reserve(5), 10u);
  EXPECT_EQ(st.Reserve(0), 15u);
  EXPECT_EQ(st.Reserve(1), 15u);
  EXPECT_EQ(st.offset, 16u);
}

TEST(TempSpace, GrowsAndNeverShrinks) {
  Context ctx = Context::CPU(40);
  Storage* s = Storage::Get();
  {
    TempSpace temp(ctx);
    void* a = temp.Get(100);
    ASSERT_NE(a, nullptr);
    std::memset(a, 1, 100);
    EXPECT_EQ(s->Stats(ctx).bytes_in_use, 100);
    EXPECT_EQ(temp.Get(50), a);  // smaller request: same buffer
    EXPECT_EQ(temp.Get(100), a);
    void* b = temp.Get(1 << 20);
    ASSERT_NE(b, nullptr);
    std::memset(b, 2, 1 << 20);
    EXPECT_EQ(s->Stats(ctx).bytes_in_use, 1 << 20);  // the old buffer went back
    EXPECT_EQ(temp.Get(10), b);
  }
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 0);
}

// Growing hands the old buffer back to the system, not the pool: a pool would keep every
// size the space grew through, which is where Weft's ResNet-50 step lost 0.5 GB.
TEST(TempSpace, GrowingLeavesNothingPooled) {
  Context ctx = Context::CPU(41);
  Storage* s = Storage::Get();
  {
    TempSpace temp(ctx);
    for (size_t bytes : {size_t{1} << 16, size_t{3} << 18, size_t{1} << 22}) {
      void* p = temp.Get(bytes);
      ASSERT_NE(p, nullptr);
      std::memset(p, 3, bytes);
      EXPECT_EQ(s->Stats(ctx).bytes_in_use, static_cast<int64_t>(bytes));
      EXPECT_EQ(s->Stats(ctx).bytes_pooled, 0);
    }
  }
  // The last buffer is an ordinary free: pooled for the next user.
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 0);
  EXPECT_EQ(s->Stats(ctx).bytes_pooled, static_cast<int64_t>(BlockPool::BucketSize(size_t{1} << 22)));
}

// Storage::FreeToSystem takes a block out of the statistics without pooling it.
TEST(Storage, FreeToSystemSkipsThePool) {
  Context ctx = Context::CPU(42);
  Storage* s = Storage::Get();
  StorageHandle a = s->Alloc(5000, ctx);
  StorageHandle b = s->Alloc(5000, ctx);
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 10000);
  s->FreeToSystem(a);
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 5000);
  EXPECT_EQ(s->Stats(ctx).bytes_pooled, 0);
  s->Free(b);
  EXPECT_EQ(s->Stats(ctx).bytes_pooled, static_cast<int64_t>(BlockPool::BucketSize(5000)));
  s->FreeToSystem(StorageHandle{});  // a null block is ignored, as Free ignores it
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 0);
}

// Draws `n` words through the resource manager's generator for ctx, as an operator does:
// inside an engine operation that writes the resource's variable.
std::vector<uint32_t> Draw(Context ctx, int n) {
  Resource res = ResourceManager::Get()->Request(ctx, ResourceRequest{ResourceType::kRandom});
  EXPECT_EQ(res.type, ResourceType::kRandom);
  EXPECT_NE(res.random, nullptr);
  std::vector<uint32_t> out(static_cast<size_t>(n));
  engine::Engine* eng = engine::Engine::Get();
  RandomState* state = res.random;
  uint32_t* dst = out.data();
  eng->PushSync(
      [state, dst, n](engine::RunContext) {
        Philox4x32 gen(state->seed);
        uint64_t first = state->Reserve(static_cast<uint64_t>(n));
        uint32_t w[4];
        for (int i = 0; i < n; ++i) {
          gen.Generate(first + static_cast<uint64_t>(i), 0, w);
          dst[i] = w[0];
        }
      },
      ctx, {}, {res.var}, engine::FnProperty::kNormal, 0, "TestDraw");
  eng->WaitForVar(res.var);
  return out;
}

TEST(ResourceManager, SeedingMakesDrawsReproducible) {
  Context ctx = Context::CPU(0);
  ResourceManager* rm = ResourceManager::Get();
  rm->SeedRandom(ctx, 1234);
  std::vector<uint32_t> a1 = Draw(ctx, 16);
  std::vector<uint32_t> a2 = Draw(ctx, 16);
  EXPECT_NE(a1, a2);  // the offset moves on between draws

  rm->SeedRandom(ctx, 1234);
  EXPECT_EQ(Draw(ctx, 16), a1);
  EXPECT_EQ(Draw(ctx, 16), a2);

  rm->SeedRandom(ctx, 1235);
  EXPECT_NE(Draw(ctx, 16), a1);

  // Seeding every context resets this one too.
  rm->SeedRandom(1234);
  EXPECT_EQ(Draw(ctx, 16), a1);
}

TEST(ResourceManager, ContextsDrawFromDifferentStreams) {
  ResourceManager* rm = ResourceManager::Get();
  Context c0 = Context::CPU(0), c1 = Context::CPU(1);
  Draw(c1, 1);  // make sure c1 exists before seeding everything
  rm->SeedRandom(99);
  std::vector<uint32_t> a = Draw(c0, 8);
  std::vector<uint32_t> b = Draw(c1, 8);
  EXPECT_NE(a, b);
  rm->SeedRandom(99);
  EXPECT_EQ(Draw(c0, 8), a);
  EXPECT_EQ(Draw(c1, 8), b);
}

TEST(ResourceManager, TempSpaceRequestsShareOneBufferPerContext) {
  ResourceManager* rm = ResourceManager::Get();
  Context ctx = Context::CPU(0);
  Resource a = rm->Request(ctx, ResourceRequest{ResourceType::kTempSpace});
  Resource b = rm->Request(ctx, ResourceRequest{ResourceType::kTempSpace});
  EXPECT_EQ(a.type, ResourceType::kTempSpace);
  ASSERT_NE(a.temp, nullptr);
  EXPECT_EQ(a.temp, b.temp);
  EXPECT_EQ(a.var, b.var);
  Resource other = rm->Request(Context::CPU(2), ResourceRequest{ResourceType::kTempSpace});
  EXPECT_NE(other.temp, a.temp);
  EXPECT_NE(other.var, a.var);
}

}  // namespace
}  // namespace weft

// The pooled allocator: alignment, buckets, reuse, statistics and thread safety.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/storage/cpu_pool.h"
#include "core/storage/storage.h"

namespace weft {
namespace {

// Each test uses its own cpu(i), so pools and statistics do not leak between tests.
Context FreshCPU() {
  static int next = 10;
  return Context::CPU(next++);
}

// WEFT_STORAGE_POOL=0 (for memory checkers) turns reuse off; tests of reuse skip then.
bool PoolingOff() {
  const char* env = std::getenv("WEFT_STORAGE_POOL");
  return env && std::strcmp(env, "0") == 0;
}
#define SKIP_WITHOUT_POOLING() \
  if (PoolingOff()) GTEST_SKIP() << "WEFT_STORAGE_POOL=0 disables reuse"

TEST(BlockPool, BucketsRoundUpWithBoundedWaste) {
  EXPECT_EQ(BlockPool::BucketSize(0), 0u);
  EXPECT_EQ(BlockPool::BucketSize(1), 64u);
  EXPECT_EQ(BlockPool::BucketSize(64), 64u);
  EXPECT_EQ(BlockPool::BucketSize(65), 128u);
  EXPECT_EQ(BlockPool::BucketSize(4096), 4096u);
  EXPECT_EQ(BlockPool::BucketSize(4097), 5120u);
  EXPECT_EQ(BlockPool::BucketSize(8192), 8192u);
  EXPECT_EQ(BlockPool::BucketSize(8193), 10240u);
  EXPECT_EQ(BlockPool::BucketSize(1000000), 1048576u);
  EXPECT_EQ(BlockPool::BucketSize(600000), 655360u);  // 5/8 of 1 MiB
  for (size_t s = 1; s < (size_t{1} << 24); s = s * 3 / 2 + 1) {
    size_t b = BlockPool::BucketSize(s);
    EXPECT_GE(b, s);
    EXPECT_EQ(b % kStorageAlignment, 0u) << s;
    if (s > 4096) EXPECT_LT(static_cast<double>(b - s), 0.2 * static_cast<double>(b)) << s;
  }
}

TEST(BlockPool, ClassesAreDenseAndMonotonic) {
  // Consecutive buckets get consecutive classes, so the free lists form a short vector.
  size_t prev_bucket = 0, prev_class = 0;
  for (size_t s = 1; s < (size_t{1} << 30); ++s) {
    size_t b = BlockPool::BucketSize(s);
    if (b == prev_bucket) continue;
    size_t c = BlockPool::BucketClass(s);
    if (prev_bucket != 0) EXPECT_EQ(c, prev_class + 1) << "size " << s;
    EXPECT_EQ(BlockPool::BucketClass(b), c);
    prev_bucket = b;
    prev_class = c;
    s = b;  // jump to the end of this bucket
  }
  EXPECT_LT(prev_class, 100u);
}

TEST(BlockPool, ReusesFreedBlocksOfTheSameBucket) {
  int os_allocs = 0, os_frees = 0;
  BlockPool pool(
      [&](size_t n) {
        ++os_allocs;
        return std::aligned_alloc(kStorageAlignment, n);
      },
      [&](void* p, size_t n) {
        ++os_frees;
        EXPECT_EQ(n % kStorageAlignment, 0u);
        std::free(p);
      });
  bool os = false;
  void* a = pool.Alloc(1000, &os);
  EXPECT_TRUE(os);
  pool.Free(a, 1000);
  EXPECT_EQ(pool.pooled_bytes(), 1024u);
  void* b = pool.Alloc(1024, &os);  // same bucket, different request
  EXPECT_FALSE(os);
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
  void* c = pool.Alloc(2000, &os);  // another bucket: a new block
  EXPECT_TRUE(os);
  pool.Free(b, 1024);
  pool.Free(c, 2000);
  EXPECT_EQ(os_allocs, 2);
  pool.ReleaseAll();
  EXPECT_EQ(os_frees, 2);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
}

TEST(BlockPool, RetriesAfterReleasingTheCacheWhenOutOfMemory) {
  // A fake device with room for one 4 KiB block.
  size_t used = 0;
  BlockPool pool(
      [&](size_t n) -> void* {
        if (used + n > 4096) return nullptr;
        used += n;
        return std::aligned_alloc(kStorageAlignment, n);
      },
      [&](void* p, size_t n) {
        used -= n;
        std::free(p);
      });
  bool os = false;
  void* a = pool.Alloc(4096, &os);
  ASSERT_NE(a, nullptr);
  pool.Free(a, 4096);
  void* b = pool.Alloc(2048, &os);  // only fits once the cached 4 KiB block is released
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(os);
  EXPECT_EQ(pool.Alloc(4096, &os), nullptr);
  pool.Free(b, 2048);
}

TEST(BlockPool, WithoutPoolingFreesGoStraightBack) {
  int os_frees = 0;
  BlockPool pool([](size_t n) { return std::aligned_alloc(kStorageAlignment, n); },
                 [&](void* p, size_t) {
                   ++os_frees;
                   std::free(p);
                 });
  pool.set_pooling(false);
  bool os = false;
  void* a = pool.Alloc(100, &os);
  pool.Free(a, 100);
  EXPECT_EQ(os_frees, 1);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
  void* b = pool.Alloc(100, &os);
  EXPECT_TRUE(os);
  pool.Free(b, 100);
  EXPECT_EQ(os_frees, 2);
}

TEST(BlockPool, CacheLimitReleasesTheLargestBlocksFirst) {
  std::vector<size_t> released;
  BlockPool pool([](size_t n) { return std::aligned_alloc(kStorageAlignment, n); },
                 [&](void* p, size_t n) {
                   released.push_back(n);
                   std::free(p);
                 });
  pool.set_cache_limit(16384);
  bool os = false;
  void* small = pool.Alloc(4096, &os);
  void* mid = pool.Alloc(8192, &os);
  void* big = pool.Alloc(10240, &os);
  void* huge = pool.Alloc(20480, &os);
  pool.Free(small, 4096);
  pool.Free(mid, 8192);
  EXPECT_EQ(pool.pooled_bytes(), 12288u);
  EXPECT_TRUE(released.empty());
  // 12288 + 10240 is over the limit: the 8 KiB block, the largest cached, goes back.
  pool.Free(big, 10240);
  EXPECT_EQ(released, std::vector<size_t>({8192}));
  EXPECT_EQ(pool.pooled_bytes(), 4096u + 10240u);
  // A block above the limit is never cached, and costs the cache nothing.
  pool.Free(huge, 20480);
  EXPECT_EQ(released, std::vector<size_t>({8192, 20480}));
  EXPECT_EQ(pool.pooled_bytes(), 4096u + 10240u);
  // The cached blocks are still reused.
  EXPECT_EQ(pool.Alloc(10240, &os), big);
  EXPECT_FALSE(os);
  pool.Free(big, 10240);
  // Lowering the limit releases at once, largest first.
  pool.set_cache_limit(5000);
  EXPECT_EQ(released, std::vector<size_t>({8192, 20480, 10240}));
  EXPECT_EQ(pool.pooled_bytes(), 4096u);
  pool.set_cache_limit(0);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
  EXPECT_EQ(released.size(), 4u);
}

TEST(Storage, BlocksAre64ByteAlignedAndWritable) {
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  std::vector<StorageHandle> hs;
  for (size_t n : {1, 3, 63, 64, 65, 100, 4095, 4097, 100000, 1 << 20}) {
    StorageHandle h = s->Alloc(n, ctx);
    ASSERT_NE(h.dptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(h.dptr) % kStorageAlignment, 0u) << n;
    EXPECT_EQ(h.size, n);
    EXPECT_EQ(h.ctx, ctx);
    std::memset(h.dptr, 0xab, n);
    hs.push_back(h);
  }
  std::set<void*> distinct;
  for (auto& h : hs) distinct.insert(h.dptr);
  EXPECT_EQ(distinct.size(), hs.size());
  for (auto& h : hs) s->Free(h);
}

TEST(Storage, SteadyStateReusesWithoutGoingToTheOS) {
  SKIP_WITHOUT_POOLING();
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  StorageHandle a = s->Alloc(1 << 16, ctx);
  void* first = a.dptr;
  s->Free(a);
  StorageStats before = s->Stats(ctx);
  EXPECT_EQ(before.num_os_allocs, 1);
  for (int i = 0; i < 100; ++i) {
    StorageHandle h = s->Alloc(1 << 16, ctx);
    EXPECT_EQ(h.dptr, first);
    s->Free(h);
  }
  StorageStats after = s->Stats(ctx);
  EXPECT_EQ(after.num_os_allocs, 1);
  EXPECT_EQ(after.num_allocs, 101);
  EXPECT_EQ(after.bytes_pooled, 1 << 16);
}

TEST(Storage, StatisticsTrackInUsePeakAndPooled) {
  SKIP_WITHOUT_POOLING();
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  EXPECT_EQ(s->Stats(ctx).num_allocs, 0);
  StorageHandle a = s->Alloc(1000, ctx);
  StorageHandle b = s->Alloc(3000, ctx);
  StorageStats st = s->Stats(ctx);
  EXPECT_EQ(st.bytes_in_use, 4000);
  EXPECT_EQ(st.peak_bytes, 4000);
  EXPECT_EQ(st.bytes_pooled, 0);
  EXPECT_EQ(st.num_allocs, 2);
  EXPECT_EQ(st.num_os_allocs, 2);
  s->Free(b);
  st = s->Stats(ctx);
  EXPECT_EQ(st.bytes_in_use, 1000);
  EXPECT_EQ(st.peak_bytes, 4000);
  EXPECT_EQ(st.bytes_pooled, 4096);
  StorageHandle c = s->Alloc(500, ctx);
  st = s->Stats(ctx);
  EXPECT_EQ(st.bytes_in_use, 1500);
  EXPECT_EQ(st.peak_bytes, 4000);
  s->Free(a);
  s->Free(c);
  st = s->Stats(ctx);
  EXPECT_EQ(st.bytes_in_use, 0);
  EXPECT_EQ(st.bytes_pooled, 4096 + 1024 + 512);
  // Contexts keep separate books.
  EXPECT_EQ(s->Stats(FreshCPU()).peak_bytes, 0);
}

TEST(Storage, ZeroSizeGivesANullHandleAndCostsNothing) {
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  StorageHandle h = s->Alloc(0, ctx);
  EXPECT_EQ(h.dptr, nullptr);
  EXPECT_EQ(h.size, 0u);
  s->Free(h);
  StorageStats st = s->Stats(ctx);
  EXPECT_EQ(st.num_allocs, 0);
  EXPECT_EQ(st.bytes_in_use, 0);
}

TEST(Storage, ReleaseAllEmptiesThePoolButKeepsLiveBlocks) {
  SKIP_WITHOUT_POOLING();
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  StorageHandle live = s->Alloc(256, ctx);
  std::memset(live.dptr, 7, 256);
  StorageHandle a = s->Alloc(1 << 20, ctx);
  s->Free(a);
  EXPECT_EQ(s->Stats(ctx).bytes_pooled, 1 << 20);
  s->ReleaseAll(ctx);
  StorageStats st = s->Stats(ctx);
  EXPECT_EQ(st.bytes_pooled, 0);
  EXPECT_EQ(st.bytes_in_use, 256);
  EXPECT_EQ(static_cast<unsigned char*>(live.dptr)[255], 7);
  // The next request of the released size goes to the OS again.
  StorageHandle b = s->Alloc(1 << 20, ctx);
  EXPECT_EQ(s->Stats(ctx).num_os_allocs, 3);
  s->Free(b);
  s->Free(live);
  s->ReleaseAll(FreshCPU());  // a context never used: nothing to do
}

TEST(Storage, ConcurrentAllocAndFreeKeepTheBooksStraight) {
  SKIP_WITHOUT_POOLING();
  Context ctx = FreshCPU();
  Storage* s = Storage::Get();
  constexpr int kThreads = 4, kIters = 2000;
  std::vector<std::thread> threads;
  std::vector<int> corrupt(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<StorageHandle> held;
      for (int i = 0; i < kIters; ++i) {
        size_t n = 16 + static_cast<size_t>((i * 7919 + t * 104729) % 20000);
        StorageHandle h = s->Alloc(n, ctx);
        // Each thread stamps its blocks; a block handed to two owners would be overwritten.
        std::memset(h.dptr, t + 1, n);
        held.push_back(h);
        if (held.size() > 8) {
          StorageHandle old = held.front();
          held.erase(held.begin());
          auto* bytes = static_cast<unsigned char*>(old.dptr);
          if (bytes[0] != t + 1 || bytes[old.size - 1] != t + 1) corrupt[t]++;
          s->Free(old);
        }
      }
      for (auto& h : held) s->Free(h);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(corrupt[t], 0) << "thread " << t;
  StorageStats st = s->Stats(ctx);
  EXPECT_EQ(st.num_allocs, kThreads * kIters);
  EXPECT_EQ(st.bytes_in_use, 0);
  EXPECT_GT(st.peak_bytes, 0);
  EXPECT_LT(st.num_os_allocs, st.num_allocs / 10);
}

TEST(Storage, BadContextsAreClearErrors) {
  Storage* s = Storage::Get();
  try {
    s->Alloc(16, Context::CPU(1000));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("cpu(1000)"), std::string::npos) << e.what();
  }
  if (NumGPUs() == 0) {
    try {
      s->Alloc(16, Context::GPU(0));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("gpu(0)"), std::string::npos) << e.what();
    }
  }
}

TEST(Storage, PinnedMemoryIsAlignedHostMemory) {
  Storage* s = Storage::Get();
  Context ctx = Context::CPUPinned(5);
  StorageHandle h = s->Alloc(12345, ctx);
  ASSERT_NE(h.dptr, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h.dptr) % kStorageAlignment, 0u);
  std::memset(h.dptr, 1, h.size);
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 12345);
  s->Free(h);
  EXPECT_EQ(s->Stats(ctx).bytes_in_use, 0);
}

}  // namespace
}  // namespace weft

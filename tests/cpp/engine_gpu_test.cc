// The threaded engine's GPU completion (events recorded after each GPU operation, waited
// for by later users on other streams or on the host, and frees parked until their events
// are done) against a sequential model of the same operations. The operations are plain
// CUDA runtime calls (memsets and device-to-device copies) on the run context's stream,
// pushed on both GPU pools (two compute streams and the copy stream), with host reads,
// CPU operations reading GPU memory, and arrays deleted and replaced while work on them is
// queued. Slow operations (repeated memsets of a large buffer) keep the GPU behind the
// pushing thread, so that a missing wait shows up as a wrong byte. Skips without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "core/base/context.h"
#include "core/engine/engine.h"
#include "core/storage/storage.h"

#ifdef WEFT_USE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {
namespace {

#ifdef WEFT_USE_CUDA

constexpr size_t kBytes = size_t{32} << 20;
constexpr int kBuffers = 6;

cudaStream_t S(const engine::RunContext& r) {
  return r.stream ? static_cast<cudaStream_t>(r.stream) : cudaStreamLegacy;
}

struct Buffer {
  StorageHandle mem;
  engine::VarHandle var = nullptr;
};

uint8_t ReadByte(const Buffer& b, size_t offset) {
  uint8_t v = 0;
  EXPECT_EQ(cudaMemcpy(&v, static_cast<uint8_t*>(b.mem.dptr) + offset, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(GpuEngine, EventCompletionMatchesSequentialExecution) {
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible";
  const Context gpu = Context::GPU(0);
  auto eng = engine::Engine::Create("ThreadedEngine");
  std::mt19937 rng(20);
  std::vector<Buffer> bufs(kBuffers);
  std::vector<int> model(kBuffers);
  std::atomic<int> cpu_mismatches{0};
  engine::VarHandle cpu_out = eng->NewVariable();

  auto props = [&]() {
    // Two compute workers (two streams) and the copy worker (a third).
    return rng() % 3 == 0 ? engine::FnProperty::kCopyToGPU : engine::FnProperty::kNormal;
  };
  auto fill = [&](int i, int value, int repeats) {
    void* p = bufs[i].mem.dptr;
    eng->PushSync(
        [p, value, repeats](engine::RunContext r) {
          for (int k = 0; k < repeats; ++k) {
            // Only the last memset leaves `value`; earlier ones write another byte, so that a
            // reader overtaking the slow operation sees a wrong value, not a right one.
            int v = k + 1 == repeats ? value : (value + 1 + k) & 0xff;
            ASSERT_EQ(cudaMemsetAsync(p, v, kBytes, S(r)), cudaSuccess);
          }
        },
        gpu, {}, {bufs[i].var}, props(), 0, "fill");
    model[i] = value;
  };
  auto fresh = [&](int i) {
    bufs[i].mem = Storage::Get()->Alloc(kBytes, gpu);
    bufs[i].var = eng->NewVariable();
  };
  auto drop = [&](int i) {
    StorageHandle h = bufs[i].mem;
    eng->DeleteVariable([h](engine::RunContext) { Storage::Get()->Free(h); }, gpu, bufs[i].var);
  };

  for (int i = 0; i < kBuffers; ++i) {
    fresh(i);
    fill(i, i, 1);
  }
  for (int step = 0; step < 1500; ++step) {
    int a = static_cast<int>(rng() % kBuffers), b = static_cast<int>(rng() % kBuffers);
    switch (rng() % 6) {
      case 0:
        fill(a, static_cast<int>(rng() & 0xff), 1);
        break;
      case 1:
        // A slow write: the GPU falls behind, and what follows must wait for it.
        fill(a, static_cast<int>(rng() & 0xff), 12);
        break;
      case 2: {
        if (a == b) break;
        const void* src = bufs[a].mem.dptr;
        void* dst = bufs[b].mem.dptr;
        eng->PushSync(
            [src, dst](engine::RunContext r) {
              ASSERT_EQ(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice, S(r)), cudaSuccess);
            },
            gpu, {bufs[a].var}, {bufs[b].var}, props(), 0, "copy");
        model[b] = model[a];
        break;
      }
      case 3: {
        // A CPU operation reading GPU memory: the engine waits on the host for the writes.
        const uint8_t* p = static_cast<const uint8_t*>(bufs[a].mem.dptr);
        int want = model[a];
        size_t off = rng() % kBytes;
        eng->PushSync(
            [p, want, off, &cpu_mismatches](engine::RunContext) {
              uint8_t v = 0;
              if (cudaMemcpy(&v, p + off, 1, cudaMemcpyDeviceToHost) != cudaSuccess || v != want) ++cpu_mismatches;
            },
            Context::CPU(), {bufs[a].var}, {cpu_out}, engine::FnProperty::kNormal, 0, "cpu_read");
        break;
      }
      case 4:
        // A host read after WaitForVar sees every write pushed before it.
        eng->WaitForVar(bufs[a].var);
        ASSERT_EQ(ReadByte(bufs[a], rng() % kBytes), model[a]) << "step " << step;
        break;
      case 5:
        // Deleted while its work is queued; the replacement may get the same memory, which
        // the old work must have finished with before the new fill lands.
        drop(a);
        fresh(a);
        fill(a, static_cast<int>(rng() & 0xff), 1);
        break;
    }
  }
  eng->WaitForAll();
  EXPECT_EQ(cpu_mismatches.load(), 0);
  std::vector<uint8_t> host(kBytes);
  for (int i = 0; i < kBuffers; ++i) {
    ASSERT_EQ(cudaMemcpy(host.data(), bufs[i].mem.dptr, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (uint8_t v : host) bad += v != model[i];
    EXPECT_EQ(bad, 0u) << "buffer " << i;
    drop(i);
  }
  eng->DeleteVariable(nullptr, Context::CPU(), cpu_out);
  eng->WaitForAll();
}

#else

TEST(GpuEngine, EventCompletionMatchesSequentialExecution) { GTEST_SKIP() << "a build without CUDA"; }

#endif

}  // namespace
}  // namespace weft

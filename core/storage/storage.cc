#include "core/storage/storage.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/base/error.h"
#include "core/storage/cpu_pool.h"
#include "core/profiler/profiler.h"
#include "core/storage/device_memory.h"
#include "core/storage/shared_memory.h"

#ifdef WEFT_USE_CUDA
#include "core/storage/gpu_event.h"
#endif

namespace weft {
namespace {

// Device ids index a fixed table so that finding a context's pool takes no lock.
constexpr int kMaxDeviceId = 64;
constexpr int kNumDeviceTypes = 5;  // cpu, gpu, cpu_pinned, (4: none), cpu_shared

// One per context: the mutex is per context so that GPU and CPU workers do not contend.
struct PerContext {
  std::mutex mu;
  std::unique_ptr<BlockPool> pool;
  StorageStats stats;
#ifdef WEFT_USE_CUDA
  // GPU blocks freed while work on some stream may still use them: each waits here, with
  // the events of that work, until they are done (see Free).
  struct Parked {
    void* dptr;
    size_t size;
    std::vector<gpu::Event*> fence;
  };
  std::deque<Parked> parked;
#endif
};

// The memory this process may use: the machine's, or its cgroup's limit when lower.
size_t HostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t total = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    unsigned long long limit = 0;
    if (f >> limit && limit > 0 && (total == 0 || limit < total)) total = static_cast<size_t>(limit);
  }
  return total;
}

// How many freed bytes each host-memory pool (cpu, cpu_pinned, cpu_shared) keeps for reuse.
// Unbounded, a process whose array sizes change over time (one model, then another) keeps
// every size it ever freed until the OS kills it; a quarter of the host's memory holds the
// working set of any one training step that fits in the rest.
size_t HostCacheLimit() {
  const char* env = std::getenv("WEFT_STORAGE_POOL_LIMIT_MB");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    errno = 0;
    unsigned long long mb = std::strtoull(env, &end, 10);
    WEFT_CHECK(end != env && *end == '\0' && errno == 0 && env[0] != '-' && mb <= (SIZE_MAX >> 20), kValue,
               "WEFT_STORAGE_POOL_LIMIT_MB: expected a whole number of MiB, got '", env, "'");
    return static_cast<size_t>(mb) << 20;
  }
  size_t total = HostMemoryBytes();
  return total == 0 ? SIZE_MAX : total / 4;
}

class PooledStorage : public Storage {
 public:
  PooledStorage() {
    const char* env = std::getenv("WEFT_STORAGE_POOL");
    pooling_ = !(env && std::strcmp(env, "0") == 0);
    host_cache_limit_ = HostCacheLimit();
    // MXNet's GPU pool types: "Naive" and "Round" both mean pooled here (Weft's size
    // buckets already round, by quarter powers of two); "Unpooled" frees GPU blocks at once.
    const char* type = std::getenv("MXNET_GPU_MEM_POOL_TYPE");
    if (type != nullptr && *type != '\0') {
      std::string t(type);
      WEFT_CHECK(t == "Naive" || t == "Round" || t == "Unpooled", kValue,
                 "MXNET_GPU_MEM_POOL_TYPE: expected Naive, Round or Unpooled, got '", t, "'");
      gpu_pooling_ = pooling_ && t != "Unpooled";
    } else {
      gpu_pooling_ = pooling_;
    }
  }

  StorageHandle Alloc(size_t size, Context ctx) override {
    StorageHandle h;
    h.size = size;
    h.ctx = ctx;
    if (size == 0) return h;
    PerContext& pc = GetOrCreate(ctx);
    std::unique_lock<std::mutex> lock(pc.mu);
    bool os_alloc = false;
#ifdef WEFT_USE_CUDA
    if (!pc.parked.empty()) Unpark(pc, false);
#endif
    h.dptr = pc.pool->Alloc(size, &os_alloc);
    // A cpu_shared block cached before this process was forked is mapped in the parent too
    // (shared_memory.h): it goes back to the system, never to a new array here.
    while (ctx.dev_type == DeviceType::kCPUShared && h.dptr != nullptr && !os_alloc && !shm::Reusable(h.dptr)) {
      pc.pool->FreeToSystem(h.dptr, size);
      h.dptr = pc.pool->Alloc(size, &os_alloc);
    }
#ifdef WEFT_USE_CUDA
    if (h.dptr == nullptr && !pc.parked.empty()) {
      // Out of memory with blocks still parked: wait for their work and try again.
      Unpark(pc, true);
      h.dptr = pc.pool->Alloc(size, &os_alloc);
    }
#endif
    if (h.dptr == nullptr) {
      std::string why = ctx.dev_type == DeviceType::kCPUShared ? std::string(": ") + shm::LastAllocFailure() : "";
      Throw(ErrorKind::kRuntime, "out of memory on ", ctx.ToString(), ": could not allocate ", size, " bytes (",
            pc.stats.bytes_in_use, " bytes in use)", why);
    }
    pc.stats.num_allocs++;
    if (os_alloc) pc.stats.num_os_allocs++;
    pc.stats.bytes_in_use += static_cast<int64_t>(size);
    if (pc.stats.bytes_in_use > pc.stats.peak_bytes) pc.stats.peak_bytes = pc.stats.bytes_in_use;
    pc.stats.bytes_pooled = static_cast<int64_t>(pc.pool->pooled_bytes());
    if (__builtin_expect(profiler::Active(profiler::kMemory), 0)) {
      int64_t in_use = pc.stats.bytes_in_use;
      lock.unlock();
      profiler::NoteAlloc(static_cast<int64_t>(size));
      profiler::RecordMemory(ctx, in_use);
    }
    return h;
  }

  void Free(StorageHandle h) override {
    if (h.dptr == nullptr) return;
    PerContext* pc = Find(h.ctx);
    WEFT_CHECK(pc != nullptr && h.size > 0, kInternal, "Storage::Free: block of ", h.size,
               " bytes was not allocated on ", h.ctx.ToString());
    std::unique_lock<std::mutex> lock(pc->mu);
#ifdef WEFT_USE_CUDA
    // Stream-ordered frees. A deleted GPU array's memory may still be read or written by
    // kernels queued on the streams that used it; the engine names their events (the
    // fence) around the deletion. Handing the block to the next Alloc at once would let an
    // operation on another stream overwrite it first, so it is parked until every fence
    // event is done. Events rather than cudaFreeAsync/cudaMallocAsync pools: allocation
    // happens on the pushing thread, before the stream that will use the memory is known
    // (any worker of the device may run the operation), so a stream-ordered allocator
    // would have to be told a stream it cannot know; a fence needs only the freeing side.
    const std::vector<gpu::Event*>* fence = gpu::CurrentFreeFence();
    if (h.ctx.is_gpu() && fence != nullptr && !fence->empty()) {
      for (gpu::Event* ev : *fence) gpu::Retain(ev);
      pc->parked.push_back(PerContext::Parked{h.dptr, h.size, *fence});
    } else {
      FreeToPool(*pc, h);
    }
#else
    FreeToPool(*pc, h);
#endif
    pc->stats.bytes_in_use -= static_cast<int64_t>(h.size);
    pc->stats.bytes_pooled = static_cast<int64_t>(pc->pool->pooled_bytes());
    if (__builtin_expect(profiler::Active(profiler::kMemory), 0)) {
      int64_t in_use = pc->stats.bytes_in_use;
      lock.unlock();
      profiler::RecordMemory(h.ctx, in_use);
    }
  }

  void FreeToSystem(StorageHandle h) override {
    if (h.dptr == nullptr) return;
    PerContext* pc = Find(h.ctx);
    WEFT_CHECK(pc != nullptr && h.size > 0, kInternal, "Storage::FreeToSystem: block of ", h.size,
               " bytes was not allocated on ", h.ctx.ToString());
    std::unique_lock<std::mutex> lock(pc->mu);
    pc->pool->FreeToSystem(h.dptr, h.size);
    pc->stats.bytes_in_use -= static_cast<int64_t>(h.size);
    if (__builtin_expect(profiler::Active(profiler::kMemory), 0)) {
      int64_t in_use = pc->stats.bytes_in_use;
      lock.unlock();
      profiler::RecordMemory(h.ctx, in_use);
    }
  }

  void ReleaseAll(Context ctx) override {
    PerContext* pc = Find(ctx);
    if (pc == nullptr) return;
    std::lock_guard<std::mutex> lock(pc->mu);
#ifdef WEFT_USE_CUDA
    Unpark(*pc, true);
#endif
    pc->pool->ReleaseAll();
    pc->stats.bytes_pooled = 0;
  }

  StorageStats Stats(Context ctx) const override {
    PerContext* pc = Find(ctx);
    if (pc == nullptr) return StorageStats{};
    std::lock_guard<std::mutex> lock(pc->mu);
    return pc->stats;
  }

 private:
  // A cpu_shared block whose id was handed out may still be read by another process: it is
  // never given to a later Alloc (shared_memory.h).
  static void FreeToPool(PerContext& pc, const StorageHandle& h) {
    if (h.ctx.dev_type == DeviceType::kCPUShared && !shm::Reusable(h.dptr))
      pc.pool->FreeToSystem(h.dptr, h.size);
    else
      pc.pool->Free(h.dptr, h.size);
  }

#ifdef WEFT_USE_CUDA
  // Returns parked blocks to the pool: those at the front of the queue whose work is done
  // (the oldest go first and mostly finish first; stopping at the first unfinished one
  // keeps each allocation's cost constant), or all of them, waiting on the host, when
  // `wait`. The caller holds pc.mu.
  static void Unpark(PerContext& pc, bool wait) {
    auto& parked = pc.parked;
    while (!parked.empty()) {
      PerContext::Parked& p = parked.front();
      for (gpu::Event* ev : p.fence) {
        if (!wait && !gpu::Done(ev)) return;
      }
      for (gpu::Event* ev : p.fence) {
        if (wait) {
          // An error here belongs to the work that used the block, which reports it at its
          // own wait; the block is free either way.
          try {
            gpu::HostWait(ev);
          } catch (const Error&) {
          }
        }
        gpu::Release(ev);
      }
      pc.pool->Free(p.dptr, p.size);
      parked.pop_front();
    }
  }
#endif

  std::atomic<PerContext*>* Slot(Context ctx) const {
    int type = static_cast<int>(ctx.dev_type) - 1;
    WEFT_CHECK(type >= 0 && type < kNumDeviceTypes && type != 3, kValue, "Storage: unknown device type ",
               static_cast<int>(ctx.dev_type));
    WEFT_CHECK(ctx.dev_id >= 0 && ctx.dev_id < kMaxDeviceId, kValue, "Storage: expected a device id in [0, ",
               kMaxDeviceId, "), got ", ctx.ToString());
    return &table_[static_cast<size_t>(type * kMaxDeviceId + ctx.dev_id)];
  }

  PerContext* Find(Context ctx) const {
    return Slot(ctx)->load(std::memory_order_acquire);
  }

  PerContext& GetOrCreate(Context ctx) {
    std::atomic<PerContext*>* slot = Slot(ctx);
    if (PerContext* pc = slot->load(std::memory_order_acquire)) return *pc;
    std::lock_guard<std::mutex> lock(create_mu_);
    if (PerContext* pc = slot->load(std::memory_order_acquire)) return *pc;
    auto pc = std::make_unique<PerContext>();
    pc->pool = MakeDevicePool(ctx);
    pc->pool->set_pooling(ctx.is_gpu() ? gpu_pooling_ : pooling_);
    // GPU pools need no such bound: they give their cache back when the device runs out.
    if (!ctx.is_gpu()) pc->pool->set_cache_limit(host_cache_limit_);
    slot->store(pc.get(), std::memory_order_release);
    return *pc.release();  // lives as long as the (never destroyed) storage
  }

  bool pooling_ = true;
  bool gpu_pooling_ = true;
  size_t host_cache_limit_ = SIZE_MAX;
  std::mutex create_mu_;
  mutable std::array<std::atomic<PerContext*>, kNumDeviceTypes * kMaxDeviceId> table_{};
};

}  // namespace

Storage* Storage::Get() {
  // Never destroyed: arrays held by Python or by static objects may be freed during
  // interpreter shutdown, after static destructors would have run.
  static Storage* inst = new PooledStorage();
  return inst;
}

}  // namespace weft

#include "core/storage/storage.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/base/error.h"
#include "core/storage/cpu_pool.h"
#include "core/storage/device_memory.h"

namespace weft {
namespace {

struct PerContext {
  std::unique_ptr<BlockPool> pool;
  std::unordered_map<void*, size_t> live;  // pointer -> bucket
  StorageStats stats;
};

class PooledStorage : public Storage {
 public:
  StorageHandle Alloc(size_t size, Context ctx) override {
    StorageHandle h;
    h.size = size;
    h.ctx = ctx;
    if (size == 0) return h;
    std::lock_guard<std::mutex> lock(mu_);
    PerContext& pc = Get(ctx);
    size_t bucket = 0;
    bool os_alloc = false;
    h.dptr = pc.pool->Alloc(size, &bucket, &os_alloc);
    if (h.dptr == nullptr)
      Throw(ErrorKind::kRuntime, "out of memory on ", ctx.ToString(), ": could not allocate ", size, " bytes (",
            pc.stats.bytes_in_use, " bytes in use)");
    pc.live[h.dptr] = bucket;
    pc.stats.num_allocs++;
    if (os_alloc) pc.stats.num_os_allocs++;
    pc.stats.bytes_in_use += static_cast<int64_t>(size);
    if (pc.stats.bytes_in_use > pc.stats.peak_bytes) pc.stats.peak_bytes = pc.stats.bytes_in_use;
    pc.stats.bytes_pooled = static_cast<int64_t>(pc.pool->pooled_bytes());
    return h;
  }

  void Free(StorageHandle h) override {
    if (h.dptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    PerContext& pc = Get(h.ctx);
    auto it = pc.live.find(h.dptr);
    if (it == pc.live.end())
      Throw(ErrorKind::kInternal, "Storage::Free: pointer was not allocated from ", h.ctx.ToString());
    pc.pool->Free(h.dptr, it->second);
    pc.live.erase(it);
    pc.stats.bytes_in_use -= static_cast<int64_t>(h.size);
    pc.stats.bytes_pooled = static_cast<int64_t>(pc.pool->pooled_bytes());
  }

  void ReleaseAll(Context ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    PerContext& pc = Get(ctx);
    pc.pool->ReleaseAll();
    pc.stats.bytes_pooled = 0;
  }

  StorageStats Stats(Context ctx) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = contexts_.find(ctx);
    return it == contexts_.end() ? StorageStats{} : it->second.stats;
  }

 private:
  PerContext& Get(Context ctx) {
    auto it = contexts_.find(ctx);
    if (it != contexts_.end()) return it->second;
    PerContext& pc = contexts_[ctx];
    pc.pool = MakeDevicePool(ctx);
    return pc;
  }

  mutable std::mutex mu_;
  std::map<Context, PerContext> contexts_;
};

}  // namespace

Storage* Storage::Get() {
  // Never destroyed: arrays held by Python or by static objects may be freed during
  // interpreter shutdown, after static destructors would have run.
  static Storage* inst = new PooledStorage();
  return inst;
}

}  // namespace weft

#include "core/resource/resource.h"

#include <map>
#include <mutex>

namespace weft {

TempSpace::~TempSpace() {
  if (handle_.dptr) Storage::Get()->Free(handle_);
}

void* TempSpace::Get(size_t bytes) {
  if (bytes > handle_.size) {
    // The old buffer goes back to the OS, not the pool: the pool would keep every size the
    // space grew through (hundreds of MB over a ResNet-50 step) for requests that never come.
    if (handle_.dptr) Storage::Get()->FreeToSystem(handle_);
    handle_ = Storage::Get()->Alloc(bytes, ctx_);
  }
  return handle_.dptr;
}

namespace {

struct ContextResources {
  engine::VarHandle random_var = nullptr;
  std::unique_ptr<RandomState> random;
  engine::VarHandle temp_var = nullptr;
  std::unique_ptr<TempSpace> temp;
};

class ResourceManagerImpl : public ResourceManager {
 public:
  Resource Request(Context ctx, const ResourceRequest& req) override {
    std::lock_guard<std::mutex> lock(mu_);
    ContextResources& r = Get(ctx);
    Resource res;
    res.type = req.type;
    if (req.type == ResourceType::kRandom) {
      res.var = r.random_var;
      res.random = r.random.get();
    } else {
      res.var = r.temp_var;
      res.temp = r.temp.get();
    }
    return res;
  }

  void SeedRandom(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = seed;
    for (auto& kv : contexts_) PushSeed(kv.first, kv.second, seed);
  }

  void SeedRandom(Context ctx, uint64_t seed) override {
    std::lock_guard<std::mutex> lock(mu_);
    PushSeed(ctx, Get(ctx), seed);
  }

 private:
  // Each device number draws from its own stream of the same seed. GPU i shares the stream
  // of CPU i: the GPU samplers run the CPU's code on the same counters, so one seed gives
  // the same numbers on either device.
  static uint64_t ContextSeed(uint64_t seed, Context ctx) {
    const auto type = static_cast<uint64_t>(ctx.is_gpu() ? DeviceType::kCPU : ctx.dev_type);
    return seed ^ (type << 56) ^ (static_cast<uint64_t>(ctx.dev_id) << 48);
  }

  static void PushSeed(Context ctx, ContextResources& r, uint64_t seed) {
    RandomState* state = r.random.get();
    engine::Engine::Get()->PushSync(
        [state, seed, ctx](engine::RunContext) {
          state->seed = ContextSeed(seed, ctx);
          state->offset = 0;
        },
        ctx.is_gpu() ? Context::CPU() : ctx, {}, {r.random_var}, engine::FnProperty::kNormal, 0, "SeedRandom");
  }

  ContextResources& Get(Context ctx) {
    auto it = contexts_.find(ctx);
    if (it != contexts_.end()) return it->second;
    ContextResources& r = contexts_[ctx];
    auto* eng = engine::Engine::Get();
    r.random_var = eng->NewVariable();
    r.random = std::make_unique<RandomState>();
    r.random->seed = ContextSeed(seed_, ctx);
    r.temp_var = eng->NewVariable();
    r.temp = std::make_unique<TempSpace>(ctx);
    return r;
  }

  std::mutex mu_;
  uint64_t seed_ = 0;
  std::map<Context, ContextResources> contexts_;
};

}  // namespace

ResourceManager* ResourceManager::Get() {
  static ResourceManager* inst = new ResourceManagerImpl();
  return inst;
}

}  // namespace weft

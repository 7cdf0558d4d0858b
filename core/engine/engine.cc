#include "core/engine/engine.h"

#include <atomic>
#include <cstdlib>
#include <forward_list>
#include <mutex>
#include <string>

#include "core/base/error.h"
#include "core/engine/blocking.h"
#include "core/engine/engine_impl.h"

namespace weft {
namespace engine {

void Engine::PushSync(SyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                      const std::vector<VarHandle>& mutable_vars, FnProperty prop, int priority,
                      const char* name, int64_t bytes_written) {
  PushAsync(
      [fn = std::move(fn)](RunContext rctx, CallbackOnComplete on_complete) {
        fn(rctx);
        on_complete();
      },
      ctx, const_vars, mutable_vars, prop, priority, name, 0, bytes_written);
}

void RunGuarded(const AsyncFn& fn, RunContext rctx, CallbackOnComplete cb) {
  try {
    fn(rctx, cb);
  } catch (...) {
    cb(std::current_exception());
  }
}

std::unique_ptr<Engine> Engine::Create(const std::string& type) {
  if (type == "NaiveEngine") return CreateNaiveEngine();
  if (type == "ThreadedEngine" || type == "ThreadedEnginePerDevice") return CreateThreadedEngine();
  Throw(ErrorKind::kValue, "WEFT_ENGINE_TYPE: expected NaiveEngine or ThreadedEngine, got '", type, "'");
}

namespace {
struct BlockingHooks {
  BlockEnterFn enter;
  BlockLeaveFn leave;
};
// Replaced whole, so a wait never pairs one setting's enter with another's leave. Every
// setting a process makes (a few: import, exit) stays in a list for its life, as a wait may
// still hold one.
std::atomic<const BlockingHooks*> g_blocking_hooks{nullptr};
std::mutex g_hooks_mu;
std::forward_list<BlockingHooks>& HookSettings() {
  static auto* settings = new std::forward_list<BlockingHooks>();  // outlives static destructors
  return *settings;
}
}  // namespace

void SetBlockingHooks(BlockEnterFn enter, BlockLeaveFn leave) {
  const BlockingHooks* set = nullptr;
  if (enter && leave) {
    std::lock_guard<std::mutex> lock(g_hooks_mu);
    HookSettings().push_front(BlockingHooks{enter, leave});
    set = &HookSettings().front();
  }
  g_blocking_hooks.store(set, std::memory_order_release);
}

BlockingScope::BlockingScope() {
  const BlockingHooks* h = g_blocking_hooks.load(std::memory_order_acquire);
  if (h == nullptr) return;
  leave_ = h->leave;
  token_ = h->enter();
}

BlockingScope::~BlockingScope() {
  if (leave_) leave_(token_);
}

Engine* Engine::Get() {
  // Leaked on purpose: operations may still be finishing while static objects are destroyed.
  static Engine* inst = [] {
    const char* t = std::getenv("WEFT_ENGINE_TYPE");
    return Create(t && *t ? t : "ThreadedEngine").release();
  }();
  return inst;
}

}  // namespace engine
}  // namespace weft

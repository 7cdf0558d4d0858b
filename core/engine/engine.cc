#include "core/engine/engine.h"

#include <cstdlib>
#include <string>

#include "core/base/error.h"
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

// Base structures shared by the engine implementations. Each engine derives its own
// variable and operator types from these.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>

#include "core/engine/engine.h"

namespace weft {
namespace engine {

struct Var {
  virtual ~Var() = default;
  // The error left by the last operation that wrote this variable, raised at waits.
  std::exception_ptr error;
  // Operations that wrote this variable and have completed: a reader that caches
  // something derived from the data (a oneDNN region's reordered weights) compares it to
  // know whether the data changed.
  std::atomic<uint64_t> writes{0};
};

struct Opr {
  virtual ~Opr() = default;
  AsyncFn fn;
  std::vector<VarHandle> const_vars;
  std::vector<VarHandle> mutable_vars;
  FnProperty prop = FnProperty::kNormal;
  std::string name;
};

std::unique_ptr<Engine> CreateNaiveEngine();
std::unique_ptr<Engine> CreateThreadedEngine();

// Engine::RunNowIfIdle, where the last `num_private` of mutable_vars are variables the
// caller made for this call and has shared with no other thread (a new output array):
// nothing can be pending on them or look at them meanwhile, so the threaded engine writes
// them without taking their locks. They must appear in no other position of either list.
// Other engines get a plain RunNowIfIdle.
bool RunNowIfIdle(Engine* engine, Context ctx, const std::vector<VarHandle>& const_vars,
                  const std::vector<VarHandle>& mutable_vars, SyncFnRef fn, const char* name, int64_t bytes_allocated,
                  size_t num_private);

// Runs fn on the calling thread and turns an exception into a stored error.
void RunGuarded(const AsyncFn& fn, RunContext rctx, CallbackOnComplete cb);

}  // namespace engine
}  // namespace weft

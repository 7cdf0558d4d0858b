// Base structures shared by the engine implementations. Each engine derives its own
// variable and operator types from these.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

#include "core/engine/engine.h"

namespace weft {
namespace engine {

// An operation's error. Every variable it reaches (the operation's outputs and, through the
// operations that then read them instead of running, theirs) holds the same record. The first
// wait that meets it raises it and marks it reported; as in MXNet, an error is raised once,
// and afterwards the variables that held it read as clean (with whatever values the failed
// operations left), so a program that caught it goes on.
struct EngineError {
  explicit EngineError(std::exception_ptr e) : error(std::move(e)) {}
  const std::exception_ptr error;
  std::atomic<bool> reported{false};
};
using ErrorRef = std::shared_ptr<EngineError>;

inline ErrorRef MakeError(std::exception_ptr e) { return e ? std::make_shared<EngineError>(std::move(e)) : nullptr; }
// Whether `e` is an error not raised yet.
inline bool Pending(const ErrorRef& e) { return e && !e->reported.load(std::memory_order_acquire); }
// Takes `e` for raising: its exception, or null when there is none or a wait raised it already.
inline std::exception_ptr Claim(const ErrorRef& e) {
  return e && !e->reported.exchange(true, std::memory_order_acq_rel) ? e->error : nullptr;
}

struct Var {
  virtual ~Var() = default;
  // The error left by the last operation that wrote this variable, raised at waits.
  ErrorRef error;
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

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

// Runs fn on the calling thread and turns an exception into a stored error.
void RunGuarded(const AsyncFn& fn, RunContext rctx, CallbackOnComplete cb);

}  // namespace engine
}  // namespace weft

// The dependency engine: closures are scheduled by the variables they read and write.
//
// Every array chunk, random generator and workspace owns a variable. Push(fn, ctx, reads,
// writes) runs fn once every earlier operation writing one of its reads, and every earlier
// operation touching one of its writes, has finished; writes to one variable keep push
// order and independent work runs in parallel. WaitForVar and WaitForAll are the only
// blocking points. An exception thrown by an operation is stored on the variables it
// writes (and on those written by anything that reads them afterwards) and raised by the
// next wait on any of them, once: as in MXNet, a raised error is reported, and no later
// wait raises it again (engine_impl.h, EngineError).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/context.h"

namespace weft {
namespace engine {

struct Var;
struct Opr;
using VarHandle = Var*;
using OprHandle = Opr*;

// What an operation gets when it runs: its device and, on a GPU, its stream.
struct RunContext {
  Context ctx;
  void* stream = nullptr;  // cudaStream_t on a GPU worker, null on CPU
};

// Handed to asynchronous operations; call exactly once when the work is done, with the
// error if it failed.
class CallbackOnComplete {
 public:
  CallbackOnComplete() = default;
  CallbackOnComplete(void (*fn)(void*, void*, std::exception_ptr), void* engine, void* param)
      : fn_(fn), engine_(engine), param_(param) {}
  void operator()(std::exception_ptr error = nullptr) const { fn_(engine_, param_, error); }

 private:
  void (*fn_)(void*, void*, std::exception_ptr) = nullptr;
  void* engine_ = nullptr;
  void* param_ = nullptr;
};

using SyncFn = std::function<void(RunContext)>;
using AsyncFn = std::function<void(RunContext, CallbackOnComplete)>;

// A non-owning reference to a callable taking a RunContext, for work that is over before
// the call that receives it returns (so nothing needs copying to the heap).
class SyncFnRef {
 public:
  template <typename F>
  explicit SyncFnRef(F& f) : obj_(&f), call_([](void* o, RunContext r) { (*static_cast<F*>(o))(r); }) {}
  void operator()(RunContext r) const { call_(obj_, r); }

 private:
  void* obj_;
  void (*call_)(void*, RunContext);
};

// Which worker pool runs an operation.
enum class FnProperty : int {
  kNormal = 0,      // compute on the context's device
  kCopyFromGPU = 1, // device-to-host copy stream
  kCopyToGPU = 2,   // host-to-device copy stream
  kCPUPrioritized = 3,
  kAsync = 4,       // returns at once and completes through the callback (I/O, network)
  // A small CPU computation: when nothing it depends on is pending, the pushing thread
  // may run it at once instead of waking a worker, whose hand-off costs more than the
  // work. Otherwise it is queued like kNormal.
  kCPUInline = 5,
};

constexpr int kDefaultPriority = 0;

class Engine {
 public:
  // The process-wide engine, chosen by WEFT_ENGINE_TYPE: "ThreadedEngine" (default) or
  // "NaiveEngine" (runs each push synchronously in the caller, for debugging).
  static Engine* Get();
  // Builds an engine of the named type, for tests that compare the two.
  static std::unique_ptr<Engine> Create(const std::string& type);
  virtual ~Engine() = default;

  virtual VarHandle NewVariable() = 0;
  // Deletes `var` once every pending operation on it has finished; `on_delete` (may be
  // empty) runs then, as an operation writing the variable (freeing its memory, say).
  virtual void DeleteVariable(SyncFn on_delete, Context ctx, VarHandle var) = 0;

  // Deletes `var` at once and returns true when nothing is pending on it (the common case,
  // an array dropped after its last use); otherwise does nothing and returns false, and
  // the caller uses DeleteVariable. The caller then frees what the variable guarded
  // itself, without wrapping that in a function object.
  virtual bool DeleteVariableIfIdle(Context ctx, VarHandle var) {
    (void)ctx, (void)var;
    return false;
  }

  // Pre-created operators, for work pushed again and again with the same variables.
  virtual OprHandle NewOperator(AsyncFn fn, const std::vector<VarHandle>& const_vars,
                                const std::vector<VarHandle>& mutable_vars,
                                FnProperty prop = FnProperty::kNormal, const char* name = nullptr) = 0;
  virtual void DeleteOperator(OprHandle op) = 0;
  virtual void Push(OprHandle op, Context ctx, int priority = kDefaultPriority) = 0;

  // `name` is what the profiler records the operation as (null: not recorded); it must
  // live as long as the process (a registry name, a literal, profiler::Intern).
  // `bytes_allocated` is what the caller allocated for it (its outputs), for the profile.
  // `bytes_written` is the size of what it writes (its outputs), which it keeps alive while
  // pending: the backpressure bounds their sum per device (WEFT_ENGINE_MAX_PENDING_BYTES).
  virtual void PushAsync(AsyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                         const std::vector<VarHandle>& mutable_vars, FnProperty prop = FnProperty::kNormal,
                         int priority = kDefaultPriority, const char* name = nullptr, int64_t bytes_allocated = 0,
                         int64_t bytes_written = 0) = 0;
  // Runs fn (which must not block on the engine) and completes when it returns.
  // `bytes_written` as for PushAsync.
  void PushSync(SyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                const std::vector<VarHandle>& mutable_vars, FnProperty prop = FnProperty::kNormal,
                int priority = kDefaultPriority, const char* name = nullptr, int64_t bytes_written = 0);

  // Runs fn on the calling thread, before returning true, when every variable can be
  // granted at once (nothing pushed earlier is pending on any of them); otherwise does
  // nothing and returns false, and the caller pushes instead. For small CPU work that
  // must not block on the engine: it skips the allocations of a push. Errors behave as
  // for a push: an error stored on a read variable passes to the written ones without
  // running fn, and an exception from fn is stored on the written ones.
  // `name` and `bytes_allocated` as for PushAsync.
  virtual bool RunNowIfIdle(Context ctx, const std::vector<VarHandle>& const_vars,
                            const std::vector<VarHandle>& mutable_vars, SyncFnRef fn, const char* name = nullptr,
                            int64_t bytes_allocated = 0) {
    (void)ctx, (void)const_vars, (void)mutable_vars, (void)fn, (void)name, (void)bytes_allocated;
    return false;
  }
  // Block until every operation pushed so far that writes `var` has finished; rethrow the
  // error stored on `var`, if any (the error stays stored until the variable is written
  // again successfully).
  virtual void WaitForVar(VarHandle var) = 0;
  // Block until everything pushed so far has finished; rethrow the first error raised by
  // an operation since the last WaitForAll.
  virtual void WaitForAll() = 0;

  // Stops worker threads after draining; the engine must not be used afterwards.
  virtual void Shutdown() {}

  // Waits while a push to any device would wait for room (the backpressure bound), with
  // the blocking hooks run around the wait (blocking.h), and returns at once otherwise.
  // A push itself waits holding whatever its caller holds, since it may come from inside
  // the library's own critical sections; a front end that holds a lock of its own while it
  // pushes (Python's GIL) calls this first, where it holds no lock of the library, so that
  // the wait happens with its lock let go (a custom operator's callback, which takes that
  // lock, may be what the queue waits for).
  virtual void WaitForRoomUnlocked() {}
};

// Marks the calling thread's pushes as part of work the engine is already running (the
// callbacks of custom operators and of control-flow operators run on threads of their
// own): like a worker's own pushes they never wait for room, since what they would wait
// for may be queued behind the very operation they serve.
void SetPushesServeRunningWork(bool on);
bool PushesServeRunningWork();

}  // namespace engine
}  // namespace weft

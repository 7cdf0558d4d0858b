// The naive engine runs every operation synchronously on the pushing thread, so a stack
// trace points at the caller. Asynchronous operations are waited for before Push returns.
//
// Pushes from several threads are serialised by one lock: two threads writing the same
// variable must not run at once, and with no queues there is nothing else to order them.
// The lock is recursive because an operation may push (an array freed inside an operation
// deletes its variable).
#include <condition_variable>
#include <mutex>

#include "core/base/error.h"
#include "core/engine/blocking.h"
#include "core/engine/engine_impl.h"
#include "core/profiler/profiler.h"

#ifdef WEFT_USE_CUDA
#include "core/base/cuda_utils.h"
#endif

namespace weft {
namespace engine {
namespace {

struct NaiveOpr : Opr {};

struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

void CheckVars(const std::vector<VarHandle>& vars, const char* list) {
  for (VarHandle v : vars)
    WEFT_CHECK(v != nullptr, kValue, "engine: expected a variable in the ", list, " list, got a null handle");
}

class NaiveEngine : public Engine {
 public:
  VarHandle NewVariable() override { return new Var(); }

  void DeleteVariable(SyncFn on_delete, Context ctx, VarHandle var) override {
    WEFT_CHECK(var != nullptr, kValue, "DeleteVariable: expected a variable, got a null handle");
    std::lock_guard<std::recursive_mutex> lock(mu_);
    // As in the threaded engine, a failing on_delete is reported at WaitForAll; it must
    // not escape into the destructor that usually calls this.
    if (on_delete) {
      try {
        on_delete(RunContext{ctx, nullptr});
      } catch (...) {
        if (!Pending(first_error_)) first_error_ = MakeError(std::current_exception());
      }
    }
    delete var;
  }

  OprHandle NewOperator(AsyncFn fn, const std::vector<VarHandle>& const_vars,
                        const std::vector<VarHandle>& mutable_vars, FnProperty prop,
                        const char* name) override {
    WEFT_CHECK(fn != nullptr, kValue, "NewOperator: expected a function, got an empty one");
    CheckVars(const_vars, "read");
    CheckVars(mutable_vars, "write");
    auto* op = new NaiveOpr();
    op->fn = std::move(fn);
    op->const_vars = const_vars;
    op->mutable_vars = mutable_vars;
    op->prop = prop;
    if (name) op->name = name;
    return op;
  }

  void DeleteOperator(OprHandle op) override { delete op; }

  void Push(OprHandle op, Context ctx, int) override {
    WEFT_CHECK(op != nullptr, kValue, "Push: expected an operator, got a null handle");
    Run(op->fn, ctx, op->const_vars, op->mutable_vars, op->name.empty() ? nullptr : op->name.c_str(), 0, true);
  }

  void PushAsync(AsyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                 const std::vector<VarHandle>& mutable_vars, FnProperty, int, const char* name,
                 int64_t bytes_allocated, int64_t) override {
    WEFT_CHECK(fn != nullptr, kValue, "PushAsync: expected a function, got an empty one");
    CheckVars(const_vars, "read");
    CheckVars(mutable_vars, "write");
    Run(fn, ctx, const_vars, mutable_vars, name, bytes_allocated, false);
  }

  void WaitForVar(VarHandle var) override {
    WEFT_CHECK(var != nullptr, kValue, "WaitForVar: expected a variable, got a null handle");
    ErrorRef e;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      e = var->error;
    }
    // Raised here, it is not raised again by WaitForAll or another wait (it is reported).
    if (std::exception_ptr ex = Claim(e)) std::rethrow_exception(ex);
  }

  void WaitForAll() override {
    ErrorRef e;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      std::swap(e, first_error_);
    }
    if (std::exception_ptr ex = Claim(e)) std::rethrow_exception(ex);
  }

 private:
  static void OnComplete(void*, void* param, std::exception_ptr error) {
    auto* c = static_cast<Completion*>(param);
    std::lock_guard<std::mutex> lock(c->mu);
    c->error = error;
    c->done = true;
    c->cv.notify_all();
  }

  // `name` (null: not profiled) must live as long as the process unless `intern_name`.
  void Run(const AsyncFn& fn, Context ctx, const std::vector<VarHandle>& const_vars,
           const std::vector<VarHandle>& mutable_vars, const char* name, int64_t bytes_allocated,
           bool intern_name) {
    std::lock_guard<std::recursive_mutex> run_lock(mu_);
    // An error on an input flows to the outputs instead of running on bad data.
    ErrorRef upstream;
    for (VarHandle v : const_vars) if (Pending(v->error)) upstream = v->error;
    ErrorRef error = upstream;
    if (!error) {
      // The one branch the profiler costs when off.
      bool profiled = __builtin_expect(profiler::ActiveModes() != 0, 0) && name != nullptr &&
                      profiler::Active(profiler::kSymbolic | profiler::kImperative);
      int64_t start = 0, alloc = 0;
      if (profiled) {
        if (intern_name) name = profiler::Intern(name);
        alloc = profiler::ThreadAllocatedBytes();
        start = profiler::NowNs();
      }
      Completion c;
      RunGuarded(fn, RunContext{ctx, nullptr}, CallbackOnComplete(&NaiveEngine::OnComplete, this, &c));
      std::unique_lock<std::mutex> lock(c.mu);
      if (!c.done) {
        // An asynchronous function (a custom operator's callback) may need the front end's
        // lock; the scope is left with c.mu free.
        lock.unlock();
        {
          BlockingScope blocking;
          std::unique_lock<std::mutex> wait_lock(c.mu);
          c.cv.wait(wait_lock, [&] { return c.done; });
        }
        lock.lock();
      }
      error = MakeError(c.error);
      lock.unlock();
#ifdef WEFT_USE_CUDA
      // GPU work ran on the legacy stream with no completion event: it is over, and any
      // asynchronous CUDA error belongs to this operation, only once the stream is.
      if (ctx.is_gpu() && !error) {
        try {
          cuda::DeviceGuard guard(ctx.dev_id);
          cuda::Check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize", &ctx);
        } catch (...) {
          error = MakeError(std::current_exception());
        }
      }
#endif
      if (profiled)
        profiler::RecordOperation(name, ctx, start, profiler::NowNs(),
                                  bytes_allocated + profiler::ThreadAllocatedBytes() - alloc);
    }
    for (VarHandle v : mutable_vars) {
      v->error = error;
      v->writes.fetch_add(1, std::memory_order_release);
    }
    if (error && !Pending(first_error_)) first_error_ = error;
  }

  std::recursive_mutex mu_;
  ErrorRef first_error_;
};

}  // namespace

std::unique_ptr<Engine> CreateNaiveEngine() { return std::make_unique<NaiveEngine>(); }

}  // namespace engine
}  // namespace weft

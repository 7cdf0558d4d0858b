// The naive engine runs every operation synchronously on the pushing thread, so a stack
// trace points at the caller. Asynchronous operations are waited for before Push returns.
#include <condition_variable>
#include <mutex>

#include "core/engine/engine_impl.h"

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

class NaiveEngine : public Engine {
 public:
  VarHandle NewVariable() override { return new Var(); }

  void DeleteVariable(SyncFn on_delete, Context ctx, VarHandle var) override {
    if (on_delete) on_delete(RunContext{ctx, nullptr});
    delete var;
  }

  OprHandle NewOperator(AsyncFn fn, const std::vector<VarHandle>& const_vars,
                        const std::vector<VarHandle>& mutable_vars, FnProperty prop,
                        const char* name) override {
    auto* op = new NaiveOpr();
    op->fn = std::move(fn);
    op->const_vars = const_vars;
    op->mutable_vars = mutable_vars;
    op->prop = prop;
    if (name) op->name = name;
    return op;
  }

  void DeleteOperator(OprHandle op) override { delete op; }

  void Push(OprHandle op, Context ctx, int) override { Run(op->fn, ctx, op->const_vars, op->mutable_vars); }

  void PushAsync(AsyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                 const std::vector<VarHandle>& mutable_vars, FnProperty, int, const char*) override {
    Run(fn, ctx, const_vars, mutable_vars);
  }

  void WaitForVar(VarHandle var) override {
    if (var->error) std::rethrow_exception(var->error);
  }

  void WaitForAll() override {
    std::exception_ptr e = first_error_;
    first_error_ = nullptr;
    if (e) std::rethrow_exception(e);
  }

 private:
  static void OnComplete(void*, void* param, std::exception_ptr error) {
    auto* c = static_cast<Completion*>(param);
    std::lock_guard<std::mutex> lock(c->mu);
    c->error = error;
    c->done = true;
    c->cv.notify_all();
  }

  void Run(const AsyncFn& fn, Context ctx, const std::vector<VarHandle>& const_vars,
           const std::vector<VarHandle>& mutable_vars) {
    // An error on an input flows to the outputs instead of running on bad data.
    std::exception_ptr upstream;
    for (VarHandle v : const_vars) if (v->error) upstream = v->error;
    std::exception_ptr error = upstream;
    if (!error) {
      Completion c;
      RunGuarded(fn, RunContext{ctx, nullptr}, CallbackOnComplete(&NaiveEngine::OnComplete, this, &c));
      std::unique_lock<std::mutex> lock(c.mu);
      c.cv.wait(lock, [&] { return c.done; });
      error = c.error;
    }
    for (VarHandle v : mutable_vars) v->error = error;
    if (error && !first_error_) first_error_ = error;
  }

  std::exception_ptr first_error_;
};

}  // namespace

std::unique_ptr<Engine> CreateNaiveEngine() { return std::make_unique<NaiveEngine>(); }

}  // namespace engine
}  // namespace weft

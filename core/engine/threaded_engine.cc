// The threaded engine: operations wait in the queues of the variables they touch
// (threaded_var.h) and, once granted everywhere, go to the worker pool of their device
// (worker_pool.h). There is no global lock on the push path: a push locks only its own
// variables, in address order, so pushes from several threads stay consistent.
//
// Pools: CPU compute (WEFT_CPU_WORKER_NTHREADS, default 1: kernels use OpenMP inside),
// CPU prioritized (WEFT_CPU_PRIORITY_NTHREADS, default 1), and per GPU a compute pool
// (WEFT_GPU_WORKER_NTHREADS, default 2) and a copy pool for kCopyToGPU/kCopyFromGPU
// (WEFT_GPU_COPY_NTHREADS, default 1), each GPU thread with its own stream.
//
// GPU completion: an operation on a GPU stream is complete, for the engine, once its work is
// queued; an event recorded after it goes on the variables it touched (threaded_var.h), and
// whoever touches them next waits for that event: on its own stream (cudaStreamWaitEvent)
// when it runs on another GPU stream, on the host (cudaEventSynchronize) when it runs on
// the host, not at all on the same stream. A deleted GPU variable's memory waits in the
// storage pool for the same events (gpu_event.h). WEFT_GPU_SYNC_EACH_OP=1 (and a recording
// profiler, so that operation times are GPU times) waits for each operation's stream
// instead, so that an asynchronous CUDA error names the operation that caused it.
//
// At process exit the engines still alive (Engine::Get() is never destroyed) are drained
// for at most WEFT_ENGINE_EXIT_WAIT_S seconds (default 10), so pushed work finishes
// before static objects and the CUDA runtime go away; a stuck operation cannot hang exit.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <typeinfo>
#include <vector>

#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/engine/blocking.h"
#include "core/engine/fork.h"
#include "core/engine/opr_block.h"
#include "core/engine/worker_pool.h"
#include "core/profiler/profiler.h"

#ifdef WEFT_USE_CUDA
#include "core/base/cuda_utils.h"
#include "core/storage/gpu_event.h"
#endif

namespace weft {
namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

long EnvPositive(const char* name, long fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  WEFT_CHECK(*end == '\0' && v >= 0 && v <= 4096, kValue, name, ": expected a non-negative integer, got '", s, "'");
  return v;
}

// How many operations pushed for one pool may be pending (queued or running) before a
// thread pushing from outside the engine waits for some to finish: without a bound, a loop
// that never reads a result queues without end, its memory growing, and a final wait takes
// as long as everything queued. 0 turns the bound off.
int64_t EnvCount(const char* name, int64_t fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  WEFT_CHECK(*end == '\0' && v >= 0 && errno == 0, kValue, name, ": expected a non-negative integer, got '", s, "'");
  return v;
}

int64_t EnvMaxPending() { return EnvCount("WEFT_ENGINE_MAX_PENDING", 4096); }

// The same bound by what the pending operations write, in bytes: the count alone lets 4096
// pending operations with 64 MB outputs each hold 256 GB. Operations that declare no bytes
// (pushes other than operators and copies) count only toward the count. An operation
// larger than the bound still runs: it waits until nothing else of its pool is pending.
int64_t EnvMaxPendingBytes() { return EnvCount("WEFT_ENGINE_MAX_PENDING_BYTES", int64_t{2} << 30); }

bool EnvFlag(const char* name) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  WEFT_CHECK((s[0] == '0' || s[0] == '1') && s[1] == '\0', kValue, name, ": expected 0 or 1, got '", s, "'");
  return s[0] == '1';
}

int EnvThreads(const char* name, int fallback) {
  long v = EnvPositive(name, fallback);
  WEFT_CHECK(v > 0, kValue, name, ": expected at least 1 thread, got ", v);
  return static_cast<int>(v);
}

class ThreadedEngine;

// The engines alive in the process, for the drain at exit. Leaked, like Engine::Get()'s
// engine, so that it outlives every static destructor.
struct LiveEngines {
  std::mutex mu;
  std::vector<ThreadedEngine*> engines;
  std::vector<int> hooked_devices;  // -1 for the host, else a GPU id
};

LiveEngines& Live() {
  static LiveEngines* live = new LiveEngines();
  return *live;
}

void DrainAtExit();
void RegisterAtFork();

class ThreadedEngine final : public Engine, public BlockRunner {
 public:
  ThreadedEngine() {
    int cpu_threads = EnvThreads("WEFT_CPU_WORKER_NTHREADS", 1);
    int priority_threads = EnvThreads("WEFT_CPU_PRIORITY_NTHREADS", 1);
    int gpu_threads = EnvThreads("WEFT_GPU_WORKER_NTHREADS", 2);
    int copy_threads = EnvThreads("WEFT_GPU_COPY_NTHREADS", 1);
    cpu_pool_ = std::make_unique<WorkerPool>("cpu", cpu_threads, Context::CPU(), this);
    cpu_priority_pool_ = std::make_unique<WorkerPool>("cpu_prioritized", priority_threads, Context::CPU(), this);
    for (int i = 0, n = NumGPUs(); i < n; ++i) {
      gpu_pools_.push_back(std::make_unique<WorkerPool>("gpu", gpu_threads, Context::GPU(i), this));
      gpu_copy_pools_.push_back(std::make_unique<WorkerPool>("gpu_copy", copy_threads, Context::GPU(i), this));
    }
    RegisterAtFork();
    std::lock_guard<std::mutex> lock(Live().mu);
    Live().engines.push_back(this);
  }

  ~ThreadedEngine() override {
    Shutdown();
    std::lock_guard<std::mutex> lock(Live().mu);
    auto& v = Live().engines;
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }

  VarHandle NewVariable() override { return new ThreadedVar(); }

  void DeleteVariable(SyncFn on_delete, Context ctx, VarHandle var) override {
    CheckUsable();
    WEFT_CHECK(var != nullptr, kValue, "DeleteVariable: expected a variable, got a null handle");
    auto* v = static_cast<ThreadedVar*>(var);
    if (!ctx.is_gpu() && v->Idle()) {
      // Nothing is pending and, the last reference being gone, nothing more can come: free
      // it here, without a block (the common case, an array dropped after its last use).
      try {
#ifdef WEFT_USE_CUDA
        // A host array a GPU copy wrote or read (pinned memory) may still be in use by
        // that copy's stream.
        HostWaitAll(v);
#endif
        if (on_delete) on_delete(RunContext{ctx, nullptr});
      } catch (...) {
        RecordError(MakeError(std::current_exception()));
      }
      delete v;
      return;
    }
    auto blk = std::make_unique<OprBlock>(1);
    blk->pool = PoolFor(ctx, FnProperty::kNormal);
    blk->ctx = ctx;
    blk->nslots = 1;
    blk->slots[0].var = v;
    blk->slots[0].write = true;
    blk->delete_var = v;
    // A CPU variable that became idle meanwhile is deleted here rather than by a worker.
    blk->run_inline = !ctx.is_gpu();
    if (on_delete) {
      blk->fn = [f = std::move(on_delete)](RunContext rctx, CallbackOnComplete done) {
        f(rctx);
        done();
      };
    } else {
      // Nothing to run: the variable goes as soon as its last operation is done.
      blk->internal = true;
      blk->fn = [](RunContext, CallbackOnComplete done) { done(); };
    }
    Submit(blk.release());
  }

  bool DeleteVariableIfIdle(Context ctx, VarHandle var) override {
    if (ctx.is_gpu() || var == nullptr || shut_down_.load(std::memory_order_relaxed)) return false;
    auto* v = static_cast<ThreadedVar*>(var);
    if (!v->Idle()) return false;
#ifdef WEFT_USE_CUDA
    // As in DeleteVariable: a host array a GPU copy used may still be in use by its stream.
    try {
      HostWaitAll(v);
    } catch (...) {
      RecordError(MakeError(std::current_exception()));
    }
#endif
    delete v;
    return true;
  }

  OprHandle NewOperator(AsyncFn fn, const std::vector<VarHandle>& const_vars,
                        const std::vector<VarHandle>& mutable_vars, FnProperty prop, const char* name) override {
    WEFT_CHECK(fn != nullptr, kValue, "NewOperator: expected a function, got an empty one");
    auto op = std::make_unique<ThreadedOpr>();
    op->slots.resize(const_vars.size() + mutable_vars.size());
    op->slots.resize(BuildSlots(const_vars, mutable_vars, op->slots.data()));
    op->fn = std::move(fn);
    op->const_vars = const_vars;
    op->mutable_vars = mutable_vars;
    op->prop = prop;
    if (name) op->name = name;
    return op.release();
  }

  void DeleteOperator(OprHandle op) override {
    if (op == nullptr) return;
    auto* opr = static_cast<ThreadedOpr*>(op);
    if (opr->refs.fetch_add(1, std::memory_order_acq_rel) == 0) delete opr;
  }

  void Push(OprHandle op, Context ctx, int priority) override {
    CheckUsable();
    WEFT_CHECK(op != nullptr, kValue, "Push: expected an operator, got a null handle");
    auto* opr = static_cast<ThreadedOpr*>(op);
    WorkerPool* pool = PoolFor(ctx, opr->prop);
    WaitForRoom(pool, 0);
    auto* blk = new OprBlock(static_cast<uint32_t>(opr->slots.size()));
    blk->nslots = static_cast<uint32_t>(opr->slots.size());
    std::copy(opr->slots.begin(), opr->slots.end(), blk->slots);
    blk->opr = opr;
    blk->ctx = ctx;
    blk->priority = priority;
    blk->pool = pool;
    opr->refs.fetch_add(2, std::memory_order_relaxed);
    Submit(blk);
  }

  void PushAsync(AsyncFn fn, Context ctx, const std::vector<VarHandle>& const_vars,
                 const std::vector<VarHandle>& mutable_vars, FnProperty prop, int priority, const char* name,
                 int64_t bytes_allocated, int64_t bytes_written) override {
    CheckUsable();
    WEFT_CHECK(fn != nullptr, kValue, "PushAsync: expected a function, got an empty one");
    WEFT_CHECK(bytes_written >= 0, kValue, "PushAsync: expected bytes_written >= 0, got ", bytes_written);
    WorkerPool* pool = PoolFor(ctx, prop);
    WaitForRoom(pool, bytes_written);
    auto blk = std::make_unique<OprBlock>(static_cast<uint32_t>(const_vars.size() + mutable_vars.size()));
    blk->nslots = BuildSlots(const_vars, mutable_vars, blk->slots);
    blk->fn = std::move(fn);
    blk->ctx = ctx;
    blk->priority = priority;
    blk->pool = pool;
    blk->run_inline = prop == FnProperty::kCPUInline && !ctx.is_gpu();
    blk->prof_name = name;
    blk->prof_bytes = bytes_allocated;
    blk->bytes_written = bytes_written;
    Submit(blk.release());
  }

  bool RunNowIfIdle(Context ctx, const std::vector<VarHandle>& const_vars,
                    const std::vector<VarHandle>& mutable_vars, SyncFnRef fn, const char* name,
                    int64_t bytes_allocated) override {
    return RunNow(ctx, const_vars, mutable_vars, fn, name, bytes_allocated, 0);
  }

  // RunNowIfIdle with the last num_private written variables private (engine_impl.h).
  bool RunNow(Context ctx, const std::vector<VarHandle>& const_vars, const std::vector<VarHandle>& mutable_vars,
              SyncFnRef fn, const char* name, int64_t bytes_allocated, size_t num_private) {
    if (ctx.is_gpu()) return false;
    CheckUsable();
    WEFT_CHECK(num_private <= mutable_vars.size(), kValue, "RunNowIfIdle: ", num_private,
               " private variables but only ", mutable_vars.size(), " written ones");
    const size_t num_shared = mutable_vars.size() - num_private;
    for (size_t i = num_shared; i < mutable_vars.size(); ++i)
      WEFT_CHECK(mutable_vars[i] != nullptr, kValue, "engine: expected a variable in the write list, got a null handle");
    // No block: the slots live in this frame (an operation touches a few variables) and the
    // run completes before the call returns, so nothing needs the queue machinery of a push.
    constexpr size_t kFrameSlots = 8;
    VarSlot frame[kFrameSlots];
    std::unique_ptr<VarSlot[]> heap;
    size_t total = const_vars.size() + num_shared;
    VarSlot* slots = frame;
    if (total > kFrameSlots) {
      heap = std::make_unique<VarSlot[]>(total);
      slots = heap.get();
    }
    uint32_t n = BuildSlots(const_vars.data(), const_vars.size(), mutable_vars.data(), num_shared, slots);
    // Under the locks of all its variables the run either takes every grant at once or
    // touches nothing, so a refusal leaves no trace and the caller can push instead.
    for (uint32_t i = 0; i < n; ++i) slots[i].var->mu.lock();
    bool idle = true;
    for (uint32_t i = 0; i < n && idle; ++i) idle = slots[i].var->GrantableLocked(slots[i].write);
    if (idle)
      for (uint32_t i = 0; i < n; ++i) slots[i].var->AppendLocked(&slots[i]);
    for (uint32_t i = 0; i < n; ++i) slots[i].var->mu.unlock();
    if (!idle) return false;

    // Granted: the variables' errors and GPU events are ours to read.
    ErrorRef error;
    for (int pass = 0; pass < 2 && !error; ++pass)  // read variables first, then written ones
      for (uint32_t i = 0; i < n && !error; ++i)
        if (slots[i].read == (pass == 0) && slots[i].error_at_grant) error = slots[i].var->error;
#ifdef WEFT_USE_CUDA
    if (!error) {
      try {
        std::vector<gpu::Event*> unused_fence;
        WaitForGpuInputs(slots, n, RunContext{ctx, nullptr}, false, &unused_fence);
      } catch (...) {
        error = MakeError(std::current_exception());
      }
    }
#endif
    if (!error) {
      // The profiler's only cost when off: this one branch.
      const bool timed = __builtin_expect(profiler::ActiveModes() != 0, 0) && name != nullptr &&
                         profiler::Active(profiler::kSymbolic | profiler::kImperative);
      int64_t alloc = 0, start = 0;
      if (timed) {
        alloc = profiler::ThreadAllocatedBytes();
        start = profiler::NowNs();
      }
      try {
        fn(RunContext{ctx, nullptr});
      } catch (...) {
        error = MakeError(std::current_exception());
      }
      if (timed)
        profiler::RecordOperation(name, ctx, start, profiler::NowNs(),
                                  bytes_allocated + profiler::ThreadAllocatedBytes() - alloc);
    }
    if (Pending(error)) RecordError(error);
    // The private variables: only this thread knows them, so no lock and no queue.
    for (size_t i = num_shared; i < mutable_vars.size(); ++i) {
      auto* v = static_cast<ThreadedVar*>(mutable_vars[i]);
      v->error = error;
      v->writes.fetch_add(1, std::memory_order_release);
    }
    ReadyList ready;
    ReleaseSlots(slots, n, error, false, nullptr, true, &ready);
    DispatchReady(ready);
    return true;
  }

  void WaitForVar(VarHandle var) override {
    CheckNotInWorker("WaitForVar");
    WEFT_CHECK(var != nullptr, kValue, "WaitForVar: expected a variable, got a null handle");
    auto* v = static_cast<ThreadedVar*>(var);
    ErrorRef error;
#ifdef WEFT_USE_CUDA
    // The last write's GPU work, which may still run after the engine saw it complete.
    struct EventRef {
      gpu::Event* ev = nullptr;
      ~EventRef() { gpu::Release(ev); }
    } last_write;
#endif
    if (v->HasPendingWrite(&error)) {
      // A read of the variable becomes ready exactly when the writes before it are done.
      struct Waiter {
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
        ErrorRef error;
      } w;
      auto* blk = new OprBlock(1);
      blk->internal = true;
      blk->nslots = 1;
      blk->slots[0].var = v;
      blk->slots[0].read = true;
      blk->fn = [&, v](RunContext, CallbackOnComplete done) {
#ifdef WEFT_USE_CUDA
        // Taken while the read is granted, when no write can replace it.
        last_write.ev = v->write_event;
        if (last_write.ev) gpu::Retain(last_write.ev);
#endif
        done();
        std::lock_guard<std::mutex> lock(w.mu);
        w.error = v->error;
        w.done = true;
        w.cv.notify_all();
      };
      Submit(blk);
      BlockingScope blocking;  // outside w.mu: leaving it may wait for the front end's lock
      std::unique_lock<std::mutex> lock(w.mu);
      w.cv.wait(lock, [&] { return w.done; });
      error = w.error;
    }
#ifdef WEFT_USE_CUDA
    else {
      std::lock_guard<VarLock> lock(v->mu);
      last_write.ev = v->write_event;
      if (last_write.ev) gpu::Retain(last_write.ev);
    }
#endif
    // Raised here, it is not raised again by WaitForAll or another wait (it is reported).
    if (std::exception_ptr ex = Claim(error)) std::rethrow_exception(ex);
#ifdef WEFT_USE_CUDA
    if (last_write.ev) gpu::HostWait(last_write.ev);
#endif
  }

  void WaitForAll() override {
    CheckNotInWorker("WaitForAll");
    DrainUntil(Clock::time_point::max());
#ifdef WEFT_USE_CUDA
    // Every operation is complete for the engine; their GPU work may still be queued.
    std::exception_ptr gpu_error;
    uint64_t used = gpu_used_.load(std::memory_order_acquire);
    for (int d = 0; d < 64 && used != 0; ++d) {
      if (!(used & (uint64_t{1} << d))) continue;
      used &= ~(uint64_t{1} << d);
      try {
        cuda::DeviceGuard guard(d);
        Context c = Context::GPU(d);
        cuda::Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (WaitForAll)", &c);
      } catch (...) {
        if (!gpu_error) gpu_error = std::current_exception();
      }
    }
#endif
    ErrorRef error;
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      std::swap(error, first_error_);
    }
    if (std::exception_ptr ex = Claim(error)) std::rethrow_exception(ex);
#ifdef WEFT_USE_CUDA
    if (gpu_error) std::rethrow_exception(gpu_error);
#endif
  }

  void Shutdown() override {
    CheckNotInWorker("Shutdown");
    if (shut_down_.exchange(true)) return;
    DrainUntil(Clock::time_point::max());
    cpu_pool_->Stop();
    cpu_priority_pool_->Stop();
    for (auto& p : gpu_pools_) p->Stop();
    for (auto& p : gpu_copy_pools_) p->Stop();
  }

  // Around a fork: every pushed operation finishes, then the worker threads stop (to start
  // again with the next push, in the parent and in the child).
  void StopThreadsForFork() {
    DrainUntil(Clock::time_point::max());
    cpu_pool_->Stop();
    cpu_priority_pool_->Stop();
    for (auto& p : gpu_pools_) p->Stop();
    for (auto& p : gpu_copy_pools_) p->Stop();
  }

  void ResumeThreadsAfterFork() {
    if (shut_down_.load()) return;
    cpu_pool_->Resume();
    cpu_priority_pool_->Resume();
    for (auto& p : gpu_pools_) p->Resume();
    for (auto& p : gpu_copy_pools_) p->Resume();
  }

  // Waits until nothing is pending or the deadline passes; false on timeout.
  bool DrainUntil(Clock::time_point deadline) {
    if (pending_.load() == 0) return true;
    BlockingScope blocking;
    std::unique_lock<std::mutex> lock(wait_mu_);
    waiters_.fetch_add(1);
    bool drained = true;
    while (pending_.load() != 0) {
      if (deadline == Clock::time_point::max()) {
        wait_cv_.wait(lock);
      } else if (wait_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        drained = pending_.load() == 0;
        break;
      }
    }
    waiters_.fetch_sub(1);
    return drained;
  }

  void RunBlock(OprBlock* blk, const RunContext& rctx, const std::exception_ptr& setup_error) override {
    // The profiler's only cost when off: this one branch per operation.
    if (__builtin_expect(profiler::ActiveModes() != 0, 0)) {
      RunBlockImpl<true>(blk, rctx, setup_error);
    } else {
      RunBlockImpl<false>(blk, rctx, setup_error);
    }
  }

  // kProfile: the operation is timed on this thread, from the call of its function to its
  // completion (after the stream sync on a GPU) or, for an asynchronous one, to the return
  // of the function that launched it.
  template <bool kProfile>
  void RunBlockImpl(OprBlock* blk, const RunContext& rctx, const std::exception_ptr& setup_error) {
    ErrorRef upstream = MakeError(setup_error);
    if (!upstream && !blk->internal) {
      // As MXNet's engine: an error not raised yet on a read variable, else on a written
      // one (a random generator or workspace a failed operation wrote), is this
      // operation's. A wait that raises it then clears it for all of them at once.
      // "Not raised yet" as of the grant (VarSlot::error_at_grant): a wait granted beside
      // this operation may raise the error before a worker picks the operation up.
      for (int pass = 0; pass < 2 && !upstream; ++pass)
        for (uint32_t i = 0; i < blk->nslots && !upstream; ++i) {
          const VarSlot& s = blk->slots[i];
          if (s.read == (pass == 0) && s.error_at_grant) upstream = s.var->error;
        }
    }
    if (upstream) {
      // An input is broken: the outputs get its error instead of being computed from it.
      blk->error = upstream;
      Complete(blk);
      return;
    }
#ifdef WEFT_USE_CUDA
    // The events the deletion of a GPU variable must see done before its memory is reused.
    std::vector<gpu::Event*> fence;
    if (!blk->internal) {
      try {
        WaitForGpuInputs(blk->slots, blk->nslots, rctx, blk->delete_var != nullptr, &fence);
      } catch (...) {
        blk->error = MakeError(std::current_exception());
        Complete(blk);
        return;
      }
    }
#endif
    blk->run_state.store(kRunning, std::memory_order_relaxed);
    const char* prof_name = nullptr;
    int64_t prof_start = 0, prof_alloc = 0, prof_bytes = 0;
    if constexpr (kProfile) {
      prof_name = blk->prof_name;
      prof_bytes = blk->prof_bytes;
      // A pre-created operator's name lives with it; the record outlives it.
      if (prof_name == nullptr && blk->opr != nullptr && !blk->opr->name.empty())
        prof_name = profiler::Intern(blk->opr->name);
      if (!profiler::Active(profiler::kSymbolic | profiler::kImperative)) prof_name = nullptr;
      prof_alloc = profiler::ThreadAllocatedBytes();
      prof_start = profiler::NowNs();
    }
    auto record = [&] {
      if constexpr (kProfile) {
        if (prof_name != nullptr)
          profiler::RecordOperation(prof_name, rctx.ctx, prof_start, profiler::NowNs(),
                                    prof_bytes + profiler::ThreadAllocatedBytes() - prof_alloc);
      }
    };
    std::exception_ptr thrown;
    try {
#ifdef WEFT_USE_CUDA
      // Only while the function runs: the fence points into the variable being deleted.
      gpu::FreeFenceScope fence_scope(fence.empty() ? nullptr : &fence);
#endif
      blk->Fn()(rctx, CallbackOnComplete(&ThreadedEngine::OnCallback, this, blk));
    } catch (...) {
      thrown = std::current_exception();
    }
    if (thrown) {
      // A function that throws has not handed its callback on: the worker finishes it.
      blk->run_state.exchange(kCalledBack, std::memory_order_acq_rel);
      if (!blk->error) blk->error = MakeError(thrown);
    } else {
      int expected = kRunning;
      if (blk->run_state.compare_exchange_strong(expected, kReturned, std::memory_order_acq_rel)) {
        // The callback is still to come, from another thread, and may already have freed
        // the block: record touches only what was read before the call.
        record();
        return;
      }
    }
#ifdef WEFT_USE_CUDA
    // The callback came before the function returned: its kernels are queued on the
    // stream. An event after them tells later users when the outputs are ready (also after
    // a failure: kernels launched before it may still write the outputs' memory). Waiting
    // for the stream instead when asked to, or when the profiler records this operation's
    // time (so that the time is the GPU's).
    gpu::Event* done_event = nullptr;
    bool on_host = rctx.stream == nullptr;
    if (rctx.stream) {
      try {
        if (sync_each_op_ || (kProfile && prof_name != nullptr)) {
          cuda::Check(cudaStreamSynchronize(static_cast<cudaStream_t>(rctx.stream)), "cudaStreamSynchronize",
                      &rctx.ctx);
          on_host = true;
        } else {
          done_event = gpu::Record(rctx.ctx.dev_id, rctx.stream);
        }
        NoteGpuUsed(rctx.ctx.dev_id);
      } catch (...) {
        if (!blk->error) blk->error = MakeError(std::current_exception());
        on_host = false;
      }
    }
    record();
    Complete(blk, done_event, on_host);
#else
    record();
    Complete(blk);
#endif
  }

  void WorkerStarted(const Context& ctx) override {
    // Registered again after a GPU thread set up CUDA so that the drain runs before the
    // CUDA runtime's own exit handler tears it down.
    int key = ctx.is_gpu() ? ctx.dev_id : -1;
    std::lock_guard<std::mutex> lock(Live().mu);
    auto& hooked = Live().hooked_devices;
    if (std::find(hooked.begin(), hooked.end(), key) != hooked.end()) return;
    hooked.push_back(key);
    std::atexit(DrainAtExit);
  }

 private:
  void CheckUsable() const {
    WEFT_CHECK(!shut_down_.load(std::memory_order_relaxed), kRuntime, "engine: used after Shutdown()");
  }

  void CheckNotInWorker(const char* what) {
    WEFT_CHECK(CurrentWorkerOwner() != this, kRuntime, what,
               " was called from inside an engine operation; an operation must not wait on the engine "
               "(it would wait for itself)");
  }

  WorkerPool* PoolFor(const Context& ctx, FnProperty prop) {
    if (ctx.is_gpu()) {
#ifdef WEFT_USE_CUDA
      int n = static_cast<int>(gpu_pools_.size());
      WEFT_CHECK(ctx.dev_id >= 0 && ctx.dev_id < n, kUnsupported, "engine: cannot run on ", ctx.ToString(), ": ", n,
                 " GPU(s) visible");
#else
      WEFT_CHECK(false, kUnsupported, "engine: cannot run on ", ctx.ToString(), ": this build has no CUDA");
#endif
      bool copy = prop == FnProperty::kCopyToGPU || prop == FnProperty::kCopyFromGPU;
      return (copy ? gpu_copy_pools_ : gpu_pools_)[ctx.dev_id].get();
    }
    return prop == FnProperty::kCPUPrioritized ? cpu_priority_pool_.get() : cpu_pool_.get();
  }

  // The backpressure: a thread outside the engine that finds `pool` full (max_pending_
  // operations, or max_pending_bytes_ written by them counting the `bytes` of this push)
  // waits until three quarters of the bound are left, so that it then pushes a batch without
  // waiting at every push. A push larger than the byte bound waits until nothing that
  // writes bytes is pending, and then goes alone. A worker's own pushes never wait: the
  // operations it would wait for may need its thread. Nor does a push to a stalled pool,
  // one that completed nothing for kStallWait while its pusher waited: its work may be
  // waiting for something this very thread does after the push (opening a gate, answering
  // a callback), so waiting could be forever. The bound holds again from the pool's next
  // completion. `unlocked`: the caller holds no lock of the library (WaitForRoomUnlocked),
  // so the blocking hooks let go of the front end's lock while this waits.
  void WaitForRoom(WorkerPool* pool, int64_t bytes, bool unlocked = false) {
    auto bytes_over = [&](int64_t limit) {
      int64_t queued = pool->pending_bytes.load(std::memory_order_relaxed);
      return bytes > 0 && queued > 0 && queued + bytes > limit;
    };
    bool full = (max_pending_ != 0 && pool->pending.load(std::memory_order_relaxed) >= max_pending_) ||
                (max_pending_bytes_ != 0 && bytes_over(max_pending_bytes_));
    if (!full || CurrentWorkerOwner() == this || PushesServeRunningWork()) return;
    if (pool->stalled_at.load(std::memory_order_relaxed) == pool->completed.load(std::memory_order_relaxed)) return;
    auto has_room = [&] {
      if (shut_down_.load()) return true;
      if (max_pending_ != 0 && pool->pending.load() >= ResumeCount()) return false;
      return max_pending_bytes_ == 0 || !bytes_over(ResumeBytes());
    };
    // The hooks only for an unlocked caller: a push may come from inside a caller's own
    // critical section, where letting go of the front end's lock (and taking it back) could
    // deadlock; there the stall rule above lets a push through when the work it waits for
    // needs this thread. Entered before room_mu_ is taken, left after it is released.
    std::optional<BlockingScope> let_go;
    if (unlocked) let_go.emplace();
    std::unique_lock<std::mutex> lock(room_mu_);
    room_waiters_.fetch_add(1);
    for (;;) {
      uint64_t before = pool->completed.load();
      if (room_cv_.wait_for(lock, kStallWait, has_room)) break;
      if (pool->completed.load() == before) {
        pool->stalled_at.store(before);
        break;
      }
    }
    room_waiters_.fetch_sub(1);
  }

  void WaitForRoomUnlocked() override {
    if (CurrentWorkerOwner() == this || PushesServeRunningWork() || shut_down_.load()) return;
    // The smallest push (one byte): a pool is full for it once its bound is reached.
    constexpr int64_t kAnyPush = 1;
    WaitForRoom(cpu_pool_.get(), kAnyPush, true);
    WaitForRoom(cpu_priority_pool_.get(), kAnyPush, true);
    for (auto* pools : {&gpu_pools_, &gpu_copy_pools_})
      for (auto& p : *pools) WaitForRoom(p.get(), kAnyPush, true);
  }

  int64_t ResumeCount() const { return max_pending_ - max_pending_ / 4; }
  int64_t ResumeBytes() const { return max_pending_bytes_ - max_pending_bytes_ / 4; }

  // Queues the block on its variables and dispatches it when nothing is in its way.
  void Submit(OprBlock* blk) {
    pending_.fetch_add(1);
    if (blk->pool && !blk->internal) {
      blk->pool->pending.fetch_add(1, std::memory_order_relaxed);
      if (blk->bytes_written) blk->pool->pending_bytes.fetch_add(blk->bytes_written, std::memory_order_relaxed);
    }
    uint32_t n = blk->nslots;
    // The extra 1 keeps the block from running before it is queued everywhere.
    blk->wait.store(static_cast<int>(n) + 1, std::memory_order_relaxed);
    for (uint32_t i = 0; i < n; ++i) {
      blk->slots[i].blk = blk;
      blk->slots[i].var->mu.lock();
    }
    int granted = 1;
    for (uint32_t i = 0; i < n; ++i) granted += blk->slots[i].var->AppendLocked(&blk->slots[i]);
    for (uint32_t i = 0; i < n; ++i) blk->slots[i].var->mu.unlock();
    if (blk->wait.fetch_sub(granted, std::memory_order_acq_rel) != granted) return;
    // Only here, at push time, does an inline block run on the caller: a block made ready
    // later by Complete() goes to a worker, so a long chain never nests on one stack.
    if (blk->run_inline) {
      RunBlock(blk, RunContext{blk->ctx, nullptr}, nullptr);
    } else {
      Dispatch(blk);
    }
  }

  void Dispatch(OprBlock* blk) {
    if (blk->internal) {
      RunBlock(blk, RunContext{blk->ctx, nullptr}, nullptr);
    } else {
      blk->pool->Enqueue(blk);
    }
  }

  static void OnCallback(void* engine, void* param, std::exception_ptr error) {
    auto* blk = static_cast<OprBlock*>(param);
    blk->error = MakeError(std::move(error));
    int expected = kRunning;
    if (blk->run_state.compare_exchange_strong(expected, kCalledBack, std::memory_order_acq_rel)) return;
    static_cast<ThreadedEngine*>(engine)->Complete(blk);
  }

#ifdef WEFT_USE_CUDA
  void NoteGpuUsed(int dev) {
    uint64_t bit = uint64_t{1} << (dev & 63);
    if (!(gpu_used_.load(std::memory_order_relaxed) & bit)) gpu_used_.fetch_or(bit, std::memory_order_release);
  }

  // Before a block runs: orders it after the unfinished GPU work on its variables that it
  // conflicts with (a read after the last write; a write after the last write and every
  // read since). On a GPU stream the stream waits (the same stream is ordered already); on
  // the host the thread waits. A GPU variable's deletion waits for nothing: its memory is
  // parked in the pool behind all those events (*fence) instead.
  void WaitForGpuInputs(const VarSlot* slots, uint32_t n, const RunContext& rctx, bool deleting,
                        std::vector<gpu::Event*>* fence) {
    const bool deleting_on_gpu = deleting && rctx.stream != nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      const VarSlot& s = slots[i];
      ThreadedVar* v = s.var;
      if (v->write_event == nullptr && (!s.write || v->read_events.empty())) continue;
      auto wait = [&](gpu::Event* ev) {
        if (deleting_on_gpu) {
          fence->push_back(ev);
        } else if (rctx.stream == nullptr) {
          gpu::HostWait(ev);
        } else if (gpu::StreamOf(ev) != rctx.stream) {
          gpu::StreamWait(rctx.stream, ev);
        }
      };
      if (v->write_event) wait(v->write_event);
      if (s.write)
        for (gpu::Event* ev : v->read_events) wait(ev);
    }
  }

  // Waits on the host for every event on an idle variable (nothing else can touch it).
  static void HostWaitAll(ThreadedVar* v) {
    std::lock_guard<VarLock> lock(v->mu);
    if (v->write_event) gpu::HostWait(v->write_event);
    for (gpu::Event* ev : v->read_events) gpu::HostWait(ev);
  }

  // After a block: `ev` (owned, may be null) marks the end of its GPU work; `on_host` says
  // its work is done on the host (it ran there, or its stream was waited for), which also
  // means that everything it waited for is done.
  static void PublishGpuCompletion(const VarSlot& s, gpu::Event* ev, bool on_host) {
    ThreadedVar* v = s.var;
    if (ev != nullptr) {
      std::lock_guard<VarLock> lock(v->mu);
      gpu::Retain(ev);
      if (s.write) {
        gpu::Release(v->write_event);
        for (gpu::Event* old : v->read_events) gpu::Release(old);
        v->read_events.clear();
        v->write_event = ev;
        return;
      }
      for (gpu::Event*& old : v->read_events) {
        if (gpu::StreamOf(old) == gpu::StreamOf(ev)) {
          // Later work on one stream ends after earlier work on it: one event per stream.
          gpu::Release(old);
          old = ev;
          return;
        }
      }
      v->read_events.push_back(ev);
    } else if (on_host && s.write && (v->write_event != nullptr || !v->read_events.empty())) {
      std::lock_guard<VarLock> lock(v->mu);
      gpu::Release(v->write_event);
      v->write_event = nullptr;
      for (gpu::Event* old : v->read_events) gpu::Release(old);
      v->read_events.clear();
    }
  }
#endif

  // Publishes an operation's outcome on its variables and releases them; what their queues
  // grant now goes to *ready. `internal`, `done_event`, `on_host`: see Complete.
  void ReleaseSlots(VarSlot* slots, uint32_t n, const ErrorRef& error, [[maybe_unused]] bool internal,
                    [[maybe_unused]] gpu::Event* done_event, [[maybe_unused]] bool on_host, ReadyList* ready) {
    for (uint32_t i = 0; i < n; ++i) {
      VarSlot& s = slots[i];
#ifdef WEFT_USE_CUDA
      if (!internal) PublishGpuCompletion(s, done_event, on_host && !error);
#endif
      // The writer still holds the variable, so nobody else reads or writes its error.
      if (s.write && (error || s.var->error)) s.var->error = error;
      if (s.write) s.var->writes.fetch_add(1, std::memory_order_release);
      s.var->Release(s.write, ready);
    }
  }

  void DispatchReady(const ReadyList& ready) {
    for (OprBlock* b = ready.head; b != nullptr;) {
      OprBlock* next = b->next_ready;
      Dispatch(b);
      b = next;
    }
  }

  // Publishes the block's outcome on its variables, releases them, frees the block.
  // `done_event` and `on_host` (CUDA builds): see PublishGpuCompletion; the defaults say
  // nothing is known about GPU work, so the variables keep the events they have.
  void Complete(OprBlock* blk, [[maybe_unused]] gpu::Event* done_event = nullptr,
                [[maybe_unused]] bool on_host = false) {
    const ErrorRef& error = blk->error;
    if (Pending(error)) RecordError(error);
    ReadyList ready;
    ReleaseSlots(blk->slots, blk->nslots, error, blk->internal, done_event, on_host, &ready);
#ifdef WEFT_USE_CUDA
    gpu::Release(done_event);
#endif
    DispatchReady(ready);
    ThreadedVar* dead = blk->delete_var;
    ThreadedOpr* opr = blk->opr;
    WorkerPool* pool = blk->internal ? nullptr : blk->pool;
    const int64_t bytes = blk->bytes_written;
    // Freeing the block destroys what its function captured, which may push more work
    // (an array's last reference deleting its variable): pending_ covers that first.
    delete blk;
    if (dead) FreeVariable(dead);
    if (opr && opr->refs.fetch_sub(2, std::memory_order_acq_rel) == 3) delete opr;
    if (pool) {
      pool->completed.fetch_add(1, std::memory_order_relaxed);
      // Waiters are woken when the count falls to where they resume, and at every
      // completion that leaves the bytes below that mark (a waiter's own push decides).
      bool wake = pool->pending.fetch_sub(1, std::memory_order_acq_rel) - 1 == ResumeCount() - 1;
      if (bytes) wake |= pool->pending_bytes.fetch_sub(bytes, std::memory_order_acq_rel) - bytes <= ResumeBytes();
      if (wake && room_waiters_.load() > 0) {
        std::lock_guard<std::mutex> lock(room_mu_);
        room_cv_.notify_all();
      }
    }
    FinishOne();
  }

  // One pushed operation is over: wakes WaitForAll when it was the last.
  void FinishOne() {
    if (pending_.fetch_sub(1) == 1 && waiters_.load() > 0) {
      std::lock_guard<std::mutex> lock(wait_mu_);
      wait_cv_.notify_all();
    }
  }

  static void FreeVariable(ThreadedVar* var) {
    if (var->Idle()) {
      delete var;
    } else {
      // Work was pushed on the variable after DeleteVariable: keep it rather than free
      // memory that queued operations still point to.
      WEFT_LOG(Error) << "engine: a variable was used after DeleteVariable; it is leaked";
    }
  }

  // The error WaitForAll raises: the first one not yet raised. One WaitForVar raised is
  // marked reported, so WaitForAll passes over it (as MXNet does): the caller has seen it,
  // and a later, unrelated wait must not fail for it.
  void RecordError(const ErrorRef& error) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!Pending(first_error_)) first_error_ = error;
  }

  std::atomic<int64_t> pending_{0};  // pushed and not yet completed
  const int64_t max_pending_ = EnvMaxPending();
  const int64_t max_pending_bytes_ = EnvMaxPendingBytes();
  // How long a full pool may go without completing anything before its pusher stops
  // waiting for it: longer than one large operation normally takes on a CPU.
  static constexpr std::chrono::milliseconds kStallWait{500};
  std::atomic<int> room_waiters_{0};
  std::mutex room_mu_;
  std::condition_variable room_cv_;
  std::atomic<int> waiters_{0};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::mutex error_mu_;
  ErrorRef first_error_;
  std::atomic<bool> shut_down_{false};
  // WEFT_GPU_SYNC_EACH_OP=1: wait for each GPU operation's stream (debugging).
  const bool sync_each_op_ = EnvFlag("WEFT_GPU_SYNC_EACH_OP");
  // The GPUs that ran work since the start, as bits: WaitForAll synchronises those.
  std::atomic<uint64_t> gpu_used_{0};

  std::unique_ptr<WorkerPool> cpu_pool_;
  std::unique_ptr<WorkerPool> cpu_priority_pool_;
  std::vector<std::unique_ptr<WorkerPool>> gpu_pools_;
  std::vector<std::unique_ptr<WorkerPool>> gpu_copy_pools_;
};


void DrainAtExit() {
  // Only the first of the registered hooks drains; exit() called from inside an
  // operation must not wait for that operation.
  static std::atomic<bool> drained{false};
  if (drained.exchange(true) || CurrentWorkerOwner() != nullptr) return;
  long wait_s = 10;
  try {
    wait_s = EnvPositive("WEFT_ENGINE_EXIT_WAIT_S", 10);
  } catch (const Error& e) {
    WEFT_LOG(Error) << e.what();
  }
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(wait_s);
  std::lock_guard<std::mutex> lock(Live().mu);
  for (ThreadedEngine* e : Live().engines) {
    if (!e->DrainUntil(deadline)) {
      WEFT_LOG(Warning) << "engine: operations still running at exit after " << wait_s << " s; exiting without them";
    }
  }
}

struct ForkHandlers {
  std::vector<std::pair<void (*)(), void (*)(bool)>> handlers;
  // Set between PrepareFork and AfterFork, so that the pthread_atfork handler does nothing
  // when a front end already prepared the fork (and AfterFork runs once).
  bool prepared = false;
};

ForkHandlers& Fork() {
  static ForkHandlers* f = new ForkHandlers();
  return *f;
}

void AtForkPrepare() { PrepareFork(); }
void AtForkParent() { AfterFork(false); }
void AtForkChild() { AfterFork(true); }

void RegisterAtFork() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef _OPENMP
    // LLVM's OpenMP runtime registers fork handlers of its own when it initialises, and its
    // prepare handler takes locks that a worker thread's exit needs (its thread-specific
    // data destructor). Prepare handlers run in the reverse order of registration, so
    // initialising it first makes ours stop (join) the workers before those locks are held;
    // the other way round, PrepareFork waits forever for a worker that cannot exit.
    (void)omp_get_max_threads();
#endif
    pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
  });
}

}  // namespace

void AddForkHandlers(void (*prepare)(), void (*after)(bool in_child)) {
  std::lock_guard<std::mutex> lock(Live().mu);
  Fork().handlers.push_back({prepare, after});
}

void PrepareFork() {
  WEFT_CHECK(CurrentWorkerOwner() == nullptr, kRuntime, "fork() from inside an engine operation is not supported");
  std::vector<ThreadedEngine*> engines;
  std::vector<std::pair<void (*)(), void (*)(bool)>> handlers;
  {
    std::lock_guard<std::mutex> lock(Live().mu);
    if (Fork().prepared) return;
    engines = Live().engines;
    handlers = Fork().handlers;
  }
  // Drained first, while every thread still runs: queued work may need the callback threads.
  for (ThreadedEngine* e : engines) e->DrainUntil(Clock::time_point::max());
  for (auto& h : handlers) h.first();
  for (ThreadedEngine* e : engines) e->StopThreadsForFork();
  std::lock_guard<std::mutex> lock(Live().mu);
  Fork().prepared = true;
}

void AfterFork(bool in_child) {
  std::vector<ThreadedEngine*> engines;
  std::vector<std::pair<void (*)(), void (*)(bool)>> handlers;
  {
    std::lock_guard<std::mutex> lock(Live().mu);
    if (!Fork().prepared) return;
    Fork().prepared = false;
    engines = Live().engines;
    handlers = Fork().handlers;
  }
  for (ThreadedEngine* e : engines) e->ResumeThreadsAfterFork();
  for (auto& h : handlers) h.second(in_child);
}

std::unique_ptr<Engine> CreateThreadedEngine() { return std::make_unique<ThreadedEngine>(); }

bool RunNowIfIdle(Engine* engine, Context ctx, const std::vector<VarHandle>& const_vars,
                  const std::vector<VarHandle>& mutable_vars, SyncFnRef fn, const char* name, int64_t bytes_allocated,
                  size_t num_private) {
  // ThreadedEngine is final: comparing the dynamic type is one load and a compare.
  if (typeid(*engine) == typeid(ThreadedEngine))
    return static_cast<ThreadedEngine*>(engine)->RunNow(ctx, const_vars, mutable_vars, fn, name, bytes_allocated,
                                                        num_private);
  return engine->RunNowIfIdle(ctx, const_vars, mutable_vars, fn, name, bytes_allocated);
}

}  // namespace engine
}  // namespace weft

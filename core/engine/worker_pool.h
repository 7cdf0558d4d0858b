// A pool of worker threads for one device and kind of work, fed by a queue of ready
// operations ordered by priority (higher first), then by readiness. Threads start with
// the first operation. On a GPU each thread owns a CUDA stream for its whole life and
// hands it to the operations it runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/opr_block.h"

namespace weft {
namespace engine {

// Runs the blocks a pool pops. `setup_error` is set when the worker could not prepare its
// device (no stream): the block must then fail with it instead of running.
class BlockRunner {
 public:
  virtual ~BlockRunner() = default;
  virtual void RunBlock(OprBlock* blk, const RunContext& rctx, const std::exception_ptr& setup_error) = 0;
  // Called on each worker thread once its device is set up.
  virtual void WorkerStarted(const Context& ctx) = 0;
};

// The runner whose pool owns the calling thread, or null outside any pool.
BlockRunner* CurrentWorkerOwner();

class WorkerPool {
 public:
  // ctx is the device the threads serve: a GPU context gives each thread a stream.
  WorkerPool(std::string name, int nthreads, Context ctx, BlockRunner* runner);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Enqueue(OprBlock* blk);
  // Lets the threads finish what is queued, then joins them. Idempotent.
  void Stop();
  // After Stop (around a fork): the threads start again with the next Enqueue.
  void Resume();

  const std::string& name() const { return name_; }

  // Operations pushed for this pool and not yet complete: the engine bounds it
  // (WEFT_ENGINE_MAX_PENDING) so that a thread that pushes without ever waiting cannot run
  // arbitrarily far ahead of the workers.
  std::atomic<int64_t> pending{0};
  // What those operations write, in bytes (their bytes_written), for the same backpressure.
  std::atomic<int64_t> pending_bytes{0};
  // Operations of this pool completed so far, and its value when a pusher last found the
  // pool stalled (no progress while it waited): the backpressure then lets pushes through
  // until the pool moves again, since its work may be waiting on the pushing thread itself.
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> stalled_at{~uint64_t{0}};

 private:
  OprBlock* Pop();
  void Loop(int index);
  void StartLocked();

  const std::string name_;
  const int nthreads_;
  const Context ctx_;
  BlockRunner* const runner_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<OprBlock*> heap_;  // a max-heap by (priority, -seq)
  uint64_t next_seq_ = 0;
  int idle_ = 0;
  bool started_ = false;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace engine
}  // namespace weft

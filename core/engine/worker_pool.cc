#include "core/engine/worker_pool.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <optional>
#include <utility>

#include "core/base/error.h"
#include "core/engine/engine.h"
#include "core/profiler/profiler.h"

#ifdef WEFT_USE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {
namespace engine {
namespace {

thread_local BlockRunner* tls_owner = nullptr;

bool RunsLater(const OprBlock* a, const OprBlock* b) {
  return a->priority != b->priority ? a->priority < b->priority : a->seq > b->seq;
}

#ifdef WEFT_USE_CUDA
// A worker's stream lives as long as the thread: created here, destroyed when it leaves.
class WorkerStream {
 public:
  explicit WorkerStream(const Context& ctx) {
    cudaError_t err = cudaSetDevice(ctx.dev_id);
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
      cudaGetLastError();
      stream_ = nullptr;
      error_ = std::make_exception_ptr(Error(ErrorKind::kRuntime,
          detail::Concat("engine: could not create a CUDA stream for a worker on ", ctx.ToString(), ": ",
                         cudaGetErrorString(err))));
    }
  }
  ~WorkerStream() {
    // Operations complete for the engine before their GPU work does, and completion events
    // name their stream by its handle: work of this stream must be over before a later
    // stream can get the same handle (a pool stopped for a fork, then resumed).
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }
  void* stream() const { return stream_; }
  const std::exception_ptr& error() const { return error_; }

 private:
  cudaStream_t stream_ = nullptr;
  std::exception_ptr error_;
};
#endif

}  // namespace

BlockRunner* CurrentWorkerOwner() { return tls_owner; }

namespace {
thread_local bool tls_serves_running_work = false;
}  // namespace

void SetPushesServeRunningWork(bool on) { tls_serves_running_work = on; }
bool PushesServeRunningWork() { return tls_serves_running_work; }

WorkerPool::WorkerPool(std::string name, int nthreads, Context ctx, BlockRunner* runner)
    : name_(std::move(name)), nthreads_(nthreads), ctx_(ctx), runner_(runner) {}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::StartLocked() {
  started_ = true;
  threads_.reserve(nthreads_);
  for (int i = 0; i < nthreads_; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

void WorkerPool::Enqueue(OprBlock* blk) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) StartLocked();
  blk->seq = next_seq_++;
  heap_.push_back(blk);
  std::push_heap(heap_.begin(), heap_.end(), RunsLater);
  if (idle_ > 0) cv_.notify_one();
}

OprBlock* WorkerPool::Pop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (heap_.empty() && !stop_) {
    ++idle_;
    cv_.wait(lock);
    --idle_;
  }
  if (heap_.empty()) return nullptr;
  std::pop_heap(heap_.begin(), heap_.end(), RunsLater);
  OprBlock* blk = heap_.back();
  heap_.pop_back();
  return blk;
}

void WorkerPool::Loop(int index) {
  tls_owner = runner_;
  RunContext rctx{ctx_, nullptr};
  std::exception_ptr setup_error;
#ifdef WEFT_USE_CUDA
  std::optional<WorkerStream> stream;
  if (ctx_.is_gpu()) {
    stream.emplace(ctx_);
    rctx.stream = stream->stream();
    setup_error = stream->error();
  }
#endif
  // The thread's track in a profile: one per worker, and so one per GPU stream.
  std::string track = name_ + " worker " + std::to_string(index) + " on " + ctx_.ToString();
#ifdef WEFT_USE_CUDA
  if (rctx.stream) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (stream %p)", rctx.stream);
    track += buf;
  }
#endif
  profiler::SetThreadName(track);
  runner_->WorkerStarted(ctx_);
  while (OprBlock* blk = Pop()) runner_->RunBlock(blk, rctx, setup_error);
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    cv_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stop_) return;
  stop_ = false;
  started_ = false;
  idle_ = 0;
}

}  // namespace engine
}  // namespace weft

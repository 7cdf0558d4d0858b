#include "core/storage/gpu_event.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "core/base/cuda_utils.h"

namespace weft {
namespace gpu {

struct Event {
  cudaEvent_t event = nullptr;
  int dev = 0;
  void* stream = nullptr;
  std::atomic<int> refs{0};
};

namespace {

// One free list per device. Events are never destroyed: the pool holds at most as many as
// were referenced at once, and destroying them at exit could run after the driver is gone.
struct DevicePool {
  std::mutex mu;
  std::vector<Event*> free;
};

constexpr int kMaxDevices = 64;

DevicePool& PoolOf(int dev) {
  static DevicePool* pools = new DevicePool[kMaxDevices];
  WEFT_CHECK(dev >= 0 && dev < kMaxDevices, kInternal, "gpu event: device id ", dev, " out of range");
  return pools[dev];
}

thread_local const std::vector<Event*>* tls_fence = nullptr;

}  // namespace

Event* Record(int dev, void* stream) {
  DevicePool& pool = PoolOf(dev);
  Event* ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (!pool.free.empty()) {
      ev = pool.free.back();
      pool.free.pop_back();
    }
  }
  Context ctx = Context::GPU(dev);
  if (ev == nullptr) {
    auto fresh = std::make_unique<Event>();
    fresh->dev = dev;
    cuda::DeviceGuard guard(dev);
    // No timing: a timing event costs more to record and to wait on.
    cuda::Check(cudaEventCreateWithFlags(&fresh->event, cudaEventDisableTiming), "cudaEventCreateWithFlags", &ctx);
    ev = fresh.release();
  }
  ev->stream = stream;
  ev->refs.store(1, std::memory_order_relaxed);
  cudaError_t err = cudaEventRecord(ev->event, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    Release(ev);
    cuda::ThrowCudaError(err, "CUDA call cudaEventRecord", &ctx);
  }
  return ev;
}

void Retain(Event* ev) { ev->refs.fetch_add(1, std::memory_order_relaxed); }

void Release(Event* ev) {
  if (ev == nullptr || ev->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  DevicePool& pool = PoolOf(ev->dev);
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.free.push_back(ev);
}

void* StreamOf(const Event* ev) { return ev->stream; }

void StreamWait(void* stream, Event* ev) {
  Context ctx = Context::GPU(ev->dev);
  cuda::Check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), ev->event, 0), "cudaStreamWaitEvent", &ctx);
}

void HostWait(Event* ev) {
  Context ctx = Context::GPU(ev->dev);
  cuda::Check(cudaEventSynchronize(ev->event), "cudaEventSynchronize (completion of earlier GPU work)", &ctx);
}

bool Done(Event* ev) {
  cudaError_t err = cudaEventQuery(ev->event);
  if (err == cudaErrorNotReady) return false;
  if (err != cudaSuccess) cudaGetLastError();
  return true;
}

FreeFenceScope::FreeFenceScope(const std::vector<Event*>* events) : prev_(tls_fence) { tls_fence = events; }
FreeFenceScope::~FreeFenceScope() { tls_fence = prev_; }

const std::vector<Event*>* CurrentFreeFence() { return tls_fence; }

}  // namespace gpu
}  // namespace weft

// A variable of the threaded engine: a queue of the operations waiting to touch it, in
// push order, plus what is running on it now (any number of readers, or one writer).
//
// An operation pushed on n variables holds one VarSlot per variable and waits for n
// grants. A variable grants its queue from the front: reads while no write runs, a write
// once nothing runs. A read queued behind a write waits for that write even when no write
// runs yet, so writes keep push order and reads never overtake an earlier write.
//
// Invariant kept after every change: the front of the queue cannot be granted (it is a
// read behind a running write, or a write behind running work). So an empty queue and no
// running write mean "no write pending", which WaitForVar uses as its fast path.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/engine/engine_impl.h"

namespace weft {
namespace gpu {
struct Event;  // core/storage/gpu_event.h (CUDA builds)
}  // namespace gpu
}  // namespace weft

namespace weft {
namespace engine {

struct OprBlock;
class ThreadedVar;

// The lock of one variable. Its critical sections are a few pointer and counter updates
// (queueing a slot, granting the front), so an uncontended lock is one atomic exchange and
// an unlock a plain store, with no call into the C library: an imperative call on tiny
// arrays takes and releases one per variable twice, where std::mutex's calls cost more
// than the work they guard. A waiter spins briefly, then yields its core, so that a holder
// descheduled on a loaded machine gets to run.
class VarLock {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void LockSlow() {
    for (int spins = 0;; ++spins) {
      if (spins < 64) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
      if (!locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> locked_{false};
};

// One operation's place in one variable's queue; lives inside the operation's block.
struct VarSlot {
  OprBlock* blk = nullptr;
  VarSlot* next = nullptr;
  ThreadedVar* var = nullptr;
  bool write = false;  // the operation writes the variable (perhaps reading it too)
  bool read = false;   // the operation reads the variable, so its error flows on
  // The variable held an error not yet raised when it granted this slot. Taken at the
  // grant, not when the operation runs: a wait granted with it may raise (and so mark
  // reported) that error before the operation gets a worker, and the operation must still
  // inherit it rather than run on a broken input. The variable's error cannot change while
  // the grant is held, so the flag and var->error name the same record.
  bool error_at_grant = false;
};

// Blocks whose last grant just came, in the order they became ready.
struct ReadyList {
  OprBlock* head = nullptr;
  OprBlock* tail = nullptr;
};

class ThreadedVar final : public Var {
 public:
  ThreadedVar() = default;
  ~ThreadedVar() override;
  ThreadedVar(const ThreadedVar&) = delete;
  ThreadedVar& operator=(const ThreadedVar&) = delete;

  // Queues `slot` behind earlier pushes; true when it is granted at once. The caller
  // holds mu (a push locks all its variables first, so concurrent pushes queue in one
  // consistent order on every variable they share and cannot wait on each other).
  bool AppendLocked(VarSlot* slot);
  // Whether AppendLocked would grant an access of this kind at once. The caller holds mu.
  bool GrantableLocked(bool write) const {
    return head_ == nullptr && !write_running_ && (!write || running_reads_ == 0);
  }
  // Ends a granted read or write and grants what may run now. Each granted slot counts
  // down its block's wait; blocks that reach zero are added to *ready.
  void Release(bool write, ReadyList* ready);
  // Whether an operation that writes this variable is queued or running; *error gets
  // the stored error when not.
  bool HasPendingWrite(ErrorRef* error);
  // Nothing queued or running: the variable may be freed.
  bool Idle();

  VarLock mu;

  // GPU completion (CUDA builds; see "GPU completion" in docs/design/engine.md). A GPU
  // operation completes when its kernels are queued, not run: write_event marks the end of
  // the last write's work on its stream, read_events the end of each later read's work
  // (at most one per stream, the latest). Whoever next touches the variable waits for what
  // it conflicts with: a reader for write_event, a writer for both. Changed only under mu,
  // by the completing operation, which still holds its grant; read without mu by an
  // operation holding a grant (no completion that could change them runs meanwhile,
  // except readers adding to read_events, which only a writer reads).
  gpu::Event* write_event = nullptr;
  std::vector<gpu::Event*> read_events;

 private:
  void GrantFrontLocked(ReadyList* ready);

  VarSlot* head_ = nullptr;
  VarSlot* tail_ = nullptr;
  int64_t running_reads_ = 0;
  bool write_running_ = false;
};

}  // namespace engine
}  // namespace weft

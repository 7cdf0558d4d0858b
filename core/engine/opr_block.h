// What the threaded engine keeps per push (OprBlock) and per pre-created operator
// (ThreadedOpr). A push costs one allocation: the block, with room for a few variable
// slots inline.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine/threaded_var.h"

namespace weft {
namespace engine {

class WorkerPool;

struct ThreadedOpr final : Opr {
  // Sorted by variable and deduplicated once, copied into each push's block.
  std::vector<VarSlot> slots;
  // 2 per push in flight, plus 1 once DeleteOperator was called: whoever brings it to
  // exactly 1 frees the operator.
  std::atomic<int64_t> refs{0};
};

// Where a block stands while its function runs, so that a callback called before the
// function returns lets the worker finish the block (after a stream sync on a GPU) and a
// callback called later finishes it on the calling thread.
enum RunState : int { kRunning = 0, kCalledBack = 1, kReturned = 2 };

struct OprBlock {
  static constexpr uint32_t kInlineSlots = 4;

  explicit OprBlock(uint32_t capacity) {
    if (capacity > kInlineSlots) heap_slots = std::make_unique<VarSlot[]>(capacity);
    slots = heap_slots ? heap_slots.get() : inline_slots;
  }
  OprBlock(const OprBlock&) = delete;
  OprBlock& operator=(const OprBlock&) = delete;

  const AsyncFn& Fn() const { return opr ? opr->fn : fn; }

  std::atomic<int> wait{0};  // grants still missing, plus 1 while the push is appending
  std::atomic<int> run_state{kRunning};
  int priority = kDefaultPriority;
  uint32_t nslots = 0;
  uint64_t seq = 0;          // FIFO order among equal priorities, set by the pool
  Context ctx;
  // Engine-internal waits: they run on the thread that makes them ready and run even
  // when their inputs carry errors.
  bool internal = false;
  // Pushed with FnProperty::kCPUInline: runs on the pushing thread when ready at push time.
  bool run_inline = false;
  WorkerPool* pool = nullptr;
  ThreadedOpr* opr = nullptr;    // a pre-created operator, or null when fn is the work
  AsyncFn fn;
  ThreadedVar* delete_var = nullptr;  // freed when this block completes (DeleteVariable)
  ErrorRef error;
  // What the profiler records the block as (null: nothing), and the bytes its pusher
  // allocated for it.
  const char* prof_name = nullptr;
  int64_t prof_bytes = 0;
  // What the operation writes, counted in its pool's pending_bytes while it is pending.
  int64_t bytes_written = 0;
  OprBlock* next_ready = nullptr;
  VarSlot* slots = nullptr;

 private:
  std::unique_ptr<VarSlot[]> heap_slots;
  VarSlot inline_slots[kInlineSlots];
};

// Fills out[] (room for num_reads + num_writes) with one slot per distinct
// variable, sorted by address; a variable in both lists is written. Returns the count.
// Throws weft::Error for a null variable.
uint32_t BuildSlots(const VarHandle* reads, size_t num_reads, const VarHandle* writes, size_t num_writes,
                    VarSlot* out);
inline uint32_t BuildSlots(const std::vector<VarHandle>& reads, const std::vector<VarHandle>& writes, VarSlot* out) {
  return BuildSlots(reads.data(), reads.size(), writes.data(), writes.size(), out);
}

}  // namespace engine
}  // namespace weft

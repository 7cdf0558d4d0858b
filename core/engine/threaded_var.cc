#include "core/engine/threaded_var.h"

#include "core/engine/opr_block.h"

#ifdef WEFT_USE_CUDA
#include "core/storage/gpu_event.h"
#endif

namespace weft {
namespace engine {
namespace {

// The caller must not touch the slot afterwards: once its block has all its grants,
// another thread may run and free it.
void Grant(VarSlot* slot, ReadyList* ready) {
  OprBlock* blk = slot->blk;
  if (blk->wait.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  blk->next_ready = nullptr;
  if (ready->tail) {
    ready->tail->next_ready = blk;
  } else {
    ready->head = blk;
  }
  ready->tail = blk;
}

}  // namespace

ThreadedVar::~ThreadedVar() {
#ifdef WEFT_USE_CUDA
  gpu::Release(write_event);
  for (gpu::Event* ev : read_events) gpu::Release(ev);
#endif
}

bool ThreadedVar::AppendLocked(VarSlot* slot) {
  slot->next = nullptr;
  if (GrantableLocked(slot->write)) {
    slot->error_at_grant = Pending(error);
    if (slot->write) {
      write_running_ = true;
    } else {
      ++running_reads_;
    }
    return true;
  }
  if (tail_) {
    tail_->next = slot;
  } else {
    head_ = slot;
  }
  tail_ = slot;
  return false;
}

void ThreadedVar::Release(bool write, ReadyList* ready) {
  std::lock_guard<VarLock> lock(mu);
  if (write) {
    write_running_ = false;
  } else {
    --running_reads_;
  }
  GrantFrontLocked(ready);
}

void ThreadedVar::GrantFrontLocked(ReadyList* ready) {
  if (write_running_) return;
  // Reads at the front all run together; a write runs once the last of them is done.
  while (head_ && !head_->write) {
    VarSlot* s = head_;
    head_ = s->next;
    ++running_reads_;
    s->error_at_grant = Pending(error);
    Grant(s, ready);
  }
  if (head_ && running_reads_ == 0) {
    VarSlot* s = head_;
    head_ = s->next;
    write_running_ = true;
    s->error_at_grant = Pending(error);
    Grant(s, ready);
  }
  if (head_ == nullptr) tail_ = nullptr;
}

bool ThreadedVar::HasPendingWrite(ErrorRef* err) {
  std::lock_guard<VarLock> lock(mu);
  if (write_running_ || head_ != nullptr) return true;
  *err = error;
  return false;
}

bool ThreadedVar::Idle() {
  std::lock_guard<VarLock> lock(mu);
  return head_ == nullptr && !write_running_ && running_reads_ == 0;
}

}  // namespace engine
}  // namespace weft

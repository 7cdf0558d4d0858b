// Per-thread reusable buffers for hot paths, so that steady-state calls allocate nothing:
// a call borrows its thread's instance of T (vectors keep their capacity between calls),
// or a fresh one when a nested call on the same thread already holds it.
#pragma once

#include <memory>

namespace weft {

// T must provide Clear(), called when the lease ends, which drops what the call put in
// (references to arrays, say) but keeps the capacity.
template <typename T>
class ScratchLease {
 public:
  ScratchLease() {
    Slot& slot = ThreadSlot();
    if (!slot.busy) {
      slot.busy = true;
      slot_ = &slot;
      value_ = &slot.value;
    } else {
      own_ = std::make_unique<T>();
      value_ = own_.get();
    }
  }
  ~ScratchLease() {
    value_->Clear();
    if (slot_) slot_->busy = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;

  T& operator*() const { return *value_; }
  T* operator->() const { return value_; }

 private:
  struct Slot {
    T value;
    bool busy = false;
  };
  static Slot& ThreadSlot() {
    thread_local Slot slot;
    return slot;
  }

  Slot* slot_ = nullptr;
  std::unique_ptr<T> own_;
  T* value_ = nullptr;
};

}  // namespace weft

// Which state of its input arrays an operator call sees, for operators that keep something
// derived from an input between calls (the int8 products keep their weights in oneDNN's
// layout). The dispatcher (core/imperative) fills it, for operators that set the
// TInputVersions attribute, on the thread that runs the call and for that call only; an
// operator's compute function reads it through CallInputVersions(). A side channel rather
// than an OpContext field so that no other operator pays for it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace weft {
namespace op {

// One input's state. `array` is the array's memory block: while it lives, lock() gives it
// back, and holding the weak pointer keeps a later block from being taken for it; `writes`
// counts the engine's completed writes to the array.
struct InputVersion {
  std::weak_ptr<const void> array;
  uint64_t writes = 0;
};

// Set (true) by operators that read CallInputVersions().
using TInputVersions = bool;

// The running call's input versions, one per input; empty outside such a call (a compute
// function called directly, as C++ tests do).
const std::vector<InputVersion>& CallInputVersions();

// Makes `versions` the running call's on this thread for the scope's lifetime.
class InputVersionScope {
 public:
  explicit InputVersionScope(const std::vector<InputVersion>* versions);
  ~InputVersionScope();
  InputVersionScope(const InputVersionScope&) = delete;
  InputVersionScope& operator=(const InputVersionScope&) = delete;

 private:
  const std::vector<InputVersion>* saved_;
};

}  // namespace op
}  // namespace weft

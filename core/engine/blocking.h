#pragma once

namespace weft {
namespace engine {

// A front end whose callers hold a lock that pushed work may need lets go of it while a
// thread blocks on the engine: Python's GIL, which a custom operator's callback takes on the
// library's thread, must not stay with a thread that waits for that very operator. `enter`
// runs right before a blocking wait and returns what `leave` gets right after it; both run
// on the waiting thread. Null hooks (the default) do nothing.
using BlockEnterFn = void* (*)();
using BlockLeaveFn = void (*)(void* token);
void SetBlockingHooks(BlockEnterFn enter, BlockLeaveFn leave);

// The hooks around one blocking wait (entered at construction, left at destruction).
class BlockingScope {
 public:
  BlockingScope();
  ~BlockingScope();
  BlockingScope(const BlockingScope&) = delete;
  BlockingScope& operator=(const BlockingScope&) = delete;

 private:
  BlockLeaveFn leave_ = nullptr;
  void* token_ = nullptr;
};

}  // namespace engine
}  // namespace weft

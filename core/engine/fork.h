// Forking a process that uses the engine (a DataLoader's worker processes). A child made by
// fork() has none of its parent's threads, so the engine's worker threads must not exist at
// the instant of the fork: PrepareFork drains every live engine (waits for what is pushed,
// keeping any error for a later wait) and joins its worker threads; AfterFork, in the
// parent and in the child, lets them start again with the next push. Front ends call both
// around fork() (Python: os.register_at_fork), where they can first let go of their own
// locks; the library also registers them with pthread_atfork for other callers, where a
// second PrepareFork finds nothing left to stop.
#pragma once

namespace weft {
namespace engine {

void PrepareFork();
void AfterFork(bool in_child);

// Runs `prepare` in PrepareFork, after the engines drained and before their threads stop
// (the custom operators' callback threads, whose work the drain waited for), and `after`
// in AfterFork. For the layers above the engine, which own threads of their own.
void AddForkHandlers(void (*prepare)(), void (*after)(bool in_child));

}  // namespace engine
}  // namespace weft

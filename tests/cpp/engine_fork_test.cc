// fork() with a threaded engine that has run work: its threads stop before the fork (through
// pthread_atfork, or PrepareFork called first) and start again on demand in the parent and
// in the child, where pushes and waits work as before.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "core/engine/engine.h"
#include "core/engine/engine_impl.h"
#include "core/engine/fork.h"

namespace weft {
namespace engine {
namespace {

// Pushes `n` increments of `*value` on `var` and waits for them.
int64_t RunChain(Engine* e, VarHandle var, int64_t* value, int n) {
  for (int i = 0; i < n; ++i) e->PushSync([value](RunContext) { ++*value; }, Context::CPU(), {}, {var});
  e->WaitForVar(var);
  return *value;
}

// Forks; the child runs a chain on the engine and exits 0 when it saw every increment.
void ForkAndCheck(Engine* e, VarHandle var, int64_t* value, bool explicit_prepare) {
  int64_t before = *value;
  if (explicit_prepare) PrepareFork();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (explicit_prepare) AfterFork(pid == 0);
  if (pid == 0) _exit(RunChain(e, var, value, 100) == before + 100 ? 0 : 3);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(RunChain(e, var, value, 50), before + 50);
}

TEST(EngineFork, ThreadsStopAndRestartInParentAndChild) {
  std::unique_ptr<Engine> e = Engine::Create("ThreadedEngine");
  VarHandle var = e->NewVariable();
  int64_t value = 0;
  ASSERT_EQ(RunChain(e.get(), var, &value, 1000), 1000);
  // A worker that ran an OpenMP region, as kernels do: with LLVM's OpenMP runtime its exit
  // at the fork needs locks that the runtime's own fork handler takes.
  std::atomic<int> lanes{0};
  e->PushSync(
      [&](RunContext) {
#pragma omp parallel num_threads(2)
        lanes.fetch_add(1);
      },
      Context::CPU(), {}, {var});
  e->WaitForVar(var);
  ASSERT_GE(lanes.load(), 1);
  ForkAndCheck(e.get(), var, &value, false);
  ForkAndCheck(e.get(), var, &value, true);
  // Work still queued when the fork is asked for finishes first.
  std::atomic<int> slow{0};
  e->PushSync([&](RunContext) { usleep(20000); slow = 1; }, Context::CPU(), {}, {var});
  PrepareFork();
  EXPECT_EQ(slow.load(), 1);
  AfterFork(false);
  int64_t before = value;
  EXPECT_EQ(RunChain(e.get(), var, &value, 10), before + 10);
  e->DeleteVariable(nullptr, Context::CPU(), var);
  e->WaitForAll();
}

}  // namespace
}  // namespace engine
}  // namespace weft

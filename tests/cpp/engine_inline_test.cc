// FnProperty::kCPUInline on the threaded engine: a ready operation runs on the pushing
// thread before the push returns; one that waits on pending work runs later, in
// dependency order, on a worker; a long chain of them never nests on one stack.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/engine_impl.h"

namespace weft {
namespace engine {
namespace {

TEST(EngineInline, ReadyOperationRunsOnThePushingThread) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  std::thread::id ran_on;
  eng->PushSync([&](RunContext) { ran_on = std::this_thread::get_id(); }, Context::CPU(), {}, {v},
                FnProperty::kCPUInline);
  // No wait: the push itself ran it.
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  std::thread::id normal_on;
  eng->PushSync([&](RunContext) { normal_on = std::this_thread::get_id(); }, Context::CPU(), {}, {v});
  eng->WaitForVar(v);
  EXPECT_NE(normal_on, std::this_thread::get_id());
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

TEST(EngineInline, BlockedOperationWaitsForItsDependencies) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::vector<int> order;
  eng->PushSync(
      [&](RunContext) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return open; });
        order.push_back(0);
      },
      Context::CPU(), {}, {v});
  eng->PushSync([&](RunContext) { order.push_back(1); }, Context::CPU(), {v}, {v}, FnProperty::kCPUInline);
  // The inline push returned without running: its input is still being written.
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(order.empty());
    open = true;
  }
  cv.notify_all();
  eng->WaitForVar(v);
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

TEST(EngineInline, LongBlockedChainCompletesWithoutDeepRecursion) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  std::atomic<bool> open{false};
  eng->PushSync(
      [&](RunContext) {
        while (!open.load()) std::this_thread::yield();
      },
      Context::CPU(), {}, {v});
  // Each of these becomes ready only when its predecessor completes; run nested they would
  // overflow the stack.
  constexpr int kChain = 200000;
  int64_t sum = 0;
  for (int i = 0; i < kChain; ++i)
    eng->PushSync([&sum, i](RunContext) { sum += i; }, Context::CPU(), {}, {v}, FnProperty::kCPUInline);
  open = true;
  eng->WaitForVar(v);
  EXPECT_EQ(sum, int64_t{kChain} * (kChain - 1) / 2);
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

TEST(EngineInline, ErrorOfAnInlineOperationIsRaisedAtTheWait) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  // The push does not throw, even though the operation ran inside it.
  EXPECT_NO_THROW(eng->PushSync([](RunContext) { throw std::runtime_error("inline failure"); }, Context::CPU(), {},
                                {v}, FnProperty::kCPUInline));
  EXPECT_THROW(eng->WaitForVar(v), std::runtime_error);
  EXPECT_THROW(eng->WaitForAll(), std::runtime_error);
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

}  // namespace
}  // namespace engine
}  // namespace weft

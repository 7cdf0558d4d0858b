// FnProperty::kCPUInline on the threaded engine: a ready operation runs on the pushing
// thread before the push returns; one that waits on pending work runs later, in
// dependency order, on a worker; a long chain of them never nests on one stack.
// RunNowIfIdle runs work at once or refuses without a trace; idle variables are deleted
// at once (DeleteVariableIfIdle says whether it did).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "core/base/error.h"
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
  EXPECT_THROW(eng->WaitForAll(), std::runtime_error);
  EXPECT_NO_THROW(eng->WaitForVar(v));  // reported by WaitForAll: raised once
  EXPECT_NO_THROW(eng->PushSync([](RunContext) { throw std::runtime_error("inline again"); }, Context::CPU(), {},
                                {v}, FnProperty::kCPUInline));
  EXPECT_THROW(eng->WaitForVar(v), std::runtime_error);
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}


// Holds `v` for writing on a worker until Open() is called.
class Gate {
 public:
  Gate(Engine* eng, VarHandle v) {
    eng->PushSync(
        [this](RunContext) {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return open_; });
        },
        Context::CPU(), {}, {v});
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(EngineRunNow, RunsIdleWorkBeforeReturning) {
  auto eng = CreateThreadedEngine();
  VarHandle r = eng->NewVariable(), w = eng->NewVariable();
  std::thread::id ran_on;
  auto fn = [&](RunContext rctx) {
    EXPECT_FALSE(rctx.ctx.is_gpu());
    ran_on = std::this_thread::get_id();
  };
  EXPECT_TRUE(eng->RunNowIfIdle(Context::CPU(), {r}, {w, w}, SyncFnRef(fn)));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  // The variables were released: a normal push on them runs, and the wait returns.
  int later = 0;
  eng->PushSync([&](RunContext) { later = 1; }, Context::CPU(), {r}, {w});
  eng->WaitForVar(w);
  EXPECT_EQ(later, 1);
  eng->DeleteVariable({}, Context::CPU(), r);
  eng->DeleteVariable({}, Context::CPU(), w);
  eng->WaitForAll();
}

TEST(EngineRunNow, RefusesWhenAnythingIsPendingAndLeavesNoTrace) {
  auto eng = CreateThreadedEngine();
  VarHandle busy = eng->NewVariable(), free_var = eng->NewVariable();
  Gate gate(eng.get(), busy);
  int runs = 0;
  auto fn = [&](RunContext) { ++runs; };
  // Reading or writing a variable with a pending write is refused, whatever else is idle.
  EXPECT_FALSE(eng->RunNowIfIdle(Context::CPU(), {busy}, {free_var}, SyncFnRef(fn)));
  EXPECT_FALSE(eng->RunNowIfIdle(Context::CPU(), {free_var}, {busy}, SyncFnRef(fn)));
  // GPU work is always pushed.
  EXPECT_FALSE(eng->RunNowIfIdle(Context::GPU(0), {}, {free_var}, SyncFnRef(fn)));
  EXPECT_EQ(runs, 0);
  // The refusals queued nothing: free_var is still idle, and busy's next push only waits
  // for the gate.
  EXPECT_TRUE(eng->RunNowIfIdle(Context::CPU(), {}, {free_var}, SyncFnRef(fn)));
  EXPECT_EQ(runs, 1);
  eng->PushSync([&](RunContext) { ++runs; }, Context::CPU(), {}, {busy});
  gate.Open();
  eng->WaitForAll();
  EXPECT_EQ(runs, 2);
  eng->DeleteVariable({}, Context::CPU(), busy);
  eng->DeleteVariable({}, Context::CPU(), free_var);
  eng->WaitForAll();
}

TEST(EngineRunNow, RefusesAWriteWhileAReadIsRunning) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable(), other = eng->NewVariable();
  Gate gate(eng.get(), other);
  std::atomic<bool> reading{false};
  // A read of v that also waits for the gate (it writes `other`, held by the gate).
  eng->PushSync([&](RunContext) { reading = true; }, Context::CPU(), {v}, {other});
  int runs = 0;
  auto fn = [&](RunContext) { ++runs; };
  EXPECT_TRUE(eng->RunNowIfIdle(Context::CPU(), {v}, {}, SyncFnRef(fn)));  // reads share
  EXPECT_FALSE(eng->RunNowIfIdle(Context::CPU(), {}, {v}, SyncFnRef(fn)));
  EXPECT_EQ(runs, 1);
  gate.Open();
  eng->WaitForAll();
  EXPECT_TRUE(reading.load());
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->DeleteVariable({}, Context::CPU(), other);
  eng->WaitForAll();
}

TEST(EngineRunNow, ErrorsFlowAsForAPush) {
  auto eng = CreateThreadedEngine();
  VarHandle a = eng->NewVariable(), b = eng->NewVariable();
  auto fail = [](RunContext) { throw std::runtime_error("run-now failure"); };
  EXPECT_TRUE(eng->RunNowIfIdle(Context::CPU(), {}, {a}, SyncFnRef(fail)));
  // A reader of the broken variable does not run; its output inherits the error.
  bool ran = false;
  auto fn = [&](RunContext) { ran = true; };
  EXPECT_TRUE(eng->RunNowIfIdle(Context::CPU(), {a}, {b}, SyncFnRef(fn)));
  EXPECT_FALSE(ran);
  EXPECT_THROW(eng->WaitForVar(b), std::runtime_error);
  // Raised once: a holds the same error, and WaitForAll does not raise it again either.
  EXPECT_NO_THROW(eng->WaitForVar(a));
  EXPECT_NO_THROW(eng->WaitForAll());
  eng->DeleteVariable({}, Context::CPU(), a);
  eng->DeleteVariable({}, Context::CPU(), b);
  eng->WaitForAll();
}

TEST(EngineRunNow, PrivateVariablesAreWrittenAndCarryErrors) {
  auto eng = CreateThreadedEngine();
  VarHandle in = eng->NewVariable(), fresh = eng->NewVariable(), busy = eng->NewVariable();
  int runs = 0;
  auto fn = [&](RunContext) { ++runs; };
  // The last write is private: the run writes it and counts the write, and it stays idle.
  EXPECT_TRUE(RunNowIfIdle(eng.get(), Context::CPU(), {in}, {fresh}, SyncFnRef(fn), nullptr, 0, 1));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(static_cast<Var*>(fresh)->writes.load(), 1u);
  EXPECT_NO_THROW(eng->WaitForVar(fresh));
  EXPECT_TRUE(eng->DeleteVariableIfIdle(Context::CPU(), fresh));
  // An error of the run, or on what it reads, lands on the private variable too.
  fresh = eng->NewVariable();
  auto fail = [](RunContext) { throw std::runtime_error("private failure"); };
  EXPECT_TRUE(RunNowIfIdle(eng.get(), Context::CPU(), {in}, {fresh}, SyncFnRef(fail), nullptr, 0, 1));
  VarHandle next = eng->NewVariable();
  EXPECT_TRUE(RunNowIfIdle(eng.get(), Context::CPU(), {fresh}, {next}, SyncFnRef(fn), nullptr, 0, 1));
  EXPECT_EQ(runs, 1);
  EXPECT_THROW(eng->WaitForVar(next), std::runtime_error);
  EXPECT_NO_THROW(eng->WaitForVar(fresh));  // the same error, raised once
  // A busy shared variable still refuses the run, private ones or not.
  Gate gate(eng.get(), busy);
  VarHandle unused = eng->NewVariable();
  EXPECT_FALSE(RunNowIfIdle(eng.get(), Context::CPU(), {busy}, {unused}, SyncFnRef(fn), nullptr, 0, 1));
  EXPECT_EQ(runs, 1);
  // More private variables than written ones is the caller's error.
  EXPECT_THROW(RunNowIfIdle(eng.get(), Context::CPU(), {}, {unused}, SyncFnRef(fn), nullptr, 0, 2), Error);
  gate.Open();
  eng->WaitForAll();
  for (VarHandle v : {in, fresh, busy, next, unused}) eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

TEST(EngineRunNow, NaiveEngineAlwaysLeavesItToAPush) {
  auto eng = CreateNaiveEngine();
  VarHandle v = eng->NewVariable();
  auto fn = [](RunContext) {};
  EXPECT_FALSE(eng->RunNowIfIdle(Context::CPU(), {}, {v}, SyncFnRef(fn)));
  EXPECT_FALSE(RunNowIfIdle(eng.get(), Context::CPU(), {}, {v}, SyncFnRef(fn), nullptr, 0, 1));
  eng->DeleteVariable({}, Context::CPU(), v);
  eng->WaitForAll();
}

TEST(EngineDelete, IdleVariableIsDeletedAtOnceAndABusyOneAfterItsWork) {
  auto eng = CreateThreadedEngine();
  VarHandle idle = eng->NewVariable(), busy = eng->NewVariable();
  std::thread::id deleted_on;
  eng->DeleteVariable([&](RunContext) { deleted_on = std::this_thread::get_id(); }, Context::CPU(), idle);
  EXPECT_EQ(deleted_on, std::this_thread::get_id());
  Gate gate(eng.get(), busy);
  std::atomic<bool> deleted{false};
  eng->DeleteVariable([&](RunContext) { deleted = true; }, Context::CPU(), busy);
  EXPECT_FALSE(deleted.load());
  gate.Open();
  eng->WaitForAll();
  EXPECT_TRUE(deleted.load());
}

TEST(EngineDelete, DeleteIfIdleDeletesOnlyAnIdleHostVariable) {
  auto eng = CreateThreadedEngine();
  VarHandle idle = eng->NewVariable(), busy = eng->NewVariable();
  EXPECT_TRUE(eng->DeleteVariableIfIdle(Context::CPU(), idle));
  // Pending work, or a GPU context, leaves the variable to DeleteVariable, untouched.
  Gate gate(eng.get(), busy);
  EXPECT_FALSE(eng->DeleteVariableIfIdle(Context::CPU(), busy));
  EXPECT_FALSE(eng->DeleteVariableIfIdle(Context::GPU(0), busy));
  int runs = 0;
  eng->PushSync([&](RunContext) { ++runs; }, Context::CPU(), {}, {busy});
  gate.Open();
  eng->WaitForAll();
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(eng->DeleteVariableIfIdle(Context::CPU(), busy));
  // The naive engine has no such shortcut.
  auto naive = CreateNaiveEngine();
  VarHandle v = naive->NewVariable();
  EXPECT_FALSE(naive->DeleteVariableIfIdle(Context::CPU(), v));
  naive->DeleteVariable({}, Context::CPU(), v);
}

TEST(EngineDelete, AnErrorWhileDeletingReachesWaitForAll) {
  auto eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  EXPECT_NO_THROW(eng->DeleteVariable([](RunContext) { throw std::runtime_error("free failed"); }, Context::CPU(), v));
  EXPECT_THROW(eng->WaitForAll(), std::runtime_error);
}

}  // namespace
}  // namespace engine
}  // namespace weft

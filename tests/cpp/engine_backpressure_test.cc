// The engine's backpressure (WEFT_ENGINE_MAX_PENDING, WEFT_ENGINE_MAX_PENDING_BYTES): a
// thread that pushes without ever waiting stays a bounded number of operations, and bytes
// written, ahead of the workers, and everything it pushed still runs, in order.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/engine/blocking.h"
#include "core/engine/engine.h"

namespace weft {
namespace engine {
namespace {

// An engine built with the environment variable `name` set to `value` (read when the
// engine is made).
std::unique_ptr<Engine> EngineWithEnv(const char* name, const char* value) {
  const char* old = std::getenv(name);
  std::string saved = old ? old : "";
  setenv(name, value, 1);
  auto e = Engine::Create("ThreadedEngine");
  if (old) setenv(name, saved.c_str(), 1); else unsetenv(name);
  return e;
}

// An engine built with WEFT_ENGINE_MAX_PENDING set to `limit`.
std::unique_ptr<Engine> EngineWithLimit(const char* limit) { return EngineWithEnv("WEFT_ENGINE_MAX_PENDING", limit); }

// An engine bounded only by bytes: WEFT_ENGINE_MAX_PENDING_BYTES set to `limit`, no count bound.
std::unique_ptr<Engine> EngineWithByteLimit(const char* limit) {
  const char* old = std::getenv("WEFT_ENGINE_MAX_PENDING");
  std::string saved = old ? old : "";
  setenv("WEFT_ENGINE_MAX_PENDING", "0", 1);
  auto e = EngineWithEnv("WEFT_ENGINE_MAX_PENDING_BYTES", limit);
  if (old) setenv("WEFT_ENGINE_MAX_PENDING", saved.c_str(), 1); else unsetenv("WEFT_ENGINE_MAX_PENDING");
  return e;
}

// Waits until `flag` is set (by another thread).
void WaitFor(const std::atomic<bool>& flag) {
  while (!flag.load()) std::this_thread::yield();
}

TEST(EngineBackpressure, APusherStaysBoundedAheadAndEverythingRunsInOrder) {
  auto engine = EngineWithLimit("64");
  VarHandle var = engine->NewVariable();
  std::atomic<int64_t> done{0};
  std::vector<int> order;
  int64_t most_ahead = 0;
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    engine->PushSync(
        [&, i](RunContext) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          order.push_back(i);
          done.fetch_add(1);
        },
        Context::CPU(), {}, {var});
    most_ahead = std::max<int64_t>(most_ahead, i + 1 - done.load());
  }
  engine->WaitForAll();
  EXPECT_EQ(done.load(), n);
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(order[i], i);
  // At most the limit is pending when a push returns (one more while it is being queued).
  EXPECT_LE(most_ahead, 65);
  EXPECT_GE(most_ahead, 48);  // and the pusher did run ahead: the bound is not a wait per push
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

TEST(EngineBackpressure, ZeroTurnsTheBoundOff) {
  auto engine = EngineWithLimit("0");
  VarHandle var = engine->NewVariable();
  std::atomic<bool> release{false};
  std::atomic<int> done{0};
  // The first operation holds the worker: with the default bound (4096) the 5000 pushes
  // behind it would wait for it; with none they all return at once.
  engine->PushSync([&](RunContext) { while (!release.load()) std::this_thread::yield(); done++; }, Context::CPU(), {},
                   {var});
  for (int i = 0; i < 5000; ++i) engine->PushSync([&](RunContext) { done++; }, Context::CPU(), {}, {var});
  EXPECT_LE(done.load(), 1);
  release = true;
  engine->WaitForAll();
  EXPECT_EQ(done.load(), 5001);
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

TEST(EngineBackpressure, OperationsPushingFromWorkersNeverWait) {
  // A worker that pushes more work than the limit allows would wait for itself.
  auto engine = EngineWithLimit("8");
  VarHandle var = engine->NewVariable();
  VarHandle other = engine->NewVariable();
  std::atomic<int> inner{0};
  Engine* e = engine.get();
  engine->PushSync(
      [&, e](RunContext) {
        for (int i = 0; i < 100; ++i) e->PushSync([&](RunContext) { inner++; }, Context::CPU(), {}, {other});
      },
      Context::CPU(), {}, {var});
  engine->WaitForAll();
  EXPECT_EQ(inner.load(), 100);
  engine->DeleteVariable(nullptr, Context::CPU(), var);
  engine->DeleteVariable(nullptr, Context::CPU(), other);
}

TEST(EngineBackpressure, PushesOfAThreadServingRunningWorkNeverWait) {
  // A custom operator's callback runs on a thread of its own while its operation holds the
  // queue: its pushes must not wait behind that operation. Two gated operations fill a
  // bound of 2; were the thread held at the bound, it would wait for the stall rule (half a
  // second, again after each completion) before its pushes went through.
  auto engine = EngineWithLimit("2");
  VarHandle var = engine->NewVariable();
  std::atomic<bool> open{false};
  for (int i = 0; i < 2; ++i) engine->PushSync([&](RunContext) { WaitFor(open); }, Context::CPU(), {}, {var});
  std::atomic<int> ran{0};
  double took = 0;
  std::thread serving([&] {
    SetPushesServeRunningWork(true);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) engine->PushSync([&](RunContext) { ran++; }, Context::CPU(), {}, {});
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  serving.join();
  EXPECT_LT(took, 0.25);
  open = true;
  engine->WaitForAll();
  EXPECT_EQ(ran.load(), 20);
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

std::atomic<int> g_hook_enters{0};
std::atomic<int> g_hook_leaves{0};
void* CountEnter() {
  g_hook_enters++;
  return &g_hook_enters;
}
void CountLeave(void* token) {
  EXPECT_EQ(token, &g_hook_enters);
  g_hook_leaves++;
}

TEST(EngineBackpressure, WaitForRoomUnlockedWaitsWithTheHooksOnlyWhenAPushWould) {
  auto engine = EngineWithLimit("4");
  SetBlockingHooks(CountEnter, CountLeave);
  g_hook_enters = 0;
  g_hook_leaves = 0;
  engine->WaitForRoomUnlocked();  // nothing queued: no wait, no hooks
  EXPECT_EQ(g_hook_enters.load(), 0);
  VarHandle var = engine->NewVariable();
  std::atomic<bool> open{false};
  for (int i = 0; i < 4; ++i) engine->PushSync([&](RunContext) { WaitFor(open); }, Context::CPU(), {}, {var});
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    engine->WaitForRoomUnlocked();
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(returned.load());  // the bound of 4 is reached: it waits
  open = true;
  waiter.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(g_hook_enters.load(), 1);
  EXPECT_EQ(g_hook_leaves.load(), 1);
  SetBlockingHooks(nullptr, nullptr);
  engine->WaitForAll();
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

TEST(EngineBackpressure, APoolWaitingOnItsPusherLetsThePushesThrough) {
  // The first operation waits for a gate the pushing thread opens only after all its
  // pushes: were the pusher held at the bound, neither could go on. It waits for the
  // stalled pool about half a second, once, and then pushes on.
  auto engine = EngineWithLimit("64");
  VarHandle var = engine->NewVariable();
  std::atomic<bool> open{false};
  std::atomic<int> done{0};
  engine->PushSync([&](RunContext) { while (!open.load()) std::this_thread::yield(); }, Context::CPU(), {}, {var});
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) engine->PushSync([&](RunContext) { done++; }, Context::CPU(), {}, {var});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  open = true;
  engine->WaitForAll();
  EXPECT_EQ(done.load(), 1000);
  EXPECT_LT(waited, 5.0);
  // Once the pool moves again, the bound holds again.
  int64_t most_ahead = 0;
  std::atomic<int> more{0};
  for (int i = 0; i < 1000; ++i) {
    engine->PushSync([&](RunContext) { std::this_thread::sleep_for(std::chrono::microseconds(20)); more++; },
                     Context::CPU(), {}, {var});
    most_ahead = std::max<int64_t>(most_ahead, i + 1 - more.load());
  }
  engine->WaitForAll();
  EXPECT_LE(most_ahead, 65);
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

TEST(EngineBackpressure, TheByteBoundKeepsAPusherBoundedByWhatItsOperationsWrite) {
  // 1000 bytes and operations writing 100 each: at most 10 pending once a push returns, and
  // a waiting pusher resumes when three quarters of the bytes are left.
  auto engine = EngineWithByteLimit("1000");
  VarHandle var = engine->NewVariable();
  std::atomic<int64_t> done{0};
  std::vector<int> order;
  int64_t most_ahead = 0;
  const int n = 500;
  for (int i = 0; i < n; ++i) {
    engine->PushSync(
        [&, i](RunContext) {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
          order.push_back(i);
          done.fetch_add(1);
        },
        Context::CPU(), {}, {var}, FnProperty::kNormal, 0, nullptr, 100);
    most_ahead = std::max<int64_t>(most_ahead, i + 1 - done.load());
  }
  engine->WaitForAll();
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(order[i], i);
  EXPECT_LE(most_ahead, 10);
  EXPECT_GE(most_ahead, 7);  // it ran ahead up to the bound, not one operation at a time
  engine->DeleteVariable(nullptr, Context::CPU(), var);
}

TEST(EngineBackpressure, AnOperationLargerThanTheByteBoundRunsAlone) {
  auto engine = EngineWithByteLimit("1000");
  VarHandle var = engine->NewVariable();
  VarHandle other = engine->NewVariable();
  std::atomic<bool> open{false}, small_done{false}, big_ran{false};
  // On an idle pool a push of a million bytes goes at once (waiting for the pool to empty
  // would be waiting for nothing)...
  engine->PushSync([&](RunContext) { big_ran = true; }, Context::CPU(), {}, {other}, FnProperty::kNormal, 0, nullptr,
                   1000000);
  engine->WaitForAll();
  EXPECT_TRUE(big_ran.load());
  // ...and behind pending work it waits until that work is done, then runs: no deadlock.
  big_ran = false;
  engine->PushSync(
      [&](RunContext) {
        WaitFor(open);
        small_done = true;
      },
      Context::CPU(), {}, {var}, FnProperty::kNormal, 0, nullptr, 10);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    open = true;
  });
  auto start = std::chrono::steady_clock::now();
  engine->PushSync([&](RunContext) { big_ran = true; }, Context::CPU(), {}, {other}, FnProperty::kNormal, 0, nullptr,
                   1000000);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool small_was_done = small_done.load();
  opener.join();
  engine->WaitForAll();
  EXPECT_TRUE(small_was_done) << "the large push returned while 10 bytes were still pending";
  EXPECT_GE(waited, 0.05);
  EXPECT_TRUE(big_ran.load());
  engine->DeleteVariable(nullptr, Context::CPU(), var);
  engine->DeleteVariable(nullptr, Context::CPU(), other);
}

TEST(EngineBackpressure, ZeroTurnsTheByteBoundOffAndPushesWithoutBytesIgnoreIt) {
  for (const char* limit : {"0", "1000"}) {
    auto engine = EngineWithByteLimit(limit);
    VarHandle var = engine->NewVariable();
    std::atomic<bool> release{false};
    std::atomic<int> done{0};
    // A million bytes pending, far over a bound of 1000...
    engine->PushSync([&](RunContext) { WaitFor(release); done++; }, Context::CPU(), {}, {var}, FnProperty::kNormal, 0,
                     nullptr, 1000000);
    // ...and yet, with the bound off, pushes of a gigabyte each go at once; under it,
    // pushes that declare no bytes do.
    int64_t bytes = std::string(limit) == "0" ? (int64_t{1} << 30) : 0;
    for (int i = 0; i < 200; ++i)
      engine->PushSync([&](RunContext) { done++; }, Context::CPU(), {}, {var}, FnProperty::kNormal, 0, nullptr, bytes);
    EXPECT_LE(done.load(), 1) << "limit " << limit;
    release = true;
    engine->WaitForAll();
    EXPECT_EQ(done.load(), 201);
    engine->DeleteVariable(nullptr, Context::CPU(), var);
  }
}

TEST(EngineBackpressure, AMalformedLimitIsNamed) {
  setenv("WEFT_ENGINE_MAX_PENDING", "many", 1);
  try {
    Engine::Create("ThreadedEngine");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("WEFT_ENGINE_MAX_PENDING: expected a non-negative integer, got 'many'"),
              std::string::npos)
        << err.what();
  }
  unsetenv("WEFT_ENGINE_MAX_PENDING");
  setenv("WEFT_ENGINE_MAX_PENDING_BYTES", "-5", 1);
  try {
    Engine::Create("ThreadedEngine");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("WEFT_ENGINE_MAX_PENDING_BYTES: expected a non-negative integer, got '-5'"),
              std::string::npos)
        << err.what();
  }
  unsetenv("WEFT_ENGINE_MAX_PENDING_BYTES");
}

}  // namespace
}  // namespace engine
}  // namespace weft

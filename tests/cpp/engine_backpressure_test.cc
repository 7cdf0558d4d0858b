// The engine's backpressure (WEFT_ENGINE_MAX_PENDING): a thread that pushes without ever
// waiting stays a bounded number of operations ahead of the workers, and everything it
// pushed still runs, in order.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/engine/engine.h"

namespace weft {
namespace engine {
namespace {

// An engine built with WEFT_ENGINE_MAX_PENDING set to `limit` (read when the engine is made).
std::unique_ptr<Engine> EngineWithLimit(const char* limit) {
  const char* old = std::getenv("WEFT_ENGINE_MAX_PENDING");
  std::string saved = old ? old : "";
  setenv("WEFT_ENGINE_MAX_PENDING", limit, 1);
  auto e = Engine::Create("ThreadedEngine");
  if (old) setenv("WEFT_ENGINE_MAX_PENDING", saved.c_str(), 1); else unsetenv("WEFT_ENGINE_MAX_PENDING");
  return e;
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
}

}  // namespace
}  // namespace engine
}  // namespace weft

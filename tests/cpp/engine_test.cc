// Engine tests, run against both engines built directly (not the process-wide one), so the
// naive and threaded engines are held to the same contract: dependency order, async
// completion, pre-created operators, deferred variable deletion, error propagation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/engine/blocking.h"
#include "core/engine/engine.h"
#include "core/engine/engine_impl.h"

namespace weft {
namespace engine {
namespace {

using std::chrono::seconds;

// Sets an environment variable for the life of the object (engines read their thread
// counts when they are built).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A one-shot gate that operations block on until the test opens it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // Several CPU workers so that independent operations really run at the same time.
    ScopedEnv workers("WEFT_CPU_WORKER_NTHREADS", "4");
    ScopedEnv prio("WEFT_CPU_PRIORITY_NTHREADS", "2");
    engine_ = Engine::Create(GetParam());
  }

  void TearDown() override {
    if (engine_) engine_->Shutdown();
  }

  bool threaded() const { return GetParam() == "ThreadedEngine"; }

  // WaitForAll with a time limit, so that a deadlock fails the test instead of hanging the
  // suite. On timeout the engine is leaked (its workers are stuck) and false is returned.
  // An exception raised by WaitForAll is stored in *error.
  bool WaitAllWithin(seconds limit, std::exception_ptr* error = nullptr) {
    struct State {
      std::promise<std::exception_ptr> done;
    };
    auto state = std::make_shared<State>();
    std::future<std::exception_ptr> fut = state->done.get_future();
    Engine* eng = engine_.get();
    std::thread([state, eng] {
      try {
        eng->WaitForAll();
        state->done.set_value(nullptr);
      } catch (...) {
        state->done.set_value(std::current_exception());
      }
    }).detach();
    if (fut.wait_for(limit) != std::future_status::ready) {
      engine_.release();
      return false;
    }
    std::exception_ptr e = fut.get();
    if (error) {
      *error = e;
    } else if (e) {
      std::rethrow_exception(e);
    }
    return true;
  }

  std::unique_ptr<Engine> engine_;
};

// Message of the exception WaitForVar / WaitForAll raised, or "" when none.
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ------------------------------------------------------------------ the stress test

// One random operation of the stress test: which variables it reads and writes, how it is
// pushed, and a salt that makes its update unique.
struct RandomOp {
  std::vector<int> reads;
  std::vector<int> writes;
  uint64_t salt = 0;
  int priority = 0;
  // 0 PushSync, 1 PushAsync completing inline, 2 PushSync on the prioritized pool,
  // 3 PushSync as kCPUInline (may run on the pushing thread), 4 RunNowIfIdle, pushed
  // as kCPUInline when refused (as the imperative path does), 5 a pre-created operator
  // pushed once and deleted at once (the deletion waits for the push to finish)
  int how = 0;
};

// The deterministic update: every written variable mixes its old value with a hash of the
// values read. Reads happen before any write, as in sequential execution.
void Apply(const RandomOp& op, uint64_t* vals) {
  uint64_t h = op.salt;
  for (int r : op.reads) h = (h ^ vals[r]) * 0x100000001B3ull;
  for (int w : op.writes) vals[w] = vals[w] * 6364136223846793005ull + (h ^ static_cast<uint64_t>(w));
}

std::vector<RandomOp> MakeOps(int n, int nvars, int var_base, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> nread(0, 4), nwrite(1, 3), var(0, nvars - 1), prio(-2, 2), how(0, 5);
  std::vector<RandomOp> ops(n);
  for (int i = 0; i < n; ++i) {
    RandomOp& op = ops[i];
    // Duplicates and variables both read and written are allowed on purpose: the engine
    // must merge them.
    for (int k = nread(rng); k > 0; --k) op.reads.push_back(var_base + var(rng));
    for (int k = nwrite(rng); k > 0; --k) op.writes.push_back(var_base + var(rng));
    // A variable listed twice in writes must be updated twice, as the sequential
    // reference does; keep writes distinct so both sides agree on one update each.
    std::sort(op.writes.begin(), op.writes.end());
    op.writes.erase(std::unique(op.writes.begin(), op.writes.end()), op.writes.end());
    op.salt = (static_cast<uint64_t>(seed) << 32) ^ static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    op.priority = prio(rng);
    op.how = how(rng);
  }
  return ops;
}

void PushOp(Engine* eng, const RandomOp& op, const std::vector<VarHandle>& vars, uint64_t* vals) {
  std::vector<VarHandle> reads, writes;
  for (int r : op.reads) reads.push_back(vars[r]);
  for (int w : op.writes) writes.push_back(vars[w]);
  // Captured by value: the long stress test generates its operations on the fly and keeps
  // none of them, so each closure carries its own copy.
  auto p = std::make_shared<const RandomOp>(op);
  switch (op.how) {
    case 0:
      eng->PushSync([p, vals](RunContext) { Apply(*p, vals); }, Context::CPU(), reads, writes, FnProperty::kNormal,
                    op.priority, "stress");
      break;
    case 1:
      eng->PushAsync(
          [p, vals](RunContext, CallbackOnComplete done) {
            Apply(*p, vals);
            done();
          },
          Context::CPU(), reads, writes, FnProperty::kNormal, op.priority, "stress_async");
      break;
    case 2:
      eng->PushSync([p, vals](RunContext) { Apply(*p, vals); }, Context::CPU(), reads, writes,
                    FnProperty::kCPUPrioritized, op.priority, "stress_prio");
      break;
    case 3:
      eng->PushSync([p, vals](RunContext) { Apply(*p, vals); }, Context::CPU(), reads, writes,
                    FnProperty::kCPUInline, op.priority, "stress_inline");
      break;
    case 4: {
      auto fn = [p, vals](RunContext) { Apply(*p, vals); };
      if (!eng->RunNowIfIdle(Context::CPU(), reads, writes, SyncFnRef(fn)))
        eng->PushSync(fn, Context::CPU(), reads, writes, FnProperty::kCPUInline, op.priority, "stress_run_now");
      break;
    }
    default: {
      OprHandle opr = eng->NewOperator(
          [p, vals](RunContext, CallbackOnComplete done) {
            Apply(*p, vals);
            done();
          },
          reads, writes, FnProperty::kNormal, "stress_opr");
      eng->Push(opr, Context::CPU(), op.priority);
      eng->DeleteOperator(opr);
      break;
    }
  }
}

// How many operations the long stress test pushes: WEFT_STRESS_OPS, default 10^6. The
// sanitizer builds of CI set it lower, since ASan and TSan slow every push tenfold.
int StressOps() {
  const char* s = std::getenv("WEFT_STRESS_OPS");
  if (s == nullptr || *s == '\0') return 1000000;
  char* end = nullptr;
  long n = std::strtol(s, &end, 10);
  if (*end != '\0' || n < 10000 || n > 100000000)
    throw std::invalid_argument(std::string("WEFT_STRESS_OPS: expected an integer in [1e4, 1e8], got '") + s + "'");
  return static_cast<int>(n);
}

// 10^6 random operations (reads, writes, every way to push, priorities in [-1000, 1000]) on a
// pool of variables that keeps changing: now and then a variable is deleted while
// operations on it are still pending and a new one takes its place, the test waits on one
// variable, or on everything, mid-stream. Every operation is also applied at once to a
// sequential reference; each variable incarnation has its own value cell, so the value a
// deleted variable's on_delete sees must be the reference's final value for it (every
// pending operation on it ran first, none after), a waited variable must match the
// reference as of the wait, and everything must match at the end, bit for bit.
TEST_P(EngineTest, StressMatchesSequentialExecution) {
  const int kOps = StressOps();
  constexpr int kSlots = 48;
  // Incarnation ids: the first kSlots variables, then one per deletion (at most one per op).
  const size_t kCells = kSlots + static_cast<size_t>(kOps);
  std::vector<uint64_t> vals(kCells), ref(kCells), seen(kCells);
  std::vector<char> deleted(kCells, 0), ran_on_delete(kCells, 0);
  auto init = [](size_t id) { return 0x9E3779B97F4A7C15ull * (id + 1) + 12345; };
  // Operations name variables by incarnation id; a slot holds the id of its live variable.
  std::vector<VarHandle> var_of_id(kCells, nullptr);
  std::vector<int> id_of(kSlots);
  int next_id = 0;
  auto fresh = [&](int s) {
    var_of_id[next_id] = engine_->NewVariable();
    id_of[s] = next_id;
    vals[next_id] = ref[next_id] = init(next_id);
    ++next_id;
  };
  for (int s = 0; s < kSlots; ++s) fresh(s);
  // Checks the on_delete values of every deletion so far; call after a WaitForAll.
  auto check_deleted = [&](const char* when) {
    for (int id = 0; id < next_id; ++id) {
      if (!deleted[id]) continue;
      ASSERT_TRUE(ran_on_delete[id]) << "incarnation " << id << ": on_delete had not run " << when;
      ASSERT_EQ(seen[id], ref[id]) << "incarnation " << id << ": on_delete saw another value than the "
                                   << "sequential one " << when;
    }
  };

  std::mt19937_64 rng(20261127);
  std::uniform_int_distribution<int> nread(0, 4), nwrite(1, 3), slot(0, kSlots - 1), prio(-1000, 1000), how(0, 5),
      event(0, 999);
  int64_t var_waits = 0, all_waits = 0, deletions = 0;
  // Sixteen waits for everything, spread over the run.
  const int wait_all_every = kOps / 16;
  uint64_t* cells = vals.data();
  for (int i = 0; i < kOps; ++i) {
    RandomOp op;
    for (int k = nread(rng); k > 0; --k) op.reads.push_back(id_of[slot(rng)]);
    for (int k = nwrite(rng); k > 0; --k) op.writes.push_back(id_of[slot(rng)]);
    std::sort(op.writes.begin(), op.writes.end());
    op.writes.erase(std::unique(op.writes.begin(), op.writes.end()), op.writes.end());
    op.salt = rng();
    op.priority = prio(rng);
    op.how = how(rng);
    PushOp(engine_.get(), op, var_of_id, cells);
    Apply(op, ref.data());

    int e = event(rng);
    if (e < 4) {
      // Delete a variable with its last operations possibly still queued; on_delete runs
      // as a write after them and records what it finds.
      int s = slot(rng);
      int old = id_of[s];
      deleted[old] = 1;
      ++deletions;
      if (e < 3) {
        engine_->DeleteVariable(
            [cells, old, &seen, &ran_on_delete](RunContext) {
              seen[old] = cells[old];
              ran_on_delete[old] = 1;
            },
            Context::CPU(), var_of_id[old]);
      } else {
        // Without on_delete: record the value by an ordinary read pushed just before.
        engine_->PushSync(
            [cells, old, &seen, &ran_on_delete](RunContext) {
              seen[old] = cells[old];
              ran_on_delete[old] = 1;
            },
            Context::CPU(), {var_of_id[old]}, {}, FnProperty::kNormal, prio(rng), "stress_last_read");
        engine_->DeleteVariable(nullptr, Context::CPU(), var_of_id[old]);
      }
      var_of_id[old] = nullptr;
      fresh(s);
    } else if (e < 6) {
      int s = slot(rng);
      engine_->WaitForVar(var_of_id[id_of[s]]);
      ++var_waits;
      ASSERT_EQ(vals[id_of[s]], ref[id_of[s]]) << "slot " << s << " (incarnation " << id_of[s] << ") after op " << i;
    }
    if (i % wait_all_every == wait_all_every - 1) {
      ASSERT_TRUE(WaitAllWithin(seconds(120))) << "WaitForAll did not return within 120 s at op " << i << ": deadlock";
      ++all_waits;
      for (int s = 0; s < kSlots; ++s) ASSERT_EQ(vals[id_of[s]], ref[id_of[s]]) << "slot " << s << " after op " << i;
      check_deleted("at a WaitForAll mid-stream");
      if (HasFatalFailure()) return;
    }
  }
  ASSERT_TRUE(WaitAllWithin(seconds(120))) << "WaitForAll did not return within 120 s: deadlock";
  for (int s = 0; s < kSlots; ++s) EXPECT_EQ(vals[id_of[s]], ref[id_of[s]]) << "slot " << s;
  check_deleted("at the end");
  if (HasFatalFailure()) return;
  // The schedule must really have exercised what it claims to (about kOps / 250 deletions and
  // kOps / 500 waits on one variable are expected).
  EXPECT_GT(deletions, kOps / 1000);
  EXPECT_GT(var_waits, kOps / 2000);
  EXPECT_EQ(all_waits, 16);
  for (int s = 0; s < kSlots; ++s) engine_->DeleteVariable(nullptr, Context::CPU(), var_of_id[id_of[s]]);
  ASSERT_TRUE(WaitAllWithin(seconds(60)));
}

// Two threads push at once, each on its own half of the variables plus reads of a shared
// variable that nobody writes, so that concurrent pushes contend on the same queues.
TEST_P(EngineTest, StressFromTwoPushingThreads) {
  constexpr int kHalf = 16;
  constexpr int kOps = 20000;
  std::vector<uint64_t> vals(2 * kHalf + 1), ref(2 * kHalf + 1);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = ref[i] = 77 * i + 5;
  std::vector<VarHandle> vars;
  for (size_t i = 0; i < vals.size(); ++i) vars.push_back(engine_->NewVariable());
  const int shared = 2 * kHalf;
  std::vector<RandomOp> ops[2] = {MakeOps(kOps, kHalf, 0, 11), MakeOps(kOps, kHalf, kHalf, 12)};
  for (auto& list : ops)
    for (size_t i = 0; i < list.size(); i += 3) list[i].reads.push_back(shared);
  for (auto& list : ops)
    for (const RandomOp& op : list) Apply(op, ref.data());

  std::vector<std::thread> pushers;
  for (int t = 0; t < 2; ++t) {
    pushers.emplace_back([&, t] {
      for (const RandomOp& op : ops[t]) PushOp(engine_.get(), op, vars, vals.data());
    });
  }
  for (auto& th : pushers) th.join();
  ASSERT_TRUE(WaitAllWithin(seconds(60))) << "WaitForAll did not return within 60 s: deadlock";
  for (size_t i = 0; i < vals.size(); ++i) EXPECT_EQ(vals[i], ref[i]) << "variable " << i;
  for (VarHandle v : vars) engine_->DeleteVariable(nullptr, Context::CPU(), v);
}

// ------------------------------------------------------------------ pushes and callbacks

TEST_P(EngineTest, PushAsyncCompletesThroughTheCallback) {
  VarHandle v = engine_->NewVariable();
  std::atomic<int> value{0};
  std::vector<std::thread> helpers;
  std::mutex helpers_mu;
  // The work finishes on another thread, after the function has returned; the next op on
  // the variable must still see it.
  engine_->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        std::lock_guard<std::mutex> lock(helpers_mu);
        helpers.emplace_back([&value, done] {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          value.store(41);
          done();
        });
      },
      Context::CPU(), {}, {v}, FnProperty::kAsync);
  int seen = -1;
  engine_->PushSync([&](RunContext) { seen = value.load() + 1; }, Context::CPU(), {v}, {});
  VarHandle out = engine_->NewVariable();
  engine_->PushSync([&](RunContext) { value.store(seen * 2); }, Context::CPU(), {}, {out, v});
  engine_->WaitForVar(v);
  EXPECT_EQ(seen, 42);
  EXPECT_EQ(value.load(), 84);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
  for (auto& t : helpers) t.join();
  engine_->DeleteVariable(nullptr, Context::CPU(), v);
  engine_->DeleteVariable(nullptr, Context::CPU(), out);
}

TEST_P(EngineTest, CallbackErrorIsRaisedAtWait) {
  VarHandle v = engine_->NewVariable();
  engine_->PushAsync(
      [](RunContext, CallbackOnComplete done) {
        done(std::make_exception_ptr(Error(ErrorKind::kIO, "device lost the page")));
      },
      Context::CPU(), {}, {v});
  try {
    engine_->WaitForVar(v);
    FAIL() << "WaitForVar should raise the callback's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIO);
    EXPECT_STREQ(e.what(), "device lost the page");
  }
  // Raised once: WaitForAll does not raise what WaitForVar reported.
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForAll(); }), "");
  // Unwaited, the error is WaitForAll's to raise, once.
  engine_->PushAsync(
      [](RunContext, CallbackOnComplete done) { done(std::make_exception_ptr(Error(ErrorKind::kIO, "again"))); },
      Context::CPU(), {}, {v});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForAll(); }), "again");
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForAll(); }), "");
  engine_->DeleteVariable(nullptr, Context::CPU(), v);
}

TEST_P(EngineTest, PrioritiesAreAccepted) {
  std::vector<VarHandle> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine_->NewVariable());
  std::atomic<int> ran{0};
  for (int i = 0; i < 8; ++i) {
    int prio = (i % 2 ? 1 : -1) * i * 10;
    engine_->PushSync([&](RunContext) { ran++; }, Context::CPU(), {}, {vars[i]}, FnProperty::kNormal, prio);
  }
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
  EXPECT_EQ(ran.load(), 8);
  for (VarHandle v : vars) engine_->DeleteVariable(nullptr, Context::CPU(), v);
}

// Pushes an operation on `var` that holds a worker until `gate` opens; returns once it runs.
void HoldWorker(Engine* eng, VarHandle var, Gate* gate) {
  std::promise<void> started;
  eng->PushSync(
      [&started, gate](RunContext) {
        started.set_value();
        gate->Wait();
      },
      Context::CPU(), {}, {var});
  started.get_future().wait();
}

// With one worker held busy, ready operations queue up and must leave in priority order
// (ties in push order).
TEST(ThreadedEngineTest, HigherPriorityRunsFirst) {
  ScopedEnv workers("WEFT_CPU_WORKER_NTHREADS", "1");
  std::unique_ptr<Engine> eng = CreateThreadedEngine();
  VarHandle blocker = eng->NewVariable();
  Gate gate;
  HoldWorker(eng.get(), blocker, &gate);
  std::mutex mu;
  std::vector<int> order;
  const int prios[] = {0, 5, -3, 10, 5, 0};
  std::vector<VarHandle> vars;
  for (size_t i = 0; i < std::size(prios); ++i) {
    vars.push_back(eng->NewVariable());
    int tag = static_cast<int>(i);
    eng->PushSync(
        [&, tag](RunContext) {
          std::lock_guard<std::mutex> lock(mu);
          order.push_back(tag);
        },
        Context::CPU(), {}, {vars.back()}, FnProperty::kNormal, prios[i]);
  }
  gate.Open();
  eng->WaitForAll();
  // Priorities 10, 5, 5, 0, 0, -3; equal priorities keep push order.
  EXPECT_EQ(order, (std::vector<int>{3, 1, 4, 0, 5, 2}));
  eng->DeleteVariable(nullptr, Context::CPU(), blocker);
  for (VarHandle v : vars) eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->Shutdown();
}

// ------------------------------------------------------------------ pre-created operators

TEST_P(EngineTest, PreCreatedOperatorPushedManyTimes) {
  VarHandle in = engine_->NewVariable();
  VarHandle acc = engine_->NewVariable();
  int64_t input = 3;
  int64_t total = 0;
  auto token = std::make_shared<int>(0);
  OprHandle op = engine_->NewOperator(
      [&input, &total, token](RunContext, CallbackOnComplete done) {
        total = total * 2 + input;
        done();
      },
      {in}, {acc}, FnProperty::kNormal, "accumulate");
  int64_t expect = 0;
  for (int i = 0; i < 20; ++i) {
    engine_->Push(op, Context::CPU(), i % 3);
    expect = expect * 2 + 3;
  }
  // Changing the input in between is ordered after the pushes that read it.
  engine_->PushSync([&](RunContext) { input = -1; }, Context::CPU(), {}, {in});
  for (int i = 0; i < 5; ++i) {
    engine_->Push(op, Context::CPU());
    expect = expect * 2 - 1;
  }
  // Deleting the operator while pushes are in flight is allowed; it goes when they are done.
  engine_->DeleteOperator(op);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
  EXPECT_EQ(total, expect);
  EXPECT_EQ(token.use_count(), 1) << "the operator's function was not freed after DeleteOperator";
  engine_->DeleteVariable(nullptr, Context::CPU(), in);
  engine_->DeleteVariable(nullptr, Context::CPU(), acc);
}

TEST_P(EngineTest, NullHandlesAreErrors) {
  VarHandle v = engine_->NewVariable();
  try {
    engine_->PushSync([](RunContext) {}, Context::CPU(), {nullptr}, {v});
    FAIL() << "a null read variable should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("null"), std::string::npos) << e.what();
  }
  EXPECT_THROW(engine_->Push(nullptr, Context::CPU()), Error);
  EXPECT_THROW(engine_->WaitForVar(nullptr), Error);
  EXPECT_THROW(engine_->DeleteVariable(nullptr, Context::CPU(), nullptr), Error);
  EXPECT_THROW(engine_->NewOperator(AsyncFn(), {}, {v}), Error);
  engine_->DeleteVariable(nullptr, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
}

// ------------------------------------------------------------------ deferred deletion

TEST_P(EngineTest, DeleteVariableWaitsForPendingOperations) {
  VarHandle v = engine_->NewVariable();
  VarHandle other = engine_->NewVariable();
  std::mutex mu;
  std::vector<std::string> events;
  auto note = [&](std::string what) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(std::move(what));
  };
  for (int i = 0; i < 3; ++i) {
    engine_->PushSync(
        [&, i](RunContext) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          note("write" + std::to_string(i));
        },
        Context::CPU(), {}, {v});
  }
  engine_->PushSync(
      [&](RunContext) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        note("read");
      },
      Context::CPU(), {v}, {other});
  engine_->DeleteVariable([&](RunContext) { note("delete"); }, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
  EXPECT_EQ(events, (std::vector<std::string>{"write0", "write1", "write2", "read", "delete"}));
  engine_->DeleteVariable(nullptr, Context::CPU(), other);
}

// The threaded engine returns from DeleteVariable at once and frees later.
TEST(ThreadedEngineTest, DeleteVariableDoesNotBlock) {
  std::unique_ptr<Engine> eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  CallbackOnComplete held;
  std::promise<void> started;
  eng->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        held = done;
        started.set_value();
      },
      Context::CPU(), {}, {v}, FnProperty::kAsync);
  std::atomic<bool> deleted{false};
  eng->DeleteVariable([&](RunContext) { deleted = true; }, Context::CPU(), v);
  started.get_future().wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(deleted.load()) << "the variable was deleted while an operation on it was pending";
  held();
  eng->WaitForAll();
  EXPECT_TRUE(deleted.load());
  eng->Shutdown();
}

// ------------------------------------------------------------------ errors

TEST_P(EngineTest, ExceptionIsRaisedAtTheNextWaitOnWhatItWrites) {
  VarHandle a = engine_->NewVariable();
  VarHandle b = engine_->NewVariable();
  VarHandle c = engine_->NewVariable();
  bool downstream_ran = false;
  int c_value = 0;
  engine_->PushSync([](RunContext) { throw Error(ErrorKind::kShape, "bad shape in op"); }, Context::CPU(), {}, {a});
  // Reads the broken variable: it must not run, and its output inherits the error.
  engine_->PushSync([&](RunContext) { downstream_ran = true; }, Context::CPU(), {a}, {b});
  engine_->PushSync([&](RunContext) { c_value = 7; }, Context::CPU(), {}, {c});

  try {
    engine_->WaitForVar(a);
    FAIL() << "WaitForVar(a) should raise the op's error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_STREQ(e.what(), "bad shape in op");
  }
  EXPECT_FALSE(downstream_ran);
  // Raised once, as in MXNet: b holds the same error, which the wait on a reported.
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(b); }), "");
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(c); }), "");
  EXPECT_EQ(c_value, 7);
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(a); }), "");
  // WaitForVar raised it already: WaitForAll does not raise it again.
  std::exception_ptr all;
  ASSERT_TRUE(WaitAllWithin(seconds(30), &all));
  EXPECT_TRUE(all == nullptr);
  // A reported error no longer flows into what reads its variables.
  bool reader_ran = false;
  engine_->PushSync([&](RunContext) { reader_ran = true; }, Context::CPU(), {a}, {b});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(b); }), "");
  EXPECT_TRUE(reader_ran);

  // An error met first through a downstream variable is the same one: raised there, once.
  engine_->PushSync([](RunContext) { throw Error(ErrorKind::kValue, "second"); }, Context::CPU(), {}, {a});
  engine_->PushSync([](RunContext) {}, Context::CPU(), {a}, {b});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(b); }), "second");
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(a); }), "");
  ASSERT_TRUE(WaitAllWithin(seconds(30), &all));
  EXPECT_TRUE(all == nullptr);

  engine_->PushSync([](RunContext) {}, Context::CPU(), {}, {a});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(a); }), "");
  for (VarHandle v : {a, b, c}) engine_->DeleteVariable(nullptr, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
}

// A reader granted while its input held an unraised error inherits that error even when a
// wait raises it before the reader gets a worker (CI's ASan run once saw the reader run:
// the error was checked when the reader ran, after the wait had marked it reported).
TEST(ThreadedEngineTest, AReaderGrantedBeforeTheErrorWasRaisedInheritsIt) {
  ScopedEnv workers("WEFT_CPU_WORKER_NTHREADS", "1");
  std::unique_ptr<Engine> eng = CreateThreadedEngine();
  VarHandle a = eng->NewVariable(), b = eng->NewVariable(), blocker = eng->NewVariable();
  eng->PushSync([](RunContext) { throw Error(ErrorKind::kShape, "broken a"); }, Context::CPU(), {}, {a});
  EXPECT_EQ(ErrorOf([&] { eng->WaitForAll(); }), "broken a");
  // The error was raised by WaitForAll: write a fresh one, left unraised this time.
  eng->PushSync([](RunContext) { throw Error(ErrorKind::kValue, "broken again"); }, Context::CPU(), {}, {a});
  Gate gate;
  HoldWorker(eng.get(), blocker, &gate);
  // Granted at once (nothing else holds a), then queued behind the blocker for the one worker.
  bool reader_ran = false;
  eng->PushSync([&](RunContext) { reader_ran = true; }, Context::CPU(), {a}, {b});
  EXPECT_EQ(ErrorOf([&] { eng->WaitForVar(a); }), "broken again");
  gate.Open();
  EXPECT_EQ(ErrorOf([&] { eng->WaitForVar(b); }), "");
  EXPECT_FALSE(reader_ran) << "the reader ran on an input whose error it was granted with";
  EXPECT_EQ(ErrorOf([&] { eng->WaitForAll(); }), "");
  for (VarHandle v : {a, b, blocker}) eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->WaitForAll();
  eng->Shutdown();
}

TEST_P(EngineTest, PendingErrorOnAWrittenVariableIsTheWritersToo) {
  // As MXNet's engine: `gen` stands for a random generator both samplers write. The second
  // sampler takes the first one's error (it does not run), and raising it through its
  // output reports it for every variable, so WaitForAll is clean.
  VarHandle a = engine_->NewVariable();
  VarHandle b = engine_->NewVariable();
  VarHandle gen = engine_->NewVariable();
  bool second_ran = false, third_ran = false;
  engine_->PushSync([](RunContext) { throw Error(ErrorKind::kValue, "scale must be >= 0"); }, Context::CPU(), {},
                    {a, gen});
  engine_->PushSync([&](RunContext) { second_ran = true; }, Context::CPU(), {}, {b, gen});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(b); }), "scale must be >= 0");
  EXPECT_FALSE(second_ran);
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(a); }), "");
  std::exception_ptr all;
  ASSERT_TRUE(WaitAllWithin(seconds(30), &all));
  EXPECT_TRUE(all == nullptr);
  // Reported, the error no longer stops writers.
  engine_->PushSync([&](RunContext) { third_ran = true; }, Context::CPU(), {}, {gen});
  EXPECT_EQ(ErrorOf([&] { engine_->WaitForVar(gen); }), "");
  EXPECT_TRUE(third_ran);
  for (VarHandle v : {a, b, gen}) engine_->DeleteVariable(nullptr, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
}

TEST_P(EngineTest, ExceptionOfAnyTypeIsCarried) {
  VarHandle a = engine_->NewVariable();
  engine_->PushSync([](RunContext) { throw std::out_of_range("index 9 of 3"); }, Context::CPU(), {}, {a});
  EXPECT_THROW(engine_->WaitForAll(), std::out_of_range);
  EXPECT_NO_THROW(engine_->WaitForVar(a));  // WaitForAll reported it: raised once
  engine_->PushSync([](RunContext) { throw std::out_of_range("index 4 of 2"); }, Context::CPU(), {}, {a});
  EXPECT_THROW(engine_->WaitForVar(a), std::out_of_range);
  engine_->DeleteVariable(nullptr, Context::CPU(), a);
}

// An operation must not wait on its own engine: that would wait for itself forever.
TEST(ThreadedEngineTest, WaitInsideAnOperationIsAnError) {
  std::unique_ptr<Engine> eng = CreateThreadedEngine();
  VarHandle v = eng->NewVariable();
  VarHandle w = eng->NewVariable();
  Engine* e = eng.get();
  eng->PushSync([e, w](RunContext) { e->WaitForVar(w); }, Context::CPU(), {}, {v});
  std::string msg = ErrorOf([&] { eng->WaitForVar(v); });
  EXPECT_NE(msg.find("inside an engine operation"), std::string::npos) << msg;
  EXPECT_NO_THROW(eng->WaitForAll());  // raised once, above
  eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->DeleteVariable(nullptr, Context::CPU(), w);
  eng->Shutdown();
}

// ------------------------------------------------------------------ WaitForAll

TEST_P(EngineTest, WaitForAllAfterManyOps) {
  constexpr int kVars = 8;
  constexpr int kPerThread = 5000;
  std::vector<VarHandle> vars;
  for (int i = 0; i < kVars; ++i) vars.push_back(engine_->NewVariable());
  std::vector<int64_t> counts(kVars, 0);
  std::vector<std::thread> pushers;
  // Each thread pushes on every variable; increments commute, so the totals are exact
  // whatever the interleaving of pushes.
  for (int t = 0; t < 3; ++t) {
    pushers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int k = (i + t) % kVars;
        engine_->PushSync([&counts, k](RunContext) { counts[k] += 1; }, Context::CPU(), {}, {vars[k]});
      }
    });
  }
  for (auto& th : pushers) th.join();
  ASSERT_TRUE(WaitAllWithin(seconds(60)));
  int64_t total = 0;
  for (int i = 0; i < kVars; ++i) {
    EXPECT_EQ(counts[i], 3 * kPerThread / kVars) << "variable " << i;
    total += counts[i];
  }
  EXPECT_EQ(total, 3 * kPerThread);
  for (VarHandle v : vars) engine_->DeleteVariable(nullptr, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
}

// The blocking hooks of the test below: a waiting thread lets go of the lock and takes it
// back, as Python's front end does with the GIL.
std::mutex* g_hook_lock = nullptr;
std::atomic<int> g_hook_enters{0};
std::atomic<int> g_hook_leaves{0};
void* HookEnter() {
  g_hook_enters.fetch_add(1);
  g_hook_lock->unlock();
  return g_hook_lock;
}
void HookLeave(void* token) {
  static_cast<std::mutex*>(token)->lock();
  g_hook_leaves.fetch_add(1);
}

TEST_P(EngineTest, BlockingHooksLetTheWaiterReleaseALockTheWorkNeeds) {
  // The operation completes on a thread that needs a lock the waiting thread holds, as a
  // custom operator's callback needs the GIL of a Python thread waiting for it: without the
  // hooks this never ends.
  std::mutex lock;
  g_hook_lock = &lock;
  g_hook_enters = 0;
  g_hook_leaves = 0;
  SetBlockingHooks(HookEnter, HookLeave);
  struct Unset {
    ~Unset() { SetBlockingHooks(nullptr, nullptr); }
  } unset;
  lock.lock();
  VarHandle v = engine_->NewVariable();
  int value = 0;
  engine_->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        std::thread([&lock, &value, done]() mutable {
          std::lock_guard<std::mutex> held(lock);
          value = 42;
          done();
        }).detach();
      },
      Context::CPU(), {}, {v});
  engine_->WaitForVar(v);
  EXPECT_EQ(value, 42);
  EXPECT_GE(g_hook_enters.load(), 1);
  EXPECT_EQ(g_hook_enters.load(), g_hook_leaves.load());
  // A wait that does not block runs no hook.
  g_hook_enters = 0;
  engine_->WaitForVar(v);
  EXPECT_EQ(g_hook_enters.load(), 0);
  lock.unlock();
  // Before any other thread may wait: the hooks unlock a lock only this thread holds.
  SetBlockingHooks(nullptr, nullptr);
  engine_->DeleteVariable(nullptr, Context::CPU(), v);
  ASSERT_TRUE(WaitAllWithin(seconds(30)));
}

TEST(EngineFactoryTest, UnknownTypeIsAnError) {
  try {
    Engine::Create("FastestEngine");
    FAIL() << "an unknown engine type should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("FastestEngine"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(BothEngines, EngineTest, ::testing::Values("NaiveEngine", "ThreadedEngine"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace engine
}  // namespace weft

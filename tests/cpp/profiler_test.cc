// The profiler: what both engines record, the Chrome trace it writes, the aggregate
// statistics, pause, the user objects, and the C API over all of it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/engine/engine.h"
#include "core/engine/engine_impl.h"
#include "core/profiler/profiler.h"
#include "core/storage/storage.h"
#include "weft/c_api.h"

namespace weft {
namespace profiler {
namespace {

std::vector<nlohmann::json> Events(const nlohmann::json& t, const std::string& name, const std::string& ph) {
  std::vector<nlohmann::json> r;
  for (const auto& e : t["traceEvents"])
    if (e["name"] == name && e["ph"] == ph) r.push_back(e);
  return r;
}

// Starts a profiler with aggregate statistics and no file thread; stops and empties it.
class Profiling : public ::testing::Test {
 protected:
  void SetUp() override {
    SetConfig({{"profile_all", "True"}, {"aggregate_stats", "True"}, {"continuous_dump", "False"},
               {"filename", path_}});
    SetState(true);
  }
  void TearDown() override {
    SetState(false);
    Dump(true);
    std::remove(path_.c_str());
    SetConfig({{"continuous_dump", "False"}});
  }
  static nlohmann::json Trace() { return nlohmann::json::parse(TraceJson()); }

  std::string path_ = "/tmp/weft_profiler_test_" + std::to_string(::getpid()) + ".json";
};

void Spin(std::chrono::microseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST_F(Profiling, BothEnginesRecordNamedOperationsOnTheThreadThatRanThem) {
  for (const char* type : {"ThreadedEngine", "NaiveEngine"}) {
    auto eng = engine::Engine::Create(type);
    engine::VarHandle v = eng->NewVariable();
    const std::string name = std::string("spin_") + type;
    eng->PushAsync(
        [](engine::RunContext, engine::CallbackOnComplete done) {
          Spin(std::chrono::microseconds(2000));
          done();
        },
        Context::CPU(), {}, {v}, engine::FnProperty::kNormal, 0, Intern(name), 4096);
    eng->PushSync([](engine::RunContext) {}, Context::CPU(), {v}, {}, engine::FnProperty::kNormal, 0, nullptr);
    eng->WaitForAll();
    eng->DeleteVariable({}, Context::CPU(), v);
    eng->WaitForAll();
    nlohmann::json t = Trace();
    auto ops = Events(t, name, "X");
    ASSERT_EQ(ops.size(), 1u) << type;
    EXPECT_GE(ops[0]["dur"].get<double>(), 1900.0) << type;  // microseconds
    EXPECT_EQ(ops[0]["args"]["device"], "cpu(0)");
    EXPECT_EQ(ops[0]["args"]["bytes_allocated"], 4096);
    bool named = false;
    for (const auto& e : t["traceEvents"])
      if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == ops[0]["tid"]) named = true;
    EXPECT_TRUE(named) << type;
  }
  // The unnamed operation is not recorded.
  size_t unnamed = 0;
  const auto trace = Trace();  // a range-for over a member of a temporary reads freed memory
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "operator" && e["name"] == "") ++unnamed;
  EXPECT_EQ(unnamed, 0u);
}

TEST_F(Profiling, WorkerThreadsGetNamedTracks) {
  auto eng = engine::Engine::Create("ThreadedEngine");
  engine::VarHandle v = eng->NewVariable();
  std::thread::id worker;
  eng->PushSync([&](engine::RunContext) { worker = std::this_thread::get_id(); }, Context::CPU(), {}, {v},
                engine::FnProperty::kNormal, 0, "on_worker");
  eng->WaitForAll();
  eng->DeleteVariable({}, Context::CPU(), v);
  EXPECT_NE(worker, std::this_thread::get_id());
  nlohmann::json t = Trace();
  auto ops = Events(t, "on_worker", "X");
  ASSERT_EQ(ops.size(), 1u);
  std::string track;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == ops[0]["tid"]) track = e["args"]["name"];
  EXPECT_EQ(track, "cpu worker 0 on cpu(0)");
}

TEST_F(Profiling, PauseDropsAndStopEndsRecording) {
  auto eng = engine::Engine::Create("NaiveEngine");
  engine::VarHandle v = eng->NewVariable();
  auto push = [&](const char* name) {
    eng->PushSync([](engine::RunContext) {}, Context::CPU(), {}, {v}, engine::FnProperty::kNormal, 0, name);
  };
  push("before_pause");
  SetPaused(true);
  EXPECT_EQ(ActiveModes(), 0u);
  push("while_paused");
  SetPaused(false);
  push("after_resume");
  SetState(false);
  push("after_stop");
  eng->DeleteVariable({}, Context::CPU(), v);
  nlohmann::json t = Trace();
  EXPECT_EQ(Events(t, "before_pause", "X").size(), 1u);
  EXPECT_EQ(Events(t, "while_paused", "X").size(), 0u);
  EXPECT_EQ(Events(t, "after_resume", "X").size(), 1u);
  EXPECT_EQ(Events(t, "after_stop", "X").size(), 0u);
}

TEST_F(Profiling, StorageRecordsBytesInUse) {
  Context ctx = Context::CPU();
  int64_t before = Storage::Get()->Stats(ctx).bytes_in_use;
  int64_t mark = ThreadAllocatedBytes();
  StorageHandle h = Storage::Get()->Alloc(1 << 20, ctx);
  EXPECT_EQ(ThreadAllocatedBytes() - mark, 1 << 20);
  Storage::Get()->Free(h);
  std::vector<int64_t> values;
  for (const auto& e : Events(Trace(), "Memory: cpu(0)", "C")) values.push_back(e["args"]["bytes_in_use"]);
  ASSERT_GE(values.size(), 2u);
  EXPECT_EQ(values[values.size() - 2], before + (1 << 20));
  EXPECT_EQ(values.back(), before);
}

TEST_F(Profiling, UserObjectsNestAndCountersKeepTheirValues) {
  Domain* d = GetDomain("cpp_domain");
  EXPECT_EQ(GetDomain("cpp_domain"), d);
  Duration task(Duration::kTask, d, "outer_task");
  Duration event(Duration::kEvent, nullptr, "inner_event");
  Counter counter(d, "cpp_counter");
  task.Start();
  event.Start();
  counter.Set(3);
  counter.Adjust(-1);
  Mark(d, "cpp_marker", "thread");
  event.Stop();
  task.Stop();
  EXPECT_EQ(counter.value(), 2);
  EXPECT_THROW(task.Stop(), Error);
  EXPECT_THROW(Mark(d, "x", "nowhere"), Error);
  nlohmann::json t = Trace();
  double tb = Events(t, "outer_task", "B")[0]["ts"], te = Events(t, "outer_task", "E")[0]["ts"];
  double eb = Events(t, "inner_event", "B")[0]["ts"], ee = Events(t, "inner_event", "E")[0]["ts"];
  EXPECT_LE(tb, eb);
  EXPECT_LE(eb, ee);
  EXPECT_LE(ee, te);
  EXPECT_EQ(Events(t, "outer_task", "B")[0]["cat"], "cpp_domain");
  auto c = Events(t, "cpp_counter", "C");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["args"]["value"], 3);
  EXPECT_EQ(c[1]["args"]["value"], 2);
  auto m = Events(t, "cpp_marker", "i");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]["s"], "t");
}

TEST_F(Profiling, AggregateStatisticsSortAndReset) {
  auto eng = engine::Engine::Create("NaiveEngine");
  engine::VarHandle v = eng->NewVariable();
  for (int i = 0; i < 3; ++i)
    eng->PushSync([](engine::RunContext) { Spin(std::chrono::microseconds(300)); }, Context::CPU(), {}, {v},
                  engine::FnProperty::kNormal, 0, "slow_op");
  eng->PushSync([](engine::RunContext) {}, Context::CPU(), {}, {v}, engine::FnProperty::kNormal, 0, "fast_op");
  eng->DeleteVariable({}, Context::CPU(), v);
  auto stats = nlohmann::ordered_json::parse(Dumps(false, StatsFormat::kJson, SortBy::kTotal, false));
  const auto& ops = stats["Time"]["operator"];
  EXPECT_EQ(ops["slow_op"]["Count"], 3);
  EXPECT_EQ(ops["fast_op"]["Count"], 1);
  EXPECT_GE(ops["slow_op"]["Min"].get<double>(), 0.29);
  std::vector<std::string> order;
  for (auto it = ops.begin(); it != ops.end(); ++it) order.push_back(it.key());
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], "slow_op");
  auto asc = nlohmann::ordered_json::parse(Dumps(false, StatsFormat::kJson, SortBy::kCount, true));
  EXPECT_EQ(asc["Time"]["operator"].begin().key(), "fast_op");
  std::string table = Dumps(true, StatsFormat::kTable, SortBy::kTotal, false);
  EXPECT_NE(table.find("slow_op"), std::string::npos);
  EXPECT_EQ(Dumps(false, StatsFormat::kTable, SortBy::kTotal, false).find("slow_op"), std::string::npos);
}

TEST_F(Profiling, DumpWritesTheFileAndAFinalDumpStops) {
  auto eng = engine::Engine::Create("NaiveEngine");
  engine::VarHandle v = eng->NewVariable();
  eng->PushSync([](engine::RunContext) {}, Context::CPU(), {}, {v}, engine::FnProperty::kNormal, 0, "dumped_op");
  eng->DeleteVariable({}, Context::CPU(), v);
  Dump(false);
  std::ifstream f(path_);
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json t = nlohmann::json::parse(ss.str());
  EXPECT_EQ(Events(t, "dumped_op", "X").size(), 1u);
  EXPECT_TRUE(IsRunning());
  Dump(true);
  EXPECT_FALSE(IsRunning());
  EXPECT_EQ(Events(Trace(), "dumped_op", "X").size(), 0u);
}

TEST(ProfilerConfig, RefusesUnknownKeysAndBadValuesAndAppliesNothing) {
  EXPECT_THROW(SetConfig({{"profile_everything", "1"}}), Error);
  EXPECT_THROW(SetConfig({{"aggregate_stats", "yes"}}), Error);
  EXPECT_THROW(SetConfig({{"dump_period", "0"}}), Error);
  EXPECT_THROW(SetConfig({{"profile_process", "server"}}), Error);
  EXPECT_EQ(ActiveModes(), 0u);
}

TEST(ProfilerCApi, ConfiguresRunsDumpsAndManagesObjects) {
  const std::string path = "/tmp/weft_profiler_capi_" + std::to_string(::getpid()) + ".json";
  const char* keys[] = {"profile_imperative", "aggregate_stats", "continuous_dump", "profile_memory", "filename"};
  const char* vals[] = {"True", "True", "False", "False", path.c_str()};
  ASSERT_EQ(weft_profiler_set_config(5, keys, vals), WEFT_OK) << weft_get_last_error();
  ASSERT_EQ(weft_profiler_set_state(WEFT_PROFILER_RUN), WEFT_OK);
  int state = -1;
  ASSERT_EQ(weft_profiler_get_state(&state), WEFT_OK);
  EXPECT_EQ(state, WEFT_PROFILER_RUN);

  weft_profile_domain_t* dom = nullptr;
  weft_profile_duration_t* task = nullptr;
  weft_profile_counter_t* counter = nullptr;
  ASSERT_EQ(weft_profile_domain_create("capi", &dom), WEFT_OK);
  ASSERT_EQ(weft_profile_task_create(dom, "capi_task", &task), WEFT_OK);
  ASSERT_EQ(weft_profile_counter_create(dom, "capi_counter", &counter), WEFT_OK);
  ASSERT_EQ(weft_profile_duration_start(task), WEFT_OK);
  EXPECT_EQ(weft_profile_duration_start(task), WEFT_ERR_VALUE);
  ASSERT_EQ(weft_profile_counter_set(counter, 7), WEFT_OK);
  ASSERT_EQ(weft_profile_counter_adjust(counter, -3), WEFT_OK);
  int64_t value = 0;
  ASSERT_EQ(weft_profile_counter_get(counter, &value), WEFT_OK);
  EXPECT_EQ(value, 4);
  ASSERT_EQ(weft_profile_marker(dom, "capi_marker", "process"), WEFT_OK);
  EXPECT_EQ(weft_profile_marker(dom, "capi_marker", "elsewhere"), WEFT_ERR_VALUE);
  const int64_t shape[] = {8, 8};
  weft_ndarray_t* arr = nullptr;
  ASSERT_EQ(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU, 0}, &arr), WEFT_OK);
  ASSERT_EQ(weft_profiler_set_paused(1), WEFT_OK);
  EXPECT_EQ(weft_ndarray_wait_to_read(arr), WEFT_OK);  // not recorded: paused
  ASSERT_EQ(weft_profiler_set_paused(0), WEFT_OK);
  ASSERT_EQ(weft_profile_duration_stop(task), WEFT_OK);
  ASSERT_EQ(weft_ndarray_free(arr), WEFT_OK);

  weft_bytes_t* out = nullptr;
  ASSERT_EQ(weft_profiler_dumps(0, 1, 0, 0, &out), WEFT_OK) << weft_get_last_error();
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(weft_bytes_get(out, &data, &size), WEFT_OK);
  auto stats = nlohmann::json::parse(std::string(static_cast<const char*>(data), size));
  weft_bytes_free(out);
  EXPECT_EQ(stats["Time"]["capi"]["capi_task"]["Count"], 1);
  // C API calls are timed (profile_api defaults to True), except while paused.
  EXPECT_GE(stats["Time"]["C API"]["weft_profile_counter_set"]["Count"], 1);
  EXPECT_EQ(stats["Time"]["C API"].count("weft_ndarray_wait_to_read"), 0u);
  EXPECT_EQ(weft_profiler_dumps(0, 2, 0, 0, &out), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("format"), std::string::npos);

  const char* bad_keys[] = {"nonsense"};
  const char* bad_vals[] = {"1"};
  EXPECT_EQ(weft_profiler_set_config(1, bad_keys, bad_vals), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("nonsense"), std::string::npos);
  EXPECT_EQ(weft_profiler_set_state(5), WEFT_ERR_VALUE);

  EXPECT_EQ(weft_profile_duration_free(task), WEFT_OK);
  EXPECT_EQ(weft_profile_counter_free(counter), WEFT_OK);
  EXPECT_EQ(weft_profile_domain_free(dom), WEFT_OK);
  EXPECT_EQ(weft_profile_duration_start(task), WEFT_ERR_HANDLE);
  ASSERT_EQ(weft_profiler_set_state(WEFT_PROFILER_STOP), WEFT_OK);
  ASSERT_EQ(weft_profiler_get_state(&state), WEFT_OK);
  EXPECT_EQ(state, WEFT_PROFILER_STOP);
  ASSERT_EQ(weft_profiler_dump(1), WEFT_OK);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(Events(nlohmann::json::parse(ss.str()), "capi_task", "B").size(), 1u);
  std::remove(path.c_str());
  // After the final dump nothing was started: a dump writes nothing.
  ASSERT_EQ(weft_profiler_dump(1), WEFT_OK);
  EXPECT_FALSE(std::ifstream(path).good());
  const char* reset_keys[] = {"continuous_dump"};
  const char* reset_vals[] = {"False"};
  ASSERT_EQ(weft_profiler_set_config(1, reset_keys, reset_vals), WEFT_OK);
}

}  // namespace
}  // namespace profiler
}  // namespace weft

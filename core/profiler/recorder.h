// The profiler's store (internal to core/profiler): the records, the thread names, the
// configuration and the aggregate statistics, behind one lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/profiler/profiler.h"

namespace weft {
namespace profiler {

// One thing that happened. Names are interned or static, so a record is copied cheaply.
struct Record {
  enum Type : uint8_t {
    kOperation,  // 'X' on the worker's track; value = bytes allocated
    kApi,        // 'X' on the caller's track
    kBegin,      // 'B' of a task, frame or event
    kEnd,        // 'E'
    kCounter,    // 'C'; value = the counter's value
    kMemory,     // 'C' "Memory: <device>"; value = bytes in use
    kMarker,     // 'i'; value = the scope letter
  };
  Type type = kOperation;
  const char* name = nullptr;
  const char* category = nullptr;
  Context ctx;
  int tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t value = 0;
};

struct Config {
  uint32_t modes = kSymbolic | kImperative | kMemory | kApi;
  std::string filename = "profile.json";
  bool continuous_dump = true;
  double dump_period_s = 1.0;
  bool aggregate_stats = false;
};

// Per category and name: count, total, min and max (durations in ns, memory in bytes).
class AggregateStats {
 public:
  void Add(const Record& rec);
  void Clear() { cats_.clear(); }
  std::string Table(SortBy sort_by, bool ascending) const;
  std::string Json(SortBy sort_by, bool ascending) const;

  // What a row's values are: durations (ns), bytes in use, or a user counter's values.
  enum class Unit { kTime, kMemory, kValue };
  struct Stat {
    Unit unit = Unit::kTime;
    int64_t count = 0;
    int64_t total = 0;
    int64_t min = 0;
    int64_t max = 0;
  };

 private:
  void AddValue(const std::string& category, const std::string& name, int64_t v, Unit unit);
  std::vector<std::pair<std::string, const Stat*>> Sorted(const std::map<std::string, Stat>& rows, SortBy by,
                                                          bool ascending) const;
  std::map<std::string, std::map<std::string, Stat>> cats_;
};

int ThreadId();

class Recorder {
 public:
  static Recorder& Get();

  void Add(const Record& rec);
  // The Chrome trace JSON of the records so far.
  std::string Trace();
  // Sets the active word from the state; mu_ held.
  void UpdateActive();
  // Starts, restarts or stops the thread of continuous_dump to match the state.
  void RestartDumper();

  std::mutex mu_;
  Config config_;
  bool running_ = false;
  bool paused_ = false;
  bool output_enabled_ = false;  // set by a start, cleared by a final dump
  std::vector<Record> records_;
  std::map<int, std::string> thread_names_;
  AggregateStats stats_;
  const int64_t epoch_ns_;
  const int pid_;

 private:
  Recorder();

  std::mutex dumper_mu_;  // serialises RestartDumper
  std::thread dumper_;
  double dumper_period_s_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_dumper_ = false;
};

}  // namespace profiler
}  // namespace weft

// The profiler (MXNet's mx.profiler): what ran where and when, written as a Chrome trace.
//
// The engine records each operation it runs (name, device, worker thread, start and end,
// bytes allocated) while the profiler runs; storage records the bytes in use per device;
// front ends add their own tasks, frames, events, counters and markers. Everything lands
// in one in-memory list that Dump() writes as Chrome trace event JSON (chrome://tracing,
// Perfetto) and, when aggregate statistics are on, in per-name totals that Dumps() prints
// as a table or JSON.
//
// Cost when off: every recording site first tests ActiveModes(), one relaxed load of a
// global word that is 0 unless the profiler runs and is not paused, so an operation pays
// one predictable branch. Recording takes a global lock; the sites are coarse (one per
// operation, allocation or user call), so that lock is not contended in practice.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/context.h"

namespace weft {
namespace profiler {

// What is recorded (set_config's profile_* keys). Bits of ActiveModes().
enum Mode : uint32_t {
  kSymbolic = 1u << 0,    // executor steps, named by their graph node
  kImperative = 1u << 1,  // eager operator calls and engine work pushed by name (copies)
  kMemory = 1u << 2,      // storage: bytes in use per device, bytes allocated per operation
  kApi = 1u << 3,         // C API calls
  kAllModes = kSymbolic | kImperative | kMemory | kApi,
};

namespace detail {
// The modes while running and not paused, else 0: the one word hot paths read.
extern std::atomic<uint32_t> g_active;
// Bytes the storage pool handed out on this thread while the profiler was active.
extern thread_local int64_t tls_alloc_bytes;
}  // namespace detail

inline uint32_t ActiveModes() { return detail::g_active.load(std::memory_order_relaxed); }
inline bool Active(uint32_t modes) { return (ActiveModes() & modes) != 0; }

// ------------------------------------------------------------------ configuration, state

// Applies set_config's key=value pairs, MXNet's keys with MXNet's defaults for those not
// given: profile_all (False), profile_symbolic, profile_imperative, profile_memory,
// profile_api (True each), filename ("profile.json"), continuous_dump (True: the file is
// rewritten every dump_period seconds while running), dump_period (1.0), aggregate_stats
// (False), profile_process ("worker"; "server" is refused: servers are not profiled).
// Booleans are read as Python prints them ("True", "False", "1", "0"). An unknown key or
// a bad value is a kValue error naming it, and nothing is applied.
void SetConfig(const std::vector<std::pair<std::string, std::string>>& kv);

// Starts (true) or stops recording; starting also resumes a paused profiler.
void SetState(bool run);
bool IsRunning();
// Pause keeps the state but records nothing until Resume (SetPaused(false)).
void SetPaused(bool paused);
bool IsPaused();

// Writes the events recorded so far to the configured file as Chrome trace JSON
// (atomically: a reader never sees half a file). `finished` ends this profile: the
// profiler stops and the events are dropped, as after MXNet's final dump. A profiler
// that never ran has nothing to write and does nothing.
void Dump(bool finished);
// The trace as a string, without touching the file or the state (for tests and Dump).
std::string TraceJson();

enum class StatsFormat : int { kTable = 0, kJson = 1 };
enum class SortBy : int { kTotal = 0, kAvg = 1, kMin = 2, kMax = 3, kCount = 4 };
// The aggregate statistics (needs aggregate_stats=True): per category, one row per name
// with count, total, min, max and average time in ms (memory: use in kB), sorted.
// `reset` clears them afterwards.
std::string Dumps(bool reset, StatsFormat format, SortBy sort_by, bool ascending);

// The profiler scope of this thread ("<unk>:" when none): operators called inside a scope
// other than the default are recorded as "<scope><operator>", e.g. "fwd:relu".
void SetScope(const std::string& scope);
const std::string& Scope();

// ------------------------------------------------------------------ recording

// Nanoseconds on the steady clock.
int64_t NowNs();

// Names the calling thread's track in the trace ("cpu worker 0", "gpu(0) stream 1").
void SetThreadName(const std::string& name);

// A copy of `s` that lives as long as the process, for names kept by pending operations.
const char* Intern(const std::string& s);

// The name an operator call is recorded under (scope prefix, executor node name or the
// operator's), interned. Call only while Active().
const char* OperatorEventName(const std::string& op_name, const std::string& node_name);

namespace detail {
extern thread_local bool tls_symbolic;
}  // namespace detail
// Whether the calling thread is running an executor's steps (profile_symbolic) rather than
// eager calls (profile_imperative).
inline bool InSymbolic() { return detail::tls_symbolic; }
// Marks the calling thread as running executor steps for its lifetime.
class SymbolicScope {
 public:
  SymbolicScope() : prev_(detail::tls_symbolic) { detail::tls_symbolic = true; }
  ~SymbolicScope() { detail::tls_symbolic = prev_; }
  SymbolicScope(const SymbolicScope&) = delete;
  SymbolicScope& operator=(const SymbolicScope&) = delete;

 private:
  bool prev_;
};

// One operation run on the calling thread from start_ns to end_ns on `ctx`; `bytes`
// allocated for it.
void RecordOperation(const char* name, Context ctx, int64_t start_ns, int64_t end_ns, int64_t bytes);

// Called by storage on each allocation and free while kMemory is active.
inline void NoteAlloc(int64_t bytes) { detail::tls_alloc_bytes += bytes; }
inline int64_t ThreadAllocatedBytes() { return detail::tls_alloc_bytes; }
void RecordMemory(Context ctx, int64_t bytes_in_use);

// A C API call, timed from construction to destruction when kApi is active.
class ApiScope {
 public:
  explicit ApiScope(const char* fn) {
    if (__builtin_expect(Active(kApi), 0)) {
      fn_ = fn;
      start_ = NowNs();
    }
  }
  ~ApiScope() {
    if (fn_ != nullptr) Finish();
  }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;

 private:
  void Finish();
  const char* fn_ = nullptr;
  int64_t start_ = 0;
};

// ------------------------------------------------------------------ user objects

// A named group of user objects (the trace's category). Domains are interned by name and
// never freed.
struct Domain {
  std::string name;
};
Domain* GetDomain(const std::string& name);

// A task, frame or event: Start() and Stop() bracket a stretch of the caller's work, written
// as a 'B'/'E' pair on the track of the thread that started it. Stop without Start, or a
// second Start before Stop, is a kValue error.
class Duration {
 public:
  enum Kind { kTask, kFrame, kEvent };
  Duration(Kind kind, const Domain* domain, std::string name);
  void Start();
  void Stop();
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
  const Domain* domain_;  // null for events
  std::string name_;
  bool started_ = false;
  int64_t start_ns_ = 0;
  int tid_ = 0;
};

// A value that changes over time: a 'C' event per change while the profiler runs.
class Counter {
 public:
  Counter(const Domain* domain, std::string name);
  void Set(int64_t value);
  void Adjust(int64_t delta);
  int64_t value() const { return value_.load(); }

 private:
  void Emit(int64_t value);
  const Domain* domain_;
  std::string name_;
  std::atomic<int64_t> value_{0};
};

// An instant: scope "global", "process", "thread", "task" or "marker" (the latter two as
// thread); anything else is a kValue error.
void Mark(const Domain* domain, const std::string& name, const std::string& scope);

}  // namespace profiler
}  // namespace weft

#include "core/profiler/profiler.h"
#include "core/profiler/custom_scope.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/profiler/recorder.h"

namespace weft {
namespace profiler {

namespace detail {
std::atomic<uint32_t> g_active{0};
thread_local int64_t tls_alloc_bytes = 0;
thread_local bool tls_symbolic = false;
}  // namespace detail

namespace {

const std::string kDefaultScope = "<unk>:";
thread_local std::string tls_scope = kDefaultScope;

// The tid of the calling thread in the trace: small integers in order of first use.
std::atomic<int> g_next_tid{1};
thread_local int tls_tid = 0;

bool ParseBool(const std::string& key, const std::string& v) {
  if (v == "True" || v == "true" || v == "1") return true;
  if (v == "False" || v == "false" || v == "0") return false;
  Throw(ErrorKind::kValue, "profiler.set_config: ", key, " expects a boolean (True/False/1/0), got '", v, "'");
}

double ParsePositive(const std::string& key, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  WEFT_CHECK(!v.empty() && *end == '\0' && d > 0 && d < 1e9, kValue, "profiler.set_config: ", key,
             " expects a number of seconds > 0, got '", v, "'");
  return d;
}

}  // namespace

Recorder& Recorder::Get() {
  // Leaked: operations may be recorded while static objects are destroyed.
  static Recorder* r = new Recorder();
  return *r;
}

Recorder::Recorder() : epoch_ns_(NowNs()), pid_(static_cast<int>(::getpid())) {}

void Recorder::UpdateActive() {
  detail::g_active.store(running_ && !paused_ ? config_.modes : 0, std::memory_order_relaxed);
}

int ThreadId() {
  if (tls_tid == 0) tls_tid = g_next_tid.fetch_add(1);
  return tls_tid;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetThreadName(const std::string& name) {
  Recorder& r = Recorder::Get();
  int tid = ThreadId();
  std::lock_guard<std::mutex> lock(r.mu_);
  r.thread_names_[tid] = name;
}

const char* Intern(const std::string& s) {
  static std::mutex* mu = new std::mutex();
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(*mu);
  return names->insert(s).first->c_str();
}

namespace {
// The custom operator whose callback the thread runs ("" when none), and the names made
// for such callbacks' operators: their records go to the "Custom Operator" category.
thread_local std::string tls_custom_op;
std::mutex custom_names_mu;
std::unordered_set<const char*>* custom_names = new std::unordered_set<const char*>();

const char* CustomName(const std::string& name) {
  const char* interned = Intern(name);
  std::lock_guard<std::mutex> lock(custom_names_mu);
  custom_names->insert(interned);
  return interned;
}

bool IsCustomName(const char* name) {
  std::lock_guard<std::mutex> lock(custom_names_mu);
  return custom_names->count(name) > 0;
}
}  // namespace

const char* OperatorEventName(const std::string& op_name, const std::string& node_name) {
  const std::string& base = node_name.empty() ? op_name : node_name;
  if (!tls_custom_op.empty()) return CustomName(tls_custom_op + "::" + op_name);
  if (tls_scope == kDefaultScope) return Intern(base);
  return Intern(tls_scope + base);
}

CustomOpScope::CustomOpScope(const std::string& op_type) : prev_(tls_custom_op) { tls_custom_op = op_type; }
CustomOpScope::~CustomOpScope() { tls_custom_op = prev_; }

void RecordCustomOperator(const std::string& name, Context ctx, int64_t start_ns, int64_t end_ns) {
  if (!Active(kSymbolic | kImperative)) return;
  RecordOperation(CustomName(name), ctx, start_ns, end_ns, 0);
}

void SetScope(const std::string& scope) { tls_scope = scope.empty() ? kDefaultScope : scope; }
const std::string& Scope() { return tls_scope; }

void RecordOperation(const char* name, Context ctx, int64_t start_ns, int64_t end_ns, int64_t bytes) {
  Record rec;
  rec.type = Record::kOperation;
  rec.name = name;
  rec.category = IsCustomName(name) ? "Custom Operator" : "operator";
  rec.ctx = ctx;
  rec.tid = ThreadId();
  rec.start_ns = start_ns;
  rec.end_ns = end_ns;
  rec.value = bytes;
  Recorder::Get().Add(rec);
}

void RecordMemory(Context ctx, int64_t bytes_in_use) {
  Record rec;
  rec.type = Record::kMemory;
  rec.ctx = ctx;
  rec.tid = ThreadId();
  rec.start_ns = rec.end_ns = NowNs();
  rec.value = bytes_in_use;
  Recorder::Get().Add(rec);
}

void ApiScope::Finish() {
  Record rec;
  rec.type = Record::kApi;
  rec.name = fn_;
  rec.category = "C API";
  rec.tid = ThreadId();
  rec.start_ns = start_;
  rec.end_ns = NowNs();
  Recorder::Get().Add(rec);
}

void Recorder::Add(const Record& rec) {
  std::lock_guard<std::mutex> lock(mu_);
  // A record made just after a stop or pause (the flag was read before) is dropped.
  if (!running_ || paused_) return;
  records_.push_back(rec);
  if (config_.aggregate_stats) stats_.Add(rec);
}

// ------------------------------------------------------------------ configuration, state

namespace {
void DumpAtExit();
}  // namespace

void SetConfig(const std::vector<std::pair<std::string, std::string>>& kv) {
  Config c;
  bool all = false, symbolic = true, imperative = true, memory = true, api = true;
  for (const auto& p : kv) {
    const std::string& k = p.first;
    const std::string& v = p.second;
    if (k == "profile_all") all = ParseBool(k, v);
    else if (k == "profile_symbolic") symbolic = ParseBool(k, v);
    else if (k == "profile_imperative") imperative = ParseBool(k, v);
    else if (k == "profile_memory") memory = ParseBool(k, v);
    else if (k == "profile_api") api = ParseBool(k, v);
    else if (k == "filename") {
      WEFT_CHECK(!v.empty(), kValue, "profiler.set_config: filename is empty");
      c.filename = v;
    } else if (k == "continuous_dump") c.continuous_dump = ParseBool(k, v);
    else if (k == "dump_period") c.dump_period_s = ParsePositive(k, v);
    else if (k == "aggregate_stats") c.aggregate_stats = ParseBool(k, v);
    else if (k == "profile_process") {
      WEFT_CHECK(v == "worker" || v == "server", kValue,
                 "profiler.set_config: profile_process expects 'worker' or 'server', got '", v, "'");
      WEFT_CHECK(v == "worker", kUnsupported,
                 "profiler.set_config: profile_process='server': the parameter servers cannot be profiled");
    } else {
      Throw(ErrorKind::kValue, "profiler.set_config: unknown key '", k,
            "' (expected profile_all, profile_symbolic, profile_imperative, profile_memory, profile_api, filename, "
            "continuous_dump, dump_period, aggregate_stats or profile_process)");
    }
  }
  c.modes = (all || symbolic ? kSymbolic : 0u) | (all || imperative ? kImperative : 0u) |
            (all || memory ? kMemory : 0u) | (all || api ? kApi : 0u);
  Recorder& r = Recorder::Get();
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    if (!c.aggregate_stats) r.stats_.Clear();
    r.config_ = c;
    r.UpdateActive();
  }
  r.RestartDumper();
}

void SetState(bool run) {
  Recorder& r = Recorder::Get();
  // As MXNet does, a profile that was started is written at exit unless a final dump came
  // first (Dump(true) turns the output off, so this then writes nothing).
  static std::once_flag exit_hook;
  if (run) std::call_once(exit_hook, [] { std::atexit(DumpAtExit); });
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    r.running_ = run;
    r.paused_ = false;
    if (run) r.output_enabled_ = true;
    r.UpdateActive();
  }
  r.RestartDumper();
}

bool IsRunning() {
  Recorder& r = Recorder::Get();
  std::lock_guard<std::mutex> lock(r.mu_);
  return r.running_;
}

void SetPaused(bool paused) {
  Recorder& r = Recorder::Get();
  std::lock_guard<std::mutex> lock(r.mu_);
  r.paused_ = paused;
  r.UpdateActive();
}

bool IsPaused() {
  Recorder& r = Recorder::Get();
  std::lock_guard<std::mutex> lock(r.mu_);
  return r.paused_;
}

std::string TraceJson() { return Recorder::Get().Trace(); }

void Dump(bool finished) {
  Recorder& r = Recorder::Get();
  std::string file;
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    if (!r.output_enabled_) return;
    file = r.config_.filename;
  }
  std::string json = r.Trace();
  WriteFileAtomically(file, json.data(), json.size());
  if (!finished) return;
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    r.running_ = false;
    r.paused_ = false;
    r.output_enabled_ = false;
    r.records_.clear();
    r.UpdateActive();
  }
  r.RestartDumper();
}

std::string Dumps(bool reset, StatsFormat format, SortBy sort_by, bool ascending) {
  Recorder& r = Recorder::Get();
  std::lock_guard<std::mutex> lock(r.mu_);
  WEFT_CHECK(r.config_.aggregate_stats, kValue,
             "profiler.dumps: aggregate statistics are off; call set_config(aggregate_stats=True) before profiling");
  std::string s = format == StatsFormat::kJson ? r.stats_.Json(sort_by, ascending) : r.stats_.Table(sort_by, ascending);
  if (reset) r.stats_.Clear();
  return s;
}

// ------------------------------------------------------------------ the periodic dump

void Recorder::RestartDumper() {
  bool want;
  double period;
  {
    std::lock_guard<std::mutex> lock(mu_);
    want = running_ && config_.continuous_dump;
    period = config_.dump_period_s;
  }
  std::lock_guard<std::mutex> lock(dumper_mu_);
  if (dumper_.joinable() && (!want || period != dumper_period_s_)) {
    {
      std::lock_guard<std::mutex> stop_lock(stop_mu_);
      stop_dumper_ = true;
    }
    stop_cv_.notify_all();
    dumper_.join();
  }
  if (want && !dumper_.joinable()) {
    stop_dumper_ = false;
    dumper_period_s_ = period;
    dumper_ = std::thread([this, period] {
      auto step = std::chrono::duration<double>(period);
      std::unique_lock<std::mutex> lock(stop_mu_);
      while (!stop_cv_.wait_for(lock, step, [this] { return stop_dumper_; })) {
        lock.unlock();
        try {
          Dump(false);
        } catch (const Error& e) {
          WEFT_LOG(Warning) << "profiler: periodic dump failed: " << e.what();
        }
        lock.lock();
      }
    });
  }
}

namespace {

// MXNET_PROFILER_AUTOSTART / WEFT_PROFILER_AUTOSTART=1 starts profiling at load (the mode
// from MXNET_PROFILER_MODE / WEFT_PROFILER_MODE: 0 symbolic only, 1 everything) and writes
// profile.json at exit, as MXNet does.
const char* Env(const char* weft_name, const char* mxnet_name) {
  const char* v = std::getenv(weft_name);
  if (v == nullptr || *v == '\0') v = std::getenv(mxnet_name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

void DumpAtExit() {
  try {
    Dump(true);
  } catch (const Error& e) {
    WEFT_LOG(Error) << "profiler: the dump at exit failed: " << e.what();
  }
}

struct AutoStart {
  AutoStart() {
    const char* start = Env("WEFT_PROFILER_AUTOSTART", "MXNET_PROFILER_AUTOSTART");
    if (start == nullptr || std::strcmp(start, "0") == 0) return;
    const char* mode = Env("WEFT_PROFILER_MODE", "MXNET_PROFILER_MODE");
    bool all = mode != nullptr && std::strcmp(mode, "0") != 0;
    // At load no dump thread is wanted (threads started from static constructors outlive
    // fork-safety assumptions of the host); the file is written at exit.
    SetConfig({{all ? "profile_all" : "profile_symbolic", "True"},
               {"profile_imperative", all ? "True" : "False"},
               {"profile_memory", all ? "True" : "False"},
               {"profile_api", all ? "True" : "False"},
               {"continuous_dump", "False"}});
    SetState(true);
  }
};
AutoStart g_autostart;

}  // namespace

}  // namespace profiler
}  // namespace weft

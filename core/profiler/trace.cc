// The Chrome trace event JSON of profiler.dump() (the format of chrome://tracing and
// Perfetto): one process, one track (tid) per thread that recorded something, named by
// "thread_name" metadata (engine workers name themselves; GPU workers' names carry their
// stream), operations and C API calls as complete events ('X'), user tasks, frames and
// events as 'B'/'E' pairs, counters and memory as 'C', markers as 'i'. Times are in
// microseconds since the profiler was created.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/profiler/recorder.h"

namespace weft {
namespace profiler {
namespace {

std::string Quote(const char* s) { return nlohmann::json(std::string(s ? s : "")).dump(); }

// Microseconds with nanosecond digits, without the exponent form a double may print as.
std::string Us(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>((ns < 0 ? -ns : ns) % 1000));
  return buf;
}

}  // namespace

std::string Recorder::Trace() {
  std::vector<Record> recs;
  std::map<int, std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    recs = records_;
    names = thread_names_;
  }
  // In order of the time each event shows (an 'E' shows its end), so that every track
  // reads forward and a 'B' comes before its 'E'.
  auto shown = [](const Record& r) { return r.type == Record::kEnd ? r.end_ns : r.start_ns; };
  std::stable_sort(recs.begin(), recs.end(), [&](const Record& a, const Record& b) { return shown(a) < shown(b); });
  const std::string pid = std::to_string(pid_);
  std::string out = "{\n\"traceEvents\": [\n";
  out += "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": 0, \"args\": {\"name\": " +
         Quote(("weft (pid " + pid + ")").c_str()) + "}}";
  std::map<int, bool> tids;
  for (const Record& r : recs) tids[r.tid] = true;
  for (const auto& t : tids) {
    auto it = names.find(t.first);
    std::string name = it != names.end() ? it->second : "host thread " + std::to_string(t.first);
    std::string tid = std::to_string(t.first);
    out += ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": " + tid +
           ", \"args\": {\"name\": " + Quote(name.c_str()) + "}}";
    out += ",\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": " + tid +
           ", \"args\": {\"sort_index\": " + tid + "}}";
  }
  for (const Record& r : recs) {
    const std::string head = ", \"pid\": " + pid + ", \"tid\": " + std::to_string(r.tid) +
                             ", \"ts\": " + Us(r.start_ns - epoch_ns_);
    out += ",\n{";
    switch (r.type) {
      case Record::kOperation:
        out += "\"name\": " + Quote(r.name) + ", \"cat\": " + Quote(r.category) + ", \"ph\": \"X\"" + head +
               ", \"dur\": " + Us(r.end_ns - r.start_ns) + ", \"args\": {\"device\": " +
               Quote(r.ctx.ToString().c_str()) + ", \"bytes_allocated\": " + std::to_string(r.value) + "}";
        break;
      case Record::kApi:
        out += "\"name\": " + Quote(r.name) + ", \"cat\": \"C API\", \"ph\": \"X\"" + head +
               ", \"dur\": " + Us(r.end_ns - r.start_ns);
        break;
      case Record::kBegin:
      case Record::kEnd:
        out += "\"name\": " + Quote(r.name) + ", \"cat\": " + Quote(r.category) + ", \"ph\": \"" +
               (r.type == Record::kBegin ? "B" : "E") + "\"" +
               (r.type == Record::kBegin ? head
                                         : ", \"pid\": " + pid + ", \"tid\": " + std::to_string(r.tid) +
                                               ", \"ts\": " + Us(r.end_ns - epoch_ns_));
        break;
      case Record::kCounter:
        out += "\"name\": " + Quote(r.name) + ", \"cat\": " + Quote(r.category) + ", \"ph\": \"C\"" + head +
               ", \"args\": {\"value\": " + std::to_string(r.value) + "}";
        break;
      case Record::kMemory:
        out += "\"name\": " + Quote(("Memory: " + r.ctx.ToString()).c_str()) +
               ", \"cat\": \"memory\", \"ph\": \"C\"" + head + ", \"args\": {\"bytes_in_use\": " +
               std::to_string(r.value) + "}";
        break;
      case Record::kMarker:
        out += "\"name\": " + Quote(r.name) + ", \"cat\": " + Quote(r.category) + ", \"ph\": \"i\"" + head +
               ", \"s\": \"" + static_cast<char>(r.value) + "\"";
        break;
    }
    out += "}";
  }
  out += "\n],\n\"displayTimeUnit\": \"ms\"\n}\n";
  return out;
}

}  // namespace profiler
}  // namespace weft

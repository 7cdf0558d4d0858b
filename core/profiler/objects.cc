// The user's profiling objects: domains, tasks, frames and events (durations), counters
// and markers (MXNet's profiler.Domain, Task, Frame, Event, Counter, Marker).
#include <map>
#include <memory>

#include "core/base/error.h"
#include "core/profiler/recorder.h"

namespace weft {
namespace profiler {
namespace {

const char* KindName(Duration::Kind k) {
  switch (k) {
    case Duration::kTask: return "task";
    case Duration::kFrame: return "frame";
    case Duration::kEvent: return "event";
  }
  return "?";
}

}  // namespace

Domain* GetDomain(const std::string& name) {
  WEFT_CHECK(!name.empty(), kValue, "profiler.Domain: the name is empty");
  static std::mutex* mu = new std::mutex();
  static auto* domains = new std::map<std::string, std::unique_ptr<Domain>>();
  std::lock_guard<std::mutex> lock(*mu);
  auto& d = (*domains)[name];
  if (!d) d.reset(new Domain{name});
  return d.get();
}

Duration::Duration(Kind kind, const Domain* domain, std::string name)
    : kind_(kind), domain_(domain), name_(std::move(name)) {
  WEFT_CHECK(!name_.empty(), kValue, "profiler.", KindName(kind), ": the name is empty");
  WEFT_CHECK(kind == kEvent || domain != nullptr, kValue, "profiler.", KindName(kind), " '", name_,
             "': a domain is required");
}

void Duration::Start() {
  WEFT_CHECK(!started_, kValue, "profiler.", KindName(kind_), " '", name_, "': start() called twice without stop()");
  started_ = true;
  start_ns_ = NowNs();
  tid_ = ThreadId();
  if (!Active(kAllModes)) return;
  Record rec;
  rec.type = Record::kBegin;
  rec.name = Intern(name_);
  rec.category = Intern(domain_ ? domain_->name : "event");
  rec.tid = tid_;
  rec.start_ns = start_ns_;
  Recorder::Get().Add(rec);
}

void Duration::Stop() {
  WEFT_CHECK(started_, kValue, "profiler.", KindName(kind_), " '", name_, "': stop() called without start()");
  started_ = false;
  if (!Active(kAllModes)) return;
  Record rec;
  rec.type = Record::kEnd;
  rec.name = Intern(name_);
  rec.category = Intern(domain_ ? domain_->name : "event");
  // On the starting thread's track, so that the pair nests there.
  rec.tid = tid_;
  rec.start_ns = start_ns_;
  rec.end_ns = NowNs();
  Recorder::Get().Add(rec);
}

Counter::Counter(const Domain* domain, std::string name) : domain_(domain), name_(std::move(name)) {
  WEFT_CHECK(domain != nullptr, kValue, "profiler.Counter '", name_, "': a domain is required");
  WEFT_CHECK(!name_.empty(), kValue, "profiler.Counter: the name is empty");
}

void Counter::Set(int64_t value) {
  value_.store(value);
  Emit(value);
}

void Counter::Adjust(int64_t delta) { Emit(value_.fetch_add(delta) + delta); }

void Counter::Emit(int64_t value) {
  if (!Active(kAllModes)) return;
  Record rec;
  rec.type = Record::kCounter;
  rec.name = Intern(name_);
  rec.category = Intern(domain_->name);
  rec.tid = ThreadId();
  rec.start_ns = rec.end_ns = NowNs();
  rec.value = value;
  Recorder::Get().Add(rec);
}

void Mark(const Domain* domain, const std::string& name, const std::string& scope) {
  WEFT_CHECK(domain != nullptr, kValue, "profiler.Marker '", name, "': a domain is required");
  WEFT_CHECK(!name.empty(), kValue, "profiler.Marker: the name is empty");
  // Chrome's instant scopes: g(lobal), p(rocess), t(hread); MXNet's task and marker scopes
  // have no Chrome equivalent and show on the thread.
  char s;
  if (scope == "global") s = 'g';
  else if (scope == "process") s = 'p';
  else if (scope == "thread" || scope == "task" || scope == "marker") s = 't';
  else Throw(ErrorKind::kValue, "profiler.Marker.mark: scope expects 'global', 'process', 'thread', 'task' or "
             "'marker', got '", scope, "'");
  if (!Active(kAllModes)) return;
  Record rec;
  rec.type = Record::kMarker;
  rec.name = Intern(name);
  rec.category = Intern(domain->name);
  rec.tid = ThreadId();
  rec.start_ns = rec.end_ns = NowNs();
  rec.value = s;
  Recorder::Get().Add(rec);
}

}  // namespace profiler
}  // namespace weft

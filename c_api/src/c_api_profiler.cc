// The profiler (the weft_profiler_* and weft_profile_* section of c_api.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/profiler/profiler.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// A domain handle names an interned domain; durations and counters are owned by theirs.
using DomainTable = HandleTable<profiler::Domain*, HandleKind::kProfileDomain>;
using DurationTable = HandleTable<std::unique_ptr<profiler::Duration>, HandleKind::kProfileDuration>;
using CounterTable = HandleTable<std::unique_ptr<profiler::Counter>, HandleKind::kProfileCounter>;

const profiler::Domain* DomainRef(const weft_profile_domain_t* h, const char* arg, const char* fn) {
  return DomainTable::Get().Ref(h, arg, fn);
}
profiler::Duration& DurationRef(const weft_profile_duration_t* h, const char* arg, const char* fn) {
  return *DurationTable::Get().Ref(h, arg, fn);
}
profiler::Counter& CounterRef(const weft_profile_counter_t* h, const char* arg, const char* fn) {
  return *CounterTable::Get().Ref(h, arg, fn);
}
#define WEFT_DOMAIN(h) DomainRef((h), #h, __func__)
#define WEFT_DURATION(h) DurationRef((h), #h, __func__)
#define WEFT_COUNTER(h) CounterRef((h), #h, __func__)

std::string Name(const char* name, const char* fn) {
  WEFT_CHECK(name != nullptr, kValue, fn, ": name is NULL");
  WEFT_CHECK(name[0] != '\0', kValue, fn, ": name is empty");
  return name;
}

weft_profile_duration_t* NewDuration(profiler::Duration::Kind kind, const profiler::Domain* domain,
                                     std::string name) {
  auto d = std::make_unique<profiler::Duration>(kind, domain, std::move(name));
  return reinterpret_cast<weft_profile_duration_t*>(DurationTable::Get().Create(std::move(d)));
}

}  // namespace

extern "C" {

weft_status_t weft_profiler_set_config(int num, const char* const* keys, const char* const* vals) {
  WEFT_API_BEGIN
  std::vector<std::string> k = ReadStrings(num, keys, "keys", "num", __func__);
  std::vector<std::string> v = ReadStrings(num, vals, "vals", "num", __func__);
  std::vector<std::pair<std::string, std::string>> kv;
  for (int i = 0; i < num; ++i) kv.emplace_back(k[i], v[i]);
  profiler::SetConfig(kv);
  WEFT_API_END
}

weft_status_t weft_profiler_set_state(int state) {
  WEFT_API_BEGIN
  WEFT_CHECK(state == WEFT_PROFILER_STOP || state == WEFT_PROFILER_RUN, kValue, __func__,
             ": state expects WEFT_PROFILER_STOP (0) or WEFT_PROFILER_RUN (1), got ", state);
  profiler::SetState(state == WEFT_PROFILER_RUN);
  WEFT_API_END
}

weft_status_t weft_profiler_get_state(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = profiler::IsRunning() ? WEFT_PROFILER_RUN : WEFT_PROFILER_STOP;
  WEFT_API_END
}

weft_status_t weft_profiler_set_paused(int paused) {
  WEFT_API_BEGIN
  profiler::SetPaused(paused != 0);
  WEFT_API_END
}

weft_status_t weft_profiler_dump(int finished) {
  WEFT_API_BEGIN
  profiler::Dump(finished != 0);
  WEFT_API_END
}

weft_status_t weft_profiler_dumps(int reset, int format, int sort_by, int ascending, weft_bytes_t** out) {
  WEFT_API_BEGIN
  WEFT_CHECK(format == 0 || format == 1, kValue, __func__, ": format expects 0 (table) or 1 (json), got ", format);
  WEFT_CHECK(sort_by >= 0 && sort_by <= 4, kValue, __func__,
             ": sort_by expects 0 (total), 1 (avg), 2 (min), 3 (max) or 4 (count), got ", sort_by);
  WEFT_OUT(out);
  std::string s = profiler::Dumps(reset != 0, static_cast<profiler::StatsFormat>(format),
                                  static_cast<profiler::SortBy>(sort_by), ascending != 0);
  *out = reinterpret_cast<weft_bytes_t*>(BytesTable::Get().Create(std::move(s)));
  WEFT_API_END
}

weft_status_t weft_profiler_set_scope(const char* scope) {
  WEFT_API_BEGIN
  WEFT_CHECK(scope != nullptr, kValue, __func__, ": scope is NULL");
  profiler::SetScope(scope);
  WEFT_API_END
}

weft_status_t weft_profile_domain_create(const char* name, weft_profile_domain_t** out) {
  WEFT_API_BEGIN
  std::string n = Name(name, __func__);
  WEFT_OUT(out);
  *out = reinterpret_cast<weft_profile_domain_t*>(DomainTable::Get().Create(profiler::GetDomain(n)));
  WEFT_API_END
}

weft_status_t weft_profile_domain_free(weft_profile_domain_t* domain) {
  WEFT_API_BEGIN
  DomainTable::Get().Free(domain, "domain", __func__);
  WEFT_API_END
}

weft_status_t weft_profile_task_create(const weft_profile_domain_t* domain, const char* name,
                                       weft_profile_duration_t** out) {
  WEFT_API_BEGIN
  const profiler::Domain* d = WEFT_DOMAIN(domain);
  std::string n = Name(name, __func__);
  WEFT_OUT(out);
  *out = NewDuration(profiler::Duration::kTask, d, std::move(n));
  WEFT_API_END
}

weft_status_t weft_profile_frame_create(const weft_profile_domain_t* domain, const char* name,
                                        weft_profile_duration_t** out) {
  WEFT_API_BEGIN
  const profiler::Domain* d = WEFT_DOMAIN(domain);
  std::string n = Name(name, __func__);
  WEFT_OUT(out);
  *out = NewDuration(profiler::Duration::kFrame, d, std::move(n));
  WEFT_API_END
}

weft_status_t weft_profile_event_create(const char* name, weft_profile_duration_t** out) {
  WEFT_API_BEGIN
  std::string n = Name(name, __func__);
  WEFT_OUT(out);
  *out = NewDuration(profiler::Duration::kEvent, nullptr, std::move(n));
  WEFT_API_END
}

weft_status_t weft_profile_duration_start(weft_profile_duration_t* duration) {
  WEFT_API_BEGIN
  WEFT_DURATION(duration).Start();
  WEFT_API_END
}

weft_status_t weft_profile_duration_stop(weft_profile_duration_t* duration) {
  WEFT_API_BEGIN
  WEFT_DURATION(duration).Stop();
  WEFT_API_END
}

weft_status_t weft_profile_duration_free(weft_profile_duration_t* duration) {
  WEFT_API_BEGIN
  DurationTable::Get().Free(duration, "duration", __func__);
  WEFT_API_END
}

weft_status_t weft_profile_counter_create(const weft_profile_domain_t* domain, const char* name,
                                          weft_profile_counter_t** out) {
  WEFT_API_BEGIN
  const profiler::Domain* d = WEFT_DOMAIN(domain);
  std::string n = Name(name, __func__);
  WEFT_OUT(out);
  auto c = std::make_unique<profiler::Counter>(d, std::move(n));
  *out = reinterpret_cast<weft_profile_counter_t*>(CounterTable::Get().Create(std::move(c)));
  WEFT_API_END
}

weft_status_t weft_profile_counter_set(weft_profile_counter_t* counter, int64_t value) {
  WEFT_API_BEGIN
  WEFT_COUNTER(counter).Set(value);
  WEFT_API_END
}

weft_status_t weft_profile_counter_adjust(weft_profile_counter_t* counter, int64_t delta) {
  WEFT_API_BEGIN
  WEFT_COUNTER(counter).Adjust(delta);
  WEFT_API_END
}

weft_status_t weft_profile_counter_get(const weft_profile_counter_t* counter, int64_t* out) {
  WEFT_API_BEGIN
  profiler::Counter& c = WEFT_COUNTER(counter);
  WEFT_OUT(out);
  *out = c.value();
  WEFT_API_END
}

weft_status_t weft_profile_counter_free(weft_profile_counter_t* counter) {
  WEFT_API_BEGIN
  CounterTable::Get().Free(counter, "counter", __func__);
  WEFT_API_END
}

weft_status_t weft_profile_marker(const weft_profile_domain_t* domain, const char* name, const char* scope) {
  WEFT_API_BEGIN
  const profiler::Domain* d = WEFT_DOMAIN(domain);
  std::string n = Name(name, __func__);
  WEFT_CHECK(scope != nullptr, kValue, __func__, ": scope is NULL");
  profiler::Mark(d, n, scope);
  WEFT_API_END
}

}  // extern "C"

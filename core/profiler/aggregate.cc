// The aggregate statistics printed by profiler.dumps(): MXNet's categories ("operator",
// "Device Storage", one per user domain, "C API") with MXNet's columns and units (times in
// ms, memory in kB; a user counter's rows show its values as set), as a table or as
// {"Time": ..., "Memory": ..., "Unit": ...} JSON.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/profiler/recorder.h"

namespace weft {
namespace profiler {
namespace {

const char* const kStorage = "Device Storage";

std::string MemoryName(Context ctx) { return "Memory: " + ctx.ToString(); }

double Ms(double ns) { return ns / 1e6; }
double KB(double bytes) { return bytes / 1e3; }

}  // namespace

void AggregateStats::AddValue(const std::string& category, const std::string& name, int64_t v, Unit unit) {
  Stat& s = cats_[category][name];
  s.unit = unit;
  if (s.count == 0 || v < s.min) s.min = v;
  if (s.count == 0 || v > s.max) s.max = v;
  s.count++;
  s.total += v;
}

void AggregateStats::Add(const Record& rec) {
  switch (rec.type) {
    case Record::kOperation:
    case Record::kApi:
      AddValue(rec.category, rec.name, rec.end_ns - rec.start_ns, Unit::kTime);
      break;
    case Record::kEnd:
      AddValue(rec.category, rec.name, rec.end_ns - rec.start_ns, Unit::kTime);
      break;
    case Record::kMemory:
      AddValue(kStorage, MemoryName(rec.ctx), rec.value, Unit::kMemory);
      break;
    case Record::kCounter:
      AddValue(rec.category, rec.name, rec.value, Unit::kValue);
      break;
    case Record::kBegin:
    case Record::kMarker:
      break;
  }
}

std::vector<std::pair<std::string, const AggregateStats::Stat*>> AggregateStats::Sorted(
    const std::map<std::string, Stat>& rows, SortBy by, bool ascending) const {
  auto key = [by](const Stat& s) -> double {
    switch (by) {
      case SortBy::kTotal: return static_cast<double>(s.total);
      case SortBy::kAvg: return static_cast<double>(s.total) / static_cast<double>(s.count);
      case SortBy::kMin: return static_cast<double>(s.min);
      case SortBy::kMax: return static_cast<double>(s.max);
      case SortBy::kCount: return static_cast<double>(s.count);
    }
    return 0;
  };
  std::vector<std::pair<std::string, const Stat*>> v;
  for (const auto& r : rows) v.emplace_back(r.first, &r.second);
  // Ties keep the names in order, so the output is deterministic.
  std::stable_sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
    return ascending ? key(*a.second) < key(*b.second) : key(*a.second) > key(*b.second);
  });
  return v;
}

std::string AggregateStats::Table(SortBy sort_by, bool ascending) const {
  std::string out = "\nProfile Statistics:\n\tNote the difference in units for different entries.\n";
  char line[256];
  for (const auto& cat : cats_) {
    bool memory = cat.first == kStorage;
    out += cat.first + "\n=================\n";
    if (memory) {
      std::snprintf(line, sizeof(line), "%-40s %16s %16s %16s %16s\n", "Name", "Total Count", "Min Use  (kB)",
                    "Max Use  (kB)", "Avg Use  (kB)");
      out += line;
      std::snprintf(line, sizeof(line), "%-40s %16s %16s %16s %16s\n", "----", "-----------", "-------------",
                    "-------------", "-------------");
    } else {
      std::snprintf(line, sizeof(line), "%-40s %16s %16s %16s %16s %16s\n", "Name", "Total Count", "Time (ms)",
                    "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)");
      out += line;
      std::snprintf(line, sizeof(line), "%-40s %16s %16s %16s %16s %16s\n", "----", "-----------", "---------",
                    "-------------", "-------------", "-------------");
    }
    out += line;
    for (const auto& row : Sorted(cat.second, sort_by, ascending)) {
      const Stat& s = *row.second;
      double avg = static_cast<double>(s.total) / static_cast<double>(s.count);
      if (s.unit == Unit::kMemory) {
        std::snprintf(line, sizeof(line), "%-40s %16lld %16.4f %16.4f %16.4f\n", row.first.c_str(),
                      static_cast<long long>(s.count), KB(s.min), KB(s.max), KB(avg));
      } else if (s.unit == Unit::kValue) {
        // A counter: its values as set, in its own unit, under the time columns but Time.
        std::snprintf(line, sizeof(line), "%-40s %16lld %16s %16lld %16lld %16.4f\n", row.first.c_str(),
                      static_cast<long long>(s.count), "-", static_cast<long long>(s.min),
                      static_cast<long long>(s.max), avg);
      } else {
        std::snprintf(line, sizeof(line), "%-40s %16lld %16.4f %16.4f %16.4f %16.4f\n", row.first.c_str(),
                      static_cast<long long>(s.count), Ms(s.total), Ms(s.min), Ms(s.max), Ms(avg));
      }
      out += line;
    }
    out += "\n";
  }
  return out;
}

std::string AggregateStats::Json(SortBy sort_by, bool ascending) const {
  nlohmann::ordered_json time = nlohmann::ordered_json::object(), memory = nlohmann::ordered_json::object();
  for (const auto& cat : cats_) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::object();
    for (const auto& row : Sorted(cat.second, sort_by, ascending)) {
      const Stat& s = *row.second;
      double avg = static_cast<double>(s.total) / static_cast<double>(s.count);
      nlohmann::ordered_json r;
      r["Count"] = s.count;
      if (s.unit == Unit::kMemory) {
        r["Min"] = KB(s.min);
        r["Max"] = KB(s.max);
        r["Avg"] = KB(avg);
      } else if (s.unit == Unit::kValue) {
        // A counter in a domain, listed under "Time" as MXNet lists it: with a Total (the
        // sum of the values it was set to), so that every row there sorts by total.
        r["Total"] = s.total;
        r["Min"] = s.min;
        r["Max"] = s.max;
        r["Avg"] = avg;
      } else {
        r["Total"] = Ms(s.total);
        r["Min"] = Ms(s.min);
        r["Max"] = Ms(s.max);
        r["Avg"] = Ms(avg);
      }
      rows[row.first] = std::move(r);
    }
    (cat.first == kStorage ? memory : time)[cat.first] = std::move(rows);
  }
  nlohmann::ordered_json j;
  j["Time"] = std::move(time);
  j["Memory"] = std::move(memory);
  j["Unit"] = {{"Time", "ms"}, {"Memory", "kB"}};
  return j.dump(4);
}

}  // namespace profiler
}  // namespace weft

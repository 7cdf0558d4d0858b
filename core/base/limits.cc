#include "core/base/limits.h"

#include <cerrno>
#include <cstdlib>

#include "core/base/error.h"

namespace weft {
namespace {

struct LimitInfo {
  const char* env;
  int64_t default_value;
  const char* unit;
};

// Defaults: far above what the model zoo, MXNet's data sets and checkpoints need, far below
// what would exhaust a machine.
constexpr LimitInfo kLimits[] = {
    {"WEFT_LIMIT_ARRAY_ELEMENTS", int64_t{1} << 34, "array elements"},     // 16 Gi (64 GiB of float32)
    {"WEFT_LIMIT_IMAGE_PIXELS", int64_t{1} << 28, "pixels"},               // 16384 x 16384
    {"WEFT_LIMIT_GRAPH_NODES", int64_t{1} << 24, "graph nodes"},           // 16 M
    {"WEFT_LIMIT_JSON_DEPTH", 512, "levels of JSON nesting"},              // symbol JSON needs 4
    {"WEFT_LIMIT_VARIADIC_INPUTS", int64_t{1} << 20, "operator inputs"},   // 1 M
    {"WEFT_LIMIT_ATTR_BYTES", int64_t{1} << 24, "attribute bytes"},        // 16 MiB
    {"WEFT_LIMIT_DECOMPRESSED_BYTES", int64_t{1} << 34, "decompressed bytes"},  // 16 GiB
    {"WEFT_LIMIT_RECORD_BYTES", int64_t{1} << 31, "record bytes"},         // 2 GiB
};
static_assert(sizeof(kLimits) / sizeof(kLimits[0]) == static_cast<size_t>(Limit::kNumLimits),
              "one entry per Limit");

int64_t ReadLimit(const LimitInfo& info) {
  const char* s = std::getenv(info.env);
  if (s == nullptr || *s == '\0') return info.default_value;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  WEFT_CHECK(errno == 0 && *end == '\0' && v > 0, kValue, info.env, ": expected a positive integer, got '", s, "'");
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t LimitValue(Limit limit) {
  int i = static_cast<int>(limit);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(Limit::kNumLimits), kInternal, "unknown limit ", i);
  // Read once per process: limits are configuration, and a check must not cost a getenv.
  static const int64_t* values = [] {
    static int64_t v[static_cast<int>(Limit::kNumLimits)];
    for (int k = 0; k < static_cast<int>(Limit::kNumLimits); ++k) v[k] = ReadLimit(kLimits[k]);
    return v;
  }();
  return values[i];
}

const char* LimitEnvName(Limit limit) { return kLimits[static_cast<int>(limit)].env; }

void CheckLimit(Limit limit, int64_t claimed, const std::string& where) {
  int64_t max = LimitValue(limit);
  if (claimed > max) {
    const LimitInfo& info = kLimits[static_cast<int>(limit)];
    Throw(ErrorKind::kValue, where, ": claims ", claimed, " ", info.unit, ", over the limit of ", max, " (set ",
          info.env, " to allow more)");
  }
}

}  // namespace weft

#include "core/base/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace weft {
namespace {

LogLevel LevelFromEnv() {
  const char* v = std::getenv("WEFT_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kWarning;
  if (!std::strcmp(v, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(v, "info")) return LogLevel::kInfo;
  if (!std::strcmp(v, "warning")) return LogLevel::kWarning;
  if (!std::strcmp(v, "error")) return LogLevel::kError;
  if (!std::strcmp(v, "off")) return LogLevel::kOff;
  std::fprintf(stderr, "[weft] WEFT_LOG_LEVEL: expected debug, info, warning, error or off, got '%s'\n", v);
  return LogLevel::kWarning;
}

std::atomic<int>& Level() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    default: return "";
  }
}

}  // namespace

LogLevel CurrentLogLevel() { return static_cast<LogLevel>(Level().load(std::memory_order_relaxed)); }

void SetLogLevel(LogLevel level) { Level().store(static_cast<int>(level)); }

void EmitLog(LogLevel level, const char* file, int line, const std::string& message) {
  static std::mutex mu;
  const char* base = std::strrchr(file, '/');
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[weft %s %s:%d] %s\n", LevelName(level), base ? base + 1 : file, line, message.c_str());
}

}  // namespace weft

// Levelled logging to stderr. The threshold comes from WEFT_LOG_LEVEL
// (debug, info, warning, error, off; default warning).
#pragma once

#include <sstream>

namespace weft {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel level);
void EmitLog(LogLevel level, const char* file, int line, const std::string& message);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line) : level_(level), file_(file), line_(line) {}
  ~LogMessage() { EmitLog(level_, file_, line_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace weft

#define WEFT_LOG(level)                                                                  \
  if (::weft::LogLevel::k##level < ::weft::CurrentLogLevel()) {                          \
  } else                                                                                 \
    ::weft::LogMessage(::weft::LogLevel::k##level, __FILE__, __LINE__).stream()

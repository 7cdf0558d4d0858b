// JSON from outside (symbol files, the C API's JSON arguments) parsed with its nesting
// checked while it is read (Limit::kJsonDepth), so that a few kilobytes of brackets fail at
// once instead of in code that walks or prints the value recursively.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/base/limits.h"

namespace weft {

// Parses `text`; nesting deeper than the limit is a kValue error naming `where`. Malformed
// JSON raises nlohmann::json::exception, for the caller to word.
inline nlohmann::json ParseJSONWithLimits(const std::string& text, const std::string& where) {
  const int64_t max_depth = LimitValue(Limit::kJsonDepth);
  nlohmann::json::parser_callback_t check_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > max_depth) CheckLimit(Limit::kJsonDepth, depth, where);
    return true;
  };
  return nlohmann::json::parse(text, check_depth);
}

// A value as an error message shows it: at most 80 characters of its JSON, invalid UTF-8
// replaced, so that a hostile value cannot make the message huge or make printing it throw.
inline std::string JSONExcerpt(const nlohmann::json& v) {
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

}  // namespace weft

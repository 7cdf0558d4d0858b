// Typed errors thrown inside the core. The C API turns them into a status code and a
// thread-local message; nothing else ever crosses the ABI.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace weft {

// Append-only: the numeric values are part of the C ABI (weft_status_t).
enum class ErrorKind : int {
  kValue = 1,       // a value is out of range or malformed
  kType = 2,        // wrong dtype, wrong handle kind
  kIndex = 3,       // index or axis out of bounds
  kShape = 4,       // shapes do not fit
  kIO = 5,          // file or stream problems, corrupt data
  kNotFound = 6,    // unknown operator, key, file
  kUnsupported = 7, // valid request that this build cannot serve (e.g. no GPU)
  kRuntime = 8,     // failures while running (allocation, device)
  kInternal = 9,    // a broken invariant inside Weft
};

const char* ErrorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Args>
std::string Concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws weft::Error of `kind` with the arguments streamed into one message.
template <typename... Args>
[[noreturn]] void Throw(ErrorKind kind, Args&&... args) {
  throw Error(kind, detail::Concat(std::forward<Args>(args)...));
}

}  // namespace weft

// WEFT_CHECK(cond, kind, message parts...): throw when cond is false.
#define WEFT_CHECK(cond, kind, ...)                        \
  do {                                                     \
    if (!(cond)) ::weft::Throw(::weft::ErrorKind::kind, __VA_ARGS__); \
  } while (0)

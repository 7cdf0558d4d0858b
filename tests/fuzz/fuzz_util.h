// Shared by the libFuzzer targets: every target feeds bytes to a reader of outside input and
// accepts weft::Error (a clear refusal) as the only way to fail; anything else (a crash, a
// sanitizer report, another exception, a hang) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/base/error.h"

namespace weft {
namespace fuzz {

// A file holding `size` bytes, for readers that take paths; removed when it goes.
class TempFile {
 public:
  TempFile(const uint8_t* data, size_t size, const char* suffix = "") {
    char tmpl[] = "/tmp/weft_fuzz_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    path_ = tmpl;
    if (*suffix) {
      std::string renamed = path_ + suffix;
      if (std::rename(path_.c_str(), renamed.c_str()) != 0) std::abort();
      path_ = renamed;
    }
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs fn; weft::Error is an expected refusal of bad input.
template <typename Fn>
void Refusable(Fn fn) {
  try {
    fn();
  } catch (const Error&) {
  }
}

}  // namespace fuzz
}  // namespace weft

#include "core/io/line_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/base/error.h"
#include "core/base/limits.h"
#include "core/io/dense_batch_iter.h"

namespace weft {
namespace io {

LineReader::LineReader(std::string path, std::string what, size_t chunk_bytes)
    : path_(std::move(path)), what_(std::move(what)) {
  // One byte more than a chunk: a last line without an end of line still gets its NUL.
  buf_.resize(std::max<size_t>(chunk_bytes, 16) + 1);
  Open();
}

LineReader::~LineReader() { Close(false); }

void LineReader::Open() {
  CheckReadable(path_, what_);
  file_ = gzopen(path_.c_str(), "rb");  // zlib passes a plain file through
  if (file_ == nullptr) Throw(ErrorKind::kIO, "cannot open ", what_, " '", path_, "' for reading");
  gzbuffer(file_, 1 << 18);
  begin_ = end_ = scanned_ = 0;
  eof_ = false;
  line_no_ = 0;
}

void LineReader::Close(bool check) {
  if (file_ == nullptr) return;
  const int rc = gzclose(file_);
  file_ = nullptr;
  if (!check) return;
  // zlib reports a gzip stream cut short only here, as Z_BUF_ERROR from gzclose_r.
  if (rc == Z_BUF_ERROR) Throw(ErrorKind::kIO, "cannot read ", what_, " '", path_, "': the gzip stream is truncated");
  if (rc != Z_OK) Throw(ErrorKind::kIO, "cannot read ", what_, " '", path_, "': zlib error ", rc);
}

void LineReader::Rewind() {
  Close(false);
  Open();
}

bool LineReader::Fill() {
  if (file_ == nullptr) return false;
  if (begin_ > 0) {
    std::memmove(&buf_[0], &buf_[begin_], end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (end_ + 1 >= buf_.size()) {
    // One line longer than the buffer: it must be held whole to be parsed.
    CheckLimit(Limit::kRecordBytes, static_cast<int64_t>(2 * (buf_.size() - 1)),
               detail::Concat("reading line ", line_no_ + 1, " of ", what_, " '", path_, "'"));
    buf_.resize(2 * (buf_.size() - 1) + 1);
  }
  const unsigned want = static_cast<unsigned>(std::min<size_t>(buf_.size() - 1 - end_, 1u << 30));
  const int got = gzread(file_, &buf_[end_], want);
  if (got < 0) {
    int code = 0;
    std::string msg = gzerror(file_, &code);
    Close(false);
    Throw(ErrorKind::kIO, "cannot read ", what_, " '", path_, "': corrupt gzip data (", msg, ")");
  }
  if (got == 0) {
    Close(true);
    return false;
  }
  end_ += static_cast<size_t>(got);
  return true;
}

const char* LineReader::Next(size_t* length) {
  for (;;) {
    char* b = &buf_[0];
    const size_t from = std::max(begin_, scanned_);
    const void* nl = std::memchr(b + from, '\n', end_ - from);
    size_t stop;
    if (nl != nullptr) {
      stop = static_cast<size_t>(static_cast<const char*>(nl) - b);
    } else if (eof_) {
      if (begin_ == end_) return nullptr;
      stop = end_;  // the last line has no end of line; the spare byte takes its NUL
    } else {
      scanned_ = end_;
      if (!Fill()) eof_ = true;
      continue;
    }
    size_t len = stop - begin_;
    b[stop] = '\0';
    if (len > 0 && b[stop - 1] == '\r') b[stop - 1] = '\0', --len;
    const char* line = b + begin_;
    begin_ = std::min(stop + 1, end_);
    scanned_ = begin_;
    ++line_no_;
    if (length != nullptr) *length = len;
    return line;
  }
}

}  // namespace io
}  // namespace weft

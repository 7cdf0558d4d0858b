#include "core/io/line_reader.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <utility>

#include "core/base/error.h"
#include "core/base/limits.h"
#include "core/io/dense_batch_iter.h"

namespace weft {
namespace io {

namespace {

bool Stat(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

// The non-empty regular files of directory `dir` (entries that stat follows), by name.
std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    const std::string path = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
    if (Stat(path, &st) && S_ISREG(st.st_mode) && st.st_size > 0) names.push_back(path);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<std::string> ExpandInputPaths(const std::string& uri, const std::string& what) {
  std::vector<std::string> files;
  size_t from = 0;
  while (from <= uri.size()) {
    size_t to = uri.find(';', from);
    if (to == std::string::npos) to = uri.size();
    std::string path = uri.substr(from, to - from);
    from = to + 1;
    if (path.empty()) continue;
    if (path.rfind("file://", 0) == 0) path = path.substr(7);
    const size_t scheme = path.find("://");
    if (scheme != std::string::npos)
      Throw(ErrorKind::kUnsupported, what, " '", path, "': only local files are read, not '",
            path.substr(0, scheme), "://' URLs");
    struct stat st;
    if (Stat(path, &st)) {
      if (S_ISDIR(st.st_mode)) {
        for (auto& f : ListFiles(path)) files.push_back(std::move(f));
      } else if (st.st_size > 0 || !S_ISREG(st.st_mode)) {
        files.push_back(path);  // a pipe or device has no size to judge by
      }
      continue;
    }
    // No such entry: a pattern over the files of the directory before the last '/'.
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash + 1 == path.size()) {
      CheckReadable(path, what);  // raises kNotFound with the system's reason
      continue;
    }
    std::regex pattern;
    try {
      pattern = std::regex(path, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      Throw(ErrorKind::kNotFound, "cannot open ", what, " '", path, "': no such file or directory, and not a valid "
            "regular expression over the file names of its directory (", e.what(), ")");
    }
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    size_t matched = 0;
    for (auto& f : ListFiles(dir))
      if (std::regex_match(f, pattern)) files.push_back(std::move(f)), ++matched;
    // dmlc passes over a pattern that matches nothing; a mistyped path is named here instead.
    WEFT_CHECK(matched > 0, kNotFound, "cannot open ", what, " '", path, "': no such file or directory, and no "
               "non-empty file of '", dir, "' matches it as a regular expression");
  }
  WEFT_CHECK(!files.empty(), kNotFound, "cannot find any non-empty file for ", what, " '", uri,
             "': expected a file, a directory, a regular expression over the file names of one directory, or "
             "several of these separated by ';'");
  return files;
}

LineReader::LineReader(std::string path, std::string what, size_t chunk_bytes)
    : what_(std::move(what)), files_(ExpandInputPaths(path, what_)) {
  // One byte more than a chunk: a last line without an end of line still gets its NUL.
  buf_.resize(std::max<size_t>(chunk_bytes, 16) + 1);
  Open();
}

LineReader::~LineReader() { Close(false); }

void LineReader::Open() {
  const std::string& path = files_[file_];
  CheckReadable(path, what_);
  gz_ = gzopen(path.c_str(), "rb");  // zlib passes a plain file through
  if (gz_ == nullptr) Throw(ErrorKind::kIO, "cannot open ", what_, " '", path, "' for reading");
  gzbuffer(gz_, 1 << 18);
  begin_ = end_ = scanned_ = 0;
  eof_ = false;
  line_no_ = 0;
}

void LineReader::Close(bool check) {
  if (gz_ == nullptr) return;
  const int rc = gzclose(gz_);
  gz_ = nullptr;
  if (!check) return;
  // zlib reports a gzip stream cut short only here, as Z_BUF_ERROR from gzclose_r.
  if (rc == Z_BUF_ERROR) Throw(ErrorKind::kIO, "cannot read ", what_, " '", path(), "': the gzip stream is truncated");
  if (rc != Z_OK) Throw(ErrorKind::kIO, "cannot read ", what_, " '", path(), "': zlib error ", rc);
}

void LineReader::Rewind() {
  Close(false);
  file_ = 0;
  Open();
}

bool LineReader::Fill() {
  if (gz_ == nullptr) return false;
  if (begin_ > 0) {
    std::memmove(&buf_[0], &buf_[begin_], end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (end_ + 1 >= buf_.size()) {
    // One line longer than the buffer: it must be held whole to be parsed.
    CheckLimit(Limit::kRecordBytes, static_cast<int64_t>(2 * (buf_.size() - 1)),
               detail::Concat("reading line ", line_no_ + 1, " of ", what_, " '", path(), "'"));
    buf_.resize(2 * (buf_.size() - 1) + 1);
  }
  const unsigned want = static_cast<unsigned>(std::min<size_t>(buf_.size() - 1 - end_, 1u << 30));
  const int got = gzread(gz_, &buf_[end_], want);
  if (got < 0) {
    int code = 0;
    std::string msg = gzerror(gz_, &code);
    Close(false);
    Throw(ErrorKind::kIO, "cannot read ", what_, " '", path(), "': corrupt gzip data (", msg, ")");
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
      if (begin_ == end_) {
        if (file_ + 1 >= files_.size()) return nullptr;
        ++file_;  // the next file; its first line starts a new line
        Open();
        continue;
      }
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

// Reads a text file (plain or gzip) line by line through a buffer of bounded size, so that
// an iterator over a file of any size holds only a chunk of it at a time.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <string>

namespace weft {
namespace io {

class LineReader {
 public:
  // `what` names the file's role in errors ("data_libsvm of LibSVMIter"). The file is
  // read chunk_bytes at a time; a longer line grows the buffer to hold it, up to
  // WEFT_LIMIT_RECORD_BYTES.
  LineReader(std::string path, std::string what, size_t chunk_bytes = size_t{1} << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its end of line ("\n" or "\r\n"), NUL-terminated, valid until
  // the next call; nullptr at the end of the file. *length (when given) gets its length.
  const char* Next(size_t* length = nullptr);
  // The number of the line Next returned last (1-based).
  size_t line_no() const { return line_no_; }
  // Back to the first line.
  void Rewind();
  const std::string& path() const { return path_; }
  const std::string& what() const { return what_; }

 private:
  void Open();
  void Close(bool check);
  // Reads more of the file behind what the buffer holds; false at the end of the file.
  bool Fill();

  std::string path_, what_;
  gzFile file_ = nullptr;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes: buf_[begin_, end_)
  size_t scanned_ = 0;          // buf_[begin_, scanned_) holds no end of line
  bool eof_ = false;
  size_t line_no_ = 0;
};

}  // namespace io
}  // namespace weft

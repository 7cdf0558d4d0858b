// Reads text files (plain or gzip) line by line through a buffer of bounded size, so that
// an iterator over a file of any size holds only a chunk of it at a time.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <string>
#include <vector>

namespace weft {
namespace io {

// The files a path names, as MXNet's text iterators (dmlc's InputSplit) take it: several
// paths separated by ';', each a file, a directory (its non-empty regular files, not those of
// its subdirectories, in name order), or, where no such entry exists, a regular expression
// (ECMAScript) that the whole path of a non-empty file of the directory before its last '/'
// must match (in name order). Empty files are left out, as dmlc does; a 'file://' prefix is
// dropped. kNotFound when nothing is left, naming `what` and the forms accepted; other URL
// schemes (hdfs://, s3://) are kUnsupported.
std::vector<std::string> ExpandInputPaths(const std::string& uri, const std::string& what);

class LineReader {
 public:
  // The lines of the files `path` names (ExpandInputPaths), one file after another; a file
  // whose last line has no end of line still ends that line. `what` names the role in errors
  // ("data_libsvm of LibSVMIter"). Files are read chunk_bytes at a time; a longer line grows
  // the buffer to hold it, up to WEFT_LIMIT_RECORD_BYTES.
  LineReader(std::string path, std::string what, size_t chunk_bytes = size_t{1} << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its end of line ("\n" or "\r\n"), NUL-terminated, valid until
  // the next call; nullptr at the end of the file. *length (when given) gets its length.
  const char* Next(size_t* length = nullptr);
  // The number of the line Next returned last (1-based, within its file).
  size_t line_no() const { return line_no_; }
  // Back to the first line of the first file.
  void Rewind();
  // The file that line came from.
  const std::string& path() const { return files_[file_]; }
  const std::string& what() const { return what_; }

 private:
  void Open();
  void Close(bool check);
  // Reads more of the file behind what the buffer holds; false at the end of the file.
  bool Fill();

  std::string what_;
  std::vector<std::string> files_;
  size_t file_ = 0;  // the file being read
  gzFile gz_ = nullptr;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes: buf_[begin_, end_)
  size_t scanned_ = 0;          // buf_[begin_, scanned_) holds no end of line
  bool eof_ = false;
  size_t line_no_ = 0;
};

}  // namespace io
}  // namespace weft

// dmlc RecordIO, the container of MXNet's `.rec` files, and the image record payload.
//
// A file is a sequence of chunks: uint32 magic 0xced7230a, uint32 lrec (top 3 bits the
// continuation flag, low 29 bits the length), the payload, zero padding to a multiple of 4.
// A record whose payload holds the magic at a 4-aligned offset is cut there into parts
// (flag 1 first, 2 middle, 3 last; 0 for a whole record) and the magic dropped, so that a
// reader that lost its place can find the next record by scanning for the aligned magic.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace io {

constexpr uint32_t kRecordIOMagic = 0xced7230au;
// The payload length field has 29 bits.
constexpr uint32_t kRecordIOMaxLength = (1u << 29) - 1;

inline uint32_t RecordIOFlag(uint32_t lrec) { return (lrec >> 29) & 7u; }
inline uint32_t RecordIOLength(uint32_t lrec) { return lrec & kRecordIOMaxLength; }
inline uint32_t RecordIOEncodeLRec(uint32_t flag, uint32_t length) { return (flag << 29) | length; }

// Appends `data` as one record to `out` in the on-disk form (parts, headers, padding).
void EncodeRecord(const void* data, size_t size, std::string* out);

class RecordIOWriter {
 public:
  // Creates or truncates `path`; append=true keeps what is there and writes at the end.
  explicit RecordIOWriter(const std::string& path, bool append = false);
  ~RecordIOWriter();
  RecordIOWriter(const RecordIOWriter&) = delete;
  RecordIOWriter& operator=(const RecordIOWriter&) = delete;

  void Write(const void* data, size_t size);
  // Byte offset where the next record starts (what `.idx` files store).
  uint64_t Tell() const { return pos_; }
  void Flush();
  void Close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* fp_ = nullptr;
  uint64_t pos_ = 0;
  std::string buf_;
};

class RecordIOReader {
 public:
  explicit RecordIOReader(const std::string& path);
  ~RecordIOReader();
  RecordIOReader(const RecordIOReader&) = delete;
  RecordIOReader& operator=(const RecordIOReader&) = delete;

  // Reads the record at the current position into *out; false at a clean end (of the file,
  // or of the byte range set by SetRange). A corrupt or truncated record throws kIO naming
  // the file and the offset.
  bool Next(std::string* out);
  // Moves to `pos`, which must be the offset of a record's first chunk.
  void Seek(uint64_t pos);
  uint64_t Tell() const { return pos_; }
  uint64_t FileSize() const { return size_; }
  // End of the byte range records are read from (the file size unless SetRange/SetPart).
  uint64_t RangeEnd() const { return end_; }
  // Restricts reading to the records that start in [begin, end): begin is moved forward
  // to the first record start at or after it (an aligned magic with flag 0 or 1).
  void SetRange(uint64_t begin, uint64_t end);
  // The byte range of part `part_index` of `num_parts`, as dmlc's InputSplit cuts it.
  void SetPart(int part_index, int num_parts);
  const std::string& path() const { return path_; }

 private:
  // Reads exactly n bytes at pos_ (advancing it); false if the file ends first.
  bool ReadExact(void* dst, size_t n, size_t* got);
  uint64_t FindRecordStart(uint64_t from);

  std::string path_;
  std::FILE* fp_ = nullptr;
  uint64_t pos_ = 0;
  uint64_t size_ = 0;
  uint64_t end_ = 0;
};

// `.idx` files (MXIndexedRecordIO): "<key>\t<offset>\n" per record. Keys are kept as text so
// that callers choose their type; a malformed line throws kIO naming the file and line.
std::vector<std::pair<std::string, uint64_t>> ReadRecordIndex(const std::string& path);
void WriteRecordIndex(const std::string& path, const std::vector<std::pair<std::string, uint64_t>>& entries);

// The 24-byte header in front of an image record's payload (ImageRecordIO::Header).
struct ImageRecordHeader {
  uint32_t flag = 0;  // number of float labels that follow the header (0: `label` is the label)
  float label = 0.f;
  uint64_t id = 0;
  uint64_t id2 = 0;
};
constexpr size_t kImageRecordHeaderSize = 24;

// Header + labels + image bytes. With labels.size() > 0 the header's flag becomes their
// count and its label 0, as mx.recordio.pack does for an array label.
std::string PackImageRecord(ImageRecordHeader header, const std::vector<float>& labels, const void* data,
                            size_t size);

struct ImageRecordView {
  ImageRecordHeader header;
  std::vector<float> labels;  // the flag > 0 labels (empty when flag == 0)
  const uint8_t* data = nullptr;
  size_t size = 0;
};
// Splits a record; `what` names it in errors (e.g. "file.rec at offset 88").
ImageRecordView UnpackImageRecord(const void* record, size_t size, const std::string& what);

}  // namespace io
}  // namespace weft

#include "core/io/recordio.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>

#include "core/base/error.h"
#include "core/base/limits.h"

namespace weft {
namespace io {

namespace {

static_assert(sizeof(ImageRecordHeader) == kImageRecordHeaderSize, "the image header is packed as IfQQ");

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08" PRIx32, v);
  return buf;
}

uint32_t LoadU32(const unsigned char* p) {
  // The format is little-endian on disk whatever the host; assemble byte by byte.
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

void StoreU32(uint32_t v, std::string* out) {
  char b[4] = {static_cast<char>(v & 0xFF), static_cast<char>((v >> 8) & 0xFF), static_cast<char>((v >> 16) & 0xFF),
               static_cast<char>((v >> 24) & 0xFF)};
  out->append(b, 4);
}

void AppendChunk(uint32_t flag, const char* data, uint32_t len, std::string* out) {
  StoreU32(kRecordIOMagic, out);
  StoreU32(RecordIOEncodeLRec(flag, len), out);
  out->append(data, len);
}

}  // namespace

void EncodeRecord(const void* data, size_t size, std::string* out) {
  WEFT_CHECK(size <= kRecordIOMaxLength, kValue, "RecordIO: a record holds at most ", kRecordIOMaxLength,
             " bytes, got ", size);
  WEFT_CHECK(data != nullptr || size == 0, kValue, "RecordIO: record data is NULL but size is ", size);
  const char* p = static_cast<const char*>(data);
  const uint32_t len = static_cast<uint32_t>(size);
  // Only aligned words can be mistaken for a chunk header by a reader scanning for records,
  // so only those are cut out; `start` is where the pending part begins.
  uint32_t start = 0;
  for (uint32_t i = 0; i + 4 <= len; i += 4) {
    if (LoadU32(reinterpret_cast<const unsigned char*>(p + i)) == kRecordIOMagic) {
      AppendChunk(start == 0 ? 1u : 2u, p + start, i - start, out);
      start = i + 4;
    }
  }
  AppendChunk(start == 0 ? 0u : 3u, p + start, len - start, out);
  const uint32_t pad = (4 - (len & 3u)) & 3u;
  out->append(pad, '\0');
}

// ---------------------------------------------------------------- writer

RecordIOWriter::RecordIOWriter(const std::string& path, bool append) : path_(path) {
  fp_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  WEFT_CHECK(fp_ != nullptr, kIO, "RecordIO: cannot open '", path, "' for writing: ", std::strerror(errno));
  if (append) {
    std::fseek(fp_, 0, SEEK_END);
    pos_ = static_cast<uint64_t>(ftello(fp_));
    WEFT_CHECK(pos_ % 4 == 0, kIO, "RecordIO: cannot append to '", path, "': its size ", pos_,
               " is not a multiple of 4, so it does not end on a record boundary");
  }
}

RecordIOWriter::~RecordIOWriter() {
  if (fp_ != nullptr) std::fclose(fp_);
}

void RecordIOWriter::Write(const void* data, size_t size) {
  WEFT_CHECK(fp_ != nullptr, kValue, "RecordIO: '", path_, "' is closed");
  buf_.clear();
  EncodeRecord(data, size, &buf_);
  size_t n = std::fwrite(buf_.data(), 1, buf_.size(), fp_);
  WEFT_CHECK(n == buf_.size(), kIO, "RecordIO: writing '", path_, "' at offset ", pos_,
             " failed: ", std::strerror(errno));
  pos_ += buf_.size();
}

void RecordIOWriter::Flush() {
  if (fp_ != nullptr)
    WEFT_CHECK(std::fflush(fp_) == 0, kIO, "RecordIO: flushing '", path_, "' failed: ", std::strerror(errno));
}

void RecordIOWriter::Close() {
  if (fp_ == nullptr) return;
  std::FILE* fp = fp_;
  fp_ = nullptr;
  WEFT_CHECK(std::fclose(fp) == 0, kIO, "RecordIO: closing '", path_, "' failed: ", std::strerror(errno));
}

// ---------------------------------------------------------------- reader

RecordIOReader::RecordIOReader(const std::string& path) : path_(path) {
  fp_ = std::fopen(path.c_str(), "rb");
  WEFT_CHECK(fp_ != nullptr, kIO, "RecordIO: cannot open '", path, "' for reading: ", std::strerror(errno));
  // Enough to keep sequential reads to few syscalls, small enough that a seek (which
  // drops the buffer) followed by a short header read does not pull in much unused data.
  std::setvbuf(fp_, nullptr, _IOFBF, 1 << 16);
  std::fseek(fp_, 0, SEEK_END);
  size_ = static_cast<uint64_t>(ftello(fp_));
  std::fseek(fp_, 0, SEEK_SET);
  end_ = size_;
}

RecordIOReader::~RecordIOReader() {
  if (fp_ != nullptr) std::fclose(fp_);
}

bool RecordIOReader::ReadExact(void* dst, size_t n, size_t* got) {
  size_t r = n == 0 ? 0 : std::fread(dst, 1, n, fp_);
  pos_ += r;
  if (got != nullptr) *got = r;
  return r == n;
}

void RecordIOReader::Seek(uint64_t pos) {
  WEFT_CHECK(pos <= size_, kIO, "RecordIO: cannot seek '", path_, "' to offset ", pos, ": the file has ", size_,
             " bytes");
  WEFT_CHECK(fseeko(fp_, static_cast<off_t>(pos), SEEK_SET) == 0, kIO, "RecordIO: seeking '", path_, "' to offset ",
             pos, " failed: ", std::strerror(errno));
  pos_ = pos;
}

bool RecordIOReader::Next(std::string* out) {
  out->clear();
  if (pos_ >= end_) return false;
  const uint64_t start = pos_;
  bool in_record = false;
  for (;;) {
    const uint64_t chunk = pos_;
    unsigned char head[8];
    size_t got = 0;
    if (!ReadExact(head, 8, &got)) {
      if (got == 0 && !in_record) return false;
      if (got == 0)
        Throw(ErrorKind::kIO, "RecordIO: '", path_, "' ends at offset ", chunk,
              " inside the multi-part record that starts at offset ", start, " (its last part is missing)");
      Throw(ErrorKind::kIO, "RecordIO: '", path_, "' is truncated at offset ", chunk, ": a chunk header needs 8 bytes, ",
            got, " remain");
    }
    const uint32_t magic = LoadU32(head);
    WEFT_CHECK(magic == kRecordIOMagic, kIO, "RecordIO: bad magic ", Hex32(magic), " at offset ", chunk, " of '", path_,
               "' (expected ", Hex32(kRecordIOMagic), "); the file is corrupt or not a RecordIO file");
    const uint32_t lrec = LoadU32(head + 4);
    const uint32_t flag = RecordIOFlag(lrec), len = RecordIOLength(lrec);
    WEFT_CHECK(flag <= 3, kIO, "RecordIO: chunk at offset ", chunk, " of '", path_, "' has continuation flag ", flag,
               " (expected 0..3)");
    if (!in_record && (flag == 2 || flag == 3))
      Throw(ErrorKind::kIO, "RecordIO: chunk at offset ", chunk, " of '", path_, "' continues a record (flag ", flag,
            ") but no record was started");
    if (in_record && (flag == 0 || flag == 1))
      Throw(ErrorKind::kIO, "RecordIO: the multi-part record at offset ", start, " of '", path_,
            "' is not finished: the chunk at offset ", chunk, " starts a new record (flag ", flag, ")");
    const uint64_t padded = (static_cast<uint64_t>(len) + 3) & ~uint64_t{3};
    if (chunk + 8 + padded > size_)
      Throw(ErrorKind::kIO, "RecordIO: '", path_, "' is truncated: the chunk at offset ", chunk, " declares ", len,
            " payload bytes (", padded, " with padding) but only ", size_ - chunk - 8, " bytes follow its header");
    size_t base = out->size();
    if (in_record) {
      // The writer dropped the magic where it cut the record; put it back.
      StoreU32(kRecordIOMagic, out);
      base += 4;
    }
    // A record of many chunks may span the whole file: bound what one record may take.
    CheckLimit(Limit::kRecordBytes, static_cast<int64_t>(base + padded),
               "RecordIO: the record at offset " + std::to_string(start) + " of '" + path_ + "'");
    out->resize(base + padded);
    if (!ReadExact(&(*out)[base], padded, &got))
      Throw(ErrorKind::kIO, "RecordIO: reading '", path_, "' at offset ", chunk + 8, " failed after ", got, " of ",
            padded, " bytes");
    out->resize(base + len);
    if (flag == 0 || flag == 3) return true;
    in_record = true;
  }
}

uint64_t RecordIOReader::FindRecordStart(uint64_t from) {
  uint64_t p = (from + 3) & ~uint64_t{3};
  if (p >= size_) return size_;
  Seek(p);
  unsigned char w[4];
  while (p + 8 <= size_) {
    if (!ReadExact(w, 4, nullptr)) break;
    if (LoadU32(w) == kRecordIOMagic) {
      if (!ReadExact(w, 4, nullptr)) break;
      uint32_t flag = RecordIOFlag(LoadU32(w));
      if (flag == 0 || flag == 1) return p;
      Seek(p + 4);
    }
    p += 4;
  }
  return size_;
}

void RecordIOReader::SetRange(uint64_t begin, uint64_t end) {
  WEFT_CHECK(begin <= end, kValue, "RecordIO: range [", begin, ", ", end, ") of '", path_, "' is empty or reversed");
  uint64_t b = FindRecordStart(std::min(begin, size_));
  uint64_t e = end >= size_ ? size_ : FindRecordStart(end);
  end_ = e;
  Seek(b);
}

void RecordIOReader::SetPart(int part_index, int num_parts) {
  WEFT_CHECK(num_parts >= 1, kValue, "RecordIO: num_parts must be >= 1, got ", num_parts);
  WEFT_CHECK(part_index >= 0 && part_index < num_parts, kValue, "RecordIO: part_index must be in [0, ", num_parts,
             "), got ", part_index);
  uint64_t step = (size_ + num_parts - 1) / num_parts;
  step = (step + 3) & ~uint64_t{3};
  uint64_t b = std::min(step * part_index, size_);
  uint64_t e = std::min(step * (part_index + 1), size_);
  SetRange(b, e);
}

// ---------------------------------------------------------------- .idx

std::vector<std::pair<std::string, uint64_t>> ReadRecordIndex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  WEFT_CHECK(in.good(), kIO, "RecordIO: cannot open index '", path, "': ", std::strerror(errno));
  std::vector<std::pair<std::string, uint64_t>> entries;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    size_t tab = line.find('\t');
    bool ok = tab != std::string::npos && tab > 0;
    uint64_t off = 0;
    if (ok) {
      // Columns after the offset are ignored, as MXIndexedRecordIO ignores them.
      size_t tab2 = line.find('\t', tab + 1);
      std::string num = line.substr(tab + 1, tab2 == std::string::npos ? std::string::npos : tab2 - tab - 1);
      ok = !num.empty() && num.size() <= 19 && num.find_first_not_of("0123456789") == std::string::npos;
      if (ok) off = std::stoull(num);
    }
    if (!ok)
      Throw(ErrorKind::kIO, "RecordIO: index '", path, "' line ", lineno,
            ": expected '<key>\\t<byte offset>', got '", line.substr(0, 80), "'");
    entries.emplace_back(line.substr(0, tab), off);
  }
  return entries;
}

void WriteRecordIndex(const std::string& path, const std::vector<std::pair<std::string, uint64_t>>& entries) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  WEFT_CHECK(out.good(), kIO, "RecordIO: cannot open index '", path, "' for writing: ", std::strerror(errno));
  for (const auto& e : entries) out << e.first << '\t' << e.second << '\n';
  out.flush();
  WEFT_CHECK(out.good(), kIO, "RecordIO: writing index '", path, "' failed");
}

// ---------------------------------------------------------------- image records

std::string PackImageRecord(ImageRecordHeader header, const std::vector<float>& labels, const void* data,
                            size_t size) {
  if (!labels.empty()) {
    header.flag = static_cast<uint32_t>(labels.size());
    header.label = 0.f;
  }
  std::string out(kImageRecordHeaderSize + labels.size() * sizeof(float) + size, '\0');
  std::memcpy(&out[0], &header, kImageRecordHeaderSize);
  if (!labels.empty()) std::memcpy(&out[kImageRecordHeaderSize], labels.data(), labels.size() * sizeof(float));
  if (size > 0) std::memcpy(&out[kImageRecordHeaderSize + labels.size() * sizeof(float)], data, size);
  return out;
}

ImageRecordView UnpackImageRecord(const void* record, size_t size, const std::string& what) {
  WEFT_CHECK(size >= kImageRecordHeaderSize, kIO, "image record (", what, ") has ", size,
             " bytes, too short for the 24-byte header");
  const uint8_t* p = static_cast<const uint8_t*>(record);
  ImageRecordView v;
  std::memcpy(&v.header, p, kImageRecordHeaderSize);
  size_t off = kImageRecordHeaderSize;
  if (v.header.flag > 0) {
    const uint64_t need = off + uint64_t{v.header.flag} * sizeof(float);
    WEFT_CHECK(need <= size, kIO, "image record (", what, ") header announces ", v.header.flag, " labels (",
               need, " bytes with the header) but the record has ", size, " bytes");
    v.labels.resize(v.header.flag);
    std::memcpy(v.labels.data(), p + off, v.header.flag * sizeof(float));
    off = static_cast<size_t>(need);
  }
  v.data = p + off;
  v.size = size - off;
  return v;
}

}  // namespace io
}  // namespace weft

#include "core/io/dense_batch_iter.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/base/limits.h"

namespace weft {
namespace io {

namespace {
Shape Prepend(int64_t n, const Shape& s) {
  std::vector<int64_t> dims{n};
  for (int i = 0; i < s.ndim(); ++i) dims.push_back(s[i]);
  return Shape(dims);
}
}  // namespace

DenseBatchIter::DenseBatchIter(std::string iter_name, DenseSamples samples, int batch_size, LastBatch last)
    : name_(std::move(iter_name)), s_(std::move(samples)), batch_size_(batch_size), last_(last) {
  WEFT_CHECK(batch_size_ >= 1, kValue, "Iterator '", name_, "': batch_size must be at least 1, got ", batch_size_);
  const size_t n = s_.Count();
  const size_t rows = s_.row.empty() ? n : s_.row.size();
  const size_t du = static_cast<size_t>(s_.data_shape.Size());
  const size_t lu = static_cast<size_t>(s_.label_shape.Size());
  const bool ints = s_.dtype != DType::kFloat32;
  WEFT_CHECK(!ints || s_.dtype == DType::kInt32 || s_.dtype == DType::kInt64, kInternal, "Iterator '", name_,
             "': samples of dtype ", DTypeName(s_.dtype), " are not supported");
  const bool data_ok = ints ? s_.int_data.size() == rows * du
                            : (s_.data.empty() ? s_.bytes.size() >= s_.bytes_offset + rows * du
                                               : s_.data.size() == rows * du);
  WEFT_CHECK(data_ok && (ints ? s_.int_label.size() : s_.label.size()) == rows * lu &&
                 (s_.row.empty() || s_.row.size() == n),
             kInternal, "Iterator '", name_, "': sample buffers do not match ", n, " samples");
  batch_data_shape_ = Prepend(batch_size_, s_.data_shape);
  batch_label_shape_ = (s_.label_shape.ndim() == 1 && s_.label_shape[0] == 1) ? Shape{batch_size_}
                                                                              : Prepend(batch_size_, s_.label_shape);
}

std::vector<DataDesc> DenseBatchIter::ProvideData() const { return {{"data", batch_data_shape_, s_.dtype}}; }
std::vector<DataDesc> DenseBatchIter::ProvideLabel() const {
  return {{"softmax_label", batch_label_shape_, s_.dtype}};
}

void DenseBatchIter::Reset() {
  // After a wrapped last batch the next epoch has already begun: it goes on from there.
  if (overflow_ > 0) {
    overflow_ = 0;
  } else {
    pos_ = 0;
  }
  out_ = DataBatch();
}

namespace {
template <typename T>
void CopyInts(const int64_t* in, int64_t n, void* out, int64_t at) {
  T* o = static_cast<T*>(out) + at;
  for (int64_t k = 0; k < n; ++k) o[k] = static_cast<T>(in[k]);
}
}  // namespace

void DenseBatchIter::CopySample(size_t pos, int64_t row, void* data, void* label) const {
  const int64_t du = s_.data_shape.Size(), lu = s_.label_shape.Size();
  const size_t src = s_.row.empty() ? pos : s_.row[pos];
  if (s_.dtype != DType::kFloat32) {
    auto copy = s_.dtype == DType::kInt64 ? CopyInts<int64_t> : CopyInts<int32_t>;
    copy(s_.int_data.data() + src * du, du, data, row * du);
    copy(s_.int_label.data() + src * lu, lu, label, row * lu);
    return;
  }
  float* fdata = static_cast<float*>(data);
  if (s_.data.empty()) {
    const auto* in = reinterpret_cast<const unsigned char*>(s_.bytes.data()) + s_.bytes_offset + src * du;
    float* out = fdata + row * du;
    for (int64_t k = 0; k < du; ++k) out[k] = in[k] * s_.bytes_scale;
  } else {
    std::memcpy(fdata + row * du, s_.data.data() + src * du, sizeof(float) * du);
  }
  std::memcpy(static_cast<float*>(label) + row * lu, s_.label.data() + src * lu, sizeof(float) * lu);
}

bool DenseBatchIter::Next() {
  const size_t n = s_.Count();
  if (overflow_ > 0 || pos_ >= n) return false;
  const size_t take = std::min<size_t>(batch_size_, n - pos_);
  if (take < static_cast<size_t>(batch_size_) && last_ == LastBatch::kDiscard) {
    pos_ = n;
    return false;
  }
  // Fresh arrays every batch: a consumer (or the prefetch queue) may hold earlier ones.
  DataBatch b;
  b.data.emplace_back(batch_data_shape_, Context::CPU(), s_.dtype);
  b.label.emplace_back(batch_label_shape_, Context::CPU(), s_.dtype);
  auto* data = static_cast<char*>(b.data[0].data().dptr);
  auto* label = static_cast<char*>(b.label[0].data().dptr);
  const size_t elem = DTypeSize(s_.dtype);
  b.index.resize(batch_size_);
  for (size_t r = 0; r < take; ++r) {
    CopySample(pos_ + r, static_cast<int64_t>(r), data, label);
    b.index[r] = s_.index[pos_ + r];
  }
  pos_ += take;
  if (take < static_cast<size_t>(batch_size_)) {
    const int rest = batch_size_ - static_cast<int>(take);
    if (last_ == LastBatch::kWrap) {
      // Taken cyclically, so a set smaller than half a batch still fills it.
      for (int r = 0; r < rest; ++r) {
        CopySample(r % n, static_cast<int64_t>(take) + r, data, label);
        b.index[take + r] = s_.index[r % n];
      }
      overflow_ = rest;
      pos_ = static_cast<size_t>(rest) % n;
    } else {
      const int64_t du = s_.data_shape.Size(), lu = s_.label_shape.Size();
      std::memset(data + take * du * elem, 0, elem * du * rest);
      std::memset(label + take * lu * elem, 0, elem * lu * rest);
      for (int r = 0; r < rest; ++r) b.index[take + r] = 0;
    }
    b.pad = rest;
  }
  out_ = std::move(b);
  return true;
}

void CheckReadable(const std::string& path, const std::string& what) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) Throw(ErrorKind::kNotFound, "cannot open ", what, " '", path, "': ", std::strerror(errno));
  std::fclose(f);
}

namespace {
// How many bytes the file will give: its size, or for gzip the size its trailer records
// (modulo 2^32, so only a hint for the buffer).
size_t ExpectedSize(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  size_t expect = 0;
  unsigned char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    expect = size > 0 ? static_cast<size_t>(size) : 0;
    std::rewind(f);
    if (size >= 18 && std::fread(head, 1, 2, f) == 2 && head[0] == 0x1f && head[1] == 0x8b &&
        std::fseek(f, -4, SEEK_END) == 0 && std::fread(tail, 1, 4, f) == 4) {
      // A cut or corrupt file has garbage there: trust it only up to a plausible ratio.
      const size_t isize =
          uint32_t(tail[0]) | (uint32_t(tail[1]) << 8) | (uint32_t(tail[2]) << 16) | (uint32_t(tail[3]) << 24);
      expect = std::min(isize, expect * 32);
    }
  }
  std::fclose(f);
  return expect;
}
}  // namespace

std::string ReadFileMaybeGzip(const std::string& path, const std::string& what) {
  CheckReadable(path, what);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) Throw(ErrorKind::kIO, "cannot open ", what, " '", path, "' for reading");
  gzbuffer(f, 1 << 18);
  // Read straight into a buffer of the expected size: growing it by appends would copy the
  // data several times over.
  std::string out(ExpectedSize(path) + 1, '\0');
  size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const unsigned want = static_cast<unsigned>(std::min<size_t>(out.size() - used, 1u << 30));
    int got = gzread(f, &out[used], want);
    if (got < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      Throw(ErrorKind::kIO, "cannot read ", what, " '", path, "': corrupt gzip data (", msg, ")");
    }
    if (got == 0) break;
    used += static_cast<size_t>(got);
    // A gzip bomb inflates a few kilobytes into gigabytes: stop at the limit, not at the
    // machine's memory.
    if (used > static_cast<size_t>(LimitValue(Limit::kDecompressedBytes))) {
      gzclose(f);
      CheckLimit(Limit::kDecompressedBytes, static_cast<int64_t>(used), "reading " + what + " '" + path + "'");
    }
  }
  out.resize(used);
  // zlib reports a gzip stream cut short only here, as Z_BUF_ERROR from gzclose_r.
  int rc = gzclose(f);
  if (rc == Z_BUF_ERROR)
    Throw(ErrorKind::kIO, "cannot read ", what, " '", path, "': the gzip stream is truncated");
  if (rc != Z_OK) Throw(ErrorKind::kIO, "cannot read ", what, " '", path, "': zlib error ", rc);
  return out;
}

}  // namespace io
}  // namespace weft

#include "core/ndarray/serialize.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/context.h"
#include "core/base/error.h"
#include "core/ndarray/sparse.h"

namespace weft {

namespace {

// ---------------------------------------------------------------- writing
// Every integer is written little-endian with no padding, as dmlc::Stream does on the
// little-endian machines MXNet runs on.
template <typename T>
void Put(std::string* out, T v) {
  static_assert(std::is_trivially_copyable_v<T>, "raw write");
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

void PutRecord(std::string* out, const NDArray& a, const NDArraySaveOptions& opts) {
  if (opts.np_shape) {
    // MXNet's numpy-shape records hold dense arrays only; an uninitialised array has no
    // storage type, so it is refused too.
    WEFT_CHECK(!a.is_none() && !a.is_sparse(), kUnsupported, "NDArray save: in numpy-shape mode (mx.util.np_shape) ",
               "only dense arrays can be saved (as V3 records), got ",
               a.is_none() ? "an uninitialised array" : "a sparse array",
               "; save it with numpy-shape mode off");
    Put<uint32_t>(out, kNDArrayV3Magic);
  } else {
    Put<uint32_t>(out, kNDArrayV2Magic);
  }
  if (a.is_none()) {
    // MXNet writes an uninitialised array as its undefined storage type and an empty shape.
    Put<int32_t>(out, -1);
    Put<int32_t>(out, 0);
    return;
  }
  WEFT_CHECK(opts.np_shape || a.shape().ndim() > 0, kUnsupported,
             "NDArray save: a 0-d array cannot be written as a V2 record (MXNet's classic shapes have no 0-d "
             "arrays); reshape it to (1,) first, or save it in numpy-shape mode (mx.util.np_shape(True))");
  Put<int32_t>(out, static_cast<int32_t>(a.stype()));
  auto put_shape = [out](const Shape& s) {
    Put<int32_t>(out, s.ndim());
    for (int64_t d : s) Put<int64_t>(out, d);
  };
  // A sparse record: storage shape, shape, context, dtype, each aux's type and shape, the
  // stored values, then each aux's data (MXNet's order).
  if (a.is_sparse()) put_shape(a.sparse_values().shape());
  put_shape(a.shape());
  Context ctx = a.ctx();
  Put<int32_t>(out, static_cast<int32_t>(ctx.dev_type));
  Put<int32_t>(out, ctx.dev_id);
  Put<int32_t>(out, static_cast<int32_t>(a.dtype()));
  if (a.is_sparse()) {
    for (int i = 0; i < a.num_aux(); ++i) {
      Put<int32_t>(out, static_cast<int32_t>(a.aux(i).dtype()));
      put_shape(a.aux(i).shape());
    }
    for (int i = -1; i < a.num_aux(); ++i) {
      const NDArray& part = i < 0 ? a.sparse_values() : a.aux(i);
      size_t bytes = static_cast<size_t>(part.Size()) * DTypeSize(part.dtype());
      size_t at = out->size();
      out->resize(at + bytes);
      if (bytes) part.SyncCopyToCPU(&(*out)[at], bytes);
    }
    return;
  }
  size_t bytes = static_cast<size_t>(a.Size()) * DTypeSize(a.dtype());
  size_t at = out->size();
  out->resize(at + bytes);
  // Data is always saved from a host copy; SyncCopyToCPU waits for pending writes.
  a.SyncCopyToCPU(&(*out)[at], bytes);
}

// ---------------------------------------------------------------- reading
class Reader {
 public:
  Reader(const void* data, size_t size, const std::string& source)
      : p_(static_cast<const unsigned char*>(data)), size_(size), source_(source) {
    WEFT_CHECK(size == 0 || data != nullptr, kValue, source, ": data is NULL but size is ", size);
  }

  size_t offset() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& source() const { return source_; }

  // Throws kIO naming what was expected at the current offset.
  void Need(size_t n, const std::string& what) const {
    if (n > remaining())
      Throw(ErrorKind::kIO, source_, ": truncated at byte offset ", pos_, ": expected ", what, " (", n,
            " bytes), but only ", remaining(), " bytes remain");
  }

  template <typename T>
  T Get(const std::string& what) {
    Need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  const unsigned char* Take(size_t n, const std::string& what) {
    Need(n, what);
    const unsigned char* r = p_ + pos_;
    pos_ += n;
    return r;
  }

  [[noreturn]] void Corrupt(size_t at, const std::string& what) const {
    Throw(ErrorKind::kIO, source_, ": corrupt data at byte offset ", at, ": ", what);
  }

 private:
  const unsigned char* p_;
  size_t size_;
  size_t pos_ = 0;
  std::string source_;
};

// Generous bound on ranks: anything larger is garbage, not an array.
constexpr int64_t kMaxNDim = 64;

// In numpy-shape records -1 is an unknown rank or dimension (MXNet's TShape).
Shape ReadShapeI64(Reader* r, const std::string& rec, bool np_shape) {
  size_t at = r->offset();
  int32_t ndim = r->Get<int32_t>(rec + " shape rank (int32)");
  if (np_shape && ndim == -1) return Shape::Unknown();
  if (ndim < 0 || ndim > kMaxNDim)
    r->Corrupt(at, rec + ": expected a shape rank in [0, " + std::to_string(kMaxNDim) + "], got " + std::to_string(ndim));
  Shape s(ndim, static_cast<int64_t>(0));
  const int64_t lowest = np_shape ? -1 : 0;
  for (int i = 0; i < ndim; ++i) {
    size_t dat = r->offset();
    int64_t d = r->Get<int64_t>(rec + " dim " + std::to_string(i) + " (int64)");
    if (d < lowest)
      r->Corrupt(dat, rec + ": expected dim " + std::to_string(i) + " >= " + std::to_string(lowest) + ", got " +
                          std::to_string(d));
    s[i] = d;
  }
  return s;
}

struct BodyHead {
  Context target;
  DType dtype;
};

// The context and dtype fields.
BodyHead ReadBodyHead(Reader* r, const std::string& rec) {
  size_t at = r->offset();
  int32_t dev_type = r->Get<int32_t>(rec + " device type (int32)");
  int32_t dev_id = r->Get<int32_t>(rec + " device id (int32)");
  if (dev_type < 1 || dev_type > 5 || dev_type == 4 || dev_id < 0)
    r->Corrupt(at, rec + ": expected a context (device type 1, 2, 3 or 5 and a device id >= 0), got device type " +
                       std::to_string(dev_type) + " id " + std::to_string(dev_id));
  at = r->offset();
  int32_t type_flag = r->Get<int32_t>(rec + " dtype code (int32)");
  if (type_flag >= 8 && type_flag <= 11)
    Throw(ErrorKind::kUnsupported, r->source(), ": ", rec, " at byte offset ", at, " has dtype code ", type_flag,
          " (int16/uint16/uint32/uint64), which Weft does not support");
  if (!IsValidDType(type_flag))
    r->Corrupt(at, rec + ": expected a dtype code (0-7 or 12), got " + std::to_string(type_flag));
  // The data is read into host memory; an array saved from a GPU goes back to that GPU when
  // it exists.
  Context target = Context::CPU();
  if (dev_type == 2 && dev_id < NumGPUs()) target = Context::GPU(dev_id);
  if (dev_type == 3) target = Context::CPUPinned(dev_id);
  return BodyHead{target, static_cast<DType>(type_flag)};
}

// The raw data of an array of `shape` and `dtype`, into a new array on `target`.
NDArray ReadData(Reader* r, const Shape& shape, DType dtype, Context target, const std::string& rec) {
  // Overflow-safe: a corrupt shape must fail as "truncated", not as a huge allocation.
  size_t bytes = DTypeSize(dtype);
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes)) {
      bytes = SIZE_MAX;
      break;
    }
  }
  const unsigned char* data =
      r->Take(bytes, rec + " data for shape " + shape.ToString() + " " + DTypeName(dtype));
  Context host = target.is_gpu() ? Context::CPU() : target;
  NDArray a(shape, host, dtype);
  a.SyncCopyFromCPU(data, bytes);
  return target.is_gpu() ? a.Copy(target) : a;
}

// Context and dtype fields, then the data, into a new array.
NDArray ReadBody(Reader* r, const Shape& shape, const std::string& rec) {
  BodyHead head = ReadBodyHead(r, rec);
  return ReadData(r, shape, head.dtype, head.target, rec);
}

// The rest of a sparse record after its storage shape and shape (see PutRecord).
NDArray ReadSparseBody(Reader* r, StorageType stype, const Shape& storage_shape, const Shape& shape,
                       const std::string& rec) {
  BodyHead head = ReadBodyHead(r, rec);
  int num_aux = stype == StorageType::kCSR ? 2 : 1;
  std::vector<Shape> aux_shapes;
  for (int i = 0; i < num_aux; ++i) {
    size_t at = r->offset();
    int32_t type_flag = r->Get<int32_t>(rec + " aux " + std::to_string(i) + " dtype code (int32)");
    if (type_flag != static_cast<int32_t>(DType::kInt64))
      r->Corrupt(at, rec + ": expected auxiliary array " + std::to_string(i) + " of dtype int64 (6), got code " +
                         std::to_string(type_flag));
    aux_shapes.push_back(ReadShapeI64(r, rec + " aux " + std::to_string(i), false));
  }
  NDArray values = ReadData(r, storage_shape, head.dtype, head.target, rec);
  std::vector<NDArray> aux;
  for (int i = 0; i < num_aux; ++i)
    aux.push_back(ReadData(r, aux_shapes[i], DType::kInt64, head.target, rec + " aux " + std::to_string(i)));
  try {
    return MakeSparse(stype, shape, values, aux);
  } catch (const Error& e) {
    Throw(ErrorKind::kIO, r->source(), ": ", rec, " holds an inconsistent sparse array: ", e.what());
  }
}

NDArray ReadRecord(Reader* r, size_t index, const NDArrayLoadOptions& opts) {
  std::string rec = "record " + std::to_string(index);
  size_t start = r->offset();
  uint32_t magic = r->Get<uint32_t>(rec + " magic (uint32)");
  // Each kind of record is read only in the mode it was written in, as MXNet does (a
  // process-wide mode also reads the classic records).
  const bool np = opts.np_shape || opts.np_shape_global;
  if (magic == kNDArrayV3Magic && !np)
    Throw(ErrorKind::kUnsupported, r->source(), ": ", rec, " at byte offset ", start,
          " was saved in numpy-shape mode (a V3 record) and must be loaded in it: turn numpy-shape mode on "
          "(mx.util.np_shape(True) or use_np_shape) around the load");
  if (magic != kNDArrayV3Magic && np && !opts.np_shape_global)
    Throw(ErrorKind::kUnsupported, r->source(), ": ", rec, " at byte offset ", start,
          " was not saved in numpy-shape mode (a classic record) but is loaded in it: turn numpy-shape mode off "
          "(mx.util.np_shape(False)) around the load");
  if (magic == kNDArrayV2Magic || magic == kNDArrayV3Magic) {
    size_t at = r->offset();
    int32_t stype = r->Get<int32_t>(rec + " storage type (int32)");
    if (stype < -1 || stype > 2)
      r->Corrupt(at, rec + ": expected a storage type (-1, 0, 1 or 2), got " + std::to_string(stype));
    if (np && stype != 0)
      Throw(ErrorKind::kUnsupported, r->source(), ": ", rec, " at byte offset ", at,
            " has storage type ", stype, ", but numpy-shape mode reads only dense (0) arrays");
    if (stype == 1 || stype == 2) {
      Shape storage_shape = ReadShapeI64(r, rec + " storage", false);
      Shape shape = ReadShapeI64(r, rec, false);
      if (shape.ndim() == 0) return NDArray();
      return ReadSparseBody(r, static_cast<StorageType>(stype), storage_shape, shape, rec);
    }
    Shape shape = ReadShapeI64(r, rec, np);
    // "No shape" ends the record: an uninitialised (none) array. In numpy-shape mode a
    // 0-d shape is a scalar and a shape with an unknown part is "none".
    if (np ? !shape.is_known() : shape.ndim() == 0) return NDArray();
    if (stype == -1) r->Corrupt(at, rec + ": an array with a shape has the undefined storage type -1");
    return ReadBody(r, shape, rec);
  }
  if (magic == kNDArrayV1Magic) {
    Shape shape = ReadShapeI64(r, rec, false);
    if (shape.ndim() == 0) return NDArray();
    return ReadBody(r, shape, rec);
  }
  // V0: the first word was the rank, and dims are uint32.
  if (magic > kMaxNDim)
    r->Corrupt(start, rec + ": expected an NDArray record magic (0xF993FAC8/9/A) or a legacy rank in [0, " +
                          std::to_string(kMaxNDim) + "], got " + std::to_string(magic));
  Shape shape(static_cast<int>(magic), static_cast<int64_t>(0));
  for (uint32_t i = 0; i < magic; ++i) shape[i] = r->Get<uint32_t>(rec + " legacy dim " + std::to_string(i) + " (uint32)");
  if (shape.ndim() == 0) return NDArray();
  return ReadBody(r, shape, rec);
}

std::string ReadFile(const std::string& fname) {
  std::ifstream in(fname, std::ios::binary);
  if (!in) Throw(ErrorKind::kNotFound, "cannot open file '", fname, "' for reading: ", std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) Throw(ErrorKind::kIO, "error reading file '", fname, "': ", std::strerror(errno));
  return data;
}

}  // namespace

std::string SaveNDArrayList(const std::vector<NDArray>& arrays, const std::vector<std::string>& names,
                            const NDArraySaveOptions& opts) {
  WEFT_CHECK(names.empty() || names.size() == arrays.size(), kValue, "NDArray save: expected no names or ",
             arrays.size(), " names (one per array), got ", names.size());
  std::string out;
  Put<uint64_t>(&out, kNDArrayListMagic);
  Put<uint64_t>(&out, 0);  // reserved
  Put<uint64_t>(&out, arrays.size());
  for (const auto& a : arrays) PutRecord(&out, a, opts);
  Put<uint64_t>(&out, names.size());
  for (const auto& n : names) {
    Put<uint64_t>(&out, n.size());
    out.append(n);
  }
  return out;
}

NDArrayFile LoadNDArrayList(const void* data, size_t size, const std::string& source, const NDArrayLoadOptions& opts) {
  Reader r(data, size, source);
  uint64_t magic = r.Get<uint64_t>("the NDArray list magic 0x112 (uint64)");
  if (magic != kNDArrayListMagic) {
    std::ostringstream os;
    os << "expected the NDArray list magic 0x112, got 0x" << std::hex << magic;
    r.Corrupt(0, os.str());
  }
  r.Get<uint64_t>("the reserved field (uint64)");
  size_t at = r.offset();
  uint64_t count = r.Get<uint64_t>("the array count (uint64)");
  // Each record takes at least 4 bytes (a legacy empty one); a larger count is corruption.
  if (count > r.remaining() / 4)
    r.Corrupt(at, "array count " + std::to_string(count) + " cannot fit in the " + std::to_string(r.remaining()) +
                      " bytes that follow");
  NDArrayFile file;
  file.arrays.reserve(count);
  for (uint64_t i = 0; i < count; ++i) file.arrays.push_back(ReadRecord(&r, i, opts));
  at = r.offset();
  uint64_t num_names = r.Get<uint64_t>("the name count (uint64)");
  if (num_names != 0 && num_names != count)
    r.Corrupt(at, "expected a name count of 0 or " + std::to_string(count) + ", got " + std::to_string(num_names));
  for (uint64_t i = 0; i < num_names; ++i) {
    std::string what = "name " + std::to_string(i);
    uint64_t len = r.Get<uint64_t>(what + " length (uint64)");
    if (len > r.remaining()) r.Need(len, what + " bytes");
    const unsigned char* p = r.Take(static_cast<size_t>(len), what + " bytes");
    file.names.emplace_back(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  }
  return file;
}

std::string SaveNDArrayRaw(const NDArray& array, const NDArraySaveOptions& opts) {
  std::string out;
  PutRecord(&out, array, opts);
  return out;
}

NDArray LoadNDArrayRaw(const void* data, size_t size, const std::string& source, const NDArrayLoadOptions& opts) {
  Reader r(data, size, source);
  return ReadRecord(&r, 0, opts);
}

void SaveNDArrayListFile(const std::string& fname, const std::vector<NDArray>& arrays,
                         const std::vector<std::string>& names, const NDArraySaveOptions& opts) {
  std::string bytes = SaveNDArrayList(arrays, names, opts);
  WriteFileAtomically(fname, bytes.data(), bytes.size());
}

NDArrayFile LoadNDArrayListFile(const std::string& fname, const NDArrayLoadOptions& opts) {
  std::string data = ReadFile(fname);
  return LoadNDArrayList(data.data(), data.size(), "file '" + fname + "'", opts);
}

}  // namespace weft

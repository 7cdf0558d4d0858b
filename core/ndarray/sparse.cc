#include "core/ndarray/sparse.h"

#include <cstring>
#include <sstream>

#include "core/base/error.h"

namespace weft {

namespace {

std::vector<int64_t> HostInt64(const NDArray& a) {
  std::vector<int64_t> v(static_cast<size_t>(a.Size()));
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(int64_t));
  return v;
}

std::vector<char> HostBytes(const NDArray& a) {
  std::vector<char> v(static_cast<size_t>(a.Size()) * DTypeSize(a.dtype()));
  a.SyncCopyToCPU(v.data(), v.size());
  return v;
}

NDArray FromHost(const void* data, const Shape& shape, DType dtype, Context ctx) {
  NDArray host(shape, ctx.is_gpu() ? Context::CPU() : ctx, dtype);
  host.SyncCopyFromCPU(data, static_cast<size_t>(shape.Size()) * DTypeSize(dtype));
  return ctx.is_gpu() ? host.Copy(ctx) : host;
}

NDArray Int64Array(const std::vector<int64_t>& v, Context ctx) {
  return FromHost(v.data(), Shape{static_cast<int64_t>(v.size())}, DType::kInt64, ctx);
}

// Whether each of `n` elements of `dtype` at `p` is nonzero (-0.0 counts as zero, NaN not).
std::vector<bool> NonZero(const char* p, int64_t n, DType dtype) {
  std::vector<bool> nz(static_cast<size_t>(n));
  WEFT_TYPE_SWITCH(dtype, DT, {
    const DT* d = reinterpret_cast<const DT*>(p);
    for (int64_t i = 0; i < n; ++i) nz[i] = static_cast<float>(d[i]) != 0.0f;
  });
  return nz;
}

// The first fault among indices idx[begin, end): each in [0, limit), strictly increasing.
std::string IndexFault(const std::vector<int64_t>& idx, size_t begin, size_t end, int64_t limit, const char* what,
                       int64_t row, ErrorKind* kind) {
  std::ostringstream os;
  for (size_t j = begin; j < end; ++j) {
    if (idx[j] < 0 || idx[j] >= limit) {
      *kind = ErrorKind::kIndex;
      os << what << " " << idx[j] << " at position " << j;
      if (row >= 0) os << " (row " << row << ")";
      os << " is out of range [0, " << limit << ")";
      return os.str();
    }
    if (j > begin && idx[j] <= idx[j - 1]) {
      *kind = ErrorKind::kValue;
      os << what << " must be strictly increasing" << (row >= 0 ? " within each row" : "") << ", got " << idx[j - 1]
         << " then " << idx[j] << " at position " << j;
      return os.str();
    }
  }
  return std::string();
}

SparseFault Fault(SparseFault::Level level, ErrorKind kind, const std::string& message) {
  return SparseFault{level, static_cast<int>(kind), message};
}

// What breaks the format in parts that MakeSparseUnchecked accepted (level kNone: nothing).
// The lengths are checked before any value, and indptr wholly before the indices it
// delimits, so the check itself never reads past a part.
SparseFault FindFault(StorageType stype, const Shape& shape, const NDArray& values, const std::vector<NDArray>& aux) {
  std::ostringstream os;
  if (stype == StorageType::kCSR) {
    int64_t rows = shape[0];
    if (aux[0].Size() != rows + 1) {
      os << "csr: expected indptr of length " << rows + 1 << " (rows + 1), got " << aux[0].Size();
      return Fault(SparseFault::kShape, ErrorKind::kShape, os.str());
    }
    if (values.shape().ndim() != 1 || values.Size() != aux[1].Size()) {
      os << "csr: expected data and indices of one length (nnz), got data " << values.shape().ToString()
         << " and indices " << aux[1].shape().ToString();
      return Fault(SparseFault::kShape, ErrorKind::kShape, os.str());
    }
    std::vector<int64_t> indptr = HostInt64(aux[0]), idx = HostInt64(aux[1]);
    if (indptr[0] != 0) {
      os << "csr: indptr must start at 0, got " << indptr[0];
      return Fault(SparseFault::kContent, ErrorKind::kValue, os.str());
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (indptr[r + 1] < indptr[r]) {
        os << "csr: indptr must not decrease, got " << indptr[r] << " then " << indptr[r + 1] << " at position "
           << r + 1;
        return Fault(SparseFault::kContent, ErrorKind::kValue, os.str());
      }
    }
    if (indptr[rows] != values.Size()) {
      os << "csr: indptr must end at nnz = " << values.Size() << ", got " << indptr[rows];
      return Fault(SparseFault::kContent, ErrorKind::kValue, os.str());
    }
    for (int64_t r = 0; r < rows; ++r) {
      ErrorKind kind = ErrorKind::kValue;
      std::string m = IndexFault(idx, indptr[r], indptr[r + 1], shape[1], "csr: column index", r, &kind);
      if (!m.empty()) return Fault(SparseFault::kContent, kind, m);
    }
    return SparseFault{};
  }
  Shape want = shape;
  want[0] = aux[0].Size();
  if (values.shape() != want) {
    os << "row_sparse: expected data of shape " << want.ToString() << " (one row per index), got "
       << values.shape().ToString();
    return Fault(SparseFault::kShape, ErrorKind::kShape, os.str());
  }
  ErrorKind kind = ErrorKind::kValue;
  std::string m = IndexFault(HostInt64(aux[0]), 0, static_cast<size_t>(aux[0].Size()), shape[0],
                             "row_sparse: row index", -1, &kind);
  return m.empty() ? SparseFault{} : Fault(SparseFault::kContent, kind, m);
}

[[noreturn]] void RaiseFault(const SparseFault& f) { Throw(static_cast<ErrorKind>(f.error_kind), f.message); }

}  // namespace

const char* StorageTypeName(StorageType stype) {
  switch (stype) {
    case StorageType::kDefault: return "default";
    case StorageType::kRowSparse: return "row_sparse";
    case StorageType::kCSR: return "csr";
    default: return "undefined";
  }
}

StorageType ParseStorageType(const std::string& name) {
  if (name == "default") return StorageType::kDefault;
  if (name == "row_sparse") return StorageType::kRowSparse;
  if (name == "csr") return StorageType::kCSR;
  Throw(ErrorKind::kValue, "expected a storage type among 'default', 'row_sparse', 'csr', got '", name, "'");
}

StorageType ToStorageType(int code, const char* what) {
  WEFT_CHECK(code >= -1 && code <= 2, kValue, what,
             ": 'stype': expected a storage type code (0 default, 1 row_sparse, 2 csr), got ", code);
  return static_cast<StorageType>(code);
}

NDArray MakeSparseUnchecked(StorageType stype, const Shape& shape, const NDArray& values,
                            const std::vector<NDArray>& aux) {
  WEFT_CHECK(stype == StorageType::kCSR || stype == StorageType::kRowSparse, kValue,
             "MakeSparse: expected storage type csr or row_sparse, got ", StorageTypeName(stype));
  const char* name = StorageTypeName(stype);
  WEFT_CHECK(!values.is_none() && !values.is_sparse(), kValue, name, ": the values must be a dense array");
  size_t want_aux = stype == StorageType::kCSR ? 2 : 1;
  WEFT_CHECK(aux.size() == want_aux, kValue, name, ": expected ", want_aux, " auxiliary arrays, got ", aux.size());
  for (size_t i = 0; i < aux.size(); ++i) {
    WEFT_CHECK(!aux[i].is_none() && !aux[i].is_sparse() && aux[i].shape().ndim() == 1, kShape, name,
               ": auxiliary array ", i, " must be a dense 1-D array");
    WEFT_CHECK(aux[i].dtype() == DType::kInt64, kType, name, ": auxiliary array ", i, " must be int64, got ",
               DTypeName(aux[i].dtype()));
    WEFT_CHECK(aux[i].ctx() == values.ctx(), kValue, name, ": the auxiliary arrays must be on the values' context ",
               values.ctx().ToString(), ", got ", aux[i].ctx().ToString());
  }
  WEFT_CHECK(shape.is_known(), kShape, name, ": the shape ", shape.ToString(), " is not fully known");
  if (stype == StorageType::kCSR)
    WEFT_CHECK(shape.ndim() == 2, kShape, "csr: expected a 2-D shape, got ", shape.ToString());
  else
    WEFT_CHECK(shape.ndim() >= 1, kShape, "row_sparse: expected at least a 1-D shape, got ", shape.ToString());
  return NDArray::FromFaultySparseParts(stype, shape, values, aux, FindFault(stype, shape, values, aux));
}

NDArray MakeSparse(StorageType stype, const Shape& shape, const NDArray& values, const std::vector<NDArray>& aux) {
  NDArray r = MakeSparseUnchecked(stype, shape, values, aux);
  if (r.sparse_fault().level != SparseFault::kNone) RaiseFault(r.sparse_fault());
  return r;
}

void CheckSparseFormat(const NDArray& a, bool full_check) {
  const SparseFault& f = a.sparse_fault();
  if (f.level == SparseFault::kShape || (full_check && f.level == SparseFault::kContent)) RaiseFault(f);
}

NDArray SparseZeros(StorageType stype, const Shape& shape, DType dtype, Context ctx) {
  if (stype == StorageType::kDefault) {
    std::vector<char> zeros(static_cast<size_t>(shape.Size()) * DTypeSize(dtype), 0);
    return FromHost(zeros.data(), shape, dtype, ctx);
  }
  if (stype == StorageType::kCSR) {
    WEFT_CHECK(shape.ndim() == 2, kShape, "csr: expected a 2-D shape, got ", shape.ToString());
    std::vector<int64_t> indptr(static_cast<size_t>(shape[0] + 1), 0);
    return NDArray::FromSparseParts(stype, shape, NDArray(Shape{0}, ctx, dtype),
                                    {Int64Array(indptr, ctx), NDArray(Shape{0}, ctx, DType::kInt64)});
  }
  WEFT_CHECK(stype == StorageType::kRowSparse, kValue, "zeros: expected a storage type, got ", StorageTypeName(stype));
  WEFT_CHECK(shape.ndim() >= 1, kShape, "row_sparse: expected at least a 1-D shape, got ", shape.ToString());
  Shape vs = shape;
  vs[0] = 0;
  return NDArray::FromSparseParts(stype, shape, NDArray(vs, ctx, dtype), {NDArray(Shape{0}, ctx, DType::kInt64)});
}

NDArray CastStorage(const NDArray& src, StorageType to) {
  WEFT_CHECK(!src.is_none(), kValue, "cast_storage: the array is empty (none)");
  WEFT_CHECK(to != StorageType::kUndefined, kValue, "cast_storage: expected a storage type, got undefined");
  StorageType from = src.stype();
  const Shape& shape = src.shape();
  DType dtype = src.dtype();
  Context ctx = src.ctx();
  size_t es = DTypeSize(dtype);
  if (from == to) {
    if (!src.is_sparse()) return src.Copy(ctx);
    std::vector<NDArray> aux;
    for (int i = 0; i < src.num_aux(); ++i) aux.push_back(src.aux(i).Copy(ctx));
    return NDArray::FromSparseParts(from, shape, src.sparse_values().Copy(ctx), std::move(aux));
  }
  if (to == StorageType::kCSR)
    WEFT_CHECK(shape.ndim() == 2, kShape, "cast_storage: csr needs a 2-D array, got shape ", shape.ToString());
  if (to == StorageType::kRowSparse)
    WEFT_CHECK(shape.ndim() >= 1, kShape, "cast_storage: row_sparse needs at least 1 dimension, got a scalar");
  if (from == StorageType::kCSR && to == StorageType::kRowSparse) {
    // The rows holding values, each made dense: no image of the whole matrix.
    std::vector<int64_t> indptr = HostInt64(src.aux(0)), idx = HostInt64(src.aux(1));
    std::vector<char> vals = HostBytes(src.sparse_values());
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < shape[0]; ++r)
      if (indptr[r + 1] > indptr[r]) rows.push_back(r);
    std::vector<char> out(rows.size() * static_cast<size_t>(shape[1]) * es, 0);
    for (size_t k = 0; k < rows.size(); ++k)
      for (int64_t j = indptr[rows[k]]; j < indptr[rows[k] + 1]; ++j)
        std::memcpy(&out[(k * shape[1] + idx[j]) * es], &vals[j * es], es);
    return NDArray::FromSparseParts(StorageType::kRowSparse, shape,
                                    FromHost(out.data(), Shape{static_cast<int64_t>(rows.size()), shape[1]}, dtype, ctx),
                                    {Int64Array(rows, ctx)});
  }
  if (from == StorageType::kRowSparse && to == StorageType::kCSR) {
    // The nonzero elements of the stored rows.
    std::vector<int64_t> rows = HostInt64(src.aux(0));
    std::vector<char> vals = HostBytes(src.sparse_values());
    std::vector<bool> nz = NonZero(vals.data(), src.sparse_values().Size(), dtype);
    std::vector<int64_t> indptr{0}, idx;
    std::vector<char> out;
    size_t k = 0;
    for (int64_t r = 0; r < shape[0]; ++r) {
      if (k < rows.size() && rows[k] == r) {
        for (int64_t c = 0; c < shape[1]; ++c) {
          size_t at = k * shape[1] + c;
          if (!nz[at]) continue;
          idx.push_back(c);
          out.insert(out.end(), &vals[at * es], &vals[at * es] + es);
        }
        ++k;
      }
      indptr.push_back(static_cast<int64_t>(idx.size()));
    }
    return NDArray::FromSparseParts(StorageType::kCSR, shape,
                                    FromHost(out.data(), Shape{static_cast<int64_t>(idx.size())}, dtype, ctx),
                                    {Int64Array(indptr, ctx), Int64Array(idx, ctx)});
  }
  // Dense on one side: the dense image is the input or the result itself.
  std::vector<char> dense;
  if (from == StorageType::kDefault) {
    dense = HostBytes(src);
  } else {
    dense.assign(static_cast<size_t>(shape.Size()) * es, 0);
    std::vector<char> vals = HostBytes(src.sparse_values());
    if (from == StorageType::kCSR) {
      std::vector<int64_t> indptr = HostInt64(src.aux(0)), idx = HostInt64(src.aux(1));
      for (int64_t r = 0; r < shape[0]; ++r)
        for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j)
          std::memcpy(&dense[(r * shape[1] + idx[j]) * es], &vals[j * es], es);
    } else {
      std::vector<int64_t> idx = HostInt64(src.aux(0));
      size_t row_bytes = static_cast<size_t>(shape.ProdRange(1, shape.ndim())) * es;
      for (size_t k = 0; k < idx.size(); ++k)
        std::memcpy(&dense[idx[k] * row_bytes], &vals[k * row_bytes], row_bytes);
    }
  }
  if (to == StorageType::kDefault) return FromHost(dense.data(), shape, dtype, ctx);
  std::vector<bool> nz = NonZero(dense.data(), shape.Size(), dtype);
  if (to == StorageType::kCSR) {
    std::vector<int64_t> indptr{0}, idx;
    std::vector<char> vals;
    for (int64_t r = 0; r < shape[0]; ++r) {
      for (int64_t c = 0; c < shape[1]; ++c) {
        int64_t at = r * shape[1] + c;
        if (!nz[at]) continue;
        idx.push_back(c);
        vals.insert(vals.end(), &dense[at * es], &dense[at * es] + es);
      }
      indptr.push_back(static_cast<int64_t>(idx.size()));
    }
    return NDArray::FromSparseParts(StorageType::kCSR, shape,
                                    FromHost(vals.data(), Shape{static_cast<int64_t>(idx.size())}, dtype, ctx),
                                    {Int64Array(indptr, ctx), Int64Array(idx, ctx)});
  }
  int64_t row = shape.ProdRange(1, shape.ndim());
  std::vector<int64_t> idx;
  std::vector<char> vals;
  for (int64_t r = 0; r < shape[0]; ++r) {
    bool any = false;
    for (int64_t i = 0; i < row && !any; ++i) any = nz[r * row + i];
    if (!any) continue;
    idx.push_back(r);
    vals.insert(vals.end(), &dense[r * row * es], &dense[(r + 1) * row * es]);
  }
  Shape vs = shape;
  vs[0] = static_cast<int64_t>(idx.size());
  return NDArray::FromSparseParts(StorageType::kRowSparse, shape, FromHost(vals.data(), vs, dtype, ctx),
                                  {Int64Array(idx, ctx)});
}

}  // namespace weft

// Sparse kernels (FComputeSparse) for operators registered elsewhere, with MXNet 1.9's output
// storage types, and the `_sparse_*` aliases MXNet gives them (mx.nd.sparse.*). Values are
// computed by the operator's own dense kernel on the stored values (aligned first where two
// sparse operands meet), so every dtype and rounding matches the dense operator; index work
// runs on the host. None of these builds a dense image of a sparse operand.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base/error.h"
#include "core/ndarray/sparse.h"
#include "core/op/elemwise/scalar_param.h"
#include "core/op/linalg/dot.h"
#include "core/op/nn/batch_norm_param.h"
#include "core/op/indexing/take.h"
#include "core/op/nn/embedding.h"
#include "core/op/op_util.h"
#include "core/op/reduce/norm.h"
#include "core/op/reduce/reduce_axes.h"
#include "core/op/sparse/sparse_compute.h"

namespace weft {
namespace op {
namespace {

// The kernels below that do arithmetic on the host serve float32 and float64 (their callers
// check); other dtypes take the dense fallback.
#define WEFT_SPARSE_REAL_SWITCH(dtype, T, ...)                       \
  if ((dtype) == DType::kFloat32) { using T = float; __VA_ARGS__ }   \
  else { using T = double; __VA_ARGS__ }

using sparse::HostInt64;
using sparse::HostRead;
using sparse::HostWrite;

bool IsCsr(const NDArray& a) { return a.stype() == StorageType::kCSR; }
bool IsRsp(const NDArray& a) { return a.stype() == StorageType::kRowSparse; }
bool IsDense(const NDArray& a) { return a.stype() == StorageType::kDefault; }

// Same storage type and parts, new values.
NDArray WithValues(const NDArray& like, NDArray values) {
  std::vector<NDArray> aux;
  for (int i = 0; i < like.num_aux(); ++i) aux.push_back(like.aux(i).Copy(like.ctx()));
  return NDArray::FromSparseParts(like.stype(), like.shape(), std::move(values), std::move(aux));
}

// Copies element (or row) src[from[k]] to dst[k] for every k; from[k] < 0 leaves zeros.
NDArray Gather(const NDArray& src, const std::vector<int64_t>& from, const Shape& shape, int64_t unit_elems) {
  NDArray dst = sparse::DenseZeros(shape, src.dtype(), src.ctx());
  size_t unit = static_cast<size_t>(unit_elems) * DTypeSize(src.dtype());
  const char* s = HostRead(src);
  char* d = HostWrite(dst);
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] >= 0) std::memcpy(d + k * unit, s + from[k] * unit, unit);
  return dst;
}

// ---------------------------------------------------------------- alignment of two operands

// Two sparse operands of one storage type on the union of their stored rows (row_sparse) or
// positions (csr), each operand's values laid out on that union (zeros where it stores none).
struct Aligned {
  std::vector<int64_t> rows;            // row_sparse: the union of rows
  std::vector<int64_t> indptr, idx;     // csr: the union of positions
  NDArray lhs, rhs;
};

Aligned AlignRsp(const NDArray& a, const NDArray& b) {
  std::vector<int64_t> ra = HostInt64(a.aux(0)), rb = HostInt64(b.aux(0));
  Aligned r;
  std::vector<int64_t> fa, fb;
  size_t i = 0, j = 0;
  while (i < ra.size() || j < rb.size()) {
    int64_t row = j >= rb.size() || (i < ra.size() && ra[i] < rb[j]) ? ra[i] : rb[j];
    r.rows.push_back(row);
    fa.push_back(i < ra.size() && ra[i] == row ? static_cast<int64_t>(i++) : -1);
    fb.push_back(j < rb.size() && rb[j] == row ? static_cast<int64_t>(j++) : -1);
  }
  Shape vs = a.sparse_values().shape();
  vs[0] = static_cast<int64_t>(r.rows.size());
  int64_t row_elems = vs.ProdRange(1, vs.ndim());
  r.lhs = Gather(a.sparse_values(), fa, vs, row_elems);
  r.rhs = Gather(b.sparse_values(), fb, vs, row_elems);
  return r;
}

Aligned AlignCsr(const NDArray& a, const NDArray& b) {
  std::vector<int64_t> pa = HostInt64(a.aux(0)), ia = HostInt64(a.aux(1));
  std::vector<int64_t> pb = HostInt64(b.aux(0)), ib = HostInt64(b.aux(1));
  Aligned r;
  std::vector<int64_t> fa, fb;
  r.indptr.push_back(0);
  for (int64_t row = 0; row < a.shape()[0]; ++row) {
    int64_t i = pa[row], j = pb[row];
    while (i < pa[row + 1] || j < pb[row + 1]) {
      int64_t col = j >= pb[row + 1] || (i < pa[row + 1] && ia[i] < ib[j]) ? ia[i] : ib[j];
      r.idx.push_back(col);
      fa.push_back(i < pa[row + 1] && ia[i] == col ? i++ : -1);
      fb.push_back(j < pb[row + 1] && ib[j] == col ? j++ : -1);
    }
    r.indptr.push_back(static_cast<int64_t>(r.idx.size()));
  }
  Shape vs{static_cast<int64_t>(r.idx.size())};
  r.lhs = Gather(a.sparse_values(), fa, vs, 1);
  r.rhs = Gather(b.sparse_values(), fb, vs, 1);
  return r;
}

// The dense array's elements at a csr array's stored positions, as a (nnz,) array.
NDArray DenseAtCsr(const NDArray& dense, const NDArray& csr) {
  std::vector<int64_t> indptr = HostInt64(csr.aux(0)), idx = HostInt64(csr.aux(1));
  std::vector<int64_t> from(idx.size());
  const int64_t cols = csr.shape()[1];
  for (int64_t r = 0; r + 1 < static_cast<int64_t>(indptr.size()); ++r)
    for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) from[j] = r * cols + idx[j];
  return Gather(dense, from, Shape{static_cast<int64_t>(idx.size())}, 1);
}

// The dense array's rows at a row_sparse array's stored rows.
NDArray DenseAtRsp(const NDArray& dense, const NDArray& rsp) {
  return Gather(dense, HostInt64(rsp.aux(0)), rsp.sparse_values().shape(),
                dense.shape().ProdRange(1, dense.shape().ndim()));
}

// Writes sparse values (aligned with `sp`'s positions) into a dense array of its shape.
void ScatterInto(const NDArray& sp, const NDArray& values, const NDArray& dense) {
  size_t es = DTypeSize(dense.dtype());
  const char* s = HostRead(values);
  char* d = HostWrite(dense);
  if (IsCsr(sp)) {
    std::vector<int64_t> indptr = HostInt64(sp.aux(0)), idx = HostInt64(sp.aux(1));
    const int64_t cols = sp.shape()[1];
    for (int64_t r = 0; r + 1 < static_cast<int64_t>(indptr.size()); ++r)
      for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) std::memcpy(d + (r * cols + idx[j]) * es, s + j * es, es);
  } else {
    std::vector<int64_t> rows = HostInt64(sp.aux(0));
    size_t unit = static_cast<size_t>(sp.shape().ProdRange(1, sp.shape().ndim())) * es;
    for (size_t k = 0; k < rows.size(); ++k) std::memcpy(d + rows[k] * unit, s + k * unit, unit);
  }
}

NDArray RunValues(const NodeAttrs& attrs, const std::string& op, const std::vector<NDArray>& ins, bool* ok) {
  std::vector<NDArray> outs;
  *ok = sparse::RunDense(op, attrs.dict, ins, &outs);
  return *ok ? outs[0] : NDArray();
}

// ---------------------------------------------------------------- elementwise binary

// elemwise_add / elemwise_sub: rsp.rsp -> rsp, csr.csr -> csr, dense with sparse -> dense.
// elemwise_mul: rsp.rsp, rsp.dns, dns.rsp -> rsp; csr.csr, csr.dns, dns.csr -> csr.
bool ElemwiseSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                    std::vector<NDArray>* out) {
  const NDArray &a = in[0], &b = in[1];
  if (!sparse::AllOnCpu(in)) return false;
  const std::string& name = attrs.op->name;
  bool ok = false;
  if (a.stype() == b.stype()) {
    Aligned al = IsRsp(a) ? AlignRsp(a, b) : AlignCsr(a, b);
    NDArray v = RunValues(attrs, name, {al.lhs, al.rhs}, &ok);
    if (!ok) return false;
    *out = {IsRsp(a) ? sparse::RowSparse(a.shape(), v, al.rows) : sparse::Csr(a.shape(), v, al.indptr, al.idx)};
    return true;
  }
  bool a_sparse = a.is_sparse();
  const NDArray& sp = a_sparse ? a : b;
  const NDArray& dn = a_sparse ? b : a;
  if (!IsDense(dn)) return false;  // csr with row_sparse: the dense fallback
  NDArray at = IsCsr(sp) ? DenseAtCsr(dn, sp) : DenseAtRsp(dn, sp);
  NDArray v = RunValues(attrs, name, a_sparse ? std::vector<NDArray>{sp.sparse_values(), at}
                                              : std::vector<NDArray>{at, sp.sparse_values()}, &ok);
  if (!ok) return false;
  if (name == "elemwise_mul") {
    *out = {WithValues(sp, v)};
    return true;
  }
  // add / sub: the dense operand (negated when it is subtracted) with the stored positions
  // overwritten by the combined values.
  std::vector<NDArray> base;
  if (!sparse::RunDense(name == "elemwise_sub" && a_sparse ? "negative" : "_copy", {}, {dn}, &base)) return false;
  ScatterInto(sp, v, base[0]);
  *out = {base[0]};
  return true;
}

// _scatter_elemwise_div with a row_sparse lhs: only the lhs's stored rows are computed and
// the result keeps them (row_sparse); the rhs (row_sparse, csr or dense) is read at those
// rows, as zeros where it stores none. Another lhs: elemwise_div's dense result (fallback).
bool ScatterDivSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                      std::vector<NDArray>* out) {
  const NDArray& a = in[0];
  if (!IsRsp(a) || a.dtype() != in[1].dtype() || !sparse::AllOnCpu(in)) return false;
  const NDArray b = IsCsr(in[1]) ? CastStorage(in[1], StorageType::kRowSparse) : in[1];
  NDArray at;
  if (IsDense(b)) {
    at = DenseAtRsp(b, a);
  } else {
    std::vector<int64_t> ra = HostInt64(a.aux(0)), rb = HostInt64(b.aux(0));
    std::vector<int64_t> from(ra.size(), -1);
    for (size_t k = 0; k < ra.size(); ++k) {
      auto it = std::lower_bound(rb.begin(), rb.end(), ra[k]);
      if (it != rb.end() && *it == ra[k]) from[k] = it - rb.begin();
    }
    const Shape& vs = a.sparse_values().shape();
    at = Gather(b.sparse_values(), from, vs, vs.ProdRange(1, vs.ndim()));
  }
  bool ok = false;
  NDArray v = RunValues(attrs, attrs.op->name, {a.sparse_values(), at}, &ok);
  if (!ok) return false;
  *out = {WithValues(a, v)};
  return true;
}

// _maximum, _minimum, _hypot: zero with zero is zero, so two operands of one sparse storage
// type give that type (on the union of their positions); with a dense operand, dense.
bool SameStypeSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                     std::vector<NDArray>* out) {
  if (in[0].stype() != in[1].stype()) return false;
  return ElemwiseSparse(attrs, in, req, out);
}

// add_n of row_sparse arrays only: row_sparse (MXNet's ElementWiseSum rule).
bool AddNSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                std::vector<NDArray>* out) {
  for (const auto& x : in)
    if (!IsRsp(x)) return false;
  if (!sparse::AllOnCpu(in)) return false;
  NDArray acc = in[0];
  const NodeAttrs add = MakeAttrs(Op::Get("elemwise_add"), {});
  for (size_t i = 1; i < in.size(); ++i) {
    std::vector<NDArray> r;
    if (!ElemwiseSparse(add, {acc, in[i]}, {OpReq::kWriteTo}, &r)) return false;
    acc = r[0];
  }
  *out = {in.size() == 1 ? WithValues(acc, acc.sparse_values().Copy(acc.ctx())) : acc};
  return true;
}

// broadcast_mul / broadcast_div of a csr matrix by a dense array broadcast to its shape:
// csr (only the stored positions can be nonzero).
bool BroadcastMulSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                        std::vector<NDArray>* out) {
  const NDArray &a = in[0], &b = in[1];
  if (!IsCsr(a) || !IsDense(b) || !sparse::AllOnCpu(in) || b.shape().ndim() > 2) return false;
  const int64_t rows = a.shape()[0], cols = a.shape()[1];
  Shape bs = b.shape().ndim() == 2 ? b.shape() : Shape{1, b.shape().ndim() == 1 ? b.shape()[0] : 1};
  if ((bs[0] != 1 && bs[0] != rows) || (bs[1] != 1 && bs[1] != cols)) return false;
  std::vector<int64_t> indptr = HostInt64(a.aux(0)), idx = HostInt64(a.aux(1));
  std::vector<int64_t> from(idx.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j)
      from[j] = (bs[0] == 1 ? 0 : r) * bs[1] + (bs[1] == 1 ? 0 : idx[j]);
  NDArray at = Gather(b, from, Shape{static_cast<int64_t>(idx.size())}, 1);
  std::string elem = attrs.op->name == "broadcast_mul" ? "elemwise_mul" : "elemwise_div";
  std::vector<NDArray> r;
  if (!sparse::RunDense(elem, {}, {a.sparse_values(), at}, &r)) return false;
  *out = {WithValues(a, r[0])};
  return true;
}

// ---------------------------------------------------------------- unary and scalar

// f(0) = 0: the operator on the stored values, same storage type.
bool ZeroPreservingUnary(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                         std::vector<NDArray>* out) {
  if (!in[0].is_sparse() || !sparse::AllOnCpu(in)) return false;
  bool ok = false;
  NDArray v = RunValues(attrs, attrs.op->name, {in[0].sparse_values()}, &ok);
  if (!ok || v.dtype() != in[0].dtype()) return false;
  *out = {WithValues(in[0], v)};
  return true;
}

// _mul_scalar, _div_scalar keep the storage type; _plus_scalar and _minus_scalar only with
// a scalar of 0 (MXNet's rule; otherwise every element is nonzero: dense).
bool ScalarSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                  std::vector<NDArray>* out) {
  const std::string& name = attrs.op->name;
  double s = attrs.Params<ScalarParam>().scalar;
  if ((name == "_plus_scalar" || name == "_minus_scalar") && s != 0.0) return false;
  if (name == "_div_scalar" && !(s != 0.0 && std::isfinite(s))) return false;  // 0/0 is not 0
  if (name == "_mul_scalar" && !std::isfinite(s)) return false;
  return ZeroPreservingUnary(attrs, in, req, out);
}

// _scatter_plus_scalar / _scatter_minus_scalar: the scalar meets only the stored values, and
// the storage type is kept (MXNet's rule; the zeros not stored stay zeros).
bool ScatterScalarSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                         std::vector<NDArray>* out) {
  return ZeroPreservingUnary(attrs, in, req, out);
}

// _contrib_quadratic a x^2 + b x + c of a csr matrix with c = 0: csr (MXNet's rule; only csr).
bool QuadraticSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                     std::vector<NDArray>* out) {
  if (!IsCsr(in[0])) return false;
  for (const auto& [k, v] : attrs.dict)
    if (k == "c" && std::strtod(v.c_str(), nullptr) != 0.0) return false;
  return ZeroPreservingUnary(attrs, in, req, out);
}

// clip keeps zeros when 0 lies in [a_min, a_max].
bool ClipSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                std::vector<NDArray>* out) {
  double lo = -INFINITY, hi = INFINITY;
  for (const auto& [k, v] : attrs.dict) {
    if (k == "a_min") lo = std::strtod(v.c_str(), nullptr);
    if (k == "a_max") hi = std::strtod(v.c_str(), nullptr);
  }
  if (!(lo <= 0.0 && 0.0 <= hi)) return false;
  return ZeroPreservingUnary(attrs, in, req, out);
}

// zeros_like keeps the storage type (nothing stored).
bool ZerosLikeSparse(const NodeAttrs&, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                     std::vector<NDArray>* out) {
  if (!in[0].is_sparse()) return false;
  *out = {SparseZeros(in[0].stype(), in[0].shape(), in[0].dtype(), in[0].ctx())};
  return true;
}

// ---------------------------------------------------------------- sum / mean of a sparse matrix

bool ReduceSparse2D(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
               std::vector<NDArray>* out) {
  const NDArray& a = in[0];
  if (!a.is_sparse() || a.shape().ndim() != 2 || !sparse::AllOnCpu(in) ||
      (a.dtype() != DType::kFloat32 && a.dtype() != DType::kFloat64))
    return false;
  const auto& p = attrs.Params<ReduceAxesParam>();
  std::vector<bool> flags = ReduceFlags(attrs, a.shape());
  if (!flags[0] && !flags[1]) return false;  // nothing reduced: the dense fallback copies
  // axis 0: one sum per column; 1: per row; -1: both axes, one sum.
  const int axis = flags[0] && flags[1] ? -1 : flags[0] ? 0 : 1;
  const int64_t rows = a.shape()[0], cols = a.shape()[1];
  bool mean = attrs.op->name == "mean";
  // The stored elements as (row, column, position) in csr form; a row_sparse matrix's
  // stored rows are full rows.
  std::vector<int64_t> indptr, idx;
  if (IsCsr(a)) {
    indptr = HostInt64(a.aux(0));
    idx = HostInt64(a.aux(1));
  } else {
    std::vector<int64_t> stored = HostInt64(a.aux(0));
    indptr.assign(static_cast<size_t>(rows + 1), 0);
    for (int64_t r : stored) indptr[r + 1] = cols;
    for (int64_t r = 0; r < rows; ++r) indptr[r + 1] += indptr[r];
    idx.reserve(stored.size() * static_cast<size_t>(cols));
    for (size_t k = 0; k < stored.size(); ++k)
      for (int64_t c = 0; c < cols; ++c) idx.push_back(c);
  }
  std::vector<double> acc(static_cast<size_t>(axis == 0 ? cols : axis == 1 ? rows : 1), 0.0);
  NDArray result(ReducedShape(a.shape(), flags, p.keepdims), a.ctx(), a.dtype());
  WEFT_SPARSE_REAL_SWITCH(a.dtype(), T, {
    const T* v = reinterpret_cast<const T*>(HostRead(a.sparse_values()));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j)
        acc[axis == 0 ? idx[j] : axis == 1 ? r : 0] += static_cast<double>(v[j]);
    T* y = reinterpret_cast<T*>(HostWrite(result));
    double n = axis == 0 ? static_cast<double>(rows) : axis == 1 ? static_cast<double>(cols)
                                                       : static_cast<double>(rows) * static_cast<double>(cols);
    for (size_t i = 0; i < acc.size(); ++i) y[i] = static_cast<T>(mean ? acc[i] / n : acc[i]);
  });
  *out = {result};
  return true;
}

// norm over every element (axis None) of a sparse array: the norm of its stored values.
bool NormSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                std::vector<NDArray>* out) {
  const NDArray& a = in[0];
  if (!a.is_sparse() || !sparse::AllOnCpu(in)) return false;
  const auto& p = attrs.Params<NormParam>();
  if (p.axis && p.axis->ndim() > 0) return false;
  bool ok = false;
  NDArray r = RunValues(attrs, "norm", {a.sparse_values().Reshape(Shape{a.sparse_values().Size()})}, &ok);
  if (!ok) return false;
  if (p.keepdims) r = r.Reshape(Shape(std::vector<int64_t>(static_cast<size_t>(a.shape().ndim()), 1)));
  *out = {r};
  return true;
}

// ---------------------------------------------------------------- slice of csr

bool SliceCsr(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
              std::vector<NDArray>* out) {
  const NDArray& a = in[0];
  if (!IsCsr(a) || !sparse::AllOnCpu(in)) return false;
  std::string begin_s, end_s, step_s;
  for (const auto& [k, v] : attrs.dict) {
    if (k == "begin") begin_s = v;
    if (k == "end") end_s = v;
    if (k == "step") step_s = v;
  }
  auto begin = sparse::ParseIntTuple(begin_s, "slice: begin");
  auto end = sparse::ParseIntTuple(end_s, "slice: end");
  for (const auto& s : sparse::ParseIntTuple(step_s, "slice: step"))
    if (s && *s != 1) return false;  // strided: the dense fallback
  int64_t lo[2], hi[2];
  for (int d = 0; d < 2; ++d) {
    int64_t n = a.shape()[d];
    int64_t b = d < static_cast<int>(begin.size()) && begin[d] ? *begin[d] : 0;
    int64_t e = d < static_cast<int>(end.size()) && end[d] ? *end[d] : n;
    if (b < 0) b += n;
    if (e < 0) e += n;
    lo[d] = std::clamp<int64_t>(b, 0, n);
    hi[d] = std::clamp<int64_t>(e, lo[d], n);
  }
  std::vector<int64_t> indptr = HostInt64(a.aux(0)), idx = HostInt64(a.aux(1));
  std::vector<int64_t> new_ptr{0}, new_idx, from;
  for (int64_t r = lo[0]; r < hi[0]; ++r) {
    auto b = std::lower_bound(idx.begin() + indptr[r], idx.begin() + indptr[r + 1], lo[1]);
    auto e = std::lower_bound(b, idx.begin() + indptr[r + 1], hi[1]);
    for (auto it = b; it != e; ++it) {
      new_idx.push_back(*it - lo[1]);
      from.push_back(it - idx.begin());
    }
    new_ptr.push_back(static_cast<int64_t>(new_idx.size()));
  }
  NDArray vals = Gather(a.sparse_values(), from, Shape{static_cast<int64_t>(from.size())}, 1);
  *out = {sparse::Csr(Shape{hi[0] - lo[0], hi[1] - lo[1]}, vals, new_ptr, new_idx)};
  return true;
}

// ---------------------------------------------------------------- dot

// A read-only view of a 2-D dense or row_sparse right-hand side: row r's pointer, or null
// for a row a row_sparse array does not store.
template <typename T>
struct RowSource {
  const T* base = nullptr;
  std::vector<int64_t> rows;  // row_sparse only
  int64_t width = 0;
  bool rsp = false;
  const T* Row(int64_t r) const {
    if (!rsp) return base + r * width;
    auto it = std::lower_bound(rows.begin(), rows.end(), r);
    return it != rows.end() && *it == r ? base + (it - rows.begin()) * width : nullptr;
  }
};

template <typename T>
RowSource<T> RowsOf(const NDArray& x) {
  RowSource<T> s;
  s.rsp = IsRsp(x);
  s.base = reinterpret_cast<const T*>(HostRead(s.rsp ? x.sparse_values() : x));
  if (s.rsp) s.rows = HostInt64(x.aux(0));
  s.width = x.shape().ndim() == 1 ? 1 : x.shape()[1];
  return s;
}

// dot with a csr operand, computed on the stored values. Returns none for a combination
// the dense fallback serves (GPU arrays, other dtypes, transpose_b with a csr lhs).
NDArray SparseDot(const NDArray& lhs, const NDArray& rhs, bool ta, bool tb, const std::string& forward_stype) {
  if (lhs.dtype() != rhs.dtype() || (lhs.dtype() != DType::kFloat32 && lhs.dtype() != DType::kFloat64))
    return NDArray();
  if (lhs.ctx().is_gpu() || rhs.ctx().is_gpu() || lhs.shape().ndim() != 2 || rhs.shape().ndim() > 2)
    return NDArray();
  NDArray result;
  WEFT_SPARSE_REAL_SWITCH(lhs.dtype(), T, {
    if (IsCsr(lhs) && IsDense(rhs) && tb && !ta && rhs.shape().ndim() == 2) {
      // csr (m, k) . dense (n, k)^T -> dense (m, n): each stored value meets a column of B^T.
      std::vector<int64_t> indptr = HostInt64(lhs.aux(0)), idx = HostInt64(lhs.aux(1));
      const T* v = reinterpret_cast<const T*>(HostRead(lhs.sparse_values()));
      const T* b = reinterpret_cast<const T*>(HostRead(rhs));
      const int64_t m = lhs.shape()[0], k = lhs.shape()[1], n = rhs.shape()[0];
      result = sparse::DenseZeros(Shape{m, n}, lhs.dtype(), lhs.ctx());
      T* y = reinterpret_cast<T*>(HostWrite(result));
      ParallelFor(m, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = 0; c < n; ++c) {
            T acc = T(0);
            for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) acc += v[j] * b[c * k + idx[j]];
            y[r * n + c] = acc;
          }
      });
    } else if (IsCsr(lhs) && !IsCsr(rhs) && !tb) {
      std::vector<int64_t> indptr = HostInt64(lhs.aux(0)), idx = HostInt64(lhs.aux(1));
      const T* v = reinterpret_cast<const T*>(HostRead(lhs.sparse_values()));
      RowSource<T> b = RowsOf<T>(rhs);
      const int64_t n = b.width, m = lhs.shape()[0];
      Shape tail = rhs.shape().ndim() == 1 ? Shape() : Shape{n};
      if (!ta) {
        // csr (m, k) . (k, n) -> dense (m, n)
        std::vector<int64_t> dims{m};
        if (rhs.shape().ndim() == 2) dims.push_back(n);
        result = sparse::DenseZeros(Shape(dims), lhs.dtype(), lhs.ctx());
        T* y = reinterpret_cast<T*>(HostWrite(result));
        ParallelFor(m, 64, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) {
              const T* br = b.Row(idx[j]);
              if (br == nullptr) continue;
              for (int64_t c = 0; c < n; ++c) y[r * n + c] += v[j] * br[c];
            }
        });
      } else {
        // csr^T (k, m) . (m, n): row_sparse over the columns the csr uses (or dense).
        const int64_t k = lhs.shape()[1];
        std::vector<int64_t> used(idx);
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
        const int64_t u = static_cast<int64_t>(used.size());
        NDArray vals = sparse::DenseZeros(Shape{u, n}, lhs.dtype(), lhs.ctx());
        T* y = reinterpret_cast<T*>(HostWrite(vals));
        for (int64_t r = 0; r < m; ++r) {
          const T* br = b.Row(r);
          if (br == nullptr) continue;
          for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) {
            int64_t at = std::lower_bound(used.begin(), used.end(), idx[j]) - used.begin();
            for (int64_t c = 0; c < n; ++c) y[at * n + c] += v[j] * br[c];
          }
        }
        Shape out_shape{k, n};
        if (rhs.shape().ndim() == 1) return NDArray();  // a vector result: the fallback
        result = sparse::RowSparse(out_shape, vals, used);
        if (forward_stype == "default") result = CastStorage(result, StorageType::kDefault);
      }
    } else if (IsDense(lhs) && IsCsr(rhs) && !ta) {
      const int64_t m = lhs.shape()[0], k = lhs.shape()[1];
      std::vector<int64_t> indptr = HostInt64(rhs.aux(0)), idx = HostInt64(rhs.aux(1));
      const T* v = reinterpret_cast<const T*>(HostRead(rhs.sparse_values()));
      const T* a = reinterpret_cast<const T*>(HostRead(lhs));
      if (!tb) {
        // dense (m, k) . csr (k, n) -> csr over the columns the csr uses (MXNet's CPU rule).
        std::vector<int64_t> used(idx);
        std::sort(used.begin(), used.end());
        used.erase(std::unique(used.begin(), used.end()), used.end());
        const int64_t u = static_cast<int64_t>(used.size()), n = rhs.shape()[1];
        std::vector<int64_t> pos(idx.size());
        for (size_t j = 0; j < idx.size(); ++j) pos[j] = std::lower_bound(used.begin(), used.end(), idx[j]) - used.begin();
        NDArray vals = sparse::DenseZeros(Shape{m * u}, lhs.dtype(), lhs.ctx());
        T* y = reinterpret_cast<T*>(HostWrite(vals));
        ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t q = 0; q < k; ++q) {
              T s = a[r * k + q];
              if (s == T(0)) continue;
              for (int64_t j = indptr[q]; j < indptr[q + 1]; ++j) y[r * u + pos[j]] += s * v[j];
            }
        });
        std::vector<int64_t> out_ptr(static_cast<size_t>(m + 1)), out_idx;
        for (int64_t r = 0; r <= m; ++r) out_ptr[r] = r * u;
        out_idx.reserve(static_cast<size_t>(m * u));
        for (int64_t r = 0; r < m; ++r) out_idx.insert(out_idx.end(), used.begin(), used.end());
        result = sparse::Csr(Shape{m, n}, vals, out_ptr, out_idx);
        if (forward_stype == "default") result = CastStorage(result, StorageType::kDefault);
      } else {
        // dense (m, k) . csr (n, k)^T -> (m, n), dense unless csr is asked for.
        const int64_t n = rhs.shape()[0];
        result = sparse::DenseZeros(Shape{m, n}, lhs.dtype(), lhs.ctx());
        T* y = reinterpret_cast<T*>(HostWrite(result));
        ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = 0; c < n; ++c) {
              T s = T(0);
              for (int64_t j = indptr[c]; j < indptr[c + 1]; ++j) s += a[r * k + idx[j]] * v[j];
              y[r * n + c] = s;
            }
        });
        if (forward_stype == "csr") result = CastStorage(result, StorageType::kCSR);
      }
    }
  });
  return result;
}

bool DotSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
               std::vector<NDArray>* out) {
  const auto& p = attrs.Params<DotParam>();
  NDArray r = SparseDot(in[0], in[1], p.transpose_a, p.transpose_b, p.forward_stype);
  const bool asked = p.forward_stype != "None";
  if (r.is_none()) {
    // No kernel for this combination: the dense fallback, unless a sparse result is asked
    // for (MXNet's forward_stype), which is the dense product cast to it.
    if (!asked || p.forward_stype == "default" || !sparse::AllOnCpu(in)) return false;
    std::vector<NDArray> o;
    if (!sparse::RunDense("dot", attrs.dict, {DenseOf(in[0]), DenseOf(in[1])}, &o)) return false;
    r = o[0];
  }
  if (asked && r.stype() != ParseStorageType(p.forward_stype)) r = CastStorage(r, ParseStorageType(p.forward_stype));
  *out = {r};
  return true;
}

// dot(a, b) with op(a) = a or a^T: dA and dB through dot again (the csr operand's own
// gradient only when asked for, and dense, as MXNet's).
bool DotBackwardSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>& req,
                       std::vector<NDArray>* out) {
  const auto& p = attrs.Params<DotParam>();
  const NDArray &og = in[0], &a = in[1], &b = in[2];
  if (p.transpose_b || og.is_sparse() || a.shape().ndim() != 2 || b.shape().ndim() != 2) return false;
  auto dot = [&](const NDArray& x, const NDArray& y, bool tx, bool ty, NDArray* r) {
    if (x.is_sparse() || y.is_sparse()) {
      *r = SparseDot(x, y, tx, ty, "");
      return !r->is_none();
    }
    std::vector<NDArray> o;
    KwArgs kw{{"transpose_a", tx ? "1" : "0"}, {"transpose_b", ty ? "1" : "0"}};
    if (!sparse::RunDense("dot", kw, {x, y}, &o)) return false;
    *r = o[0];
    return true;
  };
  // ta = false: dA = og . B^T, dB = A^T . og;  ta = true: dA = B . og^T, dB = A . og.
  NDArray da, db;
  if (req[0] != OpReq::kNullOp &&
      !(p.transpose_a ? dot(b, og, false, true, &da) : dot(og, b, false, true, &da)))
    return false;
  if (req[1] != OpReq::kNullOp && !dot(a, og, !p.transpose_a, false, &db)) return false;
  *out = {da, db};
  return true;
}

// ---------------------------------------------------------------- take of csr rows

// take(csr, indices) along axis 0 with mode clip or wrap: the rows picked, as csr (MXNet's
// rule); other axes, 'raise', sparse or multi-dimensional indices: the dense fallback.
bool TakeCsr(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
             std::vector<NDArray>* out) {
  const NDArray &a = in[0], &ind = in[1];
  const auto& p = attrs.Params<TakeParam>();
  if (!IsCsr(a) || !IsDense(ind) || ind.shape().ndim() != 1 || p.axis != 0 || p.mode == "raise" ||
      !sparse::AllOnCpu(in))
    return false;
  const int64_t m = a.shape()[0], k = ind.shape()[0];
  if (m == 0) return false;  // nothing to pick from: the dense kernel reports it
  std::vector<int64_t> indptr = HostInt64(a.aux(0)), idx = HostInt64(a.aux(1));
  const char* raw = HostRead(ind);
  std::vector<int64_t> out_ptr{0}, out_idx, from;
  for (int64_t i = 0; i < k; ++i) {
    double v = 0;
    WEFT_TYPE_SWITCH(ind.dtype(), T, { v = static_cast<double>(reinterpret_cast<const T*>(raw)[i]); });
    if (std::isnan(v)) v = 0;
    // Indices are truncated toward zero, as the dense kernel reads them.
    const double t = std::trunc(std::max(std::min(v, 9.0e18), -9.0e18));
    int64_t r = static_cast<int64_t>(t);
    r = p.mode == "clip" ? std::min(std::max(r, int64_t{0}), m - 1) : ((r % m) + m) % m;
    for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) {
      out_idx.push_back(idx[j]);
      from.push_back(j);
    }
    out_ptr.push_back(static_cast<int64_t>(out_idx.size()));
  }
  NDArray vals = Gather(a.sparse_values(), from, Shape{static_cast<int64_t>(from.size())}, 1);
  *out = {sparse::Csr(Shape{k, a.shape()[1]}, vals, out_ptr, out_idx)};
  return true;
}

// ---------------------------------------------------------------- BatchNorm

// BatchNorm has no sparse kernel: sparse inputs take the dense fallback, except with
// fix_gamma, which MXNet refuses for sparse inputs (its storage inference fails), so code
// written for MXNet gets the same error here.
bool BatchNormSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                     std::vector<NDArray>*) {
  if (attrs.Params<BatchNormParam>().fix_gamma) {
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].is_sparse())
        Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "': fix_gamma=True is not supported with sparse ",
              "inputs, as in MXNet (input ", i, " is ", StorageTypeName(in[i].stype()),
              "); use fix_gamma=False or dense arrays");
  }
  return false;
}

// ---------------------------------------------------------------- Embedding with a row_sparse weight

bool EmbeddingSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                     std::vector<NDArray>* out) {
  const NDArray &data = in[0], &weight = in[1];
  if (data.is_sparse() || !IsRsp(weight) || !sparse::AllOnCpu(in)) return false;
  const auto& p = attrs.Params<EmbeddingParam>();
  std::vector<int64_t> rows = HostInt64(weight.aux(0));
  std::vector<int64_t> dims(data.shape().begin(), data.shape().end());
  dims.push_back(p.output_dim);
  NDArray result = sparse::DenseZeros(Shape(dims), weight.dtype(), weight.ctx());
  size_t row_bytes = static_cast<size_t>(p.output_dim) * DTypeSize(weight.dtype());
  const char* w = HostRead(weight.sparse_values());
  char* y = HostWrite(result);
  NDArray d = data;
  d.WaitToRead();
  TBlob db = d.data();
  WEFT_TYPE_SWITCH(db.dtype, I, {
    const I* ix = db.ptr<I>();
    for (int64_t i = 0; i < db.Size(); ++i) {
      // MXNet's lookup clips indices into range (NaN reads row 0).
      double f = static_cast<double>(ix[i]);
      int64_t r = std::isnan(f) ? 0 : static_cast<int64_t>(std::clamp(f, 0.0, static_cast<double>(p.input_dim - 1)));
      auto it = std::lower_bound(rows.begin(), rows.end(), r);
      if (it != rows.end() && *it == r) std::memcpy(y + i * row_bytes, w + (it - rows.begin()) * row_bytes, row_bytes);
    }
  });
  *out = {result};
  return true;
}

}  // namespace

// The `_sparse_` names MXNet gives its sparse-capable operators (mx.nd.sparse.*), for the
// operators Weft registers.
WEFT_REGISTER_OP(elemwise_add).AddAlias("_sparse_elemwise_add").SetAttr<FComputeSparse>("FComputeSparse", ElemwiseSparse);
WEFT_REGISTER_OP(elemwise_sub).AddAlias("_sparse_elemwise_sub").SetAttr<FComputeSparse>("FComputeSparse", ElemwiseSparse);
WEFT_REGISTER_OP(elemwise_mul).AddAlias("_sparse_elemwise_mul").SetAttr<FComputeSparse>("FComputeSparse", ElemwiseSparse);
WEFT_REGISTER_OP(elemwise_div).AddAlias("_sparse_elemwise_div");
WEFT_REGISTER_OP(add_n).AddAlias("_sparse_add_n").AddAlias("_sparse_ElementWiseSum")
    .SetAttr<FComputeSparse>("FComputeSparse", AddNSparse);
WEFT_REGISTER_OP(broadcast_mul).AddAlias("_sparse_broadcast_mul").SetAttr<FComputeSparse>("FComputeSparse", BroadcastMulSparse);
WEFT_REGISTER_OP(broadcast_div).AddAlias("_sparse_broadcast_div").SetAttr<FComputeSparse>("FComputeSparse", BroadcastMulSparse);
WEFT_REGISTER_OP(broadcast_add).AddAlias("_sparse_broadcast_add").AddAlias("_sparse_broadcast_plus");
WEFT_REGISTER_OP(broadcast_sub).AddAlias("_sparse_broadcast_sub").AddAlias("_sparse_broadcast_minus");
WEFT_REGISTER_OP(_maximum).SetAttr<FComputeSparse>("FComputeSparse", SameStypeSparse);
WEFT_REGISTER_OP(_minimum).SetAttr<FComputeSparse>("FComputeSparse", SameStypeSparse);
WEFT_REGISTER_OP(_hypot).SetAttr<FComputeSparse>("FComputeSparse", SameStypeSparse);
WEFT_REGISTER_OP(take).SetAttr<FComputeSparse>("FComputeSparse", TakeCsr);
WEFT_REGISTER_OP(BatchNorm).SetAttr<FComputeSparse>("FComputeSparse", BatchNormSparse);
WEFT_REGISTER_OP(_scatter_elemwise_div).SetAttr<FComputeSparse>("FComputeSparse", ScatterDivSparse);
WEFT_REGISTER_OP(_scatter_plus_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScatterScalarSparse);
WEFT_REGISTER_OP(_scatter_minus_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScatterScalarSparse);
WEFT_REGISTER_OP(_contrib_quadratic)
    .SetAttr<FComputeSparse>("FComputeSparse", QuadraticSparse);
WEFT_REGISTER_OP(_mul_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScalarSparse);
WEFT_REGISTER_OP(_div_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScalarSparse);
WEFT_REGISTER_OP(_plus_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScalarSparse);
WEFT_REGISTER_OP(_minus_scalar).SetAttr<FComputeSparse>("FComputeSparse", ScalarSparse);
WEFT_REGISTER_OP(clip).AddAlias("_sparse_clip").SetAttr<FComputeSparse>("FComputeSparse", ClipSparse);
WEFT_REGISTER_OP(zeros_like).AddAlias("_sparse_zeros_like").SetAttr<FComputeSparse>("FComputeSparse", ZerosLikeSparse);
WEFT_REGISTER_OP(sum).AddAlias("_sparse_sum").SetAttr<FComputeSparse>("FComputeSparse", ReduceSparse2D);
WEFT_REGISTER_OP(mean).AddAlias("_sparse_mean").SetAttr<FComputeSparse>("FComputeSparse", ReduceSparse2D);
WEFT_REGISTER_OP(slice).AddAlias("_sparse_slice").SetAttr<FComputeSparse>("FComputeSparse", SliceCsr);
WEFT_REGISTER_OP(dot).AddAlias("_sparse_dot").SetAttr<FComputeSparse>("FComputeSparse", DotSparse);
WEFT_REGISTER_OP(_backward_dot).SetAttr<FComputeSparse>("FComputeSparse", DotBackwardSparse);
WEFT_REGISTER_OP(norm).AddAlias("_sparse_norm").SetAttr<FComputeSparse>("FComputeSparse", NormSparse);
WEFT_REGISTER_OP(Embedding).AddAlias("_sparse_Embedding").SetAttr<FComputeSparse>("FComputeSparse", EmbeddingSparse);

#define WEFT_SPARSE_UNARY(name) \
  WEFT_REGISTER_OP(name).AddAlias("_sparse_" #name).SetAttr<FComputeSparse>("FComputeSparse", ZeroPreservingUnary)
WEFT_SPARSE_UNARY(abs);
WEFT_SPARSE_UNARY(arcsin);
WEFT_SPARSE_UNARY(arcsinh);
WEFT_SPARSE_UNARY(arctan);
WEFT_SPARSE_UNARY(arctanh);
WEFT_SPARSE_UNARY(cbrt);
WEFT_SPARSE_UNARY(ceil);
WEFT_SPARSE_UNARY(degrees);
WEFT_SPARSE_UNARY(expm1);
WEFT_SPARSE_UNARY(fix);
WEFT_SPARSE_UNARY(floor);
WEFT_SPARSE_UNARY(log1p);
WEFT_SPARSE_UNARY(negative);
WEFT_SPARSE_UNARY(radians);
WEFT_SPARSE_UNARY(relu);
WEFT_SPARSE_UNARY(rint);
WEFT_SPARSE_UNARY(round);
WEFT_SPARSE_UNARY(sign);
WEFT_SPARSE_UNARY(sin);
WEFT_SPARSE_UNARY(sinh);
WEFT_SPARSE_UNARY(sqrt);
WEFT_SPARSE_UNARY(square);
WEFT_SPARSE_UNARY(tan);
WEFT_SPARSE_UNARY(tanh);
WEFT_SPARSE_UNARY(trunc);
// The straight-through estimators: round and sign forward (zero-preserving), identity gradient.
WEFT_SPARSE_UNARY(_contrib_round_ste);
WEFT_SPARSE_UNARY(_contrib_sign_ste);
#undef WEFT_SPARSE_UNARY

// Dense results (f(0) != 0, or an operator without a sparse kernel): the name only.
#define WEFT_SPARSE_ALIAS(name) WEFT_REGISTER_OP(name).AddAlias("_sparse_" #name)
WEFT_SPARSE_ALIAS(arccos);
WEFT_SPARSE_ALIAS(arccosh);
WEFT_SPARSE_ALIAS(cos);
WEFT_SPARSE_ALIAS(cosh);
WEFT_SPARSE_ALIAS(exp);
WEFT_SPARSE_ALIAS(gamma);
WEFT_SPARSE_ALIAS(gammaln);
WEFT_SPARSE_ALIAS(log);
WEFT_SPARSE_ALIAS(log10);
WEFT_SPARSE_ALIAS(log2);
WEFT_SPARSE_ALIAS(rsqrt);
WEFT_SPARSE_ALIAS(sigmoid);
WEFT_SPARSE_ALIAS(concat);
WEFT_SPARSE_ALIAS(where);
WEFT_SPARSE_ALIAS(stop_gradient);
WEFT_SPARSE_ALIAS(make_loss);
WEFT_SPARSE_ALIAS(FullyConnected);
WEFT_SPARSE_ALIAS(sgd_update);
WEFT_SPARSE_ALIAS(sgd_mom_update);
WEFT_SPARSE_ALIAS(adam_update);
WEFT_SPARSE_ALIAS(ftrl_update);
// The regression outputs with csr labels (dense output; the label is densified).
WEFT_SPARSE_ALIAS(LinearRegressionOutput);
WEFT_SPARSE_ALIAS(LogisticRegressionOutput);
WEFT_SPARSE_ALIAS(MAERegressionOutput);
#undef WEFT_SPARSE_ALIAS

}  // namespace op
}  // namespace weft

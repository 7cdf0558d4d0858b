// The operators MXNet defines for sparse storage: cast_storage, _sparse_retain, _square_sum,
// _contrib_getnnz and _contrib_edge_id. Each has a dense kernel (the executor's graphs and
// GPU arrays use it; it gives what the sparse kernel gives, densely) and a sparse kernel on
// the stored parts (FComputeSparse), which the imperative path runs for sparse inputs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base/error.h"
#include "core/ndarray/sparse.h"
#include "core/op/op_util.h"
#include "core/op/reduce/reduce_axes.h"
#include "core/op/sparse/sparse_compute.h"

namespace weft {
namespace op {

struct CastStorageParam {
  std::string stype;
};

WEFT_PARAM_SCHEMA(CastStorageParam, s) {
  s.Field("stype", &CastStorageParam::stype)
      .Choices({"default", "row_sparse", "csr"})
      .Describe("Output storage type.");
}

struct GetnnzParam {
  std::optional<int> axis;
};

WEFT_PARAM_SCHEMA(GetnnzParam, s) {
  s.Field("axis", &GetnnzParam::axis)
      .Default(std::nullopt)
      .Describe("Select between the number of values across the whole matrix (None), in each column (0), or in "
                "each row (1).");
}

namespace {

// ---------------------------------------------------------------- shared checks

void Need2D(const NodeAttrs& attrs, const Shape& s, const char* what) {
  if (s.known_ndim() && s.ndim() != 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a 2-D ", what, ", got shape ", s.ToString());
}

// Reads element i of an index array of any dtype as an integer; NaN and fractions are
// refused, as an index must name a row.
int64_t IndexAt(const TBlob& b, int64_t i, const NodeAttrs& attrs, const char* what) {
  double v = 0;
  WEFT_TYPE_SWITCH(b.dtype, T, { v = static_cast<double>(b.ptr<T>()[i]); });
  if (!(v == std::floor(v)) || std::isinf(v))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ", what, " ", v, " at position ", i,
          " is not an integer");
  return static_cast<int64_t>(v);
}

void CheckIndex(const NodeAttrs& attrs, int64_t v, int64_t limit, const char* what, int64_t at) {
  if (v < 0 || v >= limit)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': ", what, " ", v, " at position ", at,
          " is out of range [0, ", limit, ")");
}

// Reads an index array of any dtype (a dense CPU array) as int64 values.
std::vector<int64_t> IndicesOf(const NDArray& a, const NodeAttrs& attrs, const char* what) {
  NDArray d = DenseOf(a);
  d.WaitToRead();
  TBlob b = d.data();
  std::vector<int64_t> r(static_cast<size_t>(b.Size()));
  for (int64_t i = 0; i < b.Size(); ++i) r[i] = IndexAt(b, i, attrs, what);
  return r;
}

// ---------------------------------------------------------------- cast_storage

bool CastStorageSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                       std::vector<NDArray>* out) {
  StorageType to = ParseStorageType(attrs.Params<CastStorageParam>().stype);
  if (!in[0].is_sparse() && to == StorageType::kDefault) return false;  // a plain copy: the dense kernel
  if (!sparse::AllOnCpu(in)) return false;
  *out = {CastStorage(in[0], to)};
  return true;
}

bool CastStorageShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const std::string& st = attrs.Params<CastStorageParam>().stype;
  if (st == "csr") Need2D(attrs, (*in)[0], "input for stype 'csr'");
  if (st == "row_sparse" && (*in)[0].known_ndim() && (*in)[0].ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': stype 'row_sparse' needs at least a 1-D input");
  return SameShape(attrs, in, out);
}

// ---------------------------------------------------------------- _sparse_retain

bool RetainShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if ((*in)[0].known_ndim() && (*in)[0].ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data of at least 1 dimension, got a scalar");
  if ((*in)[1].known_ndim() && (*in)[1].ndim() != 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected 1-D indices, got shape ",
          (*in)[1].ToString());
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  return (*in)[0].is_known() && (*in)[1].is_known();
}

bool RetainType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*in)[0] != DType::kUnknown && (*in)[1] != DType::kUnknown;
}

// Which rows [0, rows) the indices keep (each index bounds-checked).
std::vector<bool> KeptRows(const NodeAttrs& attrs, const std::vector<int64_t>& idx, int64_t rows) {
  std::vector<bool> keep(static_cast<size_t>(rows), false);
  for (size_t i = 0; i < idx.size(); ++i) {
    CheckIndex(attrs, idx[i], rows, "index", static_cast<int64_t>(i));
    keep[idx[i]] = true;
  }
  return keep;
}

void RetainCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const int64_t rows = in[0].shape[0];
  std::vector<int64_t> idx(static_cast<size_t>(in[1].Size()));
  for (int64_t i = 0; i < in[1].Size(); ++i) idx[i] = IndexAt(in[1], i, attrs, "index");
  std::vector<bool> keep = KeptRows(attrs, idx, rows);
  const int64_t row = rows == 0 ? 0 : in[0].Size() / rows;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < row; ++j) Store(y + r * row + j, req[0], keep[r] ? x[r * row + j] : T(0));
  });
}

bool RetainSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                  std::vector<NDArray>* out) {
  if (in[0].stype() != StorageType::kRowSparse || in[1].is_sparse() || !sparse::AllOnCpu(in)) return false;
  const NDArray& data = in[0];
  std::vector<int64_t> idx = IndicesOf(in[1], attrs, "index");
  for (size_t i = 0; i < idx.size(); ++i) CheckIndex(attrs, idx[i], data.shape()[0], "index", static_cast<int64_t>(i));
  std::sort(idx.begin(), idx.end());
  std::vector<int64_t> stored = sparse::HostInt64(data.aux(0));
  std::vector<int64_t> rows, from;
  for (size_t k = 0; k < stored.size(); ++k)
    if (std::binary_search(idx.begin(), idx.end(), stored[k])) {
      rows.push_back(stored[k]);
      from.push_back(static_cast<int64_t>(k));
    }
  const NDArray& vals = data.sparse_values();
  Shape vs = vals.shape();
  vs[0] = static_cast<int64_t>(rows.size());
  NDArray kept(vs, data.ctx(), data.dtype());
  size_t row_bytes = static_cast<size_t>(vs.ProdRange(1, vs.ndim())) * DTypeSize(data.dtype());
  const char* src = sparse::HostRead(vals);
  char* dst = sparse::HostWrite(kept);
  for (size_t k = 0; k < from.size(); ++k) std::memcpy(dst + k * row_bytes, src + from[k] * row_bytes, row_bytes);
  *out = {sparse::RowSparse(data.shape(), kept, rows)};
  return true;
}

// ---------------------------------------------------------------- _square_sum

// The one reduced axis of a 2-D _square_sum (0 or 1).
int SquareSumAxis(const NodeAttrs& attrs, const Shape& in) {
  std::vector<bool> flags = ReduceFlags(attrs, in);
  int count = 0, axis = 0;
  for (int d = 0; d < static_cast<int>(flags.size()); ++d)
    if (flags[d]) {
      ++count;
      axis = d;
    }
  if (count != 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected exactly one axis (0 or 1) to reduce, got ",
          count);
  return axis;
}

bool SquareSumShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Need2D(attrs, (*in)[0], "input");
  if (!(*in)[0].is_known()) return false;
  SquareSumAxis(attrs, (*in)[0]);
  return ReduceAxesShape(attrs, in, out);
}

template <typename T>
void SquareSumRows(const T* x, int64_t rows, int64_t cols, int axis, T* y, OpReq req) {
  if (axis == 1) {
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < cols; ++c) acc += static_cast<double>(x[r * cols + c]) * static_cast<double>(x[r * cols + c]);
      Store(y + r, req, acc);
    }
  } else {
    std::vector<double> acc(static_cast<size_t>(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) acc[c] += static_cast<double>(x[r * cols + c]) * static_cast<double>(x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) Store(y + c, req, acc[c]);
  }
}

void SquareSumCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int axis = SquareSumAxis(attrs, in[0].shape);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_square_sum", {
    SquareSumRows(in[0].ptr<T>(), in[0].shape[0], in[0].shape[1], axis, out[0].ptr<T>(), req[0]);
  });
}

// row_sparse input: axis 1 sums each stored row (row_sparse result with keepdims, as
// MXNet's; dense otherwise), axis 0 sums the stored rows (dense).
bool SquareSumSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                     std::vector<NDArray>* out) {
  const NDArray& data = in[0];
  if (data.stype() != StorageType::kRowSparse || !sparse::AllOnCpu(in) || !IsFloatDType(data.dtype()) ||
      data.dtype() == DType::kFloat16 || data.dtype() == DType::kBfloat16)
    return false;
  int axis = SquareSumAxis(attrs, data.shape());
  bool keepdims = attrs.Params<ReduceAxesParam>().keepdims;
  const NDArray& vals = data.sparse_values();
  const int64_t k = vals.shape()[0], cols = data.shape()[1];
  std::vector<int64_t> rows = sparse::HostInt64(data.aux(0));
  Shape out_shape = ReducedShape(data.shape(), ReduceFlags(attrs, data.shape()), keepdims);
  WEFT_FLOAT_TYPE_SWITCH(data.dtype(), T, "_square_sum", {
    const T* x = reinterpret_cast<const T*>(sparse::HostRead(vals));
    if (axis == 1) {
      NDArray sums(Shape{k}, data.ctx(), data.dtype());
      SquareSumRows(x, k, cols, 1, reinterpret_cast<T*>(sparse::HostWrite(sums)), OpReq::kWriteTo);
      if (keepdims) {
        *out = {sparse::RowSparse(out_shape, sums.Reshape(Shape{k, 1}), rows)};
      } else {
        NDArray dense = sparse::DenseZeros(out_shape, data.dtype(), data.ctx());
        T* y = reinterpret_cast<T*>(sparse::HostWrite(dense));
        const T* s = reinterpret_cast<const T*>(sparse::HostRead(sums));
        for (int64_t j = 0; j < k; ++j) y[rows[j]] = s[j];
        *out = {dense};
      }
    } else {
      NDArray dense(out_shape, data.ctx(), data.dtype());
      SquareSumRows(x, k, cols, 0, reinterpret_cast<T*>(sparse::HostWrite(dense)), OpReq::kWriteTo);
      *out = {dense};
    }
  });
  return true;
}

// d/dx sum(x^2) = 2 x, times the output gradient broadcast back over the reduced axis.
std::vector<GradValue> SquareSumGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const auto& p = attrs.Params<ReduceAxesParam>();
  GradValue og = a.out_grads[0];
  GradValue twice = b.Op("_mul_scalar", {a.inputs[0]}, {{"scalar", "2"}});
  // Without keepdims the reduced axis is put back (its number is the one reduced, or,
  // with exclude, the other of the two).
  if (!p.keepdims) {
    int64_t axis = p.axis && p.axis->ndim() == 1 ? (*p.axis)[0] : 1;
    if (axis < 0) axis += 2;
    if (p.exclude) axis = 1 - axis;
    og = b.Op("expand_dims", {og}, {{"axis", std::to_string(axis)}});
  }
  return {b.Op("broadcast_mul", {twice, og})};
}

// ---------------------------------------------------------------- _contrib_getnnz

bool GetnnzShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Need2D(attrs, (*in)[0], "input");
  if (!(*in)[0].is_known()) return false;
  const auto& axis = attrs.Params<GetnnzParam>().axis;
  Shape s{1};
  if (axis) {
    int d = CheckAxis(attrs, *axis, 2);
    s = Shape{(*in)[0][1 - d]};
  }
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

bool GetnnzType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kInt64, "output");
  return (*in)[0] != DType::kUnknown;
}

void GetnnzCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& axis = attrs.Params<GetnnzParam>().axis;
  int d = axis ? CheckAxis(attrs, *axis, 2) : -1;
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  std::vector<int64_t> counts(static_cast<size_t>(out[0].Size()), 0);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        if (static_cast<double>(x[r * cols + c]) != 0.0) ++counts[d < 0 ? 0 : d == 0 ? c : r];
  });
  int64_t* y = out[0].ptr<int64_t>();
  for (size_t i = 0; i < counts.size(); ++i) Store(y + i, req[0], counts[i]);
}

bool GetnnzSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                  std::vector<NDArray>* out) {
  const NDArray& data = in[0];
  if (data.stype() != StorageType::kCSR || !sparse::AllOnCpu(in)) return false;
  const auto& axis = attrs.Params<GetnnzParam>().axis;
  std::vector<int64_t> counts;
  if (!axis) {
    counts = {data.sparse_values().Size()};
  } else if (CheckAxis(attrs, *axis, 2) == 0) {
    counts.assign(static_cast<size_t>(data.shape()[1]), 0);
    for (int64_t c : sparse::HostInt64(data.aux(1))) ++counts[c];
  } else {
    std::vector<int64_t> indptr = sparse::HostInt64(data.aux(0));
    for (size_t r = 0; r + 1 < indptr.size(); ++r) counts.push_back(indptr[r + 1] - indptr[r]);
  }
  *out = {sparse::Int64Array(counts, data.ctx())};
  return true;
}

// ---------------------------------------------------------------- _contrib_edge_id

bool EdgeIdShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Need2D(attrs, (*in)[0], "adjacency matrix");
  for (int i = 1; i <= 2; ++i)
    if ((*in)[i].known_ndim() && (*in)[i].ndim() != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected 1-D ", i == 1 ? "u" : "v",
            ", got shape ", (*in)[i].ToString());
  AssignShape(attrs, in, 2, (*in)[1], "input");
  AssignShape(attrs, in, 1, (*in)[2], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return (*in)[0].is_known() && (*out)[0].is_known();
}

bool EdgeIdType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*in)[0] != DType::kUnknown && (*in)[1] != DType::kUnknown && (*in)[2] != DType::kUnknown;
}

void EdgeIdCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t i = 0; i < in[1].Size(); ++i) {
      int64_t u = IndexAt(in[1], i, attrs, "u"), v = IndexAt(in[2], i, attrs, "v");
      CheckIndex(attrs, u, rows, "u", i);
      CheckIndex(attrs, v, cols, "v", i);
      T e = x[u * cols + v];
      Store(y + i, req[0], static_cast<double>(e) != 0.0 ? static_cast<double>(e) : -1.0);
    }
  });
}

bool EdgeIdSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                  std::vector<NDArray>* out) {
  const NDArray& g = in[0];
  if (g.stype() != StorageType::kCSR || in[1].is_sparse() || in[2].is_sparse() || !sparse::AllOnCpu(in)) return false;
  std::vector<int64_t> u = IndicesOf(in[1], attrs, "u"), v = IndicesOf(in[2], attrs, "v");
  std::vector<int64_t> indptr = sparse::HostInt64(g.aux(0)), idx = sparse::HostInt64(g.aux(1));
  NDArray result(in[1].shape(), g.ctx(), g.dtype());
  const NDArray& vals = g.sparse_values();
  size_t es = DTypeSize(g.dtype());
  const char* src = sparse::HostRead(vals);
  char* dst = sparse::HostWrite(result);
  WEFT_TYPE_SWITCH(g.dtype(), T, {
    const T minus_one = ConvertValue<T>(-1.0);
    for (size_t i = 0; i < u.size(); ++i) {
      CheckIndex(attrs, u[i], g.shape()[0], "u", static_cast<int64_t>(i));
      CheckIndex(attrs, v[i], g.shape()[1], "v", static_cast<int64_t>(i));
      auto b = idx.begin() + indptr[u[i]], e = idx.begin() + indptr[u[i] + 1];
      auto it = std::lower_bound(b, e, v[i]);
      if (it != e && *it == v[i]) std::memcpy(dst + i * es, src + (it - idx.begin()) * es, es);
      else std::memcpy(dst + i * es, &minus_one, es);
    }
  });
  *out = {result};
  return true;
}

}  // namespace

WEFT_REGISTER_OP(cast_storage)
    .Describe(
        "Casts an array to a storage type: 'default' (dense), 'row_sparse' or 'csr' (2-D only). Zero elements "
        "(for row_sparse, all-zero rows) of a dense input are not stored.")
    .AddAlias("_sparse_cast_storage")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input.")
    .SetParams<CastStorageParam>()
    .SetAttr<FInferShape>("FInferShape", CastStorageShape)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FComputeSparse>("FComputeSparse", CastStorageSparse)
    .SetAttr<bool>("TSparseOnDense", true)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_copy", {a.out_grads[0]})};
    });

WEFT_REGISTER_OP(_sparse_retain)
    .Describe(
        "Keeps the rows of a row_sparse array whose index is listed in indices; the other rows become zero. The "
        "output is row_sparse for a row_sparse input. An index outside [0, rows) is an error.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The input array for sparse_retain operator.")
    .AddArgument("indices", "NDArray-or-Symbol", "The index array of rows ids that will be retained.")
    .SetAttr<FInferShape>("FInferShape", RetainShape)
    .SetAttr<FInferType>("FInferType", RetainType)
    .SetAttr<FCompute>("FCompute<cpu>", RetainCompute)
    .SetAttr<FComputeSparse>("FComputeSparse", RetainSparse)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_sparse_retain", {a.out_grads[0], a.inputs[1]}), GradValue()};
    });

WEFT_REGISTER_OP(_square_sum)
    .Describe(
        "The sum of squares of a 2-D array along one axis (0 or 1). For a row_sparse input, axis=1 with "
        "keepdims=True gives a row_sparse result (the stored rows only); the other cases are dense.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .SetAttr<FInferShape>("FInferShape", SquareSumShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", SquareSumCompute)
    .SetAttr<FComputeSparse>("FComputeSparse", SquareSumSparse)
    .SetAttr<FGradient>("FGradient", SquareSumGrad);

WEFT_REGISTER_OP(_contrib_getnnz)
    .Describe(
        "Number of stored values of a csr matrix: in total (axis=None, shape (1,)), per column (axis=0) or per "
        "row (axis=1); int64. For a dense input, the number of nonzero elements.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input")
    .SetParams<GetnnzParam>()
    .SetAttr<FInferShape>("FInferShape", GetnnzShape)
    .SetAttr<FInferType>("FInferType", GetnnzType)
    .SetAttr<FCompute>("FCompute<cpu>", GetnnzCompute)
    .SetAttr<FComputeSparse>("FComputeSparse", GetnnzSparse);

WEFT_REGISTER_OP(_contrib_edge_id)
    .Describe(
        "For each pair (u[i], v[i]), the value stored at row u[i], column v[i] of the csr adjacency matrix data "
        "(the edge's id), or -1 where nothing is stored (a dense input: where the element is 0). u and v must "
        "index within the matrix.")
    .SetNumInputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .AddArgument("u", "NDArray-or-Symbol", "u ndarray")
    .AddArgument("v", "NDArray-or-Symbol", "v ndarray")
    .SetAttr<FInferShape>("FInferShape", EdgeIdShape)
    .SetAttr<FInferType>("FInferType", EdgeIdType)
    .SetAttr<FCompute>("FCompute<cpu>", EdgeIdCompute)
    .SetAttr<FComputeSparse>("FComputeSparse", EdgeIdSparse);

}  // namespace op
}  // namespace weft

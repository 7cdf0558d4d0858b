// What the linalg operators (_linalg_*, la_*.cc) share: their parameter structs (MXNet's
// names, defaults and docs), dtype and shape rules that name what was expected and what
// came, and the batch driver that loads each matrix into doubles for la_kernels.h and
// stores the results with the write request. Leading dimensions are the batch; the last
// two hold the matrices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/op/linalg/la_kernels.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct LaMatrixMacParam {
  bool transpose_a = false;
  bool transpose_b = false;
  double alpha = 1.0;
  double beta = 1.0;
  int axis = -2;
};

WEFT_PARAM_SCHEMA(LaMatrixMacParam, s) {
  s.Field("transpose_a", &LaMatrixMacParam::transpose_a).Default(false).Describe("Multiply with transposed of first input (A).");
  s.Field("transpose_b", &LaMatrixMacParam::transpose_b).Default(false).Describe("Multiply with transposed of second input (B).");
  s.Field("alpha", &LaMatrixMacParam::alpha).Default(1.0).Describe("Scalar factor multiplied with A*B.");
  s.Field("beta", &LaMatrixMacParam::beta).Default(1.0).Describe("Scalar factor multiplied with C.");
  s.Field("axis", &LaMatrixMacParam::axis).Default(-2).Describe("Axis corresponding to the matrix rows.");
}

struct LaMatrixMultParam {
  bool transpose_a = false;
  bool transpose_b = false;
  double alpha = 1.0;
  int axis = -2;
};

WEFT_PARAM_SCHEMA(LaMatrixMultParam, s) {
  s.Field("transpose_a", &LaMatrixMultParam::transpose_a).Default(false).Describe("Multiply with transposed of first input (A).");
  s.Field("transpose_b", &LaMatrixMultParam::transpose_b).Default(false).Describe("Multiply with transposed of second input (B).");
  s.Field("alpha", &LaMatrixMultParam::alpha).Default(1.0).Describe("Scalar factor multiplied with A*B.");
  s.Field("axis", &LaMatrixMultParam::axis).Default(-2).Describe("Axis corresponding to the matrix row indices.");
}

struct LaCholeskyParam {
  bool lower = true;
};

WEFT_PARAM_SCHEMA(LaCholeskyParam, s) {
  s.Field("lower", &LaCholeskyParam::lower)
      .Default(true)
      .Describe("True if the triangular matrix is lower triangular, false if it is upper triangular.");
}

struct LaTriangMatrixMultParam {
  bool transpose = false;
  bool rightside = false;
  bool lower = true;
  double alpha = 1.0;
};

WEFT_PARAM_SCHEMA(LaTriangMatrixMultParam, s) {
  s.Field("transpose", &LaTriangMatrixMultParam::transpose).Default(false).Describe("Use transposed of the triangular matrix");
  s.Field("rightside", &LaTriangMatrixMultParam::rightside)
      .Default(false)
      .Describe("Multiply triangular matrix from the right to non-triangular one.");
  s.Field("lower", &LaTriangMatrixMultParam::lower)
      .Default(true)
      .Describe("True if the triangular matrix is lower triangular, false if it is upper triangular.");
  s.Field("alpha", &LaTriangMatrixMultParam::alpha).Default(1.0).Describe("Scalar factor to be applied to the result.");
}

struct LaSyrkParam {
  bool transpose = false;
  double alpha = 1.0;
};

WEFT_PARAM_SCHEMA(LaSyrkParam, s) {
  s.Field("transpose", &LaSyrkParam::transpose).Default(false).Describe("Use transpose of input matrix.");
  s.Field("alpha", &LaSyrkParam::alpha).Default(1.0).Describe("Scalar factor to be applied to the result.");
}

struct LaDiagParam {
  int offset = 0;
};

WEFT_PARAM_SCHEMA(LaDiagParam, s) {
  s.Field("offset", &LaDiagParam::offset)
      .Default(0)
      .Describe(
          "Offset of the diagonal versus the main diagonal. 0 corresponds to the main diagonal, a negative/positive "
          "value to diagonals below/above the main diagonal.");
}

struct LaTrianParam {
  int offset = 0;
  bool lower = true;
};

WEFT_PARAM_SCHEMA(LaTrianParam, s) {
  s.Field("offset", &LaTrianParam::offset)
      .Default(0)
      .Describe(
          "Offset of the diagonal versus the main diagonal. 0 corresponds to the main diagonal, a negative/positive "
          "value to diagonals below/above the main diagonal.");
  s.Field("lower", &LaTrianParam::lower)
      .Default(true)
      .Describe("Refer to the lower triangular matrix if lower=true, refer to the upper otherwise. Only relevant when offset=0");
}

namespace la {

// Runs the body with T = float or double (the only dtypes the type rules let through).
#define WEFT_LA_TYPE_SWITCH(dtype, T, ...)  \
  if ((dtype) == ::weft::DType::kFloat32) { \
    using T = float;                        \
    __VA_ARGS__                             \
  } else {                                  \
    using T = double;                       \
    __VA_ARGS__                             \
  }

// Every input and output in `float_in`/`float_out` (all when empty) has one dtype, float32 or
// float64, as MXNet's linalg operators; the others are int32 (det's pivots).
inline bool FloatType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out,
                      const std::vector<size_t>& int_in = {}, const std::vector<size_t>& int_out = {}) {
  auto is_int_in = [&](size_t i) { return std::find(int_in.begin(), int_in.end(), i) != int_in.end(); };
  auto is_int_out = [&](size_t i) { return std::find(int_out.begin(), int_out.end(), i) != int_out.end(); };
  for (size_t i : int_in) AssignType(attrs, in, i, DType::kInt32, "input");
  for (size_t i : int_out) AssignType(attrs, out, i, DType::kInt32, "output");
  DType t = DType::kUnknown;
  for (size_t i = 0; i < in->size() && t == DType::kUnknown; ++i)
    if (!is_int_in(i)) t = (*in)[i];
  for (size_t i = 0; i < out->size() && t == DType::kUnknown; ++i)
    if (!is_int_out(i)) t = (*out)[i];
  if (t == DType::kUnknown) return false;
  if (t != DType::kFloat32 && t != DType::kFloat64)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': supports float32 and float64 only, got ", DTypeName(t));
  for (size_t i = 0; i < in->size(); ++i)
    if (!is_int_in(i)) AssignType(attrs, in, i, t, "input");
  for (size_t i = 0; i < out->size(); ++i)
    if (!is_int_out(i)) AssignType(attrs, out, i, t, "output");
  return true;
}

// Throws unless s has at least `min_ndim` dimensions (2 by default) and, when `square`,
// equal last two.
inline void CheckMatrices(const NodeAttrs& attrs, const Shape& s, const std::string& what, bool square,
                          int min_ndim = 2) {
  if (s.ndim() < min_ndim)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", what, " must have at least ", min_ndim,
          " dimensions (leading ones are the batch), got shape ", s.ToString());
  int nd = s.ndim();
  if (square && s[nd - 2] != s[nd - 1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", what,
          " must hold square matrices (equal last two dimensions), got shape ", s.ToString());
}

// s with its last `drop` dimensions replaced by `tail`.
inline Shape ReplaceTail(const Shape& s, int drop, const std::vector<int64_t>& tail) {
  std::vector<int64_t> d(s.begin(), s.end() - drop);
  d.insert(d.end(), tail.begin(), tail.end());
  return Shape(d.begin(), d.end());
}

// The shape of one value per matrix: the batch dimensions, or (1,) for a single matrix.
inline Shape PerMatrixShape(const Shape& s) {
  if (s.ndim() <= 2) return Shape{1};
  return Shape(s.begin(), s.end() - 2);
}

// Number of matrices in a batch whose matrices take the last `mat_dims` dimensions.
inline int64_t BatchOf(const Shape& s, int mat_dims = 2) { return s.ProdRange(0, std::max(0, s.ndim() - mat_dims)); }

// Item b (of `count` elements) of t as doubles.
inline void Load(const TBlob& t, int64_t b, int64_t count, double* dst) {
  if (t.dtype == DType::kFloat32) {
    const float* p = t.ptr<float>() + b * count;
    for (int64_t i = 0; i < count; ++i) dst[i] = p[i];
  } else {
    const double* p = t.ptr<double>() + b * count;
    std::copy(p, p + count, dst);
  }
}

inline std::vector<double> Load(const TBlob& t, int64_t b, int64_t count) {
  std::vector<double> v(static_cast<size_t>(count));
  Load(t, b, count, v.data());
  return v;
}

// Writes item b (of `count` elements) of t from doubles as `req` says.
inline void Save(const TBlob& t, OpReq req, int64_t b, int64_t count, const double* src) {
  if (req == OpReq::kNullOp) return;
  if (t.dtype == DType::kFloat32) {
    float* p = t.ptr<float>() + b * count;
    for (int64_t i = 0; i < count; ++i) Store(p + i, req, src[i]);
  } else {
    double* p = t.ptr<double>() + b * count;
    for (int64_t i = 0; i < count; ++i) Store(p + i, req, src[i]);
  }
}

// Runs f(b) for every matrix b of a batch, across threads when the work (`flops_per_item`
// each) is worth it. f returns 0, or a nonzero code for an item that failed; the first
// failure (lowest b) is returned, as exceptions must not leave an OpenMP region.
template <typename F>
int64_t ForEachMatrix(int64_t batch, double flops_per_item, F&& f, int64_t* failed_item = nullptr) {
  std::vector<int64_t> codes(static_cast<size_t>(std::max<int64_t>(batch, 0)), 0);
  int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(65536.0 / std::max(flops_per_item, 1.0)));
  ParallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) codes[b] = f(b);
  });
  for (int64_t b = 0; b < batch; ++b)
    if (codes[b] != 0) {
      if (failed_item) *failed_item = b;
      return codes[b];
    }
  return 0;
}

// "matrix 3 of the batch" or "the matrix" for messages.
inline std::string WhichMatrix(int64_t b, int64_t batch) {
  return batch > 1 ? "matrix " + std::to_string(b) + " of the batch" : std::string("the matrix");
}

}  // namespace la
}  // namespace op
}  // namespace weft

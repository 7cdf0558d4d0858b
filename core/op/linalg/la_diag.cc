// _linalg_extractdiag / _linalg_makediag and _linalg_extracttrian / _linalg_maketrian: copies
// between square matrices and the vectors of one of their diagonals or triangles (with an
// offset from the main diagonal). Each pair is the other's gradient.
#include <cmath>
#include <cstdlib>

#include "core/op/linalg/la_common.h"

namespace weft {
namespace op {
namespace {

// Positions (row-major, in an n x n matrix) of the vector's entries, in the vector's order.
// The diagonal `offset` goes from (max(-offset, 0), max(offset, 0)) down. A triangle holds
// m = n - |offset| rows: a lower one (offset < 0, or 0 with lower) row by row, an upper one
// (offset > 0, or 0 without lower) column by column, so each is the other transposed.
std::vector<int64_t> Positions(bool diag, int offset, bool lower, int64_t n) {
  int64_t k = std::abs(offset), m = n - k;
  std::vector<int64_t> pos;
  if (m <= 0) return pos;
  if (diag) {
    int64_t i0 = offset < 0 ? k : 0, j0 = offset > 0 ? k : 0;
    for (int64_t t = 0; t < m; ++t) pos.push_back((i0 + t) * n + j0 + t);
    return pos;
  }
  bool upper = offset > 0 || (offset == 0 && !lower);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c <= r; ++c) pos.push_back(upper ? c * n + (r + k) : (r + k) * n + c);
  return pos;
}

bool IsDiag(const NodeAttrs& attrs) { return attrs.op->name.find("diag") != std::string::npos; }

int OffsetOf(const NodeAttrs& attrs) {
  return IsDiag(attrs) ? attrs.Params<LaDiagParam>().offset : attrs.Params<LaTrianParam>().offset;
}

bool LowerOf(const NodeAttrs& attrs) { return IsDiag(attrs) ? true : attrs.Params<LaTrianParam>().lower; }

// Matrices -> vectors.
Shape ExtractShape(const NodeAttrs& attrs, const Shape& in) {
  la::CheckMatrices(attrs, in, InputName(attrs, 0), true);
  int offset = OffsetOf(attrs);
  int64_t n = in[in.ndim() - 1], m = n - std::abs(offset);
  if (m <= 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': offset ", offset, " leaves nothing of ", n, "x", n,
          " matrices (input shape ", in.ToString(), ")");
  return la::ReplaceTail(in, 2, {IsDiag(attrs) ? m : m * (m + 1) / 2});
}

// Vectors -> matrices.
Shape MakeShape(const NodeAttrs& attrs, const Shape& in) {
  la::CheckMatrices(attrs, in, InputName(attrs, 0), false, 1);
  int64_t len = in[in.ndim() - 1], m = len;
  if (!IsDiag(attrs)) {
    m = static_cast<int64_t>(std::floor((std::sqrt(8.0 * static_cast<double>(len) + 1.0) - 1.0) / 2.0 + 0.5));
    if (m * (m + 1) / 2 != len)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the last dimension of input 'A' (shape ",
            in.ToString(), ") must hold a triangle, m * (m + 1) / 2 entries for some m, but is ", len);
  }
  int64_t n = m + std::abs(OffsetOf(attrs));
  return la::ReplaceTail(in, 1, {n, n});
}

bool ExtractInferShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, ExtractShape(attrs, (*in)[0]), "output");
  return true;
}

bool MakeInferShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, MakeShape(attrs, (*in)[0]), "output");
  return true;
}

void ExtractCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = in[0].shape[in[0].ndim() - 1], batch = la::BatchOf(in[0].shape);
  std::vector<int64_t> pos = Positions(IsDiag(attrs), OffsetOf(attrs), LowerOf(attrs), n);
  int64_t cnt = static_cast<int64_t>(pos.size());
  WEFT_LA_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < cnt; ++t) Store(y + b * cnt + t, req[0], x[b * n * n + pos[t]]);
  });
}

void MakeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = out[0].shape[out[0].ndim() - 1], batch = la::BatchOf(out[0].shape);
  std::vector<int64_t> pos = Positions(IsDiag(attrs), OffsetOf(attrs), LowerOf(attrs), n);
  int64_t cnt = static_cast<int64_t>(pos.size());
  WEFT_LA_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    if (req[0] != OpReq::kAddTo) std::fill(y, y + out[0].Size(), T(0));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < cnt; ++t) Store(y + b * n * n + pos[t], req[0], x[b * cnt + t]);
  });
}

bool FloatTypes(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return la::FloatType(attrs, in, out);
}

FGradient GradThrough(const char* op) {
  std::string name = op;
  return [name](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    return std::vector<GradValue>{b.Op(name, {a.out_grads[0]}, attrs.dict)};
  };
}

}  // namespace

WEFT_REGISTER_OP(_linalg_extractdiag)
    .Describe(
        "Extracts the diagonal entries of a square matrix (the diagonal `offset` above, or below when negative, the "
        "main one). Inputs of dimension n > 2 are batches of matrices on the trailing two dimensions; the result "
        "has dimension n - 1. Supports float32 and float64.")
    .AddAlias("linalg_extractdiag")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrices")
    .SetParams<LaDiagParam>()
    .SetAttr<FInferShape>("FInferShape", ExtractInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ExtractCompute)
    .SetAttr<FGradient>("FGradient", GradThrough("_backward_linalg_extractdiag"));

WEFT_REGISTER_OP(_backward_linalg_extractdiag)
    .Describe("Gradient of _linalg_extractdiag: the output gradient placed on the diagonal of zero matrices.")
    .SetNumInputs(1)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .SetParams<LaDiagParam>()
    .SetAttr<FInferShape>("FInferShape", MakeInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", MakeCompute);

WEFT_REGISTER_OP(_linalg_makediag)
    .Describe(
        "Constructs square matrices with the input as a diagonal (the diagonal `offset` above, or below when "
        "negative, the main one), zero elsewhere. An input of dimension n > 1 is a batch of diagonals; the result "
        "has dimension n + 1. Supports float32 and float64.")
    .AddAlias("linalg_makediag")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of diagonal entries")
    .SetParams<LaDiagParam>()
    .SetAttr<FInferShape>("FInferShape", MakeInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", MakeCompute)
    .SetAttr<FGradient>("FGradient", GradThrough("_backward_linalg_makediag"));

WEFT_REGISTER_OP(_backward_linalg_makediag)
    .Describe("Gradient of _linalg_makediag: the diagonal of the output gradient.")
    .SetNumInputs(1)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .SetParams<LaDiagParam>()
    .SetAttr<FInferShape>("FInferShape", ExtractInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ExtractCompute);

WEFT_REGISTER_OP(_linalg_extracttrian)
    .Describe(
        "Extracts a triangle of a square matrix as a vector: with offset 0 the lower (lower=True) or upper "
        "triangle, row by row or column by column respectively; with offset k > 0 the upper triangle from the k-th "
        "diagonal above the main one, with k < 0 the lower triangle from the |k|-th below. Inputs of dimension "
        "n > 2 are batches; the result has dimension n - 1. Supports float32 and float64.")
    .AddAlias("linalg_extracttrian")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrices")
    .SetParams<LaTrianParam>()
    .SetAttr<FInferShape>("FInferShape", ExtractInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ExtractCompute)
    .SetAttr<FGradient>("FGradient", GradThrough("_backward_linalg_extracttrian"));

WEFT_REGISTER_OP(_backward_linalg_extracttrian)
    .Describe("Gradient of _linalg_extracttrian: the output gradient placed in the triangle of zero matrices.")
    .SetNumInputs(1)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .SetParams<LaTrianParam>()
    .SetAttr<FInferShape>("FInferShape", MakeInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", MakeCompute);

WEFT_REGISTER_OP(_linalg_maketrian)
    .Describe(
        "Constructs square matrices from vectors holding a triangle (the inverse of extracttrian, with the same "
        "offset and lower): zero outside the triangle, and |offset| further zero diagonals. An input of dimension "
        "n > 1 is a batch; the result has dimension n + 1. Supports float32 and float64.")
    .AddAlias("linalg_maketrian")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of triangular matrices stored as vectors")
    .SetParams<LaTrianParam>()
    .SetAttr<FInferShape>("FInferShape", MakeInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", MakeCompute)
    .SetAttr<FGradient>("FGradient", GradThrough("_backward_linalg_maketrian"));

WEFT_REGISTER_OP(_backward_linalg_maketrian)
    .Describe("Gradient of _linalg_maketrian: the triangle of the output gradient.")
    .SetNumInputs(1)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .SetParams<LaTrianParam>()
    .SetAttr<FInferShape>("FInferShape", ExtractInferShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ExtractCompute);

}  // namespace op
}  // namespace weft

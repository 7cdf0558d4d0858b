// The Cholesky and triangular linalg operators: _linalg_potrf, _linalg_potri, _linalg_trmm,
// _linalg_trsm, _linalg_sumlogdiag and _linalg_syrk, with their gradients (the formulas of
// Seeger et al., "Auto-differentiating linear algebra", as MXNet uses them). An upper
// triangular case is the lower one on transposed matrices.
#include <cmath>

#include "core/op/linalg/la_common.h"

namespace weft {
namespace op {
namespace {

using la::Load;
using la::Save;
using la::Transposed;

int64_t Dim(const Shape& s, int from_end) { return s[s.ndim() - from_end]; }

// x = t^-1 b for t (n x n) triangular, b (n x m), in place.
void SolveLeft(const std::vector<double>& t, bool lower, std::vector<double>* b, int64_t n, int64_t m) {
  la::SolveTriangular(t.data(), lower, b->data(), n, m);
}

// x = b t^-1 for t (n x n) triangular, b (rows x n), in place: t^T x^T = b^T.
void SolveRight(const std::vector<double>& t, bool lower, std::vector<double>* b, int64_t rows, int64_t n) {
  std::vector<double> bt = Transposed(b->data(), rows, n), tt = Transposed(t.data(), n, n);
  la::SolveTriangular(tt.data(), !lower, bt.data(), n, rows);
  *b = Transposed(bt.data(), n, rows);
}

std::vector<double> MatMul(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb, int64_t m,
                           int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n));
  la::MatMul(a.data(), ta, b.data(), tb, c.data(), m, n, k);
  return c;
}

void Scale(std::vector<double>* v, double s) {
  for (double& x : *v) x *= s;
}

// Shape rule of operators whose inputs and outputs all share one shape of square matrices.
bool SquareSameShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!SameShape(attrs, in, out)) return false;
  la::CheckMatrices(attrs, (*in)[0], InputName(attrs, 0), true);
  return true;
}

bool FloatTypes(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return la::FloatType(attrs, in, out);
}

std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) { return {{0, 0}}; }

// ---------------------------------------------------------------- potrf
void PotrfCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  bool lower = attrs.Params<LaCholeskyParam>().lower;
  int64_t n = Dim(in[0].shape, 1), nn = n * n, batch = la::BatchOf(in[0].shape), failed = 0;
  int64_t code = la::ForEachMatrix(batch, n * n * n / 3.0, [&](int64_t b) -> int64_t {
    std::vector<double> a = Load(in[0], b, nn);
    if (!lower) a = Transposed(a.data(), n, n);
    int64_t info = la::CholeskyLower(a.data(), n);
    if (info != 0) return info;
    if (!lower) a = Transposed(a.data(), n, n);
    Save(out[0], req[0], b, nn, a.data());
    return 0;
  }, &failed);
  if (code != 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ", la::WhichMatrix(failed, batch),
          " is not positive definite (its leading minor of order ", code,
          " is not positive); potrf needs symmetric positive-definite matrices");
}

// Inputs (dL, L): dA = 0.5 L^-T sym(L^T dL) L^-1 with sym() mirroring the lower triangle onto
// the upper one (a symmetric gradient, as the input is taken to be symmetric).
void PotrfBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  bool lower = attrs.Params<LaCholeskyParam>().lower;
  int64_t n = Dim(in[1].shape, 1), nn = n * n, batch = la::BatchOf(in[1].shape);
  la::ForEachMatrix(batch, 3.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> dl = Load(in[0], b, nn), l = Load(in[1], b, nn);
    if (!lower) {
      dl = Transposed(dl.data(), n, n);
      l = Transposed(l.data(), n, n);
    }
    la::KeepTriangle(l.data(), n, true);
    std::vector<double> lt = Transposed(l.data(), n, n);
    std::vector<double> x = MatMul(l, true, dl, false, n, n, n);
    la::SymmetrizeFrom(x.data(), n, true);
    SolveLeft(lt, false, &x, n, n);     // L^-T sym(...)
    SolveRight(l, true, &x, n, n);      // ... L^-1
    Scale(&x, 0.5);
    Save(out[0], req[0], b, nn, x.data());
    return 0;
  });
}

// ---------------------------------------------------------------- potri
// The inverse L^-1 of a triangular factor (lower, or the transpose of an upper one), or the
// 1-based index of a zero on its diagonal.
int64_t InvertFactor(std::vector<double>* l, int64_t n, std::vector<double>* linv) {
  for (int64_t i = 0; i < n; ++i)
    if ((*l)[i * n + i] == 0.0) return i + 1;
  linv->assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) (*linv)[i * n + i] = 1.0;
  SolveLeft(*l, true, linv, n, n);
  return 0;
}

void PotriCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  bool lower = attrs.Params<LaCholeskyParam>().lower;
  int64_t n = Dim(in[0].shape, 1), nn = n * n, batch = la::BatchOf(in[0].shape), failed = 0;
  int64_t code = la::ForEachMatrix(batch, 2.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> l = Load(in[0], b, nn), linv;
    if (!lower) l = Transposed(l.data(), n, n);
    la::KeepTriangle(l.data(), n, true);
    if (int64_t info = InvertFactor(&l, n, &linv)) return info;
    std::vector<double> inv = MatMul(linv, true, linv, false, n, n, n);
    Save(out[0], req[0], b, nn, inv.data());
    return 0;
  }, &failed);
  if (code != 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ", la::WhichMatrix(failed, batch),
          " is singular (diagonal entry ", code - 1,
          " is zero); potri needs a Cholesky factor with a nonzero diagonal, as potrf makes");
}

// Inputs (dOut, L, Out) with Out = (L L^T)^-1: dL = -tril(Out (dOut + dOut^T) L^-T).
void PotriBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  bool lower = attrs.Params<LaCholeskyParam>().lower;
  int64_t n = Dim(in[1].shape, 1), nn = n * n, batch = la::BatchOf(in[1].shape);
  la::ForEachMatrix(batch, 3.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> g = Load(in[0], b, nn), l = Load(in[1], b, nn), inv = Load(in[2], b, nn);
    if (!lower) l = Transposed(l.data(), n, n);
    la::KeepTriangle(l.data(), n, true);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double s = g[i * n + j] + g[j * n + i];
        g[i * n + j] = g[j * n + i] = s;
      }
    for (int64_t i = 0; i < n; ++i) g[i * n + i] *= 2.0;
    std::vector<double> m = MatMul(inv, false, g, false, n, n, n);
    std::vector<double> lt = Transposed(l.data(), n, n);
    SolveRight(lt, false, &m, n, n);  // m L^-T
    Scale(&m, -1.0);
    la::KeepTriangle(m.data(), n, true);
    if (!lower) m = Transposed(m.data(), n, n);
    Save(out[0], req[0], b, nn, m.data());
    return 0;
  });
}

// ---------------------------------------------------------------- trmm / trsm
// Output shape of trmm/trsm: B's, after checking that A holds square matrices that fit B.
Shape TriangularProductShape(const NodeAttrs& attrs, const Shape& a, const Shape& b) {
  const auto& p = attrs.Params<LaTriangMatrixMultParam>();
  la::CheckMatrices(attrs, a, "input 'A'", true);
  if (b.ndim() != a.ndim())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': inputs A and B must have the same number of dimensions, "
          "got shapes ", a.ToString(), " and ", b.ToString());
  int nd = a.ndim();
  for (int d = 0; d < nd - 2; ++d)
    if (a[d] != b[d])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the batch dimensions of shapes ", a.ToString(),
            " and ", b.ToString(), " differ");
  int64_t n = a[nd - 1], fit = p.rightside ? b[nd - 1] : b[nd - 2];
  if (fit != n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the ", n, "x", n, " triangular matrices of A do not fit B (",
          b.ToString(), "): with rightside=", p.rightside ? "True" : "False", " B's ",
          p.rightside ? "columns" : "rows", " must number ", n);
  return b;
}

bool TriangularShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, TriangularProductShape(attrs, (*in)[0], (*in)[1]), "output");
  return true;
}

// Inputs (dOut, A, B[, Out]); outputs (dA, dB).
bool TriangularBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  Shape o = TriangularProductShape(attrs, (*in)[1], (*in)[2]);
  AssignShape(attrs, in, 0, o, "input");
  if (in->size() == 4) AssignShape(attrs, in, 3, o, "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  return true;
}

struct TriDims {
  int64_t n, rows, cols, batch;
};

TriDims TriDimsOf(const Shape& a, const Shape& b) {
  return {Dim(a, 1), Dim(b, 2), Dim(b, 1), la::BatchOf(a)};
}

void TrmmCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LaTriangMatrixMultParam>();
  TriDims d = TriDimsOf(in[0].shape, in[1].shape);
  int64_t nn = d.n * d.n, bsz = d.rows * d.cols;
  la::ForEachMatrix(d.batch, 2.0 * bsz * d.n, [&](int64_t b) -> int64_t {
    std::vector<double> t = Load(in[0], b, nn), x = Load(in[1], b, bsz);
    la::KeepTriangle(t.data(), d.n, p.lower);
    std::vector<double> c = p.rightside ? MatMul(x, false, t, p.transpose, d.rows, d.n, d.n)
                                        : MatMul(t, p.transpose, x, false, d.n, d.cols, d.n);
    Scale(&c, p.alpha);
    Save(out[0], req[0], b, bsz, c.data());
    return 0;
  });
}

// With C = alpha op(T) B (left) or alpha B op(T) (right) and G = dC:
//   left:  dT = alpha G B^T (alpha B G^T when transposed), dB = alpha op(T)^T G;
//   right: dT = alpha B^T G (alpha G^T B when transposed), dB = alpha G op(T)^T;
// and dA is dT's triangle.
void TrmmBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LaTriangMatrixMultParam>();
  TriDims d = TriDimsOf(in[1].shape, in[2].shape);
  int64_t nn = d.n * d.n, bsz = d.rows * d.cols;
  la::ForEachMatrix(d.batch, 4.0 * bsz * d.n, [&](int64_t b) -> int64_t {
    std::vector<double> g = Load(in[0], b, bsz), t = Load(in[1], b, nn), x = Load(in[2], b, bsz);
    la::KeepTriangle(t.data(), d.n, p.lower);
    if (req[0] != OpReq::kNullOp) {
      std::vector<double> dt;
      if (!p.rightside) dt = p.transpose ? MatMul(x, false, g, true, d.n, d.n, d.cols) : MatMul(g, false, x, true, d.n, d.n, d.cols);
      else dt = p.transpose ? MatMul(g, true, x, false, d.n, d.n, d.rows) : MatMul(x, true, g, false, d.n, d.n, d.rows);
      Scale(&dt, p.alpha);
      la::KeepTriangle(dt.data(), d.n, p.lower);
      Save(out[0], req[0], b, nn, dt.data());
    }
    if (req[1] != OpReq::kNullOp) {
      std::vector<double> db = p.rightside ? MatMul(g, false, t, !p.transpose, d.rows, d.n, d.n)
                                           : MatMul(t, !p.transpose, g, false, d.n, d.cols, d.n);
      Scale(&db, p.alpha);
      Save(out[1], req[1], b, bsz, db.data());
    }
    return 0;
  });
}

// op(T) as an explicit triangular matrix and whether it is lower.
std::vector<double> EffectiveTriangle(const TBlob& a, int64_t b, int64_t n, const LaTriangMatrixMultParam& p,
                                      bool* lower) {
  std::vector<double> t = Load(a, b, n * n);
  la::KeepTriangle(t.data(), n, p.lower);
  *lower = p.lower != p.transpose;
  return p.transpose ? Transposed(t.data(), n, n) : t;
}

void TrsmCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LaTriangMatrixMultParam>();
  TriDims d = TriDimsOf(in[0].shape, in[1].shape);
  int64_t bsz = d.rows * d.cols;
  la::ForEachMatrix(d.batch, 1.0 * bsz * d.n, [&](int64_t b) -> int64_t {
    bool lower;
    std::vector<double> e = EffectiveTriangle(in[0], b, d.n, p, &lower), x = Load(in[1], b, bsz);
    Scale(&x, p.alpha);
    if (p.rightside) SolveRight(e, lower, &x, d.rows, d.n);
    else SolveLeft(e, lower, &x, d.n, d.cols);
    Save(out[0], req[0], b, bsz, x.data());
    return 0;
  });
}

// With X = alpha E^-1 B (left) or alpha B E^-1 (right), E = op(T), and G = dX:
//   left:  W = E^-T G, dB = alpha W, dE = -W X^T;
//   right: W = G E^-T, dB = alpha W, dE = -X^T W;
// dT is dE (transposed back when E = T^T), and dA its triangle.
void TrsmBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LaTriangMatrixMultParam>();
  TriDims d = TriDimsOf(in[1].shape, in[2].shape);
  int64_t nn = d.n * d.n, bsz = d.rows * d.cols;
  la::ForEachMatrix(d.batch, 3.0 * bsz * d.n, [&](int64_t b) -> int64_t {
    bool lower;
    std::vector<double> e = EffectiveTriangle(in[1], b, d.n, p, &lower);
    std::vector<double> w = Load(in[0], b, bsz), x = Load(in[3], b, bsz);
    std::vector<double> et = Transposed(e.data(), d.n, d.n);
    if (p.rightside) SolveRight(et, !lower, &w, d.rows, d.n);
    else SolveLeft(et, !lower, &w, d.n, d.cols);
    if (req[0] != OpReq::kNullOp) {
      std::vector<double> de = p.rightside ? MatMul(x, true, w, false, d.n, d.n, d.rows)
                                           : MatMul(w, false, x, true, d.n, d.n, d.cols);
      Scale(&de, -1.0);
      if (p.transpose) de = Transposed(de.data(), d.n, d.n);
      la::KeepTriangle(de.data(), d.n, p.lower);
      Save(out[0], req[0], b, nn, de.data());
    }
    if (req[1] != OpReq::kNullOp) {
      Scale(&w, p.alpha);
      Save(out[1], req[1], b, bsz, w.data());
    }
    return 0;
  });
}

// ---------------------------------------------------------------- sumlogdiag
bool SumLogDiagShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  la::CheckMatrices(attrs, (*in)[0], "input 'A'", true);
  AssignShape(attrs, out, 0, la::PerMatrixShape((*in)[0]), "output");
  return (*in)[0].is_known();
}

void SumLogDiagCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = Dim(in[0].shape, 1), nn = n * n, batch = la::BatchOf(in[0].shape);
  WEFT_LA_TYPE_SWITCH(in[0].dtype, T, {
    const T* a = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t b = 0; b < batch; ++b) {
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i) s += std::log(static_cast<double>(a[b * nn + i * n + i]));
      Store(y + b, req[0], s);
    }
  });
}

// Inputs (dOut, A): dA is diagonal with dOut / A_ii.
bool SumLogDiagBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].known_ndim()) return false;
  la::CheckMatrices(attrs, (*in)[1], "input 'A'", true);
  AssignShape(attrs, in, 0, la::PerMatrixShape((*in)[1]), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return (*in)[1].is_known();
}

void SumLogDiagBackwardCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = Dim(in[1].shape, 1), nn = n * n, batch = la::BatchOf(in[1].shape);
  WEFT_LA_TYPE_SWITCH(in[1].dtype, T, {
    const T* g = in[0].ptr<T>();
    const T* a = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t k = b * nn + i * n + j;
          Store(y + k, req[0], i == j ? static_cast<double>(g[b]) / static_cast<double>(a[k]) : 0.0);
        }
  });
}

// ---------------------------------------------------------------- syrk
Shape SyrkShapeOf(const NodeAttrs& attrs, const Shape& a) {
  la::CheckMatrices(attrs, a, "input 'A'", false);
  int64_t k = attrs.Params<LaSyrkParam>().transpose ? Dim(a, 1) : Dim(a, 2);
  return la::ReplaceTail(a, 2, {k, k});
}

bool SyrkShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, SyrkShapeOf(attrs, (*in)[0]), "output");
  return true;
}

void SyrkCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LaSyrkParam>();
  int64_t r = Dim(in[0].shape, 2), c = Dim(in[0].shape, 1), batch = la::BatchOf(in[0].shape);
  int64_t k = p.transpose ? c : r, inner = p.transpose ? r : c;
  la::ForEachMatrix(batch, 1.0 * k * k * inner, [&](int64_t b) -> int64_t {
    std::vector<double> a = Load(in[0], b, r * c);
    std::vector<double> y = MatMul(a, p.transpose, a, !p.transpose, k, k, inner);
    Scale(&y, p.alpha);
    Save(out[0], req[0], b, k * k, y.data());
    return 0;
  });
}

// Inputs (dOut, A): dA = alpha (G + G^T) A, or alpha A (G + G^T) when transposed.
bool SyrkBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, SyrkShapeOf(attrs, (*in)[1]), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

void SyrkBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LaSyrkParam>();
  int64_t r = Dim(in[1].shape, 2), c = Dim(in[1].shape, 1), batch = la::BatchOf(in[1].shape);
  int64_t k = p.transpose ? c : r;
  la::ForEachMatrix(batch, 2.0 * r * c * k, [&](int64_t b) -> int64_t {
    std::vector<double> g = Load(in[0], b, k * k), a = Load(in[1], b, r * c);
    std::vector<double> s(g.size());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) s[i * k + j] = g[i * k + j] + g[j * k + i];
    std::vector<double> da = p.transpose ? MatMul(a, false, s, false, r, c, c) : MatMul(s, false, a, false, r, c, r);
    Scale(&da, p.alpha);
    Save(out[0], req[0], b, r * c, da.data());
    return 0;
  });
}

}  // namespace

WEFT_REGISTER_OP(_linalg_potrf)
    .Describe(
        "Performs Cholesky factorization of a symmetric positive-definite matrix: B with A = B B^T (lower=True; B "
        "lower triangular) or A = B^T B (lower=False; B upper triangular). Only the triangle of A named by `lower` "
        "is read. Inputs of dimension n > 2 are batches on the trailing two dimensions. A matrix that is not "
        "positive definite is an error. Supports float32 and float64.")
    .AddAlias("linalg_potrf")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices to be decomposed")
    .SetParams<LaCholeskyParam>()
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PotrfCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_potrf", {a.out_grads[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_potrf)
    .Describe("Gradient of _linalg_potrf: (out_grad, B) -> dA, symmetric.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the Cholesky factor")
    .AddArgument("B", "NDArray-or-Symbol", "The Cholesky factor (the forward output)")
    .SetParams<LaCholeskyParam>()
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PotrfBackwardCompute);

WEFT_REGISTER_OP(_linalg_potri)
    .Describe(
        "Performs matrix inversion from a Cholesky factorization: for a triangular A with positive diagonal, out = "
        "A^-T A^-1 (lower=True) or A^-1 A^-T (lower=False), the inverse of the matrix whose Cholesky factor A is. "
        "Inputs of dimension n > 2 are batches on the trailing two dimensions. A zero on the diagonal is an error. "
        "Supports float32 and float64.")
    .AddAlias("linalg_potri")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of lower triangular matrices")
    .SetParams<LaCholeskyParam>()
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PotriCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_linalg_potri", {a.out_grads[0], a.inputs[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_potri)
    .Describe("Gradient of _linalg_potri: (out_grad, A, out) -> dA, triangular like A.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input (the triangular factor)")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output (the inverse)")
    .SetParams<LaCholeskyParam>()
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PotriBackwardCompute);

WEFT_REGISTER_OP(_linalg_trmm)
    .Describe(
        "Performs multiplication with a triangular matrix: out = alpha * op(A) * B (rightside=False) or alpha * B * "
        "op(A) (rightside=True), op() the identity or the transpose (transpose); only the triangle of A named by "
        "`lower` is read. Inputs of dimension n > 2 are batches on the trailing two dimensions. Supports float32 "
        "and float64.")
    .AddAlias("linalg_trmm")
    .SetNumInputs(2)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of lower triangular matrices")
    .AddArgument("B", "NDArray-or-Symbol", "Tensor of matrices")
    .SetParams<LaTriangMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", TriangularShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{1, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TrmmCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_linalg_trmm", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_linalg_trmm)
    .Describe("Gradient of _linalg_trmm: (out_grad, A, B) -> (dA, dB).")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input A")
    .AddArgument("B", "NDArray-or-Symbol", "The forward input B")
    .SetParams<LaTriangMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", TriangularBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TrmmBackwardCompute);

WEFT_REGISTER_OP(_linalg_trsm)
    .Describe(
        "Solves a matrix equation with a triangular matrix: out with op(A) * out = alpha * B (rightside=False) or "
        "out * op(A) = alpha * B (rightside=True), op() the identity or the transpose (transpose); only the "
        "triangle of A named by `lower` is read. Inputs of dimension n > 2 are batches on the trailing two "
        "dimensions. Supports float32 and float64.")
    .AddAlias("linalg_trsm")
    .SetNumInputs(2)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of lower triangular matrices")
    .AddArgument("B", "NDArray-or-Symbol", "Tensor of matrices")
    .SetParams<LaTriangMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", TriangularShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{1, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TrsmCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_linalg_trsm", {a.out_grads[0], a.inputs[0], a.inputs[1], a.outputs[0]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_linalg_trsm)
    .Describe("Gradient of _linalg_trsm: (out_grad, A, B, out) -> (dA, dB).")
    .SetNumInputs(4)
    .SetNumOutputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input A")
    .AddArgument("B", "NDArray-or-Symbol", "The forward input B")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<LaTriangMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", TriangularBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TrsmBackwardCompute);

WEFT_REGISTER_OP(_linalg_sumlogdiag)
    .Describe(
        "Computes the sum of the natural logarithms of the diagonal elements of a square matrix; the result has "
        "shape (1,) for one matrix, the batch dimensions for a batch. Supports float32 and float64.")
    .AddAlias("linalg_sumlogdiag")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrices")
    .SetAttr<FInferShape>("FInferShape", SumLogDiagShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SumLogDiagCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_sumlogdiag", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_sumlogdiag)
    .Describe("Gradient of _linalg_sumlogdiag: (out_grad, A) -> dA, diagonal.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input")
    .SetAttr<FInferShape>("FInferShape", SumLogDiagBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SumLogDiagBackwardCompute);

WEFT_REGISTER_OP(_linalg_syrk)
    .Describe(
        "Multiplication of a matrix with its transpose: out = alpha * A * A^T (transpose=False) or alpha * A^T * A "
        "(transpose=True). Inputs of dimension n > 2 are batches on the trailing two dimensions. Supports float32 "
        "and float64.")
    .AddAlias("linalg_syrk")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices")
    .SetParams<LaSyrkParam>()
    .SetAttr<FInferShape>("FInferShape", SyrkShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SyrkCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_syrk", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_syrk)
    .Describe("Gradient of _linalg_syrk: (out_grad, A) -> dA.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input")
    .SetParams<LaSyrkParam>()
    .SetAttr<FInferShape>("FInferShape", SyrkBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SyrkBackwardCompute);

}  // namespace op
}  // namespace weft

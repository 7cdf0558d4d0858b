// The factorizing linalg operators: _linalg_gelqf (LQ), _linalg_syevd (symmetric
// eigendecomposition), _linalg_inverse, _linalg_det and _linalg_slogdet (through an LU
// factorization with partial pivoting), with their gradients.
//
// det and slogdet keep the LU factorization and its pivots as hidden outputs for their
// gradients, laid out as MXNet's (LAPACK getrf run on the row-major buffer, so on A^T): the
// LU output holds the factors of A^T in column-major order and the pivots are 1-based.
#include <cmath>
#include <limits>

#include "core/op/linalg/la_common.h"

namespace weft {
namespace op {
namespace {

using la::Load;
using la::Save;
using la::Transposed;

int64_t Dim(const Shape& s, int from_end) { return s[s.ndim() - from_end]; }

bool FloatTypes(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return la::FloatType(attrs, in, out);
}

std::vector<double> MatMul(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb, int64_t m,
                           int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n));
  la::MatMul(a.data(), ta, b.data(), tb, c.data(), m, n, k);
  return c;
}

std::vector<std::pair<int, int>> InplaceFirst(const NodeAttrs&) { return {{0, 0}}; }

// ---------------------------------------------------------------- gelqf
bool GelqfShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  const Shape& a = (*in)[0];
  la::CheckMatrices(attrs, a, "input 'A'", false);
  int64_t m = Dim(a, 2), n = Dim(a, 1);
  if (m > n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'A' (shape ", a.ToString(),
          ") must not have more rows than columns (", m, " > ", n, ")");
  AssignShape(attrs, out, 0, a, "output");
  AssignShape(attrs, out, 1, la::ReplaceTail(a, 2, {m, m}), "output");
  return true;
}

void GelqfCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  int64_t m = Dim(in[0].shape, 2), n = Dim(in[0].shape, 1), batch = la::BatchOf(in[0].shape);
  la::ForEachMatrix(batch, 4.0 * m * m * n, [&](int64_t b) -> int64_t {
    std::vector<double> a = Load(in[0], b, m * n), l(static_cast<size_t>(m * m)), q(static_cast<size_t>(m * n));
    la::LqFactor(a.data(), m, n, l.data(), q.data());
    Save(out[0], req[0], b, m * n, q.data());
    Save(out[1], req[1], b, m * m, l.data());
    return 0;
  });
}

// Inputs (dQ, dL, Q, L): dA = L^-T (dQ + sym(M) Q) with M = L^T dL - dQ Q^T and sym()
// mirroring the lower triangle onto the upper one.
bool GelqfBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[2].is_known()) return false;
  const Shape& q = (*in)[2];
  la::CheckMatrices(attrs, q, "input 'Q'", false);
  int64_t m = Dim(q, 2);
  if (m > Dim(q, 1))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'Q' (shape ", q.ToString(),
          ") must not have more rows than columns");
  AssignShape(attrs, in, 0, q, "input");
  AssignShape(attrs, in, 1, la::ReplaceTail(q, 2, {m, m}), "input");
  AssignShape(attrs, in, 3, la::ReplaceTail(q, 2, {m, m}), "input");
  AssignShape(attrs, out, 0, q, "output");
  return true;
}

void GelqfBackwardCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t m = Dim(in[2].shape, 2), n = Dim(in[2].shape, 1), batch = la::BatchOf(in[2].shape);
  la::ForEachMatrix(batch, 4.0 * m * m * n, [&](int64_t b) -> int64_t {
    std::vector<double> dq = Load(in[0], b, m * n), dl = Load(in[1], b, m * m), q = Load(in[2], b, m * n),
                        l = Load(in[3], b, m * m);
    la::KeepTriangle(l.data(), m, true);
    std::vector<double> mm = MatMul(l, true, dl, false, m, m, m);
    std::vector<double> dqq = MatMul(dq, false, q, true, m, m, n);
    for (size_t i = 0; i < mm.size(); ++i) mm[i] -= dqq[i];
    la::SymmetrizeFrom(mm.data(), m, true);
    la::MatMul(mm.data(), false, q.data(), false, dq.data(), m, n, m, true);
    std::vector<double> lt = Transposed(l.data(), m, m);
    la::SolveTriangular(lt.data(), false, dq.data(), m, n);
    Save(out[0], req[0], b, m * n, dq.data());
    return 0;
  });
}

// ---------------------------------------------------------------- syevd
bool SyevdShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  const Shape& a = (*in)[0];
  la::CheckMatrices(attrs, a, "input 'A'", true);
  AssignShape(attrs, out, 0, a, "output");
  AssignShape(attrs, out, 1, la::ReplaceTail(a, 1, {}), "output");
  return true;
}

void SyevdCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  int64_t n = Dim(in[0].shape, 1), nn = n * n, batch = la::BatchOf(in[0].shape);
  la::ForEachMatrix(batch, 20.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> a = Load(in[0], b, nn), u(static_cast<size_t>(nn)), w(static_cast<size_t>(n));
    la::SymmetrizeFrom(a.data(), n, true);
    la::SymmetricEigen(a.data(), n, u.data(), w.data());
    Save(out[0], req[0], b, nn, u.data());
    Save(out[1], req[1], b, n, w.data());
    return 0;
  });
}

// Inputs (dU, dL, U, L): dA = U^T Y U with X = dU U^T, Y symmetric, Y_ii = dL_i and, for
// i > j, Y_ij = (X_ij - X_ji) / (2 (L_i - L_j)), the eigengap kept above a tiny floor.
bool SyevdBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[2].is_known()) return false;
  const Shape& u = (*in)[2];
  la::CheckMatrices(attrs, u, "input 'U'", true);
  AssignShape(attrs, in, 0, u, "input");
  AssignShape(attrs, in, 1, la::ReplaceTail(u, 1, {}), "input");
  AssignShape(attrs, in, 3, la::ReplaceTail(u, 1, {}), "input");
  AssignShape(attrs, out, 0, u, "output");
  return true;
}

void SyevdBackwardCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = Dim(in[2].shape, 1), nn = n * n, batch = la::BatchOf(in[2].shape);
  double floor = in[2].dtype == DType::kFloat32 ? 1e-30 : 1e-100;
  la::ForEachMatrix(batch, 6.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> du = Load(in[0], b, nn), dl = Load(in[1], b, n), u = Load(in[2], b, nn),
                        l = Load(in[3], b, n);
    std::vector<double> x = MatMul(du, false, u, true, n, n, n), y(static_cast<size_t>(nn));
    for (int64_t i = 0; i < n; ++i) {
      y[i * n + i] = dl[i];
      for (int64_t j = 0; j < i; ++j) {
        double gap = std::max(l[i] - l[j], floor);
        y[i * n + j] = y[j * n + i] = (x[i * n + j] - x[j * n + i]) / (2.0 * gap);
      }
    }
    std::vector<double> t = MatMul(u, true, y, false, n, n, n);
    std::vector<double> da = MatMul(t, false, u, false, n, n, n);
    Save(out[0], req[0], b, nn, da.data());
    return 0;
  });
}

// ---------------------------------------------------------------- inverse
bool SquareSameShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!SameShape(attrs, in, out)) return false;
  la::CheckMatrices(attrs, (*in)[0], InputName(attrs, 0), true);
  return true;
}

void InverseCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = Dim(in[0].shape, 1), nn = n * n, batch = la::BatchOf(in[0].shape), failed = 0;
  int64_t code = la::ForEachMatrix(batch, 2.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> a = Load(in[0], b, nn), inv(static_cast<size_t>(nn));
    std::vector<int32_t> piv(static_cast<size_t>(n));
    if (int64_t info = la::LuFactor(a.data(), n, piv.data())) return info;
    la::LuInverse(a.data(), piv.data(), n, inv.data());
    Save(out[0], req[0], b, nn, inv.data());
    return 0;
  }, &failed);
  if (code != 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ", la::WhichMatrix(failed, batch),
          " is singular (its LU factorization has a zero pivot in column ", code - 1, "), so it has no inverse");
}

// Inputs (dOut, Out): dA = -Out^T dOut Out^T.
void InverseBackwardCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = Dim(in[1].shape, 1), nn = n * n, batch = la::BatchOf(in[1].shape);
  la::ForEachMatrix(batch, 4.0 * nn * n, [&](int64_t b) -> int64_t {
    std::vector<double> g = Load(in[0], b, nn), inv = Load(in[1], b, nn);
    std::vector<double> t = MatMul(g, false, inv, true, n, n, n);
    std::vector<double> da = MatMul(inv, true, t, false, n, n, n);
    for (double& v : da) v = -v;
    Save(out[0], req[0], b, nn, da.data());
    return 0;
  });
}

// ---------------------------------------------------------------- det / slogdet
// `values` visible outputs (det; or sign, logabsdet), then LU and the pivots.
bool DetShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, int values) {
  if (!(*in)[0].is_known()) return false;
  const Shape& a = (*in)[0];
  la::CheckMatrices(attrs, a, "input 'A'", true);
  for (int i = 0; i < values; ++i) AssignShape(attrs, out, i, la::PerMatrixShape(a), "output");
  AssignShape(attrs, out, values, a, "output");
  AssignShape(attrs, out, values + 1, la::ReplaceTail(a, 1, {}), "output");
  return true;
}

// Factorizes matrix b of in into the LU and pivot outputs; returns log|det| and the sign.
void Factorize(const TBlob& in, const TBlob& lu, const TBlob& piv, OpReq lu_req, OpReq piv_req, int64_t b,
               int64_t n, double* logabs, double* sign) {
  int64_t nn = n * n;
  std::vector<double> a = Load(in, b, nn);
  std::vector<double> t = Transposed(a.data(), n, n);
  std::vector<int32_t> p(static_cast<size_t>(n));
  la::LuFactor(t.data(), n, p.data());
  double s = 1.0, l = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    if (p[j] != j + 1) s = -s;
    double d = t[j * n + j];
    s *= d > 0.0 ? 1.0 : (d < 0.0 ? -1.0 : 0.0);
    l += std::log(std::fabs(d));
  }
  *logabs = l;
  *sign = s == 0.0 ? 0.0 : s;  // no -0 for a singular matrix with an odd permutation
  std::vector<double> stored = Transposed(t.data(), n, n);
  Save(lu, lu_req, b, nn, stored.data());
  // Pivots are indices: accumulating them would mean nothing, so any request writes.
  if (piv_req != OpReq::kNullOp) std::copy(p.begin(), p.end(), piv.ptr<int32_t>() + b * n);
}

void DetCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  int64_t n = Dim(in[0].shape, 1), batch = la::BatchOf(in[0].shape);
  la::ForEachMatrix(batch, 1.0 * n * n * n, [&](int64_t b) -> int64_t {
    double logabs, sign;
    Factorize(in[0], out[1], out[2], req[1], req[2], b, n, &logabs, &sign);
    double det = sign * std::exp(logabs);
    Save(out[0], req[0], b, 1, &det);
    return 0;
  });
}

void SlogdetCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                    const std::vector<TBlob>& out) {
  int64_t n = Dim(in[0].shape, 1), batch = la::BatchOf(in[0].shape);
  la::ForEachMatrix(batch, 1.0 * n * n * n, [&](int64_t b) -> int64_t {
    double logabs, sign;
    Factorize(in[0], out[2], out[3], req[2], req[3], b, n, &logabs, &sign);
    Save(out[0], req[0], b, 1, &sign);
    Save(out[1], req[1], b, 1, &logabs);
    return 0;
  });
}

// Backward inputs: (d value, `values` forward values, LU, pivots).
bool DetBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, int values) {
  const Shape& lu = (*in)[1 + values];
  if (!lu.is_known()) return false;
  la::CheckMatrices(attrs, lu, InputName(attrs, 1 + values), true);
  for (int i = 0; i <= values; ++i) AssignShape(attrs, in, i, la::PerMatrixShape(lu), "input");
  AssignShape(attrs, in, 2 + values, la::ReplaceTail(lu, 1, {}), "input");
  AssignShape(attrs, out, 0, lu, "output");
  return true;
}

// dA = scale_b * A^-T for every matrix b whose determinant is not zero (zero for the others),
// A^-T being the inverse of the factorized A^T. `scale(b)` returns the factor, or NaN to mark
// a singular matrix.
template <typename Scale>
void DetGradient(const NodeAttrs& attrs, const TBlob& lu, const TBlob& piv, OpReq req, const TBlob& out,
                 Scale&& scale) {
  if (req == OpReq::kNullOp) return;
  int64_t n = Dim(lu.shape, 1), nn = n * n, batch = la::BatchOf(lu.shape);
  const int32_t* p = piv.ptr<int32_t>();
  for (int64_t i = 0; i < batch * n; ++i)
    if (p[i] < 1 || p[i] > n)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': pivot ", i % n, " of matrix ", i / n, " is ", p[i],
            ", outside [1, ", n, "]; the pivots must come from the forward operator");
  la::ForEachMatrix(batch, 2.0 * nn * n, [&](int64_t b) -> int64_t {
    double s = scale(b);
    std::vector<double> da(static_cast<size_t>(nn), 0.0);
    if (!std::isnan(s)) {
      std::vector<double> stored = Load(lu, b, nn);
      std::vector<double> t = Transposed(stored.data(), n, n);
      la::LuInverse(t.data(), p + b * n, n, da.data());
      for (double& v : da) v *= s;
    }
    Save(out, req, b, nn, da.data());
    return 0;
  });
}

// Inputs (ddet, det, LU, pivots): dA = ddet * det * A^-T.
void DetBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  DetGradient(attrs, in[2], in[3], req[0], out[0], [&](int64_t b) {
    double det = Load(in[1], b, 1)[0];
    return det == 0.0 ? std::numeric_limits<double>::quiet_NaN() : Load(in[0], b, 1)[0] * det;
  });
}

// Inputs (dlogabsdet, sign, logabsdet, LU, pivots): dA = dlogabsdet * A^-T.
void SlogdetBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  DetGradient(attrs, in[3], in[4], req[0], out[0], [&](int64_t b) {
    double logabs = Load(in[2], b, 1)[0];
    return std::isinf(logabs) && logabs < 0 ? std::numeric_limits<double>::quiet_NaN() : Load(in[0], b, 1)[0];
  });
}

}  // namespace

WEFT_REGISTER_OP(_linalg_gelqf)
    .Describe(
        "LQ factorization of a general matrix: for A of shape (x, y) with x <= y and full rank, outputs Q (x, y) with "
        "orthonormal rows and L (x, x) lower triangular with A = L * Q, signs as LAPACK's gelqf. Inputs of "
        "dimension n > 2 are batches on the trailing two dimensions. Supports float32 and float64.")
    .AddAlias("linalg_gelqf")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices to be factorized")
    .SetAttr<FListNames>("FListOutputNames", [](const NodeAttrs&) { return std::vector<std::string>{"Q", "L"}; })
    .SetAttr<FInferShape>("FInferShape", GelqfShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GelqfCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_gelqf",
                                         {a.out_grads[0], a.out_grads[1], a.outputs[0], a.outputs[1]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_gelqf)
    .Describe("Gradient of _linalg_gelqf: (dQ, dL, Q, L) -> dA.")
    .SetNumInputs(4)
    .AddArgument("dQ", "NDArray-or-Symbol", "Gradient of Q")
    .AddArgument("dL", "NDArray-or-Symbol", "Gradient of L")
    .AddArgument("Q", "NDArray-or-Symbol", "The forward output Q")
    .AddArgument("L", "NDArray-or-Symbol", "The forward output L")
    .SetAttr<FInferShape>("FInferShape", GelqfBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GelqfBackwardCompute);

WEFT_REGISTER_OP(_linalg_syevd)
    .Describe(
        "Eigendecomposition of a symmetric matrix (only its lower triangle is read): U (x, x) orthonormal with the "
        "eigenvectors as rows and L (x,) the eigenvalues in ascending order, so that U * A = diag(L) * U; each row "
        "of U has its entry of largest magnitude positive. Inputs of dimension n > 2 are batches on the trailing "
        "two dimensions. Gradients need distinct eigenvalues. Supports float32 and float64.")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices to be factorized")
    .SetAttr<FListNames>("FListOutputNames", [](const NodeAttrs&) { return std::vector<std::string>{"U", "L"}; })
    .SetAttr<FInferShape>("FInferShape", SyevdShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SyevdCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_syevd",
                                         {a.out_grads[0], a.out_grads[1], a.outputs[0], a.outputs[1]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_syevd)
    .Describe("Gradient of _linalg_syevd: (dU, dL, U, L) -> dA, symmetric.")
    .SetNumInputs(4)
    .AddArgument("dU", "NDArray-or-Symbol", "Gradient of U")
    .AddArgument("dL", "NDArray-or-Symbol", "Gradient of L")
    .AddArgument("U", "NDArray-or-Symbol", "The forward output U")
    .AddArgument("L", "NDArray-or-Symbol", "The forward output L")
    .SetAttr<FInferShape>("FInferShape", SyevdBackwardShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SyevdBackwardCompute);

WEFT_REGISTER_OP(_linalg_inverse)
    .Describe(
        "Computes the inverse of a square matrix (LU factorization with partial pivoting); a singular matrix is an "
        "error. Inputs of dimension n > 2 are batches on the trailing two dimensions. Supports float32 and "
        "float64.")
    .AddAlias("linalg_inverse")
    .AddAlias("_npi_inv")
    .SetNumInputs(1)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrix")
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<FInplaceOption>("FInplaceOption", InplaceFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", InverseCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_inverse", {a.out_grads[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_inverse)
    .Describe("Gradient of _linalg_inverse: (out_grad, out) -> dA.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output (the inverse)")
    .SetAttr<FInferShape>("FInferShape", SquareSameShape)
    .SetAttr<FInferType>("FInferType", FloatTypes)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", InverseBackwardCompute);

WEFT_REGISTER_OP(_linalg_det)
    .Describe(
        "Computes the determinant of a square matrix (LU factorization with partial pivoting); shape (1,) for one "
        "matrix, the batch dimensions for a batch. No gradient flows back through a zero determinant. Supports "
        "float32 and float64.")
    .AddAlias("linalg_det")
    .AddAlias("_npi_det")
    .SetNumInputs(1)
    .SetNumOutputs(3)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrix")
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "LU", "pivot"}; })
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return DetShape(attrs, in, out, 1);
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return la::FloatType(attrs, in, out, {}, {2});
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DetCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_linalg_det",
                                         {a.out_grads[0], a.outputs[0], a.outputs[1], a.outputs[2]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_det)
    .Describe("Gradient of _linalg_det: (out_grad, det, LU, pivot) -> dA.")
    .SetNumInputs(4)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the determinant")
    .AddArgument("det", "NDArray-or-Symbol", "The forward determinant")
    .AddArgument("LU", "NDArray-or-Symbol", "The forward LU factorization (hidden output)")
    .AddArgument("pivot", "NDArray-or-Symbol", "The forward pivots (hidden output)")
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return DetBackwardShape(attrs, in, out, 1);
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return la::FloatType(attrs, in, out, {3}, {});
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DetBackwardCompute);

WEFT_REGISTER_OP(_linalg_slogdet)
    .Describe(
        "Computes the sign and the natural logarithm of the absolute value of the determinant of a square matrix "
        "(sign 0 and logabsdet -inf for a singular one); shapes (1,) for one matrix, the batch dimensions for a "
        "batch. The gradient flows through logabsdet only, and not through a zero determinant. Supports float32 "
        "and float64.")
    .AddAlias("linalg_slogdet")
    .AddAlias("_npi_slogdet")
    .SetNumInputs(1)
    .SetNumOutputs(4)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of square matrix")
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 2; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"sign", "logabsdet", "LU", "pivot"}; })
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return DetShape(attrs, in, out, 2);
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return la::FloatType(attrs, in, out, {}, {3});
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SlogdetCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op(
          "_backward_linalg_slogdet", {a.out_grads[1], a.outputs[0], a.outputs[1], a.outputs[2], a.outputs[3]},
          attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_linalg_slogdet)
    .Describe("Gradient of _linalg_slogdet: (out_grad of logabsdet, sign, logabsdet, LU, pivot) -> dA.")
    .SetNumInputs(5)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of logabsdet")
    .AddArgument("sign", "NDArray-or-Symbol", "The forward sign")
    .AddArgument("logabsdet", "NDArray-or-Symbol", "The forward logabsdet")
    .AddArgument("LU", "NDArray-or-Symbol", "The forward LU factorization (hidden output)")
    .AddArgument("pivot", "NDArray-or-Symbol", "The forward pivots (hidden output)")
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            return DetBackwardShape(attrs, in, out, 2);
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return la::FloatType(attrs, in, out, {4}, {});
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SlogdetBackwardCompute);

}  // namespace op
}  // namespace weft

// _linalg_gemm (alpha op(A) op(B) + beta C) and _linalg_gemm2 (alpha op(A) op(B)) on batches
// of matrices, with MXNet's `axis` for the row axis, on the shared GEMM (gemm.h: oneDNN for
// float32). Their gradients are products of the same kind.
#include <cstring>

#include "core/op/linalg/gemm.h"
#include "core/op/linalg/la_common.h"

namespace weft {
namespace op {
namespace {

struct GemmFlags {
  bool ta, tb;
  double alpha, beta;
  int axis;
};

GemmFlags FlagsOf(const NodeAttrs& attrs) {
  if (attrs.op->name == "_linalg_gemm" || attrs.op->name == "_backward_linalg_gemm") {
    const auto& p = attrs.Params<LaMatrixMacParam>();
    return {p.transpose_a, p.transpose_b, p.alpha, p.beta, p.axis};
  }
  const auto& p = attrs.Params<LaMatrixMultParam>();
  return {p.transpose_a, p.transpose_b, p.alpha, 0.0, p.axis};
}

// A tensor seen as (outer, rows, inner, cols): matrix (o, i) starts at (o * rows * inner + i)
// * cols with rows inner * cols elements apart. With the default axis, inner is 1.
struct Layout {
  int64_t outer = 1, rows = 0, inner = 1, cols = 0;
};

Layout LayoutOf(const Shape& s, int axis) {
  Layout l;
  int nd = s.ndim();
  l.outer = s.ProdRange(0, axis);
  l.rows = s[axis];
  l.inner = s.ProdRange(axis + 1, nd - 1);
  l.cols = s[nd - 1];
  return l;
}

int RowAxis(const NodeAttrs& attrs, int axis, int ndim) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim - 1)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': parameter 'axis' = ", axis,
          " is not a valid row axis for inputs with ", ndim, " dimensions (it must be in [", -ndim, ", ", ndim - 2,
          "] and not the last axis)");
  return a;
}

// The output shape of op(A) op(B) for inputs of shapes a and b.
Shape ProductShape(const NodeAttrs& attrs, const Shape& a, const Shape& b) {
  GemmFlags f = FlagsOf(attrs);
  if (a.ndim() < 2 || a.ndim() != b.ndim())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected inputs A and B with the same number (at least 2) of dimensions, got shapes ", a.ToString(),
          " and ", b.ToString());
  int nd = a.ndim(), ax = RowAxis(attrs, f.axis, nd);
  for (int d = 0; d < nd - 1; ++d)
    if (d != ax && a[d] != b[d])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': shapes ", a.ToString(), " and ", b.ToString(),
            " must agree on every dimension except the row axis ", ax, " and the last");
  int64_t ka = f.ta ? a[ax] : a[nd - 1], kb = f.tb ? b[nd - 1] : b[ax];
  if (ka != kb)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': shapes ", a.ToString(), " and ", b.ToString(),
          " do not fit a matrix product: op(A) has ", ka, " columns but op(B) has ", kb, " rows (transpose_a=",
          f.ta ? "True" : "False", ", transpose_b=", f.tb ? "True" : "False", ")");
  std::vector<int64_t> o(a.begin(), a.end());
  o[ax] = f.ta ? a[nd - 1] : a[ax];
  o[nd - 1] = f.tb ? b[ax] : b[nd - 1];
  return Shape(o.begin(), o.end());
}

// out = op(x) op(y) (+ out when `accumulate`) for every matrix pair, x, y and out laid out
// with the same row axis.
void Product(DType dt, int axis, const TBlob& x, bool tx, const TBlob& y, bool ty, void* out, const Shape& out_shape,
             bool accumulate, const char* name) {
  Layout lx = LayoutOf(x.shape, axis), ly = LayoutOf(y.shape, axis), lo = LayoutOf(out_shape, axis);
  int64_t m = lo.rows, n = lo.cols, k = tx ? lx.rows : lx.cols;
  size_t es = DTypeSize(dt);
  for (int64_t o = 0; o < lo.outer; ++o) {
    GemmOperand ga{static_cast<const char*>(x.dptr) + o * lx.rows * lx.inner * lx.cols * es, lx.inner * lx.cols,
                   lx.cols, tx};
    GemmOperand gb{static_cast<const char*>(y.dptr) + o * ly.rows * ly.inner * ly.cols * es, ly.inner * ly.cols,
                   ly.cols, ty};
    Gemm(dt, m, n, k, ga, gb, accumulate ? 1.0 : 0.0, static_cast<char*>(out) + o * m * lo.inner * n * es,
         lo.inner * n, n, lo.inner, name);
  }
}

// out = alpha * p (+ beta * c when c is given), honouring req.
void Combine(const TBlob& out, OpReq req, const void* p, double alpha, const TBlob* c, double beta) {
  if (req == OpReq::kNullOp) return;
  WEFT_LA_TYPE_SWITCH(out.dtype, T, {
    const T* pp = static_cast<const T*>(p);
    const T* cp = c ? c->ptr<T>() : nullptr;
    T* y = out.ptr<T>();
    ParallelFor(out.Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = alpha * static_cast<double>(pp[i]);
        if (cp) v += beta * static_cast<double>(cp[i]);
        Store(y + i, req, v);
      }
    });
  });
}

int AxisOf(const NodeAttrs& attrs, int ndim) { return RowAxis(attrs, FlagsOf(attrs).axis, ndim); }

bool GemmShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  Shape o = ProductShape(attrs, (*in)[0], (*in)[1]);
  AssignShape(attrs, out, 0, o, "output");
  if (in->size() == 3) AssignShape(attrs, in, 2, o, "input");
  return true;
}

void GemmCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp || out[0].Size() == 0) return;
  GemmFlags f = FlagsOf(attrs);
  int ax = AxisOf(attrs, in[0].ndim());
  bool mac = in.size() == 3;
  if (!mac && f.alpha == 1.0) {
    Product(in[0].dtype, ax, in[0], f.ta, in[1], f.tb, out[0].dptr, out[0].shape, req[0] == OpReq::kAddTo,
            attrs.op->name.c_str());
    return;
  }
  std::vector<char> tmp(out[0].Bytes());
  Product(in[0].dtype, ax, in[0], f.ta, in[1], f.tb, tmp.data(), out[0].shape, false, attrs.op->name.c_str());
  Combine(out[0], req[0], tmp.data(), f.alpha, mac ? &in[2] : nullptr, f.beta);
}

// Inputs (dOut, A, B[, C]); outputs (dA, dB[, dC]). With out = alpha op(A) op(B) + beta C:
//   dA = alpha dOut op(B)^T, or alpha op(B) dOut^T when A is used transposed;
//   dB = alpha op(A)^T dOut, or alpha dOut^T op(A) when B is used transposed; dC = beta dOut.
bool GemmBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  Shape o = ProductShape(attrs, (*in)[1], (*in)[2]);
  AssignShape(attrs, in, 0, o, "input");
  if (in->size() == 4) AssignShape(attrs, in, 3, o, "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  if (out->size() == 3) AssignShape(attrs, out, 2, o, "output");
  return true;
}

void GemmBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  GemmFlags f = FlagsOf(attrs);
  const TBlob &g = in[0], &a = in[1], &b = in[2];
  int ax = AxisOf(attrs, a.ndim());
  const char* name = attrs.op->name.c_str();
  if (req[0] != OpReq::kNullOp && out[0].Size() > 0) {
    std::vector<char> tmp(out[0].Bytes());
    if (f.ta) Product(g.dtype, ax, b, f.tb, g, true, tmp.data(), a.shape, false, name);
    else Product(g.dtype, ax, g, false, b, !f.tb, tmp.data(), a.shape, false, name);
    Combine(out[0], req[0], tmp.data(), f.alpha, nullptr, 0.0);
  }
  if (req[1] != OpReq::kNullOp && out[1].Size() > 0) {
    std::vector<char> tmp(out[1].Bytes());
    if (f.tb) Product(g.dtype, ax, g, true, a, f.ta, tmp.data(), b.shape, false, name);
    else Product(g.dtype, ax, a, !f.ta, g, false, tmp.data(), b.shape, false, name);
    Combine(out[1], req[1], tmp.data(), f.alpha, nullptr, 0.0);
  }
  if (out.size() == 3 && req[2] != OpReq::kNullOp) Combine(out[2], req[2], g.dptr, f.beta, nullptr, 0.0);
}

bool GemmType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return la::FloatType(attrs, in, out);
}

}  // namespace

WEFT_REGISTER_OP(_linalg_gemm)
    .Describe(
        "Performs general matrix multiplication and accumulation: out = alpha * op(A) * op(B) + beta * C, op() the "
        "identity or the transpose (transpose_a, transpose_b). Inputs of dimension n > 2 are batches of matrices "
        "that agree on the leading dimensions; the rows lie on `axis` (the second to last by default) and the "
        "columns on the last axis. Supports float32 and float64.")
    .AddAlias("linalg_gemm")
    .SetNumInputs(3)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices")
    .AddArgument("B", "NDArray-or-Symbol", "Tensor of input matrices")
    .AddArgument("C", "NDArray-or-Symbol", "Tensor of input matrices")
    .SetParams<LaMatrixMacParam>()
    .SetAttr<FInferShape>("FInferShape", GemmShape)
    .SetAttr<FInferType>("FInferType", GemmType)
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{2, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GemmCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_linalg_gemm", {a.out_grads[0], a.inputs[0], a.inputs[1], a.inputs[2]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_linalg_gemm)
    .Describe("Gradient of _linalg_gemm: (out_grad, A, B, C) -> (dA, dB, dC).")
    .SetNumInputs(4)
    .SetNumOutputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input A")
    .AddArgument("B", "NDArray-or-Symbol", "The forward input B")
    .AddArgument("C", "NDArray-or-Symbol", "The forward input C")
    .SetParams<LaMatrixMacParam>()
    .SetAttr<FInferShape>("FInferShape", GemmBackwardShape)
    .SetAttr<FInferType>("FInferType", GemmType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GemmBackwardCompute);

WEFT_REGISTER_OP(_linalg_gemm2)
    .Describe(
        "Performs general matrix multiplication: out = alpha * op(A) * op(B), op() the identity or the transpose "
        "(transpose_a, transpose_b). Inputs of dimension n > 2 are batches of matrices that agree on the leading "
        "dimensions; the rows lie on `axis` (the second to last by default) and the columns on the last axis. "
        "Supports float32 and float64.")
    .AddAlias("linalg_gemm2")
    .SetNumInputs(2)
    .AddArgument("A", "NDArray-or-Symbol", "Tensor of input matrices")
    .AddArgument("B", "NDArray-or-Symbol", "Tensor of input matrices")
    .SetParams<LaMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", GemmShape)
    .SetAttr<FInferType>("FInferType", GemmType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GemmCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_linalg_gemm2", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_linalg_gemm2)
    .Describe("Gradient of _linalg_gemm2: (out_grad, A, B) -> (dA, dB).")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("A", "NDArray-or-Symbol", "The forward input A")
    .AddArgument("B", "NDArray-or-Symbol", "The forward input B")
    .SetParams<LaMatrixMultParam>()
    .SetAttr<FInferShape>("FInferShape", GemmBackwardShape)
    .SetAttr<FInferType>("FInferType", GemmType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GemmBackwardCompute);

}  // namespace op
}  // namespace weft

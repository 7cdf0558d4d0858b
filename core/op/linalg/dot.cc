// dot and its gradient.
#include "core/op/linalg/dot.h"

#include "core/op/op_util.h"
#include "core/op/work_estimate.h"

namespace weft {
namespace op {
namespace {

std::string Flags(const DotParam& p) {
  return std::string(" (transpose_a=") + (p.transpose_a ? "True" : "False") +
         ", transpose_b=" + (p.transpose_b ? "True" : "False") + ")";
}

bool DotShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, PlanDot(attrs, (*in)[0], (*in)[1]).out, "output");
  return true;
}

void DotCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  DotPlan p = PlanDot(attrs, in[0].shape, in[1].shape);
  p.a.data = in[0].dptr;
  p.b.data = in[1].dptr;
  Gemm(in[0].dtype, p.m, p.n, p.k, p.a, p.b, req[0] == OpReq::kAddTo ? 1.0 : 0.0, out[0].dptr, p.n, 0, 1,
       attrs.op->name.c_str());
}

// With out = op(A) op(B) and G its gradient (m x n):
//   dA = G op(B)^T, or op(B) G^T when A is used transposed;
//   dB = op(A)^T G, or G^T op(A) when B is used transposed.
void DotBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  DotPlan p = PlanDot(attrs, in[1].shape, in[2].shape);
  const char* name = attrs.op->name.c_str();
  DType dt = in[0].dtype;
  GemmOperand g{in[0].dptr, p.n, 0, false};
  GemmOperand a = p.a, b = p.b;
  a.data = in[1].dptr;
  b.data = in[2].dptr;
  if (req[0] != OpReq::kNullOp) {
    double beta = req[0] == OpReq::kAddTo ? 1.0 : 0.0;
    if (!a.transpose) {
      GemmOperand bt = b;
      bt.transpose = !b.transpose;
      Gemm(dt, p.m, p.k, p.n, g, bt, beta, out[0].dptr, a.ld, 0, 1, name);
    } else {
      GemmOperand gt = g;
      gt.transpose = true;
      Gemm(dt, p.k, p.m, p.n, b, gt, beta, out[0].dptr, a.ld, 0, 1, name);
    }
  }
  if (req[1] != OpReq::kNullOp) {
    double beta = req[1] == OpReq::kAddTo ? 1.0 : 0.0;
    if (!b.transpose) {
      GemmOperand at = a;
      at.transpose = !a.transpose;
      Gemm(dt, p.k, p.n, p.m, at, g, beta, out[1].dptr, b.ld, 0, 1, name);
    } else {
      GemmOperand gt = g;
      gt.transpose = true;
      Gemm(dt, p.n, p.k, p.m, gt, a, beta, out[1].dptr, b.ld, 0, 1, name);
    }
  }
}

// Forward: one product of m x k by k x n. Backward: two of the same size (the gradients of
// both inputs).
double DotNs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  DotPlan p = PlanDot(attrs, in[0].shape, in[1].shape);
  return MatmulNs(static_cast<double>(p.m) * p.n * p.k, in[0].dtype) + StreamNs(in, out);
}

double DotBackwardNs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  DotPlan p = PlanDot(attrs, in[1].shape, in[2].shape);
  return 2.0 * MatmulNs(static_cast<double>(p.m) * p.n * p.k, in[0].dtype) + StreamNs(in, out);
}

bool DotBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  AssignShape(attrs, in, 0, PlanDot(attrs, (*in)[1], (*in)[2]).out, "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  return true;
}

}  // namespace

DotPlan PlanDot(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs) {
  const auto& prm = attrs.Params<DotParam>();
  bool ta = prm.transpose_a, tb = prm.transpose_b;
  int la = lhs.ndim(), lb = rhs.ndim();
  if (la < 1 || lb < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected inputs with at least 1 dimension, got shapes ",
          lhs.ToString(), " and ", rhs.ToString());
  if (la == 1 && lb == 1 && (ta || tb))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': cannot transpose vectors, got shapes ", lhs.ToString(),
          " and ", rhs.ToString(), Flags(prm));
  // Each input as a matrix in memory: rows x cols.
  int64_t ra = ta ? lhs[0] : lhs.ProdRange(0, la - 1);
  int64_t ca = ta ? lhs.ProdRange(1, la) : lhs[la - 1];
  int64_t rb = tb ? rhs.ProdRange(0, lb - 1) : rhs[0];
  int64_t cb = tb ? rhs[lb - 1] : rhs.ProdRange(1, lb);
  DotPlan p;
  p.m = ta ? ca : ra;
  p.k = ta ? ra : ca;
  int64_t kb = tb ? cb : rb;
  p.n = tb ? rb : cb;
  if (p.k != kb)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': shapes ", lhs.ToString(), " and ", rhs.ToString(),
          " do not fit: the contracted dimension is ", p.k, " in the first input and ", kb, " in the second",
          Flags(prm));
  p.a = GemmOperand{nullptr, ca, 0, ta};
  p.b = GemmOperand{nullptr, cb, 0, tb};
  std::vector<int64_t> dims;
  if (la > 1) {
    if (ta) dims.insert(dims.end(), lhs.begin() + 1, lhs.end());
    else dims.insert(dims.end(), lhs.begin(), lhs.end() - 1);
  }
  if (lb > 1) {
    if (tb) dims.insert(dims.end(), rhs.begin(), rhs.end() - 1);
    else dims.insert(dims.end(), rhs.begin() + 1, rhs.end());
  }
  if (dims.empty()) dims.push_back(1);
  p.out = Shape(dims);
  return p;
}

WEFT_REGISTER_OP(dot)
    .Describe(
        "Dot product of two arrays: the last axis of lhs contracts with the first axis of rhs (matrix product for "
        "2-D inputs, inner product with shape (1,) for two vectors). transpose_a / transpose_b use an input "
        "transposed (for N-D inputs: the first axis of lhs, the last axis of rhs contract instead).")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "The first input")
    .AddArgument("rhs", "NDArray-or-Symbol", "The second input")
    .SetParams<DotParam>()
    .SetAttr<FInferShape>("FInferShape", DotShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DotCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", DotNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_dot", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_dot)
    .Describe("Gradients of dot with respect to both inputs.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("lhs", "NDArray-or-Symbol", "The forward first input")
    .AddArgument("rhs", "NDArray-or-Symbol", "The forward second input")
    .SetParams<DotParam>()
    .SetAttr<FInferShape>("FInferShape", DotBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", DotBackward)
    .SetAttr<FEstimateNs>("FEstimateNs", DotBackwardNs);

}  // namespace op
}  // namespace weft

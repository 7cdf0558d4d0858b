// batch_dot: matrix products of matching matrices in two batches; its gradient is more
// batch_dot calls with the transpose flags rearranged.
#include "core/op/linalg/dot.h"
#include "core/op/op_util.h"
#include "core/op/work_estimate.h"

namespace weft {
namespace op {
namespace {

bool BatchDotShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, PlanBatchDot(attrs, (*in)[0], (*in)[1]).out, "output");
  return true;
}

void BatchDotCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  DotPlan p = PlanBatchDot(attrs, in[0].shape, in[1].shape);
  p.a.data = in[0].dptr;
  p.b.data = in[1].dptr;
  Gemm(in[0].dtype, p.m, p.n, p.k, p.a, p.b, req[0] == OpReq::kAddTo ? 1.0 : 0.0, out[0].dptr, p.n, p.m * p.n,
       p.batch, attrs.op->name.c_str());
}

// batch products of m x k by k x n, each with a cost of its own beyond its arithmetic. (The
// gradient is batch_dot calls, which estimate themselves.)
double BatchDotNs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  DotPlan p = PlanBatchDot(attrs, in[0].shape, in[1].shape);
  return MatmulNs(static_cast<double>(p.batch) * p.m * p.n * p.k, in[0].dtype) +
         static_cast<double>(p.batch) * kNsPerBatchProduct + StreamNs(in, out);
}

KwArgs Flags(bool ta, bool tb) {
  return {{"transpose_a", ta ? "True" : "False"}, {"transpose_b", tb ? "True" : "False"}};
}

// With out = op(A) op(B) and G its gradient, per batch:
//   dA = G op(B)^T, or op(B) G^T when A is used transposed;
//   dB = op(A)^T G, or G^T op(A) when B is used transposed.
std::vector<GradValue> BatchDotGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& args) {
  const auto& p = attrs.Params<DotParam>();
  bool ta = p.transpose_a, tb = p.transpose_b;
  GradValue g = args.out_grads[0], lhs = args.inputs[0], rhs = args.inputs[1];
  GradValue da = ta ? b.Op("batch_dot", {rhs, g}, Flags(tb, true)) : b.Op("batch_dot", {g, rhs}, Flags(false, !tb));
  GradValue db = tb ? b.Op("batch_dot", {g, lhs}, Flags(true, ta)) : b.Op("batch_dot", {lhs, g}, Flags(!ta, false));
  return {da, db};
}

}  // namespace

DotPlan PlanBatchDot(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs) {
  const auto& prm = attrs.Params<DotParam>();
  bool ta = prm.transpose_a, tb = prm.transpose_b;
  int nd = lhs.ndim();
  auto flags = [&] {
    return std::string(" (transpose_a=") + (ta ? "True" : "False") + ", transpose_b=" + (tb ? "True" : "False") + ")";
  };
  if (nd < 3 || rhs.ndim() != nd)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected two inputs with the same number (at least 3) of dimensions, got shapes ", lhs.ToString(),
          " and ", rhs.ToString());
  for (int d = 0; d < nd - 2; ++d)
    if (lhs[d] != rhs[d])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the batch dimensions of shapes ", lhs.ToString(),
            " and ", rhs.ToString(), " differ");
  int64_t ra = lhs[nd - 2], ca = lhs[nd - 1], rb = rhs[nd - 2], cb = rhs[nd - 1];
  DotPlan p;
  p.batch = lhs.ProdRange(0, nd - 2);
  p.m = ta ? ca : ra;
  p.k = ta ? ra : ca;
  int64_t kb = tb ? cb : rb;
  p.n = tb ? rb : cb;
  if (p.k != kb)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': shapes ", lhs.ToString(), " and ", rhs.ToString(),
          " do not fit: the contracted dimension is ", p.k, " in the first input and ", kb, " in the second", flags());
  p.a = GemmOperand{nullptr, ca, ra * ca, ta};
  p.b = GemmOperand{nullptr, cb, rb * cb, tb};
  std::vector<int64_t> dims(lhs.begin(), lhs.end() - 2);
  dims.push_back(p.m);
  dims.push_back(p.n);
  p.out = Shape(dims);
  return p;
}

WEFT_REGISTER_OP(batch_dot)
    .Describe(
        "Batched matrix product: for inputs (..., M, K) and (..., K, N) (with transpose flags applied to the last "
        "two axes), the (..., M, N) products of matching matrices.")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "The first batch of matrices")
    .AddArgument("rhs", "NDArray-or-Symbol", "The second batch of matrices")
    .SetParams<DotParam>()
    .SetAttr<FInferShape>("FInferShape", BatchDotShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BatchDotCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", BatchDotNs)
    .SetAttr<FGradient>("FGradient", BatchDotGrad);

}  // namespace op
}  // namespace weft

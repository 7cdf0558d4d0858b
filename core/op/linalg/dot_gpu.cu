// GPU versions of dot, its gradient and batch_dot: the CPU operators' plans (PlanDot,
// PlanBatchDot) run on cuBLAS.
#include "core/op/cuda/gemm.h"
#include "core/op/linalg/dot.h"

namespace weft {
namespace op {
namespace {

double Beta(OpReq req) { return req == OpReq::kAddTo ? 1.0 : 0.0; }

void DotComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  DotPlan p = PlanDot(attrs, in[0].shape, in[1].shape);
  p.a.data = in[0].dptr;
  p.b.data = in[1].dptr;
  cuda::Gemm(ctx.run_ctx, in[0].dtype, p.m, p.n, p.k, 1.0, p.a, p.b, Beta(req[0]), out[0].dptr, p.n, 0, 1,
             attrs.op->name.c_str());
}

// With out = op(A) op(B) and G its gradient (m x n):
//   dA = G op(B)^T, or op(B) G^T when A is used transposed;
//   dB = op(A)^T G, or G^T op(A) when B is used transposed.
void DotBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  DotPlan p = PlanDot(attrs, in[1].shape, in[2].shape);
  const char* name = attrs.op->name.c_str();
  DType dt = in[0].dtype;
  GemmOperand g{in[0].dptr, p.n, 0, false};
  GemmOperand a = p.a, b = p.b;
  a.data = in[1].dptr;
  b.data = in[2].dptr;
  if (req[0] != OpReq::kNullOp) {
    if (!a.transpose) {
      GemmOperand bt = b;
      bt.transpose = !b.transpose;
      cuda::Gemm(ctx.run_ctx, dt, p.m, p.k, p.n, 1.0, g, bt, Beta(req[0]), out[0].dptr, a.ld, 0, 1, name);
    } else {
      GemmOperand gt = g;
      gt.transpose = true;
      cuda::Gemm(ctx.run_ctx, dt, p.k, p.m, p.n, 1.0, b, gt, Beta(req[0]), out[0].dptr, a.ld, 0, 1, name);
    }
  }
  if (req[1] != OpReq::kNullOp) {
    if (!b.transpose) {
      GemmOperand at = a;
      at.transpose = !a.transpose;
      cuda::Gemm(ctx.run_ctx, dt, p.k, p.n, p.m, 1.0, at, g, Beta(req[1]), out[1].dptr, b.ld, 0, 1, name);
    } else {
      GemmOperand gt = g;
      gt.transpose = true;
      cuda::Gemm(ctx.run_ctx, dt, p.n, p.k, p.m, 1.0, gt, a, Beta(req[1]), out[1].dptr, b.ld, 0, 1, name);
    }
  }
}

void BatchDotComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  DotPlan p = PlanBatchDot(attrs, in[0].shape, in[1].shape);
  p.a.data = in[0].dptr;
  p.b.data = in[1].dptr;
  cuda::Gemm(ctx.run_ctx, in[0].dtype, p.m, p.n, p.k, 1.0, p.a, p.b, Beta(req[0]), out[0].dptr, p.n, p.m * p.n,
             p.batch, attrs.op->name.c_str());
}

}  // namespace

WEFT_REGISTER_OP(dot).SetAttr<FCompute>("FCompute<gpu>", DotComputeGPU);
WEFT_REGISTER_OP(_backward_dot).SetAttr<FCompute>("FCompute<gpu>", DotBackwardGPU);
WEFT_REGISTER_OP(batch_dot).SetAttr<FCompute>("FCompute<gpu>", BatchDotComputeGPU);

}  // namespace op
}  // namespace weft

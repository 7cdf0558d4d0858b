// transpose: permutes the axes (reverses them by default). Its gradient is the transpose
// by the inverse permutation.
#include <string>

#include "core/op/op_util.h"
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct TransposeParam {
  Shape axes = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(TransposeParam, s) {
  s.Field("axes", &TransposeParam::axes)
      .Default(Shape::Scalar())
      .Describe("The permutation: output axis i is input axis axes[i]; () reverses the axes.");
}

namespace {

std::vector<int> Permutation(const NodeAttrs& attrs, int ndim) {
  const Shape& axes = attrs.Params<TransposeParam>().axes;
  std::vector<int> perm(ndim);
  if (axes.ndim() <= 0) {
    for (int d = 0; d < ndim; ++d) perm[d] = ndim - 1 - d;
    return perm;
  }
  if (axes.ndim() != ndim)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axes=", axes.ToString(), " has ", axes.ndim(),
          " entries but the input has ", ndim, " dimensions");
  std::vector<bool> seen(ndim, false);
  for (int d = 0; d < ndim; ++d) {
    int a = CheckAxis(attrs, axes[d], ndim, "axes");
    if (seen[a])
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axes=", axes.ToString(), " is not a permutation");
    seen[a] = true;
    perm[d] = a;
  }
  return perm;
}

// Inference runs both ways, as in MXNet: dimensions known only on the output (a graph such
// as ones(shape=(-1, -1)).T + a (2, 3) array) fill the input's.
bool TransposeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& y = (*out)[0];
  int nd = (*in)[0].known_ndim() ? (*in)[0].ndim() : y.ndim();
  if (nd < 0) return false;
  std::vector<int> perm = Permutation(attrs, nd);
  if (y.known_ndim() && y.ndim() == nd) {
    Shape back(nd);
    for (int d = 0; d < nd; ++d) back[perm[d]] = y[d];
    AssignShape(attrs, in, 0, back, "input");
  }
  const Shape& x = (*in)[0];
  Shape s(nd);
  for (int d = 0; d < nd; ++d) s[d] = x[perm[d]];
  AssignShape(attrs, out, 0, s, "output");
  return x.is_known();
}

void TransposeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int nd = in[0].ndim();
  std::vector<int> perm = Permutation(attrs, nd);
  std::vector<int64_t> in_stride = ContiguousStrides(in[0].shape), stride(nd);
  for (int d = 0; d < nd; ++d) stride[d] = in_stride[perm[d]];
  StridedGather(ctx, out[0].shape, stride, 0, in[0], out[0], req[0]);
}

std::vector<GradValue> TransposeGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const Shape& axes = attrs.Params<TransposeParam>().axes;
  if (axes.ndim() <= 0) return {b.Op("transpose", {a.out_grads[0]})};
  int nd = axes.ndim();
  std::vector<int> perm = Permutation(attrs, nd);
  std::string inv = "(";
  std::vector<int> invp(nd);
  for (int d = 0; d < nd; ++d) invp[perm[d]] = d;
  for (int d = 0; d < nd; ++d) inv += (d ? "," : "") + std::to_string(invp[d]);
  inv += ")";
  return {b.Op("transpose", {a.out_grads[0]}, {{"axes", inv}})};
}

}  // namespace

WEFT_REGISTER_OP(transpose)
    .Describe("Permutes the axes: output axis i is input axis axes[i]; reverses them when axes is ().")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<TransposeParam>()
    .SetAttr<FInferShape>("FInferShape", TransposeShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", TransposeCompute)
    .SetAttr<FGradient>("FGradient", TransposeGrad);

WEFT_DEVICE_COMPUTE(transpose, TransposeCompute);

}  // namespace op
}  // namespace weft

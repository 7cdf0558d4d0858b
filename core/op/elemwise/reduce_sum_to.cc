// `_reduce_sum_to(data, like)`: sums `data` over the axes along which `like` was broadcast
// to it, giving an array of like's shape. This is how the broadcast operators' gradients
// return to their inputs' shapes. Shapes align from the right; each dim of `like` must be
// 1 or equal data's, and extra leading dims of `like` must be 1.
#include "core/op/elemwise/compute.h"
#include "core/op/elemwise/functors.h"
#include "core/op/op_util.h"
#include "core/op/reduce/reduce_kernel.h"

namespace weft {
namespace op {
namespace {

// True for each axis of `data` that is summed away; throws kShape when `like` is not
// something `data` could have been broadcast from.
std::vector<bool> SummedAxes(const NodeAttrs& attrs, const Shape& data, const Shape& like) {
  int nd = data.ndim(), nl = like.ndim();
  bool ok = true;
  for (int i = 0; i < nl - nd; ++i) ok = ok && like[i] == 1;
  std::vector<bool> flags(nd, false);
  for (int d = 0; d < nd; ++d) {
    int l = d - (nd - nl);
    int64_t ld = l >= 0 ? like[l] : 1;
    if (ld == data[d]) continue;
    if (ld == 1) flags[d] = true;
    else ok = false;
  }
  if (!ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot sum data of shape ", data.ToString(),
          " to shape ", like.ToString(), " (like's dims must be 1 or equal data's, aligned from the right)");
  return flags;
}

bool ReduceSumToShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& data = (*in)[0];
  const Shape& like = (*in)[1];
  if (!data.is_known() || !like.is_known()) return false;
  SummedAxes(attrs, data, like);
  AssignShape(attrs, out, 0, like, "output");
  return true;
}

void ReduceSumToCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const TBlob& data = in[0];
  const TBlob& result = out[0];
  WEFT_TYPE_SWITCH(data.dtype, T, {
    if (data.Size() == result.Size()) {
      UnaryMap<identity_op, T>(data.ptr<T>(), result.ptr<T>(), data.Size(), req[0]);
    } else {
      Reduce<SumReducer, T>(data, SummedAxes(attrs, data.shape, in[1].shape), result, req[0]);
    }
  });
}

// The gradient spreads the out-gradient back over data's shape: 0 + g, broadcast.
std::vector<GradValue> ReduceSumToGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  GradValue zeros = b.Op("zeros_like", {a.inputs[0]});
  return {b.Op("broadcast_add", {zeros, a.out_grads[0]}), GradValue()};
}

}  // namespace

WEFT_REGISTER_OP(_reduce_sum_to)
    .Describe("Sums data over the axes along which `like` is broadcast to it; the result has like's shape.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The array to sum")
    .AddArgument("like", "NDArray-or-Symbol", "An array of the target shape (only its shape is used)")
    .SetAttr<FInferShape>("FInferShape", ReduceSumToShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", ReduceSumToCompute)
    .SetAttr<FGradient>("FGradient", ReduceSumToGrad);

}  // namespace op
}  // namespace weft

// flip (reverse): reverses the order of elements along the given axes. It is its own
// gradient.
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct FlipParam {
  Shape axis = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(FlipParam, s) {
  s.Field("axis", &FlipParam::axis).Describe("The axis or axes to reverse; negative counts from the end.");
}

namespace {

std::vector<bool> FlipAxes(const NodeAttrs& attrs, const Shape& in) {
  std::vector<bool> flip(in.ndim(), false);
  for (int64_t a : attrs.Params<FlipParam>().axis) {
    int d = CheckAxis(attrs, a, in.ndim());
    if (flip[d])
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axis ", a, " appears twice in axis=",
            attrs.Params<FlipParam>().axis.ToString());
    flip[d] = true;
  }
  return flip;
}

bool FlipShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  FlipAxes(attrs, (*in)[0]);
  return SameShape(attrs, in, out);
}

void FlipCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = in[0].shape;
  std::vector<bool> flip = FlipAxes(attrs, s);
  std::vector<int64_t> stride = ContiguousStrides(s);
  int64_t base = 0;
  for (int d = 0; d < s.ndim(); ++d) {
    if (!flip[d] || s[d] == 0) continue;
    base += (s[d] - 1) * stride[d];
    stride[d] = -stride[d];
  }
  StridedGather(ctx, s, stride, base, in[0], out[0], req[0]);
}

}  // namespace

WEFT_REGISTER_OP(flip)
    .Describe("Reverses the order of elements along the given axes.")
    .AddAlias("reverse")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<FlipParam>()
    .SetAttr<FInferShape>("FInferShape", FlipShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", FlipCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("flip", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_DEVICE_COMPUTE(flip, FlipCompute);

}  // namespace op
}  // namespace weft

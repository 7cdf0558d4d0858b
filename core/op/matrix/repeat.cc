// repeat: repeats each element `repeats` times along an axis (of the flattened input when
// axis is None). The output seen as (outer, n, repeats, inner) reads the input with stride
// 0 along the repeats axis, and the gradient sums over it (_backward_repeat).
#include <optional>

#include "core/op/reduce/reduce_kernel.h"
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct RepeatParam {
  int repeats = 1;
  std::optional<int> axis;
};

WEFT_PARAM_SCHEMA(RepeatParam, s) {
  s.Field("repeats", &RepeatParam::repeats).Min(0).Describe("How many times each element is repeated.");
  s.Field("axis", &RepeatParam::axis)
      .Default(std::nullopt)
      .Describe("The axis to repeat along; None repeats the elements of the flattened input.");
}

namespace {

// The walk over the output, (outer, n, repeats, inner), with the input's strides.
Shape RepeatWalk(const NodeAttrs& attrs, const Shape& in, std::vector<int64_t>* stride) {
  const auto& p = attrs.Params<RepeatParam>();
  int64_t outer = 1, n = in.Size(), inner = 1;
  if (p.axis) {
    int a = CheckAxis(attrs, *p.axis, in.ndim());
    outer = in.ProdRange(0, a);
    n = in[a];
    inner = in.ProdRange(a + 1, in.ndim());
  }
  *stride = {n * inner, inner, 0, 1};
  return Shape{outer, n, static_cast<int64_t>(p.repeats), inner};
}

bool RepeatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  const auto& p = attrs.Params<RepeatParam>();
  Shape s{x.Size() * p.repeats};
  if (p.axis) {
    int a = CheckAxis(attrs, *p.axis, x.ndim());
    s = x;
    s[a] *= p.repeats;
  }
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

void RepeatCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<int64_t> stride;
  Shape walk = RepeatWalk(attrs, in[0].shape, &stride);
  StridedGather(ctx, walk, stride, 0, in[0], out[0], req[0]);
}

void RepeatBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  std::vector<int64_t> stride;
  Shape walk = RepeatWalk(attrs, in[1].shape, &stride);
  SumAxes(ctx, in[0], walk, {false, false, true, false}, out[0], req[0]);
}

bool RepeatBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  std::vector<Shape> fwd_in = {(*in)[1]}, fwd_out(1);
  RepeatShape(attrs, &fwd_in, &fwd_out);
  AssignShape(attrs, in, 0, fwd_out[0], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(repeat)
    .Describe("Repeats each element `repeats` times along axis (the flattened input when axis is None).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<RepeatParam>()
    .SetAttr<FInferShape>("FInferShape", RepeatShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", RepeatCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_repeat", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_repeat)
    .Describe("Gradient of repeat: the output gradient summed over the repetitions of each element.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<RepeatParam>()
    .SetAttr<FInferShape>("FInferShape", RepeatBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", RepeatBackward);

WEFT_DEVICE_COMPUTE(repeat, RepeatCompute);
WEFT_DEVICE_COMPUTE(_backward_repeat, RepeatBackward);

}  // namespace op
}  // namespace weft

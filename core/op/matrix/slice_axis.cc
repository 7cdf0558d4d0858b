// slice_axis: elements begin:end of one axis (Python semantics, end None for the end).
// Its gradient writes the output gradient into zeros of the input's shape.
#include <optional>

#include "core/op/matrix/slice_kernel.h"

namespace weft {
namespace op {

struct SliceAxisParam {
  int axis = 0;
  int64_t begin = 0;
  std::optional<int> end;
};

WEFT_PARAM_SCHEMA(SliceAxisParam, s) {
  s.Field("axis", &SliceAxisParam::axis).Describe("The axis to slice; negative counts from the end.");
  s.Field("begin", &SliceAxisParam::begin).Describe("First index kept; negative counts from the end.");
  s.Field("end", &SliceAxisParam::end).Describe("Index after the last kept; None for the end of the axis.");
}

namespace {

SliceBox AxisBox(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<SliceAxisParam>();
  int axis = CheckAxis(attrs, p.axis, in.ndim());
  SliceBox box = FullBox(in);
  std::optional<int64_t> end;
  if (p.end) end = *p.end;
  NarrowAxis(&box, axis, in[axis], p.begin, end, 1);
  return box;
}

bool SliceAxisShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  if (!(*in)[0].is_known()) {
    AssignShape(attrs, out, 0, PartialSliceShape((*in)[0], [&](const Shape& s) { return AxisBox(attrs, s); }), "output");
    return false;
  }
  AssignShape(attrs, out, 0, BoxShape(AxisBox(attrs, (*in)[0])), "output");
  return true;
}

void SliceAxisCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceForward(ctx, in[0], AxisBox(attrs, in[0].shape), out[0], req[0]);
}

void SliceAxisBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceBackward(ctx, in[0], AxisBox(attrs, in[1].shape), out[0], req[0]);
}

bool SliceAxisBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, BoxShape(AxisBox(attrs, (*in)[1])), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(slice_axis)
    .Describe("Elements begin:end along one axis.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SliceAxisParam>()
    .SetAttr<FInferShape>("FInferShape", SliceAxisShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SliceAxisCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_slice_axis", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_slice_axis)
    .Describe("Gradient of slice_axis: zeros of the input's shape with the output gradient in the slice.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<SliceAxisParam>()
    .SetAttr<FInferShape>("FInferShape", SliceAxisBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", SliceAxisBackward);

WEFT_DEVICE_COMPUTE(slice_axis, SliceAxisCompute);
WEFT_DEVICE_COMPUTE(_backward_slice_axis, SliceAxisBackward);

}  // namespace op
}  // namespace weft

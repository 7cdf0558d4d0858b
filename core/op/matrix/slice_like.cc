// slice_like: the leading part of data with shape_like's sizes along the chosen axes (all
// axes by default). Its gradient puts the output gradient into zeros of data's shape
// (_backward_slice_like); shape_like gets a zero gradient.
#include "core/op/elemwise/gradients.h"
#include "core/op/matrix/slice_kernel.h"

namespace weft {
namespace op {

struct SliceLikeParam {
  Shape axes = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(SliceLikeParam, s) {
  s.Field("axes", &SliceLikeParam::axes)
      .Default(Shape::Scalar())
      .Describe("The axes to slice to shape_like's sizes; () slices every axis (the inputs then need one rank).");
}

namespace {

SliceBox LikeBox(const NodeAttrs& attrs, const Shape& data, const Shape& like) {
  const Shape& axes = attrs.Params<SliceLikeParam>().axes;
  SliceBox box = FullBox(data);
  auto narrow = [&](int d) {
    if (like[d] > data[d])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': axis ", d, " of shape_like ", like.ToString(),
            " is longer than that of data ", data.ToString());
    box.size[d] = like[d];
  };
  if (axes.ndim() == 0) {
    if (data.ndim() != like.ndim())
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': slicing every axis needs inputs of one rank, got ",
            data.ToString(), " and ", like.ToString());
    for (int d = 0; d < data.ndim(); ++d) narrow(d);
  } else {
    for (int64_t a : axes) {
      int d = CheckAxis(attrs, a, data.ndim(), "axes");
      if (d >= like.ndim())
        Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': axis ", a, " is out of range for shape_like ",
              like.ToString());
      narrow(d);
    }
  }
  return box;
}

bool SliceLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, BoxShape(LikeBox(attrs, (*in)[0], (*in)[1])), "output");
  return true;
}

// The output takes data's dtype; shape_like may have any dtype.
bool SliceLikeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void SliceLikeCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceForward(ctx, in[0], LikeBox(attrs, in[0].shape, in[1].shape), out[0], req[0]);
}

// Inputs (ograd, data, shape_like).
bool SliceLikeBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  AssignShape(attrs, in, 0, BoxShape(LikeBox(attrs, (*in)[1], (*in)[2])), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

bool SliceLikeBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[1], "input");
  AssignType(attrs, out, 0, (*in)[1], "output");
  return (*in)[2] != DType::kUnknown;
}

void SliceLikeBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceBox box = LikeBox(attrs, in[1].shape, in[2].shape);
  if (in[0].shape != BoxShape(box) || out[0].shape != in[1].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the operator expects ", BoxShape(box).ToString());
  SliceBackward(ctx, in[0], box, out[0], req[0]);
}

}  // namespace

WEFT_REGISTER_OP(slice_like)
    .Describe("The leading part of data with shape_like's sizes along axes (every axis when axes is ()).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Source input")
    .AddArgument("shape_like", "NDArray-or-Symbol", "Shape like input")
    .SetParams<SliceLikeParam>()
    .SetAttr<FInferShape>("FInferShape", SliceLikeShape)
    .SetAttr<FInferType>("FInferType", SliceLikeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SliceLikeCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_slice_like", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict),
          b.Op("zeros_like", {a.inputs[1]})};
    });

WEFT_REGISTER_OP(_backward_slice_like)
    .Describe("Gradient of slice_like: zeros of data's shape with the output gradient in the slice.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .AddArgument("shape_like", "NDArray-or-Symbol", "The forward shape_like (for its shape)")
    .SetParams<SliceLikeParam>()
    .SetAttr<FInferShape>("FInferShape", SliceLikeBackwardShape)
    .SetAttr<FInferType>("FInferType", SliceLikeBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", SliceLikeBackward);

WEFT_DEVICE_COMPUTE(slice_like, SliceLikeCompute);
WEFT_DEVICE_COMPUTE(_backward_slice_like, SliceLikeBackward);

}  // namespace op
}  // namespace weft

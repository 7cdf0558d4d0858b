// shape_array and size_array: an array's shape (1-D) or element count ((1,)) as int64.
#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

bool ShapeArrayShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  AssignShape(attrs, out, 0, Shape{static_cast<int64_t>((*in)[0].ndim())}, "output");
  return true;
}

bool SizeArrayShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape{1}, "output");
  return true;
}

bool Int64Output(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  return OutputTypeFromParam(attrs, out, DType::kInt64);
}

void ShapeArrayCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t* y = out[0].ptr<int64_t>();
  for (int d = 0; d < in[0].ndim(); ++d) Store(y + d, req[0], in[0].shape[d]);
}

void SizeArrayCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Store(out[0].ptr<int64_t>(), req[0], in[0].Size());
}

// The result depends on the input's shape only.
std::vector<GradValue> ZeroGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("zeros_like", {a.inputs[0]})};
}

}  // namespace

WEFT_REGISTER_OP(shape_array)
    .Describe("The shape of the input as a 1-D int64 array.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", ShapeArrayShape)
    .SetAttr<FInferType>("FInferType", Int64Output)
    .SetAttr<FCompute>("FCompute<cpu>", ShapeArrayCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

WEFT_REGISTER_OP(size_array)
    .Describe("The number of elements of the input as an int64 array of shape (1,).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", SizeArrayShape)
    .SetAttr<FInferType>("FInferType", Int64Output)
    .SetAttr<FCompute>("FCompute<cpu>", SizeArrayCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

}  // namespace op
}  // namespace weft

// stack: joins arrays of one shape along a new axis. Its gradient is split with
// squeeze_axis.
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct StackParam {
  int axis = 0;
  int num_args = 1;
};

WEFT_PARAM_SCHEMA(StackParam, s) {
  s.Field("axis", &StackParam::axis)
      .Default(0)
      .Describe("Position of the new axis in the result, in [-ndim-1, ndim]; negative counts from the end.");
  s.Field("num_args", &StackParam::num_args).Min(1).Describe("Number of inputs.");
}

namespace {

bool StackShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  const Shape& s0 = (*in)[0];
  for (size_t i = 1; i < in->size(); ++i)
    if ((*in)[i] != s0)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i, " has shape ", (*in)[i].ToString(),
            " but input 0 has shape ", s0.ToString(), "; stacked arrays must have one shape");
  int axis = CheckAxis(attrs, attrs.Params<StackParam>().axis, s0.ndim() + 1);
  std::vector<int64_t> dims = s0.ToVector();
  dims.insert(dims.begin() + axis, static_cast<int64_t>(in->size()));
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

void StackCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  int axis = CheckAxis(attrs, attrs.Params<StackParam>().axis, out[0].ndim());
  int64_t outer = out[0].shape.ProdRange(0, axis), inner = out[0].shape.ProdRange(axis + 1, out[0].ndim());
  AxisConcat(ctx, ConcatDirection::kPiecesToWhole, out[0], in, std::vector<int64_t>(in.size(), 1), outer, inner, req);
}

int NumArgs(const NodeAttrs& attrs) { return attrs.Params<StackParam>().num_args; }

}  // namespace

WEFT_REGISTER_OP(stack)
    .Describe("Joins arrays of one shape along a new axis.")
    .SetNumInputs(NumArgs)
    .SetKeyVarNumArgs("num_args")
    .AddArgument("data", "NDArray-or-Symbol[]", "The arrays to stack")
    .SetParams<StackParam>()
    .SetAttr<FInferShape>("FInferShape", StackShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", StackCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      const auto& p = attrs.Params<StackParam>();
      return b.Call("split", {a.out_grads[0]},
                    {{"num_outputs", std::to_string(p.num_args)},
                     {"axis", std::to_string(p.axis)},
                     {"squeeze_axis", "True"}});
    });

WEFT_DEVICE_COMPUTE(stack, StackCompute);

}  // namespace op
}  // namespace weft

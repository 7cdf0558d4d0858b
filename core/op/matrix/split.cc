// split (SliceChannel): cuts an array into equal pieces along an axis, optionally removing
// that axis when each piece has size 1 along it. Its gradient joins the output gradients
// back (concat, or stack when the axis was removed).
#include <string>

#include "core/op/matrix/axis_concat.h"

namespace weft {
namespace op {

struct SplitParam {
  int num_outputs = 1;
  int axis = 1;
  bool squeeze_axis = false;
};

WEFT_PARAM_SCHEMA(SplitParam, s) {
  s.Field("num_outputs", &SplitParam::num_outputs).Min(1).Describe("Number of pieces.");
  s.Field("axis", &SplitParam::axis).Default(1).Describe("The axis to split along; negative counts from the end.");
  s.Field("squeeze_axis", &SplitParam::squeeze_axis)
      .Default(false)
      .Describe("Remove the split axis from the pieces (its size must equal num_outputs).");
}

namespace {

bool SplitShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  const auto& p = attrs.Params<SplitParam>();
  int axis = CheckAxis(attrs, p.axis, x.ndim());
  if (x[axis] % p.num_outputs != 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': axis ", p.axis, " of an input of shape ", x.ToString(),
          " has size ", x[axis], ", which does not split into num_outputs=", p.num_outputs, " equal pieces");
  if (p.squeeze_axis && x[axis] != p.num_outputs)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': squeeze_axis needs axis ", p.axis, " of size ",
          p.num_outputs, " (num_outputs), but the input has shape ", x.ToString());
  std::vector<int64_t> dims = x.ToVector();
  if (p.squeeze_axis) dims.erase(dims.begin() + axis);
  else dims[axis] /= p.num_outputs;
  if (dims.empty()) dims.push_back(1);
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, Shape(dims), "output");
  return true;
}

void SplitCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<SplitParam>();
  const Shape& x = in[0].shape;
  int axis = CheckAxis(attrs, p.axis, x.ndim());
  int64_t piece = x[axis] / p.num_outputs;
  AxisConcat(ConcatDirection::kWholeToPieces, in[0], out, std::vector<int64_t>(out.size(), piece),
             x.ProdRange(0, axis), x.ProdRange(axis + 1, x.ndim()), req);
}

std::vector<GradValue> SplitGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const auto& p = attrs.Params<SplitParam>();
  std::vector<GradValue> grads;
  for (size_t k = 0; k < a.out_grads.size(); ++k)
    grads.push_back(a.out_grads[k].defined() ? a.out_grads[k] : b.Op("zeros_like", {a.outputs[k]}));
  std::string n = std::to_string(p.num_outputs), axis = std::to_string(p.axis);
  if (p.squeeze_axis) return {b.Op("stack", grads, {{"num_args", n}, {"axis", axis}})};
  return {b.Op("concat", grads, {{"num_args", n}, {"dim", axis}})};
}

int NumOutputs(const NodeAttrs& attrs) { return attrs.Params<SplitParam>().num_outputs; }

}  // namespace

WEFT_REGISTER_OP(split)
    .Describe("Splits the input into num_outputs equal pieces along axis (removing the axis with squeeze_axis).")
    .AddAlias("SliceChannel")
    .SetNumInputs(1)
    .SetNumOutputs(NumOutputs)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SplitParam>()
    .SetAttr<FInferShape>("FInferShape", SplitShape)
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) {
                           std::vector<std::string> names;
                           for (int i = 0; i < NumOutputs(attrs); ++i) names.push_back("output" + std::to_string(i));
                           return names;
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SplitCompute)
    .SetAttr<FGradient>("FGradient", SplitGrad);

}  // namespace op
}  // namespace weft

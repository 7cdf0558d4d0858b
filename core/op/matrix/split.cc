// split (SliceChannel): cuts an array into equal pieces along an axis, optionally removing
// that axis when each piece has size 1 along it. Its gradient joins the output gradients
// back (concat, or stack when the axis was removed). _split_v2 (nd.split_v2) cuts at given
// boundaries or into `sections` near-equal pieces (the first ones one longer).
// _split_v2_backward (MXNet's gradient node of _split_v2, kept so graphs naming it run)
// joins the pieces' gradients back into the input's shape.
#include <string>

#include "core/op/data_move.h"

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

struct SplitV2Param {
  Shape indices;
  int axis = 1;
  bool squeeze_axis = false;
  int sections = 0;
};

WEFT_PARAM_SCHEMA(SplitV2Param, s) {
  s.Field("indices", &SplitV2Param::indices)
      .Describe("Start of each piece along the axis (the first 0), or () with sections.");
  s.Field("axis", &SplitV2Param::axis).Default(1).Describe("Axis along which to split.");
  s.Field("squeeze_axis", &SplitV2Param::squeeze_axis)
      .Default(false)
      .Describe("Remove the split axis from the pieces (every piece must then have size 1 along it).");
  s.Field("sections", &SplitV2Param::sections)
      .Default(0)
      .Min(0)
      .Describe("Number of near-equal pieces; 0 splits at indices.");
}

namespace {

bool SplitShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  const auto& p = attrs.Params<SplitParam>();
  // Partial inference backwards, as MXNet's: the input's dims off the axis are any known
  // output's, and along the axis num_outputs pieces (num_outputs itself with squeeze_axis).
  if (x.known_ndim() && x.ndim() > 0 && !x.is_known()) {
    const int axis = CheckAxis(attrs, p.axis, x.ndim());
    Shape want = x;
    if (p.squeeze_axis && want[axis] < 0) want[axis] = p.num_outputs;
    const int piece_nd = p.squeeze_axis ? x.ndim() - 1 : x.ndim();
    for (const Shape& o : *out) {
      if (!o.known_ndim() || o.ndim() != piece_nd) continue;
      for (int d = 0, od = 0; d < x.ndim(); ++d) {
        if (p.squeeze_axis && d == axis) continue;
        const int64_t v = o[od++];
        if (v >= 0 && want[d] < 0) want[d] = d == axis ? v * p.num_outputs : v;
      }
    }
    AssignShape(attrs, in, 0, want, "input");
  }
  if (!x.is_known()) return false;
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

void SplitCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<SplitParam>();
  const Shape& x = in[0].shape;
  int axis = CheckAxis(attrs, p.axis, x.ndim());
  int64_t piece = x[axis] / p.num_outputs;
  AxisConcat(ctx, ConcatDirection::kWholeToPieces, in[0], out, std::vector<int64_t>(out.size(), piece),
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

int SplitV2NumOutputs(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<SplitV2Param>();
  return p.sections > 0 ? p.sections : p.indices.ndim();
}

// Piece sizes along the axis of a given length.
std::vector<int64_t> SplitV2Sizes(const NodeAttrs& attrs, int64_t len) {
  const auto& p = attrs.Params<SplitV2Param>();
  std::vector<int64_t> starts;
  if (p.sections > 0) {
    for (int64_t i = 0, at = 0; i < p.sections; ++i) {
      starts.push_back(at);
      at += len / p.sections + (i < len % p.sections ? 1 : 0);
    }
  } else {
    starts.assign(p.indices.begin(), p.indices.end());
  }
  if (starts.empty())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': give indices or sections > 0");
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t end = i + 1 < starts.size() ? starts[i + 1] : len;
    if (starts[i] < 0 || starts[i] > end || end > len)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': piece ", i, " would span [", starts[i], ", ", end,
            ") of an axis of length ", len, "; indices must rise from 0 within the axis");
    sizes.push_back(end - starts[i]);
  }
  if (starts[0] != 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': the first index must be 0, got ", starts[0]);
  return sizes;
}

bool SplitV2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  const auto& p = attrs.Params<SplitV2Param>();
  int axis = CheckAxis(attrs, p.axis, x.ndim());
  std::vector<int64_t> sizes = SplitV2Sizes(attrs, x[axis]);
  for (size_t i = 0; i < out->size(); ++i) {
    std::vector<int64_t> dims = x.ToVector();
    if (p.squeeze_axis) {
      if (sizes[i] != 1)
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': squeeze_axis needs pieces of size 1, but piece ", i,
              " has size ", sizes[i]);
      dims.erase(dims.begin() + axis);
    } else {
      dims[axis] = sizes[i];
    }
    AssignShape(attrs, out, i, Shape(dims), "output");
  }
  return true;
}

void SplitV2Compute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& x = in[0].shape;
  int axis = CheckAxis(attrs, attrs.Params<SplitV2Param>().axis, x.ndim());
  AxisConcat(ctx, ConcatDirection::kWholeToPieces, in[0], out, SplitV2Sizes(attrs, x[axis]), x.ProdRange(0, axis),
             x.ProdRange(axis + 1, x.ndim()), req);
}

std::vector<GradValue> SplitV2Grad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const auto& p = attrs.Params<SplitV2Param>();
  std::vector<GradValue> grads;
  for (size_t k = 0; k < a.out_grads.size(); ++k)
    grads.push_back(a.out_grads[k].defined() ? a.out_grads[k] : b.Op("zeros_like", {a.outputs[k]}));
  std::string n = std::to_string(grads.size()), axis = std::to_string(p.axis);
  if (p.squeeze_axis) return {b.Op("stack", grads, {{"num_args", n}, {"axis", axis}})};
  return {b.Op("concat", grads, {{"num_args", n}, {"dim", axis}})};
}

// _split_v2_backward: the pieces' gradients, checked against the sizes _split_v2 would cut
// from an axis of their total length; the output is the whole.
struct JoinPlan {
  int axis = 0;
  std::vector<int64_t> sizes;
  Shape whole;
};

JoinPlan PlanSplitV2Join(const NodeAttrs& attrs, const std::vector<Shape>& pieces) {
  const auto& p = attrs.Params<SplitV2Param>();
  if (pieces.empty())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': give indices or sections > 0 (there are no pieces "
          "to join)");
  const Shape& first = pieces[0];
  JoinPlan plan;
  int nd = first.ndim() + (p.squeeze_axis ? 1 : 0);
  plan.axis = CheckAxis(attrs, p.axis, nd);
  std::vector<int64_t> dims = first.ToVector();
  if (p.squeeze_axis) dims.insert(dims.begin() + plan.axis, 1);
  int64_t len = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::vector<int64_t> d = pieces[i].ToVector();
    if (p.squeeze_axis) d.insert(d.begin() + std::min<size_t>(plan.axis, d.size()), 1);
    bool ok = static_cast<int>(d.size()) == nd;
    for (int a = 0; ok && a < nd; ++a) ok = a == plan.axis || d[a] == dims[a];
    if (!ok)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': gradient ", i, " has shape ", pieces[i].ToString(),
            " but gradient 0 has ", first.ToString(), "; they may differ only along axis ", p.axis);
    plan.sizes.push_back(d[plan.axis]);
    len += d[plan.axis];
  }
  if (SplitV2Sizes(attrs, len) != plan.sizes) {
    std::string shapes;
    for (const Shape& s : pieces) shapes += (shapes.empty() ? "" : ", ") + s.ToString();
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': gradients of shapes ", shapes, " are not the pieces "
          "_split_v2 cuts along axis ", p.axis, " from an axis of length ", len);
  }
  dims[plan.axis] = len;
  plan.whole = Shape(dims);
  return plan;
}

bool SplitV2BackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in) if (!s.is_known()) return false;
  AssignShape(attrs, out, 0, PlanSplitV2Join(attrs, *in).whole, "output");
  return true;
}

void SplitV2BackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  std::vector<Shape> shapes;
  for (const auto& t : in) shapes.push_back(t.shape);
  JoinPlan plan = PlanSplitV2Join(attrs, shapes);
  if (out[0].shape != plan.whole)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have shape ", plan.whole.ToString(),
          ", got ", out[0].shape.ToString());
  const Shape& w = plan.whole;
  AxisConcat(ctx, ConcatDirection::kPiecesToWhole, out[0], in, plan.sizes, w.ProdRange(0, plan.axis),
             w.ProdRange(plan.axis + 1, w.ndim()), req);
}

}  // namespace

WEFT_REGISTER_OP(_split_v2_backward)
    .Describe("Gradient of _split_v2: joins the gradients of its pieces along the split axis (stacking them when "
              "squeeze_axis removed it).")
    .SetNumInputs(SplitV2NumOutputs)
    .AddArgument("data", "NDArray-or-Symbol[]", "The gradients of _split_v2's outputs")
    .SetParams<SplitV2Param>()
    .SetAttr<FInferShape>("FInferShape", SplitV2BackwardShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SplitV2BackwardCompute);

WEFT_REGISTER_OP(_split_v2)
    .Describe("Splits the input along axis at the given start indices, or into `sections` near-equal pieces "
              "(removing the axis with squeeze_axis); what nd.split_v2 calls.")
    .SetNumInputs(1)
    .SetNumOutputs(SplitV2NumOutputs)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SplitV2Param>()
    .SetAttr<FInferShape>("FInferShape", SplitV2Shape)
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) {
                           std::vector<std::string> names;
                           for (int i = 0; i < SplitV2NumOutputs(attrs); ++i)
                             names.push_back("output" + std::to_string(i));
                           return names;
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SplitV2Compute)
    .SetAttr<FGradient>("FGradient", SplitV2Grad);

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

WEFT_DEVICE_COMPUTE(split, SplitCompute);
WEFT_DEVICE_COMPUTE(_split_v2, SplitV2Compute);

}  // namespace op
}  // namespace weft

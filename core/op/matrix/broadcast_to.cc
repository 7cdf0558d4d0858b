// Broadcasting one array to a larger shape: broadcast_to (a target shape, 0 keeping the
// input's dim), broadcast_axis (broadcast_axes: sizes for given axes) and broadcast_like
// (another array's shape). Size-1 axes are read with stride 0; the gradient sums the
// output gradient back down to the input's shape (_reduce_sum_to).
#include <optional>

#include "core/op/data_move.h"

namespace weft {
namespace op {

struct BroadcastToParam {
  Shape shape = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(BroadcastToParam, s) {
  // MXNet's default (): only a 0-d input broadcasts to it, any other is refused.
  s.Field("shape", &BroadcastToParam::shape)
      .Default(Shape::Scalar())
      .Describe("The target shape, aligned to the input's last axes; 0 keeps the input's dim.");
}

struct BroadcastAxisParam {
  Shape axis = Shape::Scalar();
  Shape size = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(BroadcastAxisParam, s) {
  s.Field("axis", &BroadcastAxisParam::axis).Default(Shape::Scalar()).Describe("The axes to broadcast (each of size 1).");
  s.Field("size", &BroadcastAxisParam::size).Default(Shape::Scalar()).Describe("The target size of each axis.");
}

struct BroadcastLikeParam {
  std::optional<Shape> lhs_axes, rhs_axes;
};

WEFT_PARAM_SCHEMA(BroadcastLikeParam, s) {
  s.Field("lhs_axes", &BroadcastLikeParam::lhs_axes)
      .Default(std::nullopt)
      .Describe("Axes of lhs to broadcast (None: all, to rhs's shape).");
  s.Field("rhs_axes", &BroadcastLikeParam::rhs_axes)
      .Default(std::nullopt)
      .Describe("Axes of rhs whose sizes lhs_axes take.");
}

namespace {

[[noreturn]] void CannotBroadcast(const NodeAttrs& attrs, const Shape& in, const Shape& target) {
  Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot broadcast an input of shape ", in.ToString(),
        " to shape ", target.ToString(), " (each input dim must be 1 or equal the target's)");
}

// Checks that `in` broadcasts to `target` (right-aligned) and returns target.
Shape CheckBroadcast(const NodeAttrs& attrs, const Shape& in, const Shape& target) {
  if (target.ndim() < in.ndim()) CannotBroadcast(attrs, in, target);
  int off = target.ndim() - in.ndim();
  for (int d = 0; d < in.ndim(); ++d)
    if (in[d] != 1 && in[d] != target[d + off]) CannotBroadcast(attrs, in, target);
  return target;
}

Shape BroadcastToTarget(const NodeAttrs& attrs, const Shape& in) {
  Shape t = attrs.Params<BroadcastToParam>().shape;
  int off = t.ndim() - in.ndim();
  for (int d = 0; d < t.ndim(); ++d) {
    if (t[d] != 0) continue;
    if (d < off) CannotBroadcast(attrs, in, attrs.Params<BroadcastToParam>().shape);
    t[d] = in[d - off];
  }
  return CheckBroadcast(attrs, in, t);
}

Shape BroadcastAxisTarget(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<BroadcastAxisParam>();
  if (p.axis.ndim() != p.size.ndim())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axis=", p.axis.ToString(), " and size=",
          p.size.ToString(), " must have the same length");
  Shape t = in;
  for (int i = 0; i < p.axis.ndim(); ++i) {
    int d = CheckAxis(attrs, p.axis[i], in.ndim());
    if (in[d] != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': axis ", p.axis[i], " of an input of shape ",
            in.ToString(), " has size ", in[d], "; only axes of size 1 can be broadcast");
    t[d] = p.size[i];
  }
  return t;
}

Shape BroadcastLikeTarget(const NodeAttrs& attrs, const Shape& lhs, const Shape& rhs) {
  const auto& p = attrs.Params<BroadcastLikeParam>();
  if (!p.lhs_axes && !p.rhs_axes) return CheckBroadcast(attrs, lhs, rhs);
  if (!p.lhs_axes || !p.rhs_axes || p.lhs_axes->ndim() != p.rhs_axes->ndim())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': lhs_axes and rhs_axes must be given together, with "
          "the same length");
  if (p.lhs_axes->ndim() == 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': lhs_axes and rhs_axes must name at least one axis, "
          "got empty tuples");
  Shape t = lhs;
  for (int i = 0; i < p.lhs_axes->ndim(); ++i) {
    int l = CheckAxis(attrs, (*p.lhs_axes)[i], lhs.ndim(), "lhs_axes");
    int r = CheckAxis(attrs, (*p.rhs_axes)[i], rhs.ndim(), "rhs_axes");
    if (lhs[l] != 1 && lhs[l] != rhs[r])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': axis ", l, " of lhs (shape ", lhs.ToString(),
            ") has size ", lhs[l], " and cannot take size ", rhs[r], " of rhs (shape ", rhs.ToString(), ")");
    t[l] = rhs[r];
  }
  return t;
}

bool BroadcastToShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, BroadcastToTarget(attrs, (*in)[0]), "output");
  return true;
}

bool BroadcastAxisShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, BroadcastAxisTarget(attrs, (*in)[0]), "output");
  return true;
}

bool BroadcastLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, BroadcastLikeTarget(attrs, (*in)[0], (*in)[1]), "output");
  return true;
}

// The output's dtype is the first input's (broadcast_like's rhs only lends its shape).
bool FirstInputType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return true;
}

void BroadcastCompute(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<int64_t> stride = BroadcastStrides(in[0].shape, out[0].shape);
  if (OnGPU(ctx)) return gpu::StridedGather(ctx, out[0].shape, stride, 0, in[0], out[0], req[0]);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ForEachStridedRow(out[0].shape, stride, 0, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) Store(y + i + k, req[0], x[off + k * step]);
    });
  });
}

std::vector<GradValue> SumBackToInput(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  std::vector<GradValue> g = {b.Op("_reduce_sum_to", {a.out_grads[0], a.inputs[0]})};
  if (a.inputs.size() > 1) g.push_back(GradValue());
  return g;
}

}  // namespace

WEFT_REGISTER_OP(broadcast_to)
    .Describe("Broadcasts the input to a shape: each input dim must be 1 or equal the target's; 0 in the target "
              "keeps the input's dim.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<BroadcastToParam>()
    .SetAttr<FInferShape>("FInferShape", BroadcastToShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kBroadcast)
    .SetAttr<FCompute>("FCompute<cpu>", BroadcastCompute)
    .SetAttr<FGradient>("FGradient", SumBackToInput);

WEFT_REGISTER_OP(broadcast_axis)
    .Describe("Broadcasts axes of size 1 to the given sizes.")
    .AddAlias("broadcast_axes")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<BroadcastAxisParam>()
    .SetAttr<FInferShape>("FInferShape", BroadcastAxisShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kBroadcast)
    .SetAttr<FCompute>("FCompute<cpu>", BroadcastCompute)
    .SetAttr<FGradient>("FGradient", SumBackToInput);

WEFT_REGISTER_OP(broadcast_like)
    .Describe("Broadcasts lhs to the shape of rhs (or only lhs_axes, to the sizes of rhs_axes).")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "The array to broadcast")
    .AddArgument("rhs", "NDArray-or-Symbol", "The array whose shape is used")
    .SetParams<BroadcastLikeParam>()
    .SetAttr<FInferShape>("FInferShape", BroadcastLikeShape)
    .SetAttr<FInferType>("FInferType", FirstInputType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kBroadcast)
    .SetAttr<FCompute>("FCompute<cpu>", BroadcastCompute)
    .SetAttr<FGradient>("FGradient", SumBackToInput);

WEFT_DEVICE_COMPUTE(broadcast_to, BroadcastCompute);
WEFT_DEVICE_COMPUTE(broadcast_axis, BroadcastCompute);
WEFT_DEVICE_COMPUTE(broadcast_like, BroadcastCompute);

}  // namespace op
}  // namespace weft

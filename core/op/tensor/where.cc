// where: elements of x where condition is nonzero, of y elsewhere. condition has x's shape,
// or is 1-D with one entry per row (first axis) of x. Gradients: the output gradient
// goes to x where the condition holds and to y elsewhere (both written with where).
#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

bool WhereShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  // As MXNet: nothing is inferred until the condition's shape is fully known (it decides
  // whether x's shape is the condition's or only starts with it).
  if (!(*in)[0].is_known()) return false;
  Shape s = (*in)[1].known_ndim() ? (*in)[1] : (*in)[2];
  AssignShape(attrs, in, 1, s, "input");
  AssignShape(attrs, in, 2, s, "input");
  AssignShape(attrs, out, 0, s, "output");
  const Shape& c = (*in)[0];
  const Shape& x = (*in)[1];
  if (!c.is_known() || !x.is_known()) return false;
  bool rows = c.ndim() == 1 && x.ndim() >= 1 && c[0] == x[0];
  if (c != x && !rows)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': condition has shape ", c.ToString(),
          " but x and y have shape ", x.ToString(), "; expected the same shape or (", x.ndim() > 0 ? x[0] : 0, ",)");
  return true;
}

// x and y share a dtype, which the output takes; condition may have any dtype.
bool WhereType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[1] != DType::kUnknown ? (*in)[1] : (*in)[2];
  AssignType(attrs, in, 1, t, "input");
  AssignType(attrs, in, 2, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return t != DType::kUnknown && (*in)[0] != DType::kUnknown;
}

void WhereCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t n = out[0].Size();
  // Each condition entry covers `span` consecutive elements (a whole row when 1-D).
  int64_t span = in[0].Size() == n ? 1 : (in[0].Size() > 0 ? n / in[0].Size() : 1);
  WEFT_TYPE_SWITCH(in[0].dtype, C, {
    WEFT_TYPE_SWITCH(in[1].dtype, T, {
      const C* c = in[0].ptr<C>();
      const T* x = in[1].ptr<T>();
      const T* y = in[2].ptr<T>();
      T* o = out[0].ptr<T>();
      ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) Store(o + i, req[0], static_cast<bool>(c[i / span]) ? x[i] : y[i]);
      });
    });
  });
}

std::vector<GradValue> WhereGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  GradValue cond = a.inputs[0], g = a.out_grads[0];
  GradValue zeros = b.Op("zeros_like", {g});
  return {b.Op("zeros_like", {cond}), b.Op("where", {cond, g, zeros}), b.Op("where", {cond, zeros, g})};
}

}  // namespace

WEFT_REGISTER_OP(where)
    .Describe("Elements of x where condition is nonzero and of y elsewhere; condition has x's shape or is 1-D with "
              "one entry per row of x.")
    .SetNumInputs(3)
    .AddArgument("condition", "NDArray-or-Symbol", "The condition")
    .AddArgument("x", "NDArray-or-Symbol", "Values where the condition holds")
    .AddArgument("y", "NDArray-or-Symbol", "Values where it does not")
    .SetAttr<FInferShape>("FInferShape", WhereShape)
    .SetAttr<bool>("TShapeNoProbe", true)
    .SetAttr<FInferType>("FInferType", WhereType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", WhereCompute)
    .SetAttr<FGradient>("FGradient", WhereGrad);

}  // namespace op
}  // namespace weft

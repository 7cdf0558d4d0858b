// reshape_like: lhs seen with (part of) rhs's shape. Also the gradient of every operator
// that only changes the shape.
#include <optional>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ReshapeLikeParam {
  std::optional<int> lhs_begin, lhs_end, rhs_begin, rhs_end;
};

WEFT_PARAM_SCHEMA(ReshapeLikeParam, s) {
  s.Field("lhs_begin", &ReshapeLikeParam::lhs_begin).Default(std::nullopt).Describe("First lhs axis replaced (None: 0).");
  s.Field("lhs_end", &ReshapeLikeParam::lhs_end).Default(std::nullopt).Describe("End of the lhs axes replaced (None: all).");
  s.Field("rhs_begin", &ReshapeLikeParam::rhs_begin).Default(std::nullopt).Describe("First rhs axis used (None: 0).");
  s.Field("rhs_end", &ReshapeLikeParam::rhs_end).Default(std::nullopt).Describe("End of the rhs axes used (None: all).");
}

namespace {

// [begin, end) of axes with negative values counting from the end.
void AxisRange(const NodeAttrs& attrs, const std::optional<int>& b, const std::optional<int>& e, int ndim,
               const char* bname, const char* ename, int* begin, int* end) {
  *begin = b ? (*b < 0 ? *b + ndim : *b) : 0;
  *end = e ? (*e < 0 ? *e + ndim : *e) : ndim;
  if (*begin < 0 || *begin > ndim || *end < *begin || *end > ndim)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': axes ", bname, "=", b ? std::to_string(*b) : "None",
          ", ", ename, "=", e ? std::to_string(*e) : "None", " do not give a range of an input with ", ndim,
          " dimensions");
}

bool ReshapeLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& l = (*in)[0];
  const Shape& r = (*in)[1];
  if (!l.is_known() || !r.is_known()) return false;
  const auto& p = attrs.Params<ReshapeLikeParam>();
  int lb, le, rb, re;
  AxisRange(attrs, p.lhs_begin, p.lhs_end, l.ndim(), "lhs_begin", "lhs_end", &lb, &le);
  AxisRange(attrs, p.rhs_begin, p.rhs_end, r.ndim(), "rhs_begin", "rhs_end", &rb, &re);
  std::vector<int64_t> dims(l.begin(), l.begin() + lb);
  dims.insert(dims.end(), r.begin() + rb, r.begin() + re);
  dims.insert(dims.end(), l.begin() + le, l.end());
  Shape s(dims);
  if (s.Size() != l.Size())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot reshape lhs of shape ", l.ToString(), " (",
          l.Size(), " elements) into ", s.ToString(), " (", s.Size(), " elements) taken from rhs of shape ",
          r.ToString());
  AssignShape(attrs, out, 0, s, "output");
  return true;
}

bool ReshapeLikeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(reshape_like)
    .Describe("lhs reshaped to the shape of rhs (or lhs axes [lhs_begin, lhs_end) replaced by rhs axes "
              "[rhs_begin, rhs_end)).")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "The array to reshape")
    .AddArgument("rhs", "NDArray-or-Symbol", "The array whose shape is used")
    .SetParams<ReshapeLikeParam>()
    .SetAttr<FInferShape>("FInferShape", ReshapeLikeShape)
    .SetAttr<FInferType>("FInferType", ReshapeLikeType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("reshape_like", {a.out_grads[0], a.inputs[0]}), GradValue()};
    });

}  // namespace op
}  // namespace weft

// _contrib_arange_like: start, start + step, ... (each repeated `repeat` times) filling the
// input's shape, or a 1-D array as long as the input's `axis`; the input's dtype.
#include <optional>

#include "core/op/elemwise/gradients.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct RangeLikeParam {
  double start = 0;
  double step = 1;
  int repeat = 1;
  std::string ctx;
  std::optional<int> axis;
};

WEFT_PARAM_SCHEMA(RangeLikeParam, s) {
  s.Field("start", &RangeLikeParam::start).Default(0.0).Describe("Start of the interval (included).");
  s.Field("step", &RangeLikeParam::step).Default(1.0).Describe("Spacing between values.");
  s.Field("repeat", &RangeLikeParam::repeat).Default(1).Min(1).Describe("How many times each value is repeated.");
  s.Field("ctx", &RangeLikeParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("axis", &RangeLikeParam::axis)
      .Default(std::nullopt)
      .Describe("Make a 1-D range as long as this axis of the input; None fills the input's whole shape.");
}

namespace {

bool ArangeLikeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  const auto& axis = attrs.Params<RangeLikeParam>().axis;
  AssignShape(attrs, out, 0, axis ? Shape({x[CheckAxis(attrs, *axis, x.ndim())]}) : x, "output");
  return true;
}

void ArangeLikeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>&,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<RangeLikeParam>();
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    T* y = out[0].ptr<T>();
    for (int64_t i = 0; i < out[0].Size(); ++i) Store(y + i, req[0], p.start + static_cast<double>(i / p.repeat) * p.step);
  });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_arange_like)
    .Describe("Evenly spaced values (start, start + step, ..., each repeated `repeat` times) filling the input's "
              "shape, or as many as the input's `axis` is long; in the input's dtype.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<RangeLikeParam>()
    .SetAttr<FInferShape>("FInferShape", ArangeLikeShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ArangeLikeCompute)
    .SetAttr<FGradient>("FGradient", ZeroGradient);

}  // namespace op
}  // namespace weft

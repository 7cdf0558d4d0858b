// clip: limits the elements to [a_min, a_max]. The gradient passes where the input was
// inside the interval (bounds included) and is zero where it was clipped.
#include "core/base/convert.h"
#include "core/op/op_util.h"
#include "core/op/tensor/clip.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(ClipParam, s) {
  s.Field("a_min", &ClipParam::a_min).Describe("Minimum value");
  s.Field("a_max", &ClipParam::a_max).Describe("Maximum value");
}

namespace {

void ClipCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<ClipParam>();
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    using A = typename AccType<T>::type;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    // The bounds saturate to the dtype's range (a_min=-1 on uint8 clips nothing below).
    A lo = ConvertValue<A>(p.a_min), hi = ConvertValue<A>(p.a_max);
    ParallelFor(in[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Store(y + i, req[0], ClipOp::Map(static_cast<A>(x[i]), lo, hi));
    });
  });
}

// Inputs (ograd, data).
void ClipBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<ClipParam>();
  WEFT_TYPE_SWITCH(in[1].dtype, T, {
    using A = typename AccType<T>::type;
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    // The bounds saturate to the dtype's range (a_min=-1 on uint8 clips nothing below).
    A lo = ConvertValue<A>(p.a_min), hi = ConvertValue<A>(p.a_max);
    ParallelFor(in[1].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        Store(y + i, req[0], ClipGradOp::Map(static_cast<A>(g[i]), static_cast<A>(x[i]), lo, hi));
    });
  });
}

bool ClipCheckedShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<ClipParam>();
  if (p.a_min > p.a_max)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': a_min=", p.a_min, " is greater than a_max=", p.a_max);
  return SameShape(attrs, in, out);
}

}  // namespace

WEFT_REGISTER_OP(clip)
    .Describe("Clips (limits) the values to [a_min, a_max].")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ClipParam>()
    .SetAttr<FInferShape>("FInferShape", ClipCheckedShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", ClipCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_clip", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_clip)
    .Describe("Gradient of clip.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ClipParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", ClipBackward)
    // Linear in ograd; data only selects where it passes, so its gradient is zero.
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_clip", {a.out_grads[0], a.inputs[1]}, attrs.dict),
                                    b.Op("zeros_like", {a.inputs[1]})};
    });

}  // namespace op
}  // namespace weft

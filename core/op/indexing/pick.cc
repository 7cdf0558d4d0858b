// pick: one element per position along an axis, chosen by an index array shaped like the
// result. The gradient puts the output gradient at the picked positions of zeros
// (_backward_pick).
#include <optional>

#include "core/op/indexing/index_mode.h"
#include "core/op/indexing/pick.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(PickParam, s) {
  s.Field("axis", &PickParam::axis)
      .Default(-1)
      .Describe("The axis to pick along; negative counts from the end; None picks from the flattened input.");
  s.Field("keepdims", &PickParam::keepdims).Default(false).Describe("Keep the picked axis as an axis of size 1.");
  s.Field("mode", &PickParam::mode)
      .Default("clip")
      .Choices({"clip", "wrap"})
      .Describe("Out-of-range indices: clip to the ends or wrap around.");
}

namespace {

struct PickView {
  int axis = 0;
  int64_t outer = 1, n = 1, inner = 1;
};

PickView ViewOf(const NodeAttrs& attrs, const Shape& data) {
  PickView v;
  const auto& axis = attrs.Params<PickParam>().axis;
  if (!axis) {
    v.n = data.Size();
    return v;
  }
  v.axis = CheckAxis(attrs, *axis, data.ndim());
  v.outer = data.ProdRange(0, v.axis);
  v.n = data[v.axis];
  v.inner = data.ProdRange(v.axis + 1, data.ndim());
  return v;
}

Shape PickOutShape(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<PickParam>();
  if (!p.axis) return p.keepdims ? Shape(std::vector<int64_t>(data.ndim(), 1)) : Shape{1};
  int a = CheckAxis(attrs, *p.axis, data.ndim());
  std::vector<int64_t> dims;
  for (int d = 0; d < data.ndim(); ++d) {
    if (d != a) dims.push_back(data[d]);
    else if (p.keepdims) dims.push_back(1);
  }
  if (dims.empty()) dims.push_back(1);
  return Shape(dims);
}

// The index array has the result's shape, with or without the picked axis kept as 1.
void CheckIndexShape(const NodeAttrs& attrs, const Shape& data, const Shape& index) {
  Shape expect = PickOutShape(attrs, data);
  if (index.Size() != expect.Size() || index.ndim() < expect.ndim() - 1 || index.ndim() > expect.ndim() + 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': index has shape ", index.ToString(), " but data of shape ",
          data.ToString(), " needs an index of shape ", expect.ToString());
  // An index into an empty axis would be clipped to -1.
  if (ViewOf(attrs, data).n == 0 && index.Size() > 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': cannot pick along an empty axis of data of shape ",
          data.ToString(), " (index of shape ", index.ToString(), ")");
}

bool PickShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  CheckIndexShape(attrs, (*in)[0], (*in)[1]);
  AssignShape(attrs, out, 0, PickOutShape(attrs, (*in)[0]), "output");
  return true;
}

bool PickType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void PickCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  PickView v = ViewOf(attrs, in[0].shape);
  std::vector<int64_t> idx = ResolveIndices(in[1], v.n, ParseIndexMode(attrs.Params<PickParam>().mode), attrs, v.axis);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(v.outer * v.inner, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / v.inner, i = t % v.inner;
        Store(y + t, req[0], x[(o * v.n + idx[t]) * v.inner + i]);
      }
    });
  });
}

// Inputs (ograd, index, data); output: the gradient of data.
void PickBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  PickView v = ViewOf(attrs, in[2].shape);
  std::vector<int64_t> idx = ResolveIndices(in[1], v.n, ParseIndexMode(attrs.Params<PickParam>().mode), attrs, v.axis);
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    T* grad = out[0].ptr<T>();
    if (req[0] != OpReq::kAddTo) std::fill(grad, grad + out[0].Size(), T(0));
    ParallelFor(v.outer * v.inner, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / v.inner, i = t % v.inner;
        T* dst = grad + (o * v.n + idx[t]) * v.inner + i;
        *dst = static_cast<T>(*dst + g[t]);
      }
    });
  });
}

bool PickBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[2].is_known() || !(*in)[1].is_known()) return false;
  // The kernel reads one index per output gradient, as the forward reads one per output.
  CheckIndexShape(attrs, (*in)[2], (*in)[1]);
  AssignShape(attrs, in, 0, PickOutShape(attrs, (*in)[2]), "input");
  AssignShape(attrs, out, 0, (*in)[2], "output");
  return true;
}

bool PickBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[2], "input");
  AssignType(attrs, out, 0, (*in)[2], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(pick)
    .AddAlias("choose_element_0index")
    .Describe("Picks one element along axis for every other position, at the index given by `index` (shaped like "
              "the result).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .AddArgument("index", "NDArray-or-Symbol", "The index of the element to pick (any dtype; fractions truncate)")
    .SetParams<PickParam>()
    .SetAttr<FInferShape>("FInferShape", PickShape)
    .SetAttr<FInferType>("FInferType", PickType)
    .SetAttr<FCompute>("FCompute<cpu>", PickCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_pick", {a.out_grads[0], a.inputs[1], a.inputs[0]}, attrs.dict),
                                    b.Op("zeros_like", {a.inputs[1]})};
    });

WEFT_REGISTER_OP(_backward_pick)
    .Describe("Gradient of pick with respect to data: zeros with the output gradient at the picked positions.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("index", "NDArray-or-Symbol", "The forward index")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<PickParam>()
    .SetAttr<FInferShape>("FInferShape", PickBackwardShape)
    .SetAttr<FInferType>("FInferType", PickBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", PickBackward);

}  // namespace op
}  // namespace weft

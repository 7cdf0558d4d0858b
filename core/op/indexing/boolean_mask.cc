// _contrib_boolean_mask: the slices of data along axis whose entry in the 1-D index is
// nonzero. The output's length along the axis depends on the index's values, so the
// imperative path sizes it from the data (FInferShapeFromData); a graph cannot. The
// gradient (_backward_contrib_boolean_mask) puts the output gradient back at the kept
// slices, zeros elsewhere.
#include <algorithm>

#include "core/op/op_util.h"
#include "core/op/shape_from_data.h"

namespace weft {
namespace op {

struct BooleanMaskParam {
  int axis = 0;
};

WEFT_PARAM_SCHEMA(BooleanMaskParam, s) {
  s.Field("axis", &BooleanMaskParam::axis).Default(0).Describe("An integer that represents the axis in NDArray to mask "
                                                               "from.");
}

namespace {

struct MaskView {
  int axis = 0;
  int64_t outer = 1, n = 0, inner = 1;
};

MaskView ViewOf(const NodeAttrs& attrs, const Shape& data, const Shape& index) {
  if (data.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data with at least 1 dimension, got ",
          data.ToString());
  MaskView v;
  v.axis = CheckAxis(attrs, attrs.Params<BooleanMaskParam>().axis, data.ndim());
  v.outer = data.ProdRange(0, v.axis);
  v.n = data[v.axis];
  v.inner = data.ProdRange(v.axis + 1, data.ndim());
  if (index.ndim() != 1 || index[0] != v.n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a 1-D index of length ", v.n,
          " (data's axis ", v.axis, "), got shape ", index.ToString());
  return v;
}

// The positions along the axis that the index keeps.
std::vector<int64_t> Kept(const TBlob& index) {
  std::vector<int64_t> kept;
  WEFT_TYPE_SWITCH(index.dtype, I, {
    const I* p = index.ptr<I>();
    for (int64_t i = 0; i < index.Size(); ++i)
      if (static_cast<double>(p[i]) != 0) kept.push_back(i);
  });
  return kept;
}

void MaskShapeFromData(const NodeAttrs& attrs, const std::vector<TBlob>& in, std::vector<Shape>* out) {
  MaskView v = ViewOf(attrs, in[0].shape, in[1].shape);
  Shape s = in[0].shape;
  s[v.axis] = static_cast<int64_t>(Kept(in[1]).size());
  AssignShape(attrs, out, 0, s, "output");
}

// Checks what can be checked without the index's values; the length along the axis is
// known only when the data-reading rule has set it.
bool MaskShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  MaskView v = ViewOf(attrs, (*in)[0], (*in)[1]);
  Shape s = (*in)[0];
  s[v.axis] = (*out)[0].known_ndim() && (*out)[0].ndim() == s.ndim() ? (*out)[0][v.axis] : -1;
  AssignShape(attrs, out, 0, s, "output");
  return (*out)[0].is_known();
}

bool DataTypeFirst(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void MaskCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  MaskView v = ViewOf(attrs, in[0].shape, in[1].shape);
  std::vector<int64_t> kept = Kept(in[1]);
  int64_t m = static_cast<int64_t>(kept.size());
  if (out[0].Size() != v.outer * m * v.inner)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output of shape ", out[0].shape.ToString(),
          " does not hold the ", m, " kept slices");
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t i = 0; i < v.inner; ++i)
          Store(y + (o * m + j) * v.inner + i, req[0], x[(o * v.n + kept[j]) * v.inner + i]);
  });
}

// Inputs (ograd, data, index); outputs the gradients of data and index.
bool MaskBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  MaskView v = ViewOf(attrs, (*in)[1], (*in)[2]);
  const Shape& g = (*in)[0];
  if (g.known_ndim()) {
    Shape want = (*in)[1];
    want[v.axis] = g.ndim() == want.ndim() ? g[v.axis] : -1;
    AssignShape(attrs, in, 0, want, "input");
  }
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, out, 1, (*in)[2], "output");
  return (*in)[0].is_known();
}

bool MaskBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown || (*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[1], "input");
  AssignType(attrs, out, 0, (*in)[1], "output");
  AssignType(attrs, out, 1, (*in)[2], "output");
  return true;
}

void MaskBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  MaskView v = ViewOf(attrs, in[1].shape, in[2].shape);
  std::vector<int64_t> kept = Kept(in[2]);
  int64_t m = static_cast<int64_t>(kept.size());
  Shape want = in[1].shape;
  want[v.axis] = m;
  if (in[0].shape != want)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the index keeps ", m, " slices: expected ", want.ToString());
  if (req[0] != OpReq::kNullOp) {
    WEFT_TYPE_SWITCH(out[0].dtype, T, {
      const T* g = in[0].ptr<T>();
      T* dx = out[0].ptr<T>();
      if (req[0] != OpReq::kAddTo) std::fill(dx, dx + out[0].Size(), T(0));
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t j = 0; j < m; ++j)
          for (int64_t i = 0; i < v.inner; ++i)
            Store(dx + (o * v.n + kept[j]) * v.inner + i, OpReq::kAddTo, g[(o * m + j) * v.inner + i]);
    });
  }
  if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
    WEFT_TYPE_SWITCH(out[1].dtype, I, { std::fill(out[1].ptr<I>(), out[1].ptr<I>() + out[1].Size(), I(0)); });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_boolean_mask)
    .Describe("The slices of data along axis whose entry in the 1-D index is nonzero. The output's size depends "
              "on the index's values, so it runs imperatively (on the CPU) only.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Data")
    .AddArgument("index", "NDArray-or-Symbol", "Mask")
    .SetParams<BooleanMaskParam>()
    .SetAttr<FInferShapeFromData>("FInferShapeFromData", MaskShapeFromData)
    .SetAttr<FInferShape>("FInferShape", MaskShape)
    .SetAttr<FInferType>("FInferType", DataTypeFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MaskCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_contrib_boolean_mask", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_contrib_boolean_mask)
    .Describe("Gradient of boolean_mask: the output gradient at the kept slices of zeros shaped like data; zeros "
              "for the index.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("index", "NDArray-or-Symbol", "The forward index")
    .SetParams<BooleanMaskParam>()
    .SetAttr<FInferShape>("FInferShape", MaskBackwardShape)
    .SetAttr<FInferType>("FInferType", MaskBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", MaskBackward);

}  // namespace op
}  // namespace weft

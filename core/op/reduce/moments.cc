// moments: the mean and the (population) variance over the given axes. The gradient
// (_backward_moments) is ograd_mean / N + ograd_var * 2 (x - mean) / N, broadcast back.
#include <optional>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct MomentsParam {
  std::optional<Shape> axes;
  bool keepdims = false;
};

WEFT_PARAM_SCHEMA(MomentsParam, s) {
  s.Field("axes", &MomentsParam::axes)
      .Default(std::nullopt)
      .Describe("Array of ints. Axes along which to compute mean and variance (all of them for global moments).");
  s.Field("keepdims", &MomentsParam::keepdims)
      .Default(false)
      .Describe("produce moments with the same dimensionality as the input.");
}

namespace {

// Which axes are reduced, and where each input element's moments sit.
struct MomentsView {
  std::vector<bool> reduced;
  Shape out;
  int64_t count = 1;  // elements per moment
};

MomentsView ViewOf(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<MomentsParam>();
  if (!p.axes || p.axes->ndim() == 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': empty axes are not supported; pass every axis for global moments");
  MomentsView v;
  v.reduced.assign(in.ndim(), false);
  for (int64_t a : *p.axes) {
    int d = CheckAxis(attrs, a, in.ndim(), "axes");
    if (v.reduced[d])
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axis ", a, " appears twice in axes");
    v.reduced[d] = true;
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < in.ndim(); ++d) {
    if (v.reduced[d]) {
      v.count *= in[d];
      if (p.keepdims) dims.push_back(1);
    } else {
      dims.push_back(in[d]);
    }
  }
  // Every axis reduced without keepdims gives (1,), as MXNet's reductions do.
  if (dims.empty()) dims.push_back(1);
  v.out = Shape(dims);
  return v;
}

// The moment index of every input element.
std::vector<int64_t> MomentIndex(const Shape& in, const MomentsView& v) {
  std::vector<int64_t> idx(in.Size());
  std::vector<int64_t> coord(in.ndim(), 0);
  for (int64_t i = 0; i < in.Size(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < in.ndim(); ++d)
      if (!v.reduced[d]) o = o * in[d] + coord[d];
    idx[i] = o;
    for (int d = in.ndim() - 1; d >= 0; --d) {
      if (++coord[d] < in[d]) break;
      coord[d] = 0;
    }
  }
  return idx;
}

bool MomentsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  Shape o = ViewOf(attrs, (*in)[0]).out;
  AssignShape(attrs, out, 0, o, "output");
  AssignShape(attrs, out, 1, o, "output");
  return true;
}

void MomentsCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  MomentsView v = ViewOf(attrs, in[0].shape);
  std::vector<int64_t> idx = MomentIndex(in[0].shape, v);
  int64_t m = v.out.Size();
  std::vector<double> mean(m, 0), var(m, 0);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    for (size_t i = 0; i < idx.size(); ++i) mean[idx[i]] += static_cast<double>(x[i]);
    for (double& s : mean) s /= static_cast<double>(v.count);
    for (size_t i = 0; i < idx.size(); ++i) {
      double d = static_cast<double>(x[i]) - mean[idx[i]];
      var[idx[i]] += d * d;
    }
    for (double& s : var) s /= static_cast<double>(v.count);
    for (int k = 0; k < 2; ++k) {
      if (req[k] == OpReq::kNullOp) continue;
      T* y = out[k].ptr<T>();
      const std::vector<double>& src = k == 0 ? mean : var;
      for (int64_t j = 0; j < m; ++j) Store(y + j, req[k], src[j]);
    }
  });
}

// Inputs (ograd_mean, ograd_var, data, mean, var).
bool MomentsBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[2].is_known()) return false;
  Shape o = ViewOf(attrs, (*in)[2]).out;
  for (size_t i : {0, 1, 3, 4}) AssignShape(attrs, in, i, o, "input");
  AssignShape(attrs, out, 0, (*in)[2], "output");
  return true;
}

void MomentsBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  MomentsView v = ViewOf(attrs, in[2].shape);
  for (size_t i : {0, 1, 3, 4})
    if (in[i].shape != v.out)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " has shape ",
            in[i].shape.ToString(), " but the operator expects ", v.out.ToString());
  if (out[0].shape != in[2].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have the data's shape ",
          in[2].shape.ToString());
  std::vector<int64_t> idx = MomentIndex(in[2].shape, v);
  double n = static_cast<double>(v.count);
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    const T* gm = in[0].ptr<T>();
    const T* gv = in[1].ptr<T>();
    const T* x = in[2].ptr<T>();
    const T* mean = in[3].ptr<T>();
    T* y = out[0].ptr<T>();
    for (size_t i = 0; i < idx.size(); ++i) {
      int64_t j = idx[i];
      double g = static_cast<double>(gm[j]) / n +
                 static_cast<double>(gv[j]) * 2 * (static_cast<double>(x[i]) - static_cast<double>(mean[j])) / n;
      Store(y + i, req[0], g);
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(moments)
    .Describe("The mean and the variance of data over axes (two outputs).")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<MomentsParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"mean", "var"}; })
    .SetAttr<FInferShape>("FInferShape", MomentsShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", MomentsCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      GradValue gm = a.out_grads[0].defined() ? a.out_grads[0] : b.Op("zeros_like", {a.outputs[0]});
      GradValue gv = a.out_grads[1].defined() ? a.out_grads[1] : b.Op("zeros_like", {a.outputs[1]});
      return std::vector<GradValue>{
          b.Op("_backward_moments", {gm, gv, a.inputs[0], a.outputs[0], a.outputs[1]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_moments)
    .Describe("Gradient of moments: ograd_mean / N + ograd_var * 2 (x - mean) / N.")
    .SetNumInputs(5)
    .AddArgument("ograd_mean", "NDArray-or-Symbol", "Gradient of the mean")
    .AddArgument("ograd_var", "NDArray-or-Symbol", "Gradient of the variance")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("mean", "NDArray-or-Symbol", "The forward mean")
    .AddArgument("var", "NDArray-or-Symbol", "The forward variance")
    .SetParams<MomentsParam>()
    .SetAttr<FInferShape>("FInferShape", MomentsBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", MomentsBackward);

}  // namespace op
}  // namespace weft

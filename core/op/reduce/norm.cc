// norm: the L1 or L2 norm over some axes (all by default), and its gradient.
#include <optional>

#include "core/op/reduce/reduce_axes.h"
#include "core/op/reduce/reduce_backward.h"
#include "core/op/reduce/reduce_kernel.h"
#include "core/op/reduce/norm.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(NormParam, s) {
  s.Field("ord", &NormParam::ord).Default(2).Range(1, 2).Describe("Order of the norm: 1 or 2.");
  s.Field("axis", &NormParam::axis)
      .Default(std::nullopt)
      .Describe("The axis or axes to compute the norm over; None means all (the Frobenius norm of a matrix for ord=2).");
  s.Field("out_dtype", &NormParam::out_dtype).Default(std::nullopt).Describe("The output dtype; None keeps the input's.");
  s.Field("keepdims", &NormParam::keepdims).Default(false).Describe("Keep the reduced axes as axes of size 1.");
}

namespace {

std::vector<bool> NormFlags(const NodeAttrs& attrs, const Shape& in) {
  return ReduceFlags(attrs, in, attrs.Params<NormParam>().axis, false);
}

bool NormShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.known_ndim()) return false;
  AssignShape(attrs, out, 0, ReducedShape(x, NormFlags(attrs, x), attrs.Params<NormParam>().keepdims), "output");
  return x.is_known();
}

bool NormType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<NormParam>();
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, p.out_dtype ? *p.out_dtype : (*in)[0], "output");
  return true;
}

template <typename R, typename T>
void NormInto(const TBlob& in, const std::vector<bool>& flags, const TBlob& out, OpReq req) {
  if (out.dtype == in.dtype) {
    Reduce<R, T>(in, flags, out, req);
    return;
  }
  // Another output dtype: reduce in double, then convert.
  std::vector<double> tmp(out.Size());
  Reduce<R, T, double>(in, flags, TBlob(tmp.data(), out.shape, DType::kFloat64, out.ctx), OpReq::kWriteTo);
  WEFT_TYPE_SWITCH(out.dtype, O, {
    O* y = out.ptr<O>();
    for (size_t j = 0; j < tmp.size(); ++j) Store(y + j, req, tmp[j]);
  });
}

void NormCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<bool> flags = NormFlags(attrs, in[0].shape);
  bool l1 = attrs.Params<NormParam>().ord == 1;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    if (l1) NormInto<Norm1Reducer, T>(in[0], flags, out[0], req[0]);
    else NormInto<Norm2Reducer, T>(in[0], flags, out[0], req[0]);
  });
}

std::vector<double> AsDoubles(const TBlob& b) {
  std::vector<double> v(b.Size());
  WEFT_TYPE_SWITCH(b.dtype, T, {
    const T* p = b.ptr<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  });
  return v;
}

// d|x|_2 / dx = x / |x|_2 (0 where the norm is 0); d|x|_1 / dx = sign(x).
void NormBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  const TBlob& data = in[1];
  std::vector<bool> flags = NormFlags(attrs, data.shape);
  std::vector<double> g = AsDoubles(in[0]), y = AsDoubles(in[2]);
  bool l1 = attrs.Params<NormParam>().ord == 1;
  WEFT_TYPE_SWITCH(data.dtype, T, {
    const T* x = data.ptr<T>();
    ReduceBackwardMap(data.shape, flags, out[0].ptr<T>(), req[0], [&](int64_t i, int64_t j) -> double {
      double xi = static_cast<double>(x[i]);
      if (l1) return g[j] * (xi > 0 ? 1.0 : (xi < 0 ? -1.0 : 0.0));
      return y[j] == 0 ? 0.0 : g[j] * xi / y[j];
    });
  });
}

bool NormBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[1];
  if (!x.known_ndim()) return false;
  Shape reduced = ReducedShape(x, NormFlags(attrs, x), attrs.Params<NormParam>().keepdims);
  AssignShape(attrs, in, 0, reduced, "input");
  AssignShape(attrs, in, 2, reduced, "input");
  AssignShape(attrs, out, 0, x, "output");
  return x.is_known();
}

bool NormBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(norm)
    .Describe(
        "The L1 (ord=1) or L2 (ord=2) norm of the elements over the given axes; all axes by default, giving shape "
        "(1,).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<NormParam>()
    .SetAttr<FInferShape>("FInferShape", NormShape)
    .SetAttr<FInferType>("FInferType", NormType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", NormCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_norm", {a.out_grads[0], a.inputs[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_norm)
    .Describe("Gradient of norm.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<NormParam>()
    .SetAttr<FInferShape>("FInferShape", NormBackwardShape)
    .SetAttr<FInferType>("FInferType", NormBackwardType)
    // The GPU kernel reads the output gradient and the norms as doubles from temporary space.
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<FCompute>("FCompute<cpu>", NormBackward);

}  // namespace op
}  // namespace weft

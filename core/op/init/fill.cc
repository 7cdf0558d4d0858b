// Arrays filled with one value: _zeros, _ones, _full (from parameters) and zeros_like,
// ones_like (shaped like their input). _zeros_without_dtype leaves its dtype to the graph
// (or the output array) unless given.
#include <algorithm>

#include "core/op/init/fill_param.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct InitParam {
  Shape shape = Shape::Scalar();
  std::string ctx;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(InitParam, s) {
  s.Field("shape", &InitParam::shape).Default(Shape::Scalar()).Describe("The shape of the output.");
  s.Field("ctx", &InitParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &InitParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
}

// MXNet's _zeros_without_dtype and _full default to an unknown shape (None), which the graph
// infers, where _zeros and _ones default to the scalar shape ().
struct InitWithoutDTypeParam {
  Shape shape = Shape::Unknown();
  std::string ctx;
  int dtype = -1;
};

WEFT_PARAM_SCHEMA(InitWithoutDTypeParam, s) {
  s.Field("shape", &InitWithoutDTypeParam::shape).Default(Shape::Unknown()).Describe("The shape of the output.");
  s.Field("ctx", &InitWithoutDTypeParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &InitWithoutDTypeParam::dtype)
      .Default(-1)
      .Describe("MXNet's dtype number of the output (0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, "
                "6 int64, 7 bool); -1 takes it from where the output is used.");
}

namespace {

void Fill(const TBlob& out, OpReq req, double value) {
  if (req == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(out.dtype, T, {
    T* y = out.ptr<T>();
    // A value outside the dtype's range (full(-1) as uint8) saturates, as Store does.
    const T v = ConvertValue<T>(value);
    ParallelFor(out.Size(), kElemGrain, [&](int64_t b, int64_t e) {
      if (req == OpReq::kAddTo) {
        for (int64_t i = b; i < e; ++i) Store(y + i, req, value);
      } else {
        std::fill(y + b, y + e, v);
      }
    });
  });
}

template <typename P>
bool ParamShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const Shape& s = attrs.Params<P>().shape;
  // -1 is an unknown dimension (NumPy-shape mode's spelling), left for the graph to infer as
  // MXNet does: ones(shape=(-1, -1)) added to a (2, 3) array becomes (2, 3).
  for (int64_t d : s)
    if (d < -1)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape' = ", s.ToString(),
            " has a negative dimension other than -1 (unknown)");
  AssignShape(attrs, out, 0, s, "output");
  return (*out)[0].is_known();
}

template <typename P>
bool ParamType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  return OutputTypeFromParam(attrs, out, attrs.Params<P>().dtype);
}

template <int kValue>
void FillConstant(const NodeAttrs&, const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  Fill(out[0], req[0], kValue);
}

void FillFull(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>& req,
              const std::vector<TBlob>& out) {
  Fill(out[0], req[0], attrs.Params<FullParam>().value);
}

bool WithoutDTypeType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  int t = attrs.Params<InitWithoutDTypeParam>().dtype;
  if (t == -1) return (*out)[0] != DType::kUnknown;
  static const int kKnown[] = {0, 1, 2, 3, 4, 5, 6, 7, 12};
  if (std::find(std::begin(kKnown), std::end(kKnown), t) == std::end(kKnown))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'dtype' = ", t, " names no dtype");
  return OutputTypeFromParam(attrs, out, static_cast<DType>(t));
}

// The output of a *_like operator does not depend on the input's values.
std::vector<GradValue> ZeroGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("zeros_like", {a.inputs[0]})};
}

}  // namespace

WEFT_REGISTER_OP(_zeros)
    .Describe("An array of zeros of the given shape and dtype.")
    .SetNumInputs(0)
    .SetParams<InitParam>()
    .SetAttr<FInferShape>("FInferShape", ParamShape<InitParam>)
    .SetAttr<FInferType>("FInferType", ParamType<InitParam>)
    .SetAttr<FCompute>("FCompute<cpu>", FillConstant<0>);

WEFT_REGISTER_OP(_zeros_without_dtype)
    .Describe("An array of zeros of the given shape, its dtype given by number or left to the graph.")
    .SetNumInputs(0)
    .SetParams<InitWithoutDTypeParam>()
    .SetAttr<FInferShape>("FInferShape", ParamShape<InitWithoutDTypeParam>)
    .SetAttr<FInferType>("FInferType", WithoutDTypeType)
    .SetAttr<FCompute>("FCompute<cpu>", FillConstant<0>);

WEFT_REGISTER_OP(_ones)
    .Describe("An array of ones of the given shape and dtype.")
    .SetNumInputs(0)
    .SetParams<InitParam>()
    .SetAttr<FInferShape>("FInferShape", ParamShape<InitParam>)
    .SetAttr<FInferType>("FInferType", ParamType<InitParam>)
    .SetAttr<FCompute>("FCompute<cpu>", FillConstant<1>);

WEFT_REGISTER_OP(_full)
    .Describe("An array of the given shape and dtype filled with value.")
    .SetNumInputs(0)
    .SetParams<FullParam>()
    .SetAttr<FInferShape>("FInferShape", ParamShape<FullParam>)
    .SetAttr<FInferType>("FInferType", ParamType<FullParam>)
    .SetAttr<FCompute>("FCompute<cpu>", FillFull);

WEFT_REGISTER_OP(zeros_like)
    .Describe("An array of zeros with the shape and dtype of the input.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", FillConstant<0>)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

WEFT_REGISTER_OP(ones_like)
    .Describe("An array of ones with the shape and dtype of the input.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", FillConstant<1>)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

}  // namespace op
}  // namespace weft

// cast (Cast): converts the elements to another dtype (CastValue, cast_convert.h). Its
// gradient converts the output gradient back to the input's dtype (_backward_cast, which
// reads the input only for its dtype).
#include "core/op/op_util.h"
#include "core/op/tensor/cast_convert.h"

namespace weft {
namespace op {

struct CastParam {
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(CastParam, s) { s.Field("dtype", &CastParam::dtype).Describe("The dtype of the output."); }

namespace {

void Convert(const TBlob& in, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(in.dtype, I, {
    WEFT_TYPE_SWITCH(out.dtype, O, {
      const I* x = in.ptr<I>();
      O* y = out.ptr<O>();
      ParallelFor(out.Size(), kElemGrain, [&](int64_t b, int64_t e) {
        if (req == OpReq::kAddTo) {
          for (int64_t i = b; i < e; ++i) y[i] = static_cast<O>(y[i] + CastValue<O>(x[i]));
        } else {
          for (int64_t i = b; i < e; ++i) y[i] = CastValue<O>(x[i]);
        }
      });
    });
  });
}

void CastCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  Convert(in[0], out[0], req[0]);
}

bool CastType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, attrs.Params<CastParam>().dtype, "output");
  return (*in)[0] != DType::kUnknown;
}

// Inputs (ograd, data): the output takes data's dtype.
bool CastBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[1], "output");
  return (*in)[0] != DType::kUnknown;
}

bool CastBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 0, (*in)[1], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return (*in)[1].is_known();
}

}  // namespace

WEFT_REGISTER_OP(Cast)
    .Describe("Converts the elements to dtype.")
    .AddAlias("cast")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<CastParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", CastType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", CastCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_cast", {a.out_grads[0], a.inputs[0]})};
    });

WEFT_REGISTER_OP(_backward_cast)
    .Describe("Gradient of cast: the output gradient converted to the input's dtype.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its dtype)")
    .SetAttr<FInferShape>("FInferShape", CastBackwardShape)
    .SetAttr<FInferType>("FInferType", CastBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", CastCompute);

}  // namespace op
}  // namespace weft

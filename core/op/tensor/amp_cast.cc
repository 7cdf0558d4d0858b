// amp_cast and amp_multicast, the casts that automatic mixed precision inserts into a graph.
//
// amp_cast converts floating-point data (float32, float16, bfloat16) to `dtype` and leaves
// every other dtype as it is. amp_multicast brings its num_outputs inputs to one floating
// type: the widest present (float32 when any input is float32), or with cast_narrow the
// narrowest (float16 or bfloat16 when one is present, float32 otherwise); non-float inputs
// pass unchanged. Their gradients convert each output gradient back to its input's dtype,
// reading the input only for that dtype.
#include "core/base/convert.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct AMPCastParam {
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(AMPCastParam, s) {
  s.Field("dtype", &AMPCastParam::dtype).Describe("The dtype floating-point data is converted to.");
}

struct AMPMultiCastParam {
  int num_outputs = 1;
  bool cast_narrow = false;
};

WEFT_PARAM_SCHEMA(AMPMultiCastParam, s) {
  s.Field("num_outputs", &AMPMultiCastParam::num_outputs).Range(1, 1 << 20).Describe("Number of input/output pairs cast to one type.");
  s.Field("cast_narrow", &AMPMultiCastParam::cast_narrow).Default(false).Describe("Cast to the narrowest floating type present instead of the widest.");
}

namespace {

bool IsAMPFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBfloat16; }

void ConvertReq(const TBlob& in, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (in.dtype == out.dtype) {
    CopyWithReq(in, out, req);
    return;
  }
  WEFT_TYPE_SWITCH(in.dtype, I, {
    WEFT_TYPE_SWITCH(out.dtype, O, {
      const I* x = in.ptr<I>();
      O* y = out.ptr<O>();
      ParallelFor(out.Size(), kElemGrain, [&](int64_t b, int64_t e) {
        if (req == OpReq::kAddTo) {
          for (int64_t i = b; i < e; ++i) y[i] = static_cast<O>(y[i] + ConvertValue<O>(x[i]));
        } else {
          for (int64_t i = b; i < e; ++i) y[i] = ConvertValue<O>(x[i]);
        }
      });
    });
  });
}

void PairwiseCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                     const std::vector<TBlob>& out) {
  for (size_t i = 0; i < out.size(); ++i) ConvertReq(in[i], out[i], req[i]);
}

bool AMPCastType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  AssignType(attrs, out, 0, IsAMPFloat(t) ? attrs.Params<AMPCastParam>().dtype : t, "output");
  return true;
}

int NumPairs(const NodeAttrs& attrs) { return attrs.Params<AMPMultiCastParam>().num_outputs; }

bool AMPMultiCastType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<AMPMultiCastParam>();
  for (DType t : *in) if (t == DType::kUnknown) return false;
  DType target = DType::kFloat32;
  if (p.cast_narrow) {
    for (DType t : *in) if (t == DType::kFloat16 || t == DType::kBfloat16) target = t;
  } else {
    // Without a float32 input, the first floating input's type is the widest there is.
    DType first = DType::kUnknown;
    bool any32 = false;
    for (DType t : *in) {
      if (!IsAMPFloat(t)) continue;
      if (first == DType::kUnknown) first = t;
      any32 = any32 || t == DType::kFloat32;
    }
    target = any32 || first == DType::kUnknown ? DType::kFloat32 : first;
  }
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, out, i, IsAMPFloat((*in)[i]) ? target : (*in)[i], "output");
  return true;
}

bool PairwiseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  bool known = true;
  for (size_t i = 0; i < out->size(); ++i) {
    AssignShape(attrs, out, i, (*in)[i], "output");
    AssignShape(attrs, in, i, (*out)[i], "input");
    known = known && (*in)[i].is_known();
  }
  return known;
}

// Backward inputs: the n output gradients, then the n forward inputs (for their dtypes).
int BackwardInputs(const NodeAttrs& attrs) { return 2 * NumPairs(attrs); }

bool BackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const size_t n = out->size();
  bool known = true;
  for (size_t i = 0; i < n; ++i) {
    AssignShape(attrs, in, i, (*in)[n + i], "input");
    AssignShape(attrs, out, i, (*in)[n + i], "output");
    known = known && (*in)[n + i].is_known();
  }
  return known;
}

bool BackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const size_t n = out->size();
  bool known = true;
  for (size_t i = 0; i < n; ++i) {
    AssignType(attrs, out, i, (*in)[n + i], "output");
    known = known && (*in)[i] != DType::kUnknown && (*in)[n + i] != DType::kUnknown;
  }
  return known;
}

}  // namespace

WEFT_REGISTER_OP(amp_cast)
    .Describe("Casts float32, float16 and bfloat16 data to dtype; other dtypes pass unchanged (used by AMP).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<AMPCastParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", AMPCastType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", PairwiseCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_amp_cast", {a.out_grads[0], a.inputs[0]})};
    });

WEFT_REGISTER_OP(_backward_amp_cast)
    .Describe("Gradient of amp_cast: (ograd, data) -> ograd converted to data's dtype.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its dtype)")
    .SetAttr<FInferShape>("FInferShape", BackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", PairwiseCompute);

WEFT_REGISTER_OP(amp_multicast)
    .Describe("Casts its floating-point inputs to one type, the widest present (or with cast_narrow the narrowest); "
              "other dtypes pass unchanged (used by AMP).")
    .SetNumInputs(NumPairs)
    .SetNumOutputs(NumPairs)
    .SetKeyVarNumArgs("num_outputs")
    .AddArgument("data", "NDArray-or-Symbol[]", "The inputs")
    .SetParams<AMPMultiCastParam>()
    .SetAttr<FInferShape>("FInferShape", PairwiseShape)
    .SetAttr<FInferType>("FInferType", AMPMultiCastType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& attrs) {
                               std::vector<std::pair<int, int>> r;
                               for (int i = 0; i < NumPairs(attrs); ++i) r.emplace_back(i, i);
                               return r;
                             })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PairwiseCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> ins = a.out_grads;
      ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
      return b.Call("_backward_amp_multicast", ins, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_amp_multicast)
    .Describe("Gradient of amp_multicast: (ograds..., data...) -> each ograd converted to its input's dtype.")
    .SetNumInputs(BackwardInputs)
    .SetNumOutputs(NumPairs)
    .AddArgument("data", "NDArray-or-Symbol[]", "The output gradients, then the forward inputs")
    .SetParams<AMPMultiCastParam>()
    .SetAttr<FInferShape>("FInferShape", BackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", PairwiseCompute);

}  // namespace op
}  // namespace weft

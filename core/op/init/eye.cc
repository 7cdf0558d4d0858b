// _eye: a matrix with ones on one diagonal and zeros elsewhere.
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct EyeParam {
  int64_t N = 0;
  int64_t M = 0;
  int64_t k = 0;
  std::string ctx;
  DType dtype = DType::kFloat32;
};

WEFT_PARAM_SCHEMA(EyeParam, s) {
  s.Field("N", &EyeParam::N).Min(0).Describe("Number of rows.");
  s.Field("M", &EyeParam::M).Default(0).Min(0).Describe("Number of columns; 0 means N.");
  s.Field("k", &EyeParam::k)
      .Default(0)
      .Describe("Index of the diagonal: 0 the main one, positive above it, negative below it.");
  s.Field("ctx", &EyeParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &EyeParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
}

namespace {

bool EyeShape(const NodeAttrs& attrs, std::vector<Shape>*, std::vector<Shape>* out) {
  const auto& p = attrs.Params<EyeParam>();
  AssignShape(attrs, out, 0, Shape{p.N, p.M > 0 ? p.M : p.N}, "output");
  return true;
}

bool EyeType(const NodeAttrs& attrs, std::vector<DType>*, std::vector<DType>* out) {
  return OutputTypeFromParam(attrs, out, attrs.Params<EyeParam>().dtype);
}

void EyeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  int64_t rows = out[0].shape[0], cols = out[0].shape[1], k = attrs.Params<EyeParam>().k;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    T* y = out[0].ptr<T>();
    ParallelFor(rows * cols, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Store(y + i, req[0], (i % cols) - (i / cols) == k ? 1.0 : 0.0);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(_eye)
    .Describe("An N x M matrix with ones on diagonal k and zeros elsewhere.")
    .SetNumInputs(0)
    .SetParams<EyeParam>()
    .SetAttr<FInferShape>("FInferShape", EyeShape)
    .SetAttr<FInferType>("FInferType", EyeType)
    .SetAttr<FCompute>("FCompute<cpu>", EyeCompute);

}  // namespace op
}  // namespace weft

// one_hot: for indices of shape S, an array of shape S + (depth,) holding on_value at each
// index and off_value elsewhere (everywhere for indices outside [0, depth)).
#include "core/op/indexing/one_hot.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(OneHotParam, s) {
  s.Field("depth", &OneHotParam::depth).Min(0).Describe("Length of the one-hot axis.");
  s.Field("on_value", &OneHotParam::on_value).Default(1.0).Describe("The value at the index.");
  s.Field("off_value", &OneHotParam::off_value).Default(0.0).Describe("The value elsewhere.");
  s.Field("dtype", &OneHotParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
}

namespace {

bool OneHotShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& idx = (*in)[0];
  if (!idx.is_known()) return false;
  std::vector<int64_t> dims = idx.ToVector();
  dims.push_back(attrs.Params<OneHotParam>().depth);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

bool OneHotType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  OutputTypeFromParam(attrs, out, attrs.Params<OneHotParam>().dtype);
  return (*in)[0] != DType::kUnknown;
}

void OneHotCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<OneHotParam>();
  int64_t depth = p.depth;
  WEFT_TYPE_SWITCH(in[0].dtype, I, {
    WEFT_TYPE_SWITCH(out[0].dtype, T, {
      const I* idx = in[0].ptr<I>();
      T* y = out[0].ptr<T>();
      ParallelFor(in[0].Size(), std::max<int64_t>(1, kElemGrain / std::max<int64_t>(depth, 1)), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          int64_t k = ConvertValue<int64_t>(idx[i]);
          for (int64_t d = 0; d < depth; ++d) Store(y + i * depth + d, req[0], d == k ? p.on_value : p.off_value);
        }
      });
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(one_hot)
    .Describe("One-hot encoding: shape S + (depth,), on_value at each index and off_value elsewhere.")
    .SetNumInputs(1)
    .AddArgument("indices", "NDArray-or-Symbol", "The indices (any dtype; fractions truncate)")
    .SetParams<OneHotParam>()
    .SetAttr<FInferShape>("FInferShape", OneHotShape)
    .SetAttr<FInferType>("FInferType", OneHotType)
    .SetAttr<FCompute>("FCompute<cpu>", OneHotCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("zeros_like", {a.inputs[0]})};
    });

}  // namespace op
}  // namespace weft

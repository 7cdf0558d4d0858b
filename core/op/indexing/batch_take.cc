// batch_take (deprecated in MXNet for pick): one element per row of the input seen as
// (rows, last axis), at that row's index, clipped into range.
#include <algorithm>

#include "core/op/op_util.h"

namespace weft {
namespace op {

namespace {

bool BatchTakeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[1], "output");
  AssignShape(attrs, in, 1, (*out)[0], "input");
  const Shape& a = (*in)[0];
  if (!a.is_known() || !(*in)[1].is_known()) return false;
  if (a.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected input 'a' with at least 2 dimensions, got ",
          a.ToString());
  int64_t rows = a.ProdRange(0, a.ndim() - 1);
  if ((*in)[1].Size() != rows)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'indices' of shape ", (*in)[1].ToString(),
          " has ", (*in)[1].Size(), " elements, but input 'a' of shape ", a.ToString(), " has ", rows, " rows");
  return true;
}

bool BatchTakeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void BatchTakeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& a = in[0].shape;
  int64_t m = a[a.ndim() - 1], rows = a.ProdRange(0, a.ndim() - 1);
  if (in[1].Size() != rows || out[0].Size() != rows)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected ", rows, " indices and outputs, got ",
          in[1].Size(), " and ", out[0].Size());
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    WEFT_TYPE_SWITCH(in[1].dtype, I, {
      const I* idx = in[1].ptr<I>();
      for (int64_t i = 0; i < rows; ++i) {
        int64_t j = std::clamp<int64_t>(ConvertValue<int64_t>(idx[i]), 0, m - 1);
        Store(y + i, req[0], x[i * m + j]);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(batch_take)
    .Describe(
        "One element per row of a (seen as rows x its last axis), at that row's index, clipped into range: "
        "output[i] = a[i, indices[i]]. Deprecated in MXNet in favour of pick.")
    .SetNumInputs(2)
    .AddArgument("a", "NDArray-or-Symbol", "The input array")
    .AddArgument("indices", "NDArray-or-Symbol", "The index array")
    .SetAttr<FInferShape>("FInferShape", BatchTakeShape)
    .SetAttr<FInferType>("FInferType", BatchTakeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", BatchTakeCompute);

}  // namespace op
}  // namespace weft

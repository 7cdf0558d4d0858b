// _contrib_allclose: 1 (uint8, shape ()) when every |a - b| <= atol + rtol * |b| (NaNs
// equal to NaNs with equal_nan), 0 otherwise.
#include <cmath>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct AllCloseParam {
  double rtol = 1e-5;
  double atol = 1e-8;
  bool equal_nan = true;
};

WEFT_PARAM_SCHEMA(AllCloseParam, s) {
  s.Field("rtol", &AllCloseParam::rtol).Default(1e-5).Describe("Relative tolerance.");
  s.Field("atol", &AllCloseParam::atol).Default(1e-8).Describe("Absolute tolerance.");
  s.Field("equal_nan", &AllCloseParam::equal_nan)
      .Default(true)
      .Describe("Whether to compare NaN's as equal. If True, NaN's in A will be considered equal to NaN's in B "
                "in the output array.");
}

namespace {

bool AllCloseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape::Scalar(), "output");
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  if ((*in)[0] != (*in)[1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': inputs 'a' and 'b' must have one shape, got ",
          (*in)[0].ToString(), " and ", (*in)[1].ToString());
  return true;
}

bool AllCloseType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kUint8, "output");
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*in)[1];
  if (t == DType::kUnknown) return false;
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, in, 1, t, "input");
  return true;
}

void AllCloseCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': inputs 'a' and 'b' must have one shape and dtype");
  const auto& p = attrs.Params<AllCloseParam>();
  bool all = true;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* a = in[0].ptr<T>();
    const T* b = in[1].ptr<T>();
    for (int64_t i = 0; all && i < in[0].Size(); ++i) {
      double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
      if (std::isnan(x) || std::isnan(y)) all = p.equal_nan && std::isnan(x) && std::isnan(y);
      else all = x == y || std::fabs(x - y) <= p.atol + p.rtol * std::fabs(y);
    }
  });
  Store(out[0].ptr<uint8_t>(), req[0], all ? 1 : 0);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_allclose)
    .Describe("1 when every |a - b| <= atol + rtol * |b| (NaNs matching NaNs when equal_nan), else 0; a uint8 "
              "scalar.")
    .SetNumInputs(2)
    .AddArgument("a", "NDArray-or-Symbol", "Input array a")
    .AddArgument("b", "NDArray-or-Symbol", "Input array b")
    .SetParams<AllCloseParam>()
    .SetAttr<FInferShape>("FInferShape", AllCloseShape)
    .SetAttr<FInferType>("FInferType", AllCloseType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", AllCloseCompute);

}  // namespace op
}  // namespace weft

// cumsum (MXNet's _np_cumsum, also reachable from the legacy namespace as cumsum): running
// sums along an axis, or over the flattened input when axis is None. Its gradient
// (_backward_np_cumsum) is the reversed running sum of the output gradient, in the shape
// and dtype of the forward input.
#include <algorithm>
#include <optional>

#include "core/op/elemwise/math.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct CumsumParam {
  std::optional<int> axis;
  std::optional<DType> dtype;
};

WEFT_PARAM_SCHEMA(CumsumParam, s) {
  s.Field("axis", &CumsumParam::axis)
      .Default(std::nullopt)
      .Describe("Axis along which the cumulative sum is computed. The default (None) is to compute the cumsum over "
                "the flattened array.");
  s.Field("dtype", &CumsumParam::dtype)
      .Default(std::nullopt)
      .Describe("Type of the returned array and of the accumulator: float16, float32, float64, int8, int32 or "
                "int64; None keeps the input's (int64 for bool).");
}

namespace {

struct CumsumView {
  int64_t outer = 1, n = 1, inner = 1;
};

CumsumView ViewOf(const NodeAttrs& attrs, const Shape& s) {
  CumsumView v;
  const auto& axis = attrs.Params<CumsumParam>().axis;
  if (!axis) {
    v.n = s.Size();
    return v;
  }
  int d = CheckAxis(attrs, *axis, s.ndim());
  v.outer = s.ProdRange(0, d);
  v.n = s[d];
  v.inner = s.ProdRange(d + 1, s.ndim());
  return v;
}

Shape OutShape(const NodeAttrs& attrs, const Shape& in) {
  if (!attrs.Params<CumsumParam>().axis) return Shape({in.Size()});
  ViewOf(attrs, in);
  return in;
}

bool CumsumShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, OutShape(attrs, (*in)[0]), "output");
  return true;
}

bool CumsumType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& dtype = attrs.Params<CumsumParam>().dtype;
  if (dtype) {
    static const DType kAllowed[] = {DType::kFloat16, DType::kFloat32, DType::kFloat64,
                                     DType::kInt8,    DType::kInt32,   DType::kInt64};
    if (std::find(std::begin(kAllowed), std::end(kAllowed), *dtype) == std::end(kAllowed))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'dtype' = ", DTypeName(*dtype),
            " is not one of float16, float32, float64, int8, int32, int64");
    AssignType(attrs, out, 0, *dtype, "output");
    return (*in)[0] != DType::kUnknown;
  }
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0] == DType::kBool ? DType::kInt64 : (*in)[0], "output");
  return true;
}

// y[k] = sum of x[0..k] along each lane (reversed: of x[k..n-1]), accumulated in the
// output's type as numpy does.
void RunningSum(const TBlob& x, const TBlob& y, OpReq req, const CumsumView& v, bool reverse) {
  WEFT_TYPE_SWITCH(x.dtype, I, {
    WEFT_TYPE_SWITCH(y.dtype, O, {
      using A = typename AccType<O>::type;
      const I* xp = x.ptr<I>();
      O* yp = y.ptr<O>();
      for (int64_t lane = 0; lane < v.outer * v.inner; ++lane) {
        int64_t base = (lane / v.inner) * v.n * v.inner + lane % v.inner;
        A s = 0;
        for (int64_t j = 0; j < v.n; ++j) {
          int64_t k = base + (reverse ? v.n - 1 - j : j) * v.inner;
          // Integer sums wrap around as numpy's do (a signed overflow would be undefined:
          // fuzz_c_api found one in int64).
          s = WrapAdd<A>(s, static_cast<A>(xp[k]));
          Store(yp + k, OpReq::kWriteTo, req == OpReq::kAddTo ? WrapAdd<A>(static_cast<A>(yp[k]), s) : s);
        }
      }
    });
  });
}

void CumsumCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  RunningSum(in[0], out[0], req[0], ViewOf(attrs, in[0].shape), false);
}

// Inputs (ograd, data).
bool CumsumBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, OutShape(attrs, (*in)[1]), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

bool CumsumBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[1], "output");
  return (*in)[0] != DType::kUnknown;
}

void CumsumBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Shape want = OutShape(attrs, in[1].shape);
  if (in[0].shape != want || out[0].shape != in[1].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the operator expects ", want.ToString());
  // The lanes of the output gradient and of the data's gradient line up element by element.
  TBlob grad = out[0];
  grad.shape = in[0].shape;
  RunningSum(in[0], grad, req[0], ViewOf(attrs, in[0].shape), true);
}

}  // namespace

WEFT_REGISTER_OP(_np_cumsum)
    .Describe("The cumulative sum of the elements along an axis (of the flattened input when axis is None).")
    .AddAlias("cumsum")
    .SetNumInputs(1)
    .AddArgument("a", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<CumsumParam>()
    .SetAttr<FInferShape>("FInferShape", CumsumShape)
    .SetAttr<FInferType>("FInferType", CumsumType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CumsumCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_np_cumsum", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_np_cumsum)
    .Describe("Gradient of cumsum: the reversed cumulative sum of the output gradient, in the input's shape.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape and dtype)")
    .SetParams<CumsumParam>()
    .SetAttr<FInferShape>("FInferShape", CumsumBackwardShape)
    .SetAttr<FInferType>("FInferType", CumsumBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", CumsumBackward);

}  // namespace op
}  // namespace weft

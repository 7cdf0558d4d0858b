// The reductions with MXNet's axis / keepdims / exclude parameters: sum, mean, prod, max,
// min, nansum, nanprod, and the `_backward_*` operators their gradients call.
#include "core/op/reduce/reduce_axes.h"
#include "core/op/reduce/reduce_backward.h"
#include "core/op/reduce/reduce_kernel.h"

namespace weft {
namespace op {
namespace {

template <typename R>
void ReduceAxesCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  std::vector<bool> flags = ReduceFlags(attrs, in[0].shape);
  WEFT_TYPE_SWITCH(in[0].dtype, T, { Reduce<R, T>(in[0], flags, out[0], req[0]); });
}

// What each reduction's gradient does with an input element x_i of output y_j.
enum class GradKind { kSum, kMean, kProd, kNanSum, kNanProd, kMaxMin };

template <GradKind K>
void ReduceAxesBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const TBlob& ograd = in[0];
  const TBlob& data = in[1];
  std::vector<bool> flags = ReduceFlags(attrs, data.shape);
  int64_t count = ograd.Size() > 0 ? data.Size() / ograd.Size() : 0;
  WEFT_TYPE_SWITCH(data.dtype, T, {
    using A = typename ReduceAcc<T>::type;
    const T* g = ograd.ptr<T>();
    const T* x = data.ptr<T>();
    const T* y = in.size() > 2 ? in[2].ptr<T>() : nullptr;
    const Shape& shape = data.shape;
    ReduceBackwardMap(shape, flags, out[0].ptr<T>(), req[0], [&](int64_t i, int64_t j) -> A {
      A gj = static_cast<A>(g[j]);
      if constexpr (K == GradKind::kSum) {
        return gj;
      } else if constexpr (K == GradKind::kMean) {
        return gj / static_cast<A>(count);
      } else if constexpr (K == GradKind::kNanSum) {
        return IsNaN(static_cast<A>(x[i])) ? A(0) : gj;
      } else if constexpr (K == GradKind::kMaxMin) {
        return static_cast<A>(x[i]) == static_cast<A>(y[j]) ? gj : A(0);
      } else {
        constexpr bool kSkipNaN = K == GradKind::kNanProd;
        A xi = static_cast<A>(x[i]);
        if (kSkipNaN && IsNaN(xi)) return A(0);
        if (xi != A(0)) return gj * (static_cast<A>(y[j]) / xi);
        return gj * ProductOfOthers<A>(x, shape, flags, i, kSkipNaN);
      }
    });
  });
}

// max and min have no identity value, so (as in MXNet) a zero-size input is an error rather
// than a result filled with an arbitrary value.
bool ReduceMinMaxShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (x.is_known() && x.Size() == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': reduction input's size should be > 0, got shape ",
          x.ToString(), " (max and min of an empty array are undefined)");
  return ReduceAxesShape(attrs, in, out);
}

// The gradient input shape is the reduced shape; the result has the data's shape.
bool ReduceBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[1];
  if (!x.known_ndim()) return false;
  const auto& p = attrs.Params<ReduceAxesParam>();
  Shape reduced = ReducedShape(x, ReduceFlags(attrs, x, p.axis, p.exclude), p.keepdims);
  AssignShape(attrs, in, 0, reduced, "input");
  if (in->size() > 2) AssignShape(attrs, in, 2, reduced, "input");
  AssignShape(attrs, out, 0, x, "output");
  return x.is_known();
}

FGradient GradCall(const std::string& backward, bool needs_output) {
  return [backward, needs_output](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    std::vector<GradValue> ins = {a.out_grads[0], a.inputs[0]};
    if (needs_output) ins.push_back(a.outputs[0]);
    return std::vector<GradValue>{b.Op(backward, ins, attrs.dict)};
  };
}

const char* kAxisDoc =
    " over the given axes. axis=None (or ()) reduces every axis; negative axes count from the end; keepdims "
    "keeps reduced axes as size 1; exclude reduces the axes not listed. A result with no axis left has shape (1,).";

WEFT_REGISTER_OP_GROUP(ReduceAxes)
    .SetAttr<FInferShape>("FInferShape", ReduceAxesShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce);

WEFT_REGISTER_OP_GROUP(ReduceAxesBackward)
    .SetAttr<FInferShape>("FInferShape", ReduceBackwardShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kBroadcast);

}  // namespace

WEFT_REGISTER_OP(sum)
    .Describe(std::string("Sum of array elements") + kAxisDoc)
    .AddAlias("sum_axis")
    // MXNet's node for the gradient of broadcast_like/broadcast_to: a sum with the same parameters.
    .AddAlias("_broadcast_backward")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<SumReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_sum", false));

WEFT_REGISTER_OP(mean)
    .Describe(std::string("Mean of array elements") + kAxisDoc)
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<MeanReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_mean", false));

WEFT_REGISTER_OP(prod)
    .Describe(std::string("Product of array elements") + kAxisDoc)
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<ProdReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_prod", true));

WEFT_REGISTER_OP(nansum)
    .Describe(std::string("Sum of array elements, counting NaN as zero,") + kAxisDoc)
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<NanSumReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_nansum", false));

WEFT_REGISTER_OP(nanprod)
    .Describe(std::string("Product of array elements, counting NaN as one,") + kAxisDoc)
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<NanProdReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_nanprod", true));

WEFT_REGISTER_OP(max)
    .Describe(std::string("Maximum of array elements (NaN if any is NaN)") + kAxisDoc)
    .AddAlias("max_axis")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FInferShape>("FInferShape", ReduceMinMaxShape)
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<MaxReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_max", true));

WEFT_REGISTER_OP(min)
    .Describe(std::string("Minimum of array elements (NaN if any is NaN)") + kAxisDoc)
    .AddAlias("min_axis")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxes")
    .SetAttr<FInferShape>("FInferShape", ReduceMinMaxShape)
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesCompute<MinReducer>)
    .SetAttr<FGradient>("FGradient", GradCall("_backward_min", true));

WEFT_REGISTER_OP(_backward_sum)
    .Describe("Gradient of sum: the output gradient broadcast back over the reduced axes.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kSum>);

WEFT_REGISTER_OP(_backward_mean)
    .Describe("Gradient of mean: the output gradient over the count, broadcast back.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kMean>);

WEFT_REGISTER_OP(_backward_nansum)
    .Describe("Gradient of nansum: the output gradient broadcast back, zero at NaNs.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kNanSum>);

WEFT_REGISTER_OP(_backward_prod)
    .Describe("Gradient of prod: the output gradient times the product of the other elements.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kProd>);

WEFT_REGISTER_OP(_backward_nanprod)
    .Describe("Gradient of nanprod: as prod's, with NaNs counted as one and given zero gradient.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kNanProd>);

WEFT_REGISTER_OP(_backward_max)
    .Describe("Gradient of max: the output gradient flows to every element equal to the maximum.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kMaxMin>);

WEFT_REGISTER_OP(_backward_min)
    .Describe("Gradient of min: the output gradient flows to every element equal to the minimum.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("out", "NDArray-or-Symbol", "The forward output")
    .SetParams<ReduceAxesParam>()
    .Include("ReduceAxesBackward")
    .SetAttr<FCompute>("FCompute<cpu>", ReduceAxesBackward<GradKind::kMaxMin>);

}  // namespace op
}  // namespace weft

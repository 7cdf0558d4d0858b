// argmax, argmin and argmax_channel: the position of the largest or smallest element along
// one axis (or of the flattened array), in the input's dtype as in MXNet 1.x. The first
// occurrence wins; a NaN counts as larger and smaller than anything, as in numpy.
#include <optional>

#include "core/op/op_util.h"
#include "core/op/reduce/arg_search.h"
#include "core/op/reduce/reducers.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(ReduceAxisParam, s) {
  s.Field("axis", &ReduceAxisParam::axis)
      .Default(std::nullopt)
      .Describe("The axis to search along (negative counts from the end); None searches the flattened input.");
  s.Field("keepdims", &ReduceAxisParam::keepdims).Default(false).Describe("Keep the searched axis as an axis of size 1.");
}

namespace {

// The view (outer, n, inner) of the input that the search walks, n along the searched axis.
struct SearchView {
  int64_t outer = 1, n = 1, inner = 1;
};

std::optional<int> SearchAxis(const NodeAttrs& attrs) {
  if (attrs.op->name == "argmax_channel") return -1;
  return attrs.Params<ReduceAxisParam>().axis;
}

bool KeepDims(const NodeAttrs& attrs) {
  return attrs.op->name != "argmax_channel" && attrs.Params<ReduceAxisParam>().keepdims;
}

SearchView ViewOf(const NodeAttrs& attrs, const Shape& in) {
  SearchView v;
  std::optional<int> axis = SearchAxis(attrs);
  if (!axis) {
    v.n = in.Size();
    return v;
  }
  int a = CheckAxis(attrs, *axis, in.ndim());
  v.outer = in.ProdRange(0, a);
  v.n = in[a];
  v.inner = in.ProdRange(a + 1, in.ndim());
  return v;
}

bool SearchShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.known_ndim()) return false;
  std::optional<int> axis = SearchAxis(attrs);
  bool keepdims = KeepDims(attrs);
  std::vector<int64_t> dims;
  if (axis) {
    int a = CheckAxis(attrs, *axis, x.ndim());
    if (x[a] == 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': cannot search an empty axis ", *axis,
            " of an input of shape ", x.ToString());
    for (int d = 0; d < x.ndim(); ++d) {
      if (d != a) dims.push_back(x[d]);
      else if (keepdims) dims.push_back(1);
    }
  } else {
    if (x.is_known() && x.Size() == 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': cannot search an empty input of shape ", x.ToString());
    if (keepdims) dims.assign(x.ndim(), 1);
  }
  if (dims.empty()) dims.push_back(1);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return x.is_known();
}

template <bool kMax, typename A>
WEFT_XINLINE bool Better(A v, A best) {
  if (IsNaN(best)) return false;
  if (IsNaN(v)) return true;
  return kMax ? v > best : v < best;
}

template <bool kMax>
void SearchCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  SearchView v = ViewOf(attrs, in[0].shape);
  constexpr int64_t kBlock = 256;
  int64_t blocks = (v.inner + kBlock - 1) / kBlock;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    using A = typename ReduceAcc<T>::type;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(v.outer * blocks, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.n, 1)),
                [&](int64_t b, int64_t e) {
                  A best[kBlock];
                  int64_t idx[kBlock];
                  for (int64_t t = b; t < e; ++t) {
                    int64_t o = t / blocks, l0 = (t % blocks) * kBlock, len = std::min(kBlock, v.inner - l0);
                    const T* base = x + o * v.n * v.inner + l0;
                    for (int64_t l = 0; l < len; ++l) {
                      best[l] = static_cast<A>(base[l]);
                      idx[l] = 0;
                    }
                    for (int64_t r = 1; r < v.n; ++r) {
                      const T* row = base + r * v.inner;
                      for (int64_t l = 0; l < len; ++l) {
                        A val = static_cast<A>(row[l]);
                        if (Better<kMax>(val, best[l])) {
                          best[l] = val;
                          idx[l] = r;
                        }
                      }
                    }
                    for (int64_t l = 0; l < len; ++l) Store(y + o * v.inner + l0 + l, req[0], static_cast<double>(idx[l]));
                  }
                });
  });
}

// Indices are piecewise constant in the input: the gradient is zero.
std::vector<GradValue> ZeroGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("zeros_like", {a.inputs[0]})};
}

}  // namespace

WEFT_REGISTER_OP(argmax)
    .Describe("Index of the maximum along an axis (of the flattened input when axis is None), as a float of the "
              "input's dtype.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxisParam>()
    .SetAttr<FInferShape>("FInferShape", SearchShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", SearchCompute<true>)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

WEFT_REGISTER_OP(argmin)
    .Describe("Index of the minimum along an axis (of the flattened input when axis is None), as a float of the "
              "input's dtype.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<ReduceAxisParam>()
    .SetAttr<FInferShape>("FInferShape", SearchShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", SearchCompute<false>)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

WEFT_REGISTER_OP(argmax_channel)
    .Describe("Index of the maximum along the last axis.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<FInferShape>("FInferShape", SearchShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", SearchCompute<true>)
    .SetAttr<FGradient>("FGradient", ZeroGrad);

}  // namespace op
}  // namespace weft

// take: gathers slices of `a` along an axis at the given indices; the result has the
// indices' shape in place of that axis. The gradient scatter-adds the output gradient
// back (_backward_take), so repeated indices accumulate.
#include <algorithm>

#include "core/op/elemwise/math.h"
#include "core/op/indexing/index_mode.h"
#include "core/op/indexing/take.h"
#include "core/op/reduced_float.h"
#include "core/op/row_groups.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(TakeParam, s) {
  s.Field("axis", &TakeParam::axis).Default(0).Describe("The axis to take along; negative counts from the end.");
  s.Field("mode", &TakeParam::mode)
      .Default("clip")
      .Choices({"clip", "wrap", "raise"})
      .Describe("Out-of-range indices: clip to the ends, wrap around, or raise an error.");
}

namespace {

struct TakeView {
  int axis = 0;
  int64_t outer = 1, n = 0, inner = 1;
};

TakeView ViewOf(const NodeAttrs& attrs, const Shape& a) {
  TakeView v;
  if (a.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an input with at least 1 dimension, got shape ",
          a.ToString());
  v.axis = CheckAxis(attrs, attrs.Params<TakeParam>().axis, a.ndim());
  v.outer = a.ProdRange(0, v.axis);
  v.n = a[v.axis];
  v.inner = a.ProdRange(v.axis + 1, a.ndim());
  return v;
}

Shape TakeOutShape(const NodeAttrs& attrs, const Shape& a, const Shape& idx) {
  TakeView v = ViewOf(attrs, a);
  std::vector<int64_t> dims(a.begin(), a.begin() + v.axis);
  dims.insert(dims.end(), idx.begin(), idx.end());
  dims.insert(dims.end(), a.begin() + v.axis + 1, a.end());
  return Shape(dims);
}

bool TakeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  AssignShape(attrs, out, 0, TakeOutShape(attrs, (*in)[0], (*in)[1]), "output");
  return true;
}

// The output takes the data's dtype; indices may have any dtype.
bool TakeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void TakeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  TakeView v = ViewOf(attrs, in[0].shape);
  if (v.n == 0 && in[1].Size() > 0)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': cannot take from an empty axis ", v.axis,
          " of shape ", in[0].shape.ToString());
  std::vector<int64_t> idx =
      ResolveIndices(in[1], v.n, ParseIndexMode(attrs.Params<TakeParam>().mode), attrs, v.axis);
  int64_t m = static_cast<int64_t>(idx.size());
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* a = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(v.outer * m, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.inner, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / m, j = t % m;
        const T* src = a + (o * v.n + idx[j]) * v.inner;
        T* dst = y + t * v.inner;
        for (int64_t i = 0; i < v.inner; ++i) Store(dst + i, req[0], src[i]);
      }
    });
  });
}

// Inputs (ograd, indices, a); output: the gradient of a.
void TakeBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  TakeView v = ViewOf(attrs, in[2].shape);
  std::vector<int64_t> idx =
      ResolveIndices(in[1], v.n, ParseIndexMode(attrs.Params<TakeParam>().mode), attrs, v.axis);
  int64_t m = static_cast<int64_t>(idx.size());
  constexpr int64_t kBlock = 1024;
  int64_t blocks = (v.inner + kBlock - 1) / kBlock;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    using A = typename AccType<T>::type;
    const T* g = in[0].ptr<T>();
    T* grad = out[0].ptr<T>();
    if (req[0] != OpReq::kAddTo) std::fill(grad, grad + out[0].Size(), T(0));
    // Tasks own disjoint (outer, inner block) ranges, so repeated indices never race.
    if constexpr (kReducedFloat<T>) {
      // bfloat16 and float16 sum each target row in float32 and round once (row_groups.h).
      RowGroups groups = GroupByRow(m, [&](int64_t j) { return idx[j]; });
      ParallelFor(v.outer * blocks, 1, [&](int64_t b, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(kBlock));
        for (int64_t t = b; t < e; ++t) {
          int64_t o = t / blocks, i0 = (t % blocks) * kBlock, len = std::min(kBlock, v.inner - i0);
          for (int64_t k = 0; k < groups.size(); ++k) {
            T* dst = grad + (o * v.n + groups.row[k]) * v.inner + i0;
            for (int64_t i = 0; i < len; ++i) acc[i] = static_cast<float>(dst[i]);
            for (int64_t q = groups.start[k]; q < groups.start[k + 1]; ++q) {
              const T* src = g + (o * m + groups.order[q]) * v.inner + i0;
              for (int64_t i = 0; i < len; ++i) acc[i] += static_cast<float>(src[i]);
            }
            for (int64_t i = 0; i < len; ++i) dst[i] = static_cast<T>(acc[i]);
          }
        }
      });
      return;
    }
    ParallelFor(v.outer * blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / blocks, i0 = (t % blocks) * kBlock, len = std::min(kBlock, v.inner - i0);
        for (int64_t j = 0; j < m; ++j) {
          const T* src = g + (o * m + j) * v.inner + i0;
          T* dst = grad + (o * v.n + idx[j]) * v.inner + i0;
          // Integer gradients wrap around (a signed overflow would be undefined: fuzz_c_api).
          for (int64_t i = 0; i < len; ++i)
            dst[i] = static_cast<T>(WrapAdd<A>(static_cast<A>(dst[i]), static_cast<A>(src[i])));
        }
      }
    });
  });
}

bool TakeBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known() || !(*in)[2].is_known()) return false;
  AssignShape(attrs, in, 0, TakeOutShape(attrs, (*in)[2], (*in)[1]), "input");
  // As the forward refuses at run time: no index can point into an empty axis (clipping
  // would make it -1 and the scatter would write before the gradient).
  TakeView v = ViewOf(attrs, (*in)[2]);
  if (v.n == 0 && (*in)[1].Size() > 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'a' has an empty axis ", v.axis, " (shape ",
          (*in)[2].ToString(), ") but input 'indices' of shape ", (*in)[1].ToString(), " points into it");
  AssignShape(attrs, out, 0, (*in)[2], "output");
  return true;
}

bool TakeBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[2], "input");
  AssignType(attrs, out, 0, (*in)[2], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(take)
    .Describe("Slices of a along axis at the given indices: the result has indices' shape in place of that axis.")
    .SetNumInputs(2)
    .AddArgument("a", "NDArray-or-Symbol", "The array to take from")
    .AddArgument("indices", "NDArray-or-Symbol", "The indices (any dtype; fractions truncate)")
    .SetParams<TakeParam>()
    .SetAttr<FInferShape>("FInferShape", TakeShape)
    .SetAttr<FInferType>("FInferType", TakeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", TakeCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_take", {a.out_grads[0], a.inputs[1], a.inputs[0]}, attrs.dict),
                                    b.Op("zeros_like", {a.inputs[1]})};
    });

WEFT_REGISTER_OP(_backward_take)
    .Describe("Gradient of take with respect to a: the output gradient scatter-added at the indices.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("indices", "NDArray-or-Symbol", "The forward indices")
    .AddArgument("a", "NDArray-or-Symbol", "The forward array (for its shape)")
    .SetParams<TakeParam>()
    .SetAttr<FInferShape>("FInferShape", TakeBackwardShape)
    .SetAttr<FInferType>("FInferType", TakeBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", TakeBackward);

}  // namespace op
}  // namespace weft

// Embedding: looks rows of a (input_dim, output_dim) weight up by index, with MXNet's
// parameters and input order (data, weight). Indices may have any dtype; floating indices
// are truncated towards zero. As in MXNet, out-of-range indices are clipped to
// [0, input_dim - 1] (NaN reads row 0) rather than rejected, in the forward and the
// backward alike. The gradient goes to the weight only (rows scatter-added by index);
// sparse_grad=True is accepted but the gradient is still dense.
#include <cmath>
#include <type_traits>

#include "core/op/nn/embedding.h"
#include "core/op/op_util.h"
#include "core/op/reduced_float.h"
#include "core/op/row_groups.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(EmbeddingParam, s) {
  s.Field("input_dim", &EmbeddingParam::input_dim).Min(1).Describe("Number of rows of the weight (vocabulary size).");
  s.Field("output_dim", &EmbeddingParam::output_dim).Min(1).Describe("Length of each embedding vector.");
  s.Field("dtype", &EmbeddingParam::dtype).Default(DType::kFloat32).Describe("The dtype of the weight and output.");
  s.Field("sparse_grad", &EmbeddingParam::sparse_grad)
      .Default(false)
      .Describe("Accepted for compatibility; the weight gradient is always dense here.");
}

namespace {

// Index value -> a row in [0, rows), clipped as MXNet clips.
template <typename I>
inline int64_t ClipIndex(I v, int64_t rows) {
  if constexpr (std::is_floating_point_v<I> || std::is_same_v<I, float16> || std::is_same_v<I, bfloat16>) {
    double d = static_cast<double>(v);
    if (!(d > 0)) return 0;  // negatives and NaN
    if (d >= static_cast<double>(rows - 1)) return rows - 1;
    return static_cast<int64_t>(d);
  } else if constexpr (std::is_same_v<I, bool>) {
    return std::min<int64_t>(v ? 1 : 0, rows - 1);
  } else {
    int64_t i = static_cast<int64_t>(v);
    return i < 0 ? 0 : (i >= rows ? rows - 1 : i);
  }
}

bool EmbeddingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<EmbeddingParam>();
  AssignShape(attrs, in, 1, Shape{p.input_dim, p.output_dim}, "input");
  const Shape& data = (*in)[0];
  if (!data.is_known()) return false;
  std::vector<int64_t> dims = data.ToVector();
  dims.push_back(p.output_dim);
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

bool EmbeddingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  // As in MXNet, a weight (or output) whose dtype is already known decides it; the dtype
  // parameter only applies when neither is, so a float64 (cast) weight computes in float64.
  DType t = attrs.Params<EmbeddingParam>().dtype;
  if ((*in)[1] != DType::kUnknown)
    t = (*in)[1];
  else if ((*out)[0] != DType::kUnknown)
    t = (*out)[0];
  if ((*in)[0] == DType::kUnknown) (*in)[0] = t;
  AssignType(attrs, in, 1, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

void EmbeddingCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<EmbeddingParam>();
  const int64_t rows = p.input_dim, dim = p.output_dim, n = in[0].Size();
  WEFT_TYPE_SWITCH(in[0].dtype, I, {
    const I* idx = in[0].ptr<I>();
    WEFT_TYPE_SWITCH(out[0].dtype, T, {
      const T* w = in[1].ptr<T>();
      T* y = out[0].ptr<T>();
      ParallelFor(n, std::max<int64_t>(1, kElemGrain / dim), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const T* src = w + ClipIndex(idx[i], rows) * dim;
          T* dst = y + i * dim;
          if (req[0] == OpReq::kAddTo) {
            for (int64_t j = 0; j < dim; ++j) dst[j] = static_cast<T>(dst[j] + src[j]);
          } else {
            std::copy(src, src + dim, dst);
          }
        }
      });
    });
  });
}

// Inputs: ograd, data. Output: the weight gradient. Threads split the columns, so no two
// threads touch one element and rows are added in index order (deterministic sums);
// bfloat16 and float16 sum each row in float32 (row_groups.h).
void EmbeddingBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<EmbeddingParam>();
  const int64_t rows = p.input_dim, dim = p.output_dim, n = in[1].Size();
  WEFT_TYPE_SWITCH(in[1].dtype, I, {
    const I* idx = in[1].ptr<I>();
    WEFT_TYPE_SWITCH(out[0].dtype, T, {
      const T* g = in[0].ptr<T>();
      T* dw = out[0].ptr<T>();
      const int64_t grain = std::max<int64_t>(8, kElemGrain / std::max<int64_t>(n + rows, 1));
      if constexpr (kReducedFloat<T>) {
        RowGroups groups = GroupByRow(n, [&](int64_t i) { return ClipIndex(idx[i], rows); });
        ParallelFor(dim, grain, [&](int64_t b, int64_t e) {
          if (req[0] != OpReq::kAddTo)
            for (int64_t r = 0; r < rows; ++r) std::fill(dw + r * dim + b, dw + r * dim + e, static_cast<T>(0));
          std::vector<float> acc(static_cast<size_t>(e - b));
          for (int64_t k = 0; k < groups.size(); ++k) {
            T* dst = dw + groups.row[k] * dim;
            for (int64_t j = b; j < e; ++j) acc[j - b] = static_cast<float>(dst[j]);
            for (int64_t q = groups.start[k]; q < groups.start[k + 1]; ++q) {
              const T* src = g + groups.order[q] * dim;
              for (int64_t j = b; j < e; ++j) acc[j - b] += static_cast<float>(src[j]);
            }
            for (int64_t j = b; j < e; ++j) dst[j] = static_cast<T>(acc[j - b]);
          }
        });
      } else {
        ParallelFor(dim, grain, [&](int64_t b, int64_t e) {
          if (req[0] != OpReq::kAddTo)
            for (int64_t r = 0; r < rows; ++r) std::fill(dw + r * dim + b, dw + r * dim + e, static_cast<T>(0));
          for (int64_t i = 0; i < n; ++i) {
            T* dst = dw + ClipIndex(idx[i], rows) * dim;
            const T* src = g + i * dim;
            for (int64_t j = b; j < e; ++j) dst[j] = static_cast<T>(dst[j] + src[j]);
          }
        });
      }
    });
  });
}

bool EmbeddingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<EmbeddingParam>();
  AssignShape(attrs, out, 0, Shape{p.input_dim, p.output_dim}, "output");
  const Shape& data = (*in)[1];
  if (!data.is_known()) return false;
  std::vector<int64_t> dims = data.ToVector();
  dims.push_back(p.output_dim);
  AssignShape(attrs, in, 0, Shape(dims), "input");
  return true;
}

bool EmbeddingBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : attrs.Params<EmbeddingParam>().dtype;
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return (*in)[1] != DType::kUnknown;
}

}  // namespace

WEFT_REGISTER_OP(Embedding)
    .Describe(
        "Maps integer indices to rows of the weight: out[..., :] = weight[data[...], :], shape data.shape + "
        "(output_dim,). Indices outside [0, input_dim) are clipped to that range.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The indices (any dtype; floating values are truncated)")
    .AddArgument("weight", "NDArray-or-Symbol", "The embedding matrix (input_dim, output_dim)")
    .SetParams<EmbeddingParam>()
    .SetAttr<FInferShape>("FInferShape", EmbeddingShape)
    .SetAttr<FInferType>("FInferType", EmbeddingType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", EmbeddingCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{GradValue{},
                                    b.Op("_backward_Embedding", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_Embedding)
    .Describe("Gradient of Embedding with respect to the weight: output-gradient rows summed by index.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward indices")
    .SetParams<EmbeddingParam>()
    .SetAttr<FInferShape>("FInferShape", EmbeddingBackwardShape)
    .SetAttr<FInferType>("FInferType", EmbeddingBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", EmbeddingBackward);

}  // namespace op
}  // namespace weft

// gather_nd, scatter_nd and _scatter_set_nd: indices of shape (M, Y...) address the first M
// axes of an array X; gather_nd reads the slices there (result Y... + X[M:]), scatter_nd
// writes data of that shape into zeros of shape X, _scatter_set_nd into a copy of lhs.
// gather_nd's gradient scatter-adds (_backward_gather_nd), scatter_nd's gathers.
#include <algorithm>
#include <memory>

#include "core/op/elemwise/math.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ScatterNDParam {
  Shape shape;
};

WEFT_PARAM_SCHEMA(ScatterNDParam, s) {
  s.Field("shape", &ScatterNDParam::shape).Describe("Shape of output.");
}

namespace {

constexpr int kMaxIndexedAxes = 10;

// The addressing of one call: N index tuples of M coordinates into the first M axes of
// `full`, each naming a slice of K elements.
struct NDIndexing {
  int64_t m = 0, n = 0, k = 1;
  std::vector<int64_t> dims, strides;  // of the M indexed axes, in elements of `full`
};

// The slice shape the indices select (indices' Y... then full's trailing axes).
Shape SelectedShape(const Shape& full, const Shape& idx) {
  std::vector<int64_t> dims(idx.begin() + 1, idx.end());
  dims.insert(dims.end(), full.begin() + idx[0], full.end());
  return Shape(dims);
}

void CheckIndexShape(const NodeAttrs& attrs, const Shape& full, const Shape& idx, const char* full_name) {
  if (idx.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected indices with at least 2 dimensions (M, ...), got shape ", idx.ToString());
  if (idx[0] > full.ndim() || idx[0] > kMaxIndexedAxes)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': indices of shape ", idx.ToString(), " address ",
          idx[0], " axes, but ", full_name, " has shape ", full.ToString(), " (at most ", kMaxIndexedAxes,
          " axes may be indexed)");
}

NDIndexing IndexingOf(const NodeAttrs& attrs, const Shape& full, const Shape& idx) {
  CheckIndexShape(attrs, full, idx, "the indexed array");
  NDIndexing v;
  v.m = idx[0];
  v.n = idx.ProdRange(1, idx.ndim());
  v.k = full.ProdRange(static_cast<int>(v.m), full.ndim());
  v.dims.assign(full.begin(), full.begin() + v.m);
  v.strides.resize(v.m);
  int64_t s = v.k;
  for (int64_t j = v.m - 1; j >= 0; --j) {
    v.strides[j] = s;
    s *= v.dims[j];
  }
  return v;
}

// The element offset of every index tuple; negative coordinates count from the end.
std::vector<int64_t> Offsets(const NodeAttrs& attrs, const NDIndexing& v, const TBlob& idx) {
  std::vector<int64_t> off(v.n, 0);
  WEFT_TYPE_SWITCH(idx.dtype, I, {
    const I* p = idx.ptr<I>();
    for (int64_t j = 0; j < v.m; ++j) {
      for (int64_t i = 0; i < v.n; ++i) {
        int64_t c = static_cast<int64_t>(p[j * v.n + i]);
        if (c < -v.dims[j] || c >= v.dims[j])
          Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': index ", c, " is out of bounds for axis ", j,
                " with size ", v.dims[j]);
        off[i] += (c < 0 ? c + v.dims[j] : c) * v.strides[j];
      }
    }
  });
  return off;
}

void CheckShape(const NodeAttrs& attrs, const TBlob& b, size_t i, const Shape& want) {
  if (b.shape != want)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " has shape ",
          b.shape.ToString(), " but the operator expects ", want.ToString());
}

// Reads: out[i, :] = full[off[i] : off[i] + K].
void Gather(const TBlob& full, const std::vector<int64_t>& off, int64_t k, const TBlob& out, OpReq req) {
  WEFT_TYPE_SWITCH(out.dtype, T, {
    const T* x = full.ptr<T>();
    T* y = out.ptr<T>();
    for (size_t i = 0; i < off.size(); ++i)
      for (int64_t j = 0; j < k; ++j) Store(y + i * k + j, req, x[off[i] + j]);
  });
}

// Writes data[i, :] at y[off[i] :], adding when `accumulate` (repeated indices then sum).
template <typename T>
void Scatter(const T* d, const std::vector<int64_t>& off, int64_t k, bool accumulate, T* y) {
  using A = typename AccType<T>::type;
  for (size_t i = 0; i < off.size(); ++i)
    for (int64_t j = 0; j < k; ++j) {
      T* dst = y + off[i] + j;
      // Integer sums wrap around (a signed overflow would be undefined).
      *dst = accumulate ? static_cast<T>(WrapAdd<A>(static_cast<A>(*dst), static_cast<A>(d[i * k + j]))) : d[i * k + j];
    }
}

// Writes the scatter of `data` into `out` as `req` says; `base` (may be null) is what the
// unaddressed elements hold, zeros otherwise.
void ScatterInto(const TBlob& data, const std::vector<int64_t>& off, int64_t k, bool accumulate, const TBlob* base,
                 const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(out.dtype, T, {
    T* y = out.ptr<T>();
    int64_t size = out.Size();
    if (req == OpReq::kAddTo) {
      // Only the scattered values are added to what the output holds.
      std::unique_ptr<T[]> tmp(new T[size]);
      if (base) std::copy(base->ptr<T>(), base->ptr<T>() + size, tmp.get());
      else std::fill(tmp.get(), tmp.get() + size, T(0));
      Scatter(data.ptr<T>(), off, k, accumulate, tmp.get());
      for (int64_t i = 0; i < size; ++i) y[i] = static_cast<T>(y[i] + tmp[i]);
    } else {
      if (base) {
        if (base->dptr != out.dptr) std::copy(base->ptr<T>(), base->ptr<T>() + size, y);
      } else {
        std::fill(y, y + size, T(0));
      }
      Scatter(data.ptr<T>(), off, k, accumulate, y);
    }
  });
}

// ------------------------------------------------------------------ gather_nd
bool GatherNDShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known() || !(*in)[1].is_known()) return false;
  CheckIndexShape(attrs, (*in)[0], (*in)[1], "input 'data'");
  AssignShape(attrs, out, 0, SelectedShape((*in)[0], (*in)[1]), "output");
  return true;
}

// The output takes the data's dtype; indices may have any dtype.
bool DataTypeFirst(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) (*in)[0] = (*out)[0];
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return (*in)[1] != DType::kUnknown;
}

void GatherNDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  NDIndexing v = IndexingOf(attrs, in[0].shape, in[1].shape);
  CheckShape(attrs, out[0], 0, SelectedShape(in[0].shape, in[1].shape));
  Gather(in[0], Offsets(attrs, v, in[1]), v.k, out[0], req[0]);
}

// ------------------------------------------------------------------ scatter_nd family
// Shapes of (data, indices) -> output of `shape`, as scatter_nd and _backward_gather_nd take.
bool CheckScatterShapes(const NodeAttrs& attrs, const Shape& data, const Shape& idx, const Shape& full) {
  if (!data.is_known() || !idx.is_known() || !full.is_known()) return false;
  CheckIndexShape(attrs, full, idx, "the output");
  Shape want = SelectedShape(full, idx);
  if (data != want)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' has shape ", data.ToString(),
          " but indices of shape ", idx.ToString(), " into an output of shape ", full.ToString(), " need ",
          want.ToString());
  return true;
}

bool ScatterNDShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& shape = attrs.Params<ScatterNDParam>().shape;
  AssignShape(attrs, out, 0, shape, "output");
  return CheckScatterShapes(attrs, (*in)[0], (*in)[1], (*out)[0]);
}

template <bool kAccumulate>
void ScatterNDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckScatterShapes(attrs, in[0].shape, in[1].shape, out[0].shape);
  NDIndexing v = IndexingOf(attrs, out[0].shape, in[1].shape);
  ScatterInto(in[0], Offsets(attrs, v, in[1]), v.k, kAccumulate, nullptr, out[0], req[0]);
}

// Inputs (ograd, indices, data): the gradient of gather_nd's data, where the output shape
// comes from the forward data rather than a parameter.
bool GatherNDGradShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[2].is_known() || !(*in)[1].is_known()) return false;
  CheckIndexShape(attrs, (*in)[2], (*in)[1], "input 'data'");
  AssignShape(attrs, in, 0, SelectedShape((*in)[2], (*in)[1]), "input");
  AssignShape(attrs, out, 0, (*in)[2], "output");
  return true;
}

bool GatherNDGradType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[2], "input");
  AssignType(attrs, out, 0, (*in)[2], "output");
  return (*in)[1] != DType::kUnknown;
}

void GatherNDGradCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckShape(attrs, out[0], 2, in[2].shape);
  CheckScatterShapes(attrs, in[0].shape, in[1].shape, in[2].shape);
  NDIndexing v = IndexingOf(attrs, in[2].shape, in[1].shape);
  ScatterInto(in[0], Offsets(attrs, v, in[1]), v.k, true, nullptr, out[0], req[0]);
}

// Inputs (lhs, rhs, indices): lhs with rhs written at the indices.
bool ScatterSetNDShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, attrs.Params<ScatterNDParam>().shape, "output");
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  return CheckScatterShapes(attrs, (*in)[1], (*in)[2], (*in)[0]);
}

bool ScatterSetNDType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : ((*out)[0] != DType::kUnknown ? (*out)[0] : (*in)[1]);
  if (t == DType::kUnknown) return false;
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, in, 1, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return (*in)[2] != DType::kUnknown;
}

void ScatterSetNDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckShape(attrs, out[0], 0, in[0].shape);
  CheckScatterShapes(attrs, in[1].shape, in[2].shape, in[0].shape);
  NDIndexing v = IndexingOf(attrs, in[0].shape, in[2].shape);
  ScatterInto(in[1], Offsets(attrs, v, in[2]), v.k, false, &in[0], out[0], req[0]);
}

std::vector<GradValue> ScatterNDGrad(GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
  return {b.Op("gather_nd", {a.out_grads[0], a.inputs[1]}), b.Op("zeros_like", {a.inputs[1]})};
}

}  // namespace

WEFT_REGISTER_OP(gather_nd)
    .Describe(
        "Gathers slices of data at N-dimensional indices: indices of shape (M, Y...) address data's first M axes "
        "(negative indices count from the end); the result has shape Y... + data.shape[M:].")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "data")
    .AddArgument("indices", "NDArray-or-Symbol", "indices")
    .SetAttr<FInferShape>("FInferShape", GatherNDShape)
    .SetAttr<FInferType>("FInferType", DataTypeFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", GatherNDCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_gather_nd_like", {a.out_grads[0], a.inputs[1], a.inputs[0]}),
                                    b.Op("zeros_like", {a.inputs[1]})};
    });

WEFT_REGISTER_OP(_backward_gather_nd_like)
    .Describe("Gradient of gather_nd: the output gradient added at the indices into zeros shaped like data.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of gather_nd's output")
    .AddArgument("indices", "NDArray-or-Symbol", "The forward indices")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .SetAttr<FInferShape>("FInferShape", GatherNDGradShape)
    .SetAttr<FInferType>("FInferType", GatherNDGradType)
    .SetAttr<FCompute>("FCompute<cpu>", GatherNDGradCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("gather_nd", {a.out_grads[0], a.inputs[1]}),
                                    b.Op("zeros_like", {a.inputs[1]}), b.Op("zeros_like", {a.inputs[2]})};
    });

WEFT_REGISTER_OP(scatter_nd)
    .Describe(
        "Scatters data into zeros of the given shape at N-dimensional indices: indices of shape (M, Y...) address "
        "the output's first M axes and data has shape Y... + shape[M:]. With repeated indices the last write wins "
        "(and the gradient is not that of any one write).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "data")
    .AddArgument("indices", "NDArray-or-Symbol", "indices")
    .SetParams<ScatterNDParam>()
    .SetAttr<FInferShape>("FInferShape", ScatterNDShape)
    .SetAttr<FInferType>("FInferType", DataTypeFirst)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ScatterNDCompute<false>)
    .SetAttr<FGradient>("FGradient", ScatterNDGrad);

WEFT_REGISTER_OP(_backward_gather_nd)
    .Describe("Like scatter_nd, but values at repeated indices are summed: the gradient of gather_nd.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "data")
    .AddArgument("indices", "NDArray-or-Symbol", "indices")
    .SetParams<ScatterNDParam>()
    .SetAttr<FInferShape>("FInferShape", ScatterNDShape)
    .SetAttr<FInferType>("FInferType", DataTypeFirst)
    .SetAttr<FCompute>("FCompute<cpu>", ScatterNDCompute<true>)
    .SetAttr<FGradient>("FGradient", ScatterNDGrad);

WEFT_REGISTER_OP(_scatter_set_nd)
    .Describe("lhs with rhs written at N-dimensional indices, as scatter_nd writes them; other elements keep lhs.")
    .SetNumInputs(3)
    .AddArgument("lhs", "NDArray-or-Symbol", "source input")
    .AddArgument("rhs", "NDArray-or-Symbol", "value to assign")
    .AddArgument("indices", "NDArray-or-Symbol", "indices")
    .SetParams<ScatterNDParam>()
    .SetAttr<FInferShape>("FInferShape", ScatterSetNDShape)
    .SetAttr<FInferType>("FInferType", ScatterSetNDType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ScatterSetNDCompute);

}  // namespace op
}  // namespace weft

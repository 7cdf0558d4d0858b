// _contrib_index_array: every position's coordinates (all axes, or the chosen ones), as
// int64. _contrib_index_copy: old_tensor with the rows of new_tensor written at the rows
// index_vector names; its gradient (_contrib_backward_index_copy) routes the output
// gradient to the rows each came from.
#include <optional>

#include "core/op/elemwise/gradients.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct IndexArrayParam {
  std::optional<Shape> axes;
};

WEFT_PARAM_SCHEMA(IndexArrayParam, s) {
  s.Field("axes", &IndexArrayParam::axes)
      .Default(std::nullopt)
      .Describe("The axes to include in the index array. Supports negative values.");
}

namespace {

std::vector<int> IndexAxes(const NodeAttrs& attrs, int ndim) {
  const auto& axes = attrs.Params<IndexArrayParam>().axes;
  std::vector<int> out;
  if (!axes) {
    for (int d = 0; d < ndim; ++d) out.push_back(d);
  } else {
    for (int64_t a : *axes) out.push_back(CheckAxis(attrs, a, ndim, "axes"));
  }
  return out;
}

bool IndexArrayShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  std::vector<int64_t> dims(x.begin(), x.end());
  dims.push_back(static_cast<int64_t>(IndexAxes(attrs, x.ndim()).size()));
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

bool IndexArrayType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kInt64, "output");
  return (*in)[0] != DType::kUnknown;
}

void IndexArrayCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& x = in[0].shape;
  std::vector<int> axes = IndexAxes(attrs, x.ndim());
  int64_t m = static_cast<int64_t>(axes.size());
  if (out[0].Size() != x.Size() * m || out[0].dtype != DType::kInt64)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must be int64 with ", x.Size() * m,
          " elements");
  std::vector<int64_t> stride = ContiguousStrides(x);
  int64_t* y = out[0].ptr<int64_t>();
  for (int64_t i = 0; i < x.Size(); ++i)
    for (int64_t j = 0; j < m; ++j) Store(y + i * m + j, req[0], (i / stride[axes[j]]) % x[axes[j]]);
}

// ------------------------------------------------------------------ index_copy
// The rows of new_tensor and their destinations in old_tensor.
std::vector<int64_t> CopyRows(const NodeAttrs& attrs, const TBlob& index, int64_t rows) {
  std::vector<int64_t> dst(index.Size());
  WEFT_TYPE_SWITCH(index.dtype, I, {
    const I* p = index.ptr<I>();
    for (size_t i = 0; i < dst.size(); ++i) {
      dst[i] = ConvertValue<int64_t>(p[i]);
      if (dst[i] < 0 || dst[i] >= rows)
        Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': index ", dst[i], " is out of range for ", rows,
              " rows");
    }
  });
  return dst;
}

void CheckIndexCopyShapes(const NodeAttrs& attrs, const Shape& old_t, const Shape& idx, const Shape& new_t) {
  bool ok = idx.ndim() == 1 && old_t.ndim() == new_t.ndim() && old_t.ndim() >= 1 && idx[0] == new_t[0] &&
            new_t[0] <= old_t[0];
  for (int d = 1; ok && d < old_t.ndim(); ++d) ok = old_t[d] == new_t[d];
  if (!ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a 1-D index_vector with one entry per row of "
          "new_tensor, and new_tensor with old_tensor's trailing dimensions and no more rows; got old_tensor ",
          old_t.ToString(), ", index_vector ", idx.ToString(), ", new_tensor ", new_t.ToString());
}

bool IndexCopyShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  for (const auto& s : *in) if (!s.is_known()) return false;
  CheckIndexCopyShapes(attrs, (*in)[0], (*in)[1], (*in)[2]);
  return true;
}

bool IndexCopyType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : ((*out)[0] != DType::kUnknown ? (*out)[0] : (*in)[2]);
  if (t == DType::kUnknown) return false;
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, in, 2, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return (*in)[1] != DType::kUnknown;
}

void IndexCopyCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  CheckIndexCopyShapes(attrs, in[0].shape, in[1].shape, in[2].shape);
  int64_t rows = in[0].shape[0], row = in[0].shape.ProdRange(1, in[0].shape.ndim());
  std::vector<int64_t> dst = CopyRows(attrs, in[1], rows);
  std::vector<int64_t> src_of(rows, -1);
  for (size_t i = 0; i < dst.size(); ++i) src_of[dst[i]] = static_cast<int64_t>(i);
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    const T* o = in[0].ptr<T>();
    const T* n = in[2].ptr<T>();
    T* y = out[0].ptr<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = src_of[r] < 0 ? o + r * row : n + src_of[r] * row;
      for (int64_t j = 0; j < row; ++j) Store(y + r * row + j, req[0], src[j]);
    }
  });
}

// Inputs (ograd, old_tensor, index_vector, new_tensor); outputs the gradients of the three.
void IndexCopyBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  CheckIndexCopyShapes(attrs, in[1].shape, in[2].shape, in[3].shape);
  if (in[0].shape != in[1].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the operator expects ", in[1].shape.ToString());
  int64_t rows = in[1].shape[0], row = in[1].shape.ProdRange(1, in[1].shape.ndim());
  std::vector<int64_t> dst = CopyRows(attrs, in[2], rows);
  std::vector<char> replaced(rows, 0);
  for (int64_t d : dst) replaced[d] = 1;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    if (req[0] != OpReq::kNullOp) {
      T* go = out[0].ptr<T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < row; ++j) Store(go + r * row + j, req[0], replaced[r] ? T(0) : g[r * row + j]);
    }
    if (req[2] != OpReq::kNullOp) {
      T* gn = out[2].ptr<T>();
      // A row written twice reaches the output from its last writer only.
      std::vector<int64_t> last(rows, -1);
      for (size_t i = 0; i < dst.size(); ++i) last[dst[i]] = static_cast<int64_t>(i);
      for (size_t i = 0; i < dst.size(); ++i)
        for (int64_t j = 0; j < row; ++j)
          Store(gn + i * row + j, req[2], last[dst[i]] == static_cast<int64_t>(i) ? g[dst[i] * row + j] : T(0));
    }
  });
  if (req[1] != OpReq::kNullOp)
    WEFT_TYPE_SWITCH(out[1].dtype, I, {
      I* gi = out[1].ptr<I>();
      for (int64_t i = 0; i < out[1].Size(); ++i) Store(gi + i, req[1], 0.0);
    });
}

bool IndexCopyBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, in, 0, (*in)[1], "input");
  for (int i = 0; i < 3; ++i) AssignShape(attrs, out, i, (*in)[i + 1], "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  CheckIndexCopyShapes(attrs, (*in)[1], (*in)[2], (*in)[3]);
  return true;
}

bool IndexCopyBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[1] == DType::kUnknown || (*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 0, (*in)[1], "input");
  AssignType(attrs, in, 3, (*in)[1], "input");
  for (int i = 0; i < 3; ++i) AssignType(attrs, out, i, (*in)[i + 1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(_contrib_index_array)
    .Describe("For an input of shape (d1, ..., dn), an int64 array of shape (d1, ..., dn, m) holding each "
              "position's coordinates along the chosen axes (all n when axes is None).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .SetParams<IndexArrayParam>()
    .SetAttr<FInferShape>("FInferShape", IndexArrayShape)
    .SetAttr<FInferType>("FInferType", IndexArrayType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", IndexArrayCompute)
    .SetAttr<FGradient>("FGradient", ZeroGradient);

WEFT_REGISTER_OP(_contrib_index_copy)
    .Describe("old_tensor with row i of new_tensor written at row index_vector[i].")
    .SetNumInputs(3)
    .AddArgument("old_tensor", "NDArray-or-Symbol", "Old tensor")
    .AddArgument("index_vector", "NDArray-or-Symbol", "Index vector")
    .AddArgument("new_tensor", "NDArray-or-Symbol", "New tensor to be copied")
    .SetAttr<FInferShape>("FInferShape", IndexCopyShape)
    .SetAttr<FInferType>("FInferType", IndexCopyType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", IndexCopyCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return b.Call("_contrib_backward_index_copy", {a.out_grads[0], a.inputs[0], a.inputs[1], a.inputs[2]});
    });

WEFT_REGISTER_OP(_contrib_backward_index_copy)
    .Describe("Gradient of index_copy: the output gradient where old_tensor's rows were kept, the copied rows' "
              "gradient for new_tensor, zeros for the index.")
    .SetNumInputs(4)
    .SetNumOutputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("old_tensor", "NDArray-or-Symbol", "The forward old_tensor")
    .AddArgument("index_vector", "NDArray-or-Symbol", "The forward index_vector")
    .AddArgument("new_tensor", "NDArray-or-Symbol", "The forward new_tensor")
    .SetAttr<FInferShape>("FInferShape", IndexCopyBackwardShape)
    .SetAttr<FInferType>("FInferType", IndexCopyBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", IndexCopyBackward);

}  // namespace op
}  // namespace weft

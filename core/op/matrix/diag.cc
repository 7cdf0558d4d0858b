// diag: of a 1-D input, the square matrix with it on diagonal k; of an N-D input, diagonal
// k of the planes spanned by axis1 and axis2, as a new last axis. The two are each other's
// gradient (_backward_diag reads the forward input for its shape).
#include <algorithm>
#include <cstdlib>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct DiagParam {
  int k = 0;
  int axis1 = 0;
  int axis2 = 1;
};

WEFT_PARAM_SCHEMA(DiagParam, s) {
  s.Field("k", &DiagParam::k)
      .Default(0)
      .Describe("Diagonal in question: 0 the main one, > 0 above it, < 0 below it.");
  s.Field("axis1", &DiagParam::axis1).Default(0).Describe("The first axis of the planes (N-D input).");
  s.Field("axis2", &DiagParam::axis2).Default(1).Describe("The second axis of the planes (N-D input).");
}

namespace {

// Diagonal element d of the planes sits at row d + row0, column d + col0.
struct DiagView {
  int a1 = 0, a2 = 1;
  int64_t len = 0, row0 = 0, col0 = 0;
};

DiagView ViewOf(const NodeAttrs& attrs, const Shape& planes) {
  const auto& p = attrs.Params<DiagParam>();
  DiagView v;
  v.a1 = CheckAxis(attrs, p.axis1, planes.ndim(), "axis1");
  v.a2 = CheckAxis(attrs, p.axis2, planes.ndim(), "axis2");
  if (v.a1 == v.a2)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': axis1 and axis2 both name axis ", v.a1);
  v.row0 = p.k < 0 ? -static_cast<int64_t>(p.k) : 0;
  v.col0 = p.k > 0 ? p.k : 0;
  v.len = std::min(planes[v.a1] - v.row0, planes[v.a2] - v.col0);
  if (v.len < 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': diagonal k = ", p.k, " lies outside the ",
          planes[v.a1], "x", planes[v.a2], " planes of an input of shape ", planes.ToString());
  return v;
}

// The shape of the extracted diagonals: planes' other axes, then the diagonal.
Shape DiagonalsShape(const Shape& planes, const DiagView& v) {
  std::vector<int64_t> dims;
  for (int d = 0; d < planes.ndim(); ++d)
    if (d != v.a1 && d != v.a2) dims.push_back(planes[d]);
  dims.push_back(v.len);
  return Shape(dims);
}

Shape MatrixOf(const NodeAttrs& attrs, const Shape& vec) {
  int64_t n = vec[0] + std::abs(attrs.Params<DiagParam>().k);
  return Shape({n, n});
}

// The matrix made of a 1-D input (axis1 and axis2 play no part).
DiagView MatrixView(const NodeAttrs& attrs, const Shape& matrix) {
  int k = attrs.Params<DiagParam>().k;
  DiagView v;
  v.row0 = k < 0 ? -static_cast<int64_t>(k) : 0;
  v.col0 = k > 0 ? k : 0;
  v.len = matrix[0] - std::abs(k);
  return v;
}

// The offset in `planes` of every element of the diagonals, in their row-major order.
std::vector<int64_t> DiagonalOffsets(const Shape& planes, const DiagView& v) {
  std::vector<int64_t> stride = ContiguousStrides(planes);
  std::vector<int> rest;
  for (int d = 0; d < planes.ndim(); ++d)
    if (d != v.a1 && d != v.a2) rest.push_back(d);
  Shape diag = DiagonalsShape(planes, v);
  std::vector<int64_t> off(diag.Size());
  for (int64_t i = 0; i < diag.Size(); ++i) {
    int64_t r = i / std::max<int64_t>(v.len, 1), d = i % std::max<int64_t>(v.len, 1), o = 0;
    for (int j = static_cast<int>(rest.size()) - 1; j >= 0; --j) {
      o += (r % planes[rest[j]]) * stride[rest[j]];
      r /= planes[rest[j]];
    }
    off[i] = o + (d + v.row0) * stride[v.a1] + (d + v.col0) * stride[v.a2];
  }
  return off;
}

// diag = planes[offsets] (extract) or planes = zeros with planes[offsets] = diag (place).
void Extract(const TBlob& planes, const DiagView& v, const TBlob& diag, OpReq req) {
  std::vector<int64_t> off = DiagonalOffsets(planes.shape, v);
  WEFT_TYPE_SWITCH(diag.dtype, T, {
    const T* x = planes.ptr<T>();
    T* y = diag.ptr<T>();
    for (size_t i = 0; i < off.size(); ++i) Store(y + i, req, x[off[i]]);
  });
}

void Place(const TBlob& diag, const DiagView& v, const TBlob& planes, OpReq req) {
  std::vector<int64_t> off = DiagonalOffsets(planes.shape, v);
  WEFT_TYPE_SWITCH(planes.dtype, T, {
    const T* x = diag.ptr<T>();
    T* y = planes.ptr<T>();
    if (req != OpReq::kAddTo) std::fill(y, y + planes.Size(), T(0));
    for (size_t i = 0; i < off.size(); ++i) Store(y + off[i], OpReq::kAddTo, x[i]);
  });
}

Shape DiagOutShape(const NodeAttrs& attrs, const Shape& in) {
  if (in.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an input with at least 1 dimension, got ",
          in.ToString());
  if (in.ndim() == 1) return MatrixOf(attrs, in);
  return DiagonalsShape(in, ViewOf(attrs, in));
}

bool DiagShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, DiagOutShape(attrs, (*in)[0]), "output");
  return true;
}

void DiagCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (in[0].shape.ndim() == 1) Place(in[0], MatrixView(attrs, out[0].shape), out[0], req[0]);
  else Extract(in[0], ViewOf(attrs, in[0].shape), out[0], req[0]);
}

// Inputs (ograd, data).
bool DiagBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, DiagOutShape(attrs, (*in)[1]), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

void DiagBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Shape want = DiagOutShape(attrs, in[1].shape);
  if (in[0].shape != want || out[0].shape != in[1].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'ograd' has shape ", in[0].shape.ToString(),
          " but the operator expects ", want.ToString());
  if (in[1].shape.ndim() == 1) Extract(in[0], MatrixView(attrs, in[0].shape), out[0], req[0]);
  else Place(in[0], ViewOf(attrs, out[0].shape), out[0], req[0]);
}

}  // namespace

WEFT_REGISTER_OP(diag)
    .Describe("Of a 1-D input, the square matrix with it on diagonal k; of an N-D input, diagonal k of the planes "
              "spanned by axis1 and axis2, as the last axis of the result.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<DiagParam>()
    .SetAttr<FInferShape>("FInferShape", DiagShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", DiagCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_diag", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_diag)
    .Describe("Gradient of diag: the output gradient's diagonal (1-D input) or the diagonals placed in zeros.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<DiagParam>()
    .SetAttr<FInferShape>("FInferShape", DiagBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", DiagBackward);

}  // namespace op
}  // namespace weft

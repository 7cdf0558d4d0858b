// im2col and col2im: sliding blocks of an image laid out as columns, and back.
//
// im2col turns data (n, c, in...) with 1 to 3 spatial axes into (n, c * prod(kernel),
// prod(out)): row c * K + k (k the kernel tap in row-major order) holds, for every output
// position, the input value the tap sees there (0 in the padding), out = (in + 2 * pad -
// dilate * (kernel - 1) - 1) / stride + 1. col2im is its adjoint: it adds every column entry
// back into the image cell it came from (entries that fell in the padding are dropped), so
// each is the other's gradient.
#include "core/op/nn/item_grain.h"
#include "core/op/nn/conv_common.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct Im2colParam {
  Shape kernel, stride, dilate, pad;
};

WEFT_PARAM_SCHEMA(Im2colParam, s) {
  s.Field("kernel", &Im2colParam::kernel).Describe("Sliding kernel size: (w,), (h, w) or (d, h, w).");
  s.Field("stride", &Im2colParam::stride).Default(Shape::Scalar()).Describe("Stride between blocks; 1 per axis when empty.");
  s.Field("dilate", &Im2colParam::dilate).Default(Shape::Scalar()).Describe("Spacing between kernel taps; 1 per axis when empty.");
  s.Field("pad", &Im2colParam::pad).Default(Shape::Scalar()).Describe("Zero padding on both sides; 0 when empty.");
}

struct Col2imParam {
  Shape output_size, kernel, stride, dilate, pad;
};

WEFT_PARAM_SCHEMA(Col2imParam, s) {
  s.Field("output_size", &Col2imParam::output_size).Describe("Spatial shape of the image: (w,), (h, w) or (d, h, w).");
  s.Field("kernel", &Col2imParam::kernel).Describe("Sliding kernel size: (w,), (h, w) or (d, h, w).");
  s.Field("stride", &Col2imParam::stride).Default(Shape::Scalar()).Describe("Stride between blocks; 1 per axis when empty.");
  s.Field("dilate", &Col2imParam::dilate).Default(Shape::Scalar()).Describe("Spacing between kernel taps; 1 per axis when empty.");
  s.Field("pad", &Col2imParam::pad).Default(Shape::Scalar()).Describe("Zero padding on both sides; 0 when empty.");
}

namespace {

// The geometry, spatial axes right-aligned in arrays of 3 (unused leading axes are 1).
struct Blocks {
  int nd = 0;
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t taps() const { return k[0] * k[1] * k[2]; }
  // -1 while a spatial size is unknown.
  int64_t positions() const { return out[0] < 0 || out[1] < 0 || out[2] < 0 ? -1 : out[0] * out[1] * out[2]; }
  int64_t pixels() const { return in[0] * in[1] * in[2]; }
};

// `spatial` holds the image's nd spatial sizes (entries may be -1 when unknown).
Blocks MakeBlocks(const NodeAttrs& attrs, const Shape& kernel, const Shape& stride, const Shape& dilate,
                  const Shape& pad, const std::vector<int64_t>& spatial) {
  const std::string& op = attrs.op->name;
  WindowAxes w = ParseWindow(op, kernel, stride, &dilate, pad);
  Blocks b;
  b.nd = w.nd;
  for (int i = 0; i < w.nd; ++i) {
    int j = 3 - w.nd + i;
    b.k[j] = w.k[i];
    b.s[j] = w.s[i];
    b.d[j] = w.d[i];
    b.p[j] = w.p[i];
    b.in[j] = spatial[i];
    if (spatial[i] < 0) {
      b.out[j] = -1;
      continue;
    }
    const int64_t extent = w.d[i] * (w.k[i] - 1) + 1, padded = spatial[i] + 2 * w.p[i];
    if (extent > padded)
      Throw(ErrorKind::kShape, "Operator '", op, "': the dilated kernel ", TupleString(w.k, w.nd), " (extent ",
            extent, " on spatial axis ", i, ") is larger than the padded image (", padded, ")");
    b.out[j] = (padded - extent) / w.s[i] + 1;
  }
  return b;
}

// Calls f(column offset, image offset or -1) for every entry of one channel's columns.
template <typename F>
void ForEachEntry(const Blocks& b, F&& f) {
  int64_t col = 0;
  for (int64_t k0 = 0; k0 < b.k[0]; ++k0)
    for (int64_t k1 = 0; k1 < b.k[1]; ++k1)
      for (int64_t k2 = 0; k2 < b.k[2]; ++k2)
        for (int64_t o0 = 0; o0 < b.out[0]; ++o0) {
          const int64_t i0 = o0 * b.s[0] - b.p[0] + k0 * b.d[0];
          const bool in0 = i0 >= 0 && i0 < b.in[0];
          for (int64_t o1 = 0; o1 < b.out[1]; ++o1) {
            const int64_t i1 = o1 * b.s[1] - b.p[1] + k1 * b.d[1];
            const bool in1 = in0 && i1 >= 0 && i1 < b.in[1];
            for (int64_t o2 = 0; o2 < b.out[2]; ++o2, ++col) {
              const int64_t i2 = o2 * b.s[2] - b.p[2] + k2 * b.d[2];
              f(col, in1 && i2 >= 0 && i2 < b.in[2] ? (i0 * b.in[1] + i1) * b.in[2] + i2 : int64_t{-1});
            }
          }
        }
}

// images (planes of b.pixels()) -> columns (planes of taps * positions), one per (n, c).
template <typename T>
void Im2col(const Blocks& b, int64_t planes, const T* im, T* col, OpReq req) {
  const int64_t cs = b.taps() * b.positions(), is = b.pixels();
  ParallelFor(planes, ItemGrain(cs), [&](int64_t pb, int64_t pe) {
    for (int64_t pl = pb; pl < pe; ++pl) {
      const T* x = im + pl * is;
      T* y = col + pl * cs;
      ForEachEntry(b, [&](int64_t c, int64_t i) { Store(y + c, req, i >= 0 ? x[i] : T(0)); });
    }
  });
}

// columns -> images, adding the entries that land on one cell.
template <typename T>
void Col2im(const Blocks& b, int64_t planes, const T* col, T* im, OpReq req) {
  using A = double;  // exact for the integer dtypes too
  const int64_t cs = b.taps() * b.positions(), is = b.pixels();
  ParallelFor(planes, ItemGrain(cs + is), [&](int64_t pb, int64_t pe) {
    std::vector<A> acc(static_cast<size_t>(is));
    for (int64_t pl = pb; pl < pe; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const T* x = col + pl * cs;
      ForEachEntry(b, [&](int64_t c, int64_t i) {
        if (i >= 0) acc[static_cast<size_t>(i)] += static_cast<A>(x[c]);
      });
      T* y = im + pl * is;
      for (int64_t i = 0; i < is; ++i) nn::Put(y + i, req, acc[static_cast<size_t>(i)]);
    }
  });
}

// ------------------------------------------------------------------ geometry from each side
Blocks Im2colBlocks(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<Im2colParam>();
  const int nd = p.kernel.ndim();
  if (data.ndim() != nd + 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': a ", nd, "-D kernel needs data of rank ", nd + 2,
          " (n, c, spatial...), got shape ", data.ToString());
  std::vector<int64_t> spatial(data.begin() + 2, data.end());
  return MakeBlocks(attrs, p.kernel, p.stride, p.dilate, p.pad, spatial);
}

Shape ColumnShape(const Shape& image, const Blocks& b) {
  const int64_t c = image[1] < 0 ? -1 : image[1] * b.taps();
  return Shape({image[0], c, b.positions()});
}

Blocks Col2imBlocks(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<Col2imParam>();
  if (p.output_size.ndim() != p.kernel.ndim())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': output_size ", p.output_size.ToString(),
          " and kernel ", p.kernel.ToString(), " must have the same number of axes");
  for (int64_t v : p.output_size)
    if (v <= 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': output_size must be positive, got ",
            p.output_size.ToString());
  return MakeBlocks(attrs, p.kernel, p.stride, p.dilate, p.pad,
                    std::vector<int64_t>(p.output_size.begin(), p.output_size.end()));
}

Shape ImageShape(const Shape& col, const Blocks& b) {
  const int64_t c = col[1] < 0 ? -1 : col[1] / b.taps();
  std::vector<int64_t> d{col[0], c};
  for (int i = 3 - b.nd; i < 3; ++i) d.push_back(b.in[i]);
  return Shape(d);
}

void CheckColumns(const NodeAttrs& attrs, const Shape& col, const Blocks& b, const char* what) {
  if (col.ndim() != 3)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what,
          "' must be 3-D (n, c * prod(kernel), positions), got shape ", col.ToString());
  if (col[1] >= 0 && col[1] % b.taps() != 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what, "' has ", col[1],
          " rows, not a multiple of the kernel's ", b.taps(), " taps (shape ", col.ToString(), ")");
  if (col[2] >= 0 && col[2] != b.positions())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what, "' has ", col[2],
          " columns but the geometry gives ", b.positions(), " block positions (shape ", col.ToString(), ")");
}

bool Im2colShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  AssignShape(attrs, out, 0, ColumnShape(d, Im2colBlocks(attrs, d)), "output");
  return d.is_known();
}

bool Col2imShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& c = (*in)[0];
  if (!c.known_ndim()) return false;
  Blocks b = Col2imBlocks(attrs);
  CheckColumns(attrs, c, b, "data");
  AssignShape(attrs, out, 0, ImageShape(c, b), "output");
  return c.is_known();
}

void Im2colCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Blocks b = Im2colBlocks(attrs, in[0].shape);
  WEFT_TYPE_SWITCH(in[0].dtype, T, { Im2col<T>(b, in[0].shape[0] * in[0].shape[1], in[0].ptr<T>(), out[0].ptr<T>(), req[0]); });
}

void Col2imCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Blocks b = Col2imBlocks(attrs);
  WEFT_TYPE_SWITCH(in[0].dtype, T, { Col2im<T>(b, out[0].shape[0] * out[0].shape[1], in[0].ptr<T>(), out[0].ptr<T>(), req[0]); });
}

// _backward_im2col: (out_grad columns, data) -> d data.
bool Im2colBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.known_ndim()) return false;
  AssignShape(attrs, in, 0, ColumnShape(d, Im2colBlocks(attrs, d)), "input");
  AssignShape(attrs, out, 0, d, "output");
  return d.is_known();
}

void Im2colBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Blocks b = Im2colBlocks(attrs, in[1].shape);
  if (in[0].shape != ColumnShape(in[1].shape, b))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad has shape ", in[0].shape.ToString(),
          ", expected ", ColumnShape(in[1].shape, b).ToString());
  const Shape& d = in[1].shape;
  WEFT_TYPE_SWITCH(in[0].dtype, T, { Col2im<T>(b, d[0] * d[1], in[0].ptr<T>(), out[0].ptr<T>(), req[0]); });
}

// _backward_col2im: (out_grad image) -> d columns.
bool Col2imBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& g = (*in)[0];
  if (!g.known_ndim()) return false;
  Blocks b = Col2imBlocks(attrs);
  if (g.ndim() != b.nd + 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad must have rank ", b.nd + 2, ", got shape ",
          g.ToString());
  for (int i = 0; i < b.nd; ++i)
    if (g[2 + i] >= 0 && g[2 + i] != b.in[3 - b.nd + i])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad has shape ", g.ToString(),
            " but output_size is ", attrs.Params<Col2imParam>().output_size.ToString());
  AssignShape(attrs, out, 0, ColumnShape(g, b), "output");
  return g.is_known();
}

void Col2imBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Blocks b = Col2imBlocks(attrs);
  const Shape& g = in[0].shape;
  if (g.ndim() != b.nd + 2 || out[0].shape != ColumnShape(g, b))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad has shape ", g.ToString(),
          " which does not fit output_size ", attrs.Params<Col2imParam>().output_size.ToString());
  WEFT_TYPE_SWITCH(in[0].dtype, T, { Im2col<T>(b, g[0] * g[1], in[0].ptr<T>(), out[0].ptr<T>(), req[0]); });
}

}  // namespace

WEFT_REGISTER_OP(im2col)
    .Describe("Lays the sliding blocks of data (n, c, spatial...) out as columns: (n, c * prod(kernel), number of "
              "block positions).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input array to extract sliding blocks from")
    .SetParams<Im2colParam>()
    .SetAttr<FInferShape>("FInferShape", Im2colShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Im2colCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_im2col", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_im2col)
    .Describe("Gradient of im2col: (out_grad, data) -> d data, the columns added back into the image (col2im).")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the columns")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<Im2colParam>()
    .SetAttr<FInferShape>("FInferShape", Im2colBackwardShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Im2colBackwardCompute);

WEFT_REGISTER_OP(col2im)
    .Describe("Adds columns (n, c * prod(kernel), block positions) back into images (n, c, output_size...), the "
              "adjoint of im2col.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input array of columns")
    .SetParams<Col2imParam>()
    .SetAttr<FInferShape>("FInferShape", Col2imShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Col2imCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_col2im", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_col2im)
    .Describe("Gradient of col2im: (out_grad image) -> d columns (im2col of the gradient).")
    .SetNumInputs(1)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the image")
    .SetParams<Col2imParam>()
    .SetAttr<FInferShape>("FInferShape", Col2imBackwardShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Col2imBackwardCompute);

}  // namespace op
}  // namespace weft

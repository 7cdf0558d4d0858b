// Crop (MXNet's legacy operator): cuts a window out of the two spatial axes of NCHW data.
// The window is h_w = (h, w) with one input, or the height and width of the second input
// (crop_like) with two; it starts at offset = (y, x), or in the middle (rounded down) with
// center_crop. The gradient puts the output gradient back at the window and zeros elsewhere;
// crop_like gets a zero gradient.
#include "core/op/nn/item_grain.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct CropParam {
  int num_args = 1;
  Shape offset, h_w;
  bool center_crop = false;
};

WEFT_PARAM_SCHEMA(CropParam, s) {
  s.Field("num_args", &CropParam::num_args)
      .Range(1, 2)
      .Describe("Number of inputs: 1 crops to h_w, 2 to the height and width of the second input (crop_like).");
  s.Field("offset", &CropParam::offset).Default(Shape({0, 0})).Describe("Crop offset (y, x).");
  s.Field("h_w", &CropParam::h_w).Default(Shape({0, 0})).Describe("Crop height and width (h, w), used with one input.");
  s.Field("center_crop", &CropParam::center_crop)
      .Default(false)
      .Describe("Centre the window instead of starting it at offset.");
}

namespace {

void CheckData(const NodeAttrs& attrs, const Shape& d, const char* what) {
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what,
          "' must be 4-D (batch, channel, height, width), got shape ", d.ToString());
}

// The window's (h, w), or (-1, -1) while crop_like's shape is unknown.
std::pair<int64_t, int64_t> WindowSize(const NodeAttrs& attrs, const Shape& data, const Shape& like) {
  const auto& p = attrs.Params<CropParam>();
  int64_t h, w;
  if (p.num_args == 1) {
    if (p.h_w.ndim() != 2)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': h_w must be (h, w), got ", p.h_w.ToString());
    h = p.h_w[0];
    w = p.h_w[1];
    if (h < 1 || w < 1)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': h_w must be positive with one input, got ",
            p.h_w.ToString());
  } else {
    if (!like.known_ndim()) return {-1, -1};
    CheckData(attrs, like, "crop_like");
    h = like[2];
    w = like[3];
  }
  if ((data[2] >= 0 && h > data[2]) || (data[3] >= 0 && w > data[3]))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the crop window (", h, ", ", w,
          ") is larger than the data's height and width (data shape ", data.ToString(), ")");
  return {h, w};
}

// The window's top-left corner for data (n, c, H, W) and a window (h, w).
std::pair<int64_t, int64_t> WindowOffset(const NodeAttrs& attrs, const Shape& data, int64_t h, int64_t w) {
  const auto& p = attrs.Params<CropParam>();
  if (p.center_crop) return {(data[2] - h) / 2, (data[3] - w) / 2};
  if (p.offset.ndim() != 2)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': offset must be (y, x), got ", p.offset.ToString());
  const int64_t y = p.offset[0], x = p.offset[1];
  if (y < 0 || x < 0 || y > data[2] - h || x > data[3] - w)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': offset ", p.offset.ToString(), " puts the window (",
          h, ", ", w, ") outside the data's height and width (data shape ", data.ToString(), ")");
  return {y, x};
}

bool CropShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  CheckData(attrs, d, "data");
  auto hw = WindowSize(attrs, d, in->size() > 1 ? (*in)[1] : Shape());
  if (hw.first < 0) return false;
  if (d[2] >= 0 && d[3] >= 0) WindowOffset(attrs, d, hw.first, hw.second);
  AssignShape(attrs, out, 0, Shape({d[0], d[1], hw.first, hw.second}), "output");
  return d.is_known() && (in->size() < 2 || (*in)[1].is_known());
}

bool CropType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  return true;
}

// Copies window rows between data (n, c, H, W) and the window (n, c, h, w): forward reads
// data into the window; backward writes the window back (and zeros around it).
template <typename T>
void CropRows(const Shape& data, int64_t h, int64_t w, int64_t y0, int64_t x0, const T* src, T* dst, OpReq req,
              bool backward) {
  const int64_t planes = data[0] * data[1], H = data[2], W = data[3];
  ParallelFor(planes, ItemGrain(backward ? H * W : h * w), [&](int64_t pb, int64_t pe) {
    for (int64_t pl = pb; pl < pe; ++pl) {
      if (!backward) {
        for (int64_t r = 0; r < h; ++r) {
          const T* s = src + (pl * H + y0 + r) * W + x0;
          T* d = dst + (pl * h + r) * w;
          for (int64_t c = 0; c < w; ++c) Store(d + c, req, s[c]);
        }
        continue;
      }
      for (int64_t r = 0; r < H; ++r) {
        T* d = dst + (pl * H + r) * W;
        const bool inside = r >= y0 && r < y0 + h;
        for (int64_t c = 0; c < W; ++c) {
          const bool in_window = inside && c >= x0 && c < x0 + w;
          T v = in_window ? src[(pl * h + r - y0) * w + c - x0] : T(0);
          if (req == OpReq::kAddTo) {
            if (in_window) d[c] = static_cast<T>(d[c] + v);
          } else {
            d[c] = v;
          }
        }
      }
    }
  });
}

void CropCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[0].shape;
  const int64_t h = out[0].shape[2], w = out[0].shape[3];
  auto off = WindowOffset(attrs, d, h, w);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    CropRows<T>(d, h, w, off.first, off.second, in[0].ptr<T>(), out[0].ptr<T>(), req[0], false);
  });
}

// _backward_Crop: (out_grad, data) -> d data.
bool CropBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  const Shape& g = (*in)[0];
  if (!d.is_known() || !g.is_known()) return false;
  CheckData(attrs, d, "data");
  CheckData(attrs, g, "out_grad");
  if (g[0] != d[0] || g[1] != d[1] || g[2] > d[2] || g[3] > d[3])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad of shape ", g.ToString(),
          " is not a window of data of shape ", d.ToString());
  if (attrs.Params<CropParam>().num_args == 1) {
    const auto& hw = attrs.Params<CropParam>().h_w;
    if (hw.ndim() != 2 || hw[0] != g[2] || hw[1] != g[3])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad of shape ", g.ToString(),
            " does not match h_w ", hw.ToString());
  }
  WindowOffset(attrs, d, g[2], g[3]);
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

void CropBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[1].shape;
  const Shape& g = in[0].shape;
  if (g.ndim() != 4 || d.ndim() != 4 || g[0] != d[0] || g[1] != d[1] || g[2] > d[2] || g[3] > d[3] ||
      out[0].shape != d)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad of shape ", g.ToString(),
          " is not a window of data of shape ", d.ToString());
  auto off = WindowOffset(attrs, d, g[2], g[3]);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    CropRows<T>(d, g[2], g[3], off.first, off.second, in[0].ptr<T>(), out[0].ptr<T>(), req[0], true);
  });
}

}  // namespace

WEFT_REGISTER_OP(Crop)
    .Describe("Crops the height and width of NCHW data to h_w (one input) or to the second input's height and width "
              "(crop_like), from offset or the centre.")
    .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<CropParam>().num_args; })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("data", "NDArray-or-Symbol[]", "The data to crop, then (with num_args=2) the array whose height "
                 "and width the crop takes")
    .SetParams<CropParam>()
    .SetAttr<FInferShape>("FInferShape", CropShape)
    .SetAttr<FInferType>("FInferType", CropType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", CropCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> g{b.Op("_backward_Crop", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
      if (a.inputs.size() > 1) g.push_back(b.Op("zeros_like", {a.inputs[1]}));
      return g;
    });

WEFT_REGISTER_OP(_backward_Crop)
    .Describe("Gradient of Crop: (out_grad, data) -> d data, out_grad at the window and 0 elsewhere.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the cropped output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .SetParams<CropParam>()
    .SetAttr<FInferShape>("FInferShape", CropBackwardShape)
    .SetAttr<FInferType>("FInferType", [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
      if ((*in)[0] == DType::kUnknown) return false;
      AssignType(attrs, out, 0, (*in)[0], "output");
      return true;
    })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CropBackwardCompute);

}  // namespace op
}  // namespace weft

// The geometric and layout _image_* operators of MXNet 1.9 (nd.image / sym.image):
// to_tensor, normalize, flip_left_right, flip_top_bottom, their random variants, and crop.
//
// Images are HWC: (H, W, C), and for to_tensor and crop also batches (N, H, W, C);
// normalize works on the CHW tensors that to_tensor makes. The flips accept one image, as
// MXNet's do. Gradients: normalize's (out_grad / std), crop's (the gradient put back at the
// window) and the deterministic flips' (the same flip); to_tensor and the random flips have
// none.
#include <algorithm>
#include <vector>

#include "core/op/image/image_util.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct ImageNormalizeParam {
  std::vector<double> mean, std;
};

WEFT_PARAM_SCHEMA(ImageNormalizeParam, s) {
  s.Field("mean", &ImageNormalizeParam::mean)
      .Default(std::vector<double>{0, 0, 0, 0})
      .Describe("Mean of each channel (one value for all, or at least one per channel; the first C are used).");
  s.Field("std", &ImageNormalizeParam::std)
      .Default(std::vector<double>{1, 1, 1, 1})
      .Describe("Standard deviation of each channel (one value for all, or at least one per channel).");
}

struct ImageCropParam {
  int x = 0, y = 0, width = 0, height = 0;
};

WEFT_PARAM_SCHEMA(ImageCropParam, s) {
  s.Field("x", &ImageCropParam::x).Describe("Left boundary of the cropping area.");
  s.Field("y", &ImageCropParam::y).Describe("Top boundary of the cropping area.");
  s.Field("width", &ImageCropParam::width).Describe("Width of the cropping area.");
  s.Field("height", &ImageCropParam::height).Describe("Height of the cropping area.");
}

namespace image {
namespace {

// ------------------------------------------------------------------ to_tensor
bool ToTensorShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known_ndim()) return false;
  CheckHWC(attrs, s, true, false);
  Shape o = s.ndim() == 3 ? Shape({s[2], s[0], s[1]}) : Shape({s[0], s[3], s[1], s[2]});
  AssignShape(attrs, out, 0, o, "output");
  return s.is_known();
}

bool ToTensorType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kBool)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a numeric image, got dtype bool");
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  return (*in)[0] != DType::kUnknown;
}

void ToTensorCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                     const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = in[0].shape;
  const int64_t n = s.ndim() == 4 ? s[0] : 1, pixels = s[s.ndim() - 3] * s[s.ndim() - 2], c = s[s.ndim() - 1];
  float* y = out[0].ptr<float>();
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    ParallelFor(n * c, ItemGrain(pixels), [&](int64_t qb, int64_t qe) {
      for (int64_t q = qb; q < qe; ++q) {
        const int64_t b = q / c, ch = q % c;
        const T* src = x + b * pixels * c + ch;
        float* dst = y + q * pixels;
        for (int64_t i = 0; i < pixels; ++i) Store(dst + i, req[0], static_cast<float>(src[i * c]) / 255.0f);
      }
    });
  });
}

// ------------------------------------------------------------------ normalize
// (C, H, W) or (N, C, H, W): the channel axis and the per-channel values.
int ChannelAxis(const Shape& s) { return s.ndim() == 3 ? 0 : 1; }

void CheckCHW(const NodeAttrs& attrs, const Shape& s, const char* what) {
  if (s.ndim() != 3 && s.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what,
          "' must have shape (channels, height, width) or (N, channels, height, width), got ", s.ToString());
}

std::vector<double> PerChannel(const NodeAttrs& attrs, const std::vector<double>& v, int64_t c, const char* name) {
  if (v.size() != 1 && static_cast<int64_t>(v.size()) < c)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ", name, " has ", v.size(),
          " values; expected 1 or one per channel (", c, ")");
  std::vector<double> r(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) r[static_cast<size_t>(i)] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  return r;
}

bool NormalizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape s = (*in)[0].known_ndim() ? (*in)[0] : (*out)[0];
  if (!s.known_ndim()) return false;
  CheckCHW(attrs, s, "data");
  const auto& p = attrs.Params<ImageNormalizeParam>();
  const int64_t c = s[ChannelAxis(s)];
  if (c >= 0) {
    PerChannel(attrs, p.mean, c, "mean");
    for (double v : PerChannel(attrs, p.std, c, "std"))
      if (v == 0) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': std must not be 0");
  }
  return SameShape(attrs, in, out);
}

// y = (x - mean[c]) / std[c], or for the backward (mean 0) dx = dy / std[c]; divided, not
// multiplied by a reciprocal, so that float32 results equal numpy's float32 arithmetic.
template <typename T>
void PerChannelAffine(const Shape& s, const std::vector<double>& mean, const std::vector<double>& std, const T* x,
                      T* y, OpReq req) {
  using A = nn::Acc<T>;
  const int axis = ChannelAxis(s);
  const int64_t c = s[axis], n = axis == 1 ? s[0] : 1, plane = s[axis + 1] * s[axis + 2];
  ParallelFor(n * c, ItemGrain(plane), [&](int64_t qb, int64_t qe) {
    for (int64_t q = qb; q < qe; ++q) {
      const size_t ch = static_cast<size_t>(q % c);
      const A m = static_cast<A>(mean[ch]), sd = static_cast<A>(std[ch]);
      for (int64_t i = q * plane; i < (q + 1) * plane; ++i) nn::Put(y + i, req, (static_cast<A>(x[i]) - m) / sd);
    }
  });
}

void NormalizeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<ImageNormalizeParam>();
  const Shape& s = in[0].shape;
  const int64_t c = s[ChannelAxis(s)];
  const auto mean = PerChannel(attrs, p.mean, c, "mean"), std = PerChannel(attrs, p.std, c, "std");
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    PerChannelAffine<T>(s, mean, std, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
  });
}

// _backward_image_normalize: (out_grad, data) -> d data.
bool NormalizeBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.known_ndim()) return false;
  CheckCHW(attrs, d, "data");
  return SameShape(attrs, in, out);
}

void NormalizeBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = in[1].shape;
  if (in[0].shape != s || out[0].shape != s)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad has shape ", in[0].shape.ToString(),
          " but data has ", s.ToString());
  const int64_t c = s[ChannelAxis(s)];
  const auto std = PerChannel(attrs, attrs.Params<ImageNormalizeParam>().std, c, "std");
  const std::vector<double> zero(static_cast<size_t>(c), 0.0);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    PerChannelAffine<T>(s, zero, std, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
  });
}

// ------------------------------------------------------------------ flips
bool AugmentShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape s = (*in)[0].known_ndim() ? (*in)[0] : (*out)[0];
  if (!s.known_ndim()) return false;
  CheckHWC(attrs, s, false, true);
  return SameShape(attrs, in, out);
}

// Reverses axis 0 (rows) or 1 (columns) of an (H, W, C) image, one mirrored pair of rows or
// pixels at a time; in place the pair is swapped.
template <typename T>
void FlipImage(const Shape& s, int axis, const T* x, T* y, OpReq req) {
  const int64_t H = s[0], W = s[1], C = s[2];
  const int64_t outer = axis == 0 ? 1 : H, mid = axis == 0 ? H : W, tail = axis == 0 ? W * C : C;
  const int64_t pairs = (mid + 1) / 2;
  ParallelFor(outer * pairs, ItemGrain(2 * tail), [&](int64_t qb, int64_t qe) {
    for (int64_t q = qb; q < qe; ++q) {
      const int64_t o = q / pairs, j = q % pairs;
      const int64_t a = (o * mid + j) * tail, b = (o * mid + mid - 1 - j) * tail;
      if (req == OpReq::kAddTo) {
        for (int64_t k = 0; k < tail; ++k) {
          const T va = x[a + k], vb = x[b + k];
          Store(y + a + k, req, vb);
          if (a != b) Store(y + b + k, req, va);
        }
      } else if (x == y) {
        if (a != b) std::swap_ranges(y + a, y + a + tail, y + b);
      } else {
        std::copy_n(x + b, tail, y + a);
        if (a != b) std::copy_n(x + a, tail, y + b);
      }
    }
  });
}

template <int kAxis>
void FlipCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, { FlipImage<T>(in[0].shape, kAxis, in[0].ptr<T>(), out[0].ptr<T>(), req[0]); });
}

// Flips with probability 1/2.
template <int kAxis>
void RandomFlipCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  random::ElementStream rs = CallStream(attrs, ctx);
  if (rs.Uniform() < 0.5) FlipCompute<kAxis>(attrs, ctx, in, req, out);
  else CopyWithReq(in[0], out[0], req[0]);
}

// ------------------------------------------------------------------ crop
void CheckWindow(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = attrs.Params<ImageCropParam>();
  const int64_t H = s[s.ndim() - 3], W = s[s.ndim() - 2];
  if (p.width <= 0 || p.height <= 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': width and height must be positive, got ", p.width,
          " and ", p.height);
  if (p.x < 0 || p.y < 0 || (W >= 0 && p.x + p.width > W) || (H >= 0 && p.y + p.height > H))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': the window x=", p.x, ", y=", p.y, ", width=", p.width,
          ", height=", p.height, " does not fit an image of shape ", s.ToString());
}

Shape CroppedShape(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = attrs.Params<ImageCropParam>();
  return s.ndim() == 3 ? Shape({p.height, p.width, s[2]}) : Shape({s[0], p.height, p.width, s[3]});
}

bool CropShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known_ndim()) return false;
  CheckHWC(attrs, s, true, false);
  CheckWindow(attrs, s);
  AssignShape(attrs, out, 0, CroppedShape(attrs, s), "output");
  return s.is_known();
}

// Rows of the window between the image (N, H, W, C) and the crop (N, h, w, C); the backward
// writes the crop back and zeros around it.
template <typename T>
void CropRows(const NodeAttrs& attrs, const Shape& s, const T* src, T* dst, OpReq req, bool backward) {
  const auto& p = attrs.Params<ImageCropParam>();
  const int r = s.ndim() - 3;
  const int64_t n = r == 1 ? s[0] : 1, H = s[r], W = s[r + 1], C = s[r + 2];
  const int64_t h = p.height, w = p.width, row = w * C;
  ParallelFor(n * H, ItemGrain(W * C), [&](int64_t qb, int64_t qe) {
    for (int64_t q = qb; q < qe; ++q) {
      const int64_t b = q / H, y = q % H;
      const bool inside = y >= p.y && y < p.y + h;
      if (!backward) {
        if (!inside) continue;
        const T* from = src + (q * W + p.x) * C;
        T* to = dst + (b * h + y - p.y) * row;
        for (int64_t k = 0; k < row; ++k) Store(to + k, req, from[k]);
        continue;
      }
      T* to = dst + q * W * C;
      for (int64_t k = 0; k < W * C; ++k) {
        const int64_t xcol = k / C;
        const bool in_window = inside && xcol >= p.x && xcol < p.x + w;
        if (in_window) Store(to + k, req, src[(b * h + y - p.y) * row + (xcol - p.x) * C + k % C]);
        else if (req != OpReq::kAddTo) to[k] = T(0);
      }
    }
  });
}

void CropCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, { CropRows<T>(attrs, in[0].shape, in[0].ptr<T>(), out[0].ptr<T>(), req[0], false); });
}

// _backward_image_crop: (out_grad, data) -> d data.
bool CropBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.known_ndim()) return false;
  CheckHWC(attrs, d, true, false);
  CheckWindow(attrs, d);
  AssignShape(attrs, in, 0, CroppedShape(attrs, d), "input");
  AssignShape(attrs, out, 0, d, "output");
  return d.is_known();
}

void CropBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                  const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[1].shape;
  if (in[0].shape != CroppedShape(attrs, d) || out[0].shape != d)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad has shape ", in[0].shape.ToString(),
          ", expected ", CroppedShape(attrs, d).ToString());
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, { CropRows<T>(attrs, d, in[0].ptr<T>(), out[0].ptr<T>(), req[0], true); });
}

std::vector<std::pair<int, int>> InPlace(const NodeAttrs&) { return {{0, 0}}; }

}  // namespace
}  // namespace image

WEFT_REGISTER_OP(_image_to_tensor)
    .Describe("Converts an image (H, W, C) or batch (N, H, W, C) with values in [0, 255] to a float32 tensor (C, H, "
              "W) or (N, C, H, W) with values in [0, 1].")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input image")
    .SetAttr<FInferShape>("FInferShape", image::ToTensorShape)
    .SetAttr<FInferType>("FInferType", image::ToTensorType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::ToTensorCompute);

WEFT_REGISTER_OP(_image_normalize)
    .Describe("Normalises a tensor (C, H, W) or (N, C, H, W) channel by channel: (data - mean[c]) / std[c].")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input tensor")
    .SetParams<ImageNormalizeParam>()
    .SetAttr<FInferShape>("FInferShape", image::NormalizeShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FInplaceOption>("FInplaceOption", image::InPlace)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::NormalizeCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_image_normalize", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_image_normalize)
    .Describe("Gradient of _image_normalize: (out_grad, data) -> out_grad / std[c].")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<ImageNormalizeParam>()
    .SetAttr<FInferShape>("FInferShape", image::NormalizeBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::NormalizeBackward);

#define WEFT_IMAGE_FLIP(name, axis, doc)                                                     \
  WEFT_REGISTER_OP(name)                                                                     \
      .Describe(doc)                                                                         \
      .SetNumInputs(1)                                                                       \
      .AddArgument("data", "NDArray-or-Symbol", "Input image (H, W, C), C = 1 or 3")         \
      .SetAttr<FInferShape>("FInferShape", image::AugmentShape)                              \
      .SetAttr<FInferType>("FInferType", image::ImageType)                                   \
      .SetAttr<FInplaceOption>("FInplaceOption", image::InPlace)                             \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)

WEFT_IMAGE_FLIP(_image_flip_left_right, 1, "Reverses the columns of an image (H, W, C).")
    .SetAttr<FCompute>("FCompute<cpu>", image::FlipCompute<1>)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_image_flip_left_right", {a.out_grads[0]})};
    });

WEFT_IMAGE_FLIP(_image_flip_top_bottom, 0, "Reverses the rows of an image (H, W, C).")
    .SetAttr<FCompute>("FCompute<cpu>", image::FlipCompute<0>)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_image_flip_top_bottom", {a.out_grads[0]})};
    });

WEFT_IMAGE_FLIP(_image_random_flip_left_right, 1, "Reverses the columns of an image (H, W, C) with probability 1/2.")
    .SetAttr<FResourceRequest>("FResourceRequest", image::RandomResource)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomFlipCompute<1>);

WEFT_IMAGE_FLIP(_image_random_flip_top_bottom, 0, "Reverses the rows of an image (H, W, C) with probability 1/2.")
    .SetAttr<FResourceRequest>("FResourceRequest", image::RandomResource)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomFlipCompute<0>);

#undef WEFT_IMAGE_FLIP

WEFT_REGISTER_OP(_image_crop)
    .Describe("Crops the window (x, y, width, height) out of an image (H, W, C) or batch (N, H, W, C).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input image")
    .SetParams<ImageCropParam>()
    .SetAttr<FInferShape>("FInferShape", image::CropShape)
    .SetAttr<FInferType>("FInferType", image::ImageType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::CropCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_image_crop", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_image_crop)
    .Describe("Gradient of _image_crop: (out_grad, data) -> d data, out_grad at the window and 0 elsewhere.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the crop")
    .AddArgument("data", "NDArray-or-Symbol", "The forward image (for its shape)")
    .SetParams<ImageCropParam>()
    .SetAttr<FInferShape>("FInferShape", image::CropBackwardShape)
    .SetAttr<FInferType>("FInferType", image::ImageType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::CropBackward);

}  // namespace op
}  // namespace weft

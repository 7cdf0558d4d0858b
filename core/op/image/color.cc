// The colour augmenters of nd.image / sym.image (MXNet 1.9's _image_random_brightness,
// _random_contrast, _random_saturation, _random_hue, _random_color_jitter,
// _adjust_lighting and _random_lighting), on one image (H, W, C) with 1 or 3 (RGB)
// channels and values on the 0-255 scale.
//
//   brightness  y = x * a
//   contrast    y = x * a + (1 - a) * mean grey level of the image
//   saturation  y = x * a + (1 - a) * the pixel's grey level (grey images pass unchanged)
//   hue         the hue (HLS) turned by a * 360 degrees (grey images pass unchanged)
//   lighting    y = x + eigvec * (alpha * eigval), AlexNet's PCA noise with the ImageNet
//               eigenvalues and eigenvectors (grey images pass unchanged)
// with grey = 0.299 R + 0.587 G + 0.114 B. The random factors are uniform in [min_factor,
// max_factor) (color_jitter: 1 + uniform(-x, x) for brightness, contrast and saturation,
// uniform(-hue, hue) for the hue, applied in a random order and only when x > 0; lighting:
// alpha normal with standard deviation alpha_std), drawn from Weft's random resource so that
// a seeded run repeats. Integer images saturate to their range (image_util.h). MXNet 1.9's
// saturation kept only the blue term of the grey level; the full one is used here.
#include <array>
#include <cmath>

#include "core/op/image/image_util.h"

namespace weft {
namespace op {

struct RandomEnhanceParam {
  double min_factor = 0, max_factor = 0;
};

WEFT_PARAM_SCHEMA(RandomEnhanceParam, s) {
  s.Field("min_factor", &RandomEnhanceParam::min_factor).Min(0).Describe("Minimum factor.");
  s.Field("max_factor", &RandomEnhanceParam::max_factor).Min(0).Describe("Maximum factor.");
}

struct ColorJitterParam {
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;
};

WEFT_PARAM_SCHEMA(ColorJitterParam, s) {
  s.Field("brightness", &ColorJitterParam::brightness).Min(0).Describe("How much to jitter brightness.");
  s.Field("contrast", &ColorJitterParam::contrast).Min(0).Describe("How much to jitter contrast.");
  s.Field("saturation", &ColorJitterParam::saturation).Min(0).Describe("How much to jitter saturation.");
  s.Field("hue", &ColorJitterParam::hue).Min(0).Describe("How much to jitter hue.");
}

struct AdjustLightingParam {
  std::vector<double> alpha;
};

WEFT_PARAM_SCHEMA(AdjustLightingParam, s) {
  s.Field("alpha", &AdjustLightingParam::alpha).Describe("The lighting alphas for the R, G, B channels.");
}

struct RandomLightingParam {
  double alpha_std = 0.05;
};

WEFT_PARAM_SCHEMA(RandomLightingParam, s) {
  s.Field("alpha_std", &RandomLightingParam::alpha_std).Default(0.05).Min(0).Describe("Level of the lighting noise.");
}

namespace image {
namespace {

constexpr float kGrey[3] = {0.299f, 0.587f, 0.114f};

// One adjustment applied to `src` (the input, or the output of an earlier adjustment)
// writing `dst`; pixels counts H * W, c the channels.
template <typename T>
void Brightness(float a, const T* src, T* dst, int64_t n) {
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = Saturate<T>(static_cast<float>(src[i]) * a);
  });
}

template <typename T>
void Contrast(float a, const T* src, T* dst, int64_t pixels, int64_t c) {
  double sum = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    if (c == 3) {
      for (int k = 0; k < 3; ++k) sum += static_cast<double>(kGrey[k]) * static_cast<double>(src[p * 3 + k]);
    } else {
      sum += static_cast<double>(src[p]);
    }
  }
  const float shift = (1.0f - a) * static_cast<float>(pixels > 0 ? sum / static_cast<double>(pixels) : 0.0);
  ParallelFor(pixels * c, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = Saturate<T>(static_cast<float>(src[i]) * a + shift);
  });
}

template <typename T>
void Saturation(float a, const T* src, T* dst, int64_t pixels, int64_t c) {
  if (c != 3) {
    if (src != dst) std::copy(src, src + pixels * c, dst);
    return;
  }
  ParallelFor(pixels, kElemGrain / 4, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      float v[3], grey = 0;
      for (int k = 0; k < 3; ++k) {
        v[k] = static_cast<float>(src[p * 3 + k]);
        grey += kGrey[k] * v[k];
      }
      for (int k = 0; k < 3; ++k) dst[p * 3 + k] = Saturate<T>(v[k] * a + grey * (1.0f - a));
    }
  });
}

// RGB in [0, 1] -> (hue in degrees [0, 360), lightness, saturation).
void ToHLS(const float rgb[3], float* h, float* l, float* s) {
  const float hi = std::max({rgb[0], rgb[1], rgb[2]}), lo = std::min({rgb[0], rgb[1], rgb[2]});
  const float range = hi - lo;
  *l = (hi + lo) * 0.5f;
  *h = 0;
  *s = 0;
  if (range <= std::numeric_limits<float>::epsilon()) return;
  *s = *l < 0.5f ? range / (hi + lo) : range / (2.0f - hi - lo);
  float sector;
  if (hi == rgb[0]) sector = (rgb[1] - rgb[2]) / range;
  else if (hi == rgb[1]) sector = 2.0f + (rgb[2] - rgb[0]) / range;
  else sector = 4.0f + (rgb[0] - rgb[1]) / range;
  *h = sector * 60.0f;
  if (*h < 0) *h += 360.0f;
}

// (hue in degrees, any value; lightness; saturation) -> RGB in [0, 1].
void FromHLS(float h, float l, float s, float rgb[3]) {
  if (s == 0) {
    rgb[0] = rgb[1] = rgb[2] = l;
    return;
  }
  const float q = l <= 0.5f ? l * (1.0f + s) : l + s - l * s, p = 2.0f * l - q;
  float turn = std::fmod(h / 360.0f, 1.0f);
  if (turn < 0) turn += 1.0f;
  const float offsets[3] = {1.0f / 3.0f, 0.0f, -1.0f / 3.0f};
  for (int k = 0; k < 3; ++k) {
    float t = turn + offsets[k];
    if (t < 0) t += 1.0f;
    if (t >= 1) t -= 1.0f;
    float v;
    if (t < 1.0f / 6.0f) v = p + (q - p) * 6.0f * t;
    else if (t < 0.5f) v = q;
    else if (t < 2.0f / 3.0f) v = p + (q - p) * (2.0f / 3.0f - t) * 6.0f;
    else v = p;
    rgb[k] = v;
  }
}

template <typename T>
void Hue(float a, const T* src, T* dst, int64_t pixels, int64_t c) {
  if (c != 3) {
    if (src != dst) std::copy(src, src + pixels * c, dst);
    return;
  }
  ParallelFor(pixels, kElemGrain / 16, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      float rgb[3], h, l, s;
      for (int k = 0; k < 3; ++k) rgb[k] = static_cast<float>(src[p * 3 + k]) / 255.0f;
      ToHLS(rgb, &h, &l, &s);
      FromHLS(h + a * 360.0f, l, s, rgb);
      for (int k = 0; k < 3; ++k) dst[p * 3 + k] = Saturate<T>(rgb[k] * 255.0f);
    }
  });
}

template <typename T>
void Lighting(const std::array<float, 3>& alpha, const T* src, T* dst, int64_t pixels, int64_t c) {
  if (c != 3) {
    if (src != dst) std::copy(src, src + pixels * c, dst);
    return;
  }
  // The eigen decomposition of the RGB covariance of ImageNet's pixels (Krizhevsky et al.
  // 2012, as published with fb.resnet.torch).
  static const float eigval[3] = {55.46f, 4.794f, 1.148f};
  static const float eigvec[3][3] = {{-0.5675f, 0.7192f, 0.4009f}, {-0.5808f, -0.0045f, -0.8140f},
                                     {-0.5836f, -0.6948f, 0.4203f}};
  float shift[3];
  for (int k = 0; k < 3; ++k) {
    shift[k] = 0;
    for (int j = 0; j < 3; ++j) shift[k] += eigvec[k][j] * alpha[static_cast<size_t>(j)] * eigval[j];
  }
  ParallelFor(pixels, kElemGrain / 4, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      for (int k = 0; k < 3; ++k) dst[p * 3 + k] = Saturate<T>(static_cast<float>(src[p * 3 + k]) + shift[k]);
  });
}

bool AugmentShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape s = (*in)[0].known_ndim() ? (*in)[0] : (*out)[0];
  if (!s.known_ndim()) return false;
  CheckHWC(attrs, s, false, true);
  return SameShape(attrs, in, out);
}

std::vector<std::pair<int, int>> InPlace(const NodeAttrs&) { return {{0, 0}}; }

void CheckFactors(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<RandomEnhanceParam>();
  if (p.min_factor > p.max_factor)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': min_factor (", p.min_factor,
          ") is larger than max_factor (", p.max_factor, ")");
}

std::array<float, 3> LightingAlpha(const NodeAttrs& attrs) {
  const auto& a = attrs.Params<AdjustLightingParam>().alpha;
  if (a.size() != 3)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': alpha must have 3 values (R, G, B), got ", a.size());
  return {static_cast<float>(a[0]), static_cast<float>(a[1]), static_cast<float>(a[2])};
}

// The parameters are checked with the shapes, so that a bad call fails where it is made.
bool EnhanceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckFactors(attrs);
  return AugmentShape(attrs, in, out);
}

bool LightingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  LightingAlpha(attrs);
  return AugmentShape(attrs, in, out);
}

// Runs `fn(src, dst, pixels, channels)` with T the image's dtype. The output is always
// written whole: a request to add to it is refused.
template <typename F>
void OnImage(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
             const std::vector<TBlob>& out, F&& fn) {
  if (req[0] == OpReq::kNullOp) return;
  if (req[0] == OpReq::kAddTo)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an add-to request on the output is not supported");
  const Shape& s = in[0].shape;
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, { fn(in[0].ptr<T>(), out[0].ptr<T>(), s[0] * s[1], s[2]); });
}

float UniformIn(random::ElementStream& rs, double lo, double hi) {
  return static_cast<float>(lo + (hi - lo) * rs.Uniform());
}

enum class Kind { kBrightness, kContrast, kSaturation, kHue };

template <Kind K>
void RandomEnhance(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<RandomEnhanceParam>();
  random::ElementStream rs = CallStream(attrs, ctx);
  const float a = UniformIn(rs, p.min_factor, p.max_factor);
  OnImage(attrs, in, req, out, [&](const auto* src, auto* dst, int64_t pixels, int64_t c) {
    if constexpr (K == Kind::kBrightness) Brightness(a, src, dst, pixels * c);
    else if constexpr (K == Kind::kContrast) Contrast(a, src, dst, pixels, c);
    else if constexpr (K == Kind::kSaturation) Saturation(a, src, dst, pixels, c);
    else Hue(a, src, dst, pixels, c);
  });
}

void ColorJitter(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ColorJitterParam>();
  random::ElementStream rs = CallStream(attrs, ctx);
  int order[4] = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(order[i], order[rs.Below(static_cast<uint64_t>(i) + 1)]);
  float factor[4];
  const double amount[4] = {p.brightness, p.contrast, p.saturation, p.hue};
  for (int k = 0; k < 4; ++k) factor[k] = (k == 3 ? 0.0f : 1.0f) + UniformIn(rs, -amount[k], amount[k]);
  OnImage(attrs, in, req, out, [&](const auto* src, auto* dst, int64_t pixels, int64_t c) {
    // The first adjustment reads the input, the others the output it left.
    const auto* from = src;
    for (int k : order) {
      if (amount[k] <= 0) continue;
      if (k == 0) Brightness(factor[k], from, dst, pixels * c);
      else if (k == 1) Contrast(factor[k], from, dst, pixels, c);
      else if (k == 2) Saturation(factor[k], from, dst, pixels, c);
      else Hue(factor[k], from, dst, pixels, c);
      from = dst;
    }
    if (from != dst) std::copy(src, src + pixels * c, dst);
  });
}

void AdjustLighting(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const std::array<float, 3> alpha = LightingAlpha(attrs);
  OnImage(attrs, in, req, out,
          [&](const auto* src, auto* dst, int64_t pixels, int64_t c) { Lighting(alpha, src, dst, pixels, c); });
}

void RandomLighting(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const double sd = attrs.Params<RandomLightingParam>().alpha_std;
  random::ElementStream rs = CallStream(attrs, ctx);
  std::array<float, 3> alpha;
  for (float& v : alpha) v = static_cast<float>(rs.Normal() * sd);
  OnImage(attrs, in, req, out,
          [&](const auto* src, auto* dst, int64_t pixels, int64_t c) { Lighting(alpha, src, dst, pixels, c); });
}

}  // namespace
}  // namespace image

#define WEFT_IMAGE_COLOR_OP(name, doc)                                                       \
  WEFT_REGISTER_OP(name)                                                                     \
      .Describe(doc)                                                                         \
      .SetNumInputs(1)                                                                       \
      .AddArgument("data", "NDArray-or-Symbol", "Input image (H, W, C), C = 1 or 3")         \
      .SetAttr<FInferShape>("FInferShape", image::AugmentShape)                              \
      .SetAttr<FInferType>("FInferType", image::ImageType)                                   \
      .SetAttr<FInplaceOption>("FInplaceOption", image::InPlace)                             \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)

#define WEFT_IMAGE_RANDOM_OP(name, doc) \
  WEFT_IMAGE_COLOR_OP(name, doc).SetAttr<FResourceRequest>("FResourceRequest", image::RandomResource)

WEFT_IMAGE_RANDOM_OP(_image_random_brightness, "Scales the image by a factor uniform in [min_factor, max_factor).")
    .SetParams<RandomEnhanceParam>()
    .SetAttr<FInferShape>("FInferShape", image::EnhanceShape)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomEnhance<image::Kind::kBrightness>);

WEFT_IMAGE_RANDOM_OP(_image_random_contrast,
                     "Blends the image with its mean grey level, by a factor uniform in [min_factor, max_factor).")
    .SetParams<RandomEnhanceParam>()
    .SetAttr<FInferShape>("FInferShape", image::EnhanceShape)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomEnhance<image::Kind::kContrast>);

WEFT_IMAGE_RANDOM_OP(_image_random_saturation,
                     "Blends each pixel with its grey level, by a factor uniform in [min_factor, max_factor).")
    .SetParams<RandomEnhanceParam>()
    .SetAttr<FInferShape>("FInferShape", image::EnhanceShape)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomEnhance<image::Kind::kSaturation>);

WEFT_IMAGE_RANDOM_OP(_image_random_hue,
                     "Turns the hue by a factor uniform in [min_factor, max_factor) of a full turn.")
    .SetParams<RandomEnhanceParam>()
    .SetAttr<FInferShape>("FInferShape", image::EnhanceShape)
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomEnhance<image::Kind::kHue>);

WEFT_IMAGE_RANDOM_OP(_image_random_color_jitter,
                     "Random brightness, contrast, saturation and hue adjustments in a random order.")
    .SetParams<ColorJitterParam>()
    .SetAttr<FCompute>("FCompute<cpu>", image::ColorJitter);

WEFT_IMAGE_COLOR_OP(_image_adjust_lighting, "Adjusts the lighting level of the image (AlexNet's PCA lighting).")
    .SetParams<AdjustLightingParam>()
    .SetAttr<FInferShape>("FInferShape", image::LightingShape)
    .SetAttr<FCompute>("FCompute<cpu>", image::AdjustLighting);

WEFT_IMAGE_RANDOM_OP(_image_random_lighting, "Adds AlexNet's PCA lighting noise with alphas normal(0, alpha_std).")
    .SetParams<RandomLightingParam>()
    .SetAttr<FCompute>("FCompute<cpu>", image::RandomLighting);

#undef WEFT_IMAGE_RANDOM_OP
#undef WEFT_IMAGE_COLOR_OP

}  // namespace op
}  // namespace weft

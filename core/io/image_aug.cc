#include "core/io/image_aug.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/base/error.h"

namespace weft {
namespace io {

void CheckImageAugParam(const ImageAugParam& p) {
  WEFT_CHECK(p.min_random_area <= p.max_random_area, kValue, "ImageRecordIter: min_random_area (", p.min_random_area,
             ") must not exceed max_random_area (", p.max_random_area, ")");
  if (p.random_resized_crop) {
    WEFT_CHECK(p.min_random_area > 0, kValue, "ImageRecordIter: min_random_area must be > 0 with random_resized_crop, got ",
               p.min_random_area);
  }
  if (p.min_aspect_ratio) {
    WEFT_CHECK(*p.min_aspect_ratio > 0 && *p.min_aspect_ratio <= p.max_aspect_ratio, kValue,
               "ImageRecordIter: min_aspect_ratio (", *p.min_aspect_ratio, ") must be in (0, max_aspect_ratio = ",
               p.max_aspect_ratio, "]");
  } else {
    WEFT_CHECK(p.max_aspect_ratio < 1, kValue,
               "ImageRecordIter: without min_aspect_ratio the ratio is drawn from [1 - max_aspect_ratio, 1 + "
               "max_aspect_ratio], so max_aspect_ratio must be < 1, got ",
               p.max_aspect_ratio);
  }
  WEFT_CHECK(ValidInterMethod(p.inter_method), kValue, "ImageRecordIter: inter_method must be 0..4, 9 or 10, got ",
             p.inter_method);
  WEFT_CHECK(p.min_random_scale > 0 && p.min_random_scale <= p.max_random_scale, kValue,
             "ImageRecordIter: min_random_scale (", p.min_random_scale, ") must be positive and at most max_random_scale (",
             p.max_random_scale, ")");
  WEFT_CHECK(p.min_img_size <= p.max_img_size, kValue, "ImageRecordIter: min_img_size (", p.min_img_size,
             ") must not exceed max_img_size (", p.max_img_size, ")");
  if (p.max_crop_size != -1 || p.min_crop_size != -1) {
    const int lo = p.min_crop_size == -1 ? p.max_crop_size : p.min_crop_size;
    const int hi = p.max_crop_size == -1 ? p.min_crop_size : p.max_crop_size;
    WEFT_CHECK(lo > 0 && lo <= hi, kValue, "ImageRecordIter: min_crop_size (", p.min_crop_size, ") and max_crop_size (",
               p.max_crop_size, ") must give a positive range");
  }
  // As MXNet's default augmenter: these choose the crop in ways random_resized_crop replaces.
  WEFT_CHECK(!p.random_resized_crop || (p.min_random_scale == 1.f && p.max_random_scale == 1.f &&
                                        p.min_crop_size == -1 && p.max_crop_size == -1),
             kValue, "ImageRecordIter: random_resized_crop conflicts with min_random_scale, max_random_scale, "
             "min_crop_size and max_crop_size");
  const float* stds[3] = {&p.std_r, &p.std_g, &p.std_b};
  for (const float* s : stds) WEFT_CHECK(*s != 0, kValue, "ImageRecordIter: std_r/std_g/std_b must not be 0");
}

namespace {

// What is subtracted from channel c of the pixel at (y, x) of the cropped image.
inline float MeanAt(const float* mean, const float* mean_img, size_t plane, int w, int c, int y, int x) {
  return mean_img ? mean_img[c * plane + static_cast<size_t>(y) * w + x] : mean[c];
}

// Jitter (plan's brightness, contrast, saturation), mirror and (x - mean) / std * scale of an
// out_h x out_w image with out_c channels, into dst (CHW).
void WriteNormalized(const ImageAugParam& p, const AugPlan& plan, const ImageView& view, int out_c, int out_h,
                     int out_w, float* dst, const float* mean_img) {
  const float mean[3] = {p.mean_r, p.mean_g, p.mean_b};
  const float mul[3] = {p.scale / p.std_r * plan.norm_contrast, p.scale / p.std_g * plan.norm_contrast,
                        p.scale / p.std_b * plan.norm_contrast};
  // (x - mean) * mul + bias, the bias being the illumination in normalised units.
  const float bias[3] = {plan.norm_illumination * p.scale / p.std_r, plan.norm_illumination * p.scale / p.std_g,
                         plan.norm_illumination * p.scale / p.std_b};
  const size_t plane = static_cast<size_t>(out_h) * out_w;
  const bool jitter = plan.brightness != 1.f || plan.contrast != 1.f || plan.saturation != 1.f;
  if (!jitter) {
    for (int y = 0; y < out_h; ++y) {
      const uint8_t* row = view.data + view.stride * y;
      for (int x = 0; x < out_w; ++x) {
        const int sx = plan.mirror ? out_w - 1 - x : x;
        const uint8_t* px = row + static_cast<size_t>(sx) * out_c;
        for (int c = 0; c < out_c; ++c)
          dst[c * plane + static_cast<size_t>(y) * out_w + x] =
              (px[c] - MeanAt(mean, mean_img, plane, out_w, c, y, sx)) * mul[c] + bias[c];
      }
    }
    return;
  }
  // Jitter in float, as mx.image's BrightnessJitterAug / ContrastJitterAug /
  // SaturationJitterAug: scale; blend with the image's mean grey; blend with each pixel's grey.
  auto grey = [](const float* v) { return 0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2]; };
  double mean_grey = 0;
  if (plan.contrast != 1.f) {
    for (int y = 0; y < out_h; ++y) {
      const uint8_t* row = view.data + view.stride * y;
      for (int x = 0; x < out_w; ++x) {
        const uint8_t* px = row + static_cast<size_t>(x) * out_c;
        mean_grey += out_c == 3 ? 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2] : px[0];
      }
    }
    mean_grey = mean_grey / plane * plan.brightness;
  }
  const float cblend = static_cast<float>(mean_grey * (1.0 - plan.contrast));
  for (int y = 0; y < out_h; ++y) {
    const uint8_t* row = view.data + view.stride * y;
    for (int x = 0; x < out_w; ++x) {
      const int sx = plan.mirror ? out_w - 1 - x : x;
      const uint8_t* px = row + static_cast<size_t>(sx) * out_c;
      float v[3];
      for (int c = 0; c < out_c; ++c) v[c] = px[c] * plan.brightness * plan.contrast + cblend;
      if (out_c == 3 && plan.saturation != 1.f) {
        float g = grey(v) * (1.f - plan.saturation);
        for (int c = 0; c < 3; ++c) v[c] = v[c] * plan.saturation + g;
      }
      for (int c = 0; c < out_c; ++c) {
        float clamped = std::min(std::max(v[c], 0.f), 255.f);
        dst[c * plane + static_cast<size_t>(y) * out_w + x] =
            (clamped - MeanAt(mean, mean_img, plane, out_w, c, y, sx)) * mul[c] + bias[c];
      }
    }
  }
}

// MXNet's per-image normalisation jitter (ImageNormalizeParam): drawn only when asked for,
// so that other settings keep their random streams.
void DrawNormalizeJitter(const ImageAugParam& p, AugPlan* plan, std::mt19937* rng) {
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  if (p.max_random_contrast > 0) plan->norm_contrast = unit(*rng) * p.max_random_contrast * 2 - p.max_random_contrast + 1;
  if (p.max_random_illumination > 0)
    plan->norm_illumination = unit(*rng) * p.max_random_illumination * 2 - p.max_random_illumination;
}

}  // namespace

AugPlan PlanAugment(const ImageAugParam& p, int src_h, int src_w, int out_h, int out_w, std::mt19937* rng) {
  WEFT_CHECK(src_h > 0 && src_w > 0, kIO, "ImageRecordIter: image of size ", src_w, "x", src_h);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  AugPlan plan;
  // Geometry happens on the "virtual" image: the stored one after the shorter-side resize.
  const double s0 = p.resize > 0 ? static_cast<double>(p.resize) / std::min(src_h, src_w) : 1.0;
  const double vh = p.resize > 0 ? std::round(src_h * s0) : src_h;
  const double vw = p.resize > 0 ? std::round(src_w * s0) : src_w;
  double cx = 0, cy = 0, cw = 0, ch = 0;
  bool done = false;
  if (p.random_resized_crop) {
    double lo = p.min_aspect_ratio ? *p.min_aspect_ratio : 1.0 - p.max_aspect_ratio;
    double hi = p.min_aspect_ratio ? p.max_aspect_ratio : 1.0 + p.max_aspect_ratio;
    for (int attempt = 0; attempt < 10 && !done; ++attempt) {
      double area = vh * vw * (p.min_random_area + (p.max_random_area - p.min_random_area) * unit(*rng));
      double ratio = lo + (hi - lo) * unit(*rng);
      double w = std::round(std::sqrt(area * ratio)), h = std::round(std::sqrt(area / ratio));
      if (w >= 1 && h >= 1 && w <= vw && h <= vh) {
        cw = w;
        ch = h;
        cx = std::floor(unit(*rng) * (vw - w + 1));
        cy = std::floor(unit(*rng) * (vh - h + 1));
        cx = std::min(cx, vw - w);
        cy = std::min(cy, vh - h);
        done = true;
      }
    }
  }
  if (!done) {
    // A crop of data_shape, or, when the image is smaller, the largest window of that
    // aspect ratio (it is then enlarged to data_shape).
    cw = out_w;
    ch = out_h;
    if (cw > vw || ch > vh) {
      double f = std::min(vw / cw, vh / ch);
      cw = std::max(1.0, std::floor(cw * f));
      ch = std::max(1.0, std::floor(ch * f));
    }
    if (p.rand_crop && !p.random_resized_crop) {
      cx = std::min(std::floor(unit(*rng) * (vw - cw + 1)), vw - cw);
      cy = std::min(std::floor(unit(*rng) * (vh - ch + 1)), vh - ch);
    } else {
      cx = std::floor((vw - cw) / 2);
      cy = std::floor((vh - ch) / 2);
    }
  }
  plan.x = cx / s0;
  plan.y = cy / s0;
  plan.w = cw / s0;
  plan.h = ch / s0;
  plan.mirror = p.mirror || (p.rand_mirror && unit(*rng) < 0.5);
  auto jitter = [&](float r) { return r > 0 ? static_cast<float>(1.0 - r + 2.0 * r * unit(*rng)) : 1.f; };
  plan.brightness = jitter(p.brightness);
  plan.contrast = jitter(p.contrast);
  plan.saturation = jitter(p.saturation);
  plan.inter_method = p.inter_method == 10 ? ChooseInterMethod(10, 0, 0, 0, 0, rng) : p.inter_method;
  DrawNormalizeJitter(p, &plan, rng);
  return plan;
}

void ApplyAugment(const ImageAugParam& p, const AugPlan& plan, const uint8_t* data, size_t size, int out_c, int out_h,
                  int out_w, float* dst, const float* mean_img) {
  WEFT_CHECK(out_c == 1 || out_c == 3, kValue, "ImageRecordIter: data_shape must have 1 or 3 channels, got ", out_c);
  int src_h = 0, src_w = 0, src_c = 0;
  PeekImageSize(data, size, &src_h, &src_w, &src_c);
  // The smallest decode that keeps the crop at least as large as the output.
  const int min_h = static_cast<int>(std::ceil(out_h * static_cast<double>(src_h) / plan.h));
  const int min_w = static_cast<int>(std::ceil(out_w * static_cast<double>(src_w) / plan.w));
  Image im = DecodeImage(data, size, out_c == 3 ? 1 : 0, true, min_h, min_w);
  const double fx = static_cast<double>(im.width) / src_w, fy = static_cast<double>(im.height) / src_h;
  int x0 = static_cast<int>(std::lround(plan.x * fx)), y0 = static_cast<int>(std::lround(plan.y * fy));
  int x1 = static_cast<int>(std::lround((plan.x + plan.w) * fx)), y1 = static_cast<int>(std::lround((plan.y + plan.h) * fy));
  x0 = std::min(std::max(x0, 0), im.width - 1);
  y0 = std::min(std::max(y0, 0), im.height - 1);
  x1 = std::min(std::max(x1, x0 + 1), im.width);
  y1 = std::min(std::max(y1, y0 + 1), im.height);
  ImageView crop = ImageView::Of(im).Crop(x0, y0, x1 - x0, y1 - y0);
  Image res;
  ImageView view = crop;
  if (crop.width != out_w || crop.height != out_h) {
    res = ResizeImage(crop, out_w, out_h, ChooseInterMethod(plan.inter_method, crop.width, crop.height, out_w, out_h, nullptr));
    view = ImageView::Of(res);
  }
  WriteNormalized(p, plan, view, out_c, out_h, out_w, dst, mean_img);
}

namespace {

// The aspect-ratio range [lo, hi] of the parameters.
std::pair<float, float> AspectRange(const ImageAugParam& p) {
  if (p.min_aspect_ratio) return {static_cast<float>(*p.min_aspect_ratio), p.max_aspect_ratio};
  return {1.f - p.max_aspect_ratio, 1.f + p.max_aspect_ratio};
}

bool NeedsAffine(const ImageAugParam& p) {
  const auto [lo, hi] = AspectRange(p);
  return p.max_rotate_angle > 0 || p.max_shear_ratio > 0 || p.rotate > 0 || p.max_random_scale != 1.f ||
         p.min_random_scale != 1.f || (!p.random_resized_crop && (lo != 1.f || hi != 1.f)) ||
         p.max_img_size != 1e10f || p.min_img_size != 0.f;
}

// 8-bit rounding and saturation, as OpenCV's saturate_cast.
inline uint8_t Saturate(float v) { return static_cast<uint8_t>(std::min(std::max(std::lrint(v), 0L), 255L)); }

// Grey of an RGB pixel, as OpenCV's RGB2GRAY.
inline float Grey(const uint8_t* px) { return 0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2]; }

// MXNet's default augmenter step by step on the decoded image (RGB, or grey for one channel):
// shorter-side resize; the affine warp (rotation, shear, scale, aspect ratio, size bounds,
// fill_value outside); padding; the crop (random_resized_crop, a square of a random size, or
// data_shape at a random or the centre place, the image enlarged first when smaller);
// brightness/contrast/saturation in a random order on 8-bit pixels; HSL shifts; PCA noise.
// Mirror and normalisation follow in WriteNormalized.
void FullAugment(const ImageAugParam& p, const uint8_t* data, size_t size, int out_c, int out_h, int out_w,
                 std::mt19937* rng, float* dst, const float* mean_img) {
  WEFT_CHECK(out_c == 1 || out_c == 3, kValue, "ImageRecordIter: data_shape must have 1 or 3 channels, got ", out_c);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  const int method = p.inter_method == 10 ? ChooseInterMethod(10, 0, 0, 0, 0, rng) : p.inter_method;
  auto interp = [&](int ow, int oh, int nw, int nh) { return ChooseInterMethod(method, ow, oh, nw, nh, nullptr); };
  Image res = DecodeImage(data, size, out_c == 3 ? 1 : 0, true, 0, 0);
  auto resize = [&](int w, int h) {
    if (w != res.width || h != res.height)
      res = ResizeImage(ImageView::Of(res), w, h, interp(res.width, res.height, w, h));
  };
  if (p.resize > 0) {
    if (res.height > res.width) {
      resize(p.resize, p.resize * res.height / res.width);
    } else {
      resize(p.resize * res.width / res.height, p.resize);
    }
  }
  const auto [ar_lo, ar_hi] = AspectRange(p);
  if (NeedsAffine(p)) {
    const float shear = unit(*rng) * p.max_shear_ratio * 2 - p.max_shear_ratio;
    const int max_angle = static_cast<int>(p.max_rotate_angle);
    int angle = std::uniform_int_distribution<int>(-max_angle, max_angle)(*rng);
    if (p.rotate > 0) angle = static_cast<int>(p.rotate);
    const double a = std::cos(angle / 180.0 * M_PI), b = std::sin(angle / 180.0 * M_PI);
    float scale = 1.f, ratio = 1.f;
    if (!p.random_resized_crop) {
      scale = unit(*rng) * (p.max_random_scale - p.min_random_scale) + p.min_random_scale;
      ratio = unit(*rng) * (ar_hi - ar_lo) + ar_lo;
    }
    const double hs = 2.0 * scale / (1.0 + ratio), ws = ratio * hs;
    const int new_w = static_cast<int>(std::max(p.min_img_size, std::min(p.max_img_size, scale * res.width)));
    const int new_h = static_cast<int>(std::max(p.min_img_size, std::min(p.max_img_size, scale * res.height)));
    WEFT_CHECK(new_w > 0 && new_h > 0, kValue, "the random scale ", scale, " leaves a ", res.width,
               "x", res.height, " image empty");
    double m[6] = {hs * a - shear * b * ws, hs * b + shear * a * ws, 0, -b * ws, a * ws, 0};
    // The image's centre stays at the centre of the new size.
    m[2] = (new_w - (m[0] * res.width + m[1] * res.height)) / 2;
    m[5] = (new_h - (m[3] * res.width + m[4] * res.height)) / 2;
    res = WarpAffine(ImageView::Of(res), m, new_w, new_h, interp(res.width, res.height, new_w, new_h),
                     static_cast<uint8_t>(p.fill_value));
  }
  if (p.pad > 0) {
    res = PadImage(ImageView::Of(res), p.pad, p.pad, p.pad, p.pad, static_cast<uint8_t>(p.fill_value));
  }
  auto crop_to_output = [&](int x, int y, int w, int h) {
    Image crop = ResizeImage(ImageView::Of(res).Crop(x, y, w, h), out_w, out_h, interp(w, h, out_w, out_h));
    res = std::move(crop);
  };
  // Where a window leaving free_w x free_h pixels aside starts: at random, or centred.
  auto origin = [&](int free_w, int free_h) {
    if (!p.rand_crop) return std::make_pair(free_w / 2, free_h / 2);
    const int y = std::uniform_int_distribution<int>(0, free_h)(*rng);
    return std::make_pair(std::uniform_int_distribution<int>(0, free_w)(*rng), y);
  };
  bool cropped = false;
  if (p.random_resized_crop) {
    const float area = static_cast<float>(res.height) * res.width;
    std::uniform_real_distribution<float> pick_area(p.min_random_area, p.max_random_area), pick_ratio(ar_lo, ar_hi);
    for (int attempt = 0; attempt < 10 && !cropped; ++attempt) {
      const float target = area * pick_area(*rng), r = pick_ratio(*rng);
      int h = static_cast<int>(std::round(std::sqrt(target / r))), w = static_cast<int>(std::round(std::sqrt(target * r)));
      if (unit(*rng) > 0.5f) std::swap(h, w);
      if (h >= 1 && w >= 1 && h <= res.height && w <= res.width) {
        const int y = std::uniform_int_distribution<int>(0, res.height - h)(*rng);
        const int x = std::uniform_int_distribution<int>(0, res.width - w)(*rng);
        crop_to_output(x, y, w, h);
        cropped = true;
      }
    }
  } else if (p.max_crop_size != -1 || p.min_crop_size != -1) {
    const int lo = p.min_crop_size == -1 ? p.max_crop_size : p.min_crop_size;
    const int hi = p.max_crop_size == -1 ? p.min_crop_size : p.max_crop_size;
    WEFT_CHECK(res.width >= hi && res.height >= hi, kValue, "a ", res.width, "x", res.height,
               " image is smaller than max_crop_size ", hi);
    const int side = std::uniform_int_distribution<int>(lo, hi)(*rng);
    const auto [x, y] = origin(res.width - side, res.height - side);
    crop_to_output(x, y, side, side);
    cropped = true;
  }
  if (!cropped) {
    // data_shape out of the image, enlarged first (keeping its aspect) when smaller.
    if (res.height < out_h) resize(static_cast<int>(static_cast<float>(out_h) / res.height * res.width), out_h);
    if (res.width < out_w) resize(out_w, static_cast<int>(static_cast<float>(out_w) / res.width * res.height));
    WEFT_CHECK(res.height >= out_h && res.width >= out_w, kValue, "a ", res.width, "x", res.height,
               " image is smaller than data_shape");
    const auto [x, y] = origin(res.width - out_w, res.height - out_h);
    res = CopyImage(ImageView::Of(res).Crop(x, y, out_w, out_h));
  }
  const size_t npx = static_cast<size_t>(out_w) * out_h;
  uint8_t* px = res.data.data();
  const int c = res.channels;
  if (p.brightness > 0 || p.contrast > 0 || p.saturation > 0) {
    const float alpha_b = 1.f + std::uniform_real_distribution<float>(-p.brightness, p.brightness)(*rng);
    const float alpha_c = 1.f + std::uniform_real_distribution<float>(-p.contrast, p.contrast)(*rng);
    const float alpha_s = 1.f + std::uniform_real_distribution<float>(-p.saturation, p.saturation)(*rng);
    int order[3] = {0, 1, 2};
    std::shuffle(std::begin(order), std::end(order), *rng);
    for (int step : order) {
      if (step == 0) {
        for (size_t i = 0; i < npx * c; ++i) px[i] = Saturate(px[i] * alpha_b);
      } else if (step == 1) {
        double sum = 0;
        for (size_t i = 0; i < npx; ++i) sum += c == 3 ? Grey(px + i * 3) : px[i];
        const float shift = static_cast<float>((1.0 - alpha_c) * sum / static_cast<double>(npx));
        for (size_t i = 0; i < npx * c; ++i) px[i] = Saturate(px[i] * alpha_c + shift);
      } else if (c == 3) {
        for (size_t i = 0; i < npx; ++i) {
          const float g = Saturate(Grey(px + i * 3)) * (1.f - alpha_s);
          for (int k = 0; k < 3; ++k) px[i * 3 + k] = Saturate(px[i * 3 + k] * alpha_s + g);
        }
      }
    }
  }
  if ((p.random_h != 0 || p.random_s != 0 || p.random_l != 0) && c == 3) {
    // A sum of two uniform draws leans towards the middle: fewer extreme shifts.
    auto shift = [&](int range) {
      float r = unit(*rng);
      r = (r + 4 * unit(*rng)) / 5;
      return static_cast<int>(r * range * 2 - range);
    };
    const int dh = shift(p.random_h), ds = shift(p.random_s), dl = shift(p.random_l);
    const int delta[3] = {dh, dl, ds}, limit[3] = {180, 255, 255};
    for (size_t i = 0; i < npx; ++i) {
      int hls[3];
      RgbToHls(px + i * 3, hls);
      for (int k = 0; k < 3; ++k) hls[k] = std::max(0, std::min(limit[k], hls[k] + delta[k]));
      HlsToRgb(hls, px + i * 3);
    }
  }
  if (p.pca_noise > 0 && c == 3) {
    // AlexNet's lighting noise: ImageNet's RGB eigenvectors scaled by their eigenvalues.
    static const float kEig[3][3] = {{55.46f * -0.5675f, 4.794f * 0.7192f, 1.148f * 0.4009f},
                                     {55.46f * -0.5808f, 4.794f * -0.0045f, 1.148f * -0.8140f},
                                     {55.46f * -0.5836f, 4.794f * -0.6948f, 1.148f * 0.4203f}};
    std::normal_distribution<float> normal(0.f, p.pca_noise);
    const float alpha[3] = {normal(*rng), normal(*rng), normal(*rng)};
    float add[3];
    for (int k = 0; k < 3; ++k) add[k] = kEig[k][0] * alpha[0] + kEig[k][1] * alpha[1] + kEig[k][2] * alpha[2];
    for (size_t i = 0; i < npx; ++i)
      for (int k = 0; k < 3; ++k)
        px[i * 3 + k] = static_cast<uint8_t>(std::max(0, std::min(255, static_cast<int>(px[i * 3 + k] + add[k]))));
  }
  AugPlan plan;
  plan.mirror = p.mirror || (p.rand_mirror && unit(*rng) < 0.5f);
  DrawNormalizeJitter(p, &plan, rng);
  WriteNormalized(p, plan, ImageView::Of(res), out_c, out_h, out_w, dst, mean_img);
}

}  // namespace

bool NeedsFullAugment(const ImageAugParam& p) {
  return NeedsAffine(p) || p.pad > 0 || p.max_crop_size != -1 || p.min_crop_size != -1 || p.random_h != 0 ||
         p.random_s != 0 || p.random_l != 0 || p.pca_noise > 0;
}

void DecodeAugment(const ImageAugParam& p, const uint8_t* data, size_t size, int out_c, int out_h, int out_w,
                   uint64_t seed, float* dst, const float* mean_img) {
  int src_h = 0, src_w = 0, src_c = 0;
  PeekImageSize(data, size, &src_h, &src_w, &src_c);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  std::mt19937 rng(seq);
  if (NeedsFullAugment(p)) {
    FullAugment(p, data, size, out_c, out_h, out_w, &rng, dst, mean_img);
    return;
  }
  AugPlan plan = PlanAugment(p, src_h, src_w, out_h, out_w, &rng);
  ApplyAugment(p, plan, data, size, out_c, out_h, out_w, dst, mean_img);
}

}  // namespace io
}  // namespace weft

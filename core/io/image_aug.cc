#include "core/io/image_aug.h"

#include <algorithm>
#include <cmath>

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
  const float* stds[3] = {&p.std_r, &p.std_g, &p.std_b};
  for (const float* s : stds) WEFT_CHECK(*s != 0, kValue, "ImageRecordIter: std_r/std_g/std_b must not be 0");
}

namespace {

// What is subtracted from channel c of the pixel at (y, x) of the cropped image.
inline float MeanAt(const float* mean, const float* mean_img, size_t plane, int w, int c, int y, int x) {
  return mean_img ? mean_img[c * plane + static_cast<size_t>(y) * w + x] : mean[c];
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
  const float mean[3] = {p.mean_r, p.mean_g, p.mean_b};
  const float mul[3] = {p.scale / p.std_r, p.scale / p.std_g, p.scale / p.std_b};
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
              (px[c] - MeanAt(mean, mean_img, plane, out_w, c, y, sx)) * mul[c];
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
            (clamped - MeanAt(mean, mean_img, plane, out_w, c, y, sx)) * mul[c];
      }
    }
  }
}

void DecodeAugment(const ImageAugParam& p, const uint8_t* data, size_t size, int out_c, int out_h, int out_w,
                   uint64_t seed, float* dst, const float* mean_img) {
  int src_h = 0, src_w = 0, src_c = 0;
  PeekImageSize(data, size, &src_h, &src_w, &src_c);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  std::mt19937 rng(seq);
  AugPlan plan = PlanAugment(p, src_h, src_w, out_h, out_w, &rng);
  ApplyAugment(p, plan, data, size, out_c, out_h, out_w, dst, mean_img);
}

}  // namespace io
}  // namespace weft

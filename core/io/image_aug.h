// The augmentations of ImageRecordIter (MXNet's default image augmenter and normaliser):
// resize of the shorter side, random / random-resized / centre crop to data_shape, mirror,
// brightness, contrast and saturation jitter, then (x - mean) / std * scale into CHW floats.
//
// The crop is planned on the image's dimensions before decoding, so a JPEG whose crop
// will be shrunk at least 2x is decoded at 1/2, 1/4 or 1/8 scale by libjpeg-turbo (its DCT
// does the first part of the downscaling); the crop covers the same part of the picture.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "core/base/param.h"
#include "core/io/image_codec.h"

namespace weft {
namespace io {

struct ImageAugParam {
  int resize = -1;
  bool rand_crop = false;
  bool random_resized_crop = false;
  float min_random_area = 1.f;
  float max_random_area = 1.f;
  float max_aspect_ratio = 0.f;
  std::optional<double> min_aspect_ratio;
  float brightness = 0.f;
  float contrast = 0.f;
  float saturation = 0.f;
  bool rand_mirror = false;
  bool mirror = false;
  float mean_r = 0.f, mean_g = 0.f, mean_b = 0.f;
  float std_r = 1.f, std_g = 1.f, std_b = 1.f;
  float scale = 1.f;
  int inter_method = 1;
  std::string mean_img;
  // MXNet's affine, padding, crop-size, HSL and PCA augmentations (see NeedsFullAugment).
  float max_rotate_angle = 0.f;
  float rotate = -1.f;
  float max_shear_ratio = 0.f;
  int max_crop_size = -1;
  int min_crop_size = -1;
  float max_random_scale = 1.f;
  float min_random_scale = 1.f;
  float max_img_size = 1e10f;
  float min_img_size = 0.f;
  float pca_noise = 0.f;
  int random_h = 0;
  int random_s = 0;
  int random_l = 0;
  int fill_value = 255;
  int pad = 0;
  float max_random_contrast = 0.f;
  float max_random_illumination = 0.f;
};
WEFT_PARAM_SCHEMA(ImageAugParam, s) {
  s.Field("resize", &ImageAugParam::resize).Default(-1)
      .Describe("Augmentation Param: resize the shorter edge to this size before cropping (-1: no resize).");
  s.Field("rand_crop", &ImageAugParam::rand_crop).Default(false)
      .Describe("Augmentation Param: crop data_shape at a random position (else at the centre).");
  s.Field("random_resized_crop", &ImageAugParam::random_resized_crop).Default(false)
      .Describe("Augmentation Param: crop a random area and aspect ratio, then resize it to data_shape "
                "(10 tries, then a centre crop).");
  s.Field("min_random_area", &ImageAugParam::min_random_area).Default(1.f).Range(0, 1)
      .Describe("Augmentation Param: smallest crop area as a fraction of the image (random_resized_crop).");
  s.Field("max_random_area", &ImageAugParam::max_random_area).Default(1.f).Range(0, 1)
      .Describe("Augmentation Param: largest crop area as a fraction of the image (random_resized_crop).");
  s.Field("max_aspect_ratio", &ImageAugParam::max_aspect_ratio).Default(0.f).Min(0)
      .Describe("Augmentation Param: crop aspect ratio (width/height) drawn from [min_aspect_ratio, "
                "max_aspect_ratio], or [1 - max, 1 + max] when min_aspect_ratio is None.");
  s.Field("min_aspect_ratio", &ImageAugParam::min_aspect_ratio).Default(std::nullopt)
      .Describe("Augmentation Param: lower bound of the crop aspect ratio (see max_aspect_ratio).");
  s.Field("brightness", &ImageAugParam::brightness).Default(0.f).Min(0)
      .Describe("Augmentation Param: brightness factor drawn from [1 - b, 1 + b].");
  s.Field("contrast", &ImageAugParam::contrast).Default(0.f).Min(0)
      .Describe("Augmentation Param: contrast factor drawn from [1 - c, 1 + c] (blend with the mean grey).");
  s.Field("saturation", &ImageAugParam::saturation).Default(0.f).Min(0)
      .Describe("Augmentation Param: saturation factor drawn from [1 - s, 1 + s] (blend with each pixel's grey).");
  s.Field("rand_mirror", &ImageAugParam::rand_mirror).Default(false)
      .Describe("Augmentation Param: flip left-right with probability 0.5.");
  s.Field("mirror", &ImageAugParam::mirror).Default(false).Describe("Augmentation Param: always flip left-right.");
  s.Field("mean_r", &ImageAugParam::mean_r).Default(0.f).Describe("Normalize Param: mean of the R channel.");
  s.Field("mean_g", &ImageAugParam::mean_g).Default(0.f).Describe("Normalize Param: mean of the G channel.");
  s.Field("mean_b", &ImageAugParam::mean_b).Default(0.f).Describe("Normalize Param: mean of the B channel.");
  s.Field("std_r", &ImageAugParam::std_r).Default(1.f).Describe("Normalize Param: std of the R channel.");
  s.Field("std_g", &ImageAugParam::std_g).Default(1.f).Describe("Normalize Param: std of the G channel.");
  s.Field("std_b", &ImageAugParam::std_b).Default(1.f).Describe("Normalize Param: std of the B channel.");
  s.Field("scale", &ImageAugParam::scale).Default(1.f).Describe("Normalize Param: multiplier after normalisation.");
  s.Field("mean_img", &ImageAugParam::mean_img).Default("")
      .Describe("Normalize Param: file of the mean image, subtracted instead of mean_r/mean_g/mean_b. When the file "
                "does not exist, the mean of the (augmented, normalised) images of the data set is computed on "
                "creation and saved there as an NDArray file with the key \"mean_img\".");
  s.Field("inter_method", &ImageAugParam::inter_method).Default(1)
      .Describe("Augmentation Param: interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto "
                "(bicubic to enlarge, area to shrink, else bilinear), 10 one of 0..4 at random per image.");
  s.Field("max_rotate_angle", &ImageAugParam::max_rotate_angle).Default(0.f).Min(0)
      .Describe("Augmentation Param: rotate by a random whole number of degrees in [-v, v].");
  s.Field("rotate", &ImageAugParam::rotate).Default(-1.f)
      .Describe("Augmentation Param: rotate by this angle (degrees) when positive, instead of max_rotate_angle.");
  s.Field("max_shear_ratio", &ImageAugParam::max_shear_ratio).Default(0.f).Min(0)
      .Describe("Augmentation Param: shear (x, y) -> (x + m y, y) with m drawn from [-v, v].");
  s.Field("max_crop_size", &ImageAugParam::max_crop_size).Default(-1)
      .Describe("Augmentation Param: crop a square of a random side in [min_crop_size, max_crop_size] (then resized "
                "to data_shape); ignored with random_resized_crop.");
  s.Field("min_crop_size", &ImageAugParam::min_crop_size).Default(-1)
      .Describe("Augmentation Param: the smallest side of that square crop.");
  s.Field("max_random_scale", &ImageAugParam::max_random_scale).Default(1.f)
      .Describe("Augmentation Param: scale the image by s drawn from [min_random_scale, max_random_scale].");
  s.Field("min_random_scale", &ImageAugParam::min_random_scale).Default(1.f)
      .Describe("Augmentation Param: the smallest such scale.");
  s.Field("max_img_size", &ImageAugParam::max_img_size).Default(1e10f)
      .Describe("Augmentation Param: largest width and height after the scale and rotation.");
  s.Field("min_img_size", &ImageAugParam::min_img_size).Default(0.f)
      .Describe("Augmentation Param: smallest width and height after the scale and rotation.");
  s.Field("pca_noise", &ImageAugParam::pca_noise).Default(0.f).Min(0)
      .Describe("Augmentation Param: add AlexNet's PCA lighting noise (ImageNet eigenvectors, alphas drawn from "
                "N(0, pca_noise)).");
  s.Field("random_h", &ImageAugParam::random_h).Default(0).Min(0)
      .Describe("Augmentation Param: add a random value in [-v, v] to the H channel in HSL space (H in [0, 180)).");
  s.Field("random_s", &ImageAugParam::random_s).Default(0).Min(0)
      .Describe("Augmentation Param: add a random value in [-v, v] to the S channel in HSL space.");
  s.Field("random_l", &ImageAugParam::random_l).Default(0).Min(0)
      .Describe("Augmentation Param: add a random value in [-v, v] to the L channel in HSL space.");
  s.Field("fill_value", &ImageAugParam::fill_value).Default(255).Range(0, 255)
      .Describe("Augmentation Param: value of the pixels the rotation, shear and pad bring in.");
  s.Field("pad", &ImageAugParam::pad).Default(0).Min(0)
      .Describe("Augmentation Param: pad every side by this many fill_value pixels before cropping.");
  s.Field("max_random_contrast", &ImageAugParam::max_random_contrast).Default(0.f).Min(0)
      .Describe("Normalize Param: multiply the normalised image by a factor drawn from [1 - v, 1 + v].");
  s.Field("max_random_illumination", &ImageAugParam::max_random_illumination).Default(0.f).Min(0)
      .Describe("Normalize Param: add a value drawn from [-v, v] (times scale / std) to the normalised image.");
}

// Whether MXNet's full default augmenter is needed (rotation, shear, random scale, aspect
// ratio without random_resized_crop, image size bounds, padding, crop sizes, HSL or PCA
// noise): it works step by step on the decoded image; otherwise one crop-and-resize of a
// window planned before decoding (PlanAugment, ApplyAugment) does the same work faster.
bool NeedsFullAugment(const ImageAugParam& p);

// What one sample's augmentation does, drawn before decoding. The crop window is in the
// pixels of the stored image.
struct AugPlan {
  double x = 0, y = 0, w = 0, h = 0;
  bool mirror = false;
  float brightness = 1.f, contrast = 1.f, saturation = 1.f;
  int inter_method = 1;  // the parameter's, with 10 (random) drawn already
  // max_random_contrast / max_random_illumination: the normalised value is
  // (x - mean) * scale / std * norm_contrast + norm_illumination * scale / std.
  float norm_contrast = 1.f, norm_illumination = 0.f;
};

// Checks the parameters' consistency; kValue naming the parameter otherwise.
void CheckImageAugParam(const ImageAugParam& p);

AugPlan PlanAugment(const ImageAugParam& p, int src_h, int src_w, int out_h, int out_w, std::mt19937* rng);

// Decodes an encoded image, applies `plan` and writes out_c x out_h x out_w floats to dst
// (CHW; RGB for 3 channels, grey for 1). `mean_img`, when given, holds out_c x out_h x
// out_w floats subtracted instead of mean_r/g/b, at each pixel's place before mirroring
// (as MXNet's ImageRecordIter).
void ApplyAugment(const ImageAugParam& p, const AugPlan& plan, const uint8_t* data, size_t size, int out_c, int out_h,
                  int out_w, float* dst, const float* mean_img = nullptr);

// Both steps with the sample's own random stream.
void DecodeAugment(const ImageAugParam& p, const uint8_t* data, size_t size, int out_c, int out_h, int out_w,
                   uint64_t seed, float* dst, const float* mean_img = nullptr);

}  // namespace io
}  // namespace weft

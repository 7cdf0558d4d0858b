// JPEG (libjpeg-turbo) and PNG (libpng) decoding and encoding, and resizing, of 8-bit
// images held as HWC rows: what mx.image / cv2.imdecode / cv2.resize do for MXNet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace weft {
namespace io {

struct Image {
  // An image of that size with every byte `fill`.
  static Image Filled(int height, int width, int channels, uint8_t fill = 0) {
    Image im;
    im.height = height;
    im.width = width;
    im.channels = channels;
    im.data.assign(static_cast<size_t>(height) * width * channels, fill);
    return im;
  }
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> data;  // height * width * channels, row-major HWC
  uint8_t* row(int y) { return data.data() + static_cast<size_t>(y) * width * channels; }
  const uint8_t* row(int y) const { return data.data() + static_cast<size_t>(y) * width * channels; }
};

// A read-only window on HWC pixels (a crop of an Image without copying it).
struct ImageView {
  const uint8_t* data = nullptr;
  int height = 0, width = 0, channels = 0;
  size_t stride = 0;  // bytes between rows
  static ImageView Of(const Image& im) {
    return ImageView{im.data.data(), im.height, im.width, im.channels, static_cast<size_t>(im.width) * im.channels};
  }
  ImageView Crop(int x, int y, int w, int h) const;
};

// flag as cv2.imdecode / mx.image.imdecode: 1 colour (3 channels), 0 grey (1 channel),
// -1 unchanged (1, 3 or 4 channels as stored). Colour comes out RGB unless to_rgb is false
// (then BGR, OpenCV's order). `min_height`/`min_width` > 0 let a JPEG decode at a reduced
// DCT scale (1/2, 1/4, 1/8) as long as the result stays at least that large: decoding is
// the cost of an image pipeline and most of the pixels are thrown away by the resize.
// Unknown or corrupt data throws kIO.
Image DecodeImage(const void* data, size_t size, int flag = 1, bool to_rgb = true, int min_height = 0,
                  int min_width = 0);
// Image dimensions without decoding the pixels (h, w, channels as stored).
void PeekImageSize(const void* data, size_t size, int* height, int* width, int* channels);

// `format` is ".jpg"/".jpeg" (quality 0..100) or ".png" (quality = zlib level, clamped to
// 0..9 as cv2 does). `is_bgr` says the 3/4-channel input is in OpenCV order.
std::string EncodeImage(const ImageView& img, const std::string& format, int quality, bool is_bgr = false);

// interp as cv2: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (8 taps). Sampling
// centres follow cv2 (half-pixel), so results agree with cv2.resize to within rounding.
Image ResizeImage(const ImageView& src, int out_width, int out_height, int interp = 1);

// A copy of the pixels a view shows (a crop made its own image).
Image CopyImage(const ImageView& src);

// src with top/bottom rows and left/right columns of `fill` around it (cv2.copyMakeBorder's
// constant border).
Image PadImage(const ImageView& src, int top, int bottom, int left, int right, uint8_t fill);

// OpenCV's warpAffine with a constant border: destination pixel (x, y) is the source at
// M^-1 (x, y), M = [m0 m1 m2; m3 m4 m5] mapping source to destination pixel coordinates;
// interp as ResizeImage (area samples bilinearly, as OpenCV's warp does); taps outside the
// source read `fill` in every channel.
Image WarpAffine(const ImageView& src, const double m[6], int out_width, int out_height, int interp, uint8_t fill);

// OpenCV's 8-bit RGB <-> HLS (H in [0, 180), L and S in [0, 255]) of one pixel.
void RgbToHls(const uint8_t* px, int* hls);
void HlsToRgb(const int* hls, uint8_t* px);

// MXNet's inter_method (its image iterators' parameter) as one of ResizeImage's: 0..4 as
// they are; 9 (auto) bicubic when both sides grow, area when both shrink, else bilinear;
// 10 (random) one of 0..4 drawn from *rng. Anything else is refused (kValue).
bool ValidInterMethod(int method);
int ChooseInterMethod(int method, int old_w, int old_h, int new_w, int new_h, std::mt19937* rng);

}  // namespace io
}  // namespace weft

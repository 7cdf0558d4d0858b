#include "core/io/image_codec.h"

#include <png.h>
#include <setjmp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <jerror.h>

#include "core/base/error.h"
#include "core/base/limits.h"
#include "core/op/nn/resample.h"

namespace weft {
namespace io {

namespace {

bool IsJpeg(const uint8_t* p, size_t n) { return n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF; }
bool IsPng(const uint8_t* p, size_t n) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return n >= 8 && std::memcmp(p, sig, 8) == 0;
}

[[noreturn]] void UnknownFormat(const uint8_t* p, size_t n) {
  char head[40] = {0};
  size_t k = std::min<size_t>(n, 8);
  for (size_t i = 0; i < k; ++i) std::snprintf(head + 3 * i, 4, "%02x ", p[i]);
  Throw(ErrorKind::kIO, "image decode: data of ", n, " bytes is neither JPEG (ff d8 ff) nor PNG (89 50 4e 47); it starts with ",
        n == 0 ? "nothing" : head);
}

void CheckFlag(int flag) {
  WEFT_CHECK(flag == -1 || flag == 0 || flag == 1, kValue, "image decode: flag must be 1 (colour), 0 (grey) or -1 (unchanged), got ",
             flag);
}

// ---------------------------------------------------------------- JPEG

// libjpeg reports fatal errors through error_exit, which must not return: jump back to the
// caller's setjmp with the message kept.
struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  JpegError* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  longjmp(e->jump, 1);
}

// Warnings would go to stderr. Recoverable damage (e.g. extraneous bytes before a marker)
// decodes as OpenCV does, silently; data that ends early is an error, since libjpeg would
// fill the missing rows with grey and a truncated file would pass for an image.
void JpegQuiet(j_common_ptr) {}
void JpegEmit(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) cinfo->err->error_exit(cinfo);
}

Image DecodeJpeg(const uint8_t* data, size_t size, int flag, bool to_rgb, int min_h, int min_w) {
  Image out;
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.output_message = JpegQuiet;
  err.mgr.emit_message = JpegEmit;
  err.message[0] = '\0';
  // Only POD state and objects constructed above live across the jump.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    Throw(ErrorKind::kIO, "image decode: corrupt JPEG (", size, " bytes): ", err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, const_cast<unsigned char*>(data), static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  // The header's dimensions are only a claim: check them before the decoder allocates.
  const int64_t jpeg_pixels = static_cast<int64_t>(cinfo.image_width) * cinfo.image_height;
  if (jpeg_pixels > LimitValue(Limit::kImagePixels)) {
    const std::string where = "image decode: JPEG header (" + std::to_string(size) + " bytes) of " +
                              std::to_string(cinfo.image_width) + "x" + std::to_string(cinfo.image_height);
    jpeg_destroy_decompress(&cinfo);
    CheckLimit(Limit::kImagePixels, jpeg_pixels, where);
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool grey_src = cinfo.num_components == 1;
  int channels;
  if (flag == 0 || (flag == -1 && grey_src)) {
    cinfo.out_color_space = JCS_GRAYSCALE;
    channels = 1;
  } else if (cmyk) {
    cinfo.out_color_space = JCS_CMYK;
    channels = 3;
  } else {
    cinfo.out_color_space = to_rgb ? JCS_RGB : JCS_EXT_BGR;
    channels = 3;
  }
  if (min_h > 0 && min_w > 0) {
    for (int denom : {8, 4, 2}) {
      int h = static_cast<int>((cinfo.image_height + denom - 1) / denom);
      int w = static_cast<int>((cinfo.image_width + denom - 1) / denom);
      if (h >= min_h && w >= min_w) {
        cinfo.scale_num = 1;
        cinfo.scale_denom = denom;
        break;
      }
    }
  }
  jpeg_start_decompress(&cinfo);
  out.height = static_cast<int>(cinfo.output_height);
  out.width = static_cast<int>(cinfo.output_width);
  out.channels = channels;
  const int comps = cinfo.output_components;
  std::vector<uint8_t>& buf = out.data;
  buf.resize(static_cast<size_t>(out.height) * out.width * std::max(comps, channels));
  const size_t row_bytes = static_cast<size_t>(out.width) * comps;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = buf.data() + cinfo.output_scanline * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (cmyk && channels == 3) {
    // Adobe writes CMYK JPEGs inverted; colour = inverted ink times inverted black.
    const size_t n = static_cast<size_t>(out.height) * out.width;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* s = buf.data() + 4 * i;
      uint8_t r = static_cast<uint8_t>((s[0] * s[3] + 127) / 255), g = static_cast<uint8_t>((s[1] * s[3] + 127) / 255),
              b = static_cast<uint8_t>((s[2] * s[3] + 127) / 255);
      uint8_t* d = buf.data() + 3 * i;
      d[0] = to_rgb ? r : b;
      d[1] = g;
      d[2] = to_rgb ? b : r;
    }
    buf.resize(n * 3);
  }
  return out;
}

// ---------------------------------------------------------------- PNG

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

void PngRead(png_structp png, png_bytep dst, png_size_t n) {
  PngSource* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (s->pos + n > s->size) png_error(png, "data ends before the image does (truncated PNG)");
  std::memcpy(dst, s->data + s->pos, n);
  s->pos += n;
}

struct PngMessage {
  char text[256];
};

void PngErrorFn(png_structp png, png_const_charp msg) {
  PngMessage* m = static_cast<PngMessage*>(png_get_error_ptr(png));
  std::snprintf(m->text, sizeof(m->text), "%s", msg);
  png_longjmp(png, 1);
}
void PngWarnFn(png_structp, png_const_charp) {}

Image DecodePng(const uint8_t* data, size_t size, int flag, bool to_rgb) {
  Image out;
  std::vector<png_bytep> rows;
  PngMessage msg;
  msg.text[0] = '\0';
  PngSource src{data, size, 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &msg, PngErrorFn, PngWarnFn);
  WEFT_CHECK(png != nullptr, kRuntime, "image decode: libpng could not create a reader");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    Throw(ErrorKind::kRuntime, "image decode: libpng could not create an info struct");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    Throw(ErrorKind::kIO, "image decode: corrupt PNG (", size, " bytes): ", msg.text);
  }
  png_set_read_fn(png, &src, PngRead);
  png_read_info(png, info);
  const uint32_t png_w = png_get_image_width(png, info), png_h = png_get_image_height(png, info);
  const int64_t png_pixels = static_cast<int64_t>(png_w) * png_h;
  if (png_pixels > LimitValue(Limit::kImagePixels)) {
    png_destroy_read_struct(&png, &info, nullptr);
    CheckLimit(Limit::kImagePixels, png_pixels,
               "image decode: PNG header (" + std::to_string(size) + " bytes) of " + std::to_string(png_w) + "x" +
                   std::to_string(png_h));
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  const bool src_grey = color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA;
  if (flag == -1) {
    if (has_trns) png_set_tRNS_to_alpha(png);
    // cv2 gives grey+alpha as 4 channels; plain grey stays one channel.
    if (color == PNG_COLOR_TYPE_GRAY_ALPHA || (src_grey && has_trns)) png_set_gray_to_rgb(png);
  } else {
    if ((color & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
    if (flag == 1 && src_grey) png_set_gray_to_rgb(png);
  }
  if (!to_rgb) png_set_bgr(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.height = static_cast<int>(png_get_image_height(png, info));
  out.width = static_cast<int>(png_get_image_width(png, info));
  out.channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != static_cast<size_t>(out.width) * out.channels) {
    png_destroy_read_struct(&png, &info, nullptr);
    Throw(ErrorKind::kInternal, "image decode: PNG rows of ", row_bytes, " bytes for width ", out.width, " x ",
          out.channels, " channels");
  }
  out.data.resize(row_bytes * out.height);
  rows.resize(out.height);
  for (int y = 0; y < out.height; ++y) rows[y] = out.data.data() + row_bytes * y;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (flag == 0 && out.channels == 3) {
    // libpng's own rgb_to_gray works in linear light; OpenCV (and libjpeg) weight the stored
    // values with BT.601's 0.299/0.587/0.114, in 14-bit fixed point.
    const size_t n = static_cast<size_t>(out.height) * out.width;
    uint8_t* d = out.data.data();
    const int r = to_rgb ? 0 : 2, b = to_rgb ? 2 : 0;
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>((d[3 * i + r] * 4899 + d[3 * i + 1] * 9617 + d[3 * i + b] * 1868 + 8192) >> 14);
    out.data.resize(n);
    out.channels = 1;
  }
  return out;
}

void PngWrite(png_structp png, png_bytep src, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(src), n);
}
void PngFlush(png_structp) {}

std::string EncodePng(const ImageView& img, int level, bool is_bgr) {
  std::string out;
  std::vector<png_bytep> rows(img.height);
  PngMessage msg;
  msg.text[0] = '\0';
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &msg, PngErrorFn, PngWarnFn);
  WEFT_CHECK(png != nullptr, kRuntime, "image encode: libpng could not create a writer");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    Throw(ErrorKind::kRuntime, "image encode: libpng could not create an info struct");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    Throw(ErrorKind::kIO, "image encode: PNG: ", msg.text);
  }
  static const int kTypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(png, &out, PngWrite, PngFlush);
  png_set_IHDR(png, info, img.width, img.height, 8, kTypes[img.channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, std::min(std::max(level, 0), 9));
  png_write_info(png, info);
  if (is_bgr && img.channels >= 3) png_set_bgr(png);
  for (int y = 0; y < img.height; ++y) rows[y] = const_cast<png_bytep>(img.data + img.stride * y);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::string EncodeJpeg(const ImageView& img, int quality, bool is_bgr) {
  WEFT_CHECK(img.channels != 2, kValue, "image encode: JPEG cannot hold a 2-channel (grey + alpha) image");
  WEFT_CHECK(quality >= 0 && quality <= 100, kValue, "image encode: JPEG quality must be in [0, 100], got ", quality);
  jpeg_compress_struct cinfo;
  JpegError err;
  unsigned char* mem = nullptr;
  unsigned long mem_size = 0;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.output_message = JpegQuiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(mem);
    Throw(ErrorKind::kIO, "image encode: JPEG: ", err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &mem, &mem_size);
  cinfo.image_width = img.width;
  cinfo.image_height = img.height;
  cinfo.input_components = img.channels;
  // Alpha has no place in a JPEG: the 4th byte is read and ignored, as cv2.imencode does.
  if (img.channels == 1)
    cinfo.in_color_space = JCS_GRAYSCALE;
  else if (img.channels == 3)
    cinfo.in_color_space = is_bgr ? JCS_EXT_BGR : JCS_RGB;
  else
    cinfo.in_color_space = is_bgr ? JCS_EXT_BGRX : JCS_EXT_RGBX;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(img.data + img.stride * cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(mem), mem_size);
  jpeg_destroy_compress(&cinfo);
  std::free(mem);
  return out;
}

// ---------------------------------------------------------------- resize

// Separable resampling along one axis, as op::ResampleTaps: for every output coordinate,
// `k` source indices (already clamped to the image) and their weights. Nearest takes
// OpenCV's source cells (op::NearestCells) and bilinear the half-pixel centres, as cv2; bicubic,
// area and Lanczos are the resizing operators' taps (the same arithmetic as _image_resize
// on float images), `shrink` saying that neither axis grows (where cv2's area averages).
op::ResampleTaps MakeTaps(int in, int out, int interp, bool shrink) {
  if (interp >= 2) return op::KernelOrAreaTaps(in, out, interp, shrink);
  op::ResampleTaps t;
  if (interp == 0) {
    t.idx = op::NearestCells(in, out);
    t.w.assign(static_cast<size_t>(out), 1.f);
    return t;
  }
  t.k = 2;
  for (const op::LinearTap& l : op::LinearTaps(in, out, false, false)) {
    t.idx.push_back(l.i0);
    t.idx.push_back(l.i1);
    t.w.push_back(l.w0);
    t.w.push_back(l.w1);
  }
  return t;
}

}  // namespace

ImageView ImageView::Crop(int x, int y, int w, int h) const {
  WEFT_CHECK(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= width && y + h <= height, kValue, "image crop: window (x=", x,
             ", y=", y, ", w=", w, ", h=", h, ") does not fit in a ", width, "x", height, " image");
  return ImageView{data + stride * y + static_cast<size_t>(x) * channels, h, w, channels, stride};
}

Image DecodeImage(const void* data, size_t size, int flag, bool to_rgb, int min_height, int min_width) {
  CheckFlag(flag);
  WEFT_CHECK(data != nullptr || size == 0, kValue, "image decode: data is NULL");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (IsJpeg(p, size)) return DecodeJpeg(p, size, flag, to_rgb, min_height, min_width);
  if (IsPng(p, size)) return DecodePng(p, size, flag, to_rgb);
  UnknownFormat(p, size);
}

void PeekImageSize(const void* data, size_t size, int* height, int* width, int* channels) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (IsPng(p, size)) {
    // IHDR is always the first chunk: width and height big-endian at bytes 16 and 20.
    WEFT_CHECK(size >= 26, kIO, "image decode: PNG of ", size, " bytes is too short for its header");
    auto be = [p](size_t o) { return (uint32_t{p[o]} << 24) | (uint32_t{p[o + 1]} << 16) | (uint32_t{p[o + 2]} << 8) | p[o + 3]; };
    *width = static_cast<int>(be(16));
    *height = static_cast<int>(be(20));
    static const int kChannels[7] = {1, 0, 3, 1, 2, 0, 4};
    *channels = p[25] <= 6 ? kChannels[p[25]] : 0;
    return;
  }
  if (!IsJpeg(p, size)) UnknownFormat(p, size);
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.output_message = JpegQuiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    Throw(ErrorKind::kIO, "image decode: corrupt JPEG (", size, " bytes): ", err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, const_cast<unsigned char*>(p), static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  *height = static_cast<int>(cinfo.image_height);
  *width = static_cast<int>(cinfo.image_width);
  *channels = cinfo.num_components == 1 ? 1 : 3;
  jpeg_destroy_decompress(&cinfo);
}

std::string EncodeImage(const ImageView& img, const std::string& format, int quality, bool is_bgr) {
  WEFT_CHECK(img.height > 0 && img.width > 0, kValue, "image encode: empty image (", img.height, "x", img.width, ")");
  WEFT_CHECK(img.channels >= 1 && img.channels <= 4, kValue, "image encode: expected 1, 3 or 4 channels, got ",
             img.channels);
  std::string f = format;
  std::transform(f.begin(), f.end(), f.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!f.empty() && f[0] != '.') f = "." + f;
  if (f == ".jpg" || f == ".jpeg") return EncodeJpeg(img, quality, is_bgr);
  if (f == ".png") return EncodePng(img, quality, is_bgr);
  Throw(ErrorKind::kValue, "image encode: format must be '.jpg', '.jpeg' or '.png', got '", format, "'");
}

Image ResizeImage(const ImageView& src, int out_width, int out_height, int interp) {
  WEFT_CHECK(out_width > 0 && out_height > 0, kValue, "image resize: target size must be positive, got ", out_width, "x",
             out_height);
  WEFT_CHECK(src.width > 0 && src.height > 0, kValue, "image resize: empty source image");
  WEFT_CHECK(interp >= 0 && interp <= 4, kValue,
             "image resize: interp must be 0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area) or 4 (Lanczos), got ",
             interp);
  const int c = src.channels;
  Image out = Image::Filled(out_height, out_width, c);
  const bool shrink = out_width <= src.width && out_height <= src.height;
  const op::ResampleTaps tx = MakeTaps(src.width, out_width, interp, shrink);
  const op::ResampleTaps ty = MakeTaps(src.height, out_height, interp, shrink);
  // Horizontal pass over the source rows the vertical pass reads, kept as floats.
  std::vector<char> used(src.height, 0);
  for (int64_t i : ty.idx) used[static_cast<size_t>(i)] = 1;
  const size_t tmp_row = static_cast<size_t>(out_width) * c;
  std::vector<float> tmp(static_cast<size_t>(src.height) * tmp_row);
  for (int y = 0; y < src.height; ++y) {
    if (!used[y]) continue;
    const uint8_t* s = src.data + src.stride * y;
    float* d = tmp.data() + tmp_row * y;
    for (int x = 0; x < out_width; ++x) {
      const int64_t* ix = &tx.idx[static_cast<size_t>(x) * tx.k];
      const float* wx = &tx.w[static_cast<size_t>(x) * tx.k];
      for (int ch = 0; ch < c; ++ch) {
        float acc = 0.f;
        for (int j = 0; j < tx.k; ++j) acc += wx[j] * s[ix[j] * c + ch];
        d[x * c + ch] = acc;
      }
    }
  }
  for (int y = 0; y < out_height; ++y) {
    const int64_t* iy = &ty.idx[static_cast<size_t>(y) * ty.k];
    const float* wy = &ty.w[static_cast<size_t>(y) * ty.k];
    uint8_t* d = out.row(y);
    for (size_t x = 0; x < tmp_row; ++x) {
      float acc = 0.f;
      for (int j = 0; j < ty.k; ++j) acc += wy[j] * tmp[tmp_row * iy[j] + x];
      d[x] = static_cast<uint8_t>(std::min(std::max(std::lround(acc), 0L), 255L));
    }
  }
  return out;
}

Image CopyImage(const ImageView& src) { return PadImage(src, 0, 0, 0, 0, 0); }

Image PadImage(const ImageView& src, int top, int bottom, int left, int right, uint8_t fill) {
  WEFT_CHECK(top >= 0 && bottom >= 0 && left >= 0 && right >= 0, kValue, "image pad: borders must not be negative, got ",
             top, ", ", bottom, ", ", left, ", ", right);
  Image out = Image::Filled(src.height + top + bottom, src.width + left + right, src.channels, fill);
  const size_t row = static_cast<size_t>(src.width) * src.channels;
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* from = src.data + src.stride * y;
    std::copy(from, from + row, out.row(y + top) + static_cast<size_t>(left) * src.channels);
  }
  return out;
}

Image WarpAffine(const ImageView& src, const double m[6], int out_width, int out_height, int interp, uint8_t fill) {
  WEFT_CHECK(out_width > 0 && out_height > 0, kValue, "image warp: target size must be positive, got ", out_width, "x",
             out_height);
  WEFT_CHECK(interp >= 0 && interp <= 4, kValue,
             "image warp: interp must be 0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area) or 4 (Lanczos), got ", interp);
  const double det = m[0] * m[4] - m[1] * m[3];
  WEFT_CHECK(std::fabs(det) > 1e-12, kValue, "image warp: the transform is singular (determinant ", det, ")");
  // Destination pixel (x, y) reads the source at the inverse map of (x, y).
  const double i0 = m[4] / det, i1 = -m[1] / det, i3 = -m[3] / det, i4 = m[0] / det;
  const double i2 = -(i0 * m[2] + i1 * m[5]), i5 = -(i3 * m[2] + i4 * m[5]);
  const int c = src.channels;
  Image out = Image::Filled(out_height, out_width, c);
  // Area has no warp of its own: bilinear, as OpenCV's warpAffine.
  const int k = interp == 0 ? 1 : interp == 2 ? 4 : interp == 4 ? 8 : 2;
  auto weights = [&](double f, float* w) {
    if (k == 2) {
      w[0] = static_cast<float>(1.0 - f);
      w[1] = static_cast<float>(f);
    } else if (k == 4) {
      for (int j = 0; j < 4; ++j) w[j] = op::CubicKernel(static_cast<float>(f - (j - 1)));
    } else {
      float sum = 0.f;
      for (int j = 0; j < 8; ++j) sum += w[j] = op::Lanczos4Kernel(f - (j - 3));
      for (int j = 0; j < 8; ++j) w[j] /= sum;
    }
  };
  const int first = k == 2 ? 0 : k == 4 ? -1 : -3;  // the first tap's offset from floor(position)
  float wx[8], wy[8];
  std::vector<float> acc(c);
  for (int y = 0; y < out_height; ++y) {
    uint8_t* d = out.row(y);
    for (int x = 0; x < out_width; ++x) {
      const double sx = i0 * x + i1 * y + i2, sy = i3 * x + i4 * y + i5;
      uint8_t* px = d + static_cast<size_t>(x) * c;
      if (k == 1) {
        const long ix = std::lround(std::floor(sx + 0.5)), iy = std::lround(std::floor(sy + 0.5));
        const bool inside = ix >= 0 && iy >= 0 && ix < src.width && iy < src.height;
        for (int ch = 0; ch < c; ++ch) px[ch] = inside ? src.data[src.stride * iy + ix * c + ch] : fill;
        continue;
      }
      const double fx0 = std::floor(sx), fy0 = std::floor(sy);
      weights(sx - fx0, wx);
      weights(sy - fy0, wy);
      const long x0 = static_cast<long>(fx0) + first, y0 = static_cast<long>(fy0) + first;
      std::fill(acc.begin(), acc.end(), 0.f);
      // Taps outside the image read the fill value (OpenCV's constant border).
      for (int a = 0; a < k; ++a) {
        const long yy = y0 + a;
        const bool row_in = yy >= 0 && yy < src.height;
        for (int b = 0; b < k; ++b) {
          const long xx = x0 + b;
          const float w = wy[a] * wx[b];
          if (row_in && xx >= 0 && xx < src.width) {
            const uint8_t* s = src.data + src.stride * yy + xx * c;
            for (int ch = 0; ch < c; ++ch) acc[ch] += w * s[ch];
          } else {
            for (int ch = 0; ch < c; ++ch) acc[ch] += w * fill;
          }
        }
      }
      for (int ch = 0; ch < c; ++ch) px[ch] = static_cast<uint8_t>(std::min(std::max(std::lround(acc[ch]), 0L), 255L));
    }
  }
  return out;
}

// OpenCV's 8-bit RGB <-> HLS (H in [0, 180), L and S in [0, 255]), rounding half to even as
// OpenCV's saturate_cast does.
void RgbToHls(const uint8_t* px, int* hls) {
  float r = px[0] / 255.f, g = px[1] / 255.f, b = px[2] / 255.f;
  float mx = std::max({r, g, b}), mn = std::min({r, g, b});
  float l = (mx + mn) / 2, s = 0, h = 0, d = mx - mn;
  if (d > 1e-6f) {
    s = l < 0.5f ? d / (mx + mn) : d / (2.f - mx - mn);
    if (mx == r) h = 60.f * (g - b) / d;
    else if (mx == g) h = 120.f + 60.f * (b - r) / d;
    else h = 240.f + 60.f * (r - g) / d;
    if (h < 0) h += 360.f;
  }
  hls[0] = static_cast<int>(std::lrint(h / 2)) % 180;
  hls[1] = static_cast<int>(std::lrint(l * 255));
  hls[2] = static_cast<int>(std::lrint(s * 255));
}

void HlsToRgb(const int* hls, uint8_t* px) {
  float h = hls[0] * 2.f, l = hls[1] / 255.f, s = hls[2] / 255.f;
  float rgb[3] = {l, l, l};
  if (s > 0) {
    float q = l < 0.5f ? l * (1 + s) : l + s - l * s, p = 2 * l - q;
    auto chan = [&](float t) {
      t = std::fmod(t + 360.f, 360.f);
      if (t < 60) return p + (q - p) * t / 60;
      if (t < 180) return q;
      if (t < 240) return p + (q - p) * (240 - t) / 60;
      return p;
    };
    rgb[0] = chan(h + 120);
    rgb[1] = chan(h);
    rgb[2] = chan(h - 120);
  }
  for (int c = 0; c < 3; ++c) px[c] = static_cast<uint8_t>(std::clamp<long>(std::lrint(rgb[c] * 255), 0, 255));
}

bool ValidInterMethod(int method) { return (method >= 0 && method <= 4) || method == 9 || method == 10; }

int ChooseInterMethod(int method, int old_w, int old_h, int new_w, int new_h, std::mt19937* rng) {
  WEFT_CHECK(ValidInterMethod(method), kValue, "inter_method must be 0..4, 9 or 10, got ", method);
  if (method == 9) {
    if (new_w > old_w && new_h > old_h) return 2;
    if (new_w < old_w && new_h < old_h) return 3;
    return 1;
  }
  if (method == 10) return std::uniform_int_distribution<int>(0, 4)(*rng);
  return method;
}

}  // namespace io
}  // namespace weft

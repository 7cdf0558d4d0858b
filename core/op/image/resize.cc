// _image_resize: resizes an image (H, W, C) or batch (N, H, W, C) to size = (width, height),
// or with one size to a square, or with keep_ratio to that size on the short edge (the long
// one scaled in proportion, rounded down). interp as OpenCV's: 0 nearest (OpenCV's source
// cells, resample.h), 1 bilinear (half-pixel centres), 2 bicubic, 3 area, 4 Lanczos
// (resample.h). Integer images round the interpolated value to the nearest one and
// saturate (OpenCV's fixed-point arithmetic may differ by 1). The output keeps the input's
// dtype. As in MXNet, there is no gradient.
#include <cmath>

#include "core/op/nn/item_grain.h"
#include "core/op/image/image_util.h"
#include "core/op/nn/resample.h"

namespace weft {
namespace op {

struct ImageResizeParam {
  Shape size;
  bool keep_ratio = false;
  int interp = 1;
};

WEFT_PARAM_SCHEMA(ImageResizeParam, s) {
  s.Field("size", &ImageResizeParam::size).Default(Shape::Scalar()).Describe("Size of the new image: (width, height) or (size).");
  s.Field("keep_ratio", &ImageResizeParam::keep_ratio)
      .Default(false)
      .Describe("With one size: resize the short edge to it and keep the aspect ratio, instead of both edges.");
  s.Field("interp", &ImageResizeParam::interp)
      .Default(1)
      .Describe("Interpolation as OpenCV's: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (8 taps).");
}

namespace image {
namespace {

// (height, width) of the output for an input of h x w (either may be -1, unknown).
std::pair<int64_t, int64_t> ResizedTo(const NodeAttrs& attrs, int64_t h, int64_t w) {
  const auto& p = attrs.Params<ImageResizeParam>();
  if (p.size.ndim() != 1 && p.size.ndim() != 2)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': size must be (width, height) or (size), got ",
          p.size.ToString());
  for (int64_t v : p.size)
    if (v <= 0) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': size must be positive, got ", p.size.ToString());
  if (p.interp < 0 || p.interp > 4)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': interp=", p.interp,
          " is not an interpolation; expected 0 (nearest), 1 (bilinear), 2 (bicubic), 3 (area) or 4 (Lanczos)");
  if (p.size.ndim() == 2) return {p.size[1], p.size[0]};
  const int64_t s = p.size[0];
  if (!p.keep_ratio) return {s, s};
  if (h < 0 || w < 0) return {-1, -1};
  if (h == 0 || w == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': keep_ratio needs a non-empty image, got ", h, " x ", w);
  return h > w ? std::make_pair(h * s / w, s) : std::make_pair(s, w * s / h);
}

bool ResizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& s = (*in)[0];
  if (!s.known_ndim()) return false;
  CheckHWC(attrs, s, true, false);
  const int r = s.ndim() - 3;
  if (s[r] == 0 || s[r + 1] == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the image is empty (shape ", s.ToString(), ")");
  auto hw = ResizedTo(attrs, s[r], s[r + 1]);
  Shape o = s;
  o[r] = hw.first;
  o[r + 1] = hw.second;
  AssignShape(attrs, out, 0, o, "output");
  return s.is_known();
}

template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_integral_v<T>) return Saturate<T>(std::floor(v + 0.5f));
  else return static_cast<T>(v);
}

template <typename T>
void Resize(const Shape& s, const Shape& o, int interp, const T* x, T* y) {
  const int r = s.ndim() - 3;
  const int64_t n = r == 1 ? s[0] : 1, H = s[r], W = s[r + 1], C = s[r + 2], h = o[r], w = o[r + 1];
  if (interp == 0) {
    const std::vector<int64_t> ys = NearestCells(H, h), xs = NearestCells(W, w);
    ParallelFor(n * h, ItemGrain(w * C), [&](int64_t qb, int64_t qe) {
      for (int64_t q = qb; q < qe; ++q) {
        const int64_t b = q / h, i = q % h;
        const T* row = x + (b * H + ys[static_cast<size_t>(i)]) * W * C;
        T* dst = y + q * w * C;
        for (int64_t j = 0; j < w; ++j)
          for (int64_t c = 0; c < C; ++c) dst[j * C + c] = row[xs[static_cast<size_t>(j)] * C + c];
      }
    });
    return;
  }
  if (interp >= 2) {
    const bool shrink = h <= H && w <= W;
    const ResampleTaps ty = KernelOrAreaTaps(H, h, interp, shrink), tx = KernelOrAreaTaps(W, w, interp, shrink);
    ParallelFor(n * h, ItemGrain(w * C * ty.k * tx.k), [&](int64_t qb, int64_t qe) {
      for (int64_t q = qb; q < qe; ++q) {
        const int64_t b = q / h, i = q % h;
        T* dst = y + q * w * C;
        for (int64_t j = 0; j < w; ++j)
          for (int64_t c = 0; c < C; ++c) {
            float v = 0;
            for (int a = 0; a < ty.k; ++a) {
              const size_t ia = static_cast<size_t>(i * ty.k + a);
              const T* row = x + (b * H + ty.idx[ia]) * W * C;
              float r = 0;
              for (int e = 0; e < tx.k; ++e) {
                const size_t je = static_cast<size_t>(j * tx.k + e);
                r += tx.w[je] * static_cast<float>(row[tx.idx[je] * C + c]);
              }
              v += ty.w[ia] * r;
            }
            dst[j * C + c] = FromFloat<T>(v);
          }
      }
    });
    return;
  }
  const auto ty = LinearTaps(H, h, false, false), tx = LinearTaps(W, w, false, false);
  ParallelFor(n * h, ItemGrain(w * C * 4), [&](int64_t qb, int64_t qe) {
    for (int64_t q = qb; q < qe; ++q) {
      const int64_t b = q / h, i = q % h;
      const LinearTap& a = ty[static_cast<size_t>(i)];
      const T* r0 = x + (b * H + a.i0) * W * C;
      const T* r1 = x + (b * H + a.i1) * W * C;
      T* dst = y + q * w * C;
      for (int64_t j = 0; j < w; ++j) {
        const LinearTap& t = tx[static_cast<size_t>(j)];
        for (int64_t c = 0; c < C; ++c) {
          const float top = t.w0 * static_cast<float>(r0[t.i0 * C + c]) + t.w1 * static_cast<float>(r0[t.i1 * C + c]);
          const float bottom = t.w0 * static_cast<float>(r1[t.i0 * C + c]) + t.w1 * static_cast<float>(r1[t.i1 * C + c]);
          dst[j * C + c] = FromFloat<T>(a.w0 * top + a.w1 * bottom);
        }
      }
    }
  });
}

void ResizeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (req[0] == OpReq::kAddTo)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an add-to request on the output is not supported");
  const int interp = attrs.Params<ImageResizeParam>().interp;
  WEFT_IMAGE_TYPE_SWITCH(in[0].dtype, T, { Resize<T>(in[0].shape, out[0].shape, interp, in[0].ptr<T>(), out[0].ptr<T>()); });
}

}  // namespace
}  // namespace image

WEFT_REGISTER_OP(_image_resize)
    .Describe("Resizes an image (H, W, C) or batch (N, H, W, C) to size (width, height), or one size (optionally "
              "keeping the aspect ratio), with OpenCV's nearest (0), bilinear (1), bicubic (2) or area (3) "
              "interpolation.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input image")
    .SetParams<ImageResizeParam>()
    .SetAttr<FInferShape>("FInferShape", image::ResizeShape)
    .SetAttr<FInferType>("FInferType", image::ImageType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", image::ResizeCompute);

}  // namespace op
}  // namespace weft

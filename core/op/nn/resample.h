// Interpolation taps along one axis, shared by the resizing operators
// (_contrib_BilinearResize2D, _image_resize) and the image decoder's resize (core/io).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace weft {
namespace op {

// Output position o reads source positions i0 and i1 with weights w0 and w1 (w0 + w1 = 1).
struct LinearTap {
  int64_t i0 = 0, i1 = 0;
  float w0 = 1, w1 = 0;
};

// With align_corners the first and last cells of both axes line up (src = o * (in - 1) /
// (out - 1)); otherwise cells are areas whose centres scale (src = (o + 0.5) * in / out -
// 0.5, clamped at 0), as PyTorch's and OpenCV's bilinear resizes do. The scale is computed
// in float, as theirs is. A one-cell output reads the middle of the input (OpenCV), or its
// first cell when `single_reads_first` (MXNet's BilinearResize2D).
inline std::vector<LinearTap> LinearTaps(int64_t in, int64_t out, bool align_corners, bool single_reads_first) {
  std::vector<LinearTap> taps(static_cast<size_t>(std::max<int64_t>(out, 0)));
  if (in <= 0) return taps;
  float scale = 0;
  if (out > 1) scale = align_corners ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                     : static_cast<float>(in) / static_cast<float>(out);
  else if (!align_corners && !single_reads_first) scale = static_cast<float>(in);
  for (int64_t o = 0; o < out; ++o) {
    float src = align_corners ? scale * static_cast<float>(o) : scale * (static_cast<float>(o) + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
    LinearTap& t = taps[static_cast<size_t>(o)];
    t.i0 = i0;
    t.i1 = i0 < in - 1 ? i0 + 1 : i0;
    t.w1 = i0 < in - 1 ? src - static_cast<float>(i0) : 0.0f;
    t.w0 = 1.0f - t.w1;
  }
  return taps;
}

}  // namespace op
}  // namespace weft

namespace weft {
namespace op {

// Nearest-neighbour source cells as OpenCV's INTER_NEAREST takes them: floor(o * (1 / (out /
// in))), the scale inverted in double precision as OpenCV does, so that an exact product
// (o * in / out a whole number) can fall just below it and pick the cell before; clamped.
inline std::vector<int64_t> NearestCells(int64_t in, int64_t out) {
  std::vector<int64_t> cells(static_cast<size_t>(std::max<int64_t>(out, 0)));
  const double inv = 1.0 / (static_cast<double>(out) / static_cast<double>(in));
  for (int64_t o = 0; o < out; ++o)
    cells[static_cast<size_t>(o)] = std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(o) * inv)), in - 1);
  return cells;
}

// The taps of OpenCV-style resampling along one axis: output position o reads
// idx[o * k + j] (clamped to the input) with weight w[o * k + j].
struct ResampleTaps {
  int k = 1;
  std::vector<int64_t> idx;
  std::vector<float> w;
};

// Keys' cubic convolution kernel with a = -0.75 (OpenCV's and PyTorch's bicubic).
inline float CubicKernel(float x) {
  const float a = -0.75f;
  x = std::fabs(x);
  if (x <= 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
  if (x < 2.0f) return ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
  return 0.0f;
}

// Lanczos with a = 4 (OpenCV's INTER_LANCZOS4): sinc(x) * sinc(x / 4) on |x| < 4, with
// sinc(u) = sin(pi u) / (pi u).
inline float Lanczos4Kernel(double x) {
  x = std::fabs(x);
  if (x < 1e-9) return 1.0f;
  if (x >= 4.0) return 0.0f;
  const double px = 3.14159265358979323846 * x;
  return static_cast<float>(4.0 * std::sin(px) * std::sin(px / 4.0) / (px * px));
}

// interp as OpenCV's: 2 bicubic (four taps around the half-pixel source position); 4
// Lanczos (eight taps, weights normalised to sum to one, as OpenCV's; like its bicubic it
// does not widen when shrinking); 3 area,
// which averages the source interval each output cell covers when `shrink` (OpenCV takes
// that path only when neither axis grows) and otherwise interpolates linearly between the
// two cells around the boundary an output cell's end falls on.
inline ResampleTaps KernelOrAreaTaps(int64_t in, int64_t out, int interp, bool shrink) {
  ResampleTaps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  auto clamp = [in](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
  if (interp == 2) {
    t.k = 4;
    for (int64_t o = 0; o < out; ++o) {
      const double f = (static_cast<double>(o) + 0.5) * scale - 0.5;
      const int64_t s = static_cast<int64_t>(std::floor(f));
      const float frac = static_cast<float>(f - static_cast<double>(s));
      for (int j = 0; j < 4; ++j) {
        t.idx.push_back(clamp(s - 1 + j));
        t.w.push_back(CubicKernel(frac - static_cast<float>(j - 1)));
      }
    }
    return t;
  }
  if (interp == 4) {
    t.k = 8;
    for (int64_t o = 0; o < out; ++o) {
      const double f = (static_cast<double>(o) + 0.5) * scale - 0.5;
      const int64_t s = static_cast<int64_t>(std::floor(f));
      const double frac = f - static_cast<double>(s);
      float w[8], sum = 0.0f;
      for (int j = 0; j < 8; ++j) sum += w[j] = Lanczos4Kernel(frac - static_cast<double>(j - 3));
      for (int j = 0; j < 8; ++j) {
        t.idx.push_back(clamp(s - 3 + j));
        t.w.push_back(w[j] / sum);
      }
    }
    return t;
  }
  if (shrink) {
    t.k = static_cast<int>(std::ceil(scale)) + 1;
    for (int64_t o = 0; o < out; ++o) {
      const double s0 = static_cast<double>(o) * scale;
      const double s1 = std::min(static_cast<double>(o + 1) * scale, static_cast<double>(in));
      const int64_t first = static_cast<int64_t>(std::floor(s0));
      for (int j = 0; j < t.k; ++j) {
        const double lo = std::max(s0, static_cast<double>(first + j));
        const double hi = std::min(s1, static_cast<double>(first + j + 1));
        t.idx.push_back(clamp(first + j));
        t.w.push_back(hi > lo ? static_cast<float>((hi - lo) / (s1 - s0)) : 0.0f);
      }
    }
    return t;
  }
  t.k = 2;
  for (int64_t o = 0; o < out; ++o) {
    int64_t s = static_cast<int64_t>(std::floor(static_cast<double>(o) * scale));
    float frac = static_cast<float>(static_cast<double>(o + 1) - static_cast<double>(s + 1) / scale);
    frac = frac <= 0 ? 0.0f : frac - std::floor(frac);
    if (s >= in - 1) {
      s = in - 1;
      frac = 0;
    }
    t.idx.push_back(s);
    t.idx.push_back(clamp(s + 1));
    t.w.push_back(1.0f - frac);
    t.w.push_back(frac);
  }
  return t;
}

}  // namespace op
}  // namespace weft

// Linear interpolation taps along one axis, shared by the resizing operators
// (_contrib_BilinearResize2D, _image_resize).
#pragma once

#include <algorithm>
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

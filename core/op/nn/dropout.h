// Dropout's parameters and mask draw, shared by its CPU (dropout.cc) and GPU
// (dropout_gpu.cu) code, so that one seed drops the same elements on both devices.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/base/macros.h"
#include "core/base/shape.h"
#include "core/resource/philox.h"

namespace weft {
namespace op {

struct DropoutParam {
  double p = 0.5;
  std::string mode = "training";
  Shape axes = Shape::Scalar();
  bool cudnn_off = false;
};

// A draw of n mask elements reserves (n + 3) / 4 counters: Philox block `first + b`
// (stream 0) gives the words of elements 4b..4b+3.
inline int64_t DropoutMaskBlocks(int64_t n) { return (n + 3) / 4; }

// A 32-bit word below round((1-p) * 2^32) keeps its element: probability exactly 1-p up to
// 2^-32.
inline uint64_t DropoutKeepThreshold(double p) {
  return static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
}

// The value of a kept mask element, 1/(1-p); infinite when p is 1, so that a dropped
// element, 0 * scale, is NaN then, as in MXNet.
inline double DropoutScale(double p) {
  const double keep = 1.0 - p;
  return keep > 0 ? 1.0 / keep : std::numeric_limits<double>::infinity();
}

// Which of the mask elements of block `blk` are kept (keep[k] for element 4*blk + k), for
// the elements below n; returns how many there are (4, fewer in the last block).
WEFT_XINLINE int DropoutKeepBlock(const Philox4x32& gen, uint64_t first, int64_t blk, uint64_t threshold, int64_t n,
                                  bool keep[4]) {
  uint32_t w[4];
  gen.Generate(first + static_cast<uint64_t>(blk), 0, w);
  const int64_t rest = n - blk * 4;
  const int cnt = rest < 4 ? static_cast<int>(rest) : 4;
  for (int k = 0; k < cnt; ++k) keep[k] = static_cast<uint64_t>(w[k]) < threshold;
  return cnt;
}

}  // namespace op
}  // namespace weft

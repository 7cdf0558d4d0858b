// clip's parameters and functors, shared by its CPU (clip.cc) and GPU (clip_gpu.cu) code.
#pragma once

#include "core/base/macros.h"

namespace weft {
namespace op {

struct ClipParam {
  double a_min = 0;
  double a_max = 0;
};

struct ClipOp {
  template <typename A>
  static WEFT_XINLINE A Map(A x, A lo, A hi) {
    return x < lo ? lo : (x > hi ? hi : x);
  }
};

struct ClipGradOp {
  template <typename A>
  static WEFT_XINLINE A Map(A g, A x, A lo, A hi) {
    return (x < lo || x > hi) ? A(0) : g;
  }
};

}  // namespace op
}  // namespace weft

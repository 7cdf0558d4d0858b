// The recurrent cells' elementwise math, shared by the float RNN (rnn.cc) and the int8 LSTM
// (quantization/quantized_rnn.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace weft {
namespace op {
namespace rnn_math {

// Single precision runs through a polynomial exp that the compiler vectorises (libm's
// expf does not vectorise here); its relative error is a few ulp, well inside what float32
// recurrences keep. Double precision (the gradient checks) uses libm.
inline float ExpApprox(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  // nearbyint rather than floor(v + 0.5): GCC 12 does not vectorise loops calling floor.
  float n = std::nearbyint(x * 1.44269504088896341f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float q = 1.9875691500e-4f;
  q = q * r + 1.3981999507e-3f;
  q = q * r + 8.3334519073e-3f;
  q = q * r + 4.1665795894e-2f;
  q = q * r + 1.6666665459e-1f;
  q = q * r + 5.0000001201e-1f;
  float y = q * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}
inline double ExpApprox(double x) { return std::exp(x); }

// For the loops calling ExpApprox: GCC 12's partial redundancy elimination, seeing the clamp
// to constant bounds above, moves `x * log2(e)` into the clamp's branches, which leaves a
// branch the vectoriser cannot remove without AVX-512's masks. Built for AVX2
// (x86-64-v3) the LSTM's gate loops stayed scalar: 14 % of a bidirectional 2x256 LSTM's
// training step. Without that pass there they vectorise as they do with AVX-512.
#if defined(__GNUC__) && !defined(__clang__)
#define WEFT_RNN_VECTOR_LOOP __attribute__((optimize("no-tree-pre")))
#else
#define WEFT_RNN_VECTOR_LOOP
#endif

template <typename DT>
inline DT Sigmoid(DT x) { return DT(1) / (DT(1) + ExpApprox(-x)); }
// tanh(x) = 2 sigmoid(2x) - 1 written so that large |x| saturates instead of overflowing.
template <typename DT>
inline DT Tanh(DT x) {
  if constexpr (std::is_same_v<DT, double>) {
    return std::tanh(x);
  } else {
    DT e = ExpApprox(DT(-2) * std::fabs(x));
    DT t = (DT(1) - e) / (DT(1) + e);
    return std::copysign(t, x);
  }
}

}  // namespace rnn_math
}  // namespace op
}  // namespace weft

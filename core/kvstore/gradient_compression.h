// 2-bit gradient compression with error feedback (MXNet's "2bit" type).
//
// Each value of (gradient + residual) becomes +threshold, -threshold or 0, packed 2 bits
// a value; what was not sent stays in the residual and is added to the next gradient, so
// nothing is lost over steps, only delayed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace kvstore {

class GradientCompression {
 public:
  // {"type": "2bit" | "none", "threshold": float > 0 (default 0.5)}; errors name the key.
  void SetParams(const std::vector<std::pair<std::string, std::string>>& params);
  bool active() const { return active_; }
  float threshold() const { return threshold_; }

  // Bytes of the compressed form of n values.
  static size_t CompressedBytes(int64_t n) { return static_cast<size_t>((n + 3) / 4); }
  // Quantizes grad + residual into out (CompressedBytes(n)) and updates residual.
  static void Quantize(const float* grad, float* residual, uint8_t* out, int64_t n, float threshold);
  // Expands a compressed buffer: dst = values (assign) or dst += values.
  static void Dequantize(const uint8_t* in, float* dst, int64_t n, float threshold, bool assign);

 private:
  bool active_ = false;
  float threshold_ = 0.5f;
};

}  // namespace kvstore
}  // namespace weft

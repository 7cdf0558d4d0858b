#include "core/kvstore/gradient_compression.h"

#include <cstdlib>

#include "core/base/error.h"

namespace weft {
namespace kvstore {

namespace {
// Codes of one value: 0 sends nothing, 1 sends +threshold, 2 sends -threshold.
constexpr uint8_t kPos = 1, kNeg = 2;
}  // namespace

void GradientCompression::SetParams(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string type = "2bit";
  float threshold = 0.5f;
  bool has_type = false;
  for (const auto& [k, v] : params) {
    if (k == "type") {
      type = v;
      has_type = true;
    } else if (k == "threshold") {
      char* end = nullptr;
      double t = std::strtod(v.c_str(), &end);
      WEFT_CHECK(end != v.c_str() && *end == '\0' && t > 0, kValue,
                 "gradient compression: expected 'threshold' to be a number > 0, got '", v, "'");
      threshold = static_cast<float>(t);
    } else {
      Throw(ErrorKind::kValue, "gradient compression: unknown parameter '", k, "' (expected 'type' or 'threshold')");
    }
  }
  WEFT_CHECK(has_type, kValue, "gradient compression: the parameter 'type' is required ('2bit' or 'none')");
  WEFT_CHECK(type == "2bit" || type == "none", kValue,
             "gradient compression: expected type '2bit' or 'none', got '", type, "'");
  active_ = type == "2bit";
  threshold_ = threshold;
}

void GradientCompression::Quantize(const float* grad, float* residual, uint8_t* out, int64_t n, float threshold) {
  const int64_t nbytes = static_cast<int64_t>(CompressedBytes(n));
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t b = 0; b < nbytes; ++b) {
    uint8_t byte = 0;
    for (int j = 0; j < 4; ++j) {
      int64_t i = b * 4 + j;
      if (i >= n) break;
      float r = residual[i] + grad[i];
      uint8_t code = 0;
      if (r >= threshold) {
        code = kPos;
        r -= threshold;
      } else if (r <= -threshold) {
        code = kNeg;
        r += threshold;
      }
      residual[i] = r;
      byte |= static_cast<uint8_t>(code << (2 * j));
    }
    out[b] = byte;
  }
}

void GradientCompression::Dequantize(const uint8_t* in, float* dst, int64_t n, float threshold, bool assign) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    uint8_t code = (in[i / 4] >> (2 * (i % 4))) & 3u;
    float v = code == kPos ? threshold : (code == kNeg ? -threshold : 0.f);
    dst[i] = assign ? v : dst[i] + v;
  }
}

}  // namespace kvstore
}  // namespace weft

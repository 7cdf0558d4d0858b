// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Element i of a draw uses counter (offset + i), so a result
// depends only on the seed and the position, never on how work is split across threads.
#pragma once

#include <cstdint>

#include "core/base/macros.h"

namespace weft {

struct Philox4x32 {
  uint32_t key0, key1;

  WEFT_XINLINE explicit Philox4x32(uint64_t seed)
      : key0(static_cast<uint32_t>(seed)), key1(static_cast<uint32_t>(seed >> 32)) {}

  // Four independent 32-bit words for counter `ctr` (the high half of the 128-bit counter
  // carries the stream so that different ops with the same offset differ).
  WEFT_XINLINE void Generate(uint64_t ctr, uint64_t stream, uint32_t out[4]) const {
    uint32_t c0 = static_cast<uint32_t>(ctr), c1 = static_cast<uint32_t>(ctr >> 32);
    uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
    uint32_t k0 = key0, k1 = key1;
    for (int r = 0; r < 10; ++r) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
  }

  // A float in [0, 1) from 24 random bits.
  static WEFT_XINLINE float ToUniformFloat(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }
  // A double in [0, 1) from 53 random bits.
  static WEFT_XINLINE double ToUniformDouble(uint32_t a, uint32_t b) {
    uint64_t v = (static_cast<uint64_t>(a) << 21) ^ (b >> 11);
    return (v & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
  }
};

}  // namespace weft

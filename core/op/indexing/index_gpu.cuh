// Device helpers shared by the GPU indexing operators (pick, take, one_hot, Embedding,
// where, the sparse losses): reading an index of any dtype the way the CPU code does
// (core/base/convert.h, index_mode.h), and scatter-add atomics for every GPU dtype.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/base/convert.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/indexing/index_mode.h"

// Index and condition arrays come in every dtype, as on the CPU (a float index is truncated).
#define WEFT_GPU_INDEX_SWITCH(dtype, DT, what, ...)                                                             \
  switch (dtype) {                                                                                              \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                                      \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                                     \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                            \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;                          \
    case ::weft::DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                                      \
    case ::weft::DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;                                      \
    case ::weft::DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                                      \
    case ::weft::DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;                                        \
    case ::weft::DType::kBool: { using DT = bool; __VA_ARGS__ } break;                                          \
    default:                                                                                                    \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                                        \
                    "': on GPUs, unsupported index dtype ", ::weft::DTypeName(dtype));                          \
  }

namespace weft {
namespace cuda {

// ConvertValue<int64_t>(v): NaN is 0, values past int64's range saturate, fractions truncate.
template <typename I>
__device__ __forceinline__ int64_t ToIndex(I v) {
  if constexpr (std::is_same_v<I, float16> || std::is_same_v<I, bfloat16> || std::is_floating_point_v<I>) {
    using F = typename AccType<I>::type;
    const F x = static_cast<F>(v);
    if (x != x) return 0;
    if (x <= static_cast<F>(std::numeric_limits<int64_t>::lowest())) return std::numeric_limits<int64_t>::lowest();
    if (x >= static_cast<F>(std::numeric_limits<int64_t>::max())) return std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(x);
  } else {
    return static_cast<int64_t>(v);
  }
}

// ResolveIndices for one index under clip or wrap (raise needs a host check and is
// refused before launch).
__device__ __forceinline__ int64_t ResolveIndex(int64_t k, int64_t n, op::IndexMode mode) {
  if (mode == op::IndexMode::kWrap) return n > 0 ? ((k % n) + n) % n : 0;
  return k < 0 ? 0 : (k >= n ? n - 1 : k);
}

// *p = *p + v on the 8- or 16-bit element at p, by compare-and-swap on the aligned 32-bit
// word holding it (there is no hardware atomic for these types on every architecture);
// the sum is formed in the compute type A and rounded back to T, as the CPU does.
template <typename T, typename A>
__device__ __forceinline__ void AtomicAddNarrow(T* p, A v) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "AtomicAddNarrow is for 8- and 16-bit types");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~static_cast<uintptr_t>(3));
  const unsigned int shift = static_cast<unsigned int>(addr & 3) * 8;
  const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    T cur;
    if constexpr (sizeof(T) == 1) {
      const unsigned char b = static_cast<unsigned char>((assumed & mask) >> shift);
      memcpy(&cur, &b, 1);
    } else {
      const unsigned short h = static_cast<unsigned short>((assumed & mask) >> shift);
      memcpy(&cur, &h, 2);
    }
    const T sum = static_cast<T>(static_cast<A>(cur) + v);
    unsigned int bits;
    if constexpr (sizeof(T) == 1) {
      unsigned char b;
      memcpy(&b, &sum, 1);
      bits = b;
    } else {
      unsigned short h;
      memcpy(&h, &sum, 2);
      bits = h;
    }
    old = atomicCAS(word, assumed, (assumed & ~mask) | (bits << shift));
  } while (old != assumed);
}

// *p += v for scatter-add gradients; float16 adds through the hardware __half atomic.
template <typename T, typename A>
__device__ __forceinline__ void AtomicAdd(T* p, A v) {
  if constexpr (std::is_same_v<T, float16>) {
    atomicAdd(reinterpret_cast<__half*>(p), __float2half(static_cast<float>(v)));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(static_cast<int64_t>(v)));
  } else if constexpr (sizeof(T) <= 2) {
    AtomicAddNarrow<T, A>(p, v);
  } else {
    atomicAdd(p, static_cast<T>(v));
  }
}

}  // namespace cuda
}  // namespace weft

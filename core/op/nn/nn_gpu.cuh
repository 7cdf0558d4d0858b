// Helpers for the GPU kernels of core/op/nn (*_gpu.cu): the accumulation type the CPU code
// uses (nn::Acc: double for double, float for float, float16 and bfloat16), a floating-point dtype
// switch, and block-wide sum / max reductions through warp shuffles and shared memory.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/op/elemwise/elemwise_kernels.cuh"

// The floating types, as WEFT_FLOAT_TYPE_SWITCH on the CPU (float16 and bfloat16 accumulate
// in float); anything else is a kUnsupported error naming `what` (the operator).
#define WEFT_GPU_FLOAT_SWITCH(dtype, DT, what, ...)                                                  \
  switch (dtype) {                                                                                   \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                           \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                          \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                 \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;               \
    default:                                                                                         \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                             \
                    "': on GPUs, expected float32, float64, float16 or bfloat16, got ", ::weft::DTypeName(dtype)); \
  }

namespace weft {
namespace op {
namespace nngpu {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Threads per block of the row / channel reductions: a multiple of 32, at most 1024.
constexpr int kReduceThreads = 256;

// Shared scratch for one block reduction: a slot per warp and one for the result.
template <typename A>
struct ReduceScratch {
  A slot[33];
};

struct SumOp {
  template <typename A>
  __device__ static A Apply(A a, A b) { return a + b; }
};

// The CPU's std::max(a, b): b only when a < b (so a NaN b never replaces a value).
struct MaxOp {
  template <typename A>
  __device__ static A Apply(A a, A b) { return a < b ? b : a; }
};

// Combines every thread's v with OP; every thread of the block gets the result. All
// threads of the block must call it (it synchronises); blockDim.x a multiple of 32.
template <typename OP, typename A>
__device__ A BlockReduce(A v, ReduceScratch<A>& s) {
  for (int o = 16; o > 0; o >>= 1) v = OP::Apply(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // an earlier call's readers of slot[32] are done before it is reused
  if (lane == 0) s.slot[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = s.slot[lane < warps ? lane : 0];
    for (int o = 16; o > 0; o >>= 1) {
      A other = __shfl_down_sync(0xffffffffu, w, o);
      if (lane + o < warps) w = OP::Apply(w, other);
    }
    if (lane == 0) s.slot[32] = w;
  }
  __syncthreads();
  return s.slot[32];
}

template <typename A>
__device__ A BlockSum(A v, ReduceScratch<A>& s) { return BlockReduce<SumOp>(v, s); }

template <typename A>
__device__ A BlockMax(A v, ReduceScratch<A>& s) { return BlockReduce<MaxOp>(v, s); }

// y = v under the request (kNullOp outputs are skipped by the callers).
template <typename T, typename A>
__device__ inline void Put(T* y, OpReq req, A v) {
  if (req == OpReq::kAddTo) *y = static_cast<T>(static_cast<A>(*y) + v);
  else *y = static_cast<T>(v);
}

// Grid size for one block per item (rows, channels), capped; kernels stride over the rest.
inline unsigned BlocksFor(int64_t items) {
  constexpr int64_t kMax = 1 << 20;
  return static_cast<unsigned>(items < 1 ? 1 : (items < kMax ? items : kMax));
}

}  // namespace nngpu
}  // namespace op
}  // namespace weft

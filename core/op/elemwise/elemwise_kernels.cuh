// Elementwise GPU kernels over n contiguous elements, generic in the functor, mirroring the
// CPU loops of core/op/elemwise/kernels.h: the same functors (functors.h, written with
// WEFT_XINLINE, which is __host__ __device__ under nvcc) run on both devices, called with
// values in the compute type (AccType: float for float16 and bfloat16, the dtype itself otherwise).
// The compute functions that dispatch dtypes and register these per operator are in
// core/op/elemwise/compute_gpu.cuh.
//
// Launches are asynchronous on the given stream; the engine waits for the stream before it
// marks an operation's outputs ready.
#pragma once

#include <cstdint>

#include "core/base/cuda_utils.h"
#include "core/base/dtype.h"
#include "core/op/registry.h"

// Every dtype, as WEFT_TYPE_SWITCH on the CPU: float16 and bfloat16 compute in float
// (ComputeT), the integer types and bool in themselves, so the same functors give the
// CPU's results. Unknown dtype codes are a kUnsupported error naming `what` (the operator).
#define WEFT_GPU_TYPE_SWITCH(dtype, DT, what, ...)                                                            \
  switch (dtype) {                                                                                            \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                                    \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                                   \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                          \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;                        \
    case ::weft::DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                                    \
    case ::weft::DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;                                      \
    case ::weft::DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                                    \
    case ::weft::DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;                                    \
    case ::weft::DType::kBool: { using DT = bool; __VA_ARGS__ } break;                                        \
    default:                                                                                                  \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                                      \
                    "': on GPUs, unsupported dtype ", ::weft::DTypeName(dtype));                              \
  }

namespace weft {
namespace cuda {

template <typename T>
using ComputeT = typename AccType<T>::type;

// Writes v (in a compute type) into out[i] as the write request says; kNullOp never
// reaches a kernel.
template <typename T, typename A>
WEFT_XINLINE void Store(T* out, int64_t i, A v, OpReq req) {
  if (req == OpReq::kAddTo) out[i] = static_cast<T>(static_cast<A>(out[i]) + v);
  else out[i] = static_cast<T>(v);
}

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    f(i);
}

// Runs f(i) for every i in [0, n) on `stream`, without waiting. f is a functor (copied to
// the device by value) with a __device__ operator()(int64_t).
template <typename F>
void ForEach(int64_t n, cudaStream_t stream, const F& f, const char* what) {
  if (n <= 0) return;
  ForEachKernel<<<GridFor(n), kBlockThreads, 0, stream>>>(n, f);
  CheckLaunch(what);
}

template <typename OP, typename T>
struct UnaryKernel {
  const T* x;
  T* out;
  OpReq req;
  __device__ void operator()(int64_t i) const { Store(out, i, OP::Map(static_cast<ComputeT<T>>(x[i])), req); }
};

template <typename OP, typename T>
struct BinaryKernel {
  const T* a;
  const T* b;
  T* out;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    Store(out, i, OP::Map(static_cast<ComputeT<T>>(a[i]), static_cast<ComputeT<T>>(b[i])), req);
  }
};

template <typename OP, typename T>
struct ScalarRightKernel {
  const T* a;
  ComputeT<T> s;
  T* out;
  OpReq req;
  __device__ void operator()(int64_t i) const { Store(out, i, OP::Map(static_cast<ComputeT<T>>(a[i]), s), req); }
};

// out = OP(x) over n elements.
template <typename OP, typename T>
void UnaryMap(const T* x, T* out, int64_t n, OpReq req, cudaStream_t stream, const char* what) {
  if (req == OpReq::kNullOp) return;
  ForEach(n, stream, UnaryKernel<OP, T>{x, out, req}, what);
}

// out = OP(a, b) over n elements.
template <typename OP, typename T>
void BinaryMap(const T* a, const T* b, T* out, int64_t n, OpReq req, cudaStream_t stream, const char* what) {
  if (req == OpReq::kNullOp) return;
  ForEach(n, stream, BinaryKernel<OP, T>{a, b, out, req}, what);
}

// out = OP(a, s) with s already in the compute type.
template <typename OP, typename T>
void ScalarRightMap(const T* a, ComputeT<T> s, T* out, int64_t n, OpReq req, cudaStream_t stream,
                    const char* what) {
  if (req == OpReq::kNullOp) return;
  ForEach(n, stream, ScalarRightKernel<OP, T>{a, s, out, req}, what);
}

}  // namespace cuda
}  // namespace weft

// Helpers for code built with CUDA (.cu files and the few .cc files under WEFT_USE_CUDA):
// checked runtime calls that turn failures into weft::Error, a scoped device switch, the
// stream of a run context and launch geometry for grid-stride loops.
#pragma once

#ifndef WEFT_USE_CUDA
#error "core/base/cuda_utils.h is only for builds with WEFT_USE_CUDA"
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/base/context.h"
#include "core/base/error.h"

namespace weft {
namespace cuda {

// Throws kRuntime saying what failed ("CUDA call cudaMalloc(...)"), where it ran and CUDA's
// description. Clears the runtime's last error first so that a recoverable failure does
// not poison later calls.
[[noreturn]] inline void ThrowCudaError(cudaError_t err, const std::string& what, const Context* ctx) {
  cudaGetLastError();
  Throw(ErrorKind::kRuntime, what, " failed", ctx ? " on " + ctx->ToString() : std::string(), ": ",
        cudaGetErrorString(err), " (", cudaGetErrorName(err), ")");
}

inline void Check(cudaError_t err, const char* call, const Context* ctx = nullptr) {
  if (err != cudaSuccess) ThrowCudaError(err, std::string("CUDA call ") + call, ctx);
}

// After a <<<...>>> launch: a bad configuration or a failed launch becomes an error naming
// whose kernel it was (an operator's name, say).
inline void CheckLaunch(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) ThrowCudaError(err, std::string("CUDA kernel launch for ") + what, nullptr);
}

// Makes `dev` the current device for the scope and restores the previous one after, so a
// worker thread's device is not changed behind its back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int dev) {
    Check(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != dev) {
      Context ctx = Context::GPU(dev);
      Check(cudaSetDevice(dev), "cudaSetDevice", &ctx);
    }
  }
  ~DeviceGuard() {
    int cur = prev_;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

// The stream of a run context (engine::RunContext::stream). A null stream (the naive
// engine, or code run outside the engine) means the legacy default stream, which orders
// itself against every other blocking stream and so is always safe.
inline cudaStream_t StreamOf(void* stream) {
  return stream ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
}

// Launch geometry for a grid-stride loop over n elements.
constexpr int kBlockThreads = 256;
inline unsigned GridFor(int64_t n) {
  // Enough blocks to fill any current GPU many times; the loop strides over the rest.
  constexpr int64_t kMaxBlocks = 65535;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + kBlockThreads - 1) / kBlockThreads, kMaxBlocks)));
}

}  // namespace cuda
}  // namespace weft

// WEFT_CUDA_CALL(expr): run a CUDA runtime call, throwing weft::Error(kRuntime) that names
// the call when it fails. WEFT_CUDA_CALL_ON(ctx, expr) also names the context.
#define WEFT_CUDA_CALL(expr) ::weft::cuda::Check((expr), #expr)
#define WEFT_CUDA_CALL_ON(ctx, expr) \
  do {                               \
    ::weft::Context weft_cuda_ctx_ = (ctx); \
    ::weft::cuda::Check((expr), #expr, &weft_cuda_ctx_); \
  } while (0)

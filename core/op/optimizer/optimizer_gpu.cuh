// Shared pieces of the GPU update operators (core/op/optimizer/*_gpu.cu): the elementwise
// and multi-tensor launchers, which run the formulas of update_math.h (the CPU kernels'
// own) over one parameter or a whole group of parameters in one kernel launch.
//
// Multi-tensor launches: the host fills a table (a kernel parameter passed by value, so no
// copy to the device and no synchronisation) with the pointers, sizes, per-tensor rates and
// write requests of up to kMaxTensors tensors; larger groups take one launch per table.
// The grid's blocks map to (tensor, chunk) pairs: tensor k owns blocks
// [block_start[k], block_start[k + 1]), each over kChunk consecutive elements.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/cuda_utils.h"
#include "core/base/dtype.h"
#include "core/op/optimizer/update_math.h"
#include "core/op/registry.h"

// The dtypes the GPU updates are built for (the floating ones the CPU kernels take; float16
// and bfloat16 compute in float); others are a kUnsupported error naming the operator.
#define WEFT_GPU_UPDATE_TYPE_SWITCH(dtype, DT, what, ...)                                               \
  switch (dtype) {                                                                                      \
    case ::weft::DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                              \
    case ::weft::DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                             \
    case ::weft::DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;                    \
    case ::weft::DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;                  \
    default:                                                                                            \
      ::weft::Throw(::weft::ErrorKind::kUnsupported, "Operator '", what,                                \
                    "': on GPUs, expected float32, float64, float16 or bfloat16 weights, got ", ::weft::DTypeName(dtype)); \
  }

namespace weft {
namespace op {
namespace optim_gpu {

// The formulas and the store are update_math.h's, the CPU kernels' own.
using optim::Put;

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    f(i);
}

// Runs f(i) for i in [0, n) on the stream, without waiting.
template <typename F>
void ForEach(int64_t n, cudaStream_t s, F f, const char* what) {
  if (n <= 0) return;
  ForEachKernel<<<cuda::GridFor(n), cuda::kBlockThreads, 0, s>>>(n, f);
  cuda::CheckLaunch(what);
}

// ---------------------------------------------------------------- multi-tensor tables
// Per tensor: NP pointers (the group's inputs as the operator reads them, then the output),
// its size, learning rate, weight decay (and a third rate, AdamW's eta), the index of the
// weight in the operator's input list (for rates read from arrays) and whether the output
// is added to. 40 tensors of up to 6 pointers stay under the 4 KiB parameter limit of
// older CUDA versions.
constexpr int kMaxTensors = 40;
constexpr int64_t kChunk = 4096;

template <int NP>
struct Table {
  void* ptr[kMaxTensors][NP];
  int64_t size[kMaxTensors];
  double lr[kMaxTensors], wd[kMaxTensors], eta[kMaxTensors];
  int index[kMaxTensors];
  int block_start[kMaxTensors + 1];
  bool add[kMaxTensors];
  int count;
};

// One block: find its tensor (the last k whose first block is at or before it; tensors of
// no elements own no blocks and are stepped over), then run f over its chunk. The table is
// a __grid_constant__ parameter: f takes it by reference, and without the qualifier taking
// a parameter's address would copy the whole table into every thread's local memory.
template <int NP, typename F>
__global__ void __launch_bounds__(cuda::kBlockThreads) MultiTensorKernel(const __grid_constant__ Table<NP> t, F f) {
  const int b = static_cast<int>(blockIdx.x);
  int k = 0;
  while (k + 1 < t.count && t.block_start[k + 1] <= b) ++k;
  const int64_t begin = static_cast<int64_t>(b - t.block_start[k]) * kChunk;
  const int64_t end = begin + kChunk < t.size[k] ? begin + kChunk : t.size[k];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) f(t, k, i);
}

// One tensor of a multi-tensor update, as the host collects them.
struct TensorEntry {
  void* ptr[8];
  int64_t size;
  double lr, wd, eta;
  int index;
  bool add;
};

// Launches f over every entry, kMaxTensors per launch (one launch for a typical group).
// f: __device__ (const Table<NP>&, int k, int64_t i).
template <int NP, typename F>
void LaunchMulti(const std::vector<TensorEntry>& entries, cudaStream_t s, F f, const char* what) {
  for (size_t first = 0; first < entries.size(); first += kMaxTensors) {
    Table<NP> t;
    t.count = 0;
    int64_t blocks = 0;
    for (size_t e = first; e < entries.size() && t.count < kMaxTensors; ++e) {
      const TensorEntry& te = entries[e];
      const int k = t.count++;
      for (int j = 0; j < NP; ++j) t.ptr[k][j] = te.ptr[j];
      t.size[k] = te.size;
      t.lr[k] = te.lr;
      t.wd[k] = te.wd;
      t.eta[k] = te.eta;
      t.index[k] = te.index;
      t.add[k] = te.add;
      t.block_start[k] = static_cast<int>(blocks);
      blocks += (te.size + kChunk - 1) / kChunk;
      if (blocks > INT32_MAX)
        Throw(ErrorKind::kUnsupported, "Operator '", what, "': a group of more than 2^31 chunks of ", kChunk,
              " elements");
    }
    t.block_start[t.count] = static_cast<int>(blocks);
    if (blocks == 0) continue;
    MultiTensorKernel<NP, F><<<static_cast<unsigned>(blocks), cuda::kBlockThreads, 0, s>>>(t, f);
    cuda::CheckLaunch(what);
  }
}

}  // namespace optim_gpu
}  // namespace op
}  // namespace weft

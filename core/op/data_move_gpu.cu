// Kernels of data_move_gpu.h: copies, strided gathers and scatters, and sums over axes,
// on the operator's stream. Writes move raw bits (an unsigned type of the element's size),
// so every dtype is covered by four instantiations; additions dispatch on the dtype and add
// in its compute type as the CPU loops do.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/op/data_move_gpu.h"
#include "core/op/elemwise/elemwise_kernels.cuh"

namespace weft {
namespace op {
namespace gpu {
namespace {

// Every dtype, for additions (the write paths use BitsOf instead).
#define WEFT_GPU_ALL_TYPE_SWITCH(dtype, DT, ...)                                       \
  switch (dtype) {                                                                     \
    case DType::kFloat32: { using DT = float; __VA_ARGS__ } break;                     \
    case DType::kFloat64: { using DT = double; __VA_ARGS__ } break;                    \
    case DType::kFloat16: { using DT = ::weft::float16; __VA_ARGS__ } break;           \
    case DType::kBfloat16: { using DT = ::weft::bfloat16; __VA_ARGS__ } break;         \
    case DType::kUint8: { using DT = uint8_t; __VA_ARGS__ } break;                     \
    case DType::kInt8: { using DT = int8_t; __VA_ARGS__ } break;                       \
    case DType::kInt32: { using DT = int32_t; __VA_ARGS__ } break;                     \
    case DType::kInt64: { using DT = int64_t; __VA_ARGS__ } break;                     \
    case DType::kBool: { using DT = bool; __VA_ARGS__ } break;                         \
    default: Throw(ErrorKind::kType, "unsupported dtype code ", static_cast<int>(dtype)); \
  }

// An unsigned type of the element's size, for moves that only copy bits.
#define WEFT_GPU_BITS_SWITCH(dtype, DT, ...)                                                 \
  switch (DTypeSize(dtype)) {                                                                \
    case 1: { using DT = uint8_t; __VA_ARGS__ } break;                                       \
    case 2: { using DT = uint16_t; __VA_ARGS__ } break;                                      \
    case 4: { using DT = uint32_t; __VA_ARGS__ } break;                                      \
    case 8: { using DT = uint64_t; __VA_ARGS__ } break;                                      \
    default: Throw(ErrorKind::kType, "unsupported element size ", DTypeSize(dtype), " bytes"); \
  }

constexpr int kMaxWalkDims = 16;

// A walk with its axes of size 1 dropped and mergeable axes merged (as MergeStridedAxes in
// strided_walk.h does), small enough to pass to a kernel by value.
struct Walk {
  int nd = 0;
  int64_t shape[kMaxWalkDims];
  int64_t stride[kMaxWalkDims];
  int64_t base = 0;

  // The position of element i (row-major over shape) in the strided memory.
  __device__ int64_t Offset(int64_t i) const {
    int64_t off = base;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t s = shape[d];
      off += (i % s) * stride[d];
      i /= s;
    }
    return off;
  }
};

Walk MakeWalk(const Shape& shape, const std::vector<int64_t>& stride, int64_t base, const char* what) {
  Walk w;
  w.base = base;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1) continue;
    if (w.nd > 0 && w.stride[w.nd - 1] == stride[d] * shape[d]) {
      w.shape[w.nd - 1] *= shape[d];
      w.stride[w.nd - 1] = stride[d];
      continue;
    }
    if (w.nd == kMaxWalkDims)
      Throw(ErrorKind::kUnsupported, what, " on a GPU: the access pattern has more than ", kMaxWalkDims,
            " axes that cannot be merged");
    w.shape[w.nd] = shape[d];
    w.stride[w.nd] = stride[d];
    ++w.nd;
  }
  return w;
}

template <typename T>
struct GatherWrite {
  const T* in;
  T* out;
  Walk w;
  __device__ void operator()(int64_t i) const { out[i] = in[w.Offset(i)]; }
};

template <typename T>
struct GatherAdd {
  const T* in;
  T* out;
  Walk w;
  __device__ void operator()(int64_t i) const {
    cuda::Store(out, i, static_cast<cuda::ComputeT<T>>(in[w.Offset(i)]), OpReq::kAddTo);
  }
};

template <typename T>
struct ScatterWrite {
  const T* src;
  T* dst;
  Walk w;
  __device__ void operator()(int64_t i) const { dst[w.Offset(i)] = src[i]; }
};

template <typename T>
struct ScatterAdd {
  const T* src;
  T* dst;
  Walk w;
  __device__ void operator()(int64_t i) const {
    cuda::Store(dst, w.Offset(i), static_cast<cuda::ComputeT<T>>(src[i]), OpReq::kAddTo);
  }
};

template <typename T>
struct FillBits {
  T* dst;
  Walk w;
  T value;
  __device__ void operator()(int64_t i) const { dst[w.Offset(i)] = value; }
};

// Batched 2-D transpose through shared memory: out[b][r][c] = in[base + b * in_batch + c * R + r]
// for out of shape (B, R, C), so that both the reads and the writes are coalesced. Each
// block moves 32x32 tiles (a grid-stride loop over them); the tile row has one spare
// element so that the column reads hit distinct banks.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

template <typename T>
__global__ void TransposeTilesKernel(const T* in, T* out, int64_t B, int64_t R, int64_t C, int64_t in_batch,
                                     int64_t base) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tiles_r = (R + kTile - 1) / kTile, tiles_c = (C + kTile - 1) / kTile;
  const int64_t per_batch = tiles_r * tiles_c, total = B * per_batch;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const int64_t b = t / per_batch, rem = t % per_batch;
    const int64_t r0 = (rem / tiles_c) * kTile, c0 = (rem % tiles_c) * kTile;
    const T* src = in + base + b * in_batch;
    T* dst = out + b * R * C;
    // tile[j][x] holds the element at (r0 + x, c0 + j): consecutive threads read
    // consecutive r, which are consecutive in the input.
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t c = c0 + j, r = r0 + tx;
      if (c < C && r < R) tile[j][tx] = src[r + c * R];
    }
    __syncthreads();
    // Consecutive threads write consecutive c of output row r0 + j.
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t r = r0 + j, c = c0 + tx;
      if (r < R && c < C) dst[r * C + c] = tile[tx][j];
    }
    // The next tile overwrites `tile`: every thread must be done reading it.
    __syncthreads();
  }
}

// Recognises a walk that is a (batched) 2-D transpose of contiguous input: out (B, R, C)
// reading in (B, C, R). Returns false for any other pattern.
bool AsTranspose(const Walk& w, int64_t* B, int64_t* R, int64_t* C, int64_t* in_batch) {
  if (w.nd == 2 && w.stride[0] == 1 && w.stride[1] == w.shape[0]) {
    *B = 1;
    *R = w.shape[0];
    *C = w.shape[1];
    *in_batch = 0;
    return true;
  }
  if (w.nd == 3 && w.stride[1] == 1 && w.stride[2] == w.shape[1] && w.stride[0] == w.shape[1] * w.shape[2]) {
    *B = w.shape[0];
    *R = w.shape[1];
    *C = w.shape[2];
    *in_batch = w.stride[0];
    return true;
  }
  return false;
}

// Sum over the reduced axes of a walk: output element j (row-major over the kept axes)
// adds the `count` elements of the reduced axes.
struct SumPlan {
  int nk = 0, nr = 0;
  int64_t kshape[kMaxWalkDims], kstride[kMaxWalkDims];
  int64_t rshape[kMaxWalkDims], rstride[kMaxWalkDims];
  int64_t count = 1;
};

template <typename T>
struct SumKernel {
  const T* in;
  T* out;
  SumPlan p;
  OpReq req;
  __device__ void operator()(int64_t j) const {
    int64_t base = 0, rest = j;
    for (int d = p.nk - 1; d >= 0; --d) {
      base += (rest % p.kshape[d]) * p.kstride[d];
      rest /= p.kshape[d];
    }
    cuda::ComputeT<T> acc = cuda::ComputeT<T>(0);
    for (int64_t r = 0; r < p.count; ++r) {
      int64_t off = base, q = r;
      for (int d = p.nr - 1; d >= 0; --d) {
        off += (q % p.rshape[d]) * p.rstride[d];
        q /= p.rshape[d];
      }
      acc = acc + static_cast<cuda::ComputeT<T>>(in[off]);
    }
    cuda::Store(out, j, acc, req);
  }
};

}  // namespace

void Copy(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp || out.Size() == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (req != OpReq::kAddTo) {
    if (in.dptr == out.dptr) return;
    cuda::Check(cudaMemcpyAsync(out.dptr, in.dptr, out.Bytes(), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync",
                &ctx.run_ctx.ctx);
    return;
  }
  WEFT_GPU_ALL_TYPE_SWITCH(out.dtype, T, {
    Walk w;  // one axis of stride 1: element i reads position i
    w.nd = 1;
    w.shape[0] = out.Size();
    w.stride[0] = 1;
    cuda::ForEach(out.Size(), s, GatherAdd<T>{in.ptr<T>(), out.ptr<T>(), w}, "copy (add)");
  });
}

void StridedGather(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                   const TBlob& in, const TBlob& out, OpReq req) {
  const int64_t n = walk.Size();
  if (req == OpReq::kNullOp || n == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const Walk w = MakeWalk(walk, stride, base, "strided gather");
  if (req == OpReq::kAddTo) {
    WEFT_GPU_ALL_TYPE_SWITCH(out.dtype, T, {
      cuda::ForEach(n, s, GatherAdd<T>{in.ptr<T>(), out.ptr<T>(), w}, "strided gather (add)");
    });
    return;
  }
  int64_t B, R, C, in_batch;
  if (AsTranspose(w, &B, &R, &C, &in_batch)) {
    WEFT_GPU_BITS_SWITCH(out.dtype, T, {
      const int64_t tiles = B * ((R + kTile - 1) / kTile) * ((C + kTile - 1) / kTile);
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 65535));
      TransposeTilesKernel<T><<<grid, dim3(kTile, kTileRows), 0, s>>>(in.ptr<T>(), out.ptr<T>(), B, R, C, in_batch,
                                                                        w.base);
      cuda::CheckLaunch("transpose tiles");
    });
    return;
  }
  WEFT_GPU_BITS_SWITCH(out.dtype, T, {
    cuda::ForEach(n, s, GatherWrite<T>{in.ptr<T>(), out.ptr<T>(), w}, "strided gather");
  });
}

void StridedScatter(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                    const TBlob& src, const TBlob& dst, OpReq req) {
  const int64_t n = walk.Size();
  if (req == OpReq::kNullOp || n == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const Walk w = MakeWalk(walk, stride, base, "strided scatter");
  if (req == OpReq::kAddTo) {
    WEFT_GPU_ALL_TYPE_SWITCH(dst.dtype, T, {
      cuda::ForEach(n, s, ScatterAdd<T>{src.ptr<T>(), dst.ptr<T>(), w}, "strided scatter (add)");
    });
    return;
  }
  WEFT_GPU_BITS_SWITCH(dst.dtype, T, {
    cuda::ForEach(n, s, ScatterWrite<T>{src.ptr<T>(), dst.ptr<T>(), w}, "strided scatter");
  });
}

void StridedFill(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                 const TBlob& dst, uint64_t bits) {
  const int64_t n = walk.Size();
  if (n == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const Walk w = MakeWalk(walk, stride, base, "strided fill");
  // The host stored the value's bytes at the start of `bits` (little-endian, as every
  // CUDA host is), so the low bytes are the value.
  WEFT_GPU_BITS_SWITCH(dst.dtype, T, {
    cuda::ForEach(n, s, FillBits<T>{dst.ptr<T>(), w, static_cast<T>(bits)}, "strided fill");
  });
}

void Zero(const OpContext& ctx, const TBlob& out) {
  if (out.Size() == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cuda::Check(cudaMemsetAsync(out.dptr, 0, out.Bytes(), cuda::StreamOf(ctx.run_ctx.stream)), "cudaMemsetAsync",
              &ctx.run_ctx.ctx);
}

void SumAxes(const OpContext& ctx, const TBlob& in, const Shape& walk, const std::vector<bool>& reduce,
             const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  WEFT_CHECK(walk.Size() == in.Size() && static_cast<int>(reduce.size()) == walk.ndim(), kInternal,
             "sum over axes on a GPU: a walk of shape ", walk.ToString(), " does not fit an input of ", in.Size(),
             " elements");
  SumPlan p;
  int64_t run = 1;
  std::vector<int64_t> stride(walk.ndim());
  for (int d = walk.ndim() - 1; d >= 0; --d) {
    stride[d] = run;
    run *= walk[d];
  }
  for (int d = 0; d < walk.ndim(); ++d) {
    if (walk[d] == 1) continue;
    if ((reduce[d] ? p.nr : p.nk) == kMaxWalkDims)
      Throw(ErrorKind::kUnsupported, "sum over axes on a GPU: more than ", kMaxWalkDims, " axes");
    if (reduce[d]) {
      p.rshape[p.nr] = walk[d];
      p.rstride[p.nr++] = stride[d];
      p.count *= walk[d];
    } else {
      p.kshape[p.nk] = walk[d];
      p.kstride[p.nk++] = stride[d];
    }
  }
  // An empty reduced axis makes count 0: the output is zero (or left as is for kAddTo).
  const int64_t kept = out.Size();
  if (kept == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_ALL_TYPE_SWITCH(out.dtype, T, {
    cuda::ForEach(kept, s, SumKernel<T>{in.ptr<T>(), out.ptr<T>(), p, req}, "sum over axes");
  });
}

}  // namespace gpu
}  // namespace op
}  // namespace weft

// Kernels of ordering_gpu.h. Each element's place in its lane is its rank: the number of
// lane elements that come before it in the CPU's order (KeyOrder in ordering.cc: NaN above
// every number, ties by position). The order is total, so the ranks are a permutation and
// an element of rank r < k goes to slot r, exactly where the CPU's stable sort puts it.
// A block ranks 256 elements of one lane against the whole lane, read in shared-memory
// chunks; long lanes spread over many blocks. The cost is n^2 comparisons per lane, which
// suits the lanes of a few thousand elements that topk and sort see in networks.
#include <cstdint>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/tensor/ordering_gpu.h"

namespace weft {
namespace op {
namespace {

constexpr int kRankThreads = 256;
constexpr int kRankChunk = 1024;

// KeyOrder: does (a, ia) come before (b, ib)?
template <typename K>
__device__ __forceinline__ bool Before(K a, int64_t ia, K b, int64_t ib, bool ascend) {
  // x != x holds for NaN only (never for integer keys).
  const bool an = a != a, bn = b != b;
  if (an || bn) return an != bn ? (ascend ? bn : an) : ia < ib;
  if (a != b) return ascend ? a < b : a > b;
  return ia < ib;
}

// As Store(p + pos, req, v) on the CPU: the add goes through double.
template <typename I>
__device__ __forceinline__ void StoreDouble(void* p, int64_t pos, double v, bool add) {
  I* q = static_cast<I*>(p) + pos;
  *q = add ? static_cast<I>(static_cast<double>(*q) + v) : static_cast<I>(v);
}

__device__ void StoreIndex(void* p, DType t, int64_t pos, double v, bool add) {
  switch (t) {
    case DType::kUint8: StoreDouble<uint8_t>(p, pos, v, add); break;
    case DType::kFloat16: StoreDouble<float16>(p, pos, v, add); break;
    case DType::kFloat32: StoreDouble<float>(p, pos, v, add); break;
    case DType::kFloat64: StoreDouble<double>(p, pos, v, add); break;
    case DType::kInt32: StoreDouble<int32_t>(p, pos, v, add); break;
    case DType::kInt64: StoreDouble<int64_t>(p, pos, v, add); break;
    default: break;  // rejected on the host before the launch
  }
}

// The position an index array names, or -1 when it names none of the lane's n elements.
__device__ int64_t LoadIndex(const void* p, DType t, int64_t pos, int64_t n) {
  double v;
  switch (t) {
    case DType::kUint8: v = static_cast<const uint8_t*>(p)[pos]; break;
    case DType::kFloat16: v = static_cast<float>(static_cast<const float16*>(p)[pos]); break;
    case DType::kFloat32: v = static_cast<const float*>(p)[pos]; break;
    case DType::kFloat64: v = static_cast<const double*>(p)[pos]; break;
    case DType::kInt32: v = static_cast<const int32_t*>(p)[pos]; break;
    case DType::kInt64: {
      const int64_t i = static_cast<const int64_t*>(p)[pos];
      return i >= 0 && i < n ? i : -1;
    }
    default: return -1;
  }
  if (!(v >= 0 && v < static_cast<double>(n))) return -1;
  return static_cast<int64_t>(v);
}

bool IsIndexDType(DType t) {
  return t == DType::kUint8 || t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64 ||
         t == DType::kInt32 || t == DType::kInt64;
}

template <typename T>
__global__ void RankKernel(const T* x, LaneView v, bool ascend, T* vals, bool vadd, void* idx, DType itype, bool iadd,
                           T* mask, bool madd) {
  using K = cuda::ComputeT<T>;
  __shared__ K keys[kRankChunk];
  const int64_t jblocks = (v.n + kRankThreads - 1) / kRankThreads;
  const int64_t tasks = v.outer * v.inner * jblocks;
  // Every thread of a block runs the same iterations, so the barriers below are uniform.
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t lane = task / jblocks;
    const int64_t j = (task % jblocks) * kRankThreads + threadIdx.x;
    const int64_t o = lane / v.inner, in = lane % v.inner;
    const int64_t base = o * v.n * v.inner + in;
    const bool mine = j < v.n;
    const K kj = mine ? static_cast<K>(x[base + j * v.inner]) : K(0);
    int64_t rank = 0;
    for (int64_t c0 = 0; c0 < v.n; c0 += kRankChunk) {
      const int m = static_cast<int>(v.n - c0 < kRankChunk ? v.n - c0 : kRankChunk);
      __syncthreads();  // the previous chunk (or task) is no longer read
      for (int t = threadIdx.x; t < m; t += blockDim.x) keys[t] = static_cast<K>(x[base + (c0 + t) * v.inner]);
      __syncthreads();
      if (mine)
        for (int t = 0; t < m; ++t) rank += Before(keys[t], c0 + t, kj, j, ascend);
    }
    if (!mine) continue;
    if (rank < v.k) {
      const int64_t dst = (o * v.k + rank) * v.inner + in;
      if (vals) {
        const T xv = x[base + j * v.inner];
        vals[dst] = vadd ? static_cast<T>(static_cast<K>(vals[dst]) + static_cast<K>(xv)) : xv;
      }
      if (idx) StoreIndex(idx, itype, dst, static_cast<double>(j), iadd);
    }
    if (mask) StoreDouble<T>(mask, base + j * v.inner, rank < v.k ? 1.0 : 0.0, madd);
  }
}

// One thread per lane walks its k selected entries in order, as the CPU loop does, so
// repeated indices (possible only in hand-made inputs) add up without races.
template <typename T>
struct TopKBackwardLanes {
  const T* g;
  const void* idx;
  DType itype;
  LaneView v;
  T* dx;
  __device__ void operator()(int64_t lane) const {
    using A = cuda::ComputeT<T>;
    const int64_t o = lane / v.inner, in = lane % v.inner;
    for (int64_t j = 0; j < v.k; ++j) {
      const int64_t src = (o * v.k + j) * v.inner + in;
      const int64_t pos = LoadIndex(idx, itype, src, v.n);
      if (pos < 0) continue;
      T* d = dx + (o * v.n + pos) * v.inner + in;
      *d = static_cast<T>(static_cast<A>(*d) + static_cast<A>(g[src]));
    }
  }
};

}  // namespace

void RankLanesGPU(const OpContext& ctx, const TBlob& in, const LaneView& v, bool ascend, const TBlob* vals,
                  OpReq vreq, const TBlob* idx, OpReq ireq, const TBlob* mask, OpReq mreq) {
  if (vals && vreq == OpReq::kNullOp) vals = nullptr;
  if (idx && ireq == OpReq::kNullOp) idx = nullptr;
  if (mask && mreq == OpReq::kNullOp) mask = nullptr;
  if (!vals && !idx && !mask) return;
  const int64_t lanes = v.outer * v.inner;
  if (lanes == 0 || v.n == 0) return;
  if (idx && !IsIndexDType(idx->dtype))
    Throw(ErrorKind::kType, "sorting on a GPU: ", DTypeName(idx->dtype), " is not an index dtype");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const int64_t tasks = lanes * ((v.n + kRankThreads - 1) / kRankThreads);
  const unsigned grid = static_cast<unsigned>(tasks < 65535 ? tasks : 65535);
  WEFT_GPU_TYPE_SWITCH(in.dtype, T, "sort", {
    RankKernel<T><<<grid, kRankThreads, 0, s>>>(
        in.ptr<T>(), v, ascend, vals ? vals->ptr<T>() : nullptr, vreq == OpReq::kAddTo, idx ? idx->dptr : nullptr,
        idx ? idx->dtype : DType::kInt64, ireq == OpReq::kAddTo, mask ? mask->ptr<T>() : nullptr,
        mreq == OpReq::kAddTo);
    cuda::CheckLaunch("sort");
  });
}

void TopKBackwardGPU(const OpContext& ctx, const TBlob& ograd, const TBlob& idx, const LaneView& v, const TBlob& grad,
                     OpReq req) {
  if (req == OpReq::kNullOp || grad.Size() == 0) return;
  if (!IsIndexDType(idx.dtype))
    Throw(ErrorKind::kType, "_backward_topk on a GPU: ", DTypeName(idx.dtype), " is not an index dtype");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (req != OpReq::kAddTo)
    cuda::Check(cudaMemsetAsync(grad.dptr, 0, grad.Bytes(), s), "cudaMemsetAsync", &ctx.run_ctx.ctx);
  WEFT_GPU_TYPE_SWITCH(grad.dtype, T, "_backward_topk", {
    cuda::ForEach(v.outer * v.inner, s, TopKBackwardLanes<T>{ograd.ptr<T>(), idx.dptr, idx.dtype, v, grad.ptr<T>()},
                  "_backward_topk");
  });
}

}  // namespace op
}  // namespace weft

// GPU versions of argmax, argmin and argmax_channel with the CPU's rule (arg_search.cc):
// the first index of the best value, where a NaN beats every number and the first NaN wins.
#include <optional>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/op_util.h"
#include "core/op/reduce/arg_search.h"
#include "core/op/reduce/reducers.h"

namespace weft {
namespace op {
namespace {

// Is candidate (v, i) better than (best, bi)? Ties go to the smaller index, so that
// partial results merged in any order give the serial search's answer.
template <bool kMax, typename A>
__device__ __forceinline__ bool Beats(A v, int64_t i, A best, int64_t bi) {
  const bool vn = IsNaN(v), bn = IsNaN(best);
  if (vn || bn) return vn && (!bn || i < bi);
  if (v == best) return i < bi;
  return kMax ? v > best : v < best;
}

// One thread per output element (o, l), walking the searched axis with stride `inner`:
// neighbouring threads read neighbouring addresses.
template <bool kMax, typename T>
struct SearchStridedKernel {
  const T* x;
  T* y;
  int64_t n, inner;
  OpReq req;
  __device__ void operator()(int64_t t) const {
    using A = typename ReduceAcc<T>::type;
    const int64_t o = t / inner, l = t % inner;
    const T* base = x + o * n * inner + l;
    A best = static_cast<A>(base[0]);
    int64_t bi = 0;
    for (int64_t r = 1; r < n; ++r) {
      const A v = static_cast<A>(base[r * inner]);
      if (Beats<kMax>(v, r, best, bi)) {
        best = v;
        bi = r;
      }
    }
    cuda::Store(y, t, static_cast<double>(bi), req);
  }
};

// The searched axis is the last (inner == 1) and long enough to occupy a warp: one warp per
// row, lanes reading consecutive elements, then a shuffle reduction of (value, index).
template <bool kMax, typename T>
__global__ void SearchRowsKernel(const T* x, T* y, int64_t rows, int64_t n, OpReq req) {
  using A = typename ReduceAcc<T>::type;
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_grid = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; row < rows;
       row += warps_per_grid) {
    const T* base = x + row * n;
    A best = 0;
    int64_t bi = -1;  // -1: this lane saw nothing yet
    for (int64_t r = lane; r < n; r += 32) {
      const A v = static_cast<A>(base[r]);
      if (bi < 0 || Beats<kMax>(v, r, best, bi)) {
        best = v;
        bi = r;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      const A ov = __shfl_down_sync(0xffffffffu, best, off);
      const int64_t oi = __shfl_down_sync(0xffffffffu, bi, off);
      if (oi >= 0 && (bi < 0 || Beats<kMax>(ov, oi, best, bi))) {
        best = ov;
        bi = oi;
      }
    }
    if (lane == 0) cuda::Store(y, row, static_cast<double>(bi), req);
  }
}

template <bool kMax>
void SearchComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const Shape& shape = in[0].shape;
  // argmax_channel has no parameters: it always searches the last axis.
  const bool channel = attrs.op->name == "argmax_channel";
  const std::optional<int> axis = channel ? std::optional<int>(-1) : attrs.Params<ReduceAxisParam>().axis;
  int64_t outer = 1, n = shape.Size(), inner = 1;
  if (axis) {
    const int a = CheckAxis(attrs, *axis, shape.ndim());
    outer = shape.ProdRange(0, a);
    n = shape[a];
    inner = shape.ProdRange(a + 1, shape.ndim());
  }
  if (n == 0 || outer * inner == 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    if (inner == 1 && n >= 16) {
      constexpr int kWarpsPerBlock = cuda::kBlockThreads / 32;
      const unsigned blocks =
          static_cast<unsigned>(std::min<int64_t>((outer + kWarpsPerBlock - 1) / kWarpsPerBlock, 65535));
      SearchRowsKernel<kMax, T><<<blocks, cuda::kBlockThreads, 0, s>>>(in[0].ptr<T>(), out[0].ptr<T>(), outer, n,
                                                                        req[0]);
      cuda::CheckLaunch(name);
    } else {
      cuda::ForEach(outer * inner, s, SearchStridedKernel<kMax, T>{in[0].ptr<T>(), out[0].ptr<T>(), n, inner, req[0]},
                    name);
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(argmax).SetAttr<FCompute>("FCompute<gpu>", SearchComputeGPU<true>);
WEFT_REGISTER_OP(argmin).SetAttr<FCompute>("FCompute<gpu>", SearchComputeGPU<false>);
WEFT_REGISTER_OP(argmax_channel).SetAttr<FCompute>("FCompute<gpu>", SearchComputeGPU<true>);

}  // namespace op
}  // namespace weft

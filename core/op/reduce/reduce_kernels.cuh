// Reductions over any set of axes on the GPU, generic in the reducer: the CPU operators'
// reducers (core/op/reduce/reducers.h: Init, Reduce, Combine, Finalize) accumulating in
// the same type as on the CPU (op::ReduceAcc: double for floating types, int64 for
// integers), so both devices agree to rounding. The input's axes split into kept and
// reduced ones (op::SplitReduceAxes), then one of two kernels runs:
//   - a block per output element, its threads striding over the reduced elements and
//     combining in shared memory: for reductions along contiguous memory (the last axis)
//     and for few outputs with much to reduce;
//   - a thread per output element: for reductions across rows (axis 0 of a matrix), where
//     neighbouring threads read neighbouring memory.
// An operator's GPU compute function picks T with WEFT_GPU_TYPE_SWITCH and calls
//
//   cuda::Reduce<op::SumReducer, T>(inputs[0], flags, outputs[0], req[0], stream, "sum");
//
// with flags[d] true for each reduced input axis.
#pragma once

#include <algorithm>
#include <vector>

#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/reduce/reduce_axis_set.h"
#include "core/op/reduce/reducers.h"

namespace weft {
namespace cuda {

// One block per output element (grid-stride over outputs); blockDim.x == kBlockThreads.
template <typename R, typename T, typename O>
__global__ void ReduceBlockPerOutput(const T* __restrict__ in, O* __restrict__ out, AxisSet kept, AxisSet reduced,
                                     int64_t m, int64_t k, OpReq req) {
  using A = typename op::ReduceAcc<T>::type;
  __shared__ A partial[kBlockThreads];
  for (int64_t j = blockIdx.x; j < m; j += gridDim.x) {
    const T* base = in + kept.Offset(j);
    A acc = R::template Init<A>();
    for (int64_t r = threadIdx.x; r < k; r += blockDim.x) acc = R::Reduce(acc, static_cast<A>(base[reduced.Offset(r)]));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) partial[threadIdx.x] = R::Combine(partial[threadIdx.x], partial[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) Store(out, j, R::Finalize(partial[0], k), req);
    __syncthreads();  // partial is reused by the next output
  }
}

// One thread per output element.
template <typename R, typename T, typename O>
__global__ void ReduceThreadPerOutput(const T* __restrict__ in, O* __restrict__ out, AxisSet kept, AxisSet reduced,
                                      int64_t m, int64_t k, OpReq req) {
  using A = typename op::ReduceAcc<T>::type;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < m;
       j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const T* base = in + kept.Offset(j);
    A acc = R::template Init<A>();
    for (int64_t r = 0; r < k; ++r) acc = R::Reduce(acc, static_cast<A>(base[reduced.Offset(r)]));
    Store(out, j, R::Finalize(acc, k), req);
  }
}

// out = R over the axes of `in` flagged in `reduce`; out holds the kept axes' elements in
// order (with the reduced axes dropped or kept as 1: the layout is the same). `in` has
// dtype T, `out` dtype O (T unless an operator converts, as norm's out_dtype does: the
// accumulated value is converted once, as on the CPU).
template <typename R, typename T, typename O = T>
void Reduce(const TBlob& in, const std::vector<bool>& reduce, const TBlob& out, OpReq req, cudaStream_t stream,
            const char* what) {
  if (req == OpReq::kNullOp || out.Size() == 0) return;
  int64_t m = out.Size();
  int64_t k = in.Size() / m;
  op::ReduceAxisSet kept_set, reduced_set;
  op::SplitReduceAxes(in.shape, reduce, &kept_set, &reduced_set);
  AxisSet kept = ToAxisSet(kept_set, in.shape, what), reduced = ToAxisSet(reduced_set, in.shape, what);
  // Along contiguous memory a block reads coalesced; with few outputs, a block each is
  // the only way to keep the GPU busy.
  bool contiguous = reduced.ndim > 0 && reduced.stride[reduced.ndim - 1] == 1;
  if (k > 1 && (contiguous || (m < 4096 && k >= 256))) {
    unsigned grid = static_cast<unsigned>(std::min<int64_t>(m, 65535));
    ReduceBlockPerOutput<R, T, O><<<grid, kBlockThreads, 0, stream>>>(in.ptr<T>(), out.ptr<O>(), kept, reduced, m, k,
                                                                      req);
  } else {
    ReduceThreadPerOutput<R, T, O><<<GridFor(m), kBlockThreads, 0, stream>>>(in.ptr<T>(), out.ptr<O>(), kept, reduced,
                                                                             m, k, req);
  }
  CheckLaunch(what);
}

}  // namespace cuda
}  // namespace weft

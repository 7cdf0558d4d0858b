// Data movement shared by the shape operators (transpose, slice, flip, tile, repeat,
// concat, split, stack and their gradients) on either device. Each operator works out its
// walk (shape, strides, base offset, as in strided_walk.h) once, in its .cc file, and hands
// it to these functions, which run the CPU loop or, for a GPU context, the kernels of
// data_move_gpu.cu on the operator's stream. One place computes the indices, so the two
// devices cannot disagree about which element goes where.
#pragma once

#include <algorithm>
#include <vector>

#include "core/op/matrix/axis_concat.h"
#include "core/op/op_util.h"
#include "core/op/reduce/reduce_kernel.h"
#include "core/op/data_move_gpu.h"
#include "core/op/strided_walk.h"

namespace weft {
namespace op {


// out[i] (req)= in[base + offset of element i of `walk` under `stride`].
inline void StridedGather(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                          const TBlob& in, const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (OnGPU(ctx)) return gpu::StridedGather(ctx, walk, stride, base, in, out, req);
  WEFT_TYPE_SWITCH(in.dtype, T, {
    const T* x = in.ptr<T>();
    T* y = out.ptr<T>();
    ForEachStridedRow(walk, stride, base, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      if (req == OpReq::kAddTo) {
        for (int64_t k = 0; k < n; ++k) y[i + k] = static_cast<T>(y[i + k] + x[off + k * step]);
      } else {
        for (int64_t k = 0; k < n; ++k) y[i + k] = x[off + k * step];
      }
    });
  });
}

// The gradient of a gather whose positions are distinct (slices): grad (req)= zeros with
// ograd added at the gathered positions.
inline void StridedScatterGrad(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride,
                               int64_t base, const TBlob& ograd, const TBlob& grad, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (OnGPU(ctx)) {
    if (req != OpReq::kAddTo) gpu::Zero(ctx, grad);
    return gpu::StridedScatter(ctx, walk, stride, base, ograd, grad, OpReq::kAddTo);
  }
  WEFT_TYPE_SWITCH(grad.dtype, T, {
    const T* g = ograd.ptr<T>();
    T* y = grad.ptr<T>();
    if (req != OpReq::kAddTo) std::fill(y, y + grad.Size(), T(0));
    ForEachStridedRow(walk, stride, base, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) y[off + k * step] = static_cast<T>(y[off + k * step] + g[i + k]);
    });
  });
}

// out (req)= in summed over the flagged axes of `walk` (the gradients of tile and repeat).
inline void SumAxes(const OpContext& ctx, const TBlob& in, const Shape& walk, const std::vector<bool>& reduce,
                    const TBlob& out, OpReq req) {
  if (req == OpReq::kNullOp) return;
  if (OnGPU(ctx)) return gpu::SumAxes(ctx, in, walk, reduce, out, req);
  WEFT_TYPE_SWITCH(in.dtype, T, { Reduce<SumReducer, T>(in.Reshaped(walk), reduce, out, req); });
}

// AxisConcat (axis_concat.h) on either device: on a GPU, one strided copy per piece.
inline void AxisConcat(const OpContext& ctx, ConcatDirection dir, const TBlob& whole, const std::vector<TBlob>& pieces,
                       const std::vector<int64_t>& sizes, int64_t outer, int64_t inner,
                       const std::vector<OpReq>& reqs) {
  if (!OnGPU(ctx)) return AxisConcat(dir, whole, pieces, sizes, outer, inner, reqs);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  int64_t start = 0;
  for (size_t p = 0; p < pieces.size(); ++p) {
    // The piece is (outer, sizes[p] * inner) contiguous; in the whole, its rows start
    // `start` elements into each of the outer rows of total * inner.
    const Shape walk{outer, sizes[p] * inner};
    const std::vector<int64_t> stride{total * inner, 1};
    const int64_t base = start * inner;
    start += sizes[p];
    OpReq req = dir == ConcatDirection::kPiecesToWhole ? reqs[0] : reqs[p];
    if (req == OpReq::kNullOp || walk.Size() == 0) continue;
    // Every element of the whole belongs to exactly one piece, so writing the pieces one
    // by one writes all of it.
    if (dir == ConcatDirection::kWholeToPieces) gpu::StridedGather(ctx, walk, stride, base, whole, pieces[p], req);
    else gpu::StridedScatter(ctx, walk, stride, base, pieces[p], whole, req);
  }
}

}  // namespace op
}  // namespace weft

// WEFT_DEVICE_COMPUTE(op, fn): in CUDA builds, `fn` (an FCompute built on the functions
// above, which serve either device) is also the operator's GPU compute function.
#ifdef WEFT_USE_CUDA
#define WEFT_DEVICE_COMPUTE(opname, fn) WEFT_REGISTER_OP(opname).SetAttr<::weft::FCompute>("FCompute<gpu>", fn)
#else
#define WEFT_DEVICE_COMPUTE(opname, fn) static_assert(true, "CPU-only build")
#endif

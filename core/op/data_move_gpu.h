// The GPU side of data_move.h: kernels (data_move_gpu.cu) that move elements along a walk
// on the operator's stream. A build without CUDA gets stubs that say so, which no CPU
// context ever calls, so data_move.h needs no #ifdef at its call sites.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/error.h"
#include "core/base/shape.h"
#include "core/base/tblob.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

inline bool OnGPU(const OpContext& ctx) { return ctx.run_ctx.ctx.is_gpu(); }

namespace gpu {
#ifdef WEFT_USE_CUDA
// out (req)= in, same dtype and size (a device-to-device copy for a write).
void Copy(const OpContext& ctx, const TBlob& in, const TBlob& out, OpReq req);
// out[i] (req)= in[base + sum_d idx_d(i) * stride_d], i walking `walk` in row-major order.
void StridedGather(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                   const TBlob& in, const TBlob& out, OpReq req);
// dst[base + sum_d idx_d(i) * stride_d] (req)= src[i]; the positions must be distinct.
void StridedScatter(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                    const TBlob& src, const TBlob& dst, OpReq req);
// dst[base + sum_d idx_d(i) * stride_d] = the element whose bytes are the low
// DTypeSize(dst.dtype) bytes of `bits` (as memcpy'd from a value of dst's type).
void StridedFill(const OpContext& ctx, const Shape& walk, const std::vector<int64_t>& stride, int64_t base,
                 const TBlob& dst, uint64_t bits);
// Sets every byte of `out` to zero (zero in every dtype).
void Zero(const OpContext& ctx, const TBlob& out);
// out (req)= the sum of `in` (seen with shape `walk`) over the axes flagged in `reduce`,
// accumulated in float for float16.
void SumAxes(const OpContext& ctx, const TBlob& in, const Shape& walk, const std::vector<bool>& reduce,
             const TBlob& out, OpReq req);
#else
[[noreturn]] inline void NoCuda() {
  Throw(ErrorKind::kUnsupported, "this build of Weft has no CUDA support, so it cannot run operators on a GPU");
}
inline void Copy(const OpContext&, const TBlob&, const TBlob&, OpReq) { NoCuda(); }
inline void StridedGather(const OpContext&, const Shape&, const std::vector<int64_t>&, int64_t, const TBlob&,
                          const TBlob&, OpReq) {
  NoCuda();
}
inline void StridedScatter(const OpContext&, const Shape&, const std::vector<int64_t>&, int64_t, const TBlob&,
                           const TBlob&, OpReq) {
  NoCuda();
}
inline void StridedFill(const OpContext&, const Shape&, const std::vector<int64_t>&, int64_t, const TBlob&, uint64_t) {
  NoCuda();
}
inline void Zero(const OpContext&, const TBlob&) { NoCuda(); }
inline void SumAxes(const OpContext&, const TBlob&, const Shape&, const std::vector<bool>&, const TBlob&, OpReq) {
  NoCuda();
}
#endif
}  // namespace gpu

}  // namespace op
}  // namespace weft

// The GPU side of _arange and _linspace (range.cc), in range_gpu.cu; a build without CUDA
// gets a stub that says so.
#pragma once

#include <cstdint>

#include "core/base/error.h"
#include "core/base/tblob.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

#ifdef WEFT_USE_CUDA
// out[i] (req)= start + double(i / repeat) * step, computed in double and stored as the CPU
// loop stores it; with has_last, the last element is `last` instead (linspace's endpoint).
void AffineFillGPU(const OpContext& ctx, const TBlob& out, OpReq req, double start, double step, int64_t repeat,
                   bool has_last, double last);
#else
inline void AffineFillGPU(const OpContext&, const TBlob&, OpReq, double, double, int64_t, bool, double) {
  Throw(ErrorKind::kUnsupported, "this build of Weft has no CUDA support, so it cannot fill arrays on a GPU");
}
#endif

}  // namespace op
}  // namespace weft

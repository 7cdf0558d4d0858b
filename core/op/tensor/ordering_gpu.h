// The GPU side of topk, sort and argsort (ordering.cc): the lanes of an (outer, n, inner)
// view ranked in the CPU's total order (NaN above every number, equal values by position,
// as a stable sort), in ordering_gpu.cu. A build without CUDA gets stubs that say so.
#pragma once

#include <cstdint>

#include "core/base/error.h"
#include "core/base/tblob.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct LaneView {
  int64_t outer = 1, n = 1, inner = 1, k = 1;
};

#ifdef WEFT_USE_CUDA
// For every lane, the first k elements in order: their values into `vals` and positions
// into `idx` (both (outer, k, inner)), and/or `mask` (the input's shape) set to 1 where an
// element is among them and 0 elsewhere. Null outputs are skipped.
void RankLanesGPU(const OpContext& ctx, const TBlob& in, const LaneView& v, bool ascend, const TBlob* vals,
                  OpReq vreq, const TBlob* idx, OpReq ireq, const TBlob* mask, OpReq mreq);
// grad (req)= zeros with ograd added at the positions in idx (indices outside [0, n) are
// skipped), lane by lane in the CPU's order.
void TopKBackwardGPU(const OpContext& ctx, const TBlob& ograd, const TBlob& idx, const LaneView& v, const TBlob& grad,
                     OpReq req);
#else
inline void RankLanesGPU(const OpContext&, const TBlob&, const LaneView&, bool, const TBlob*, OpReq, const TBlob*,
                         OpReq, const TBlob*, OpReq) {
  Throw(ErrorKind::kUnsupported, "this build of Weft has no CUDA support, so it cannot sort on a GPU");
}
inline void TopKBackwardGPU(const OpContext&, const TBlob&, const TBlob&, const LaneView&, const TBlob&, OpReq) {
  Throw(ErrorKind::kUnsupported, "this build of Weft has no CUDA support, so it cannot sort on a GPU");
}
#endif

}  // namespace op
}  // namespace weft

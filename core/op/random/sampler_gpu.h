// The GPU side of the random generators (sample_op.cc): fills an array from a reserved
// draw with the samplers of sampler.h, one element per counter as FillSamples does on the
// CPU, so a seed gives the same values on either device. Defined in sample_op_gpu.cu for
// the distributions of sampler.h; a build without CUDA gets stubs that say so.
#pragma once

#include <cstdint>

#include "core/base/error.h"
#include "core/base/tblob.h"
#include "core/op/random/sampler.h"
#include "core/op/registry.h"

namespace weft {
namespace op {
namespace random {

#ifdef WEFT_USE_CUDA
// out[i] (req)= dist.Convert<T>(dist.Draw(stream of element i)) for out's floating dtype.
template <typename Dist>
void FillSamplesGPU(const OpContext& ctx, const Draw& draw, const Dist& dist, const TBlob& out, OpReq req,
                    const char* name);
// out[i] (req)= low + Below(range), in int32 or int64.
void FillRandIntGPU(const OpContext& ctx, const Draw& draw, int64_t low, uint64_t range, const TBlob& out, OpReq req,
                    const char* name);
#else
template <typename Dist>
void FillSamplesGPU(const OpContext&, const Draw&, const Dist&, const TBlob&, OpReq, const char* name) {
  Throw(ErrorKind::kUnsupported, "Operator '", name, "': this build of Weft has no CUDA support");
}
inline void FillRandIntGPU(const OpContext&, const Draw&, int64_t, uint64_t, const TBlob&, OpReq, const char* name) {
  Throw(ErrorKind::kUnsupported, "Operator '", name, "': this build of Weft has no CUDA support");
}
#endif

}  // namespace random
}  // namespace op
}  // namespace weft

// GPU versions of the operators whose output is the input's elements under another shape
// (Flatten, reshape, expand_dims, squeeze, reshape_like; the gradients of all of them are
// reshape_like): a device-to-device copy on the operator's stream, nothing when the engine
// ran them in place, an elementwise add for kAddTo, as IdentityCompute does on the CPU.
#include <vector>

#include "core/op/data_move_gpu.h"

namespace weft {
namespace op {
namespace {

void IdentityComputeGPU(const NodeAttrs&, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  gpu::Copy(ctx, in[0], out[0], req[0]);
}

}  // namespace

WEFT_REGISTER_OP(Flatten).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(reshape).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(expand_dims).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(squeeze).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);
WEFT_REGISTER_OP(reshape_like).SetAttr<FCompute>("FCompute<gpu>", IdentityComputeGPU);

}  // namespace op
}  // namespace weft

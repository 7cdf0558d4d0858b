// GPU version of Dropout and _backward_Dropout. The mask is drawn with dropout.h's
// functions, which dropout.cc runs too: the counters are reserved from the context's
// random state on the host, and Philox block `first + b` gives the words of mask elements
// 4b..4b+3 (stream 0), each kept when its word is below round((1-p) * 2^32). GPU i shares CPU i's stream of the seed
// (core/resource/resource.cc), so after the same seed both devices give the same mask.
#include <cmath>
#include <limits>

#include "core/op/elemwise/broadcast_index.h"
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/dropout.h"
#include "core/resource/philox.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {
namespace {

template <typename T>
struct DrawMaskKernel {
  Philox4x32 gen;
  uint64_t first;
  uint64_t threshold;
  T scale;
  T* m;
  int64_t n;
  OpReq req;  // how the mask output takes the draw (kWriteTo when it is temporary space)
  // One Philox block: four mask elements, chosen by dropout.h's DropoutKeepBlock as on the CPU.
  __device__ void operator()(int64_t blk) const {
    using A = cuda::ComputeT<T>;
    bool keep[4];
    const int cnt = DropoutKeepBlock(gen, first, blk, threshold, n, keep);
    for (int k = 0; k < cnt; ++k) cuda::Store(m, blk * 4 + k, keep[k] ? static_cast<A>(scale) : A(0) * static_cast<A>(scale), req);
  }
};

// y (op)= x * broadcast(mask); `idx` maps an element of x to its mask element (lhs).
template <typename T>
struct MaskMultiplyKernel {
  cuda::BroadcastIndex idx;
  const T* x;
  const T* mask;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    int64_t mo, unused;
    idx.Offsets(i, &mo, &unused);
    cuda::Store(y, i, static_cast<A>(x[i]) * static_cast<A>(mask[mo]), req);
  }
};

template <typename T>
struct FillKernel {
  T* y;
  cuda::ComputeT<T> v;
  OpReq req;
  __device__ void operator()(int64_t i) const { cuda::Store(y, i, v, req); }
};

template <typename T>
struct CopyKernel {
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const { cuda::Store(y, i, static_cast<cuda::ComputeT<T>>(x[i]), req); }
};

template <typename T>
void MultiplyByMaskGPU(const TBlob& x, const T* mask, const Shape& mask_shape, const TBlob& y, OpReq req,
                       cudaStream_t s, const char* name) {
  cuda::BroadcastIndex idx = cuda::MakeBroadcastIndex(mask_shape, x.shape, x.shape, name);
  cuda::ForEach(x.Size(), s, MaskMultiplyKernel<T>{idx, x.ptr<T>(), mask, y.ptr<T>(), req}, name);
}

void DropoutComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& prm = attrs.Params<DropoutParam>();
  const char* name = attrs.op->name.c_str();
  const TBlob& mask = out[1];
  const int64_t n = mask.Size();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const bool applies = ctx.is_train || prm.mode == "always";
  // The floating types only, refused with the CPU's error otherwise.
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "': input 'data'", {
    if (!applies) {
      // The identity, with an all-ones mask so that the backward is right too.
      if (req[0] != OpReq::kNullOp && !(req[0] != OpReq::kAddTo && in[0].dptr == out[0].dptr))
        cuda::ForEach(in[0].Size(), s, CopyKernel<T>{in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
      if (req[1] != OpReq::kNullOp)
        cuda::ForEach(n, s, FillKernel<T>{mask.ptr<T>(), cuda::ComputeT<T>(1), req[1]}, name);
      return;
    }
    WEFT_CHECK(!ctx.requested.empty() && ctx.requested[0].random != nullptr, kInternal, "Operator '", attrs.op->name,
               "': expected a random resource, got none (FResourceRequest not honoured)");
    RandomState* state = ctx.requested[0].random;
    const int64_t blocks = DropoutMaskBlocks(n);
    // Reserved whatever the requests, as on the CPU, so later draws line up on both devices.
    const uint64_t first = state->Reserve(static_cast<uint64_t>(blocks));
    const uint64_t threshold = DropoutKeepThreshold(prm.p);
    const T scale = static_cast<T>(DropoutScale(prm.p));
    // The fresh mask goes straight into the mask output when that output is overwritten;
    // otherwise (accumulated or not wanted) into temporary space first.
    const bool direct = req[1] == OpReq::kWriteTo || req[1] == OpReq::kWriteInplace;
    T* m = direct ? mask.ptr<T>()
                  : static_cast<T*>(ctx.requested.at(1).temp->Get(static_cast<size_t>(n) * sizeof(T)));
    cuda::ForEach(blocks, s, DrawMaskKernel<T>{Philox4x32(state->seed), first, threshold, scale, m, n, OpReq::kWriteTo},
                  name);
    if (req[0] != OpReq::kNullOp) MultiplyByMaskGPU(in[0], m, mask.shape, out[0], req[0], s, name);
    if (req[1] == OpReq::kAddTo)
      cuda::ForEach(n, s, CopyKernel<T>{m, mask.ptr<T>(), OpReq::kAddTo}, name);
  });
}

// Inputs: ograd, mask. Output: ograd * broadcast(mask).
void DropoutBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "': input 'ograd'", {
    MultiplyByMaskGPU(in[0], in[1].ptr<T>(), in[1].shape, out[0], req[0], s, name);
  });
}

}  // namespace

WEFT_REGISTER_OP(Dropout).SetAttr<FCompute>("FCompute<gpu>", DropoutComputeGPU);
WEFT_REGISTER_OP(_backward_Dropout).SetAttr<FCompute>("FCompute<gpu>", DropoutBackwardGPU);

}  // namespace op
}  // namespace weft

// GPU versions of shape_array and size_array: the values are known on the host when the
// operator runs, so they travel as kernel arguments (no host buffer has to outlive an
// asynchronous copy), kChunk per launch, and a tiny kernel writes them as int64.
#include <algorithm>
#include <vector>

#include "core/op/elemwise/elemwise_kernels.cuh"

namespace weft {
namespace op {
namespace {

constexpr int kChunk = 16;

// y[i] (req)= v[i] for i < n (n <= kChunk).
struct WriteValuesFn {
  int64_t v[kChunk];
  int64_t* y;
  OpReq req;
  __device__ void operator()(int64_t i) const { cuda::Store(y, i, v[i], req); }
};

void WriteValues(const OpContext& ctx, const std::vector<int64_t>& vals, const TBlob& out, OpReq req,
                 const char* name) {
  if (req == OpReq::kNullOp) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  int64_t* y = out.ptr<int64_t>();
  const int64_t total = static_cast<int64_t>(vals.size());
  for (int64_t b = 0; b < total; b += kChunk) {
    WriteValuesFn f{};
    const int64_t n = std::min<int64_t>(kChunk, total - b);
    for (int64_t i = 0; i < n; ++i) f.v[i] = vals[static_cast<size_t>(b + i)];
    f.y = y + b;
    f.req = req;
    cuda::ForEach(n, s, f, name);
  }
}

void ShapeArrayComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WriteValues(ctx, in[0].shape.ToVector(), out[0], req[0], attrs.op->name.c_str());
}

void SizeArrayComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WriteValues(ctx, {in[0].Size()}, out[0], req[0], attrs.op->name.c_str());
}

}  // namespace

WEFT_REGISTER_OP(shape_array).SetAttr<FCompute>("FCompute<gpu>", ShapeArrayComputeGPU);
WEFT_REGISTER_OP(size_array).SetAttr<FCompute>("FCompute<gpu>", SizeArrayComputeGPU);

}  // namespace op
}  // namespace weft

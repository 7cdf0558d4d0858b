// GPU versions of Embedding and _backward_Embedding, with the CPU's index rule (indices
// clipped into [0, input_dim), fractions truncated, NaN to row 0). The weight gradient is
// a scatter-add: every output-gradient element adds atomically into its weight row.
#include <type_traits>

#include "core/op/indexing/index_gpu.cuh"
#include "core/op/nn/embedding.h"

namespace weft {
namespace op {
namespace {

// ClipIndex of embedding.cc: floating indices compare as doubles before truncation.
template <typename I>
__device__ __forceinline__ int64_t EmbeddingRow(I v, int64_t rows) {
  if constexpr (std::is_floating_point_v<I> || std::is_same_v<I, float16> || std::is_same_v<I, bfloat16>) {
    const double d = static_cast<double>(static_cast<typename AccType<I>::type>(v));
    if (!(d > 0)) return 0;
    if (d >= static_cast<double>(rows - 1)) return rows - 1;
    return static_cast<int64_t>(d);
  } else if constexpr (std::is_same_v<I, bool>) {
    return (v ? 1 : 0) < rows - 1 ? (v ? 1 : 0) : rows - 1;
  } else {
    const int64_t i = static_cast<int64_t>(v);
    return i < 0 ? 0 : (i >= rows ? rows - 1 : i);
  }
}

template <typename T, typename I>
struct EmbeddingKernel {
  const I* idx;
  const T* w;
  T* y;
  int64_t rows, dim;
  OpReq req;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / dim, j = e % dim;
    cuda::Store(y, e, static_cast<cuda::ComputeT<T>>(w[EmbeddingRow(idx[i], rows) * dim + j]), req);
  }
};

template <typename T, typename I>
struct EmbeddingGradKernel {
  const T* g;
  const I* idx;
  T* dw;
  int64_t rows, dim;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / dim, j = e % dim;
    cuda::AtomicAdd(dw + EmbeddingRow(idx[i], rows) * dim + j, static_cast<cuda::ComputeT<T>>(g[e]));
  }
};

void EmbeddingComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const auto& p = attrs.Params<EmbeddingParam>();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[0].dtype, I, name, {
      cuda::ForEach(out[0].Size(), s,
                    EmbeddingKernel<T, I>{in[0].ptr<I>(), in[1].ptr<T>(), out[0].ptr<T>(), p.input_dim, p.output_dim,
                                          req[0]},
                    name);
    });
  });
}

// Inputs: ograd, data (the indices). Output: the weight gradient (input_dim, output_dim).
void EmbeddingBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const auto& p = attrs.Params<EmbeddingParam>();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  if (req[0] != OpReq::kAddTo)
    WEFT_CUDA_CALL_ON(ctx.run_ctx.ctx, cudaMemsetAsync(out[0].dptr, 0, out[0].Size() * DTypeSize(out[0].dtype), s));
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, I, name, {
      cuda::ForEach(in[0].Size(), s,
                    EmbeddingGradKernel<T, I>{in[0].ptr<T>(), in[1].ptr<I>(), out[0].ptr<T>(), p.input_dim,
                                              p.output_dim},
                    name);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(Embedding).SetAttr<FCompute>("FCompute<gpu>", EmbeddingComputeGPU);
WEFT_REGISTER_OP(_backward_Embedding).SetAttr<FCompute>("FCompute<gpu>", EmbeddingBackwardGPU);

}  // namespace op
}  // namespace weft

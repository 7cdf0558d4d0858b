// GPU version of where (its gradient is more where calls, so it has no backward operator):
// the condition has the values' shape, or is a vector with one entry per row of x.
#include "core/op/indexing/index_gpu.cuh"

namespace weft {
namespace op {
namespace {

template <typename C, typename T>
struct WhereKernel {
  const C* c;
  const T* x;
  const T* y;
  T* o;
  int64_t span;  // values per condition entry: 1, or the size of one row of x
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    const bool take_x = static_cast<bool>(static_cast<typename AccType<C>::type>(c[i / span]));
    cuda::Store(o, i, static_cast<A>(take_x ? x[i] : y[i]), req);
  }
};

void WhereComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const int64_t n = out[0].Size();
  const int64_t span = in[0].Size() == n ? 1 : (in[0].Size() > 0 ? n / in[0].Size() : 1);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[1].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[0].dtype, C, name, {
      cuda::ForEach(n, s,
                    WhereKernel<C, T>{in[0].ptr<C>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), span, req[0]},
                    name);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(where).SetAttr<FCompute>("FCompute<gpu>", WhereComputeGPU);

}  // namespace op
}  // namespace weft

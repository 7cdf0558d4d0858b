// GPU versions of pick, take and one_hot and of the gradients of pick and take, with the
// CPU versions' index rules (index_mode.h: clip, wrap; fractions truncate).
#include "core/op/indexing/index_gpu.cuh"
#include "core/op/indexing/one_hot.h"
#include "core/op/indexing/pick.h"
#include "core/op/indexing/take.h"

namespace weft {
namespace op {
namespace {

// ---------------------------------------------------------------- pick
// The data as (outer, n, inner) around the picked axis; no axis picks from the flat array.
struct PickGeom {
  int64_t outer = 1, n = 1, inner = 1;
};

PickGeom PickGeomOf(const NodeAttrs& attrs, const Shape& data) {
  PickGeom g;
  const auto& axis = attrs.Params<PickParam>().axis;
  if (!axis) {
    g.n = data.Size();
    return g;
  }
  const int a = CheckAxis(attrs, *axis, data.ndim());
  g.outer = data.ProdRange(0, a);
  g.n = data[a];
  g.inner = data.ProdRange(a + 1, data.ndim());
  return g;
}

template <typename T, typename I>
struct PickKernel {
  const T* x;
  const I* idx;
  T* y;
  int64_t n, inner;
  IndexMode mode;
  OpReq req;
  __device__ void operator()(int64_t t) const {
    const int64_t o = t / inner, i = t % inner;
    const int64_t k = cuda::ResolveIndex(cuda::ToIndex(idx[t]), n, mode);
    cuda::Store(y, t, static_cast<cuda::ComputeT<T>>(x[(o * n + k) * inner + i]), req);
  }
};

// One thread per data element: its gradient is the output gradient where the index picks
// it and zero elsewhere, so no atomics are needed and kWriteTo needs no separate fill.
template <typename T, typename I>
struct PickGradKernel {
  const T* g;
  const I* idx;
  T* grad;
  int64_t n, inner;
  IndexMode mode;
  OpReq req;
  __device__ void operator()(int64_t e) const {
    using A = cuda::ComputeT<T>;
    const int64_t i = e % inner, k = (e / inner) % n, o = e / (inner * n);
    const int64_t t = o * inner + i;
    const bool hit = cuda::ResolveIndex(cuda::ToIndex(idx[t]), n, mode) == k;
    cuda::Store(grad, e, hit ? static_cast<A>(g[t]) : A(0), req);
  }
};

void PickComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const PickGeom g = PickGeomOf(attrs, in[0].shape);
  const IndexMode mode = ParseIndexMode(attrs.Params<PickParam>().mode);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, I, name, {
      cuda::ForEach(g.outer * g.inner, s,
                    PickKernel<T, I>{in[0].ptr<T>(), in[1].ptr<I>(), out[0].ptr<T>(), g.n, g.inner, mode, req[0]},
                    name);
    });
  });
}

// Inputs: ograd, index, data (for its shape).
void PickBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const PickGeom g = PickGeomOf(attrs, in[2].shape);
  const IndexMode mode = ParseIndexMode(attrs.Params<PickParam>().mode);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, I, name, {
      cuda::ForEach(out[0].Size(), s,
                    PickGradKernel<T, I>{in[0].ptr<T>(), in[1].ptr<I>(), out[0].ptr<T>(), g.n, g.inner, mode, req[0]},
                    name);
    });
  });
}

// ---------------------------------------------------------------- take
struct TakeGeom {
  int axis = 0;
  int64_t outer = 1, n = 0, inner = 1;
};

TakeGeom TakeGeomOf(const NodeAttrs& attrs, const Shape& a) {
  TakeGeom g;
  g.axis = CheckAxis(attrs, attrs.Params<TakeParam>().axis, a.ndim());
  g.outer = a.ProdRange(0, g.axis);
  g.n = a[g.axis];
  g.inner = a.ProdRange(g.axis + 1, a.ndim());
  return g;
}

// mode='raise' checks every index on the host before anything runs; on a GPU that would be
// a copy back and a wait inside the operator, which GPU operators never do.
IndexMode TakeModeGPU(const NodeAttrs& attrs) {
  const IndexMode mode = ParseIndexMode(attrs.Params<TakeParam>().mode);
  if (mode == IndexMode::kRaise)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': mode='raise' is not supported on GPUs (it needs the indices on the host); use mode='clip' or "
          "mode='wrap', or run on the CPU");
  return mode;
}

template <typename T, typename I>
struct TakeKernel {
  const T* a;
  const I* idx;
  T* y;
  int64_t m, n, inner;
  IndexMode mode;
  OpReq req;
  // Element e of the output (outer, m, inner).
  __device__ void operator()(int64_t e) const {
    const int64_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
    const int64_t k = cuda::ResolveIndex(cuda::ToIndex(idx[j]), n, mode);
    cuda::Store(y, e, static_cast<cuda::ComputeT<T>>(a[(o * n + k) * inner + i]), req);
  }
};

template <typename T, typename I>
struct TakeGradKernel {
  const T* g;
  const I* idx;
  T* grad;
  int64_t m, n, inner;
  IndexMode mode;
  // Element e of the output gradient (outer, m, inner) adds into its source row.
  __device__ void operator()(int64_t e) const {
    const int64_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
    const int64_t k = cuda::ResolveIndex(cuda::ToIndex(idx[j]), n, mode);
    cuda::AtomicAdd(grad + (o * n + k) * inner + i, static_cast<cuda::ComputeT<T>>(g[e]));
  }
};

void TakeComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const TakeGeom g = TakeGeomOf(attrs, in[0].shape);
  const int64_t m = in[1].Size();
  if (g.n == 0 && m > 0)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': cannot take from an empty axis ", g.axis, " of shape ",
          in[0].shape.ToString());
  const IndexMode mode = TakeModeGPU(attrs);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, I, name, {
      cuda::ForEach(out[0].Size(), s,
                    TakeKernel<T, I>{in[0].ptr<T>(), in[1].ptr<I>(), out[0].ptr<T>(), m, g.n, g.inner, mode, req[0]},
                    name);
    });
  });
}

// Inputs: ograd, indices, a (for its shape).
void TakeBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const TakeGeom g = TakeGeomOf(attrs, in[2].shape);
  const int64_t m = in[1].Size();
  const IndexMode mode = TakeModeGPU(attrs);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  const Context dev = ctx.run_ctx.ctx;
  if (req[0] != OpReq::kAddTo)
    WEFT_CUDA_CALL_ON(dev, cudaMemsetAsync(out[0].dptr, 0, out[0].Size() * DTypeSize(out[0].dtype), s));
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    WEFT_GPU_INDEX_SWITCH(in[1].dtype, I, name, {
      cuda::ForEach(in[0].Size(), s,
                    TakeGradKernel<T, I>{in[0].ptr<T>(), in[1].ptr<I>(), out[0].ptr<T>(), m, g.n, g.inner, mode},
                    name);
    });
  });
}

// ---------------------------------------------------------------- one_hot
template <typename T, typename I>
struct OneHotKernel {
  const I* idx;
  T* y;
  int64_t depth;
  cuda::ComputeT<T> on, off;
  OpReq req;
  __device__ void operator()(int64_t e) const {
    // As on the CPU: a plain conversion, so any index outside [0, depth) gives a row of
    // off values.
    const int64_t k = static_cast<int64_t>(static_cast<typename AccType<I>::type>(idx[e / depth]));
    cuda::Store(y, e, e % depth == k ? on : off, req);
  }
};

void OneHotComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const auto& p = attrs.Params<OneHotParam>();
  if (p.depth <= 0) return;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(out[0].dtype, T, name, {
    using A = cuda::ComputeT<T>;
    WEFT_GPU_INDEX_SWITCH(in[0].dtype, I, name, {
      cuda::ForEach(out[0].Size(), s,
                    OneHotKernel<T, I>{in[0].ptr<I>(), out[0].ptr<T>(), p.depth, static_cast<A>(p.on_value),
                                       static_cast<A>(p.off_value), req[0]},
                    name);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(pick).SetAttr<FCompute>("FCompute<gpu>", PickComputeGPU);
WEFT_REGISTER_OP(_backward_pick).SetAttr<FCompute>("FCompute<gpu>", PickBackwardGPU);
WEFT_REGISTER_OP(take).SetAttr<FCompute>("FCompute<gpu>", TakeComputeGPU);
WEFT_REGISTER_OP(_backward_take).SetAttr<FCompute>("FCompute<gpu>", TakeBackwardGPU);
WEFT_REGISTER_OP(one_hot).SetAttr<FCompute>("FCompute<gpu>", OneHotComputeGPU);

}  // namespace op
}  // namespace weft

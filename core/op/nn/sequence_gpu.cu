// GPU versions of SequenceMask, SequenceLast, SequenceReverse and their gradients
// (_backward_SequenceMask, _backward_SequenceLast; SequenceReverse is its own gradient).
// The lengths stay on the device: each thread reads its sequence's length and clips it as
// sequence.cc does ([0, T] for mask and reverse, [1, T] for last); without the lengths
// input every sequence is full.
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/sequence.h"

namespace weft {
namespace op {
namespace {

// The data as (T, B, R) with the time axis where `axis` says (sequence.cc's SeqView).
struct SeqGeom {
  int64_t T = 0, B = 0, R = 0;
  int axis = 0;
  __device__ int64_t Offset(int64_t t, int64_t b) const { return (axis == 0 ? t * B + b : b * T + t) * R; }
  // The (t, b) of row r of the data in memory order.
  __device__ void Split(int64_t r, int64_t* t, int64_t* b) const {
    *t = axis == 0 ? r / B : r % T;
    *b = axis == 0 ? r % B : r / T;
  }
};

SeqGeom Geom(const Shape& s, int axis) {
  SeqGeom g;
  g.axis = axis;
  g.T = s[axis];
  g.B = s[1 - axis];
  g.R = s.ProdRange(2, s.ndim());
  return g;
}

// Sequence b's length clipped to [lo, T] (T when there is no lengths input).
template <typename L>
__device__ __forceinline__ int64_t Length(const L* len, int64_t b, int64_t T, int64_t lo) {
  if (len == nullptr) return T;
  const double d = static_cast<double>(static_cast<cuda::ComputeT<L>>(len[b]));
  const int64_t n = !(d > static_cast<double>(lo)) ? lo : (d >= static_cast<double>(T) ? T : static_cast<int64_t>(d));
  return n < lo ? lo : n;
}

// Runs the code with L the lengths' type (float when there are none: the pointer is null).
#define WEFT_SEQ_LEN_SWITCH(use_len, blob, L, name, ...)                 \
  if (use_len) {                                                         \
    WEFT_GPU_TYPE_SWITCH((blob).dtype, L, name, __VA_ARGS__);            \
  } else {                                                               \
    using L = float;                                                     \
    __VA_ARGS__                                                          \
  }

template <typename T, typename L>
struct MaskFn {
  SeqGeom g;
  const L* len;
  const T* x;
  T* y;
  cuda::ComputeT<T> fill;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    int64_t t, b;
    g.Split(i / g.R, &t, &b);
    cuda::Store(y, i, t < Length(len, b, g.T, 0) ? static_cast<cuda::ComputeT<T>>(x[i]) : fill, req);
  }
};

// Forward (fill = value) and backward (fill = 0) of SequenceMask: data or ograd first.
void SequenceMaskGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out, bool backward) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceMaskParam>();
  const char* name = attrs.op->name.c_str();
  const SeqGeom g = Geom(in[0].shape, p.axis);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    // The value as the CPU has it: converted to T first.
    const auto fill = static_cast<cuda::ComputeT<T>>(static_cast<T>(backward ? 0.0 : p.value));
    WEFT_SEQ_LEN_SWITCH(p.use_sequence_length, in[1], L, name, {
      const L* len = p.use_sequence_length ? in[1].ptr<L>() : nullptr;
      cuda::ForEach(in[0].Size(), s, MaskFn<T, L>{g, len, in[0].ptr<T>(), out[0].ptr<T>(), fill, req[0]}, name);
    });
  });
}

void SequenceMaskComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SequenceMaskGPU(attrs, ctx, in, req, out, false);
}

void SequenceMaskBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SequenceMaskGPU(attrs, ctx, in, req, out, true);
}

// y[b, k] (req)= x at step len[b] - 1 of sequence b.
template <typename T, typename L>
struct LastFn {
  SeqGeom g;
  const L* len;
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    const int64_t b = i / g.R, k = i % g.R;
    const int64_t t = Length(len, b, g.T, 1) - 1;
    cuda::Store(y, i, static_cast<cuda::ComputeT<T>>(x[g.Offset(t, b) + k]), req);
  }
};

// dx at (t, b, k) (req)= g[b, k] when t is sequence b's last step, else 0.
template <typename T, typename L>
struct LastGradFn {
  SeqGeom g;
  const L* len;
  const T* gy;
  T* dx;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = cuda::ComputeT<T>;
    int64_t t, b;
    g.Split(i / g.R, &t, &b);
    const int64_t k = i % g.R;
    cuda::Store(dx, i, t == Length(len, b, g.T, 1) - 1 ? static_cast<A>(gy[b * g.R + k]) : A(0), req);
  }
};

void SequenceLastComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceLastParam>();
  const char* name = attrs.op->name.c_str();
  const SeqGeom g = Geom(in[0].shape, p.axis);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_SEQ_LEN_SWITCH(p.use_sequence_length, in[1], L, name, {
      const L* len = p.use_sequence_length ? in[1].ptr<L>() : nullptr;
      cuda::ForEach(out[0].Size(), s, LastFn<T, L>{g, len, in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
    });
  });
}

// Inputs: ograd, data (for its shape)[, sequence_length].
void SequenceLastBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceLastParam>();
  const char* name = attrs.op->name.c_str();
  const SeqGeom g = Geom(in[1].shape, p.axis);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_SEQ_LEN_SWITCH(p.use_sequence_length, in[2], L, name, {
      const L* len = p.use_sequence_length ? in[2].ptr<L>() : nullptr;
      cuda::ForEach(out[0].Size(), s, LastGradFn<T, L>{g, len, in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
    });
  });
}

// y at (t, b) (req)= x at (len[b] - 1 - t, b) when t < len[b], else x at (t, b); axis 0.
template <typename T, typename L>
struct ReverseFn {
  SeqGeom g;
  const L* len;
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    const int64_t r = i / g.R, k = i % g.R;
    const int64_t t = r / g.B, b = r % g.B;
    const int64_t n = Length(len, b, g.T, 0);
    const int64_t src = t < n ? n - 1 - t : t;
    cuda::Store(y, i, static_cast<cuda::ComputeT<T>>(x[g.Offset(src, b) + k]), req);
  }
};

void SequenceReverseComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceReverseParam>();
  const char* name = attrs.op->name.c_str();
  const SeqGeom g = Geom(in[0].shape, p.axis);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    WEFT_SEQ_LEN_SWITCH(p.use_sequence_length, in[1], L, name, {
      const L* len = p.use_sequence_length ? in[1].ptr<L>() : nullptr;
      cuda::ForEach(in[0].Size(), s, ReverseFn<T, L>{g, len, in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
    });
  });
}

#undef WEFT_SEQ_LEN_SWITCH

}  // namespace

WEFT_REGISTER_OP(SequenceMask).SetAttr<FCompute>("FCompute<gpu>", SequenceMaskComputeGPU);
WEFT_REGISTER_OP(_backward_SequenceMask).SetAttr<FCompute>("FCompute<gpu>", SequenceMaskBackwardGPU);
WEFT_REGISTER_OP(SequenceLast).SetAttr<FCompute>("FCompute<gpu>", SequenceLastComputeGPU);
WEFT_REGISTER_OP(_backward_SequenceLast).SetAttr<FCompute>("FCompute<gpu>", SequenceLastBackwardGPU);
WEFT_REGISTER_OP(SequenceReverse).SetAttr<FCompute>("FCompute<gpu>", SequenceReverseComputeGPU);

}  // namespace op
}  // namespace weft

// GPU versions of Pad and _backward_Pad. The data is seen as slices (N*C) of up to three
// spatial axes (4-D data: a leading axis of size 1), and along each axis an output
// position o reads input position o - before, or for positions outside the data: the
// constant (-1), the border (edge) or the mirror image without the border (reflect), as
// pad.cc's plan says. The forward gathers; the backward gathers too, each input element
// summing the output-gradient positions that read it (at most three ranges per axis), so
// no atomics are needed and the sums are deterministic.
#include "core/op/elemwise/elemwise_kernels.cuh"
#include "core/op/nn/pad.h"

namespace weft {
namespace op {
namespace {

enum class PadMode { kConstant, kEdge, kReflect };

struct PadAxis {
  int64_t n = 1, before = 0, out = 1;
};

struct PadGeom {
  PadAxis ax[3];
  PadMode mode = PadMode::kConstant;
  int64_t in_slice = 1, out_slice = 1;
};

PadGeom MakeGeom(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<PadParam>();
  PadGeom g;
  g.mode = p.mode == "edge" ? PadMode::kEdge : (p.mode == "reflect" ? PadMode::kReflect : PadMode::kConstant);
  const int first = 5 - data.ndim();  // 4-D data uses spatial slots 1 and 2
  for (int d = 2; d < data.ndim(); ++d) {
    PadAxis& a = g.ax[first + d - 2];
    a.n = data[d];
    a.before = p.pad_width[2 * d];
    a.out = a.n + a.before + p.pad_width[2 * d + 1];
  }
  g.in_slice = g.ax[0].n * g.ax[1].n * g.ax[2].n;
  g.out_slice = g.ax[0].out * g.ax[1].out * g.ax[2].out;
  return g;
}

// The input position output position o reads along axis a, or -1 for the constant.
__device__ __forceinline__ int64_t Source(const PadAxis& a, PadMode mode, int64_t o) {
  int64_t i = o - a.before;
  if (i >= 0 && i < a.n) return i;
  if (mode == PadMode::kConstant) return -1;
  if (mode == PadMode::kEdge) return i < 0 ? 0 : a.n - 1;
  return i < 0 ? -i : 2 * (a.n - 1) - i;
}

template <typename T>
struct PadForwardFn {
  PadGeom g;
  const T* x;
  T* y;
  cuda::ComputeT<T> fill;
  OpReq req;
  __device__ void operator()(int64_t idx) const {
    const int64_t sl = idx / g.out_slice;
    int64_t r = idx % g.out_slice;
    const int64_t ox = r % g.ax[2].out;
    r /= g.ax[2].out;
    const int64_t oy = r % g.ax[1].out, oz = r / g.ax[1].out;
    const int64_t iz = Source(g.ax[0], g.mode, oz), iy = Source(g.ax[1], g.mode, oy), ix = Source(g.ax[2], g.mode, ox);
    const cuda::ComputeT<T> v =
        (iz < 0 || iy < 0 || ix < 0)
            ? fill
            : static_cast<cuda::ComputeT<T>>(x[sl * g.in_slice + (iz * g.ax[1].n + iy) * g.ax[2].n + ix]);
    cuda::Store(y, idx, v, req);
  }
};

// The output positions that read input position i along axis a: up to three ranges
// [lo[k], hi[k]) (the interior one, and the border or mirror ones).
struct Ranges {
  int64_t lo[3], hi[3];
  int count;
};

__device__ __forceinline__ Ranges Readers(const PadAxis& a, PadMode mode, int64_t i) {
  Ranges r;
  r.count = 0;
  const int64_t after = a.out - a.n - a.before;
  auto add = [&r](int64_t lo, int64_t hi) {
    if (hi > lo) {
      r.lo[r.count] = lo;
      r.hi[r.count] = hi;
      ++r.count;
    }
  };
  add(a.before + i, a.before + i + 1);
  if (mode == PadMode::kEdge) {
    if (i == 0) add(0, a.before);
    if (i == a.n - 1) add(a.before + a.n, a.out);
  } else if (mode == PadMode::kReflect) {
    // Output o < before reads before - o, so input i (1 <= i <= before) is read at
    // before - i; output o >= before + n reads 2(n-1) - (o - before), so input i
    // (n-1-after <= i <= n-2) is read at before + 2(n-1) - i.
    if (i >= 1 && i <= a.before) add(a.before - i, a.before - i + 1);
    if (i <= a.n - 2 && i >= a.n - 1 - after) {
      const int64_t o = a.before + 2 * (a.n - 1) - i;
      add(o, o + 1);
    }
  }
  return r;
}

template <typename T>
struct PadBackwardFn {
  PadGeom g;
  const T* gy;
  T* dx;
  OpReq req;
  __device__ void operator()(int64_t idx) const {
    using A = cuda::ComputeT<T>;
    const int64_t sl = idx / g.in_slice;
    int64_t r = idx % g.in_slice;
    const int64_t ix = r % g.ax[2].n;
    r /= g.ax[2].n;
    const int64_t iy = r % g.ax[1].n, iz = r / g.ax[1].n;
    const Ranges rz = Readers(g.ax[0], g.mode, iz), ry = Readers(g.ax[1], g.mode, iy), rx = Readers(g.ax[2], g.mode, ix);
    const T* gs = gy + sl * g.out_slice;
    A acc = A(0);
    for (int a = 0; a < rz.count; ++a)
      for (int64_t oz = rz.lo[a]; oz < rz.hi[a]; ++oz)
        for (int b = 0; b < ry.count; ++b)
          for (int64_t oy = ry.lo[b]; oy < ry.hi[b]; ++oy) {
            const T* row = gs + (oz * g.ax[1].out + oy) * g.ax[2].out;
            for (int c = 0; c < rx.count; ++c)
              for (int64_t ox = rx.lo[c]; ox < rx.hi[c]; ++ox) acc += static_cast<A>(row[ox]);
          }
    cuda::Store(dx, idx, acc, req);
  }
};

void PadComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const PadGeom g = MakeGeom(attrs, in[0].shape);
  const double fill = attrs.Params<PadParam>().constant_value;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    // The constant as the CPU has it: converted to T first.
    const auto v = static_cast<cuda::ComputeT<T>>(static_cast<T>(fill));
    cuda::ForEach(out[0].Size(), cuda::StreamOf(ctx.run_ctx.stream),
                  PadForwardFn<T>{g, in[0].ptr<T>(), out[0].ptr<T>(), v, req[0]}, name);
  });
}

// Inputs: ograd, data (for its shape).
void PadBackwardGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  const PadGeom g = MakeGeom(attrs, in[1].shape);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  WEFT_GPU_TYPE_SWITCH(in[0].dtype, T, name, {
    cuda::ForEach(out[0].Size(), cuda::StreamOf(ctx.run_ctx.stream),
                  PadBackwardFn<T>{g, in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
  });
}

}  // namespace

WEFT_REGISTER_OP(Pad).SetAttr<FCompute>("FCompute<gpu>", PadComputeGPU);
WEFT_REGISTER_OP(_backward_Pad).SetAttr<FCompute>("FCompute<gpu>", PadBackwardGPU);

}  // namespace op
}  // namespace weft

// GPU versions of Activation, LeakyReLU and their `_backward_*` operators (activation.cc):
// the same formulas in the same accumulation type, one thread per element; prelu's gamma
// gradient is a block reduction per channel, and rrelu's training slopes come from the
// same Philox streams as on the CPU (element i: counter first + i, stream 0, 53 bits).
#include <vector>

#include "core/op/nn/activation_param.h"
#include "core/op/nn/nn_gpu.cuh"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {
namespace {

using nngpu::Acc;

template <typename A>
__device__ inline A Softplus(A x) {
  return x > A(20) ? x : log1p(exp(x));
}

template <typename A>
__device__ inline A Sigmoid(A x) {
  return A(1) / (A(1) + exp(-x));
}

template <Act K, typename A>
__device__ inline A ActForward(A x) {
  if constexpr (K == Act::kRelu) return x > A(0) ? x : A(0);
  if constexpr (K == Act::kSigmoid) return Sigmoid(x);
  if constexpr (K == Act::kTanh) return tanh(x);
  if constexpr (K == Act::kSoftrelu) return Softplus(x);
  if constexpr (K == Act::kSoftsign) return x / (A(1) + fabs(x));
}

template <Act K, typename A>
__device__ inline A ActDeriv(A x) {
  if constexpr (K == Act::kRelu) return x > A(0) ? A(1) : A(0);
  if constexpr (K == Act::kSigmoid) {
    A s = Sigmoid(x);
    return s * (A(1) - s);
  }
  if constexpr (K == Act::kTanh) {
    A t = tanh(x);
    return A(1) - t * t;
  }
  if constexpr (K == Act::kSoftrelu) return Sigmoid(x);
  if constexpr (K == Act::kSoftsign) {
    A d = A(1) + fabs(x);
    return A(1) / (d * d);
  }
}

template <Act K, typename T>
struct ActKernel {
  const T* x;
  T* y;
  OpReq req;
  __device__ void operator()(int64_t i) const { cuda::Store(y, i, ActForward<K>(static_cast<Acc<T>>(x[i])), req); }
};

template <Act K, typename T>
struct ActGradKernel {
  const T* g;
  const T* x;
  T* d;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = Acc<T>;
    cuda::Store(d, i, static_cast<A>(g[i]) * ActDeriv<K>(static_cast<A>(x[i])), req);
  }
};

template <typename F>
void ActDispatch(Act k, F&& f) {
  switch (k) {
    case Act::kRelu: f(std::integral_constant<Act, Act::kRelu>()); break;
    case Act::kSigmoid: f(std::integral_constant<Act, Act::kSigmoid>()); break;
    case Act::kTanh: f(std::integral_constant<Act, Act::kTanh>()); break;
    case Act::kSoftrelu: f(std::integral_constant<Act, Act::kSoftrelu>()); break;
    case Act::kSoftsign: f(std::integral_constant<Act, Act::kSoftsign>()); break;
  }
}

void ActivationComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  Act k = ParseAct(attrs.Params<ActivationParam>().act_type);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, T, name, {
    ActDispatch(k, [&](auto kc) {
      cuda::ForEach(in[0].Size(), s, ActKernel<decltype(kc)::value, T>{in[0].ptr<T>(), out[0].ptr<T>(), req[0]}, name);
    });
  });
}

void ActivationBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const char* name = attrs.op->name.c_str();
  Act k = ParseAct(attrs.Params<ActivationParam>().act_type);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, T, name, {
    ActDispatch(k, [&](auto kc) {
      cuda::ForEach(in[1].Size(), s,
                    ActGradKernel<decltype(kc)::value, T>{in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]},
                    name);
    });
  });
}

// ------------------------------------------------------------------ LeakyReLU
enum class Leaky { kLeaky, kPrelu, kElu, kSelu, kGelu, kRrelu };

Leaky ParseLeaky(const std::string& s) {
  if (s == "leaky") return Leaky::kLeaky;
  if (s == "prelu") return Leaky::kPrelu;
  if (s == "elu") return Leaky::kElu;
  if (s == "selu") return Leaky::kSelu;
  if (s == "gelu") return Leaky::kGelu;
  return Leaky::kRrelu;
}

constexpr double kSeluLambda = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// The gamma / mask element of data element i: gamma has 1 or C entries, C at axis 1 (axis
// 0 for 1-d data), as ChannelOf on the CPU.
struct ChannelOf {
  int64_t c = 1, inner = 1;
  __device__ int64_t operator()(int64_t i) const { return c == 1 ? 0 : (i / inner) % c; }
};

ChannelOf PreluChannels(const Shape& d, const Shape& g) {
  ChannelOf ch;
  if (g.Size() == 1) return ch;
  // MXNet's other gamma layouts (one slope per sample, or per sample and channel) run on the CPU.
  const int64_t c = d.ndim() >= 2 ? d[1] : d[0];
  if (g.Size() != c || g[g.ndim() - 1] != c)
    Throw(ErrorKind::kUnsupported, "LeakyReLU: prelu's gamma of shape ", g.ToString(), " for data ",
          d.ToString(), " on a GPU: only one slope or one per channel (", c, ",)");
  ch.c = g.Size();
  if (d.ndim() >= 2)
    for (int k = 2; k < d.ndim(); ++k) ch.inner *= d[k];
  return ch;
}

// Forward of every kind; `extra` is prelu's gamma or rrelu's slopes (already written).
template <Leaky K, typename T>
struct LeakyKernel {
  const T* x;
  const T* extra;
  T* y;
  ChannelOf ch;
  Acc<T> slope;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = Acc<T>;
    A v = static_cast<A>(x[i]), r;
    if constexpr (K == Leaky::kLeaky) r = v > A(0) ? v : slope * v;
    if constexpr (K == Leaky::kPrelu) r = v > A(0) ? v : static_cast<A>(extra[ch(i)]) * v;
    if constexpr (K == Leaky::kElu) r = v > A(0) ? v : slope * expm1(v);
    if constexpr (K == Leaky::kSelu)
      r = static_cast<A>(kSeluLambda) * (v > A(0) ? v : static_cast<A>(kSeluAlpha) * expm1(v));
    if constexpr (K == Leaky::kGelu) r = A(0.5) * v * (A(1) + erf(v * static_cast<A>(kInvSqrt2)));
    if constexpr (K == Leaky::kRrelu) r = v > A(0) ? v : static_cast<A>(extra[i]) * v;
    cuda::Store(y, i, r, req);
  }
};

// rrelu's slopes: lower + width * U[0, 1) from element i's Philox stream in training (the
// CPU's ElementStream::Uniform: the first two words of block 0 as a 64-bit value, top 53
// bits), the midpoint otherwise.
template <typename T>
struct RreluMaskKernel {
  Philox4x32 gen;
  uint64_t first;
  double lo, width, mid;
  bool train;
  T* mask;
  __device__ void operator()(int64_t i) const {
    if (!train) {
      mask[i] = static_cast<T>(mid);
      return;
    }
    uint32_t w[4];
    gen.Generate(first + static_cast<uint64_t>(i), 0, w);
    uint64_t bits = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    double u = static_cast<double>(bits >> 11) * 0x1p-53;
    mask[i] = static_cast<T>(lo + width * u);
  }
};

template <Leaky K, typename T>
struct LeakyGradKernel {
  const T* dy;
  const T* x;
  const T* extra;
  T* dx;
  ChannelOf ch;
  Acc<T> slope;
  OpReq req;
  __device__ void operator()(int64_t i) const {
    using A = Acc<T>;
    A v = static_cast<A>(x[i]), d;
    if constexpr (K == Leaky::kLeaky) d = v > A(0) ? A(1) : slope;
    if constexpr (K == Leaky::kPrelu) d = v > A(0) ? A(1) : static_cast<A>(extra[ch(i)]);
    if constexpr (K == Leaky::kElu) d = v > A(0) ? A(1) : slope * exp(v);
    if constexpr (K == Leaky::kSelu)
      d = static_cast<A>(kSeluLambda) * (v > A(0) ? A(1) : static_cast<A>(kSeluAlpha) * exp(v));
    if constexpr (K == Leaky::kGelu)
      d = A(0.5) * (A(1) + erf(v * static_cast<A>(kInvSqrt2))) + v * static_cast<A>(kInvSqrt2Pi) * exp(A(-0.5) * v * v);
    if constexpr (K == Leaky::kRrelu) d = v > A(0) ? A(1) : static_cast<A>(extra[i]);
    cuda::Store(dx, i, static_cast<A>(dy[i]) * d, req);
  }
};

// d gamma[c] = the sum over channel c's non-positive inputs of dy * x; one block per channel.
// Channel c's elements are the `inner`-long runs at (o * C + c) * inner, o < outer.
template <typename T>
__global__ void PreluGammaGradKernel(const T* dy, const T* x, T* dg, int64_t C, int64_t outer, int64_t inner,
                                     OpReq req) {
  using A = Acc<T>;
  __shared__ nngpu::ReduceScratch<A> scratch;
  const int64_t per = outer * inner;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    A acc = 0;
    for (int64_t j = threadIdx.x; j < per; j += blockDim.x) {
      const int64_t o = j / inner, idx = (o * C + c) * inner + (j - o * inner);
      A v = static_cast<A>(x[idx]);
      if (!(v > A(0))) acc += static_cast<A>(dy[idx]) * v;
    }
    acc = nngpu::BlockSum(acc, scratch);
    if (threadIdx.x == 0) nngpu::Put(dg + c, req, acc);
  }
}

template <typename F>
void LeakyDispatch(Leaky k, F&& f) {
  switch (k) {
    case Leaky::kLeaky: f(std::integral_constant<Leaky, Leaky::kLeaky>()); break;
    case Leaky::kPrelu: f(std::integral_constant<Leaky, Leaky::kPrelu>()); break;
    case Leaky::kElu: f(std::integral_constant<Leaky, Leaky::kElu>()); break;
    case Leaky::kSelu: f(std::integral_constant<Leaky, Leaky::kSelu>()); break;
    case Leaky::kGelu: f(std::integral_constant<Leaky, Leaky::kGelu>()); break;
    case Leaky::kRrelu: f(std::integral_constant<Leaky, Leaky::kRrelu>()); break;
  }
}

void LeakyReLUComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LeakyReLUParam>();
  const char* name = attrs.op->name.c_str();
  Leaky k = ParseLeaky(p.act_type);
  const int64_t n = in[0].Size();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[0].dtype, T, name, {
    const T* extra = nullptr;
    ChannelOf ch;
    if (k == Leaky::kPrelu) {
      extra = in[1].ptr<T>();
      ch = PreluChannels(in[0].shape, in[1].shape);
    } else if (k == Leaky::kRrelu) {
      // The slopes go to the hidden mask output first (drawn even when the output is not
      // wanted, so that the random counter advances as on the CPU); the gradient reads them.
      RreluMaskKernel<T> mk{Philox4x32(0), 0, p.lower_bound, p.upper_bound - p.lower_bound,
                            (p.lower_bound + p.upper_bound) / 2, ctx.is_train,
                            out[1].ptr<T>()};
      if (ctx.is_train) {
        random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
        mk.gen = draw.gen;
        mk.first = draw.first;
      }
      cuda::ForEach(n, s, mk, name);
      extra = out[1].ptr<T>();
    }
    if (req[0] != OpReq::kNullOp) {
      LeakyDispatch(k, [&](auto kc) {
        cuda::ForEach(n, s,
                      LeakyKernel<decltype(kc)::value, T>{in[0].ptr<T>(), extra, out[0].ptr<T>(), ch,
                                                          static_cast<Acc<T>>(p.slope), req[0]},
                      name);
      });
    }
  });
}

void LeakyReLUBackwardComputeGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LeakyReLUParam>();
  const char* name = attrs.op->name.c_str();
  Leaky k = ParseLeaky(p.act_type);
  const int64_t n = in[1].Size();
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_FLOAT_SWITCH(in[1].dtype, T, name, {
    const T* extra = k == Leaky::kPrelu || k == Leaky::kRrelu ? in[2].ptr<T>() : nullptr;
    ChannelOf ch;
    if (k == Leaky::kPrelu) ch = PreluChannels(in[1].shape, in[2].shape);
    if (req[0] != OpReq::kNullOp) {
      LeakyDispatch(k, [&](auto kc) {
        cuda::ForEach(n, s,
                      LeakyGradKernel<decltype(kc)::value, T>{in[0].ptr<T>(), in[1].ptr<T>(), extra, out[0].ptr<T>(),
                                                              ch, static_cast<Acc<T>>(p.slope), req[0]},
                      name);
      });
    }
    if (k == Leaky::kPrelu && req[1] != OpReq::kNullOp) {
      const int64_t C = in[2].Size();
      const int64_t outer = C > 0 && ch.inner > 0 ? n / (C * ch.inner) : 0;
      if (C == 1) {
        // One slope: every element is in the one "channel".
        PreluGammaGradKernel<T><<<1, nngpu::kReduceThreads, 0, s>>>(in[0].ptr<T>(), in[1].ptr<T>(), out[1].ptr<T>(),
                                                                     1, 1, n, req[1]);
      } else if (C > 0) {
        PreluGammaGradKernel<T><<<nngpu::BlocksFor(C), nngpu::kReduceThreads, 0, s>>>(
            in[0].ptr<T>(), in[1].ptr<T>(), out[1].ptr<T>(), C, outer, ch.inner, req[1]);
      }
      cuda::CheckLaunch(name);
    }
  });
}

}  // namespace

WEFT_REGISTER_OP(Activation).SetAttr<FCompute>("FCompute<gpu>", ActivationComputeGPU);
WEFT_REGISTER_OP(_backward_Activation).SetAttr<FCompute>("FCompute<gpu>", ActivationBackwardComputeGPU);
WEFT_REGISTER_OP(LeakyReLU).SetAttr<FCompute>("FCompute<gpu>", LeakyReLUComputeGPU);
WEFT_REGISTER_OP(_backward_LeakyReLU).SetAttr<FCompute>("FCompute<gpu>", LeakyReLUBackwardComputeGPU);

}  // namespace op
}  // namespace weft

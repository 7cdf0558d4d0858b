// Activation (relu, sigmoid, tanh, softrelu, softsign) and LeakyReLU
// (leaky, prelu, elu, selu, gelu, rrelu), with MXNet 1.x's parameters.
//
// Gradients: _backward_Activation(out_grad, data) and _backward_LeakyReLU(out_grad, data
// [, gamma for prelu | the slope mask for rrelu]). rrelu draws one slope per element from
// U(lower_bound, upper_bound) in training (kRandom, so weft.random.seed reproduces it) and
// keeps it in a hidden second output for the gradient; at inference the slope is the mean
// (lower_bound + upper_bound) / 2.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/base/param.h"
#include "core/op/compose_attr.h"
#include "core/op/serial_scope.h"
#include "core/op/nn/activation_param.h"
#include "core/op/nn/norm_util.h"
#include "core/op/random/sampler.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace weft {
namespace op {

namespace {

using nn::Acc;
using nn::Put;

// log(1 + exp(x)) without overflow for large x.
template <typename A>
inline A Softplus(A x) {
  return x > A(20) ? x : std::log1p(std::exp(x));
}

template <typename A>
inline A Sigmoid(A x) {
  return A(1) / (A(1) + std::exp(-x));
}

template <Act K, typename A>
inline A ActForward(A x) {
  if constexpr (K == Act::kRelu) return x > A(0) ? x : A(0);
  if constexpr (K == Act::kSigmoid) return Sigmoid(x);
  if constexpr (K == Act::kTanh) return std::tanh(x);
  if constexpr (K == Act::kSoftrelu) return Softplus(x);
  if constexpr (K == Act::kSoftsign) return x / (A(1) + std::abs(x));
}

// d f / d x at x.
template <Act K, typename A>
inline A ActDeriv(A x) {
  if constexpr (K == Act::kRelu) return x > A(0) ? A(1) : A(0);
  if constexpr (K == Act::kSigmoid) {
    A s = Sigmoid(x);
    return s * (A(1) - s);
  }
  if constexpr (K == Act::kTanh) {
    A t = std::tanh(x);
    return A(1) - t * t;
  }
  if constexpr (K == Act::kSoftrelu) return Sigmoid(x);
  if constexpr (K == Act::kSoftsign) {
    A d = A(1) + std::abs(x);
    return A(1) / (d * d);
  }
}

// Elements per thread before a loop is split: relu costs a comparison per element (64K in
// 3 us on one Zen 5 core; an MLP's (64, 512) took 1.1 us on one thread and 6-9 us split in
// two, the second thread woken for it), the others a transcendental function.
template <Act K>
constexpr int64_t ActGrain() {
  return K == Act::kRelu ? 2 * kElemGrain : kElemGrain / 4;
}

template <Act K, typename T>
void ActLoop(const TBlob& xb, const TBlob& yb, OpReq req) {
  using A = Acc<T>;
  const T* x = xb.ptr<T>();
  T* y = yb.ptr<T>();
  ParallelFor(xb.Size(), ActGrain<K>(), [&](int64_t b, int64_t e) {
    if (req == OpReq::kAddTo) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(static_cast<A>(y[i]) + ActForward<K>(static_cast<A>(x[i])));
    } else {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(ActForward<K>(static_cast<A>(x[i])));
    }
  });
}

template <Act K, typename T>
void ActGradLoop(const TBlob& gb, const TBlob& xb, const TBlob& db, OpReq req) {
  using A = Acc<T>;
  const T* g = gb.ptr<T>();
  const T* x = xb.ptr<T>();
  T* d = db.ptr<T>();
  ParallelFor(xb.Size(), ActGrain<K>(), [&](int64_t b, int64_t e) {
    if constexpr (K == Act::kRelu) {
      // The factor is the comparison converted where it is used: through ActDeriv's select
      // GCC (12, AVX2 and older) branched around g * 0, mispredicted about every other
      // element (4 % of an MLP training step's CPU time); this form vectorises.
      if (req == OpReq::kAddTo) {
        for (int64_t i = b; i < e; ++i) {
          A m = static_cast<A>(static_cast<A>(x[i]) > A(0));
          d[i] = static_cast<T>(static_cast<A>(d[i]) + static_cast<A>(g[i]) * m);
        }
      } else {
        for (int64_t i = b; i < e; ++i) {
          A m = static_cast<A>(static_cast<A>(x[i]) > A(0));
          d[i] = static_cast<T>(static_cast<A>(g[i]) * m);
        }
      }
    } else {
      for (int64_t i = b; i < e; ++i) Put(d + i, req, static_cast<A>(g[i]) * ActDeriv<K>(static_cast<A>(x[i])));
    }
  });
}

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

#if defined(WEFT_USE_ONEDNN)
// float32 transcendental activations written (not added) run oneDNN's JIT eltwise kernels
// (sigmoid 2x, tanh 30x faster than the libm loops on 6.4M elements here),
// forward and backward, on the array seen as one flat vector; primitives are cached by
// algorithm, alpha and length. (relu and leaky stay on the loops: they are bandwidth-bound
// there already.)
struct EltwisePlan {
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

dnnl::engine& EltwiseEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

const EltwisePlan& GetEltwisePlan(dnnl::algorithm alg, float alpha, int64_t n) {
  using Key = std::tuple<int, float, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<EltwisePlan>> cache;
  Key key{static_cast<int>(alg), alpha, n};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg, md, alpha, 0.0f);
  dnnl::eltwise_forward::primitive_desc fpd(fd, EltwiseEngine());
  dnnl::eltwise_backward::desc bd(alg, md, md, alpha, 0.0f);
  auto plan = std::make_unique<EltwisePlan>();
  plan->fwd = dnnl::eltwise_forward(fpd);
  plan->bwd = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(bd, EltwiseEngine(), fpd));
  return *cache.emplace(key, std::move(plan)).first->second;
}

bool EltwiseAlg(Act k, dnnl::algorithm* alg) {
  switch (k) {
    case Act::kSigmoid: *alg = dnnl::algorithm::eltwise_logistic; return true;
    case Act::kTanh: *alg = dnnl::algorithm::eltwise_tanh; return true;
    case Act::kSoftrelu: *alg = dnnl::algorithm::eltwise_soft_relu; return true;
    default: return false;
  }
}

// y = f(x) (grad == nullptr) or dx = f'(x) * dy, through oneDNN; false when not applicable.
bool DnnlEltwise(dnnl::algorithm alg, float alpha, const TBlob& x, const TBlob* dy, const TBlob& y, OpReq req) {
  if (x.dtype != DType::kFloat32 || req == OpReq::kAddTo || x.Size() == 0) return false;
  static thread_local dnnl::stream strm(EltwiseEngine());
  // oneDNN splits every call across the threads; up to 64K elements one thread is faster
  // (tanh of 32K: 6.8 us on one, 12.5 split, waking the second; of 64K: 13 against 19).
  SerialScope serial(x.Size() <= 2 * kElemGrain);
  const EltwisePlan& plan = GetEltwisePlan(alg, alpha, x.Size());
  dnnl::memory::desc md({x.Size()}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto mem = [&](const TBlob& b) { return dnnl::memory(md, EltwiseEngine(), b.dptr); };
  if (dy == nullptr) {
    plan.fwd.execute(strm, {{DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_DST, mem(y)}});
  } else {
    plan.bwd.execute(strm, {{DNNL_ARG_SRC, mem(x)}, {DNNL_ARG_DIFF_DST, mem(*dy)}, {DNNL_ARG_DIFF_SRC, mem(y)}});
  }
  strm.wait();
  return true;
}
#endif

void ActivationCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Act k = ParseAct(attrs.Params<ActivationParam>().act_type);
#if defined(WEFT_USE_ONEDNN)
  dnnl::algorithm alg;
  if (EltwiseAlg(k, &alg) && DnnlEltwise(alg, 0.0f, in[0], nullptr, out[0], req[0])) return;
#endif
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    ActDispatch(k, [&](auto kc) { ActLoop<decltype(kc)::value, T>(in[0], out[0], req[0]); });
  });
}

void ActivationBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Act k = ParseAct(attrs.Params<ActivationParam>().act_type);
#if defined(WEFT_USE_ONEDNN)
  dnnl::algorithm alg;
  if (EltwiseAlg(k, &alg) && DnnlEltwise(alg, 0.0f, in[1], &in[0], out[0], req[0])) return;
#endif
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    ActDispatch(k, [&](auto kc) { ActGradLoop<decltype(kc)::value, T>(in[0], in[1], out[0], req[0]); });
  });
}

std::vector<GradValue> ActivationGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  // relu's derivative is the same seen from the output (y > 0 exactly where x > 0): reading
  // the output lets a graph drop the input after the forward, and run relu in place.
  bool relu = ParseAct(attrs.Params<ActivationParam>().act_type) == Act::kRelu;
  return {b.Op("_backward_Activation", {a.out_grads[0], relu ? a.outputs[0] : a.inputs[0]}, attrs.dict)};
}

// The derivative of the factor _backward_Activation multiplies the out-gradient by, built from
// differentiable operators on the value it reads (the input; for relu the output).
GradValue ActivationFactorDerivative(GradBuilder& b, Act k, const GradValue& x) {
  auto mul = [&b](const GradValue& p, const GradValue& q) { return b.Op("elemwise_mul", {p, q}); };
  // s * p + c
  auto affine = [&b](const GradValue& p, double s, double c) {
    GradValue scaled = b.Op("_mul_scalar", {p}, {{"scalar", param_parse::Format(s)}});
    return b.Op("_plus_scalar", {scaled}, {{"scalar", param_parse::Format(c)}});
  };
  switch (k) {
    case Act::kRelu:
      return b.Op("zeros_like", {x});
    case Act::kSigmoid: {  // h = s (1 - s)
      GradValue s = b.Op("sigmoid", {x});
      return mul(mul(s, affine(s, -1, 1)), affine(s, -2, 1));
    }
    case Act::kTanh: {  // h = 1 - t^2
      GradValue t = b.Op("tanh", {x});
      return mul(t, affine(b.Op("square", {t}), 2, -2));
    }
    case Act::kSoftrelu: {  // h = s
      GradValue s = b.Op("sigmoid", {x});
      return mul(s, affine(s, -1, 1));
    }
    case Act::kSoftsign: {  // h = (1 + |x|)^-2
      GradValue cube = b.Op("_power_scalar", {affine(b.Op("abs", {x}), 1, 1)}, {{"scalar", "-3"}});
      return mul(affine(b.Op("sign", {x}), -2, 0), cube);
    }
  }
  return b.Op("zeros_like", {x});
}

// _backward_Activation(og, v) = og * h(v) is linear in og.
std::vector<GradValue> ActivationBackwardGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  Act k = ParseAct(attrs.Params<ActivationParam>().act_type);
  const GradValue& g = a.out_grads[0];
  const GradValue& v = a.inputs[1];
  GradValue d_og = b.Op("_backward_Activation", {g, v}, attrs.dict);
  GradValue d_v = b.Op("elemwise_mul", {b.Op("elemwise_mul", {g, a.inputs[0]}), ActivationFactorDerivative(b, k, v)});
  return {d_og, d_v};
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

int LeakyNumInputs(const NodeAttrs& attrs) {
  return ParseLeaky(attrs.Params<LeakyReLUParam>().act_type) == Leaky::kPrelu ? 2 : 1;
}
int LeakyNumOutputs(const NodeAttrs& attrs) {
  return ParseLeaky(attrs.Params<LeakyReLUParam>().act_type) == Leaky::kRrelu ? 2 : 1;
}

// prelu's gamma as MXNet lays it over data: its axes (two at most) line up from the right
// with data's axes 0 and 1, each of the data's size there or 1, so gamma is one slope, one per
// channel (C,) or (1, C), one per sample (N, 1), one per sample and channel (N, C), ...
// Fills e with gamma's size along data's axes 0 and 1; false when gamma does not fit.
bool PreluExpand(const Shape& d, const Shape& g, int64_t e[2]) {
  e[0] = e[1] = 1;
  if (!g.is_known() || g.ndim() < 1 || d.ndim() < 1) return false;
  int s = g.ndim() - 1;
  for (int i = std::min(d.ndim(), 2) - 1; i >= 0 && s >= 0; --i) {
    if (g[s] == d[i] || g[s] == 1) e[i] = g[s--];
  }
  return s == -1;
}

// `input` names gamma's argument in the operator being checked (the forward's or the gradient's).
void CheckPreluGamma(const NodeAttrs& attrs, const Shape& d, const Shape& g, const char* input) {
  int64_t e[2];
  if (!PreluExpand(d, g, e))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", input, "' of prelu must be one slope, ",
          "one per channel (", d.ndim() >= 2 ? d[1] : d[0], ",) or broadcast to data ", d.ToString(),
          " along its axes 0 and 1, got shape ", g.ToString());
}

bool LeakyReLUShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<LeakyReLUParam>();
  Leaky k = ParseLeaky(p.act_type);
  if (k == Leaky::kRrelu && !(p.lower_bound <= p.upper_bound))
    nn::BadParam(attrs, "upper_bound", "a value >= lower_bound = " + param_parse::Format(p.lower_bound),
                 param_parse::Format(p.upper_bound));
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  AssignShape(attrs, in, 0, d, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, d, "output");
  if (k == Leaky::kPrelu) {
    if (!(*in)[1].known_ndim()) (*in)[1] = Shape{d.ndim() >= 2 ? d[1] : d[0]};
    CheckPreluGamma(attrs, d, (*in)[1], "gamma");
  }
  return true;
}

// Index of the gamma slope data element i uses (gamma checked by CheckPreluGamma).
struct GammaOf {
  int64_t n0 = 1, n1 = 1;     // gamma's size along data's axes 0 and 1
  int64_t d1 = 1, inner = 1;  // data's size along axis 1, and the size of one axis-1 slice
  int64_t operator()(int64_t i) const {
    if (n0 == 1) return n1 == 1 ? 0 : (i / inner) % d1;
    const int64_t a0 = i / (inner * d1);
    return n1 == 1 ? a0 : a0 * n1 + (i / inner) % d1;
  }
};

GammaOf PreluChannels(const Shape& d, const Shape& g) {
  GammaOf ch;
  int64_t e[2];
  PreluExpand(d, g, e);
  ch.n0 = e[0];
  ch.n1 = e[1];
  if (d.ndim() >= 2) {
    ch.d1 = d[1];
    for (int k = 2; k < d.ndim(); ++k) ch.inner *= d[k];
  }
  return ch;
}

template <typename T>
void LeakyForward(const LeakyReLUParam& p, Leaky k, const OpContext& ctx, const NodeAttrs& attrs,
                  const std::vector<TBlob>& in, const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  using A = Acc<T>;
  const T* x = in[0].ptr<T>();
  T* y = out[0].ptr<T>();
  const int64_t n = in[0].Size();
  const A slope = static_cast<A>(p.slope);
  OpReq r = req[0];
  auto run = [&](auto f) {
    if (r == OpReq::kNullOp) return;
    ParallelFor(n, kElemGrain / 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Put(y + i, r, f(i, static_cast<A>(x[i])));
    });
  };
  switch (k) {
    case Leaky::kLeaky: run([&](int64_t, A v) { return v > A(0) ? v : slope * v; }); break;
    case Leaky::kPrelu: {
      const T* g = in[1].ptr<T>();
      GammaOf ch = PreluChannels(in[0].shape, in[1].shape);
      run([&](int64_t i, A v) { return v > A(0) ? v : static_cast<A>(g[ch(i)]) * v; });
      break;
    }
    case Leaky::kElu: run([&](int64_t, A v) { return v > A(0) ? v : slope * std::expm1(v); }); break;
    case Leaky::kSelu:
      run([&](int64_t, A v) {
        return static_cast<A>(kSeluLambda) * (v > A(0) ? v : static_cast<A>(kSeluAlpha) * std::expm1(v));
      });
      break;
    case Leaky::kGelu:
      run([&](int64_t, A v) { return A(0.5) * v * (A(1) + std::erf(v * static_cast<A>(kInvSqrt2))); });
      break;
    case Leaky::kRrelu: {
      // The slopes go to the hidden mask output first; the gradient reads them there.
      T* mask = out[1].ptr<T>();
      if (ctx.is_train) {
        const double lo = p.lower_bound, width = p.upper_bound - p.lower_bound;
        random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
        ParallelFor(n, random::kSampleGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            random::ElementStream s = draw.Stream(static_cast<uint64_t>(i));
            mask[i] = static_cast<T>(lo + width * s.Uniform());
          }
        });
      } else {
        const T mid = static_cast<T>((p.lower_bound + p.upper_bound) / 2);
        ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) { std::fill(mask + b, mask + e, mid); });
      }
      run([&](int64_t i, A v) { return v > A(0) ? v : static_cast<A>(mask[i]) * v; });
      break;
    }
  }
}

#if defined(WEFT_USE_ONEDNN)
// elu (alpha = slope) and gelu (erf form) have oneDNN eltwise kernels.
bool LeakyEltwiseAlg(Leaky k, dnnl::algorithm* alg) {
  if (k == Leaky::kElu) *alg = dnnl::algorithm::eltwise_elu;
  else if (k == Leaky::kGelu) *alg = dnnl::algorithm::eltwise_gelu_erf;
  else return false;
  return true;
}
#endif

void LeakyReLUCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LeakyReLUParam>();
#if defined(WEFT_USE_ONEDNN)
  dnnl::algorithm alg;
  if (req[0] != OpReq::kNullOp && LeakyEltwiseAlg(ParseLeaky(p.act_type), &alg) &&
      DnnlEltwise(alg, static_cast<float>(p.slope), in[0], nullptr, out[0], req[0]))
    return;
#endif
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, { LeakyForward<T>(p, ParseLeaky(p.act_type), ctx, attrs, in, req, out); });
}

// Inputs: out_grad, data [, gamma | mask]. Outputs: d data [, d gamma].
template <typename T>
void LeakyBackward(const LeakyReLUParam& p, Leaky k, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                   const std::vector<TBlob>& out) {
  using A = Acc<T>;
  const T* dy = in[0].ptr<T>();
  const T* x = in[1].ptr<T>();
  T* dx = out[0].ptr<T>();
  const int64_t n = in[1].Size();
  const A slope = static_cast<A>(p.slope);
  auto run = [&](auto deriv) {
    if (req[0] == OpReq::kNullOp) return;
    ParallelFor(n, kElemGrain / 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Put(dx + i, req[0], static_cast<A>(dy[i]) * deriv(i, static_cast<A>(x[i])));
    });
  };
  switch (k) {
    case Leaky::kLeaky: run([&](int64_t, A v) { return v > A(0) ? A(1) : slope; }); break;
    case Leaky::kPrelu: {
      const T* g = in[2].ptr<T>();
      GammaOf ch = PreluChannels(in[1].shape, in[2].shape);
      run([&](int64_t i, A v) { return v > A(0) ? A(1) : static_cast<A>(g[ch(i)]); });
      if (req[1] == OpReq::kNullOp) break;
      // d gamma[c] = sum over the non-positive inputs using slope c of dy * x, in one serial
      // pass (slopes interleave in memory, so threads would contend on the sums).
      const int64_t C = in[2].Size();
      T* dg = out[1].ptr<T>();
      std::vector<A> acc(static_cast<size_t>(C), A(0));
      for (int64_t i = 0; i < n; ++i) {
        A v = static_cast<A>(x[i]);
        if (!(v > A(0))) acc[static_cast<size_t>(ch(i))] += static_cast<A>(dy[i]) * v;
      }
      for (int64_t c = 0; c < C; ++c) Put(dg + c, req[1], acc[static_cast<size_t>(c)]);
      break;
    }
    case Leaky::kElu: run([&](int64_t, A v) { return v > A(0) ? A(1) : slope * std::exp(v); }); break;
    case Leaky::kSelu:
      run([&](int64_t, A v) {
        return static_cast<A>(kSeluLambda) * (v > A(0) ? A(1) : static_cast<A>(kSeluAlpha) * std::exp(v));
      });
      break;
    case Leaky::kGelu:
      run([&](int64_t, A v) {
        return A(0.5) * (A(1) + std::erf(v * static_cast<A>(kInvSqrt2))) +
               v * static_cast<A>(kInvSqrt2Pi) * std::exp(A(-0.5) * v * v);
      });
      break;
    case Leaky::kRrelu: {
      const T* mask = in[2].ptr<T>();
      run([&](int64_t i, A v) { return v > A(0) ? A(1) : static_cast<A>(mask[i]); });
      break;
    }
  }
}

void LeakyReLUBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<LeakyReLUParam>();
#if defined(WEFT_USE_ONEDNN)
  dnnl::algorithm alg;
  if (req[0] != OpReq::kNullOp && LeakyEltwiseAlg(ParseLeaky(p.act_type), &alg) &&
      DnnlEltwise(alg, static_cast<float>(p.slope), in[1], &in[0], out[0], req[0]))
    return;
#endif
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, { LeakyBackward<T>(p, ParseLeaky(p.act_type), in, req, out); });
}

int LeakyBackwardNumInputs(const NodeAttrs& attrs) {
  Leaky k = ParseLeaky(attrs.Params<LeakyReLUParam>().act_type);
  return k == Leaky::kPrelu || k == Leaky::kRrelu ? 3 : 2;
}

bool LeakyReLUBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  Leaky k = ParseLeaky(attrs.Params<LeakyReLUParam>().act_type);
  if (k == Leaky::kRrelu) AssignShape(attrs, in, 2, d, "input");
  if (k == Leaky::kPrelu) {
    if (!(*in)[2].is_known()) return false;
    // The gradient reads gamma at each element's channel, as the forward does.
    CheckPreluGamma(attrs, d, (*in)[2], "extra");
    AssignShape(attrs, out, 1, (*in)[2], "output");
  }
  return true;
}

std::vector<GradValue> LeakyReLUGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  Leaky k = ParseLeaky(attrs.Params<LeakyReLUParam>().act_type);
  if (k == Leaky::kPrelu) return b.Call("_backward_LeakyReLU", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
  if (k == Leaky::kRrelu) return {b.Op("_backward_LeakyReLU", {a.out_grads[0], a.inputs[0], a.outputs[1]}, attrs.dict)};
  return {b.Op("_backward_LeakyReLU", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
}

}  // namespace

WEFT_REGISTER_OP(Activation)
    .Describe("Elementwise activation: relu, sigmoid, tanh, softrelu or softsign.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetParams<ActivationParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", ActivationCompute)
    .SetAttr<FGradient>("FGradient", ActivationGrad);

WEFT_REGISTER_OP(_backward_Activation)
    .Describe("Gradient of Activation: (out_grad, data) -> d data.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .SetParams<ActivationParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", ActivationBackwardCompute)
    .SetAttr<FGradient>("FGradient", ActivationBackwardGrad);

WEFT_REGISTER_OP(LeakyReLU)
    .Describe("Leaky rectifiers: leaky, prelu (learned gamma), elu, selu, gelu, rrelu (random slope in training).")
    .SetNumInputs(LeakyNumInputs)
    .SetNumOutputs(LeakyNumOutputs)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .AddArgument("gamma", "NDArray-or-Symbol", "prelu's slopes: one, or one per channel")
    .SetParams<LeakyReLUParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs& attrs) {
                                 return LeakyNumOutputs(attrs) == 2
                                            ? std::vector<ResourceRequest>{ResourceRequest{ResourceType::kRandom}}
                                            : std::vector<ResourceRequest>{};
                               })
    .SetAttr<FInferShape>("FInferShape", LeakyReLUShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", LeakyReLUCompute)
    .SetAttr<FSetInputVarAttrOnCompose>("FSetInputVarAttrOnCompose",
                                        [](const NodeAttrs&, int index, KwArgs* var_dict) {
                                          // gamma (PReLU's slope) starts at 0.25 unless the
                                          // variable says otherwise, as in MXNet.
                                          if (index != 1) return;
                                          for (const auto& kv : *var_dict)
                                            if (kv.first == "__init__") return;
                                          var_dict->emplace_back("__init__", R"(["Constant", {"value": 0.25}])");
                                        })
    .SetAttr<FGradient>("FGradient", LeakyReLUGrad);

WEFT_REGISTER_OP(_backward_LeakyReLU)
    .Describe("Gradient of LeakyReLU: (out_grad, data [, gamma | mask]) -> d data [, d gamma].")
    .SetNumInputs(LeakyBackwardNumInputs)
    .SetNumOutputs(LeakyNumInputs)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("extra", "NDArray-or-Symbol", "prelu's gamma or rrelu's slopes")
    .SetParams<LeakyReLUParam>()
    .SetAttr<FInferShape>("FInferShape", LeakyReLUBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", LeakyReLUBackwardCompute);

}  // namespace op
}  // namespace weft

// GPU versions of the multi-tensor update operators (sgd.cc: multi_sgd_update,
// multi_sgd_mom_update, multi_mp_sgd_update, multi_mp_sgd_mom_update and their
// preloaded_multi_* forms; multi_update.cc: _multi_adamw_update, _multi_mp_adamw_update,
// _multi_lamb_update, _multi_mp_lamb_update, _contrib_group_adagrad_update).
// A group of parameters is updated by one kernel launch (one per kMaxTensors tensors and
// per weight dtype, see optimizer_gpu.cuh), running the CPU kernels' formulas (update_math.h).
// The preloaded forms' learning rates and weight decays, and AdamW's rescale factor, stay
// on the device and are read by the kernel.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/op/optimizer/optimizer_gpu.cuh"
#include "core/op/optimizer/optimizer_params.h"

namespace weft {
namespace op {
namespace optim_gpu {

// Every input of each group of k has the size of its weight; those from `first_f32` on are
// float32 (the multi-precision states), the others the weight's dtype; the outputs have
// the weights' sizes. A hand-called operator with ill-fitting arrays errors here.
void CheckMultiGroups(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out, int n,
                      int k, int first_f32) {
  for (int w = 0; w < n; ++w) {
    const TBlob& weight = in[static_cast<size_t>(w) * k];
    for (int j = 1; j < k; ++j) {
      const size_t idx = static_cast<size_t>(w) * k + j;
      const TBlob& b = in[idx];
      const DType want = j >= first_f32 ? DType::kFloat32 : weight.dtype;
      if (b.Size() != weight.Size() || b.dtype != want)
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", idx, ": expected ", DTypeName(want),
              " of weight ", w, "'s shape ", weight.shape.ToString(), ", got ", DTypeName(b.dtype), " of shape ",
              b.shape.ToString());
    }
    if (out[w].Size() != weight.Size() || out[w].dtype != weight.dtype)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output ", w, ": expected ", DTypeName(weight.dtype),
            " of weight ", w, "'s shape ", weight.shape.ToString(), ", got ", DTypeName(out[w].dtype), " of shape ",
            out[w].shape.ToString());
  }
}

// The float32 rate arrays of the preloaded forms, after the groups.
void CheckRates(const NodeAttrs& attrs, const std::vector<TBlob>& in, int n, int k) {
  for (int j = 0; j < 2; ++j) {
    const TBlob& b = in[static_cast<size_t>(n) * k + j];
    if (b.dtype != DType::kFloat32 || b.Size() != n)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input '", j == 0 ? "lrs" : "wds",
            "' must be a float32 array of ", n, " values, got ", DTypeName(b.dtype), " of shape ", b.shape.ToString());
  }
}

template <typename P>
void CheckPerWeight(const NodeAttrs& attrs, const P& p) {
  for (const auto* v : {&p.lrs, &p.wds})
    if (static_cast<int>(v->size()) != p.num_weights)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", v == &p.lrs ? "lrs" : "wds",
            "' must hold one value per weight (num_weights = ", p.num_weights, "), got ", v->size());
}

// The tensors of a group by weight dtype (one launch series per dtype), skipping those
// whose output is not wanted. Pointer slots: the group's k inputs, then the output at
// slot `out_slot`.
struct Buckets {
  std::vector<TensorEntry> f32, f64, f16, bf16;
  std::vector<TensorEntry>& Of(const NodeAttrs& attrs, DType t) {
    switch (t) {
      case DType::kFloat32: return f32;
      case DType::kFloat64: return f64;
      case DType::kFloat16: return f16;
      case DType::kBfloat16: return bf16;
      default:
        Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
              "': on GPUs, expected float32, float64, float16 or bfloat16 weights, got ", DTypeName(t));
    }
  }
};

Buckets Collect(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out, int n, int k, int out_slot, const std::vector<double>* lrs,
                const std::vector<double>* wds, const std::vector<double>* etas) {
  Buckets b;
  for (int w = 0; w < n; ++w) {
    if (req[w] == OpReq::kNullOp) continue;
    const size_t base = static_cast<size_t>(w) * k;
    TensorEntry e{};
    for (int j = 0; j < k; ++j) e.ptr[j] = in[base + j].dptr;
    e.ptr[out_slot] = out[w].dptr;
    e.size = in[base].Size();
    e.lr = lrs ? (*lrs)[w] : 0;
    e.wd = wds ? (*wds)[w] : 0;
    e.eta = etas ? (*etas)[w] : 0;
    e.index = w;
    e.add = req[w] == OpReq::kAddTo;
    b.Of(attrs, in[base].dtype).push_back(e);
  }
  return b;
}

// ---------------------------------------------------------------- SGD family
// Slots: 0 weight, 1 grad, then mom and/or weight32 as the group holds them, output last.
// lrs/wds: the preloaded forms' device arrays (null: the table's rates).
template <typename T, bool MOM, bool MP>
void LaunchSGD(const std::vector<TensorEntry>& e, const float* lrs, const float* wds, double momentum,
               double rescale, double clip, cudaStream_t s, const char* name) {
  constexpr int kOut = 2 + (MOM ? 1 : 0) + (MP ? 1 : 0);
  using A = std::conditional_t<MP, float, typename AccType<T>::type>;
  LaunchMulti<5>(e, s, [=] __device__(const Table<5>& t, int k, int64_t i) {
    // The rates as the CPU receives them (doubles, from the float32 arrays of the
    // preloaded forms). Every capture is first used here: extended lambdas may not first
    // capture inside an if constexpr branch.
    const double lr = lrs ? static_cast<double>(lrs[t.index[k]]) : t.lr[k];
    const double wd = wds ? static_cast<double>(wds[t.index[k]]) : t.wd[k];
    const double mu = momentum, rs = rescale, cb = clip;
    const T* g = static_cast<const T*>(t.ptr[k][1]);
    T* o = static_cast<T*>(t.ptr[k][kOut]);
    const A gi = static_cast<A>(g[i]);
    // The momentum and master-copy states are A (float for MP) in both forms.
    using S = std::conditional_t<MP, float, T>;
    S* w32 = MP ? static_cast<S*>(t.ptr[k][MOM ? 3 : 2]) : nullptr;
    const A wi = MP ? static_cast<A>(w32[i]) : static_cast<A>(static_cast<const T*>(t.ptr[k][0])[i]);
    A nw;
    if constexpr (MOM) {
      S* mom = static_cast<S*>(t.ptr[k][2]);
      A m = static_cast<A>(mom[i]);
      nw = optim::SGDMom<A>(lr, mu, wd, rs, cb).Step(wi, gi, m);
      mom[i] = static_cast<S>(m);
    } else {
      nw = optim::SGD<A>(lr, wd, rs, cb).Step(wi, gi);
    }
    if (MP) w32[i] = static_cast<S>(nw);
    Put(o, i, nw, t.add[k]);
  }, name);
}

template <bool MOM, bool MP, bool PRELOADED, typename P>
void MultiSGDGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<P>();
  const char* name = attrs.op->name.c_str();
  const int n = p.num_weights, k = 2 + (MOM ? 1 : 0) + (MP ? 1 : 0);
  CheckMultiGroups(attrs, in, out, n, k, MP ? 2 : k);
  const float* lrs = nullptr;
  const float* wds = nullptr;
  const std::vector<double>* plrs = nullptr;
  const std::vector<double>* pwds = nullptr;
  if constexpr (PRELOADED) {
    CheckRates(attrs, in, n, k);
    lrs = in[static_cast<size_t>(n) * k].ptr<float>();
    wds = in[static_cast<size_t>(n) * k + 1].ptr<float>();
  } else {
    CheckPerWeight(attrs, p);
    plrs = &p.lrs;
    pwds = &p.wds;
  }
  double momentum = 0;
  if constexpr (MOM) momentum = p.momentum;
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  Buckets b = Collect(attrs, in, req, out, n, k, k, plrs, pwds, nullptr);
  if (!b.f32.empty()) LaunchSGD<float, MOM, MP>(b.f32, lrs, wds, momentum, p.rescale_grad, p.clip_gradient, s, name);
  if (!b.f64.empty()) LaunchSGD<double, MOM, MP>(b.f64, lrs, wds, momentum, p.rescale_grad, p.clip_gradient, s, name);
  if (!b.f16.empty())
    LaunchSGD<float16, MOM, MP>(b.f16, lrs, wds, momentum, p.rescale_grad, p.clip_gradient, s, name);
  if (!b.bf16.empty())
    LaunchSGD<bfloat16, MOM, MP>(b.bf16, lrs, wds, momentum, p.rescale_grad, p.clip_gradient, s, name);
}

// ---------------------------------------------------------------- multi AdamW
// Slots: 0 weight, 1 grad, 2 mean, 3 var, 4 weight32 (MP), then the output. The rescale
// factor is read as the CPU reads it (its accumulation type, then double); a non-finite or
// zero factor skips the step: every output receives its weight, states stay as they are.
template <typename T, bool MP, typename R>
void LaunchAdamW(const std::vector<TensorEntry>& e, const R* scale, const MultiAdamWParam& p, cudaStream_t s,
                 const char* name) {
  constexpr int kOut = MP ? 5 : 4;
  using M = std::conditional_t<MP, float, T>;
  using A = typename AccType<M>::type;
  const double b1d = p.beta1, b2d = p.beta2, epsd = p.epsilon, clip = p.clip_gradient;
  LaunchMulti<6>(e, s, [=] __device__(const Table<6>& t, int k, int64_t i) {
    const double sd = static_cast<double>(static_cast<typename AccType<R>::type>(scale[0]));
    const T* w = static_cast<const T*>(t.ptr[k][0]);
    T* o = static_cast<T*>(t.ptr[k][kOut]);
    if (optim::AdamWSkips(sd)) {
      Put(o, i, static_cast<typename AccType<T>::type>(w[i]), t.add[k]);
      return;
    }
    const T* g = static_cast<const T*>(t.ptr[k][1]);
    M* mean = static_cast<M*>(t.ptr[k][2]);
    M* var = static_cast<M*>(t.ptr[k][3]);
    M* w32 = MP ? static_cast<M*>(t.ptr[k][4]) : nullptr;
    const optim::AdamW<A> f(t.lr[k], b1d, b2d, epsd, t.wd[k], t.eta[k], sd, clip);
    const A wi = w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]);
    A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
    const A nw = f.Step(wi, static_cast<A>(g[i]), m, v);
    mean[i] = static_cast<M>(m);
    var[i] = static_cast<M>(v);
    if (w32) w32[i] = static_cast<M>(nw);
    Put(o, i, nw, t.add[k]);
  }, name);
}

template <bool MP>
void MultiAdamWGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiAdamWParam>();
  const char* name = attrs.op->name.c_str();
  const int n = p.num_weights, k = MP ? 5 : 4;
  for (const auto* v : {&p.lrs, &p.wds, &p.etas})
    if (static_cast<int>(v->size()) != n)
      Throw(ErrorKind::kValue, "Operator '", name, "': parameters 'lrs', 'wds' and 'etas' must hold one value per ",
            "weight (num_weights = ", n, "), got ", v->size());
  CheckMultiGroups(attrs, in, out, n, k, MP ? 2 : k);
  const TBlob& scale = in[static_cast<size_t>(n) * k];
  if (!IsFloatDType(scale.dtype) || scale.Size() != 1)
    Throw(ErrorKind::kShape, "Operator '", name, "': input ", static_cast<size_t>(n) * k,
          " (rescale_grad): expected a floating-point array of one value, got ", DTypeName(scale.dtype), " of shape ",
          scale.shape.ToString());
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  Buckets b = Collect(attrs, in, req, out, n, k, k, &p.lrs, &p.wds, &p.etas);
  WEFT_GPU_UPDATE_TYPE_SWITCH(scale.dtype, R, name, {
    const R* sp = scale.ptr<R>();
    if (!b.f32.empty()) LaunchAdamW<float, MP, R>(b.f32, sp, p, s, name);
    if (!b.f64.empty()) LaunchAdamW<double, MP, R>(b.f64, sp, p, s, name);
    if (!b.f16.empty()) LaunchAdamW<float16, MP, R>(b.f16, sp, p, s, name);
    if (!b.bf16.empty()) LaunchAdamW<bfloat16, MP, R>(b.bf16, sp, p, s, name);
  });
}

// ---------------------------------------------------------------- multi LAMB
// One block per tensor does both phases: the moments and the direction d with the sums of
// squares of the weight (as given, not the master copy, as on the CPU) and of d, in double;
// a shared-memory reduction gives the block the two norms and the trust ratio; a second
// pass over the tensor takes the step, recomputing d from the stored moments (the values
// the first pass computed, exactly, where the moments are float32 or float64). The table
// holds up to kMaxTensors tensors per launch.
struct LambTable {
  void* ptr[kMaxTensors][6];  // weight, grad, mean, var, weight32 (or null), output
  int64_t size[kMaxTensors];
  double lr[kMaxTensors], wd[kMaxTensors], c1[kMaxTensors], c2[kMaxTensors];
  bool add[kMaxTensors];
};

struct LambScalars {
  double beta1, beta2, epsilon, rescale, clip, lower, upper;
};

template <typename T, typename M>
__global__ void __launch_bounds__(cuda::kBlockThreads) MultiLambKernel(const LambTable t, const LambScalars c) {
  using A = typename AccType<M>::type;
  __shared__ double ssw_part[cuda::kBlockThreads];
  __shared__ double ssd_part[cuda::kBlockThreads];
  const int k = blockIdx.x;
  const int64_t n = t.size[k];
  const T* w = static_cast<const T*>(t.ptr[k][0]);
  const T* gr = static_cast<const T*>(t.ptr[k][1]);
  M* mean = static_cast<M*>(t.ptr[k][2]);
  M* var = static_cast<M*>(t.ptr[k][3]);
  M* w32 = static_cast<M*>(t.ptr[k][4]);
  T* o = static_cast<T*>(t.ptr[k][5]);
  const optim::LambDirection<A> f(c.beta1, c.beta2, c.epsilon, t.wd[k], c.rescale, c.clip, t.c1[k], t.c2[k]);
  double ssw = 0, ssd = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const A wi = w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]);
    A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
    const A d = f.Step(wi, static_cast<A>(gr[i]), m, v);
    mean[i] = static_cast<M>(m);
    var[i] = static_cast<M>(v);
    const double wv = static_cast<double>(static_cast<typename AccType<T>::type>(w[i]));
    ssw += wv * wv;
    ssd += static_cast<double>(d) * static_cast<double>(d);
  }
  ssw_part[threadIdx.x] = ssw;
  ssd_part[threadIdx.x] = ssd;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      ssw_part[threadIdx.x] += ssw_part[threadIdx.x + stride];
      ssd_part[threadIdx.x] += ssd_part[threadIdx.x + stride];
    }
    __syncthreads();
  }
  // The norms and the step size in double, then rounded once to A, as on the CPU.
  const A step = static_cast<A>(optim::LambStepSize(optim::Sqrt(ssw_part[0]), optim::Sqrt(ssd_part[0]), t.lr[k],
                                                    c.lower, c.upper));
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const A wi = w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]);
    const A nw = optim::LambApply(wi, f.Direction(wi, static_cast<A>(mean[i]), static_cast<A>(var[i])), step);
    if (w32) w32[i] = static_cast<M>(nw);
    Put(o, i, nw, t.add[k]);
  }
}

template <typename T, typename M>
void LaunchLamb(const std::vector<TensorEntry>& e, const MultiLAMBParam& p, cudaStream_t s, const char* name) {
  const LambScalars c{p.beta1, p.beta2, p.epsilon, p.rescale_grad, p.clip_gradient, p.lower_bound, p.upper_bound};
  for (size_t first = 0; first < e.size(); first += kMaxTensors) {
    LambTable t{};
    const size_t count = std::min<size_t>(kMaxTensors, e.size() - first);
    for (size_t j = 0; j < count; ++j) {
      const TensorEntry& te = e[first + j];
      for (int q = 0; q < 6; ++q) t.ptr[j][q] = te.ptr[q];
      t.size[j] = te.size;
      t.lr[j] = te.lr;
      t.wd[j] = te.wd;
      // The bias corrections of the tensor's own step count, once per tensor as on the CPU.
      const double steps = te.eta;
      t.c1[j] = optim::LambCorrection(p.bias_correction, p.beta1, steps);
      t.c2[j] = optim::LambCorrection(p.bias_correction, p.beta2, steps);
      t.add[j] = te.add;
    }
    MultiLambKernel<T, M><<<static_cast<unsigned>(count), cuda::kBlockThreads, 0, s>>>(t, c);
    cuda::CheckLaunch(name);
  }
}

template <bool MP>
void MultiLambGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiLAMBParam>();
  const char* name = attrs.op->name.c_str();
  const int n = p.num_tensors, k = MP ? 5 : 4;
  for (const auto* v : {&p.learning_rates, &p.wds, &p.step_count})
    if (static_cast<int>(v->size()) != n)
      Throw(ErrorKind::kValue, "Operator '", name, "': parameters 'learning_rates', 'wds' and 'step_count' must ",
            "hold one value per tensor (num_tensors = ", n, "), got ", v->size());
  CheckMultiGroups(attrs, in, out, n, k, MP ? 2 : k);
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  // Slots 0-3 (4 with the master copy) are the group, slot 5 the output; the step count
  // travels in the entry's third rate.
  Buckets b = Collect(attrs, in, req, out, n, k, 5, &p.learning_rates, &p.wds, &p.step_count);
  if constexpr (MP) {
    if (!b.f32.empty()) LaunchLamb<float, float>(b.f32, p, s, name);
    if (!b.f64.empty()) LaunchLamb<double, float>(b.f64, p, s, name);
    if (!b.f16.empty()) LaunchLamb<float16, float>(b.f16, p, s, name);
    if (!b.bf16.empty()) LaunchLamb<bfloat16, float>(b.bf16, p, s, name);
  } else {
    if (!b.f32.empty()) LaunchLamb<float, float>(b.f32, p, s, name);
    if (!b.f64.empty()) LaunchLamb<double, double>(b.f64, p, s, name);
    if (!b.f16.empty()) LaunchLamb<float16, float16>(b.f16, p, s, name);
    if (!b.bf16.empty()) LaunchLamb<bfloat16, bfloat16>(b.bf16, p, s, name);
  }
}

// ---------------------------------------------------------------- group AdaGrad
// One block per row: the mean of the row's squared clipped gradients (a shared-memory
// reduction in the accumulation type) updates the row's history, then the row's step.
template <typename T>
__global__ void __launch_bounds__(cuda::kBlockThreads)
    GroupAdagradKernel(const T* w, const T* g, T* hist, T* o, int64_t cols, double lr_d, double rs_d, double clip,
                       double eps_d, bool add) {
  using A = typename AccType<T>::type;
  __shared__ A part[cuda::kBlockThreads];
  const int64_t r = blockIdx.x;
  const optim::GroupAdagrad<A> f(lr_d, eps_d, rs_d, clip);
  A ss = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const A gi = f.grad(static_cast<A>(g[r * cols + c]));
    ss += gi * gi;
  }
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  const A h = f.History(static_cast<A>(hist[r]), part[0], cols);
  const A scale = f.Scale(h);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const int64_t i = r * cols + c;
    Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), scale), add);
  }
  // Every thread has read hist[r] (above, after the reduction's barriers); one writes it.
  __syncthreads();
  if (threadIdx.x == 0) hist[r] = static_cast<T>(h);
}

void GroupAdagradGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<GroupAdagradParam>();
  const char* name = attrs.op->name.c_str();
  const TBlob& weight = in[0];
  const int64_t rows = weight.shape.ndim() > 0 ? weight.shape[0] : 0;
  if (in[1].Size() != weight.Size() || in[1].dtype != weight.dtype)
    Throw(ErrorKind::kShape, "Operator '", name, "': input 1: expected the weight's dtype and shape ",
          weight.shape.ToString(), ", got ", DTypeName(in[1].dtype), " of shape ", in[1].shape.ToString());
  if (in[2].Size() != rows || in[2].dtype != weight.dtype)
    Throw(ErrorKind::kShape, "Operator '", name, "': input 2: expected one value per row (", rows,
          ") in the weight's dtype, got ", DTypeName(in[2].dtype), " of shape ", in[2].shape.ToString());
  if (out[0].Size() != weight.Size() || out[0].dtype != weight.dtype)
    Throw(ErrorKind::kShape, "Operator '", name, "': output of shape ", out[0].shape.ToString(),
          " for a weight of shape ", weight.shape.ToString());
  if (rows == 0) return;
  const int64_t cols = weight.Size() / rows;
  if (rows > INT32_MAX)
    Throw(ErrorKind::kUnsupported, "Operator '", name, "': more than 2^31 rows on a GPU");
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);
  WEFT_GPU_UPDATE_TYPE_SWITCH(weight.dtype, T, name, {
    GroupAdagradKernel<T><<<static_cast<unsigned>(rows), cuda::kBlockThreads, 0, s>>>(
        weight.ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), cols, p.lr, p.rescale_grad,
        p.clip_gradient, p.epsilon, req[0] == OpReq::kAddTo);
  });
  cuda::CheckLaunch(name);
}

}  // namespace optim_gpu

using optim_gpu::MultiSGDGPU;

WEFT_REGISTER_OP(multi_sgd_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<false, false, false, MultiSGDParam>);
WEFT_REGISTER_OP(multi_sgd_mom_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<true, false, false, MultiSGDMomParam>);
WEFT_REGISTER_OP(multi_mp_sgd_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<false, true, false, MultiSGDParam>);
WEFT_REGISTER_OP(multi_mp_sgd_mom_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<true, true, false, MultiSGDMomParam>);
WEFT_REGISTER_OP(preloaded_multi_sgd_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<false, false, true, PreloadedMultiSGDParam>);
WEFT_REGISTER_OP(preloaded_multi_sgd_mom_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<true, false, true, PreloadedMultiSGDMomParam>);
WEFT_REGISTER_OP(preloaded_multi_mp_sgd_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<false, true, true, PreloadedMultiSGDParam>);
WEFT_REGISTER_OP(preloaded_multi_mp_sgd_mom_update)
    .SetAttr<FCompute>("FCompute<gpu>", MultiSGDGPU<true, true, true, PreloadedMultiSGDMomParam>);
WEFT_REGISTER_OP(_multi_adamw_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiAdamWGPU<false>);
WEFT_REGISTER_OP(_multi_mp_adamw_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiAdamWGPU<true>);
WEFT_REGISTER_OP(_multi_lamb_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiLambGPU<false>);
WEFT_REGISTER_OP(_multi_mp_lamb_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MultiLambGPU<true>);
WEFT_REGISTER_OP(_contrib_group_adagrad_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::GroupAdagradGPU);

}  // namespace op
}  // namespace weft

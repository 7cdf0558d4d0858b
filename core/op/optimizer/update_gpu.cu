// GPU versions of the single-tensor update operators (sgd.cc, adam.cc, adaptive.cc): one
// elementwise kernel per call running the CPU kernels' formulas (update_math.h), in the
// same accumulation type (float for float16 and bfloat16 weights), with the formula built
// from the double hyper-parameters on the host as the CPU code builds it. Scalars that live in arrays
// (AdamW's rescale_grad, LAMB's norms) are read by the kernel itself, so nothing waits for
// the device.
#include <cmath>
#include <vector>

#include "core/op/optimizer/optimizer_gpu.cuh"
#include "core/op/optimizer/optimizer_params.h"

namespace weft {
namespace op {
namespace optim_gpu {

// Every array the kernels index must hold the weight's number of elements, in the weight's
// dtype before `first_f32` and in float32 from there (the multi-precision states); a
// hand-called operator with ill-fitting arrays errors instead of reading out of bounds.
void CheckInputs(const NodeAttrs& attrs, const std::vector<TBlob>& in, size_t count, size_t first_f32,
                 const std::vector<TBlob>& out) {
  const int64_t n = in[0].Size();
  for (size_t i = 1; i < count; ++i) {
    const DType want = i >= first_f32 ? DType::kFloat32 : in[0].dtype;
    if (in[i].Size() != n || in[i].dtype != want)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i, ": expected ", DTypeName(want),
            " of the weight's shape ", in[0].shape.ToString(), ", got ", DTypeName(in[i].dtype), " of shape ",
            in[i].shape.ToString());
  }
  if (out[0].Size() != n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': output of shape ", out[0].shape.ToString(),
          " for a weight of shape ", in[0].shape.ToString());
}

// A one-element array the kernel reads (a norm, a rescale factor).
void CheckScalar(const NodeAttrs& attrs, const TBlob& b, const char* name, bool float32_only) {
  if (b.Size() != 1 || (float32_only ? b.dtype != DType::kFloat32 : !IsFloatDType(b.dtype)))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", name, "': expected ",
          float32_only ? "float32" : "a floating dtype", " of one value, got ", DTypeName(b.dtype), " of shape ",
          b.shape.ToString());
}

#define WEFT_GPU_UPDATE_PROLOGUE(P)                                    \
  if (req[0] == OpReq::kNullOp) return;                                \
  const auto& p = attrs.Params<P>();                                   \
  const char* name = attrs.op->name.c_str();                           \
  cuda::DeviceGuard guard(ctx.run_ctx.ctx.dev_id);                     \
  cudaStream_t s = cuda::StreamOf(ctx.run_ctx.stream);                 \
  const bool add = req[0] == OpReq::kAddTo;                            \
  const int64_t n = in[0].Size();

void SGDUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SGDParam);
  CheckInputs(attrs, in, 2, 2, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::SGD<A> f(p.lr, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i])), add);
    }, name);
  });
}

void SGDMomUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SGDMomParam);
  CheckInputs(attrs, in, 3, 3, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mom = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::SGDMom<A> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A m = static_cast<A>(mom[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
      mom[i] = static_cast<T>(m);
      Put(o, i, nw, add);
    }, name);
  });
}

void MPSGDUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SGDParam);
  CheckInputs(attrs, in, 3, 2, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const T* g = in[1].ptr<T>();
    float* w32 = in[2].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::SGD<float> f(p.lr, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float nw = f.Step(w32[i], static_cast<float>(g[i]));
      w32[i] = nw;
      Put(o, i, nw, add);
    }, name);
  });
}

void MPSGDMomUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SGDMomParam);
  CheckInputs(attrs, in, 4, 2, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const T* g = in[1].ptr<T>();
    float* mom = in[2].ptr<float>();
    float* w32 = in[3].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::SGDMom<float> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      float m = mom[i];
      const float nw = f.Step(w32[i], static_cast<float>(g[i]), m);
      mom[i] = m;
      w32[i] = nw;
      Put(o, i, nw, add);
    }, name);
  });
}

void NAGMomUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(NAGMomParam);
  CheckInputs(attrs, in, 3, 3, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mom = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::NAG<A> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A m = static_cast<A>(mom[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
      mom[i] = static_cast<T>(m);
      Put(o, i, nw, add);
    }, name);
  });
}

void MPNAGMomUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(NAGMomParam);
  CheckInputs(attrs, in, 4, 2, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const T* g = in[1].ptr<T>();
    float* mom = in[2].ptr<float>();
    float* w32 = in[3].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::NAG<float> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      float m = mom[i];
      const float nw = f.Step(w32[i], static_cast<float>(g[i]), m);
      mom[i] = m;
      w32[i] = nw;
      Put(o, i, nw, add);
    }, name);
  });
}

void SignSGDUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SignSGDParam);
  CheckInputs(attrs, in, 2, 2, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::SignSGD<A> f(p.lr, p.wd, p.rescale_grad);
    ForEach(n, s, [=] __device__(int64_t i) {
      Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i])), add);
    }, name);
  });
}

void SignumUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(SignumParam);
  CheckInputs(attrs, in, 3, 3, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mom = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Signum<A> f(p.lr, p.momentum, p.wd, p.wd_lh, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A m = static_cast<A>(mom[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
      mom[i] = static_cast<T>(m);
      Put(o, i, nw, add);
    }, name);
  });
}

void AdamUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(AdamParam);
  CheckInputs(attrs, in, 4, 4, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mean = in[2].ptr<T>();
    T* var = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Adam<A> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m, v);
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, nw, add);
    }, name);
  });
}

void AdamWUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(AdamWParam);
  CheckInputs(attrs, in, 4, 4, out);
  CheckScalar(attrs, in[4], "rescale_grad", false);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[4].dtype, R, name, {
    const R* scale = in[4].ptr<R>();
    WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
      using A = typename AccType<T>::type;
      const T* w = in[0].ptr<T>();
      const T* g = in[1].ptr<T>();
      T* mean = in[2].ptr<T>();
      T* var = in[3].ptr<T>();
      T* o = out[0].ptr<T>();
      // Built with a rescale of 1: each thread sets the factor it reads from the device.
      const optim::AdamW<A> base(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.eta, 1.0, p.clip_gradient);
      ForEach(n, s, [=] __device__(int64_t i) {
        // The factor is read in double first, as the CPU's skip test reads it.
        const double sd = static_cast<double>(static_cast<typename AccType<R>::type>(scale[0]));
        const A wi = static_cast<A>(w[i]);
        if (optim::AdamWSkips(sd)) {
          Put(o, i, wi, add);
          return;
        }
        optim::AdamW<A> f = base;
        f.grad.rs = static_cast<A>(sd);
        A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
        const A nw = f.Step(wi, static_cast<A>(g[i]), m, v);
        mean[i] = static_cast<T>(m);
        var[i] = static_cast<T>(v);
        Put(o, i, nw, add);
      }, name);
    });
  });
}

void MPAdamWUpdateGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(AdamWParam);
  CheckInputs(attrs, in, 5, 2, out);
  CheckScalar(attrs, in[5], "rescale_grad", true);
  const float* scale = in[5].ptr<float>();
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    float* mean = in[2].ptr<float>();
    float* var = in[3].ptr<float>();
    float* w32 = in[4].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::AdamW<float> base(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.eta, 1.0, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float rs = scale[0];
      if (optim::AdamWSkips(static_cast<double>(rs))) {
        // The CPU copies the weight itself (not the master copy) on a skipped step.
        Put(o, i, static_cast<typename AccType<T>::type>(w[i]), add);
        return;
      }
      optim::AdamW<float> f = base;
      f.grad.rs = rs;
      float m = mean[i], v = var[i];
      const float nw = f.Step(w32[i], static_cast<float>(g[i]), m, v);
      mean[i] = m;
      var[i] = v;
      w32[i] = nw;
      Put(o, i, nw, add);
    }, name);
  });
}

void LambPhase1GPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(LambPhase1Param);
  CheckInputs(attrs, in, 4, 4, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mean = in[2].ptr<T>();
    T* var = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::LambDirection<A> f(p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                    optim::LambCorrection(p.bias_correction, p.beta1, p.t),
                                    optim::LambCorrection(p.bias_correction, p.beta2, p.t));
    ForEach(n, s, [=] __device__(int64_t i) {
      A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
      const A d = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m, v);
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, d, add);
    }, name);
  });
}

void MPLambPhase1GPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(LambPhase1Param);
  CheckInputs(attrs, in, 5, 2, out);
  if (out[0].dtype != DType::kFloat32)
    Throw(ErrorKind::kType, "Operator '", name, "': expected a float32 output, got ", DTypeName(out[0].dtype));
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const T* g = in[1].ptr<T>();
    float* mean = in[2].ptr<float>();
    float* var = in[3].ptr<float>();
    const float* w32 = in[4].ptr<float>();
    float* o = out[0].ptr<float>();
    const optim::LambDirection<float> f(p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                        optim::LambCorrection(p.bias_correction, p.beta1, p.t),
                                        optim::LambCorrection(p.bias_correction, p.beta2, p.t));
    ForEach(n, s, [=] __device__(int64_t i) {
      float m = mean[i], v = var[i];
      const float d = f.Step(w32[i], static_cast<float>(g[i]), m, v);
      mean[i] = m;
      var[i] = v;
      Put(o, i, d, add);
    }, name);
  });
}

void LambPhase2GPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(LambPhase2Param);
  CheckInputs(attrs, in, 2, 2, out);
  for (size_t i : {size_t{2}, size_t{3}})
    if (in[i].Size() != 1 || in[i].dtype != in[0].dtype)
      Throw(ErrorKind::kShape, "Operator '", name, "': input '", i == 2 ? "r1" : "r2", "': expected ",
            DTypeName(in[0].dtype), " of one value, got ", DTypeName(in[i].dtype), " of shape ", in[i].shape.ToString());
  const double lr = p.lr, lower = p.lower_bound, upper = p.upper_bound;
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    const T* r1 = in[2].ptr<T>();
    const T* r2 = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    ForEach(n, s, [=] __device__(int64_t i) {
      const A step = optim::LambStepSize(static_cast<A>(r1[0]), static_cast<A>(r2[0]), lr, lower, upper);
      Put(o, i, optim::LambApply(static_cast<A>(w[i]), static_cast<A>(g[i]), step), add);
    }, name);
  });
}

void MPLambPhase2GPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(LambPhase2Param);
  for (size_t i : {size_t{1}, size_t{4}})
    if (in[i].Size() != n || in[i].dtype != DType::kFloat32)
      Throw(ErrorKind::kShape, "Operator '", name, "': input ", i, ": expected float32 of the weight's shape ",
            in[0].shape.ToString(), ", got ", DTypeName(in[i].dtype), " of shape ", in[i].shape.ToString());
  CheckScalar(attrs, in[2], "r1", true);
  CheckScalar(attrs, in[3], "r2", true);
  if (out[0].Size() != n)
    Throw(ErrorKind::kShape, "Operator '", name, "': output of shape ", out[0].shape.ToString(),
          " for a weight of shape ", in[0].shape.ToString());
  const double lr = p.lr, lower = p.lower_bound, upper = p.upper_bound;
  const float* r1 = in[2].ptr<float>();
  const float* r2 = in[3].ptr<float>();
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    const float* g = in[1].ptr<float>();
    float* w32 = in[4].ptr<float>();
    T* o = out[0].ptr<T>();
    ForEach(n, s, [=] __device__(int64_t i) {
      const float step = optim::LambStepSize(r1[0], r2[0], lr, lower, upper);
      const float nw = optim::LambApply(w32[i], g[i], step);
      w32[i] = nw;
      Put(o, i, nw, add);
    }, name);
  });
}

void RMSPropGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(RMSPropParam);
  CheckInputs(attrs, in, 3, 3, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* nst = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::RMSProp<A> f(p.lr, p.gamma1, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient, p.clip_weights);
    ForEach(n, s, [=] __device__(int64_t i) {
      A ni = static_cast<A>(nst[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ni);
      nst[i] = static_cast<T>(ni);
      Put(o, i, nw, add);
    }, name);
  });
}

void RMSPropAlexGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(RMSPropAlexParam);
  CheckInputs(attrs, in, 5, 5, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* nst = in[2].ptr<T>();
    T* gm = in[3].ptr<T>();
    T* delta = in[4].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::RMSPropAlex<A> f(p.lr, p.gamma1, p.gamma2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                  p.clip_weights);
    ForEach(n, s, [=] __device__(int64_t i) {
      A ni = static_cast<A>(nst[i]), gi = static_cast<A>(gm[i]), di = static_cast<A>(delta[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ni, gi, di);
      nst[i] = static_cast<T>(ni);
      gm[i] = static_cast<T>(gi);
      delta[i] = static_cast<T>(di);
      Put(o, i, nw, add);
    }, name);
  });
}

void AdagradGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(AdagradParam);
  CheckInputs(attrs, in, 3, 3, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* h = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Adagrad<A> f(p.lr, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A hi = static_cast<A>(h[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), hi);
      h[i] = static_cast<T>(hi);
      Put(o, i, nw, add);
    }, name);
  });
}

void AdaDeltaGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(AdaDeltaParam);
  CheckInputs(attrs, in, 4, 4, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* acc_g = in[2].ptr<T>();
    T* acc_d = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::AdaDelta<A> f(p.rho, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A ag = static_cast<A>(acc_g[i]), ad = static_cast<A>(acc_d[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ag, ad);
      acc_g[i] = static_cast<T>(ag);
      acc_d[i] = static_cast<T>(ad);
      Put(o, i, nw, add);
    }, name);
  });
}

void FtrlGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(FtrlParam);
  CheckInputs(attrs, in, 4, 4, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* z = in[2].ptr<T>();
    T* nst = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Ftrl<A> f(p.lr, p.lamda1, p.beta, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      A zi = static_cast<A>(z[i]), ni = static_cast<A>(nst[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), zi, ni);
      z[i] = static_cast<T>(zi);
      nst[i] = static_cast<T>(ni);
      Put(o, i, nw, add);
    }, name);
  });
}

void FtmlGPU(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  WEFT_GPU_UPDATE_PROLOGUE(FtmlParam);
  CheckInputs(attrs, in, 5, 5, out);
  WEFT_GPU_UPDATE_TYPE_SWITCH(in[0].dtype, T, name, {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* d = in[2].ptr<T>();
    T* v = in[3].ptr<T>();
    T* z = in[4].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Ftml<A> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.t, p.rescale_grad, p.clip_grad);
    ForEach(n, s, [=] __device__(int64_t i) {
      A di = static_cast<A>(d[i]), vi = static_cast<A>(v[i]), zi = static_cast<A>(z[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), di, vi, zi);
      v[i] = static_cast<T>(vi);
      z[i] = static_cast<T>(zi);
      d[i] = static_cast<T>(di);
      Put(o, i, nw, add);
    }, name);
  });
}

#undef WEFT_GPU_UPDATE_PROLOGUE

}  // namespace optim_gpu

WEFT_REGISTER_OP(sgd_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::SGDUpdateGPU);
WEFT_REGISTER_OP(sgd_mom_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::SGDMomUpdateGPU);
WEFT_REGISTER_OP(mp_sgd_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPSGDUpdateGPU);
WEFT_REGISTER_OP(mp_sgd_mom_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPSGDMomUpdateGPU);
WEFT_REGISTER_OP(nag_mom_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::NAGMomUpdateGPU);
WEFT_REGISTER_OP(mp_nag_mom_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPNAGMomUpdateGPU);
WEFT_REGISTER_OP(signsgd_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::SignSGDUpdateGPU);
WEFT_REGISTER_OP(signum_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::SignumUpdateGPU);
WEFT_REGISTER_OP(adam_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AdamUpdateGPU);
WEFT_REGISTER_OP(_adamw_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AdamWUpdateGPU);
WEFT_REGISTER_OP(_mp_adamw_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPAdamWUpdateGPU);
WEFT_REGISTER_OP(lamb_update_phase1).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::LambPhase1GPU);
WEFT_REGISTER_OP(lamb_update_phase2).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::LambPhase2GPU);
WEFT_REGISTER_OP(mp_lamb_update_phase1).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPLambPhase1GPU);
WEFT_REGISTER_OP(mp_lamb_update_phase2).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::MPLambPhase2GPU);
WEFT_REGISTER_OP(rmsprop_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::RMSPropGPU);
WEFT_REGISTER_OP(rmspropalex_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::RMSPropAlexGPU);
WEFT_REGISTER_OP(adagrad_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AdagradGPU);
WEFT_REGISTER_OP(_sparse_adagrad_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AdagradGPU);
WEFT_REGISTER_OP(adadelta_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::AdaDeltaGPU);
WEFT_REGISTER_OP(ftrl_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::FtrlGPU);
WEFT_REGISTER_OP(ftml_update).SetAttr<FCompute>("FCompute<gpu>", optim_gpu::FtmlGPU);

}  // namespace op
}  // namespace weft

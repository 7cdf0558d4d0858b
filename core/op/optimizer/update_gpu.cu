// GPU versions of the single-tensor update operators (sgd.cc, adam.cc, adaptive.cc): one
// elementwise kernel per call, the same formulas as the CPU kernels, term for term, in the
// same accumulation type (float for float16 and bfloat16 weights), with the hyper-parameters converted
// from double on the host as the CPU code converts them. Scalars that live in arrays
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
    const A lr = static_cast<A>(p.lr), decay = A(1) - lr * static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad);
    const A cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      Put(o, i, decay * static_cast<A>(w[i]) - lr * Clip(rs * static_cast<A>(g[i]), cb), add);
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
    const A lr = static_cast<A>(p.lr), mu = static_cast<A>(p.momentum), lr_wd = lr * static_cast<A>(p.wd);
    const A rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A m = mu * static_cast<A>(mom[i]) - lr_wd * wi - lr * Clip(rs * static_cast<A>(g[i]), cb);
      mom[i] = static_cast<T>(m);
      Put(o, i, wi + m, add);
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
    const float lr = static_cast<float>(p.lr), decay = 1.f - lr * static_cast<float>(p.wd);
    const float rs = static_cast<float>(p.rescale_grad), cb = ClipBound<float>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float nw = decay * w32[i] - lr * Clip(rs * static_cast<float>(g[i]), cb);
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
    const float lr = static_cast<float>(p.lr), mu = static_cast<float>(p.momentum);
    const float lr_wd = lr * static_cast<float>(p.wd);
    const float rs = static_cast<float>(p.rescale_grad), cb = ClipBound<float>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float m = mu * mom[i] - lr_wd * w32[i] - lr * Clip(rs * static_cast<float>(g[i]), cb);
      const float nw = w32[i] + m;
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
    const A lr = static_cast<A>(p.lr), mu = static_cast<A>(p.momentum), wd = static_cast<A>(p.wd);
    const A rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A step = Clip(rs * static_cast<A>(g[i]), cb) + wd * wi;
      const A m = mu * static_cast<A>(mom[i]) + step;
      mom[i] = static_cast<T>(m);
      Put(o, i, wi - lr * (mu * m + step), add);
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
    const float lr = static_cast<float>(p.lr), mu = static_cast<float>(p.momentum), wd = static_cast<float>(p.wd);
    const float rs = static_cast<float>(p.rescale_grad), cb = ClipBound<float>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float wi = w32[i];
      const float step = Clip(rs * static_cast<float>(g[i]), cb) + wd * wi;
      const float m = mu * mom[i] + step;
      const float nw = wi - lr * (mu * m + step);
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
    const A lr = static_cast<A>(p.lr), decay = A(1) - lr * static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad);
    // Clipping never changes a sign: only the rescale matters, as on the CPU.
    ForEach(n, s, [=] __device__(int64_t i) {
      Put(o, i, decay * static_cast<A>(w[i]) - lr * Sign(rs * static_cast<A>(g[i])), add);
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
    const A lr = static_cast<A>(p.lr), mu = static_cast<A>(p.momentum), one_mu = A(1) - mu;
    const A wd = static_cast<A>(p.wd), decay = A(1) - lr * static_cast<A>(p.wd_lh);
    const A rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A m = mu * static_cast<A>(mom[i]) - one_mu * wd * wi - one_mu * Clip(rs * static_cast<A>(g[i]), cb);
      mom[i] = static_cast<T>(m);
      Put(o, i, decay * wi + lr * Sign(m), add);
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
    const A lr = static_cast<A>(p.lr), b1 = static_cast<A>(p.beta1), b2 = static_cast<A>(p.beta2);
    const A eps = static_cast<A>(p.epsilon), wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad);
    const A cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]) + wd * wi, cb);
      const A m = b1 * static_cast<A>(mean[i]) + (A(1) - b1) * gr;
      const A v = b2 * static_cast<A>(var[i]) + (A(1) - b2) * gr * gr;
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, wi - lr * m / (sqrt(v) + eps), add);
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
      const A lr = static_cast<A>(p.lr), b1 = static_cast<A>(p.beta1), b2 = static_cast<A>(p.beta2);
      const A eps = static_cast<A>(p.epsilon), wd = static_cast<A>(p.wd), eta = static_cast<A>(p.eta);
      const A cb = ClipBound<A>(p.clip_gradient);
      ForEach(n, s, [=] __device__(int64_t i) {
        // The factor is read in double first, as the CPU's skip test reads it.
        const double sd = static_cast<double>(static_cast<typename AccType<R>::type>(scale[0]));
        const A wi = static_cast<A>(w[i]);
        if (!isfinite(sd) || sd == 0) {
          Put(o, i, wi, add);
          return;
        }
        const A rs = static_cast<A>(sd);
        const A gr = Clip(rs * static_cast<A>(g[i]), cb);
        const A m = b1 * static_cast<A>(mean[i]) + (A(1) - b1) * gr;
        const A v = b2 * static_cast<A>(var[i]) + (A(1) - b2) * gr * gr;
        mean[i] = static_cast<T>(m);
        var[i] = static_cast<T>(v);
        Put(o, i, wi - eta * (lr * m / (sqrt(v) + eps) + wd * wi), add);
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
    const float lr = static_cast<float>(p.lr), b1 = static_cast<float>(p.beta1), b2 = static_cast<float>(p.beta2);
    const float eps = static_cast<float>(p.epsilon), wd = static_cast<float>(p.wd), eta = static_cast<float>(p.eta);
    const float cb = ClipBound<float>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const float rs = scale[0];
      if (!isfinite(rs) || rs == 0.f) {
        // The CPU copies the weight itself (not the master copy) on a skipped step.
        Put(o, i, static_cast<typename AccType<T>::type>(w[i]), add);
        return;
      }
      const float wi = w32[i];
      const float gr = Clip(rs * static_cast<float>(g[i]), cb);
      const float m = b1 * mean[i] + (1.f - b1) * gr;
      const float v = b2 * var[i] + (1.f - b2) * gr * gr;
      mean[i] = m;
      var[i] = v;
      const float nw = wi - eta * (lr * m / (sqrt(v) + eps) + wd * wi);
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
    const A b1 = static_cast<A>(p.beta1), b2 = static_cast<A>(p.beta2), eps = static_cast<A>(p.epsilon);
    const A wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    const A c1 = p.bias_correction ? static_cast<A>(1.0 / (1.0 - std::pow(p.beta1, p.t))) : A(1);
    const A c2 = p.bias_correction ? static_cast<A>(1.0 / (1.0 - std::pow(p.beta2, p.t))) : A(1);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A gr = Clip(rs * static_cast<A>(g[i]), cb);
      const A m = b1 * static_cast<A>(mean[i]) + (A(1) - b1) * gr;
      const A v = b2 * static_cast<A>(var[i]) + (A(1) - b2) * gr * gr;
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, (m * c1) / (sqrt(v * c2) + eps) + wd * static_cast<A>(w[i]), add);
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
    const float b1 = static_cast<float>(p.beta1), b2 = static_cast<float>(p.beta2);
    const float eps = static_cast<float>(p.epsilon), wd = static_cast<float>(p.wd);
    const float rs = static_cast<float>(p.rescale_grad), cb = ClipBound<float>(p.clip_gradient);
    const float c1 = p.bias_correction ? static_cast<float>(1.0 / (1.0 - std::pow(p.beta1, p.t))) : 1.f;
    const float c2 = p.bias_correction ? static_cast<float>(1.0 / (1.0 - std::pow(p.beta2, p.t))) : 1.f;
    ForEach(n, s, [=] __device__(int64_t i) {
      const float gr = Clip(rs * static_cast<float>(g[i]), cb);
      const float m = b1 * mean[i] + (1.f - b1) * gr;
      const float v = b2 * var[i] + (1.f - b2) * gr * gr;
      mean[i] = m;
      var[i] = v;
      Put(o, i, (m * c1) / (sqrt(v * c2) + eps) + wd * w32[i], add);
    }, name);
  });
}

// LAMB's trust ratio from the two norms, as the CPU computes it: r1 bounded, 1 when
// either norm is zero.
template <typename A>
__device__ inline A LambStep(A r1, A r2, double lr, double lower, double upper) {
  if (lower >= 0) r1 = r1 < static_cast<A>(lower) ? static_cast<A>(lower) : r1;
  if (upper >= 0) r1 = static_cast<A>(upper) < r1 ? static_cast<A>(upper) : r1;
  const A ratio = (r1 == A(0) || r2 == A(0)) ? A(1) : r1 / r2;
  return static_cast<A>(lr) * ratio;
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
      const A step = LambStep(static_cast<A>(r1[0]), static_cast<A>(r2[0]), lr, lower, upper);
      Put(o, i, static_cast<A>(w[i]) - step * static_cast<A>(g[i]), add);
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
      const float step = LambStep(r1[0], r2[0], lr, lower, upper);
      const float nw = w32[i] - step * g[i];
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
    const A lr = static_cast<A>(p.lr), g1 = static_cast<A>(p.gamma1), eps = static_cast<A>(p.epsilon);
    const A wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad);
    const A cb = ClipBound<A>(p.clip_gradient), cw = ClipBound<A>(p.clip_weights);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]) + wd * wi, cb);
      const A ni = (A(1) - g1) * gr * gr + g1 * static_cast<A>(nst[i]);
      nst[i] = static_cast<T>(ni);
      Put(o, i, Clip(wi - lr * gr / sqrt(ni + eps), cw), add);
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
    const A lr = static_cast<A>(p.lr), g1 = static_cast<A>(p.gamma1), g2 = static_cast<A>(p.gamma2);
    const A eps = static_cast<A>(p.epsilon), wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad);
    const A cb = ClipBound<A>(p.clip_gradient), cw = ClipBound<A>(p.clip_weights);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]) + wd * wi, cb);
      const A ni = (A(1) - g1) * gr * gr + g1 * static_cast<A>(nst[i]);
      const A gi = (A(1) - g1) * gr + g1 * static_cast<A>(gm[i]);
      const A di = g2 * static_cast<A>(delta[i]) - lr * gr / sqrt(ni - gi * gi + eps);
      nst[i] = static_cast<T>(ni);
      gm[i] = static_cast<T>(gi);
      delta[i] = static_cast<T>(di);
      Put(o, i, Clip(wi + di, cw), add);
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
    const A lr = static_cast<A>(p.lr), eps = static_cast<A>(p.epsilon), wd = static_cast<A>(p.wd);
    const A rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]), cb);
      const A hi = static_cast<A>(h[i]) + gr * gr;
      h[i] = static_cast<T>(hi);
      Put(o, i, wi - lr * (gr / sqrt(hi + eps) + wd * wi), add);
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
    const A rho = static_cast<A>(p.rho), eps = static_cast<A>(p.epsilon), wd = static_cast<A>(p.wd);
    const A rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]), cb);
      const A ag = rho * static_cast<A>(acc_g[i]) + (A(1) - rho) * gr * gr;
      const A d = sqrt(static_cast<A>(acc_d[i]) + eps) / sqrt(ag + eps) * gr;
      acc_g[i] = static_cast<T>(ag);
      acc_d[i] = static_cast<T>(rho * static_cast<A>(acc_d[i]) + (A(1) - rho) * d * d);
      Put(o, i, wi - d - wd * wi, add);
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
    const A lr = static_cast<A>(p.lr), l1 = static_cast<A>(p.lamda1), beta = static_cast<A>(p.beta);
    const A wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_gradient);
    ForEach(n, s, [=] __device__(int64_t i) {
      const A gr = Clip(rs * static_cast<A>(g[i]), cb);
      const A ni = static_cast<A>(nst[i]);
      const A nn = ni + gr * gr;
      const A zi = static_cast<A>(z[i]) + gr - (sqrt(nn) - sqrt(ni)) * static_cast<A>(w[i]) / lr;
      z[i] = static_cast<T>(zi);
      nst[i] = static_cast<T>(nn);
      const A nw = fabs(zi) > l1 ? (Sign(zi) * l1 - zi) / ((beta + sqrt(nn)) / lr + wd) : A(0);
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
    const A b1 = static_cast<A>(p.beta1), b2 = static_cast<A>(p.beta2), eps = static_cast<A>(p.epsilon);
    const A wd = static_cast<A>(p.wd), rs = static_cast<A>(p.rescale_grad), cb = ClipBound<A>(p.clip_grad);
    const A d_scale = static_cast<A>((1.0 - std::pow(p.beta1, p.t)) / p.lr);
    const A v_scale = static_cast<A>(1.0 / (1.0 - std::pow(p.beta2, p.t)));
    ForEach(n, s, [=] __device__(int64_t i) {
      const A wi = static_cast<A>(w[i]);
      const A gr = Clip(rs * static_cast<A>(g[i]) + wd * wi, cb);
      const A vi = b2 * static_cast<A>(v[i]) + (A(1) - b2) * gr * gr;
      const A dt = d_scale * (sqrt(vi * v_scale) + eps);
      const A zi = b1 * static_cast<A>(z[i]) + (A(1) - b1) * gr - (dt - b1 * static_cast<A>(d[i])) * wi;
      v[i] = static_cast<T>(vi);
      z[i] = static_cast<T>(zi);
      d[i] = static_cast<T>(dt);
      Put(o, i, -zi / dt, add);
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

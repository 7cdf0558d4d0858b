// The per-element formulas of the update operators, written once for the CPU loops
// (sgd.cc, adam.cc, adaptive.cc, multi_update.cc) and the CUDA kernels (update_gpu.cu,
// multi_update_gpu.cu): the CPU tests then check the arithmetic the GPU runs, and a
// change to a formula reaches both devices.
//
// Each formula is a struct built from the operator's double hyper-parameters, converted
// once to the compute type A (float for float16/bfloat16/float32 weights and for every
// multi-precision form, double for float64), with a Step that maps one element's weight,
// gradient and states (passed in and out in A) to the new weight. The callers load and
// store the arrays, in their own dtypes, and apply the write request (Put). Terms are in
// the order MXNet 1.x's kernels use; the CPU build's results do not depend on this file
// being shared (each expression is the one the CPU loops had).
//
// The CUDA compiler may contract a*b + c into one fused multiply-add where the host
// compiler does not (and the reverse), so a GPU result can differ from the CPU's in the
// last bits; the formula is the same.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/base/macros.h"

namespace weft {
namespace op {
namespace optim {

// MXNet's convention: a negative clip bound means "no clipping". Clipping against an
// infinite bound leaves every value (NaN included) as it is, so the loops need no branch.
template <typename A>
WEFT_HOST_DEVICE inline A ClipBound(double clip) {
  return clip >= 0 ? static_cast<A>(clip) : static_cast<A>(INFINITY);
}

// std::min(std::max(x, -b), b), spelled out so that it compiles for the device and passes
// NaN through exactly as the standard functions do.
template <typename A>
WEFT_HOST_DEVICE inline A Clip(A x, A b) {
  const A lo = x < -b ? -b : x;
  return b < lo ? b : lo;
}

template <typename A>
WEFT_HOST_DEVICE inline A Sign(A x) {
  return static_cast<A>((x > A(0)) - (x < A(0)));
}

// sqrt and |x| in A's own precision on either device (CUDA's device overloads for float
// are global functions; the host's are std::).
template <typename A>
WEFT_HOST_DEVICE inline A Sqrt(A x) {
#if defined(__CUDA_ARCH__)
  return sqrt(x);
#else
  return std::sqrt(x);
#endif
}

template <typename A>
WEFT_HOST_DEVICE inline A Abs(A x) {
#if defined(__CUDA_ARCH__)
  return fabs(x);
#else
  return std::fabs(x);
#endif
}

template <typename A>
WEFT_HOST_DEVICE inline bool IsFinite(A x) {
#if defined(__CUDA_ARCH__)
  return isfinite(x);
#else
  return std::isfinite(x);
#endif
}

// Writes the new weight `v` into out[i] as the request says (kNullOp never reaches the
// kernels: an update whose weight output is not wanted does nothing, as in MXNet).
template <typename T, typename A>
WEFT_HOST_DEVICE inline void Put(T* out, int64_t i, A v, bool add) {
  out[i] = add ? static_cast<T>(static_cast<A>(out[i]) + v) : static_cast<T>(v);
}

// g = clip(rescale_grad * grad), the gradient every formula starts from.
template <typename A>
struct GradTransform {
  A rs, cb;
  WEFT_HOST_DEVICE GradTransform(double rescale, double clip) : rs(static_cast<A>(rescale)), cb(ClipBound<A>(clip)) {}
  WEFT_HOST_DEVICE A operator()(A g) const { return Clip(rs * g, cb); }
  // With the weight decay folded into the gradient before clipping (Adam, RMSProp, FTML).
  WEFT_HOST_DEVICE A WithDecay(A g, A wd, A w) const { return Clip(rs * g + wd * w, cb); }
};

// ---------------------------------------------------------------- SGD family
// sgd:     w = (1 - lr*wd) * w - lr * g
template <typename A>
struct SGD {
  A lr, decay;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE SGD(double lr_, double wd, double rescale, double clip)
      : lr(static_cast<A>(lr_)), decay(A(1) - static_cast<A>(lr_) * static_cast<A>(wd)), grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g) const { return decay * w - lr * grad(g); }
};

// sgd_mom: mom = momentum*mom - lr*wd*w - lr*g;  w = w + mom
template <typename A>
struct SGDMom {
  A lr, mu, lr_wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE SGDMom(double lr_, double momentum, double wd, double rescale, double clip)
      : lr(static_cast<A>(lr_)),
        mu(static_cast<A>(momentum)),
        lr_wd(static_cast<A>(lr_) * static_cast<A>(wd)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& mom) const {
    const A m = mu * mom - lr_wd * w - lr * grad(g);
    mom = m;
    return w + m;
  }
};

// nag:     m = momentum*mom;  mom = m - lr*(g + wd*w);  w = w - m + (momentum+1) * mom
// (MXNet 1.x's nag_mom_update: the momentum holds lr-scaled steps, as in sgd_mom_update)
template <typename A>
struct NAG {
  A lr, mu, wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE NAG(double lr_, double momentum, double wd_, double rescale, double clip)
      : lr(static_cast<A>(lr_)), mu(static_cast<A>(momentum)), wd(static_cast<A>(wd_)), grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& mom) const {
    const A m = mu * mom;
    const A next = m - lr * (grad(g) + wd * w);
    mom = next;
    return w - m + (mu + A(1)) * next;
  }
};

// signsgd: w = (1 - lr*wd) * w - lr * sign(g). Clipping never changes a sign, so only the
// rescale (its sign) matters.
template <typename A>
struct SignSGD {
  A lr, decay, rs;
  WEFT_HOST_DEVICE SignSGD(double lr_, double wd, double rescale)
      : lr(static_cast<A>(lr_)), decay(A(1) - static_cast<A>(lr_) * static_cast<A>(wd)), rs(static_cast<A>(rescale)) {}
  WEFT_HOST_DEVICE A Step(A w, A g) const { return decay * w - lr * Sign(rs * g); }
};

// signum:  mom = momentum*mom - (1-momentum) * (wd*w + g);  w = (1 - lr*wd_lh) * w + lr * sign(mom)
template <typename A>
struct Signum {
  A lr, mu, one_mu, wd, decay;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE Signum(double lr_, double momentum, double wd_, double wd_lh, double rescale, double clip)
      : lr(static_cast<A>(lr_)),
        mu(static_cast<A>(momentum)),
        one_mu(A(1) - static_cast<A>(momentum)),
        wd(static_cast<A>(wd_)),
        decay(A(1) - static_cast<A>(lr_) * static_cast<A>(wd_lh)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& mom) const {
    const A m = mu * mom - one_mu * wd * w - one_mu * grad(g);
    mom = m;
    return decay * w + lr * Sign(m);
  }
};

// ---------------------------------------------------------------- Adam family
// The moments of Adam, AdamW and LAMB: mean = beta1*mean + (1-beta1)*g;
// var = beta2*var + (1-beta2)*g^2.
template <typename A>
WEFT_HOST_DEVICE inline void AdamMoments(A g, A b1, A b2, A& mean, A& var) {
  mean = b1 * mean + (A(1) - b1) * g;
  var = b2 * var + (A(1) - b2) * g * g;
}

// adam:    g = clip(rescale_grad*grad + wd*w); moments; w -= lr * mean / (sqrt(var) + epsilon)
template <typename A>
struct Adam {
  A lr, b1, b2, eps, wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE Adam(double lr_, double beta1, double beta2, double epsilon, double wd_, double rescale, double clip)
      : lr(static_cast<A>(lr_)),
        b1(static_cast<A>(beta1)),
        b2(static_cast<A>(beta2)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& mean, A& var) const {
    AdamMoments(grad.WithDecay(g, wd, w), b1, b2, mean, var);
    return w - lr * mean / (Sqrt(var) + eps);
  }
};

// adamw:   g = clip(rescale_grad*grad); moments; w -= eta * (lr * mean / (sqrt(var) + epsilon) + wd*w).
// The rescale factor comes from an array; AdamWSkips says when it marks a step to skip.
template <typename A>
struct AdamW {
  A lr, b1, b2, eps, wd, eta;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE AdamW(double lr_, double beta1, double beta2, double epsilon, double wd_, double eta_,
                         double rescale, double clip)
      : lr(static_cast<A>(lr_)),
        b1(static_cast<A>(beta1)),
        b2(static_cast<A>(beta2)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        eta(static_cast<A>(eta_)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& mean, A& var) const {
    AdamMoments(grad(g), b1, b2, mean, var);
    return w - eta * (lr * mean / (Sqrt(var) + eps) + wd * w);
  }
};

// A non-finite or zero rescale factor marks a step whose gradients overflowed (a loss
// scaler's verdict): the update is skipped, the output receives the weight.
WEFT_HOST_DEVICE inline bool AdamWSkips(double scale) { return !IsFinite(scale) || scale == 0; }

// LAMB's bias correction 1 / (1 - beta^t), 1 when off. Computed on the host only: the
// device's pow may round differently.
inline double LambCorrection(bool on, double beta, double t) { return on ? 1.0 / (1.0 - std::pow(beta, t)) : 1.0; }

// lamb phase 1: g = clip(rescale_grad*grad); moments;
//               direction = mean*c1 / (sqrt(var*c2) + epsilon) + wd*w
template <typename A>
struct LambDirection {
  A b1, b2, eps, wd, c1, c2;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE LambDirection(double beta1, double beta2, double epsilon, double wd_, double rescale, double clip,
                                 double corr1, double corr2)
      : b1(static_cast<A>(beta1)),
        b2(static_cast<A>(beta2)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        c1(static_cast<A>(corr1)),
        c2(static_cast<A>(corr2)),
        grad(rescale, clip) {}
  // The direction from the updated moments (the multi-tensor GPU kernel recomputes it).
  WEFT_HOST_DEVICE A Direction(A w, A mean, A var) const { return (mean * c1) / (Sqrt(var * c2) + eps) + wd * w; }
  WEFT_HOST_DEVICE A Step(A w, A g, A& mean, A& var) const {
    AdamMoments(grad(g), b1, b2, mean, var);
    return Direction(w, mean, var);
  }
};

// lamb phase 2: the step size lr * r1/r2 from the norms, r1 bounded to [lower, upper]
// (negative bounds are off), ratio 1 when either norm is zero; then w -= step * direction.
template <typename A>
WEFT_HOST_DEVICE inline A LambStepSize(A r1, A r2, double lr, double lower, double upper) {
  if (lower >= 0) r1 = r1 < static_cast<A>(lower) ? static_cast<A>(lower) : r1;
  if (upper >= 0) r1 = static_cast<A>(upper) < r1 ? static_cast<A>(upper) : r1;
  const A ratio = (r1 == A(0) || r2 == A(0)) ? A(1) : r1 / r2;
  return static_cast<A>(lr) * ratio;
}

template <typename A>
WEFT_HOST_DEVICE inline A LambApply(A w, A direction, A step) {
  return w - step * direction;
}

// ---------------------------------------------------------------- adaptive step sizes
// rmsprop: g includes wd*w; n = (1-gamma1)*g^2 + gamma1*n;  w = clip_w(w - lr * g / sqrt(n + epsilon))
template <typename A>
struct RMSProp {
  A lr, g1, eps, wd, cw;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE RMSProp(double lr_, double gamma1, double epsilon, double wd_, double rescale, double clip,
                           double clip_weights)
      : lr(static_cast<A>(lr_)),
        g1(static_cast<A>(gamma1)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        cw(ClipBound<A>(clip_weights)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& n) const {
    const A gr = grad.WithDecay(g, wd, w);
    n = (A(1) - g1) * gr * gr + g1 * n;
    return Clip(w - lr * gr / Sqrt(n + eps), cw);
  }
};

// rmspropalex: n as rmsprop; gm = (1-gamma1)*g + gamma1*gm;
//              delta = gamma2*delta - lr * g / sqrt(n - gm^2 + epsilon);  w = clip_w(w + delta)
template <typename A>
struct RMSPropAlex {
  A lr, g1, g2, eps, wd, cw;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE RMSPropAlex(double lr_, double gamma1, double gamma2, double epsilon, double wd_, double rescale,
                               double clip, double clip_weights)
      : lr(static_cast<A>(lr_)),
        g1(static_cast<A>(gamma1)),
        g2(static_cast<A>(gamma2)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        cw(ClipBound<A>(clip_weights)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& n, A& gm, A& delta) const {
    const A gr = grad.WithDecay(g, wd, w);
    n = (A(1) - g1) * gr * gr + g1 * n;
    gm = (A(1) - g1) * gr + g1 * gm;
    delta = g2 * delta - lr * gr / Sqrt(n - gm * gm + eps);
    return Clip(w + delta, cw);
  }
};

// adagrad: history += g^2;  w -= lr * (g / sqrt(history + epsilon) + wd*w)
template <typename A>
struct Adagrad {
  A lr, eps, wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE Adagrad(double lr_, double epsilon, double wd_, double rescale, double clip)
      : lr(static_cast<A>(lr_)), eps(static_cast<A>(epsilon)), wd(static_cast<A>(wd_)), grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& h) const {
    const A gr = grad(g);
    h = h + gr * gr;
    return w - lr * (gr / Sqrt(h + eps) + wd * w);
  }
};

// adadelta: acc_g = rho*acc_g + (1-rho)*g^2;  d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g;
//           acc_delta = rho*acc_delta + (1-rho)*d^2;  w -= d + wd*w
template <typename A>
struct AdaDelta {
  A rho, eps, wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE AdaDelta(double rho_, double epsilon, double wd_, double rescale, double clip)
      : rho(static_cast<A>(rho_)), eps(static_cast<A>(epsilon)), wd(static_cast<A>(wd_)), grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& acc_g, A& acc_d) const {
    const A gr = grad(g);
    acc_g = rho * acc_g + (A(1) - rho) * gr * gr;
    const A d = Sqrt(acc_d + eps) / Sqrt(acc_g + eps) * gr;
    acc_d = rho * acc_d + (A(1) - rho) * d * d;
    return w - d - wd * w;
  }
};

// ftrl:    z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;  n += g^2;
//          w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1, else 0
template <typename A>
struct Ftrl {
  A lr, l1, beta, wd;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE Ftrl(double lr_, double lamda1, double beta_, double wd_, double rescale, double clip)
      : lr(static_cast<A>(lr_)),
        l1(static_cast<A>(lamda1)),
        beta(static_cast<A>(beta_)),
        wd(static_cast<A>(wd_)),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& z, A& n) const {
    const A gr = grad(g);
    const A ni = n;
    n = ni + gr * gr;
    z = z + gr - (Sqrt(n) - Sqrt(ni)) * w / lr;
    return Abs(z) > l1 ? (Sign(z) * l1 - z) / ((beta + Sqrt(n)) / lr + wd) : A(0);
  }
};

// ftml:    g includes wd*w; v = beta2*v + (1-beta2)*g^2;
//          d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon);
//          z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*w;  d = d_t;  w = -z / d_t
// The bias corrections are computed on the host (the constructor runs there).
template <typename A>
struct Ftml {
  A b1, b2, eps, wd, d_scale, v_scale;
  GradTransform<A> grad;
  Ftml(double lr, double beta1, double beta2, double epsilon, double wd_, double t, double rescale, double clip)
      : b1(static_cast<A>(beta1)),
        b2(static_cast<A>(beta2)),
        eps(static_cast<A>(epsilon)),
        wd(static_cast<A>(wd_)),
        d_scale(static_cast<A>((1.0 - std::pow(beta1, t)) / lr)),
        v_scale(static_cast<A>(1.0 / (1.0 - std::pow(beta2, t)))),
        grad(rescale, clip) {}
  WEFT_HOST_DEVICE A Step(A w, A g, A& d, A& v, A& z) const {
    const A gr = grad.WithDecay(g, wd, w);
    v = b2 * v + (A(1) - b2) * gr * gr;
    const A dt = d_scale * (Sqrt(v * v_scale) + eps);
    z = b1 * z + (A(1) - b1) * gr - (dt - b1 * d) * w;
    d = dt;
    return -z / dt;
  }
};

// group adagrad (one history value per row): history[r] += mean(g[r]^2);
// w[r] -= lr * g[r] / sqrt(history[r] + epsilon). The row's sum of squares is the caller's
// (a loop on the CPU, a block reduction on the GPU).
template <typename A>
struct GroupAdagrad {
  A lr, eps;
  GradTransform<A> grad;
  WEFT_HOST_DEVICE GroupAdagrad(double lr_, double epsilon, double rescale, double clip)
      : lr(static_cast<A>(lr_)), eps(static_cast<A>(epsilon)), grad(rescale, clip) {}
  WEFT_HOST_DEVICE A History(A h, A sum_sq, int64_t cols) const { return h + sum_sq / static_cast<A>(cols); }
  WEFT_HOST_DEVICE A Scale(A h) const { return lr / Sqrt(h + eps); }
  WEFT_HOST_DEVICE A Step(A w, A g, A scale) const { return w - scale * grad(g); }
};

}  // namespace optim
}  // namespace op
}  // namespace weft

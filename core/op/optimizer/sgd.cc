// The SGD family of update operators, with MXNet 1.x's names, parameters and formulas:
// sgd_update, sgd_mom_update, their multi-precision forms mp_sgd_update and
// mp_sgd_mom_update (float16 weights, float32 master copy and momentum), nag_mom_update,
// signsgd_update, signum_update, and the multi-tensor forms multi_sgd_update,
// multi_sgd_mom_update, multi_mp_sgd_update and multi_mp_sgd_mom_update that update
// num_weights parameters in one call (one operator launch for many small parameters), and
// their preloaded_multi_* forms, which read the learning rates and weight decays from two
// float32 arrays instead of parameters (LARS computes them with multi_lars).
//
// With g = clip(rescale_grad * grad, clip_gradient):
//   sgd:     w = (1 - lr*wd) * w - lr * g
//   sgd_mom: mom = momentum*mom - lr*wd*w - lr*g;  w = w + mom
//   nag:     m = momentum*mom;  mom = m - lr*(g + wd*w);  w = w - m + (momentum+1) * mom
//   signsgd: w = (1 - lr*wd) * w - lr * sign(g)
//   signum:  mom = momentum*mom - (1-momentum) * (wd*w + g);  w = (1 - lr*wd_lh) * w + lr * sign(mom)
// The mp_ forms run the same formula on the float32 master copy and store it, rounded,
// into the float16 weight.
#include "core/op/optimizer/optimizer_op.h"
#include "core/op/optimizer/optimizer_params.h"

namespace weft {
namespace op {

// The fields every update shares, declared in one place so that names, defaults and docs
// agree across operators.
template <typename P>
void CommonGradFields(ParamSchema<P>& s, double P::*rescale, double P::*clip) {
  s.Field("rescale_grad", rescale).Default(1.0).Describe("Multiplies the gradient before anything else.");
  s.Field("clip_gradient", clip)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.");
}

WEFT_PARAM_SCHEMA(SGDParam, s) {
  s.Field("lr", &SGDParam::lr).Describe("Learning rate.");
  s.Field("wd", &SGDParam::wd).Default(0.0).Describe("Weight decay (L2 penalty coefficient).");
  CommonGradFields(s, &SGDParam::rescale_grad, &SGDParam::clip_gradient);
  s.Field("lazy_update", &SGDParam::lazy_update)
      .Default(true)
      .Describe("For row-sparse gradients only (dense arrays always update every row).");
}

WEFT_PARAM_SCHEMA(SGDMomParam, s) {
  s.Field("lr", &SGDMomParam::lr).Describe("Learning rate.");
  s.Field("momentum", &SGDMomParam::momentum).Default(0.0).Describe("Decay of the momentum state.");
  s.Field("wd", &SGDMomParam::wd).Default(0.0).Describe("Weight decay (L2 penalty coefficient).");
  CommonGradFields(s, &SGDMomParam::rescale_grad, &SGDMomParam::clip_gradient);
  s.Field("lazy_update", &SGDMomParam::lazy_update)
      .Default(true)
      .Describe("For row-sparse gradients only (dense arrays always update every row).");
}

WEFT_PARAM_SCHEMA(NAGMomParam, s) {
  s.Field("lr", &NAGMomParam::lr).Describe("Learning rate.");
  s.Field("momentum", &NAGMomParam::momentum).Default(0.0).Describe("Decay of the momentum state.");
  s.Field("wd", &NAGMomParam::wd).Default(0.0).Describe("Weight decay (L2 penalty coefficient).");
  CommonGradFields(s, &NAGMomParam::rescale_grad, &NAGMomParam::clip_gradient);
}

WEFT_PARAM_SCHEMA(SignSGDParam, s) {
  s.Field("lr", &SignSGDParam::lr).Describe("Learning rate.");
  s.Field("wd", &SignSGDParam::wd).Default(0.0).Describe("Weight decay (L2 penalty coefficient).");
  CommonGradFields(s, &SignSGDParam::rescale_grad, &SignSGDParam::clip_gradient);
}

WEFT_PARAM_SCHEMA(SignumParam, s) {
  s.Field("lr", &SignumParam::lr).Describe("Learning rate.");
  s.Field("momentum", &SignumParam::momentum).Default(0.0).Describe("Decay of the momentum state.");
  s.Field("wd", &SignumParam::wd).Default(0.0).Describe("Weight decay, applied through the momentum.");
  CommonGradFields(s, &SignumParam::rescale_grad, &SignumParam::clip_gradient);
  s.Field("wd_lh", &SignumParam::wd_lh).Default(0.0).Describe("Decoupled weight decay applied to the weight directly.");
}

WEFT_PARAM_SCHEMA(MultiSGDParam, s) {
  s.Field("lrs", &MultiSGDParam::lrs).Describe("Learning rate of each weight.");
  s.Field("wds", &MultiSGDParam::wds).Describe("Weight decay of each weight.");
  CommonGradFields(s, &MultiSGDParam::rescale_grad, &MultiSGDParam::clip_gradient);
  s.Field("num_weights", &MultiSGDParam::num_weights).Default(1).Min(1).Describe("Number of weights updated.");
}

WEFT_PARAM_SCHEMA(MultiSGDMomParam, s) {
  s.Field("lrs", &MultiSGDMomParam::lrs).Describe("Learning rate of each weight.");
  s.Field("wds", &MultiSGDMomParam::wds).Describe("Weight decay of each weight.");
  s.Field("momentum", &MultiSGDMomParam::momentum).Default(0.0).Describe("Decay of the momentum states.");
  CommonGradFields(s, &MultiSGDMomParam::rescale_grad, &MultiSGDMomParam::clip_gradient);
  s.Field("num_weights", &MultiSGDMomParam::num_weights).Default(1).Min(1).Describe("Number of weights updated.");
}

WEFT_PARAM_SCHEMA(PreloadedMultiSGDParam, s) {
  CommonGradFields(s, &PreloadedMultiSGDParam::rescale_grad, &PreloadedMultiSGDParam::clip_gradient);
  s.Field("num_weights", &PreloadedMultiSGDParam::num_weights).Default(1).Min(1).Describe("Number of weights updated.");
}

WEFT_PARAM_SCHEMA(PreloadedMultiSGDMomParam, s) {
  s.Field("momentum", &PreloadedMultiSGDMomParam::momentum).Default(0.0).Describe("Decay of the momentum states.");
  CommonGradFields(s, &PreloadedMultiSGDMomParam::rescale_grad, &PreloadedMultiSGDMomParam::clip_gradient);
  s.Field("num_weights", &PreloadedMultiSGDMomParam::num_weights)
      .Default(1)
      .Min(1)
      .Describe("Number of weights updated.");
}

namespace {

using optim::ForEach;
using optim::Put;

// ---------------------------------------------------------------- kernels
// One per formula, shared by the single- and multi-tensor operators. `w` and `out` may be
// the same memory (out=weight): each element is read before it is written.

template <typename T>
void SGDKernel(const TBlob& weight, const TBlob& grad, const TBlob& out, bool add, double lr, double wd,
               double rescale, double clip) {
  using A = typename AccType<T>::type;
  const T* w = weight.ptr<T>();
  const T* g = grad.ptr<T>();
  T* o = out.ptr<T>();
  const optim::SGD<A> f(lr, wd, rescale, clip);
  ForEach(weight.Size(), [=](int64_t i) { Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i])), add); });
}

template <typename T>
void SGDMomKernel(const TBlob& weight, const TBlob& grad, const TBlob& mom_blob, const TBlob& out, bool add,
                  double lr, double momentum, double wd, double rescale, double clip) {
  using A = typename AccType<T>::type;
  const T* w = weight.ptr<T>();
  const T* g = grad.ptr<T>();
  T* mom = mom_blob.ptr<T>();
  T* o = out.ptr<T>();
  const optim::SGDMom<A> f(lr, momentum, wd, rescale, clip);
  ForEach(weight.Size(), [=](int64_t i) {
    A m = static_cast<A>(mom[i]);
    const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
    mom[i] = static_cast<T>(m);
    Put(o, i, nw, add);
  });
}

// Multi-precision: the update runs on the float32 master copy `w32` (and float32
// momentum); the weight output receives the master copy rounded to its dtype.
template <typename T>
void MPSGDKernel(const TBlob& grad, const TBlob& w32_blob, const TBlob& out, bool add, double lr, double wd,
                 double rescale, double clip) {
  const T* g = grad.ptr<T>();
  float* w32 = w32_blob.ptr<float>();
  T* o = out.ptr<T>();
  const optim::SGD<float> f(lr, wd, rescale, clip);
  ForEach(grad.Size(), [=](int64_t i) {
    const float nw = f.Step(w32[i], static_cast<float>(g[i]));
    w32[i] = nw;
    Put(o, i, nw, add);
  });
}

template <typename T>
void MPSGDMomKernel(const TBlob& grad, const TBlob& mom_blob, const TBlob& w32_blob, const TBlob& out, bool add,
                    double lr, double momentum, double wd, double rescale, double clip) {
  const T* g = grad.ptr<T>();
  float* mom = mom_blob.ptr<float>();
  float* w32 = w32_blob.ptr<float>();
  T* o = out.ptr<T>();
  const optim::SGDMom<float> f(lr, momentum, wd, rescale, clip);
  ForEach(grad.Size(), [=](int64_t i) {
    float m = mom[i];
    const float nw = f.Step(w32[i], static_cast<float>(g[i]), m);
    mom[i] = m;
    w32[i] = nw;
    Put(o, i, nw, add);
  });
}

// ---------------------------------------------------------------- single-tensor operators

void SGDUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SGDParam>();
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'sgd_update'", {
    SGDKernel<T>(in[0], in[1], out[0], req[0] == OpReq::kAddTo, p.lr, p.wd, p.rescale_grad, p.clip_gradient);
  });
}

void SGDMomUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SGDMomParam>();
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'sgd_mom_update'", {
    SGDMomKernel<T>(in[0], in[1], in[2], out[0], req[0] == OpReq::kAddTo, p.lr, p.momentum, p.wd, p.rescale_grad,
                    p.clip_gradient);
  });
}

void MPSGDUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SGDParam>();
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'mp_sgd_update'", {
    MPSGDKernel<T>(in[1], in[2], out[0], req[0] == OpReq::kAddTo, p.lr, p.wd, p.rescale_grad, p.clip_gradient);
  });
}

void MPSGDMomUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SGDMomParam>();
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'mp_sgd_mom_update'", {
    MPSGDMomKernel<T>(in[1], in[2], in[3], out[0], req[0] == OpReq::kAddTo, p.lr, p.momentum, p.wd, p.rescale_grad,
                      p.clip_gradient);
  });
}

void NAGMomUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<NAGMomParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'nag_mom_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mom = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::NAG<A> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A m = static_cast<A>(mom[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
      mom[i] = static_cast<T>(m);
      Put(o, i, nw, add);
    });
  });
}

void MPNAGMomUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<NAGMomParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'mp_nag_mom_update'", {
    const T* g = in[1].ptr<T>();
    float* mom = in[2].ptr<float>();
    float* w32 = in[3].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::NAG<float> f(p.lr, p.momentum, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      float m = mom[i];
      const float nw = f.Step(w32[i], static_cast<float>(g[i]), m);
      mom[i] = m;
      w32[i] = nw;
      Put(o, i, nw, add);
    });
  });
}

void SignSGDUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SignSGDParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'signsgd_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::SignSGD<A> f(p.lr, p.wd, p.rescale_grad);
    ForEach(in[0].Size(), [=](int64_t i) { Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i])), add); });
  });
}

void SignumUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SignumParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'signum_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mom = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Signum<A> f(p.lr, p.momentum, p.wd, p.wd_lh, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A m = static_cast<A>(mom[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m);
      mom[i] = static_cast<T>(m);
      Put(o, i, nw, add);
    });
  });
}

// ---------------------------------------------------------------- multi-tensor operators
// Inputs come in groups of `k` per weight, (weight, grad[, mom][, weight32]); output i is
// weight i's new value.

template <typename P>
void CheckPerWeight(const NodeAttrs& attrs, const P& p) {
  for (const auto* v : {&p.lrs, &p.wds}) {
    if (static_cast<int>(v->size()) != p.num_weights)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", v == &p.lrs ? "lrs" : "wds",
            "' must hold one value per weight (num_weights = ", p.num_weights, "), got ", v->size(), " value",
            v->size() == 1 ? "" : "s");
  }
}

template <typename P, int K>
bool MultiShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  CheckPerWeight(attrs, attrs.Params<P>());
  bool known = true;
  for (size_t w = 0; w < out->size(); ++w) {
    Shape s = (*out)[w];
    for (int j = 0; j < K && !s.known_ndim(); ++j) s = (*in)[w * K + j];
    if (!s.known_ndim()) {
      known = false;
      continue;
    }
    for (int j = 0; j < K; ++j) AssignShape(attrs, in, w * K + j, s, "input");
    AssignShape(attrs, out, w, s, "output");
    known = known && s.is_known();
  }
  return known;
}

// Type rule: within each group, weight and grad share a floating dtype; the states are
// that dtype too, or float32 for the multi-precision forms (`mp`).
template <int K, bool MP>
bool MultiType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  bool known = true;
  for (size_t w = 0; w < out->size(); ++w) {
    DType t = (*in)[w * K] != DType::kUnknown ? (*in)[w * K] : (*in)[w * K + 1];
    if (t == DType::kUnknown) t = (*out)[w];
    for (int j = 2; j < K && MP; ++j) AssignType(attrs, in, w * K + j, DType::kFloat32, "input");
    if (t == DType::kUnknown) {
      known = false;
      continue;
    }
    if (!IsFloatDType(t))
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point weights, got ", DTypeName(t),
            " for weight ", w);
    for (int j = 0; j < (MP ? 2 : K); ++j) AssignType(attrs, in, w * K + j, t, "input");
    AssignType(attrs, out, w, t, "output");
  }
  return known;
}

void MultiSGDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiSGDParam>();
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[2 * k].dtype, T, "Operator 'multi_sgd_update'", {
      SGDKernel<T>(in[2 * k], in[2 * k + 1], out[k], req[k] == OpReq::kAddTo, p.lrs[k], p.wds[k], p.rescale_grad,
                   p.clip_gradient);
    });
  }
}

void MultiSGDMomCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiSGDMomParam>();
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[3 * k].dtype, T, "Operator 'multi_sgd_mom_update'", {
      SGDMomKernel<T>(in[3 * k], in[3 * k + 1], in[3 * k + 2], out[k], req[k] == OpReq::kAddTo, p.lrs[k],
                      p.momentum, p.wds[k], p.rescale_grad, p.clip_gradient);
    });
  }
}

void MultiMPSGDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiSGDParam>();
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[3 * k].dtype, T, "Operator 'multi_mp_sgd_update'", {
      MPSGDKernel<T>(in[3 * k + 1], in[3 * k + 2], out[k], req[k] == OpReq::kAddTo, p.lrs[k], p.wds[k],
                     p.rescale_grad, p.clip_gradient);
    });
  }
}

void MultiMPSGDMomCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiSGDMomParam>();
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[4 * k].dtype, T, "Operator 'multi_mp_sgd_mom_update'", {
      MPSGDMomKernel<T>(in[4 * k + 1], in[4 * k + 2], in[4 * k + 3], out[k], req[k] == OpReq::kAddTo, p.lrs[k],
                        p.momentum, p.wds[k], p.rescale_grad, p.clip_gradient);
    });
  }
}

template <typename P>
int NumWeights(const NodeAttrs& attrs) {
  return attrs.Params<P>().num_weights;
}

// Inputs j of each group of k from `first` on are states the operator writes.
std::vector<int> GroupStates(int num_weights, int k, int first) {
  std::vector<int> r;
  for (int w = 0; w < num_weights; ++w)
    for (int j = first; j < k; ++j) r.push_back(w * k + j);
  return r;
}

std::vector<std::pair<int, int>> GroupInplace(int num_weights, int k) {
  std::vector<std::pair<int, int>> r;
  for (int w = 0; w < num_weights; ++w) r.emplace_back(w * k, w);
  return r;
}

bool Shape2(const NodeAttrs& a, std::vector<Shape>* in, std::vector<Shape>* out) {
  return optim::UpdateShape(a, in, out, in->size());
}

// ---------------------------------------------------------------- preloaded multi-tensor operators
// Groups of `K` inputs per weight, then lrs and wds: float32 arrays of num_weights values.

template <int K>
bool PreloadedShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const int64_t n = static_cast<int64_t>(out->size());
  for (size_t j = 0; j < 2; ++j) {
    const size_t idx = static_cast<size_t>(n * K) + j;
    const Shape& s = (*in)[idx];
    if (s.is_known() && s.Size() != n)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", j == 0 ? "lrs" : "wds",
            "' must hold one value per weight (num_weights = ", n, "), got shape ", s.ToString());
    if (!s.known_ndim()) (*in)[idx] = Shape{n};
  }
  std::vector<Shape> groups(in->begin(), in->begin() + n * K);
  bool known = true;
  for (int64_t w = 0; w < n; ++w) {
    Shape s = (*out)[w];
    for (int j = 0; j < K && !s.known_ndim(); ++j) s = groups[w * K + j];
    if (!s.known_ndim()) {
      known = false;
      continue;
    }
    for (int j = 0; j < K; ++j) AssignShape(attrs, &groups, w * K + j, s, "input");
    AssignShape(attrs, out, w, s, "output");
    known = known && s.is_known();
  }
  std::copy(groups.begin(), groups.end(), in->begin());
  return known;
}

template <int K, bool MP>
bool PreloadedType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const size_t n = out->size();
  std::vector<DType> groups(in->begin(), in->begin() + n * K);
  bool known = MultiType<K, MP>(attrs, &groups, out);
  std::copy(groups.begin(), groups.end(), in->begin());
  AssignType(attrs, in, n * K, DType::kFloat32, "input");
  AssignType(attrs, in, n * K + 1, DType::kFloat32, "input");
  return known;
}

// The per-weight rates, read from the two arrays after the groups; every input the kernels
// read is checked here, so a hand-called operator with ill-fitting arrays errors.
std::pair<const float*, const float*> PreloadedRates(const NodeAttrs& attrs, const std::vector<TBlob>& in, int n,
                                                      int k, bool mp) {
  const TBlob& lrs = in[static_cast<size_t>(n) * k];
  const TBlob& wds = in[static_cast<size_t>(n) * k + 1];
  for (const TBlob* b : {&lrs, &wds})
    if (b->dtype != DType::kFloat32 || b->Size() != n)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input '", b == &lrs ? "lrs" : "wds",
            "' must be a float32 array of ", n, " values, got ", DTypeName(b->dtype), " of shape ",
            b->shape.ToString());
  for (int w = 0; w < n; ++w)
    for (int j = 1; j < k; ++j) {
      const TBlob& b = in[w * k + j];
      const DType want = mp && j >= 2 ? DType::kFloat32 : in[w * k].dtype;
      if (b.Size() != in[w * k].Size() || b.dtype != want)
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", w * k + j, " is ", DTypeName(b.dtype),
              " of shape ", b.shape.ToString(), ", expected ", DTypeName(want), " of the shape of weight ", w, ", ",
              in[w * k].shape.ToString());
    }
  return {lrs.ptr<float>(), wds.ptr<float>()};
}

void PreloadedSGDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<PreloadedMultiSGDParam>();
  auto [lrs, wds] = PreloadedRates(attrs, in, p.num_weights, 2, false);
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[2 * k].dtype, T, "Operator 'preloaded_multi_sgd_update'", {
      SGDKernel<T>(in[2 * k], in[2 * k + 1], out[k], req[k] == OpReq::kAddTo, lrs[k], wds[k], p.rescale_grad,
                   p.clip_gradient);
    });
  }
}

void PreloadedSGDMomCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<PreloadedMultiSGDMomParam>();
  auto [lrs, wds] = PreloadedRates(attrs, in, p.num_weights, 3, false);
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[3 * k].dtype, T, "Operator 'preloaded_multi_sgd_mom_update'", {
      SGDMomKernel<T>(in[3 * k], in[3 * k + 1], in[3 * k + 2], out[k], req[k] == OpReq::kAddTo, lrs[k], p.momentum,
                      wds[k], p.rescale_grad, p.clip_gradient);
    });
  }
}

void PreloadedMPSGDCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<PreloadedMultiSGDParam>();
  auto [lrs, wds] = PreloadedRates(attrs, in, p.num_weights, 3, true);
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[3 * k].dtype, T, "Operator 'preloaded_multi_mp_sgd_update'", {
      MPSGDKernel<T>(in[3 * k + 1], in[3 * k + 2], out[k], req[k] == OpReq::kAddTo, lrs[k], wds[k], p.rescale_grad,
                     p.clip_gradient);
    });
  }
}

void PreloadedMPSGDMomCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<PreloadedMultiSGDMomParam>();
  auto [lrs, wds] = PreloadedRates(attrs, in, p.num_weights, 4, true);
  for (int k = 0; k < p.num_weights; ++k) {
    if (req[k] == OpReq::kNullOp) continue;
    WEFT_FLOAT_TYPE_SWITCH(in[4 * k].dtype, T, "Operator 'preloaded_multi_mp_sgd_mom_update'", {
      MPSGDMomKernel<T>(in[4 * k + 1], in[4 * k + 2], in[4 * k + 3], out[k], req[k] == OpReq::kAddTo, lrs[k],
                        p.momentum, wds[k], p.rescale_grad, p.clip_gradient);
    });
  }
}

}  // namespace

WEFT_REGISTER_OP_GROUP(OptimizerUpdate)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<FInferShape>("FInferShape", Shape2)
    .SetAttr<FInferType>("FInferType", SameFloatType);

WEFT_REGISTER_OP(sgd_update)
    .Describe("SGD update, in place when out=weight: weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad).")
    .SetNumInputs(2)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .SetParams<SGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FCompute>("FCompute<cpu>", SGDUpdateCompute);

WEFT_REGISTER_OP(sgd_mom_update)
    .Describe("SGD with momentum: mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); weight += mom.")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mom", "NDArray-or-Symbol", "Momentum (updated in place)")
    .SetParams<SGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<FCompute>("FCompute<cpu>", SGDMomUpdateCompute);

WEFT_REGISTER_OP(mp_sgd_update)
    .Describe("Multi-precision SGD: the update runs on the float32 master copy weight32, which the weight receives.")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient, the weight's dtype")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight (updated in place)")
    .SetParams<SGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInferType>("FInferType", optim::MPUpdateType)
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<FCompute>("FCompute<cpu>", MPSGDUpdateCompute);

WEFT_REGISTER_OP(mp_sgd_mom_update)
    .Describe("Multi-precision SGD with momentum on the float32 master copy weight32 and float32 momentum.")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient, the weight's dtype")
    .AddArgument("mom", "NDArray-or-Symbol", "float32 momentum (updated in place)")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight (updated in place)")
    .SetParams<SGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInferType>("FInferType", optim::MPUpdateType)
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FCompute>("FCompute<cpu>", MPSGDMomUpdateCompute);

WEFT_REGISTER_OP(nag_mom_update)
    .Describe("Nesterov momentum: m = momentum*mom; mom = m - lr*(g + wd*weight); "
              "weight += (momentum+1)*mom - m, g = clip(rescale_grad*grad).")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mom", "NDArray-or-Symbol", "Momentum (updated in place)")
    .SetParams<NAGMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<FCompute>("FCompute<cpu>", NAGMomUpdateCompute);

WEFT_REGISTER_OP(mp_nag_mom_update)
    .Describe("Multi-precision Nesterov momentum on the float32 master copy weight32 and float32 momentum.")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient, the weight's dtype")
    .AddArgument("mom", "NDArray-or-Symbol", "float32 momentum (updated in place)")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight (updated in place)")
    .SetParams<NAGMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInferType>("FInferType", optim::MPUpdateType)
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FCompute>("FCompute<cpu>", MPNAGMomUpdateCompute);

WEFT_REGISTER_OP(signsgd_update)
    .Describe("SignSGD: weight = (1 - lr*wd)*weight - lr*sign(grad).")
    .SetNumInputs(2)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .SetParams<SignSGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FCompute>("FCompute<cpu>", SignSGDUpdateCompute);

WEFT_REGISTER_OP(signum_update)
    .Describe("Signum: mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad)); "
              "weight = (1 - lr*wd_lh)*weight + lr*sign(mom).")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mom", "NDArray-or-Symbol", "Momentum (updated in place)")
    .SetParams<SignumParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<FCompute>("FCompute<cpu>", SignumUpdateCompute);

WEFT_REGISTER_OP(multi_sgd_update)
    .Describe("sgd_update of num_weights weights in one call. Inputs: weight0, grad0, weight1, grad1, ...; "
              "outputs: the new weights (give out=the weights to update in place).")
    .SetNumInputs([](const NodeAttrs& a) { return 2 * NumWeights<MultiSGDParam>(a); })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<MultiSGDParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights and gradients, interleaved")
    .SetParams<MultiSGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<MultiSGDParam>(a), 2); })
    .SetAttr<FInferShape>("FInferShape", MultiShape<MultiSGDParam, 2>)
    .SetAttr<FInferType>("FInferType", MultiType<2, false>)
    .SetAttr<FCompute>("FCompute<cpu>", MultiSGDCompute);

WEFT_REGISTER_OP(multi_sgd_mom_update)
    .Describe("sgd_mom_update of num_weights weights in one call. Inputs: weight0, grad0, mom0, weight1, grad1, "
              "mom1, ...; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 3 * NumWeights<MultiSGDMomParam>(a); })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<MultiSGDMomParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients and momenta, interleaved")
    .SetParams<MultiSGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<MultiSGDMomParam>(a), 3); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<MultiSGDMomParam>(a), 3, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiShape<MultiSGDMomParam, 3>)
    .SetAttr<FInferType>("FInferType", MultiType<3, false>)
    .SetAttr<FCompute>("FCompute<cpu>", MultiSGDMomCompute);

WEFT_REGISTER_OP(multi_mp_sgd_update)
    .Describe("mp_sgd_update of num_weights weights in one call. Inputs: weight0, grad0, weight32_0, ...; "
              "outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 3 * NumWeights<MultiSGDParam>(a); })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<MultiSGDParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients and float32 master weights, interleaved")
    .SetParams<MultiSGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<MultiSGDParam>(a), 3); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<MultiSGDParam>(a), 3, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiShape<MultiSGDParam, 3>)
    .SetAttr<FInferType>("FInferType", MultiType<3, true>)
    .SetAttr<FCompute>("FCompute<cpu>", MultiMPSGDCompute);

WEFT_REGISTER_OP(multi_mp_sgd_mom_update)
    .Describe("mp_sgd_mom_update of num_weights weights in one call. Inputs: weight0, grad0, mom0, weight32_0, "
              "...; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 4 * NumWeights<MultiSGDMomParam>(a); })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<MultiSGDMomParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients, float32 momenta and master weights, interleaved")
    .SetParams<MultiSGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<MultiSGDMomParam>(a), 4); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<MultiSGDMomParam>(a), 4, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiShape<MultiSGDMomParam, 4>)
    .SetAttr<FInferType>("FInferType", MultiType<4, true>)
    .SetAttr<FCompute>("FCompute<cpu>", MultiMPSGDMomCompute);


WEFT_REGISTER_OP(preloaded_multi_sgd_update)
    .Describe("sgd_update of num_weights weights in one call, the learning rates and weight decays given as "
              "arrays. Inputs: weight0, grad0, weight1, grad1, ..., lrs, wds; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 2 * NumWeights<PreloadedMultiSGDParam>(a) + 2; })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<PreloadedMultiSGDParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights and gradients, interleaved, then lrs and wds (float32)")
    .SetParams<PreloadedMultiSGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<PreloadedMultiSGDParam>(a), 2); })
    .SetAttr<FInferShape>("FInferShape", PreloadedShape<2>)
    .SetAttr<FInferType>("FInferType", PreloadedType<2, false>)
    .SetAttr<FCompute>("FCompute<cpu>", PreloadedSGDCompute);

WEFT_REGISTER_OP(preloaded_multi_sgd_mom_update)
    .Describe("sgd_mom_update of num_weights weights in one call, the learning rates and weight decays given as "
              "arrays. Inputs: weight0, grad0, mom0, ..., lrs, wds; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 3 * NumWeights<PreloadedMultiSGDMomParam>(a) + 2; })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<PreloadedMultiSGDMomParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients and momenta, interleaved, then lrs and wds")
    .SetParams<PreloadedMultiSGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<PreloadedMultiSGDMomParam>(a), 3); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<PreloadedMultiSGDMomParam>(a), 3, 2); })
    .SetAttr<FInferShape>("FInferShape", PreloadedShape<3>)
    .SetAttr<FInferType>("FInferType", PreloadedType<3, false>)
    .SetAttr<FCompute>("FCompute<cpu>", PreloadedSGDMomCompute);

WEFT_REGISTER_OP(preloaded_multi_mp_sgd_update)
    .Describe("mp_sgd_update of num_weights weights in one call, the learning rates and weight decays given as "
              "arrays. Inputs: weight0, grad0, weight32_0, ..., lrs, wds; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 3 * NumWeights<PreloadedMultiSGDParam>(a) + 2; })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<PreloadedMultiSGDParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients and float32 master weights, then lrs and wds")
    .SetParams<PreloadedMultiSGDParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<PreloadedMultiSGDParam>(a), 3); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<PreloadedMultiSGDParam>(a), 3, 2); })
    .SetAttr<FInferShape>("FInferShape", PreloadedShape<3>)
    .SetAttr<FInferType>("FInferType", PreloadedType<3, true>)
    .SetAttr<FCompute>("FCompute<cpu>", PreloadedMPSGDCompute);

WEFT_REGISTER_OP(preloaded_multi_mp_sgd_mom_update)
    .Describe("mp_sgd_mom_update of num_weights weights in one call, the learning rates and weight decays given "
              "as arrays. Inputs: weight0, grad0, mom0, weight32_0, ..., lrs, wds; outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 4 * NumWeights<PreloadedMultiSGDMomParam>(a) + 2; })
    .SetNumOutputs([](const NodeAttrs& a) { return NumWeights<PreloadedMultiSGDMomParam>(a); })
    .AddArgument("data", "NDArray-or-Symbol[]",
                 "Weights, gradients, float32 momenta and master weights, then lrs and wds")
    .SetParams<PreloadedMultiSGDMomParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs& a) { return GroupInplace(NumWeights<PreloadedMultiSGDMomParam>(a), 4); })
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& a) { return GroupStates(NumWeights<PreloadedMultiSGDMomParam>(a), 4, 2); })
    .SetAttr<FInferShape>("FInferShape", PreloadedShape<4>)
    .SetAttr<FInferType>("FInferType", PreloadedType<4, true>)
    .SetAttr<FCompute>("FCompute<cpu>", PreloadedMPSGDMomCompute);

}  // namespace op
}  // namespace weft

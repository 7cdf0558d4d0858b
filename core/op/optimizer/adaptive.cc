// Update operators with per-element adaptive step sizes, with MXNet 1.x's names,
// parameters and formulas. Throughout, g = clip(rescale_grad*grad (+ wd*weight where
// noted), clip_gradient):
//
//   rmsprop_update (g includes wd*weight):
//       n = (1-gamma1)*g^2 + gamma1*n;  weight -= lr * g / sqrt(n + epsilon)
//   rmspropalex_update (centred RMSProp, Graves 2013; g includes wd*weight):
//       n = (1-gamma1)*g^2 + gamma1*n;  gm = (1-gamma1)*g + gamma1*gm
//       delta = gamma2*delta - lr * g / sqrt(n - gm^2 + epsilon);  weight += delta
//     both then clip the weight to [-clip_weights, clip_weights] when clip_weights >= 0.
//   adagrad_update (MXNet's Python AdaGrad's dense path; given a row_sparse gradient it updates
//     only that gradient's rows, as _sparse_adagrad_update, weight decay included): history += g^2;  weight -= lr * (g / sqrt(history + epsilon) + wd*weight)
//   adadelta_update (MXNet 1.x's AdaDelta, which has no learning rate):
//       acc_g = rho*acc_g + (1-rho)*g^2
//       d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
//       acc_delta = rho*acc_delta + (1-rho)*d^2;  weight -= d + wd*weight
//   ftrl_update (FTRL-proximal, McMahan et al. 2013):
//       z += g - (sqrt(n + g^2) - sqrt(n)) * weight / lr;  n += g^2
//       weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1, else 0
//   ftml_update (Follow the Moving Leader, Zheng & Kwok 2017; g includes wd*weight, and the
//     clipping parameter is named clip_grad as in MXNet):
//       v = beta2*v + (1-beta2)*g^2
//       d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
//       z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight;  d = d_t;  weight = -z / d_t
#include <cstring>

#include "core/ndarray/sparse.h"
#include "core/op/optimizer/optimizer_op.h"
#include "core/op/optimizer/optimizer_params.h"
#include "core/op/sparse/sparse_compute.h"

namespace weft {
namespace op {

template <typename P>
void GradFields(ParamSchema<P>& s, double P::*wd, double P::*rescale, double P::*clip,
                const char* clip_name = "clip_gradient") {
  s.Field("wd", wd).Default(0.0).Describe("Weight decay (L2 penalty coefficient).");
  s.Field("rescale_grad", rescale).Default(1.0).Describe("Multiplies the gradient first.");
  s.Field(clip_name, clip)
      .Default(-1.0)
      .Describe("Clips the gradient to [-clip_gradient, clip_gradient]; negative turns clipping off.");
}

WEFT_PARAM_SCHEMA(RMSPropParam, s) {
  s.Field("lr", &RMSPropParam::lr).Describe("Learning rate.");
  s.Field("gamma1", &RMSPropParam::gamma1).Default(0.95).Describe("Decay of the mean square of the gradient.");
  s.Field("epsilon", &RMSPropParam::epsilon).Default(1e-8).Describe("Added under the square root.");
  GradFields(s, &RMSPropParam::wd, &RMSPropParam::rescale_grad, &RMSPropParam::clip_gradient);
  s.Field("clip_weights", &RMSPropParam::clip_weights)
      .Default(-1.0)
      .Describe("Clips the new weight to [-clip_weights, clip_weights]; negative turns it off.");
}

WEFT_PARAM_SCHEMA(RMSPropAlexParam, s) {
  s.Field("lr", &RMSPropAlexParam::lr).Describe("Learning rate.");
  s.Field("gamma1", &RMSPropAlexParam::gamma1).Default(0.95).Describe("Decay of the gradient's mean and mean square.");
  s.Field("gamma2", &RMSPropAlexParam::gamma2).Default(0.9).Describe("Momentum of the step.");
  s.Field("epsilon", &RMSPropAlexParam::epsilon).Default(1e-8).Describe("Added under the square root.");
  GradFields(s, &RMSPropAlexParam::wd, &RMSPropAlexParam::rescale_grad, &RMSPropAlexParam::clip_gradient);
  s.Field("clip_weights", &RMSPropAlexParam::clip_weights)
      .Default(-1.0)
      .Describe("Clips the new weight to [-clip_weights, clip_weights]; negative turns it off.");
}

WEFT_PARAM_SCHEMA(AdagradParam, s) {
  s.Field("lr", &AdagradParam::lr).Describe("Learning rate.");
  s.Field("epsilon", &AdagradParam::epsilon).Default(1e-7).Describe("Added under the square root.");
  GradFields(s, &AdagradParam::wd, &AdagradParam::rescale_grad, &AdagradParam::clip_gradient);
}

WEFT_PARAM_SCHEMA(AdaDeltaParam, s) {
  s.Field("rho", &AdaDeltaParam::rho).Default(0.9).Range(0, 1).Describe("Decay of the accumulated squares.");
  s.Field("epsilon", &AdaDeltaParam::epsilon).Default(1e-5).Describe("Added under the square roots.");
  GradFields(s, &AdaDeltaParam::wd, &AdaDeltaParam::rescale_grad, &AdaDeltaParam::clip_gradient);
}

WEFT_PARAM_SCHEMA(FtrlParam, s) {
  s.Field("lr", &FtrlParam::lr).Describe("Learning rate.");
  s.Field("lamda1", &FtrlParam::lamda1).Default(0.01).Describe("L1 regularisation coefficient.");
  s.Field("beta", &FtrlParam::beta).Default(1.0).Describe("Per-coordinate learning-rate offset.");
  GradFields(s, &FtrlParam::wd, &FtrlParam::rescale_grad, &FtrlParam::clip_gradient);
}

WEFT_PARAM_SCHEMA(FtmlParam, s) {
  s.Field("lr", &FtmlParam::lr).Describe("Learning rate.");
  s.Field("beta1", &FtmlParam::beta1).Default(0.6).Range(0, 1).Describe("Decay of z and d.");
  s.Field("beta2", &FtmlParam::beta2).Default(0.999).Range(0, 1).Describe("Decay of the second moment.");
  s.Field("epsilon", &FtmlParam::epsilon).Default(1e-8).Describe("Added to the root of the second moment.");
  s.Field("t", &FtmlParam::t).Min(1).Describe("Number of the update (from 1), for the bias correction.");
  GradFields(s, &FtmlParam::wd, &FtmlParam::rescale_grad, &FtmlParam::clip_grad, "clip_grad");
}

namespace {

using optim::ForEach;
using optim::Put;

void RMSPropCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<RMSPropParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'rmsprop_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* n = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::RMSProp<A> f(p.lr, p.gamma1, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient, p.clip_weights);
    ForEach(in[0].Size(), [=](int64_t i) {
      A ni = static_cast<A>(n[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ni);
      n[i] = static_cast<T>(ni);
      Put(o, i, nw, add);
    });
  });
}

void RMSPropAlexCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<RMSPropAlexParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'rmspropalex_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* n = in[2].ptr<T>();
    T* gm = in[3].ptr<T>();
    T* delta = in[4].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::RMSPropAlex<A> f(p.lr, p.gamma1, p.gamma2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                  p.clip_weights);
    ForEach(in[0].Size(), [=](int64_t i) {
      A ni = static_cast<A>(n[i]), gi = static_cast<A>(gm[i]), di = static_cast<A>(delta[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ni, gi, di);
      n[i] = static_cast<T>(ni);
      gm[i] = static_cast<T>(gi);
      delta[i] = static_cast<T>(di);
      Put(o, i, nw, add);
    });
  });
}

void AdagradCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<AdagradParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'adagrad_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* h = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Adagrad<A> f(p.lr, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A hi = static_cast<A>(h[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), hi);
      h[i] = static_cast<T>(hi);
      Put(o, i, nw, add);
    });
  });
}

void AdaDeltaCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<AdaDeltaParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'adadelta_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* acc_g = in[2].ptr<T>();
    T* acc_d = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::AdaDelta<A> f(p.rho, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A ag = static_cast<A>(acc_g[i]), ad = static_cast<A>(acc_d[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), ag, ad);
      acc_g[i] = static_cast<T>(ag);
      acc_d[i] = static_cast<T>(ad);
      Put(o, i, nw, add);
    });
  });
}

void FtrlCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<FtrlParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'ftrl_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* z = in[2].ptr<T>();
    T* n = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Ftrl<A> f(p.lr, p.lamda1, p.beta, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A zi = static_cast<A>(z[i]), ni = static_cast<A>(n[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), zi, ni);
      z[i] = static_cast<T>(zi);
      n[i] = static_cast<T>(ni);
      Put(o, i, nw, add);
    });
  });
}

void FtmlCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<FtmlParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'ftml_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* d = in[2].ptr<T>();
    T* v = in[3].ptr<T>();
    T* z = in[4].ptr<T>();
    T* o = out[0].ptr<T>();
    // The bias corrections, once per call.
    const optim::Ftml<A> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.t, p.rescale_grad, p.clip_grad);
    ForEach(in[0].Size(), [=](int64_t i) {
      A di = static_cast<A>(d[i]), vi = static_cast<A>(v[i]), zi = static_cast<A>(z[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), di, vi, zi);
      v[i] = static_cast<T>(vi);
      z[i] = static_cast<T>(zi);
      d[i] = static_cast<T>(di);
      Put(o, i, nw, add);
    });
  });
}

std::vector<int> States(std::initializer_list<int> v) { return std::vector<int>(v); }

// MXNet's sparse AdaGrad: the update above without weight decay (MXNet refuses wd != 0 for
// it), for a row_sparse gradient. Its rows of the weight and history are the only ones read
// or written: with a dense weight the imperative path's lazy row update runs it
// (core/imperative/sparse_update.cc); with a row_sparse weight and history holding every row,
// the sparse kernel below. A dense gradient takes the dense formula (what its rows give).
bool SparseAdagradShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<AdagradParam>();
  if (p.wd != 0.0)
    Throw(ErrorKind::kValue, "Operator '_sparse_adagrad_update': weight decay is not supported (expected wd=0, got ",
          p.wd, ")");
  return optim::UpdateShape(attrs, in, out, 3);
}

// Row copies between a full (m, ...) array and a compact (k, ...) one, by row index.
void CopyRows(const NDArray& from, const NDArray& to, const std::vector<int64_t>& rows, bool gather) {
  const NDArray& full = gather ? from : to;
  size_t row_bytes = static_cast<size_t>(full.shape().ProdRange(1, full.shape().ndim())) * DTypeSize(full.dtype());
  const char* src = sparse::HostRead(from);
  char* dst = sparse::HostWrite(to);
  for (size_t j = 0; j < rows.size(); ++j) {
    size_t f = static_cast<size_t>(rows[j]) * row_bytes, c = j * row_bytes;
    std::memcpy(dst + (gather ? c : f), src + (gather ? f : c), row_bytes);
  }
}

// Whether a row_sparse array stores every one of its rows.
bool AllRowsStored(const NDArray& a) {
  std::vector<int64_t> rows = sparse::HostInt64(a.aux(0));
  if (static_cast<int64_t>(rows.size()) != a.shape()[0]) return false;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool SparseAdagradSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                         std::vector<NDArray>* out) {
  const NDArray &w = in[0], &g = in[1], &h = in[2];
  if (!w.is_sparse() && !h.is_sparse()) return false;  // dense weight: the lazy row update
  if (!sparse::AllOnCpu(in)) return false;
  if (w.stype() != StorageType::kRowSparse || h.stype() != StorageType::kRowSparse ||
      g.stype() != StorageType::kRowSparse)
    Throw(ErrorKind::kUnsupported, "Operator '_sparse_adagrad_update': expected weight, grad and history all "
          "row_sparse or a dense weight and history with a row_sparse grad, got weight ", StorageTypeName(w.stype()),
          ", grad ", StorageTypeName(g.stype()), ", history ", StorageTypeName(h.stype()));
  // The history is updated in its stored values; MXNet likewise needs every weight row.
  if (!AllRowsStored(w) || !AllRowsStored(h))
    Throw(ErrorKind::kValue, "Operator '_sparse_adagrad_update': a row_sparse weight and history must store "
          "every row (", w.shape()[0], ")");
  std::vector<int64_t> rows = sparse::HostInt64(g.aux(0));
  Shape compact = w.shape();
  compact[0] = static_cast<int64_t>(rows.size());
  NDArray wc(compact, w.ctx(), w.dtype()), hc(compact, h.ctx(), h.dtype());
  CopyRows(w.sparse_values(), wc, rows, true);
  CopyRows(h.sparse_values(), hc, rows, true);
  std::vector<NDArray> res{NDArray(compact, w.ctx(), w.dtype())};
  if (!sparse::RunDense("_sparse_adagrad_update", attrs.dict, {wc, g.sparse_values(), hc}, &res)) return false;
  NDArray values = w.sparse_values().Copy(w.ctx());
  CopyRows(res[0], values, rows, false);
  CopyRows(hc, h.sparse_values(), rows, false);
  std::vector<int64_t> all(static_cast<size_t>(w.shape()[0]));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  *out = {sparse::RowSparse(w.shape(), values, all)};
  return true;
}

}  // namespace

WEFT_REGISTER_OP(rmsprop_update)
    .Describe("RMSProp (Tieleman & Hinton): n = (1-gamma1)*g^2 + gamma1*n; weight -= lr*g/sqrt(n + epsilon), "
              "g = clip(rescale_grad*grad + wd*weight); then weight is clipped to clip_weights when set.")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("n", "NDArray-or-Symbol", "Mean square of the gradient (updated in place)")
    .SetParams<RMSPropParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2}); })
    .SetAttr<FCompute>("FCompute<cpu>", RMSPropCompute);

WEFT_REGISTER_OP(rmspropalex_update)
    .Describe("Centred RMSProp (Graves 2013): n and g track the gradient's mean square and mean; "
              "delta = gamma2*delta - lr*grad/sqrt(n - g^2 + epsilon); weight += delta.")
    .SetNumInputs(5)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("n", "NDArray-or-Symbol", "Mean square of the gradient (updated in place)")
    .AddArgument("g", "NDArray-or-Symbol", "Mean of the gradient (updated in place)")
    .AddArgument("delta", "NDArray-or-Symbol", "Step momentum (updated in place)")
    .SetParams<RMSPropAlexParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2, 3, 4}); })
    .SetAttr<FCompute>("FCompute<cpu>", RMSPropAlexCompute);

WEFT_REGISTER_OP(adagrad_update)
    .Describe("AdaGrad: history += g^2; weight -= lr*(g/sqrt(history + epsilon) + wd*weight), "
              "g = clip(rescale_grad*grad). With a row_sparse gradient only the gradient's rows of the weight "
              "and history change (as MXNet's _sparse_adagrad_update, which refuses wd).")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("history", "NDArray-or-Symbol", "Sum of squared gradients (updated in place)")
    .SetParams<AdagradParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2}); })
    .SetAttr<FCompute>("FCompute<cpu>", AdagradCompute);

WEFT_REGISTER_OP(_sparse_adagrad_update)
    .Describe("MXNet's sparse AdaGrad: history += g^2; weight -= lr*g/sqrt(history + epsilon), "
              "g = clip(rescale_grad*grad). With a row_sparse grad only the rows it stores are read and "
              "written (weight and history dense, or row_sparse storing every row); wd must be 0.")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("history", "NDArray-or-Symbol", "History (updated in place)")
    .SetParams<AdagradParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInferShape>("FInferShape", SparseAdagradShape)
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2}); })
    .SetAttr<FComputeSparse>("FComputeSparse", SparseAdagradSparse)
    .SetAttr<FCompute>("FCompute<cpu>", AdagradCompute);

WEFT_REGISTER_OP(adadelta_update)
    .Describe("AdaDelta (Zeiler 2012), as MXNet 1.x's AdaDelta: acc_g = rho*acc_g + (1-rho)*g^2; "
              "d = sqrt(acc_delta + epsilon)/sqrt(acc_g + epsilon)*g; acc_delta = rho*acc_delta + (1-rho)*d^2; "
              "weight -= d + wd*weight.")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("acc_g", "NDArray-or-Symbol", "Accumulated squared gradients (updated in place)")
    .AddArgument("acc_delta", "NDArray-or-Symbol", "Accumulated squared steps (updated in place)")
    .SetParams<AdaDeltaParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2, 3}); })
    .SetAttr<FCompute>("FCompute<cpu>", AdaDeltaCompute);

WEFT_REGISTER_OP(ftrl_update)
    .Describe("FTRL-proximal: z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; n += g^2; "
              "weight = (sign(z)*lamda1 - z)/((beta + sqrt(n))/lr + wd) where |z| > lamda1, else 0.")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("z", "NDArray-or-Symbol", "z state (updated in place)")
    .AddArgument("n", "NDArray-or-Symbol", "Sum of squared gradients (updated in place)")
    .SetParams<FtrlParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2, 3}); })
    .SetAttr<FCompute>("FCompute<cpu>", FtrlCompute);

WEFT_REGISTER_OP(ftml_update)
    .Describe("FTML (Follow the Moving Leader): v = beta2*v + (1-beta2)*g^2; "
              "d_t = (1-beta1^t)/lr*(sqrt(v/(1-beta2^t)) + epsilon); z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight; "
              "weight = -z/d_t, g = clip(rescale_grad*grad + wd*weight, clip_grad).")
    .SetNumInputs(5)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("d", "NDArray-or-Symbol", "d state (updated in place)")
    .AddArgument("v", "NDArray-or-Symbol", "Second moment (updated in place)")
    .AddArgument("z", "NDArray-or-Symbol", "z state (updated in place)")
    .SetParams<FtmlParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return States({2, 3, 4}); })
    .SetAttr<FCompute>("FCompute<cpu>", FtmlCompute);

}  // namespace op
}  // namespace weft

// More update operators with MXNet 1.x's names, parameters and formulas:
//
//   _mp_adamw_update:     _adamw_update on a float32 master copy weight32 with float32 moments;
//                         the weight receives the master copy rounded to its dtype.
//   _multi_adamw_update / _multi_mp_adamw_update: the same for num_weights weights in one
//                         call (groups weight, grad, mean, var[, weight32], then one
//                         rescale_grad array of any floating dtype shared by all);
//                         per-weight lrs, wds and etas.
//                         A non-finite or zero rescale_grad skips the whole update.
//   mp_lamb_update_phase1: lamb_update_phase1 with float32 moments and the weight decay
//                         applied to weight32; the direction it returns is float32.
//   mp_lamb_update_phase2: weight32 -= lr * ratio * g; the weight receives weight32.
//   _multi_lamb_update / _multi_mp_lamb_update: both LAMB phases for num_tensors weights
//                         in one call, the norms computed inside; per-tensor
//                         learning_rates, wds and step_count.
//   _contrib_group_adagrad_update: AdaGrad with one history value per row:
//                         history[r] += mean(g[r]^2); weight[r] -= lr * g[r]/sqrt(history[r] + epsilon)
// (LARS's helpers multi_sum_sq and multi_lars are in core/op/reduce/multi_tensor.cc.)
#include <utility>

#include "core/op/optimizer/optimizer_op.h"
#include "core/op/optimizer/optimizer_params.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(MultiAdamWParam, s) {
  s.Field("lrs", &MultiAdamWParam::lrs).Describe("Learning rate of each weight.");
  s.Field("beta1", &MultiAdamWParam::beta1).Default(0.9).Describe("Decay of the first moment.");
  s.Field("beta2", &MultiAdamWParam::beta2).Default(0.999).Describe("Decay of the second moment.");
  s.Field("epsilon", &MultiAdamWParam::epsilon).Default(1e-8).Describe("Added to the root of the second moment.");
  s.Field("wds", &MultiAdamWParam::wds).Describe("Decoupled weight decay of each weight.");
  s.Field("etas", &MultiAdamWParam::etas).Describe("Schedule multiplier of each weight's step.");
  s.Field("clip_gradient", &MultiAdamWParam::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
  s.Field("num_weights", &MultiAdamWParam::num_weights).Default(1).Min(1).Describe("Number of weights updated.");
}

WEFT_PARAM_SCHEMA(MultiLAMBParam, s) {
  s.Field("learning_rates", &MultiLAMBParam::learning_rates).Describe("Learning rate of each tensor.");
  s.Field("beta1", &MultiLAMBParam::beta1).Default(0.9).Describe("Decay of the first moment.");
  s.Field("beta2", &MultiLAMBParam::beta2).Default(0.999).Describe("Decay of the second moment.");
  s.Field("epsilon", &MultiLAMBParam::epsilon).Default(1e-6).Describe("Added to the root of the second moment.");
  s.Field("wds", &MultiLAMBParam::wds).Describe("Weight decay of each tensor, added to the step direction.");
  s.Field("rescale_grad", &MultiLAMBParam::rescale_grad).Default(1.0).Describe("Multiplies the gradients first.");
  s.Field("lower_bound", &MultiLAMBParam::lower_bound).Default(-1.0).Describe("Lower bound of the weight norm; negative is off.");
  s.Field("upper_bound", &MultiLAMBParam::upper_bound).Default(-1.0).Describe("Upper bound of the weight norm; negative is off.");
  s.Field("clip_gradient", &MultiLAMBParam::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
  s.Field("bias_correction", &MultiLAMBParam::bias_correction).Default(true).Describe("Correct the moments' bias.");
  s.Field("step_count", &MultiLAMBParam::step_count).Describe("Number of the update (from 1) of each tensor.");
  s.Field("num_tensors", &MultiLAMBParam::num_tensors).Default(1).Min(1).Describe("Number of tensors updated.");
}

WEFT_PARAM_SCHEMA(GroupAdagradParam, s) {
  s.Field("lr", &GroupAdagradParam::lr).Describe("Learning rate.");
  s.Field("rescale_grad", &GroupAdagradParam::rescale_grad).Default(1.0).Describe("Multiplies the gradient first.");
  s.Field("clip_gradient", &GroupAdagradParam::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
  s.Field("epsilon", &GroupAdagradParam::epsilon).Default(1e-5).Describe("Added to the history under the root.");
}

namespace {

using optim::ForEach;
using optim::Put;

[[noreturn]] void BadInput(const NodeAttrs& attrs, size_t i, const std::string& expected, const TBlob& got) {
  Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i, ": expected ", expected, ", got ",
        DTypeName(got.dtype), " of shape ", got.shape.ToString());
}

void CheckCount(const NodeAttrs& attrs, const char* name, size_t got, int n) {
  if (static_cast<int>(got) != n)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", name, "' must hold one value per weight (",
          n, "), got ", got, " value", got == 1 ? "" : "s");
}

// Every input of each group has the size of its weight; those from `first_f32` on are
// float32 (the multi-precision states). Checked again at run time: a hand-called operator
// with ill-fitting arrays must fail rather than read out of bounds.
void CheckGroups(const NodeAttrs& attrs, const std::vector<TBlob>& in, int n, int k, int first_f32) {
  for (int w = 0; w < n; ++w) {
    const TBlob& weight = in[static_cast<size_t>(w) * k];
    for (int j = 1; j < k; ++j) {
      const TBlob& b = in[static_cast<size_t>(w) * k + j];
      const DType want = j >= first_f32 ? DType::kFloat32 : weight.dtype;
      if (b.Size() != weight.Size() || b.dtype != want)
        BadInput(attrs, static_cast<size_t>(w) * k + j,
                 std::string(DTypeName(want)) + " of weight " + std::to_string(w) + "'s shape " +
                     weight.shape.ToString(),
                 b);
    }
  }
}

// Shapes of groups of k per weight (an optional trailing input of one element after them).
bool GroupShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, int k, bool scale) {
  const size_t n = out->size();
  bool known = true;
  for (size_t w = 0; w < n; ++w) {
    Shape s = (*out)[w];
    for (int j = 0; j < k && !s.known_ndim(); ++j) s = (*in)[w * k + j];
    if (!s.known_ndim()) {
      known = false;
      continue;
    }
    for (int j = 0; j < k; ++j) AssignShape(attrs, in, w * k + j, s, "input");
    AssignShape(attrs, out, w, s, "output");
    known = known && s.is_known();
  }
  if (scale) {
    Shape& r = (*in)[n * k];
    if (r.is_known() && r.Size() != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'rescale_grad' must hold one value, got shape ",
            r.ToString());
    if (!r.known_ndim()) r = Shape{1};
  }
  return known;
}

// Types of groups of k per weight: weight, grad and the output share a floating dtype; the
// states share it too, or are float32 when `mp`. A trailing rescale array is float32.
bool GroupType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out, int k, bool mp, bool scale) {
  const size_t n = out->size();
  bool known = true;
  for (size_t w = 0; w < n; ++w) {
    DType t = (*in)[w * k] != DType::kUnknown ? (*in)[w * k] : (*in)[w * k + 1];
    if (t == DType::kUnknown) t = (*out)[w];
    if (mp)
      for (int j = 2; j < k; ++j) AssignType(attrs, in, w * k + j, DType::kFloat32, "input");
    if (t == DType::kUnknown) {
      known = false;
      continue;
    }
    if (!IsFloatDType(t))
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point weights, got ", DTypeName(t),
            " for weight ", w);
    for (int j = 0; j < (mp ? 2 : k); ++j) AssignType(attrs, in, w * k + j, t, "input");
    AssignType(attrs, out, w, t, "output");
  }
  if (scale) {
    // Read as one number: any floating dtype will do (float32 unless given).
    DType& r = (*in)[n * k];
    if (r != DType::kUnknown && !IsFloatDType(r))
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input 'rescale_grad' must be a floating-point array, got ",
            DTypeName(r));
    if (r == DType::kUnknown) r = DType::kFloat32;
  }
  return known;
}

std::vector<int> StatesOf(int n, int k, int first) {
  std::vector<int> r;
  for (int w = 0; w < n; ++w)
    for (int j = first; j < k; ++j) r.push_back(w * k + j);
  return r;
}

std::vector<std::pair<int, int>> WeightsInPlace(int n, int k) {
  std::vector<std::pair<int, int>> r;
  for (int w = 0; w < n; ++w) r.emplace_back(w * k, w);
  return r;
}

// The rescale factor of the AdamW updates, from its one-element floating array.
double ReadScale(const NodeAttrs& attrs, const TBlob& b, size_t index) {
  if (!IsFloatDType(b.dtype) || b.Size() != 1) BadInput(attrs, index, "a floating-point array of one value", b);
  double v = 0;
  WEFT_FLOAT_TYPE_SWITCH(b.dtype, R, "Operator '" + attrs.op->name + "': input 'rescale_grad'", {
    v = static_cast<double>(static_cast<typename AccType<R>::type>(b.ptr<R>()[0]));
  });
  return v;
}

// One AdamW step over `n` elements; M is the moments' (and the master copy's) type.
template <typename T, typename M>
void AdamWKernel(const TBlob& weight, const TBlob& grad, const TBlob& mean_b, const TBlob& var_b, M* w32,
                 const TBlob& out, bool add, double lr, double eta, double wd, double b1d, double b2d, double epsd,
                 double scale, double clip) {
  using A = typename AccType<M>::type;
  const T* w = weight.ptr<T>();
  const T* g = grad.ptr<T>();
  M* mean = mean_b.ptr<M>();
  M* var = var_b.ptr<M>();
  T* o = out.ptr<T>();
  const optim::AdamW<A> f(lr, b1d, b2d, epsd, wd, eta, scale, clip);
  ForEach(weight.Size(), [=](int64_t i) {
    const A wi = w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]);
    A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
    const A nw = f.Step(wi, static_cast<A>(g[i]), m, v);
    mean[i] = static_cast<M>(m);
    var[i] = static_cast<M>(v);
    if (w32) w32[i] = static_cast<M>(nw);
    Put(o, i, nw, add);
  });
}

// ---------------------------------------------------------------- multi AdamW
template <bool MP>
void MultiAdamWCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiAdamWParam>();
  const int n = p.num_weights, k = MP ? 5 : 4;
  CheckGroups(attrs, in, n, k, MP ? 2 : k);
  const size_t si = static_cast<size_t>(n) * k;
  const double scale = ReadScale(attrs, in[si], si);
  const bool skip = optim::AdamWSkips(scale);
  for (int w = 0; w < n; ++w) {
    if (req[w] == OpReq::kNullOp) continue;
    const size_t b = static_cast<size_t>(w) * k;
    if (skip) {
      CopyWithReq(in[b], out[w], req[w]);
      continue;
    }
    const bool add = req[w] == OpReq::kAddTo;
    WEFT_FLOAT_TYPE_SWITCH(in[b].dtype, T, "Operator '" + attrs.op->name + "'", {
      if constexpr (MP) {
        AdamWKernel<T, float>(in[b], in[b + 1], in[b + 2], in[b + 3], in[b + 4].ptr<float>(), out[w], add, p.lrs[w],
                              p.etas[w], p.wds[w], p.beta1, p.beta2, p.epsilon, scale, p.clip_gradient);
      } else {
        AdamWKernel<T, T>(in[b], in[b + 1], in[b + 2], in[b + 3], nullptr, out[w], add, p.lrs[w], p.etas[w],
                          p.wds[w], p.beta1, p.beta2, p.epsilon, scale, p.clip_gradient);
      }
    });
  }
}

template <int K>
bool MultiAdamWShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<MultiAdamWParam>();
  CheckCount(attrs, "lrs", p.lrs.size(), p.num_weights);
  CheckCount(attrs, "wds", p.wds.size(), p.num_weights);
  CheckCount(attrs, "etas", p.etas.size(), p.num_weights);
  return GroupShape(attrs, in, out, K, true);
}

// ---------------------------------------------------------------- multi LAMB
// Both phases for one tensor: the direction g (kept in a buffer), the norms of the weight
// and of g, then the step. The weight norm is that of the weight as given (not the master
// copy), as MXNet's kernel computes it.
template <typename T, typename M>
void LambTensor(const MultiLAMBParam& p, int idx, const TBlob& weight, const TBlob& grad, const TBlob& mean_b,
                const TBlob& var_b, M* w32, const TBlob& out, bool add) {
  using A = typename AccType<M>::type;
  const int64_t n = weight.Size();
  const T* w = weight.ptr<T>();
  const T* gr = grad.ptr<T>();
  M* mean = mean_b.ptr<M>();
  M* var = var_b.ptr<M>();
  const double t = p.step_count[idx];
  const optim::LambDirection<A> f(p.beta1, p.beta2, p.epsilon, p.wds[idx], p.rescale_grad, p.clip_gradient,
                                  optim::LambCorrection(p.bias_correction, p.beta1, t),
                                  optim::LambCorrection(p.bias_correction, p.beta2, t));
  std::vector<A> dir(static_cast<size_t>(n));
  A* d = dir.data();
  ForEach(n, [=](int64_t i) {
    const A wi = w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]);
    A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
    d[i] = f.Step(wi, static_cast<A>(gr[i]), m, v);
    mean[i] = static_cast<M>(m);
    var[i] = static_cast<M>(v);
  });
  double ssw = 0, ssg = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double wi = static_cast<double>(w[i]);
    ssw += wi * wi;
    ssg += static_cast<double>(d[i]) * static_cast<double>(d[i]);
  }
  // The norms and the step size in double, then rounded once to A.
  const A step = static_cast<A>(optim::LambStepSize(std::sqrt(ssw), std::sqrt(ssg), p.learning_rates[idx],
                                                    p.lower_bound, p.upper_bound));
  T* o = out.ptr<T>();
  ForEach(n, [=](int64_t i) {
    const A nw = optim::LambApply(w32 ? static_cast<A>(w32[i]) : static_cast<A>(w[i]), d[i], step);
    if (w32) w32[i] = static_cast<M>(nw);
    Put(o, i, nw, add);
  });
}

template <bool MP>
void MultiLambCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiLAMBParam>();
  const int n = p.num_tensors, k = MP ? 5 : 4;
  CheckGroups(attrs, in, n, k, MP ? 2 : k);
  for (int w = 0; w < n; ++w) {
    if (req[w] == OpReq::kNullOp) continue;
    const size_t b = static_cast<size_t>(w) * k;
    const bool add = req[w] == OpReq::kAddTo;
    WEFT_FLOAT_TYPE_SWITCH(in[b].dtype, T, "Operator '" + attrs.op->name + "'", {
      if constexpr (MP) {
        LambTensor<T, float>(p, w, in[b], in[b + 1], in[b + 2], in[b + 3], in[b + 4].ptr<float>(), out[w], add);
      } else {
        LambTensor<T, T>(p, w, in[b], in[b + 1], in[b + 2], in[b + 3], nullptr, out[w], add);
      }
    });
  }
}

template <int K>
bool MultiLambShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<MultiLAMBParam>();
  CheckCount(attrs, "learning_rates", p.learning_rates.size(), p.num_tensors);
  CheckCount(attrs, "wds", p.wds.size(), p.num_tensors);
  CheckCount(attrs, "step_count", p.step_count.size(), p.num_tensors);
  for (double t : p.step_count)
    if (!(t >= 1) || t != std::floor(t))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
            "': parameter 'step_count': expected whole numbers >= 1 (the update number of each tensor), got ", t);
  return GroupShape(attrs, in, out, K, false);
}

// ---------------------------------------------------------------- group AdaGrad
bool GroupAdagradShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape s = (*in)[0].known_ndim() ? (*in)[0] : (*in)[1].known_ndim() ? (*in)[1] : (*out)[0];
  if (!s.known_ndim()) return false;
  if (s.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'weight': expected at least one dimension (the rows), got shape ",
          s.ToString());
  AssignShape(attrs, in, 0, s, "input");
  AssignShape(attrs, in, 1, s, "input");
  AssignShape(attrs, out, 0, s, "output");
  const Shape& h = (*in)[2];
  if (s.is_known()) {
    if (h.is_known() && (h.ndim() < 1 || h[0] != s[0] || h.Size() != s[0]))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'history': expected one value per row, shape (",
            s[0], ", 1), got shape ", h.ToString());
    if (!h.known_ndim()) (*in)[2] = Shape{s[0], 1};
  }
  return s.is_known() && (*in)[2].is_known();
}

void GroupAdagradCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<GroupAdagradParam>();
  const TBlob& weight = in[0];
  const int64_t rows = weight.shape.ndim() > 0 ? weight.shape[0] : 0;
  if (in[1].Size() != weight.Size() || in[1].dtype != weight.dtype)
    BadInput(attrs, 1, "the weight's dtype and shape " + weight.shape.ToString(), in[1]);
  if (in[2].Size() != rows || in[2].dtype != weight.dtype)
    BadInput(attrs, 2, "one value per row (" + std::to_string(rows) + ") in the weight's dtype", in[2]);
  const int64_t cols = rows == 0 ? 0 : weight.Size() / rows;
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(weight.dtype, T, "Operator '_contrib_group_adagrad_update'", {
    using A = typename AccType<T>::type;
    const T* w = weight.ptr<T>();
    const T* g = in[1].ptr<T>();
    T* hist = in[2].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::GroupAdagrad<A> f(p.lr, p.epsilon, p.rescale_grad, p.clip_gradient);
    ParallelFor(rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(cols, 1)), [=](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        A ss = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const A gi = f.grad(static_cast<A>(g[r * cols + c]));
          ss += gi * gi;
        }
        const A h = f.History(static_cast<A>(hist[r]), ss, cols);
        hist[r] = static_cast<T>(h);
        const A scale = f.Scale(h);
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = r * cols + c;
          Put(o, i, f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), scale), add);
        }
      }
    });
  });
}

int AdamWWeights(const NodeAttrs& a) { return a.Params<MultiAdamWParam>().num_weights; }
int LambTensors(const NodeAttrs& a) { return a.Params<MultiLAMBParam>().num_tensors; }

}  // namespace

WEFT_REGISTER_OP(_multi_adamw_update)
    .Describe("_adamw_update of num_weights weights in one call. Inputs: weight0, grad0, mean0, var0, weight1, ..., "
              "then one rescale_grad array (float32, one value) for all; when it is not finite or zero nothing is "
              "updated. Outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 4 * AdamWWeights(a) + 1; })
    .SetNumOutputs(AdamWWeights)
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients, means and variances, interleaved; rescale_grad")
    .SetParams<MultiAdamWParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs& a) { return WeightsInPlace(AdamWWeights(a), 4); })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs& a) { return StatesOf(AdamWWeights(a), 4, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiAdamWShape<4>)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return GroupType(a, in, out, 4, false, true);
                         })
    .SetAttr<FCompute>("FCompute<cpu>", MultiAdamWCompute<false>);

WEFT_REGISTER_OP(_multi_mp_adamw_update)
    .Describe("_mp_adamw_update of num_weights weights in one call. Inputs: weight0, grad0, mean0, var0, "
              "weight32_0, weight1, ..., then one rescale_grad array for all; moments and master weights are "
              "float32. Outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 5 * AdamWWeights(a) + 1; })
    .SetNumOutputs(AdamWWeights)
    .AddArgument("data", "NDArray-or-Symbol[]",
                 "Weights, gradients, means, variances and float32 master weights, interleaved; rescale_grad")
    .SetParams<MultiAdamWParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs& a) { return WeightsInPlace(AdamWWeights(a), 5); })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs& a) { return StatesOf(AdamWWeights(a), 5, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiAdamWShape<5>)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return GroupType(a, in, out, 5, true, true);
                         })
    .SetAttr<FCompute>("FCompute<cpu>", MultiAdamWCompute<true>);

WEFT_REGISTER_OP(_multi_lamb_update)
    .Describe("Both LAMB phases for num_tensors tensors in one call: each tensor's direction "
              "g = mean_hat/(sqrt(var_hat) + epsilon) + wd*weight, then weight -= lr * (r1/r2) * g with "
              "r1 = norm(weight) (bounded), r2 = norm(g). Inputs: weight0, grad0, mean0, var0, weight1, ...; "
              "outputs: the new weights.")
    .SetNumInputs([](const NodeAttrs& a) { return 4 * LambTensors(a); })
    .SetNumOutputs(LambTensors)
    .AddArgument("data", "NDArray-or-Symbol[]", "Weights, gradients, means and variances, interleaved")
    .SetParams<MultiLAMBParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs& a) { return WeightsInPlace(LambTensors(a), 4); })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs& a) { return StatesOf(LambTensors(a), 4, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiLambShape<4>)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return GroupType(a, in, out, 4, false, false);
                         })
    .SetAttr<FCompute>("FCompute<cpu>", MultiLambCompute<false>);

WEFT_REGISTER_OP(_multi_mp_lamb_update)
    .Describe("_multi_lamb_update on float32 master weights with float32 moments. Inputs: weight0, grad0, mean0, "
              "var0, weight32_0, weight1, ...; outputs: the new weights (the master weights rounded).")
    .SetNumInputs([](const NodeAttrs& a) { return 5 * LambTensors(a); })
    .SetNumOutputs(LambTensors)
    .AddArgument("data", "NDArray-or-Symbol[]",
                 "Weights, gradients, means, variances and float32 master weights, interleaved")
    .SetParams<MultiLAMBParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs& a) { return WeightsInPlace(LambTensors(a), 5); })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs& a) { return StatesOf(LambTensors(a), 5, 2); })
    .SetAttr<FInferShape>("FInferShape", MultiLambShape<5>)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return GroupType(a, in, out, 5, true, false);
                         })
    .SetAttr<FCompute>("FCompute<cpu>", MultiLambCompute<true>);

WEFT_REGISTER_OP(_contrib_group_adagrad_update)
    .Describe("AdaGrad with one history value per row: g = clip(rescale_grad*grad); "
              "history[r] += mean(g[r]^2); weight[r] -= lr * g[r] / sqrt(history[r] + epsilon).")
    .SetNumInputs(3)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("history", "NDArray-or-Symbol", "History, one value per row (updated in place)")
    .SetParams<GroupAdagradParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<FInferShape>("FInferShape", GroupAdagradShape)
    .SetAttr<FCompute>("FCompute<cpu>", GroupAdagradCompute);

}  // namespace op
}  // namespace weft

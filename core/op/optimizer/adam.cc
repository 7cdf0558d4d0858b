// Adam-style update operators with MXNet 1.x's names, parameters and formulas:
//
//   adam_update:   g = clip(rescale_grad*grad + wd*weight)
//                  mean = beta1*mean + (1-beta1)*g;  var = beta2*var + (1-beta2)*g^2
//                  weight -= lr * mean / (sqrt(var) + epsilon)
//                  (bias correction is the caller's: the optimizer folds it into lr)
//   _adamw_update (also adamw_update): decoupled weight decay, scaled by eta:
//                  g = clip(rescale_grad*grad); mean, var as Adam
//                  weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd*weight)
//                  rescale_grad is a one-element array, as in MXNet, so that a loss scaler
//                  can hand over a value it computed on the device; when it is not finite
//                  or zero the update is skipped (weight and states unchanged).
//   lamb_update_phase1: g = clip(rescale_grad*grad); mean, var as Adam;
//                  out = mean_hat / (sqrt(var_hat) + epsilon) + wd*weight, where the hats
//                  divide by (1 - beta^t) when bias_correction is on
//   lamb_update_phase2: r1 = norm(weight) bounded to [lower_bound, upper_bound] (negative
//                  bounds are off), r2 = norm(g); weight -= lr * (r1/r2 or 1 when either is
//                  zero) * g
//   _mp_adamw_update, mp_lamb_update_phase1/2: the same on a float32 master copy weight32
//                  with float32 moments (float16 weights).
#include "core/op/optimizer/optimizer_op.h"
#include "core/op/optimizer/optimizer_params.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(AdamParam, s) {
  s.Field("lr", &AdamParam::lr).Describe("Learning rate.");
  s.Field("beta1", &AdamParam::beta1).Default(0.9).Describe("Decay of the first moment.");
  s.Field("beta2", &AdamParam::beta2).Default(0.999).Describe("Decay of the second moment.");
  s.Field("epsilon", &AdamParam::epsilon).Default(1e-8).Describe("Added to the root of the second moment.");
  s.Field("wd", &AdamParam::wd).Default(0.0).Describe("Weight decay, added to the gradient.");
  s.Field("rescale_grad", &AdamParam::rescale_grad).Default(1.0).Describe("Multiplies the gradient first.");
  s.Field("clip_gradient", &AdamParam::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled, decayed gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
  s.Field("lazy_update", &AdamParam::lazy_update)
      .Default(true)
      .Describe("For row-sparse gradients only (dense arrays always update every row).");
}

WEFT_PARAM_SCHEMA(AdamWParam, s) {
  s.Field("lr", &AdamWParam::lr).Describe("Learning rate (scales the Adam step, not the weight decay).");
  s.Field("beta1", &AdamWParam::beta1).Default(0.9).Describe("Decay of the first moment.");
  s.Field("beta2", &AdamWParam::beta2).Default(0.999).Describe("Decay of the second moment.");
  s.Field("epsilon", &AdamWParam::epsilon).Default(1e-8).Describe("Added to the root of the second moment.");
  s.Field("wd", &AdamWParam::wd).Default(0.0).Describe("Decoupled weight decay.");
  s.Field("eta", &AdamWParam::eta).Describe("Schedule multiplier of the whole step.");
  s.Field("clip_gradient", &AdamWParam::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
}

WEFT_PARAM_SCHEMA(LambPhase1Param, s) {
  s.Field("beta1", &LambPhase1Param::beta1).Default(0.9).Describe("Decay of the first moment.");
  s.Field("beta2", &LambPhase1Param::beta2).Default(0.999).Describe("Decay of the second moment.");
  s.Field("epsilon", &LambPhase1Param::epsilon).Default(1e-6).Describe("Added to the root of the second moment.");
  s.Field("t", &LambPhase1Param::t).Min(1).Describe("Number of the update (from 1), for the bias correction.");
  s.Field("bias_correction", &LambPhase1Param::bias_correction).Default(true).Describe("Correct the moments' bias.");
  s.Field("wd", &LambPhase1Param::wd).Describe("Weight decay, added to the step.");
  s.Field("rescale_grad", &LambPhase1Param::rescale_grad).Default(1.0).Describe("Multiplies the gradient first.");
  s.Field("clip_gradient", &LambPhase1Param::clip_gradient)
      .Default(-1.0)
      .Describe("Clips the rescaled gradient to [-clip_gradient, clip_gradient]; negative turns it off.");
}

WEFT_PARAM_SCHEMA(LambPhase2Param, s) {
  s.Field("lr", &LambPhase2Param::lr).Describe("Learning rate.");
  s.Field("lower_bound", &LambPhase2Param::lower_bound).Default(-1.0).Describe("Lower bound of the weight norm; negative is off.");
  s.Field("upper_bound", &LambPhase2Param::upper_bound).Default(-1.0).Describe("Upper bound of the weight norm; negative is off.");
}

namespace {

using optim::ForEach;
using optim::Put;

void AdamUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<AdamParam>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'adam_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mean = in[2].ptr<T>();
    T* var = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::Adam<A> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m, v);
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, nw, add);
    });
  });
}

bool AdamWShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return optim::UpdateShape(attrs, in, out, 4);
}

// Weight, grad and states share one floating dtype; the rescale array may be any
// floating dtype (it is read as one number).
bool AdamWType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> first(in->begin(), in->begin() + 4);
  bool known = SameFloatType(attrs, &first, out);
  std::copy(first.begin(), first.end(), in->begin());
  DType r = (*in)[4];
  if (r != DType::kUnknown && !IsFloatDType(r))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input 'rescale_grad' must be a floating-point array, got ",
          DTypeName(r));
  return known && r != DType::kUnknown;
}

void AdamWUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<AdamWParam>();
  double scale = 0;
  WEFT_FLOAT_TYPE_SWITCH(in[4].dtype, R, "Operator '_adamw_update'", {
    scale = static_cast<double>(static_cast<typename AccType<R>::type>(in[4].ptr<R>()[0]));
  });
  if (optim::AdamWSkips(scale)) {
    CopyWithReq(in[0], out[0], req[0]);
    return;
  }
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '_adamw_update'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mean = in[2].ptr<T>();
    T* var = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    const optim::AdamW<A> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.eta, scale, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
      const A nw = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m, v);
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, nw, add);
    });
  });
}

void LambPhase1Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LambPhase1Param>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'lamb_update_phase1'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* mean = in[2].ptr<T>();
    T* var = in[3].ptr<T>();
    T* o = out[0].ptr<T>();
    // Dividing by the correction factors once per call instead of per element.
    const optim::LambDirection<A> f(p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                    optim::LambCorrection(p.bias_correction, p.beta1, p.t),
                                    optim::LambCorrection(p.bias_correction, p.beta2, p.t));
    ForEach(in[0].Size(), [=](int64_t i) {
      A m = static_cast<A>(mean[i]), v = static_cast<A>(var[i]);
      const A d = f.Step(static_cast<A>(w[i]), static_cast<A>(g[i]), m, v);
      mean[i] = static_cast<T>(m);
      var[i] = static_cast<T>(v);
      Put(o, i, d, add);
    });
  });
}

// r1 and r2 are norms: one element each, of shape (1,) or ().
bool LambPhase2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (size_t i = 2; i < 4; ++i) {
    const Shape& r = (*in)[i];
    if (r.is_known() && r.Size() != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", i == 2 ? "r1" : "r2",
            "' must hold one value (a norm), got shape ", r.ToString());
  }
  std::vector<Shape> first(in->begin(), in->begin() + 2);
  bool known = optim::UpdateShape(attrs, &first, out, 2);
  std::copy(first.begin(), first.end(), in->begin());
  for (size_t i = 2; i < 4; ++i) {
    if (!(*in)[i].known_ndim()) (*in)[i] = Shape{1};
    known = known && (*in)[i].is_known();
  }
  return known;
}

void LambPhase2Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LambPhase2Param>();
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'lamb_update_phase2'", {
    using A = typename AccType<T>::type;
    const T* w = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* o = out[0].ptr<T>();
    const A step = optim::LambStepSize(static_cast<A>(in[2].ptr<T>()[0]), static_cast<A>(in[3].ptr<T>()[0]), p.lr,
                                       p.lower_bound, p.upper_bound);
    ForEach(in[0].Size(), [=](int64_t i) {
      Put(o, i, optim::LambApply(static_cast<A>(w[i]), static_cast<A>(g[i]), step), add);
    });
  });
}

// ---------------------------------------------------------------- multi-precision forms
// float16 (or any floating) weight and gradient; the moments and the master copy weight32
// are float32 and the arithmetic is float32 throughout.

// Each input the kernels read is checked against the weight: a hand-called operator with
// ill-fitting arrays must fail rather than read out of bounds.
void CheckMPInputs(const NodeAttrs& attrs, const std::vector<TBlob>& in, size_t first_f32, size_t count) {
  for (size_t i = 1; i < count; ++i) {
    const DType want = i >= first_f32 ? DType::kFloat32 : in[0].dtype;
    if (in[i].Size() != in[0].Size() || in[i].dtype != want)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i, ": expected ", DTypeName(want),
            " of the weight's shape ", in[0].shape.ToString(), ", got ", DTypeName(in[i].dtype), " of shape ",
            in[i].shape.ToString());
  }
}

bool MPAdamWShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return optim::UpdateShape(attrs, in, out, 5);
}

bool MPAdamWType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> first(in->begin(), in->begin() + 5);
  bool known = optim::MPUpdateType(attrs, &first, out);
  std::copy(first.begin(), first.end(), in->begin());
  AssignType(attrs, in, 5, DType::kFloat32, "input");
  return known;
}

void MPAdamWUpdateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<AdamWParam>();
  CheckMPInputs(attrs, in, 2, 5);
  if (in[5].dtype != DType::kFloat32 || in[5].Size() != 1)
    Throw(ErrorKind::kShape, "Operator '_mp_adamw_update': input 'rescale_grad': expected float32 of one value, got ",
          DTypeName(in[5].dtype), " of shape ", in[5].shape.ToString());
  const double scale = static_cast<double>(in[5].ptr<float>()[0]);
  if (optim::AdamWSkips(scale)) {
    CopyWithReq(in[0], out[0], req[0]);
    return;
  }
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '_mp_adamw_update'", {
    const T* g = in[1].ptr<T>();
    float* mean = in[2].ptr<float>();
    float* var = in[3].ptr<float>();
    float* w32 = in[4].ptr<float>();
    T* o = out[0].ptr<T>();
    const optim::AdamW<float> f(p.lr, p.beta1, p.beta2, p.epsilon, p.wd, p.eta, scale, p.clip_gradient);
    ForEach(in[0].Size(), [=](int64_t i) {
      float m = mean[i], v = var[i];
      const float nw = f.Step(w32[i], static_cast<float>(g[i]), m, v);
      mean[i] = m;
      var[i] = v;
      w32[i] = nw;
      Put(o, i, nw, add);
    });
  });
}

bool MPLambPhase1Type(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> tmp_out{DType::kUnknown};
  bool known = optim::MPUpdateType(attrs, in, &tmp_out);
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  return known;
}

void MPLambPhase1Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LambPhase1Param>();
  CheckMPInputs(attrs, in, 2, 5);
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'mp_lamb_update_phase1'", {
    const T* g = in[1].ptr<T>();
    float* mean = in[2].ptr<float>();
    float* var = in[3].ptr<float>();
    const float* w32 = in[4].ptr<float>();
    float* o = out[0].ptr<float>();
    const optim::LambDirection<float> f(p.beta1, p.beta2, p.epsilon, p.wd, p.rescale_grad, p.clip_gradient,
                                        optim::LambCorrection(p.bias_correction, p.beta1, p.t),
                                        optim::LambCorrection(p.bias_correction, p.beta2, p.t));
    ForEach(in[0].Size(), [=](int64_t i) {
      float m = mean[i], v = var[i];
      const float d = f.Step(w32[i], static_cast<float>(g[i]), m, v);
      mean[i] = m;
      var[i] = v;
      Put(o, i, d, add);
    });
  });
}

bool MPLambPhase2Shape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> four(in->begin(), in->begin() + 4);
  bool known = LambPhase2Shape(attrs, &four, out);
  std::copy(four.begin(), four.end(), in->begin());
  const Shape s = (*out)[0];
  if (s.known_ndim()) AssignShape(attrs, in, 4, s, "input");
  return known && (*in)[4].is_known();
}

bool MPLambPhase2Type(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0] != DType::kUnknown ? (*in)[0] : (*out)[0];
  for (size_t i = 1; i < 5; ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point weights, got ", DTypeName(t));
  AssignType(attrs, in, 0, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

// Unlike MXNet 1.9.1's kernel, which leaves weight32 as it was although the operator is
// declared to update it (so a float16 LAMB never moves its master copy), the master copy
// takes the step too, as the operator's documented rule says.
void MPLambPhase2Compute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LambPhase2Param>();
  const int64_t n = in[0].Size();
  for (size_t i : {size_t{1}, size_t{4}})
    if (in[i].Size() != n || in[i].dtype != DType::kFloat32)
      Throw(ErrorKind::kShape, "Operator 'mp_lamb_update_phase2': input ", i, ": expected float32 of the weight's shape ",
            in[0].shape.ToString(), ", got ", DTypeName(in[i].dtype), " of shape ", in[i].shape.ToString());
  for (size_t i : {size_t{2}, size_t{3}})
    if (in[i].Size() != 1 || in[i].dtype != DType::kFloat32)
      Throw(ErrorKind::kShape, "Operator 'mp_lamb_update_phase2': input '", i == 2 ? "r1" : "r2",
            "': expected float32 of one value, got ", DTypeName(in[i].dtype), " of shape ", in[i].shape.ToString());
  const bool add = req[0] == OpReq::kAddTo;
  const float step =
      optim::LambStepSize(in[2].ptr<float>()[0], in[3].ptr<float>()[0], p.lr, p.lower_bound, p.upper_bound);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator 'mp_lamb_update_phase2'", {
    const float* g = in[1].ptr<float>();
    float* w32 = in[4].ptr<float>();
    T* o = out[0].ptr<T>();
    ForEach(n, [=](int64_t i) {
      const float nw = optim::LambApply(w32[i], g[i], step);
      w32[i] = nw;
      Put(o, i, nw, add);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(adam_update)
    .Describe("Adam update: g = clip(rescale_grad*grad + wd*weight); mean = beta1*mean + (1-beta1)*g; "
              "var = beta2*var + (1-beta2)*g^2; weight -= lr*mean/(sqrt(var) + epsilon).")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mean", "NDArray-or-Symbol", "First moment (updated in place)")
    .AddArgument("var", "NDArray-or-Symbol", "Second moment (updated in place)")
    .SetParams<AdamParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FCompute>("FCompute<cpu>", AdamUpdateCompute);

WEFT_REGISTER_OP(_adamw_update)
    .AddAlias("adamw_update")
    .Describe("AdamW update with decoupled weight decay: g = clip(rescale_grad*grad); mean, var as Adam; "
              "weight -= eta*(lr*mean/(sqrt(var) + epsilon) + wd*weight). rescale_grad is a one-element array; "
              "when it is not finite or zero the update is skipped.")
    .SetNumInputs(5)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mean", "NDArray-or-Symbol", "First moment (updated in place)")
    .AddArgument("var", "NDArray-or-Symbol", "Second moment (updated in place)")
    .AddArgument("rescale_grad", "NDArray-or-Symbol", "One-element array multiplying the gradient")
    .SetParams<AdamWParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FInferShape>("FInferShape", AdamWShape)
    .SetAttr<FInferType>("FInferType", AdamWType)
    .SetAttr<FCompute>("FCompute<cpu>", AdamWUpdateCompute);

WEFT_REGISTER_OP(lamb_update_phase1)
    .Describe("First phase of LAMB: updates mean and var like Adam and returns the step direction "
              "mean_hat/(sqrt(var_hat) + epsilon) + wd*weight (the weight is not changed).")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient")
    .AddArgument("mean", "NDArray-or-Symbol", "First moment (updated in place)")
    .AddArgument("var", "NDArray-or-Symbol", "Second moment (updated in place)")
    .SetParams<LambPhase1Param>()
    .Include("OptimizerUpdate")
    // The output is a new direction, not the weight: phase 2 still needs the weight.
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{}; })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FCompute>("FCompute<cpu>", LambPhase1Compute);

WEFT_REGISTER_OP(lamb_update_phase2)
    .Describe("Second phase of LAMB: weight -= lr * (r1/r2) * g, with r1 = norm(weight) bounded to "
              "[lower_bound, upper_bound] and r2 = norm(g); the ratio is 1 when either norm is 0.")
    .SetNumInputs(4)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight")
    .AddArgument("g", "NDArray-or-Symbol", "Output of lamb_update_phase1")
    .AddArgument("r1", "NDArray-or-Symbol", "Norm of the weight (one element)")
    .AddArgument("r2", "NDArray-or-Symbol", "Norm of g (one element)")
    .SetParams<LambPhase2Param>()
    .Include("OptimizerUpdate")
    .SetAttr<FInferShape>("FInferShape", LambPhase2Shape)
    .SetAttr<FCompute>("FCompute<cpu>", LambPhase2Compute);

WEFT_REGISTER_OP(_mp_adamw_update)
    .AddAlias("mp_adamw_update")
    .Describe("Multi-precision AdamW: the _adamw_update rule on the float32 master copy weight32 with float32 "
              "moments; the weight receives the master copy. rescale_grad is a one-element float32 array; when it "
              "is not finite or zero the update is skipped.")
    .SetNumInputs(6)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient, the weight's dtype")
    .AddArgument("mean", "NDArray-or-Symbol", "float32 first moment (updated in place)")
    .AddArgument("var", "NDArray-or-Symbol", "float32 second moment (updated in place)")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight (updated in place)")
    .AddArgument("rescale_grad", "NDArray-or-Symbol", "One-element float32 array multiplying the gradient")
    .SetParams<AdamWParam>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3, 4}; })
    .SetAttr<FInferShape>("FInferShape", MPAdamWShape)
    .SetAttr<FInferType>("FInferType", MPAdamWType)
    .SetAttr<FCompute>("FCompute<cpu>", MPAdamWUpdateCompute);

WEFT_REGISTER_OP(mp_lamb_update_phase1)
    .Describe("Multi-precision first phase of LAMB: float32 moments updated like Adam; returns the float32 "
              "direction mean_hat/(sqrt(var_hat) + epsilon) + wd*weight32.")
    .SetNumInputs(5)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("grad", "NDArray-or-Symbol", "Gradient, the weight's dtype")
    .AddArgument("mean", "NDArray-or-Symbol", "float32 first moment (updated in place)")
    .AddArgument("var", "NDArray-or-Symbol", "float32 second moment (updated in place)")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight")
    .SetParams<LambPhase1Param>()
    .Include("OptimizerUpdate")
    .SetAttr<FInplaceOption>("FInplaceOption", [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{}; })
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2, 3}; })
    .SetAttr<FInferShape>("FInferShape", MPAdamWShape)
    .SetAttr<FInferType>("FInferType", MPLambPhase1Type)
    .SetAttr<FCompute>("FCompute<cpu>", MPLambPhase1Compute);

WEFT_REGISTER_OP(mp_lamb_update_phase2)
    .Describe("Multi-precision second phase of LAMB: weight32 -= lr * (r1/r2) * g with r1 bounded to "
              "[lower_bound, upper_bound] (ratio 1 when either norm is 0); the weight receives weight32.")
    .SetNumInputs(5)
    .AddArgument("weight", "NDArray-or-Symbol", "Weight (float16 usually)")
    .AddArgument("g", "NDArray-or-Symbol", "Output of mp_lamb_update_phase1 (float32)")
    .AddArgument("r1", "NDArray-or-Symbol", "Norm of the weight (one float32 value)")
    .AddArgument("r2", "NDArray-or-Symbol", "Norm of g (one float32 value)")
    .AddArgument("weight32", "NDArray-or-Symbol", "float32 master copy of the weight (updated in place)")
    .SetParams<LambPhase2Param>()
    .Include("OptimizerUpdate")
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{4}; })
    .SetAttr<FInferShape>("FInferShape", MPLambPhase2Shape)
    .SetAttr<FInferType>("FInferType", MPLambPhase2Type)
    .SetAttr<FCompute>("FCompute<cpu>", MPLambPhase2Compute);

}  // namespace op
}  // namespace weft

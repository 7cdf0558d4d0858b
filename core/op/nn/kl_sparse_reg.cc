// IdentityAttachKLSparseReg: the identity in the forward pass; in the backward pass it adds
// to the gradient the derivative of a KL-divergence sparseness penalty between a target
// activation rho and each unit's moving average activation (Hinton, "A practical guide to
// training restricted Boltzmann machines", section 11):
//   d data = out_grad + penalty * (-rho / avg + (1 - rho) / (1 - avg)),
// where avg (the auxiliary state moving_avg, one per unit of axis 1) is first updated from
// the batch: avg = momentum * avg + (1 - momentum) * mean over the batch. The data is
// (batch, units), as in MXNet, and meant to be sigmoid outputs (avg in (0, 1)).
#include "core/op/nn/item_grain.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct KLSparseRegParam {
  double sparseness_target = 0.1;
  double penalty = 0.001;
  double momentum = 0.9;
};

WEFT_PARAM_SCHEMA(KLSparseRegParam, s) {
  s.Field("sparseness_target", &KLSparseRegParam::sparseness_target).Default(0.1).Range(0, 1).Describe("The target mean activation rho.");
  s.Field("penalty", &KLSparseRegParam::penalty).Default(0.001).Describe("Weight of the sparseness penalty.");
  s.Field("momentum", &KLSparseRegParam::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving average activation.");
}

namespace {

using nn::Acc;
using nn::Put;

void CheckData(const NodeAttrs& attrs, const Shape& d, const char* what) {
  if (d.ndim() != 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what,
          "' must be 2-D (batch, units), got shape ", d.ToString());
}

// Inputs: data, moving_avg.
bool KLShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0].known_ndim() ? (*in)[0] : (*out)[0];
  if (!d.known_ndim()) return false;
  CheckData(attrs, d, "data");
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, in, 1, Shape({(*in)[0][1]}), "input");
  return (*in)[0].is_known() && (*in)[1].is_known();
}

void KLCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
               const std::vector<TBlob>& out) {
  CopyWithReq(in[0], out[0], req[0]);
}

// Inputs: out_grad, data, moving_avg (updated here).
bool KLBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.known_ndim()) return false;
  CheckData(attrs, d, "data");
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, in, 2, Shape({d[1]}), "input");
  AssignShape(attrs, out, 0, d, "output");
  return d.is_known();
}

void KLBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<KLSparseRegParam>();
  const Shape& d = in[1].shape;
  if (in[0].shape != d || in[2].ndim() != 1 || in[2].shape[0] != d[1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected out_grad of shape ", d.ToString(),
          " and moving_avg of shape (", d[1], ",), got ", in[0].shape.ToString(), " and ", in[2].shape.ToString());
  const int64_t batch = d[0], units = d[1];
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    using A = Acc<T>;
    const T* g = in[0].ptr<T>();
    const T* x = in[1].ptr<T>();
    T* avg = in[2].ptr<T>();
    T* dx = out[0].ptr<T>();
    const A mom = static_cast<A>(p.momentum), rho = static_cast<A>(p.sparseness_target);
    const A pen = static_cast<A>(p.penalty);
    ParallelFor(units, ItemGrain(2 * batch), [&](int64_t ub, int64_t ue) {
      for (int64_t u = ub; u < ue; ++u) {
        A sum = 0;
        for (int64_t b = 0; b < batch; ++b) sum += static_cast<A>(x[b * units + u]);
        const A mean = batch > 0 ? sum / static_cast<A>(batch) : A(0);
        const A m = mom * static_cast<A>(avg[u]) + (A(1) - mom) * mean;
        avg[u] = static_cast<T>(m);
        if (req[0] == OpReq::kNullOp) continue;
        const A extra = pen * (-rho / m + (A(1) - rho) / (A(1) - m));
        for (int64_t b = 0; b < batch; ++b) Put(dx + b * units + u, req[0], static_cast<A>(g[b * units + u]) + extra);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(IdentityAttachKLSparseReg)
    .Describe("Identity whose gradient adds a KL sparseness penalty pulling each unit's moving average activation "
              "towards sparseness_target; data (batch, units) of sigmoid activations.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input data (batch, units)")
    .AddArgument("moving_avg", "NDArray-or-Symbol", "Moving average activation per unit (auxiliary state)")
    .SetParams<KLSparseRegParam>()
    .SetAttr<FInferShape>("FInferShape", KLShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    // The backward updates moving_avg; declaring it here makes it an auxiliary state.
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{1}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", KLCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_IdentityAttachKLSparseReg", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict),
          GradValue()};
    });

WEFT_REGISTER_OP(_backward_IdentityAttachKLSparseReg)
    .Describe("Gradient of IdentityAttachKLSparseReg: (out_grad, data, moving_avg) -> d data; updates moving_avg.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("moving_avg", "NDArray-or-Symbol", "Moving average activation (updated)")
    .SetParams<KLSparseRegParam>()
    .SetAttr<FInferShape>("FInferShape", KLBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FMutateInputs>("FMutateInputs", [](const NodeAttrs&) { return std::vector<int>{2}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", KLBackwardCompute);

}  // namespace op
}  // namespace weft

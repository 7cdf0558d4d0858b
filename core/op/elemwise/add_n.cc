// add_n (ElementWiseSum): the sum of any number of arrays of one shape; each input's
// gradient is the output gradient. _grad_add is a plain elementwise sum of two arrays
// (what gradient accumulation calls, without a gradient of its own), and
// _identity_with_attr_like_rhs passes lhs through, rhs only lending its attributes.
#include "core/op/elemwise/registration.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct AddNParam {
  int num_args = 1;
};

WEFT_PARAM_SCHEMA(AddNParam, s) {
  s.Field("num_args", &AddNParam::num_args).Min(1).Describe("Number of inputs to be summed.");
}

namespace {

int NumArgs(const NodeAttrs& attrs) { return attrs.Params<AddNParam>().num_args; }

void AddNCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    using A = typename AccType<T>::type;
    T* y = out[0].ptr<T>();
    std::vector<const T*> xs;
    for (const auto& b : in) xs.push_back(b.ptr<T>());
    // Summed element by element, so an output sharing memory with input 0 is read before
    // it is written.
    ParallelFor(out[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        A s = 0;
        for (const T* x : xs) s = static_cast<A>(s + static_cast<A>(x[i]));
        Store(y + i, req[0], s);
      }
    });
  });
}

// The output takes lhs's dtype; rhs may have any (its shape is the same, as MXNet's
// ElemwiseShape<2, 1> of this operator has it, which lets shapes flow back to rhs).
bool LhsType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  return (*in)[0] != DType::kUnknown && (*in)[1] != DType::kUnknown;
}

}  // namespace

WEFT_REGISTER_OP(add_n)
    .Describe("Adds all input arguments element-wise: add_n(a1, ..., an) = a1 + ... + an, in one pass.")
    .AddAlias("ElementWiseSum")
    .SetNumInputs(NumArgs)
    .SetKeyVarNumArgs("num_args")
    .AddArgument("args", "NDArray-or-Symbol[]", "Positional input arguments")
    .SetParams<AddNParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", AddNCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder&, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>(a.inputs.size(), a.out_grads[0]);
    });

WEFT_ELEMWISE_BINARY_OP(_grad_add, add_op)
    .Describe("lhs + rhs elementwise, for gradient accumulation.");

WEFT_REGISTER_OP(_identity_with_attr_like_rhs)
    .Describe("lhs unchanged; rhs lends only its attributes (its storage type in MXNet).")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "First input.")
    .AddArgument("rhs", "NDArray-or-Symbol", "Second input.")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", LhsType)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{a.out_grads[0], b.Op("zeros_like", {a.inputs[1]})};
    });

}  // namespace op
}  // namespace weft

// The mixed-precision and LARS helpers that look at many arrays at once: all_finite and
// multi_all_finite (a float32 flag of shape (1,), 0 once any element is inf or NaN),
// multi_sum_sq (each array's sum of squares), multi_lars (LARS learning rates from
// them) and reset_arrays (zeroes every input in place, no outputs).
#include <cmath>
#include <cstring>

#include "core/op/op_util.h"
#include "core/op/reduce/multi_tensor_params.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(AllFiniteParam, s) {
  s.Field("init_output", &AllFiniteParam::init_output)
      .Default(true)
      .Describe("Initialize output to 1; false keeps what the output holds unless a non-finite value is found.");
}

WEFT_PARAM_SCHEMA(MultiArraysParam, s) {
  s.Field("num_arrays", &MultiArraysParam::num_arrays).Default(1).Min(1).Describe("Number of arrays.");
  s.Field("init_output", &MultiArraysParam::init_output)
      .Default(true)
      .Describe("Initialize output to 1 (multi_all_finite only).");
}

WEFT_PARAM_SCHEMA(CountParam, s) {
  s.Field("num_arrays", &CountParam::num_arrays).Min(1).Describe("number of input arrays.");
}

WEFT_PARAM_SCHEMA(LARSParam, s) {
  s.Field("eta", &LARSParam::eta).Describe("LARS eta");
  s.Field("eps", &LARSParam::eps).Describe("LARS eps");
  s.Field("rescale_grad", &LARSParam::rescale_grad).Default(1.0).Describe("Gradient rescaling factor");
}

namespace {

bool FlagShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape({1}), "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return true;
}

// Inputs of any one floating-point dtype; a float32 output.
bool FloatInputsFloat32Output(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point arrays, got ", DTypeName(t));
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, t, "input");
  return true;
}

bool AnyNonFinite(const TBlob& b) {
  bool bad = false;
  WEFT_TYPE_SWITCH(b.dtype, T, {
    const T* x = b.ptr<T>();
    for (int64_t i = 0; !bad && i < b.Size(); ++i) bad = !std::isfinite(static_cast<double>(x[i]));
  });
  return bad;
}

void AllFiniteFlag(const std::vector<TBlob>& in, const TBlob& out, bool init) {
  float* flag = out.ptr<float>();
  if (init) *flag = 1.0f;
  for (const auto& b : in)
    if (AnyNonFinite(b)) *flag = 0.0f;
}

void AllFiniteCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  AllFiniteFlag(in, out[0], attrs.Params<AllFiniteParam>().init_output);
}

void MultiAllFiniteCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  AllFiniteFlag(in, out[0], attrs.Params<MultiArraysParam>().init_output);
}

int NumArrays(const NodeAttrs& attrs) { return attrs.Params<MultiArraysParam>().num_arrays; }

bool SumSqShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape({static_cast<int64_t>(in->size())}), "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return true;
}

void MultiSumSqCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  float* y = out[0].ptr<float>();
  for (size_t a = 0; a < in.size(); ++a) {
    double s = 0;
    WEFT_TYPE_SWITCH(in[a].dtype, T, {
      const T* x = in[a].ptr<T>();
      for (int64_t i = 0; i < in[a].Size(); ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    });
    Store(y + a, req[0], s);
  }
}

// Inputs (lrs, weights_sum_sq, grads_sum_sq, wds): float32 vectors of one length.
bool LARSShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in)
    if (s.known_ndim() && s.ndim() != 1)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected 1-D inputs, got shape ", s.ToString());
  return SameShape(attrs, in, out);
}

bool LARSType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  return true;
}

void MultiLARSCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<LARSParam>();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].shape != out[0].shape)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " has shape ",
            in[i].shape.ToString(), " but the operator expects ", out[0].shape.ToString());
  const float* lrs = in[0].ptr<float>();
  const float* wss = in[1].ptr<float>();
  const float* gss = in[2].ptr<float>();
  const float* wds = in[3].ptr<float>();
  float* y = out[0].ptr<float>();
  for (int64_t i = 0; i < out[0].Size(); ++i) {
    double w = std::sqrt(static_cast<double>(wss[i]));
    bool valid = w > 0 && gss[i] > 0;
    double lr = valid ? lrs[i] * p.eta * w / (std::sqrt(static_cast<double>(gss[i])) * p.rescale_grad + wds[i] * w + p.eps)
                      : lrs[i];
    Store(y + i, req[0], lr);
  }
}

int CountArrays(const NodeAttrs& attrs) { return attrs.Params<CountParam>().num_arrays; }

void ResetArraysCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>&,
                        const std::vector<TBlob>&) {
  for (const auto& b : in) std::memset(b.dptr, 0, b.Size() * DTypeSize(b.dtype));
}

}  // namespace

WEFT_REGISTER_OP(all_finite)
    .Describe("A float32 flag of shape (1,): 1 when every element of data is finite, 0 otherwise.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray", "Array")
    .SetParams<AllFiniteParam>()
    .SetAttr<FInferShape>("FInferShape", FlagShape)
    .SetAttr<FInferType>("FInferType", FloatInputsFloat32Output)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", AllFiniteCompute);

WEFT_REGISTER_OP(multi_all_finite)
    .Describe("A float32 flag of shape (1,): 1 when every element of every array is finite, 0 otherwise.")
    .SetNumInputs(NumArrays)
    .SetKeyVarNumArgs("num_arrays")
    .AddArgument("data", "NDArray-or-Symbol[]", "Arrays")
    .SetParams<MultiArraysParam>()
    .SetAttr<FInferShape>("FInferShape", FlagShape)
    .SetAttr<FInferType>("FInferType", FloatInputsFloat32Output)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", MultiAllFiniteCompute);

WEFT_REGISTER_OP(multi_sum_sq)
    .Describe("The sum of squares of each array, as a float32 vector of num_arrays entries.")
    .SetNumInputs(CountArrays)
    .SetKeyVarNumArgs("num_arrays")
    .AddArgument("data", "NDArray-or-Symbol[]", "Arrays")
    .SetParams<CountParam>()
    .SetAttr<FInferShape>("FInferShape", SumSqShape)
    .SetAttr<FInferType>("FInferType", FloatInputsFloat32Output)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", MultiSumSqCompute);

WEFT_REGISTER_OP(multi_lars)
    .Describe("LARS learning rates: lr * eta * |w| / (|g| * rescale_grad + wd * |w| + eps) from the squared norms "
              "of weights and gradients, or lr where either norm is 0.")
    .SetNumInputs(4)
    .AddArgument("lrs", "NDArray-or-Symbol", "Learning rates to scale by LARS coefficient")
    .AddArgument("weights_sum_sq", "NDArray-or-Symbol", "sum of square of weights arrays")
    .AddArgument("grads_sum_sq", "NDArray-or-Symbol", "sum of square of gradients arrays")
    .AddArgument("wds", "NDArray-or-Symbol", "weight decays")
    .SetParams<LARSParam>()
    .SetAttr<FInferShape>("FInferShape", LARSShape)
    .SetAttr<FInferType>("FInferType", LARSType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MultiLARSCompute);

WEFT_REGISTER_OP(reset_arrays)
    .Describe("Sets every element of every input array to zero, in place.")
    .SetNumInputs(CountArrays)
    .SetNumOutputs(0)
    .SetKeyVarNumArgs("num_arrays")
    .AddArgument("data", "NDArray-or-Symbol[]", "Arrays")
    .SetParams<CountParam>()
    .SetAttr<FMutateInputs>("FMutateInputs",
                            [](const NodeAttrs& attrs) {
                              std::vector<int> all;
                              for (int i = 0; i < CountArrays(attrs); ++i) all.push_back(i);
                              return all;
                            })
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs&, std::vector<Shape>* in, std::vector<Shape>*) {
                            for (const auto& s : *in) if (!s.is_known()) return false;
                            return true;
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs&, std::vector<DType>* in, std::vector<DType>*) {
                           for (DType t : *in) if (t == DType::kUnknown) return false;
                           return true;
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ResetArraysCompute);

}  // namespace op
}  // namespace weft

// concat (Concat): joins arrays along an existing axis. Its gradient splits the output
// gradient back into pieces of the inputs' sizes (_backward_concat).
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct ConcatParam {
  int num_args = 1;
  int dim = 1;
};

WEFT_PARAM_SCHEMA(ConcatParam, s) {
  s.Field("num_args", &ConcatParam::num_args).Min(1).Describe("Number of inputs.");
  s.Field("dim", &ConcatParam::dim).Default(1).Describe("The axis to join along; negative counts from the end.");
}

namespace {

// Checks that the pieces fit together along `dim`; returns the joined shape.
Shape JoinedShape(const NodeAttrs& attrs, const std::vector<Shape>& pieces, int first) {
  const Shape& s0 = pieces[first];
  int axis = CheckAxis(attrs, attrs.Params<ConcatParam>().dim, s0.ndim(), "dim");
  Shape out = s0;
  out[axis] = 0;
  for (size_t i = first; i < pieces.size(); ++i) {
    const Shape& s = pieces[i];
    bool ok = s.ndim() == s0.ndim();
    for (int d = 0; ok && d < s0.ndim(); ++d) ok = d == axis || s[d] == s0[d];
    if (!ok)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i - first, " has shape ", s.ToString(),
            " but input 0 has shape ", s0.ToString(), "; they may differ only along axis ", axis);
    out[axis] += s[axis];
  }
  return out;
}

// Partial inference both ways, as MXNet's: the dims off the axis are shared by every input
// and the output, and up to `max_unknown` unknown sizes along the axis follow from the
// output's, which they share equally.
bool JoinShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, int max_unknown) {
  int nd = (*out)[0].known_ndim() ? (*out)[0].ndim() : -1;
  for (const auto& s : *in)
    if (s.known_ndim()) nd = s.ndim();
  if (nd > 0) {
    const int axis = CheckAxis(attrs, attrs.Params<ConcatParam>().dim, nd, "dim");
    Shape common(nd);
    std::vector<Shape*> all;
    for (auto& s : *in) all.push_back(&s);
    all.push_back(&(*out)[0]);
    for (const Shape* x : all)
      if (x->known_ndim() && x->ndim() == nd)
        for (int d = 0; d < nd; ++d)
          if (d != axis && common[d] < 0) common[d] = (*x)[d];
    int64_t sum = 0;
    std::vector<size_t> unknown;
    for (size_t i = 0; i < in->size(); ++i) {
      Shape& x = (*in)[i];
      if (x.known_ndim() && x.ndim() != nd) continue;
      Shape want = common;
      want[axis] = x.known_ndim() ? x[axis] : -1;
      AssignShape(attrs, in, i, want, "input");
      if (x[axis] < 0) {
        unknown.push_back(i);
      } else {
        sum += x[axis];
      }
    }
    Shape whole = common;
    whole[axis] = unknown.empty() ? sum : -1;
    if (!(*out)[0].known_ndim() || (*out)[0].ndim() == nd) AssignShape(attrs, out, 0, whole, "output");
    const Shape& o = (*out)[0];
    const int64_t n = static_cast<int64_t>(unknown.size());
    if (n >= 1 && n <= max_unknown && o.known_ndim() && o[axis] >= sum && (o[axis] - sum) % n == 0) {
      for (size_t i : unknown) {
        Shape rest = (*in)[i];
        rest[axis] = (o[axis] - sum) / n;
        AssignShape(attrs, in, i, rest, "input");
      }
    }
  }
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  AssignShape(attrs, out, 0, JoinedShape(attrs, *in, 0), "output");
  return true;
}

bool ConcatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return JoinShape(attrs, in, out, 1);
}

// gluon.rnn's fused layers join every layer's flattened weights; before the first call the
// first layer's input size is unknown in its one (or, bidirectional, two) i2h weights,
// which share what the RNN operator's parameter vector leaves over.
bool RnnParamConcatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return JoinShape(attrs, in, out, 2);
}

std::vector<GradValue> ConcatGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  std::vector<GradValue> ins = {a.out_grads[0]};
  ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
  return b.Call("_backward_concat", ins, attrs.dict);
}

void ViewAlong(const Shape& s, int axis, int64_t* outer, int64_t* inner) {
  *outer = s.ProdRange(0, axis);
  *inner = s.ProdRange(axis + 1, s.ndim());
}

void ConcatCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  int axis = CheckAxis(attrs, attrs.Params<ConcatParam>().dim, out[0].ndim(), "dim");
  std::vector<int64_t> sizes;
  for (const auto& b : in) sizes.push_back(b.shape[axis]);
  int64_t outer, inner;
  ViewAlong(out[0].shape, axis, &outer, &inner);
  AxisConcat(ctx, ConcatDirection::kPiecesToWhole, out[0], in, sizes, outer, inner, req);
}

// Inputs: the output gradient, then the forward inputs (for their sizes).
void ConcatBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  int axis = CheckAxis(attrs, attrs.Params<ConcatParam>().dim, in[0].ndim(), "dim");
  std::vector<int64_t> sizes;
  for (const auto& b : out) sizes.push_back(b.shape[axis]);
  int64_t outer, inner;
  ViewAlong(in[0].shape, axis, &outer, &inner);
  AxisConcat(ctx, ConcatDirection::kWholeToPieces, in[0], out, sizes, outer, inner, req);
}

bool ConcatBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (size_t i = 1; i < in->size(); ++i)
    if (!(*in)[i].is_known()) return false;
  AssignShape(attrs, in, 0, JoinedShape(attrs, *in, 1), "input");
  for (size_t i = 1; i < in->size(); ++i) AssignShape(attrs, out, i - 1, (*in)[i], "output");
  return true;
}

int NumArgs(const NodeAttrs& attrs) { return attrs.Params<ConcatParam>().num_args; }

}  // namespace

WEFT_REGISTER_OP(Concat)
    .Describe("Joins the inputs along axis dim; they must agree on every other axis.")
    .AddAlias("concat")
    .SetNumInputs(NumArgs)
    .SetKeyVarNumArgs("num_args")
    .AddArgument("data", "NDArray-or-Symbol[]", "The arrays to join")
    .SetParams<ConcatParam>()
    .SetAttr<FInferShape>("FInferShape", ConcatShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ConcatCompute)
    .SetAttr<FGradient>("FGradient", ConcatGrad);

WEFT_REGISTER_OP(_rnn_param_concat)
    .Describe(
        "Concat for the packed parameters of gluon.rnn's fused layers: as Concat, but up to two inputs of unknown "
        "size along dim share equally what the known output leaves over.")
    .SetNumInputs(NumArgs)
    .SetKeyVarNumArgs("num_args")
    .AddArgument("data", "NDArray-or-Symbol[]", "The arrays to join")
    .SetParams<ConcatParam>()
    .SetAttr<FInferShape>("FInferShape", RnnParamConcatShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", ConcatCompute)
    .SetAttr<FGradient>("FGradient", ConcatGrad);

WEFT_REGISTER_OP(_backward_concat)
    .Describe("Gradient of concat: the output gradient split into pieces of the inputs' sizes.")
    .SetNumInputs([](const NodeAttrs& attrs) { return NumArgs(attrs) + 1; })
    .SetNumOutputs(NumArgs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol[]", "The forward inputs (for their shapes)")
    .SetParams<ConcatParam>()
    .SetAttr<FInferShape>("FInferShape", ConcatBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", ConcatBackward);

WEFT_DEVICE_COMPUTE(Concat, ConcatCompute);
WEFT_DEVICE_COMPUTE(_rnn_param_concat, ConcatCompute);
WEFT_DEVICE_COMPUTE(_backward_concat, ConcatBackward);

}  // namespace op
}  // namespace weft

// FullyConnected: out = data * weight^T + bias, with MXNet's parameters and input order
// (data, weight, bias). With flatten=True the data (N, d1, ..., dk) is seen as the matrix
// (N, d1*...*dk); with flatten=False the product applies to the last axis and the other
// axes are kept. All three products (forward, data gradient, weight gradient) run on Gemm,
// which is oneDNN's sgemm for float32.
#include "core/op/linalg/gemm.h"
#include "core/op/nn/fully_connected.h"
#include "core/op/op_util.h"
#include "core/op/work_estimate.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(FullyConnectedParam, s) {
  s.Field("num_hidden", &FullyConnectedParam::num_hidden).Min(1).Describe("Number of hidden units (output size).");
  s.Field("no_bias", &FullyConnectedParam::no_bias).Default(false).Describe("Whether to leave out the bias.");
  s.Field("flatten", &FullyConnectedParam::flatten)
      .Default(true)
      .Describe("Whether to collapse every axis of the data but the first; otherwise only the last axis is used.");
}

namespace {

// The data as a matrix: rows x cols (cols is the input size the weight must match).
struct FCView {
  int64_t rows = 0, cols = 0;
};

FCView ViewData(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  FCView v;
  if (p.flatten) {
    v.rows = data[0];
    v.cols = data.ProdRange(1, data.ndim());
  } else {
    v.rows = data.ProdRange(0, data.ndim() - 1);
    v.cols = data[data.ndim() - 1];
  }
  return v;
}

Shape OutputShape(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  if (p.flatten) return Shape{data[0], p.num_hidden};
  Shape out = data;
  out[out.ndim() - 1] = p.num_hidden;
  return out;
}

// Checks a known weight or bias shape against what the data and num_hidden require, with
// a message naming both shapes and where the expectation comes from.
void CheckParamShape(const NodeAttrs& attrs, const Shape& got, const Shape& want, const char* what,
                     const Shape& data) {
  if (!got.known_ndim()) return;
  bool ok = got.ndim() == want.ndim();
  for (int d = 0; ok && d < want.ndim(); ++d) ok = got[d] < 0 || got[d] == want[d];
  if (!ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': Shape inconsistent, Provided = ", got.ToMXNetString(),
          ", inferred shape=", want.ToMXNetString(), ": input '", what, "' has shape ", got.ToString(),
          " but data of shape ", data.ToString(), " with num_hidden=", attrs.Params<FullyConnectedParam>().num_hidden,
          " (flatten=", attrs.Params<FullyConnectedParam>().flatten ? "True" : "False", ") needs ", want.ToString());
}

bool FCShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  const Shape& data = (*in)[0];
  // Partial inference backwards: the data's batch dims are the output's.
  const Shape& o = (*out)[0];
  if (data.known_ndim() && data.ndim() >= 1 && !data.is_known() && o.known_ndim()) {
    Shape d = data;
    if (p.flatten && o.ndim() == 2 && d[0] < 0) d[0] = o[0];
    if (!p.flatten && o.ndim() == d.ndim())
      for (int i = 0; i + 1 < d.ndim(); ++i)
        if (d[i] < 0) d[i] = o[i];
    AssignShape(attrs, in, 0, d, "input");
  }
  if (!data.is_known()) return false;
  if (data.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data with at least 1 dimension, got shape ",
          data.ToString());
  FCView v = ViewData(attrs, data);
  Shape w{p.num_hidden, v.cols};
  CheckParamShape(attrs, (*in)[1], w, "weight", data);
  AssignShape(attrs, in, 1, w, "input");
  if (!p.no_bias) {
    // MXNet also takes a bias of shape (num_hidden, 1): the same values in the same order.
    const Shape& given = (*in)[2];
    const bool column = given.is_known() && given.ndim() == 2 && given[0] == p.num_hidden && given[1] == 1;
    if (!column) {
      Shape b{p.num_hidden};
      CheckParamShape(attrs, given, b, "bias", data);
      AssignShape(attrs, in, 2, b, "input");
    }
  }
  AssignShape(attrs, out, 0, OutputShape(attrs, data), "output");
  return true;
}

// y[r, :] = bias (or += bias, when adding to y) for every row.
template <typename T>
void PutBias(T* y, const T* bias, int64_t rows, int64_t cols, bool add) {
  ParallelFor(rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* row = y + r * cols;
      if (add)
        for (int64_t j = 0; j < cols; ++j) row[j] = static_cast<T>(row[j] + bias[j]);
      else
        std::copy(bias, bias + cols, row);
    }
  });
}

// The bias goes into the output first and the product accumulates onto it, so the output
// is walked once by the product rather than once more after it.
void FCCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
               const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<FullyConnectedParam>();
  FCView v = ViewData(attrs, in[0].shape);
  const int64_t n = p.num_hidden;
  const bool add = req[0] == OpReq::kAddTo;
  if (!p.no_bias) {
    WEFT_TYPE_SWITCH(out[0].dtype, T, {
      if constexpr (!std::is_same_v<T, bool>) PutBias(out[0].ptr<T>(), in[2].ptr<T>(), v.rows, n, add);
    });
  }
  GemmOperand x{in[0].dptr, v.cols, 0, false};
  GemmOperand w{in[1].dptr, v.cols, 0, true};
  Gemm(in[0].dtype, v.rows, n, v.cols, x, w, add || !p.no_bias ? 1.0 : 0.0, out[0].dptr, n, 0, 1,
       attrs.op->name.c_str());
}

// db[j] (op)= sum_r g[r, j]. Columns are split across threads; each thread walks the rows
// in order so the reads stay sequential, accumulating in AccType.
template <typename T>
void SumRows(const T* g, int64_t rows, int64_t cols, T* db, OpReq req) {
  using A = typename AccType<T>::type;
  ParallelFor(cols, std::max<int64_t>(16, kElemGrain / std::max<int64_t>(rows, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(e - b), A(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = g + r * cols;
      for (int64_t j = b; j < e; ++j) acc[j - b] += static_cast<A>(row[j]);
    }
    for (int64_t j = b; j < e; ++j) Store(db + j, req, acc[j - b]);
  });
}

// Inputs: ograd, data, weight and, unless no_bias, the bias (for its shape). Outputs: dData,
// dWeight and, unless no_bias, dBias.
//   dData (rows x cols)     = G (rows x n) * W (n x cols)
//   dWeight (n x cols)      = G^T (n x rows) * X (rows x cols)
//   dBias (n)               = sum over rows of G
void FCBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  FCView v = ViewData(attrs, in[1].shape);
  const int64_t n = p.num_hidden;
  const char* name = attrs.op->name.c_str();
  const DType dt = in[0].dtype;
  if (req[0] != OpReq::kNullOp) {
    GemmOperand g{in[0].dptr, n, 0, false};
    GemmOperand w{in[2].dptr, v.cols, 0, false};
    Gemm(dt, v.rows, v.cols, n, g, w, req[0] == OpReq::kAddTo ? 1.0 : 0.0, out[0].dptr, v.cols, 0, 1, name);
  }
  if (req[1] != OpReq::kNullOp) {
    GemmOperand gt{in[0].dptr, n, 0, true};
    GemmOperand x{in[1].dptr, v.cols, 0, false};
    Gemm(dt, n, v.cols, v.rows, gt, x, req[1] == OpReq::kAddTo ? 1.0 : 0.0, out[1].dptr, v.cols, 0, 1, name);
  }
  if (!p.no_bias && req[2] != OpReq::kNullOp) {
    WEFT_TYPE_SWITCH(dt, T, {
      if constexpr (!std::is_same_v<T, bool>) SumRows(in[0].ptr<T>(), v.rows, n, out[2].ptr<T>(), req[2]);
    });
  }
}

bool FCBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<FullyConnectedParam>();
  if (!p.no_bias) {
    // The bias gradient takes the bias's own shape, (num_hidden,) or MXNet's column
    // (num_hidden, 1), known from either side.
    const Shape& bias = (*in)[3].is_known() ? (*in)[3] : (*out)[2];
    const bool column = bias.is_known() && bias.ndim() == 2 && bias[0] == p.num_hidden && bias[1] == 1;
    const Shape b = column ? bias : Shape{p.num_hidden};
    if (!column) CheckParamShape(attrs, (*in)[3], b, "bias", (*in)[1]);
    AssignShape(attrs, in, 3, b, "input");
    AssignShape(attrs, out, 2, b, "output");
  }
  const Shape& data = (*in)[1];
  if (!data.is_known()) return false;
  FCView v = ViewData(attrs, data);
  Shape w{p.num_hidden, v.cols};
  CheckParamShape(attrs, (*in)[2], w, "weight", data);
  AssignShape(attrs, in, 2, w, "input");
  AssignShape(attrs, in, 0, OutputShape(attrs, data), "input");
  AssignShape(attrs, out, 0, data, "output");
  AssignShape(attrs, out, 1, w, "output");
  return true;
}

int NumParamInputs(const NodeAttrs& attrs) { return attrs.Params<FullyConnectedParam>().no_bias ? 2 : 3; }

// The backward reads the bias too (unless no_bias), for its shape only.
int NumBackwardInputs(const NodeAttrs& attrs) { return NumParamInputs(attrs) + 1; }

// attrs with no_bias=True: the same product without a bias input or output.
KwArgs WithoutBias(const NodeAttrs& attrs) {
  KwArgs kw;
  for (const auto& kv : attrs.dict)
    if (kv.first != "no_bias") kw.push_back(kv);
  kw.emplace_back("no_bias", "True");
  return kw;
}

// _backward_FullyConnected(og, x, W [, b]) = (og W, og^T x [, sum of og's rows]), bilinear in og
// and (x, W); b gives only its shape. With g_x, g_W, g_b the gradients flowing into those
// outputs:
//   d og = x g_W^T + g_b + g_x W^T,  d x = og g_W,  d W = og^T g_x,
// each again a FullyConnected or its backward, so every order is differentiable.
std::vector<GradValue> FCBackwardGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  const GradValue& og = a.inputs[0];
  const GradValue& x = a.inputs[1];
  const GradValue& w = a.inputs[2];
  const GradValue& g_x = a.out_grads[0];
  const GradValue& g_w = a.out_grads[1];
  const KwArgs no_bias = WithoutBias(attrs);
  std::vector<GradValue> through_w = {x, g_w};
  if (!attrs.Params<FullyConnectedParam>().no_bias) through_w.push_back(a.out_grads[2]);
  GradValue d_og = b.Op("elemwise_add", {b.Op("FullyConnected", through_w, attrs.dict),
                                         b.Op("FullyConnected", {g_x, w}, no_bias)});
  GradValue d_x = b.Call("_backward_FullyConnected", {og, x, g_w}, no_bias)[0];
  GradValue d_w = b.Call("_backward_FullyConnected", {og, g_x, w}, no_bias)[1];
  std::vector<GradValue> grads = {d_og, d_x, d_w};
  // The bias input only lends its shape: nothing flows back to it.
  if (a.inputs.size() > 3) grads.emplace_back();
  return grads;
}

// Forward: a multiply-add per output element and input feature. Backward: twice that (the
// data's and the weight's gradients), the output gradient standing for the output.
double FCNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 2.0 * LayerMacs(out[0], in[1]) * kNsPerGemmFlop + StreamNs(in, out);
}

double FCBackwardNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return 4.0 * LayerMacs(in[0], in[2]) * kNsPerGemmFlop + StreamNs(in, out);
}

}  // namespace

WEFT_REGISTER_OP(FullyConnected)
    .Describe(
        "Applies a linear transformation: out = data * weight^T + bias. With flatten=True the data (N, d1, ..., dk) "
        "is seen as (N, d1*...*dk) and the output is (N, num_hidden); with flatten=False the last axis is "
        "transformed and the output is (d0, ..., d(k-1), num_hidden). weight is (num_hidden, input size) and bias "
        "(num_hidden,).")
    .SetNumInputs(NumParamInputs)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight matrix (num_hidden, input size)")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias (num_hidden,) or (num_hidden, 1); absent with no_bias=True")
    .SetParams<FullyConnectedParam>()
    .SetAttr<FInferShape>("FInferShape", FCShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", FCCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", FCNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      // The bias (when there is one) goes along so that its gradient comes out in the
      // bias's own shape, (num_hidden,) or (num_hidden, 1), with no reshape after.
      std::vector<GradValue> in = {a.out_grads[0], a.inputs[0], a.inputs[1]};
      if (a.inputs.size() > 2) in.push_back(a.inputs[2]);
      return b.Call("_backward_FullyConnected", in, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_FullyConnected)
    .Describe("Gradients of FullyConnected with respect to data, weight and (unless no_bias) bias; the bias "
              "gradient has the shape of the bias given.")
    .SetNumInputs(NumBackwardInputs)
    .SetNumOutputs(NumParamInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .AddArgument("bias", "NDArray-or-Symbol", "The forward bias, read for its shape only; absent with no_bias=True")
    .SetParams<FullyConnectedParam>()
    .SetAttr<FInferShape>("FInferShape", FCBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", FCBackward)
    .SetAttr<FEstimateNs>("FEstimateNs", FCBackwardNs)
    .SetAttr<FGradient>("FGradient", FCBackwardGrad);

}  // namespace op
}  // namespace weft

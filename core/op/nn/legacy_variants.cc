// MXNet's legacy and contrib variants of BatchNorm, Convolution, Pooling and Embedding:
// BatchNorm_v1, Convolution_v1, Pooling_v1, _contrib_SyncBatchNorm,
// _contrib_BatchNormWithReLU and _contrib_SparseEmbedding.
//
// Each keeps its own parameter schema (MXNet's names, defaults and choices, so that old
// symbol files parse and unknown keys are refused) and runs the kernels of the current
// operator: a call is re-parsed as a call of the target operator, whose shape, type and
// compute functions then do the work. The parameters the target does not know (SyncBatchNorm's
// key and ndev, the calibration ranges) are dropped first. Messages still name the legacy
// operator, since the re-parsed attributes keep its Op.
//
// SparseEmbedding is Embedding whose weight gradient MXNet keeps in row_sparse storage; with
// dense arrays (all Weft has) it is Embedding, its `deterministic` switch (an ordering of
// MXNet's GPU gradient) having nothing to order.
//
// SyncBatchNorm synchronises statistics across the devices of one machine; a call on one
// device is exactly BatchNorm, which is all the CPU has. BatchNormWithReLU is
// relu(BatchNorm(x)); its gradient masks the output gradient where the output is 0 and then
// runs BatchNorm's. MXNet lists a fourth, oneDNN-only workspace output; it is not kept here.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/op/nn/conv_common.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct ConvolutionV1Param {
  Shape kernel, stride, dilate, pad;
  int num_filter = 0;
  int num_group = 1;
  int64_t workspace = 1024;
  bool no_bias = false;
  std::string cudnn_tune;
  bool cudnn_off = false;
  std::string layout;
};

WEFT_PARAM_SCHEMA(ConvolutionV1Param, s) {
  s.Field("kernel", &ConvolutionV1Param::kernel).Describe("Convolution kernel size: (h, w) or (d, h, w).");
  s.Field("stride", &ConvolutionV1Param::stride).Default(Shape::Scalar()).Describe("Stride; 1 per axis when empty.");
  s.Field("dilate", &ConvolutionV1Param::dilate).Default(Shape::Scalar()).Describe("Dilation; 1 per axis when empty.");
  s.Field("pad", &ConvolutionV1Param::pad).Default(Shape::Scalar()).Describe("Zero padding on both sides; 0 when empty.");
  s.Field("num_filter", &ConvolutionV1Param::num_filter).Range(1, 100000).Describe("Number of output channels.");
  s.Field("num_group", &ConvolutionV1Param::num_group).Default(1).Range(1, 100000).Describe("Number of groups.");
  s.Field("workspace", &ConvolutionV1Param::workspace).Default(1024).Min(0).Describe("Workspace limit in MB (unused on the CPU).");
  s.Field("no_bias", &ConvolutionV1Param::no_bias).Default(false).Describe("Whether to leave out the bias input.");
  s.Field("cudnn_tune", &ConvolutionV1Param::cudnn_tune).Default("None").Choices({"None", "off", "limited_workspace", "fastest"}).Describe("cuDNN algorithm choice (unused on the CPU).");
  s.Field("cudnn_off", &ConvolutionV1Param::cudnn_off).Default(false).Describe("Turn off cuDNN (unused on the CPU).");
  s.Field("layout", &ConvolutionV1Param::layout).Default("None").Choices({"None", "NCHW", "NHWC", "NCDHW", "NDHWC"}).Describe("Data layout; NCHW and NCDHW are supported.");
}

struct PoolingV1Param {
  Shape kernel, stride, pad;
  std::string pool_type;
  bool global_pool = false;
  std::string pooling_convention;
};

WEFT_PARAM_SCHEMA(PoolingV1Param, s) {
  s.Field("kernel", &PoolingV1Param::kernel).Default(Shape::Scalar()).Describe("Pooling kernel size: (y, x) or (d, y, x).");
  s.Field("pool_type", &PoolingV1Param::pool_type).Default("max").Choices({"max", "avg", "sum"}).Describe("Pooling type.");
  s.Field("global_pool", &PoolingV1Param::global_pool).Default(false).Describe("Pool over the whole spatial extent, ignoring kernel, stride and pad.");
  s.Field("pooling_convention", &PoolingV1Param::pooling_convention).Default("valid").Choices({"full", "valid"}).Describe("How the output size is rounded: valid (floor) or full (ceil).");
  s.Field("stride", &PoolingV1Param::stride).Default(Shape::Scalar()).Describe("Stride; 1 per axis when empty.");
  s.Field("pad", &PoolingV1Param::pad).Default(Shape::Scalar()).Describe("Padding on both sides; 0 when empty.");
}

struct BatchNormV1Param {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
};

WEFT_PARAM_SCHEMA(BatchNormV1Param, s) {
  s.Field("eps", &BatchNormV1Param::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
  s.Field("momentum", &BatchNormV1Param::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving statistics.");
  s.Field("fix_gamma", &BatchNormV1Param::fix_gamma).Default(true).Describe("Treat gamma as 1 (its gradient is 0).");
  s.Field("use_global_stats", &BatchNormV1Param::use_global_stats).Default(false).Describe("Use the moving statistics in training too.");
  s.Field("output_mean_var", &BatchNormV1Param::output_mean_var).Default(false).Describe("Also output mean and var.");
}

struct SyncBatchNormParam {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
  int ndev = 1;
  std::string key;
};

WEFT_PARAM_SCHEMA(SyncBatchNormParam, s) {
  s.Field("eps", &SyncBatchNormParam::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
  s.Field("momentum", &SyncBatchNormParam::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving statistics.");
  s.Field("fix_gamma", &SyncBatchNormParam::fix_gamma).Default(true).Describe("Treat gamma as 1 (its gradient is 0).");
  s.Field("use_global_stats", &SyncBatchNormParam::use_global_stats).Default(false).Describe("Use the moving statistics in training too.");
  s.Field("output_mean_var", &SyncBatchNormParam::output_mean_var).Default(false).Describe("Also output mean and var.");
  s.Field("ndev", &SyncBatchNormParam::ndev).Default(1).Range(1, 1024).Describe("The number of devices whose statistics are synchronised.");
  s.Field("key", &SyncBatchNormParam::key).Describe("The key that the devices of one layer share for synchronisation.");
}

struct SparseEmbeddingParam {
  int64_t input_dim = 0;
  int64_t output_dim = 0;
  DType dtype = DType::kFloat32;
  bool deterministic = false;
};

WEFT_PARAM_SCHEMA(SparseEmbeddingParam, s) {
  s.Field("input_dim", &SparseEmbeddingParam::input_dim).Min(1).Describe("Vocabulary size of the input indices.");
  s.Field("output_dim", &SparseEmbeddingParam::output_dim).Min(1).Describe("Dimension of the embedding vectors.");
  s.Field("dtype", &SparseEmbeddingParam::dtype).Default(DType::kFloat32).Describe("Data type of weight.");
  s.Field("deterministic", &SparseEmbeddingParam::deterministic)
      .Default(false)
      .Describe("Force the backward gradient calculation to be executed based on a deterministic order at the cost "
                "of slower speed (the CPU's is always deterministic).");
}

struct BatchNormReLUParam {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
  bool output_mean_var = false;
  int axis = 1;
  bool cudnn_off = false;
  std::optional<double> min_calib_range, max_calib_range;
};

WEFT_PARAM_SCHEMA(BatchNormReLUParam, s) {
  s.Field("eps", &BatchNormReLUParam::eps).Default(1e-3).Min(0).Describe("Added to the variance before the square root.");
  s.Field("momentum", &BatchNormReLUParam::momentum).Default(0.9).Range(0, 1).Describe("Decay of the moving statistics.");
  s.Field("fix_gamma", &BatchNormReLUParam::fix_gamma).Default(true).Describe("Treat gamma as 1 (its gradient is 0).");
  s.Field("use_global_stats", &BatchNormReLUParam::use_global_stats).Default(false).Describe("Use the moving statistics in training too.");
  s.Field("output_mean_var", &BatchNormReLUParam::output_mean_var).Default(false).Describe("Also output mean and var.");
  s.Field("axis", &BatchNormReLUParam::axis).Default(1).Describe("The channel axis.");
  s.Field("cudnn_off", &BatchNormReLUParam::cudnn_off).Default(false).Describe("Do not use cuDNN (GPU only).");
  s.Field("min_calib_range", &BatchNormReLUParam::min_calib_range).Default(std::nullopt).Describe("Calibrated minimum of the output, for quantisation (unused here).");
  s.Field("max_calib_range", &BatchNormReLUParam::max_calib_range).Default(std::nullopt).Describe("Calibrated maximum of the output, for quantisation (unused here).");
}

namespace {

// The call re-parsed as a call of `target`, without the keys in `drop`.
NodeAttrs AsTarget(const NodeAttrs& attrs, const std::string& target, const std::vector<std::string>& drop = {}) {
  KwArgs kw;
  for (const auto& kv : attrs.dict)
    if (std::find(drop.begin(), drop.end(), kv.first) == drop.end()) kw.push_back(kv);
  NodeAttrs t = MakeAttrs(Op::Get(target), std::move(kw));
  t.name = attrs.name;
  t.op = attrs.op;
  return t;
}

struct Delegate {
  std::string target;
  std::vector<std::string> drop;

  FInferShape Shape() const {
    Delegate d = *this;
    return [d](const NodeAttrs& attrs, std::vector<weft::Shape>* in, std::vector<weft::Shape>* out) {
      static const auto& fns = Op::GetAttr<FInferShape>("FInferShape");
      return fns[Op::Get(d.target)](AsTarget(attrs, d.target, d.drop), in, out);
    };
  }
  FInferType Type() const {
    Delegate d = *this;
    return [d](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
      static const auto& fns = Op::GetAttr<FInferType>("FInferType");
      const Op* op = Op::Get(d.target);
      NodeAttrs t = AsTarget(attrs, d.target, d.drop);
      return fns.Contains(op) ? fns[op](t, in, out) : SameTypeEverywhere(t, in, out);
    };
  }
  FCompute Compute() const {
    Delegate d = *this;
    return [d](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
      static const auto& fns = Op::GetAttr<FCompute>("FCompute<cpu>");
      fns[Op::Get(d.target)](AsTarget(attrs, d.target, d.drop), ctx, in, req, out);
    };
  }
};

std::vector<ResourceRequest> TempSpace(const NodeAttrs&) { return {ResourceRequest{ResourceType::kTempSpace}}; }

// ------------------------------------------------------------------ Convolution_v1
int ConvV1Inputs(const NodeAttrs& attrs) { return attrs.Params<ConvolutionV1Param>().no_bias ? 2 : 3; }

FInferShape ConvV1Shape() {
  FInferShape inner = Delegate{"Convolution", {}}.Shape();
  return [inner](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
    int nd = attrs.Params<ConvolutionV1Param>().kernel.ndim();
    if (nd != 2 && nd != 3)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': kernel must be (h, w) or (d, h, w), got ",
            attrs.Params<ConvolutionV1Param>().kernel.ToString());
    return inner(attrs, in, out);
  };
}

// ------------------------------------------------------------------ the BatchNorm family
// The forward of every BatchNorm variant: inputs data, gamma, beta, moving_mean, moving_var;
// outputs out, mean, var.
template <typename P>
int VisibleBNOutputs(const NodeAttrs& attrs) {
  return attrs.Params<P>().output_mean_var ? 3 : 1;
}

std::vector<std::string> BNOutputNames(const NodeAttrs&) { return {"output", "mean", "var"}; }
std::vector<int> BNMutates(const NodeAttrs&) { return {3, 4}; }

// The gradient of BatchNorm_v1 and SyncBatchNorm: BatchNorm's, through a backward operator
// of their own name.
FGradient BNGradVia(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    std::vector<GradValue> g =
        b.Call(backward, {a.out_grads[0], a.inputs[0], a.inputs[1], a.outputs[1], a.outputs[2]}, attrs.dict);
    return std::vector<GradValue>{g[0], g[1], g[2], GradValue(), GradValue()};
  };
}

const std::vector<std::string> kCalibKeys = {"min_calib_range", "max_calib_range"};

// BatchNorm saves 1 / sqrt(var + eps) as its "var" output; BatchNorm_v1 and SyncBatchNorm save
// the variance itself (as MXNet's do). Their forward converts BatchNorm's, their backward
// converts back before running BatchNorm's (in double: a few values per channel).
template <typename P>
FCompute VarianceSavingForward(const std::vector<std::string>& drop) {
  FCompute bn = Delegate{"BatchNorm", drop}.Compute();
  return [bn](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
    if (req[2] == OpReq::kNullOp) return bn(attrs, ctx, in, req, out);
    std::vector<TBlob> o = out;
    o[2].dptr = ctx.requested.at(0).temp->Get(out[2].Bytes());
    std::vector<OpReq> r = req;
    r[2] = OpReq::kWriteTo;
    bn(attrs, ctx, in, r, o);
    const double eps = attrs.Params<P>().eps;
    WEFT_NN_FLOAT_SWITCH(attrs, out[2].dtype, T, {
      const T* rstd = o[2].ptr<T>();
      T* var = out[2].ptr<T>();
      for (int64_t c = 0; c < out[2].Size(); ++c) {
        const double s = static_cast<double>(rstd[c]);
        nn::Put(var + c, req[2], s > 0 ? std::max(0.0, 1.0 / (s * s) - eps) : 0.0);
      }
    });
  };
}

template <typename P>
FCompute VarianceReadingBackward(const std::vector<std::string>& drop) {
  FCompute bn = Delegate{"_backward_BatchNorm", drop}.Compute();
  return [bn](const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
    std::vector<TBlob> i = in;
    i[4].dptr = ctx.requested.at(0).temp->Get(in[4].Bytes());
    const double eps = attrs.Params<P>().eps;
    WEFT_NN_FLOAT_SWITCH(attrs, in[4].dtype, T, {
      const T* var = in[4].ptr<T>();
      T* rstd = i[4].ptr<T>();
      for (int64_t c = 0; c < in[4].Size(); ++c) {
        const double v = static_cast<double>(var[c]) + eps;
        rstd[c] = static_cast<T>(v > 0 ? 1.0 / std::sqrt(v) : 0.0);
      }
    });
    bn(attrs, ctx, i, req, out);
  };
}

void BNReLUCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  static const FCompute bn = Delegate{"BatchNorm", kCalibKeys}.Compute();
  bn(attrs, ctx, in, req, out);
  if (req[0] == OpReq::kNullOp) return;
  WEFT_NN_FLOAT_SWITCH(attrs, out[0].dtype, T, {
    T* y = out[0].ptr<T>();
    const int64_t n = out[0].Size();
    if (req[0] == OpReq::kAddTo)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an add-to request on the output is not supported");
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = y[i] > T(0) ? y[i] : T(0);
    });
  });
}

// Inputs: out_grad, output, data, gamma, mean, var. Outputs: d data, d gamma, d beta.
bool BNReLUBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  static const FInferShape bn = Delegate{"_backward_BatchNorm", kCalibKeys}.Shape();
  std::vector<Shape> rest{(*in)[0], (*in)[2], (*in)[3], (*in)[4], (*in)[5]};
  bool ok = bn(attrs, &rest, out);
  (*in)[0] = rest[0];
  for (int i = 1; i < 5; ++i) (*in)[i + 1] = rest[i];
  if (!(*in)[2].is_known()) return false;
  AssignShape(attrs, in, 1, (*in)[2], "input");
  return ok;
}

// Types as _backward_BatchNorm's (bfloat16 data may come with float32 gamma and statistics);
// the forward output has the data's type.
bool BNReLUBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  static const FInferType bn = Delegate{"_backward_BatchNorm", kCalibKeys}.Type();
  if ((*in)[2] == DType::kUnknown) (*in)[2] = (*in)[1];
  std::vector<DType> rest{(*in)[0], (*in)[2], (*in)[3], (*in)[4], (*in)[5]};
  bool ok = bn(attrs, &rest, out);
  (*in)[0] = rest[0];
  for (int i = 1; i < 5; ++i) (*in)[i + 1] = rest[i];
  if ((*in)[2] == DType::kUnknown) return false;
  AssignType(attrs, in, 1, (*in)[2], "input");
  return ok;
}

void BNReLUBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  static const FCompute bn = Delegate{"_backward_BatchNorm", kCalibKeys}.Compute();
  for (int i : {1, 2})
    if (in[i].shape != in[0].shape)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i), " has shape ",
            in[i].shape.ToString(), " but out_grad has ", in[0].shape.ToString());
  TBlob masked = in[0];
  masked.dptr = ctx.requested.at(0).temp->Get(in[0].Bytes());
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    const T* y = in[1].ptr<T>();
    T* m = masked.ptr<T>();
    ParallelFor(in[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) m[i] = y[i] > T(0) ? g[i] : T(0);
    });
  });
  bn(attrs, ctx, {masked, in[2], in[3], in[4], in[5]}, req, out);
}

}  // namespace

WEFT_REGISTER_OP(Convolution_v1)
    .Describe("Convolution over 2 or 3 spatial axes with MXNet's first parameter set; runs Convolution's kernels.")
    .SetNumInputs(ConvV1Inputs)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight matrix")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias parameter")
    .SetParams<ConvolutionV1Param>()
    .SetAttr<FInferShape>("FInferShape", ConvV1Shape())
    .SetAttr<FInferType>("FInferType", Delegate{"Convolution", {}}.Type())
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Delegate{"Convolution", {}}.Compute())
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Convolution_v1", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Convolution_v1)
    .Describe("Gradients of Convolution_v1 with respect to data, weight and (unless no_bias) bias.")
    .SetNumInputs(3)
    .SetNumOutputs(ConvV1Inputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input data")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .SetParams<ConvolutionV1Param>()
    .SetAttr<FInferShape>("FInferShape", Delegate{"_backward_Convolution", {}}.Shape())
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", Delegate{"_backward_Convolution", {}}.Compute());

WEFT_REGISTER_OP(Pooling_v1)
    .Describe("Max, average or sum pooling with MXNet's first parameter set; runs Pooling's kernels.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data")
    .SetParams<PoolingV1Param>()
    .SetAttr<FInferShape>("FInferShape", Delegate{"Pooling", {}}.Shape())
    .SetAttr<FInferType>("FInferType", Delegate{"Pooling", {}}.Type())
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", Delegate{"Pooling", {}}.Compute())
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Pooling_v1", {a.out_grads[0], a.inputs[0], a.outputs[0]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Pooling_v1)
    .Describe("Gradient of Pooling_v1: (out_grad, data, output) -> d data.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .SetParams<PoolingV1Param>()
    .SetAttr<FInferShape>("FInferShape", Delegate{"_backward_Pooling", {}}.Shape())
    .SetAttr<FInferType>("FInferType", Delegate{"_backward_Pooling", {}}.Type())
    .SetAttr<FCompute>("FCompute<cpu>", Delegate{"_backward_Pooling", {}}.Compute());

#define WEFT_BN_VARIANT(name, P, drop, doc)                                                               \
  WEFT_REGISTER_OP(name)                                                                                  \
      .Describe(doc)                                                                                      \
      .SetNumInputs(5)                                                                                    \
      .SetNumOutputs(3)                                                                                   \
      .AddArgument("data", "NDArray-or-Symbol", "Input data")                                            \
      .AddArgument("gamma", "NDArray-or-Symbol", "Scale, one per channel")                               \
      .AddArgument("beta", "NDArray-or-Symbol", "Shift, one per channel")                                \
      .AddArgument("moving_mean", "NDArray-or-Symbol", "Moving mean (auxiliary state)")                  \
      .AddArgument("moving_var", "NDArray-or-Symbol", "Moving variance (auxiliary state)")               \
      .SetParams<P>()                                                                                     \
      .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", VisibleBNOutputs<P>)                             \
      .SetAttr<FListNames>("FListOutputNames", BNOutputNames)                                             \
      .SetAttr<FMutateInputs>("FMutateInputs", BNMutates)                                                 \
      .SetAttr<FInferShape>("FInferShape", Delegate{"BatchNorm", drop}.Shape())                           \
      .SetAttr<FInferType>("FInferType", Delegate{"BatchNorm", drop}.Type())                              \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)

#define WEFT_BN_VARIANT_BACKWARD(name, P, drop)                                                           \
  WEFT_REGISTER_OP(name)                                                                                  \
      .SetNumOutputs(3)                                                                                   \
      .SetParams<P>()                                                                                     \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)

WEFT_BN_VARIANT(BatchNorm_v1, BatchNormV1Param, std::vector<std::string>{},
                "Batch normalisation over every axis but 1 with MXNet's first parameter set; runs BatchNorm's kernels.")
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", VarianceSavingForward<BatchNormV1Param>({}))
    .SetAttr<FGradient>("FGradient", BNGradVia("_backward_BatchNorm_v1"));

WEFT_BN_VARIANT_BACKWARD(_backward_BatchNorm_v1, BatchNormV1Param, std::vector<std::string>{})
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .Describe("Gradient of BatchNorm_v1: (out_grad, data, gamma, mean, var) -> (d data, d gamma, d beta).")
    .SetNumInputs(5)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("gamma", "NDArray-or-Symbol", "The forward gamma")
    .AddArgument("mean", "NDArray-or-Symbol", "The mean the forward used")
    .AddArgument("var", "NDArray-or-Symbol", "The variance the forward used")
    .SetAttr<FInferShape>("FInferShape", Delegate{"_backward_BatchNorm", {}}.Shape())
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", VarianceReadingBackward<BatchNormV1Param>({}));

WEFT_BN_VARIANT(_contrib_SyncBatchNorm, SyncBatchNormParam, (std::vector<std::string>{"ndev", "key"}),
                "Batch normalisation whose statistics are shared by the ndev devices of one layer (same key); on one "
                "device it is BatchNorm over every axis but 1.")
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", VarianceSavingForward<SyncBatchNormParam>({"ndev", "key"}))
    .SetAttr<FGradient>("FGradient", BNGradVia("_backward_contrib_SyncBatchNorm"));

WEFT_BN_VARIANT_BACKWARD(_backward_contrib_SyncBatchNorm, SyncBatchNormParam, (std::vector<std::string>{"ndev", "key"}))
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .Describe("Gradient of _contrib_SyncBatchNorm: (out_grad, data, gamma, mean, var) -> (d data, d gamma, d beta).")
    .SetNumInputs(5)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("gamma", "NDArray-or-Symbol", "The forward gamma")
    .AddArgument("mean", "NDArray-or-Symbol", "The mean the forward used")
    .AddArgument("var", "NDArray-or-Symbol", "The variance the forward used")
    .SetAttr<FInferShape>("FInferShape", Delegate{"_backward_BatchNorm", {"ndev", "key"}}.Shape())
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", VarianceReadingBackward<SyncBatchNormParam>({"ndev", "key"}));

WEFT_BN_VARIANT(_contrib_BatchNormWithReLU, BatchNormReLUParam, kCalibKeys,
                "relu(BatchNorm(data)): batch normalisation over every axis but `axis`, then a rectifier.")
    .SetAttr<FCompute>("FCompute<cpu>", BNReLUCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> g = b.Call(
          "_backward_contrib_BatchNormWithReLU",
          {a.out_grads[0], a.outputs[0], a.inputs[0], a.inputs[1], a.outputs[1], a.outputs[2]}, attrs.dict);
      return std::vector<GradValue>{g[0], g[1], g[2], GradValue(), GradValue()};
    });

WEFT_BN_VARIANT_BACKWARD(_backward_contrib_BatchNormWithReLU, BatchNormReLUParam, kCalibKeys)
    .Describe("Gradient of _contrib_BatchNormWithReLU: (out_grad, output, data, gamma, mean, var) -> (d data, "
              "d gamma, d beta).")
    .SetNumInputs(6)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output (after the rectifier)")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("gamma", "NDArray-or-Symbol", "The forward gamma")
    .AddArgument("mean", "NDArray-or-Symbol", "The mean the forward used")
    .AddArgument("var", "NDArray-or-Symbol", "The variance the forward used")
    .SetAttr<FInferShape>("FInferShape", BNReLUBackwardShape)
    .SetAttr<FInferType>("FInferType", BNReLUBackwardType)
    .SetAttr<FResourceRequest>("FResourceRequest", TempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", BNReLUBackwardCompute);

WEFT_REGISTER_OP(_contrib_SparseEmbedding)
    .Describe("Embedding whose weight gradient MXNet stores row_sparse; on Weft's dense arrays it is Embedding: "
              "out[..., :] = weight[data[...], :].")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The input array to the embedding operator.")
    .AddArgument("weight", "NDArray-or-Symbol", "The embedding weight matrix.")
    .SetParams<SparseEmbeddingParam>()
    .SetAttr<FInferShape>("FInferShape", Delegate{"Embedding", {"deterministic"}}.Shape())
    .SetAttr<FInferType>("FInferType", Delegate{"Embedding", {"deterministic"}}.Type())
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", Delegate{"Embedding", {"deterministic"}}.Compute())
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      KwArgs kw;
      for (const auto& kv : attrs.dict)
        if (kv.first != "deterministic") kw.push_back(kv);
      return std::vector<GradValue>{GradValue{}, b.Op("_backward_Embedding", {a.out_grads[0], a.inputs[0]}, kw)};
    });

#undef WEFT_BN_VARIANT
#undef WEFT_BN_VARIANT_BACKWARD

}  // namespace op
}  // namespace weft

// _contrib_quantized_batch_norm and _contrib_quantized_embedding.
//
// quantized_batch_norm (inference: the moving statistics) maps int8/uint8 data to int8 over
// the calibrated output range, which it requires, as MXNet's: per channel c,
//   q_out = round(q_in * a_c + b_c),  a_c = s_in * gamma_c / sqrt(var_c + eps) / s_out,
//   b_c = (beta_c - mean_c * gamma_c / sqrt(var_c + eps)) / s_out,
// gamma taken as 1 with fix_gamma. Inputs data, gamma, beta, moving_mean, moving_var,
// min_data, max_data.
//
// quantized_embedding looks rows of an int8 weight up by index: inputs data (indices, any
// numeric type, clipped to [0, input_dim) as Embedding does), weight, min_weight,
// max_weight; the output is int8 with the weight's range.
#include "core/op/nn/batch_norm_param.h"
#include "core/op/quantization/quantized_util.h"

namespace weft {
namespace op {

// BatchNorm's parameters, the calibrated range among them (required here).
struct QuantizedBatchNormParam : BatchNormParam {};

WEFT_PARAM_SCHEMA(QuantizedBatchNormParam, s) { BatchNormFields(s); }

struct QuantizedEmbeddingParam {
  int input_dim = 0;
  int output_dim = 0;
  DType dtype = DType::kFloat32;
  bool sparse_grad = false;
};

WEFT_PARAM_SCHEMA(QuantizedEmbeddingParam, s) {
  s.Field("input_dim", &QuantizedEmbeddingParam::input_dim).Min(1).Describe("Rows of the weight (vocabulary size).");
  s.Field("output_dim", &QuantizedEmbeddingParam::output_dim).Min(1).Describe("Length of each embedding row.");
  s.Field("dtype", &QuantizedEmbeddingParam::dtype).Default(DType::kFloat32)
      .Describe("The float weight's dtype before quantization (accepted for MXNet's graphs; the weight is int8).");
  s.Field("sparse_grad", &QuantizedEmbeddingParam::sparse_grad).Default(false)
      .Describe("Accepted for MXNet's graphs; the operator has no gradient.");
}

namespace {

std::vector<std::string> OutputNames(const NodeAttrs&) { return {"output", "min_output", "max_output"}; }

void RefuseAdd(const NodeAttrs& attrs, OpReq req) {
  if (req == OpReq::kAddTo)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': accumulating into the output (req 'add') is not supported");
}

// ---------------------------------------------------------------- batch norm
int ChannelAxis(const NodeAttrs& attrs, int ndim) {
  return CheckAxis(attrs, attrs.Params<QuantizedBatchNormParam>().axis, ndim, "axis");
}

bool QuantizedBNShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<QuantizedBatchNormParam>();
  quant::Calib c{p.min_calib_range, p.max_calib_range};
  quant::CheckCalib(attrs, c);
  if (!c.given())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': needs min_calib_range and max_calib_range (the calibrated output range)");
  quant::RangeShapes(attrs, in, 5, 2);
  quant::OutputRangeShapes(attrs, out);
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  const int axis = ChannelAxis(attrs, d.ndim());
  for (size_t i = 1; i < 5; ++i) AssignShape(attrs, in, i, Shape({d[axis]}), "input");
  AssignShape(attrs, out, 0, d, "output");
  return d.is_known();
}

bool QuantizedBNType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  quant::CheckQuantized(attrs, *in, 0);
  quant::RangeTypes(attrs, in, 1, 6);
  AssignType(attrs, out, 0, DType::kInt8, "output");
  quant::OutputRangeTypes(attrs, out);
  return (*in)[0] != DType::kUnknown;
}

void QuantizedBNCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedBatchNormParam>();
  const TBlob& x = in[0];
  quant::Range rx = quant::ReadRange(attrs, in[5], in[6], x.dtype, "data", true);
  quant::Range ro = quant::CalibratedRange({p.min_calib_range, p.max_calib_range}, DType::kInt8);
  const double s_in = quant::Step(x.dtype, rx.lo, rx.hi), s_out = quant::Step(DType::kInt8, ro.lo, ro.hi);
  const int axis = ChannelAxis(attrs, x.ndim());
  const int64_t channels = x.shape[axis], outer = x.shape.ProdRange(0, axis),
                inner = x.shape.ProdRange(axis + 1, x.ndim());
  const float *gamma = in[1].ptr<float>(), *beta = in[2].ptr<float>(), *mean = in[3].ptr<float>(),
              *var = in[4].ptr<float>();
  std::vector<double> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double g = (p.fix_gamma ? 1.0 : gamma[c]) / std::sqrt(var[c] + p.eps);
    a[c] = s_out > 0 ? s_in * g / s_out : 0.0;
    b[c] = s_out > 0 ? (beta[c] - mean[c] * g) / s_out : 0.0;
  }
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    int8_t* y = out[0].ptr<int8_t>();
    auto run = [&](auto* xs) {
      ParallelFor(outer * channels, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(inner, 1)),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t r = lo; r < hi; ++r) {
                      const int64_t c = r % channels;
                      for (int64_t i = r * inner; i < (r + 1) * inner; ++i)
                        y[i] = quant::Saturate<int8_t>(xs[i] * a[c] + b[c]);
                    }
                  });
    };
    if (x.dtype == DType::kUint8) run(x.ptr<uint8_t>());
    else run(x.ptr<int8_t>());
  }
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = ro.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = ro.hi;
}

// ---------------------------------------------------------------- embedding
bool QuantizedEmbeddingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<QuantizedEmbeddingParam>();
  AssignShape(attrs, in, 1, Shape({p.input_dim, p.output_dim}), "input");
  quant::RangeShapes(attrs, in, 2, 2);
  quant::OutputRangeShapes(attrs, out);
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  std::vector<int64_t> o;
  for (int i = 0; i < d.ndim(); ++i) o.push_back(d[i]);
  o.push_back(p.output_dim);
  AssignShape(attrs, out, 0, Shape(o), "output");
  return d.is_known();
}

bool QuantizedEmbeddingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType t = (*in)[0];
  if (t == DType::kBool)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input 'data' holds indices and cannot be bool");
  AssignType(attrs, in, 1, DType::kInt8, "input");
  quant::RangeTypes(attrs, in, 2, 2);
  AssignType(attrs, out, 0, DType::kInt8, "output");
  quant::OutputRangeTypes(attrs, out);
  return t != DType::kUnknown;
}

void QuantizedEmbeddingCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedEmbeddingParam>();
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    const int64_t n = in[0].Size(), dim = p.output_dim, rows = p.input_dim;
    const int8_t* w = in[1].ptr<int8_t>();
    int8_t* y = out[0].ptr<int8_t>();
    WEFT_TYPE_SWITCH(in[0].dtype, I, {
      if constexpr (!std::is_same_v<I, bool>) {
        const I* idx = in[0].ptr<I>();
        ParallelFor(n, std::max<int64_t>(1, kElemGrain / dim), [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) {
            // Truncated towards zero, then clipped, as Embedding does (NaN reads row 0).
            const int64_t row = std::min<int64_t>(std::max<int64_t>(ConvertValue<int64_t>(idx[i]), 0), rows - 1);
            std::copy(w + row * dim, w + (row + 1) * dim, y + i * dim);
          }
        });
      }
    });
  }
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = quant::ReadScalar(in[2]);
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = quant::ReadScalar(in[3]);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_batch_norm)
    .Describe("BatchNorm at inference (moving statistics) on int8 or uint8 data, written as int8 over the calibrated "
              "output range min_calib_range/max_calib_range, which it requires. Takes BatchNorm's parameters.")
    .SetNumInputs(7)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "Input data, int8 or uint8.")
    .AddArgument("gamma", "NDArray-or-Symbol", "gamma (float32).")
    .AddArgument("beta", "NDArray-or-Symbol", "beta (float32).")
    .AddArgument("moving_mean", "NDArray-or-Symbol", "The moving mean (float32).")
    .AddArgument("moving_var", "NDArray-or-Symbol", "The moving variance (float32).")
    .AddArgument("min_data", "NDArray-or-Symbol", "Minimum of data's range.")
    .AddArgument("max_data", "NDArray-or-Symbol", "Maximum of data's range.")
    .SetParams<QuantizedBatchNormParam>()
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedBNShape)
    .SetAttr<FInferType>("FInferType", QuantizedBNType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedBNCompute);

WEFT_REGISTER_OP(_contrib_quantized_embedding)
    .Describe("Embedding on an int8 weight: rows looked up by index (clipped to [0, input_dim)); the output is int8 "
              "with the weight's range. Takes Embedding's parameters.")
    .SetNumInputs(4)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "The indices.")
    .AddArgument("weight", "NDArray-or-Symbol", "The embedding matrix (input_dim, output_dim), int8.")
    .AddArgument("min_weight", "NDArray-or-Symbol", "Minimum of weight's range.")
    .AddArgument("max_weight", "NDArray-or-Symbol", "Maximum of weight's range.")
    .SetParams<QuantizedEmbeddingParam>()
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedEmbeddingShape)
    .SetAttr<FInferType>("FInferType", QuantizedEmbeddingType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedEmbeddingCompute);

}  // namespace op
}  // namespace weft

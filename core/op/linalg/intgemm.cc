// MXNet's intgemm operators (built there with USE_INTGEMM): 8-bit products for inference.
//   _contrib_intgemm_maxabsolute(data)           -> (1,) float32: max |data|
//   _contrib_intgemm_prepare_data(data, maxabs)  -> int8: round(data * 127 / maxabs), in [-127, 127]
//   _contrib_intgemm_prepare_weight(weight[, maxabs], already_quantized)
//                                                -> int8 weight in the prepared layout
//   _contrib_intgemm_take_weight(weight, indices) -> the prepared rows `indices`
//   _contrib_intgemm_fully_connected(data, weight[, scaling][, bias])
//        -> data_q * weight_q^T (int32), or that times scaling (float32) plus bias
//
// Quantization never yields -128, so the product of two quantized values stays in
// [-127^2, 127^2] and sums of them in int32 without a saturating step.
//
// The prepared-weight layout. MXNet hands the weight to intgemm, whose prepared layout is
// an internal tiling that depends on the CPU's instruction set. Weft's prepared layout is
// the plain one: the int8 matrix (num_hidden, input size), row-major, one row per output,
// exactly the shape of FullyConnected's weight. So prepare_weight only quantizes,
// take_weight is a row gather, and a prepared weight is portable between machines (an
// MXNet-prepared weight file is not readable as a Weft one, nor the reverse). The size
// rules of intgemm's tiles (input size a multiple of 64, outputs a multiple of 8) do not
// apply.
#include <cmath>

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#endif

#include "core/op/elemwise/gradients.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct PrepareWeightParam {
  bool already_quantized = false;
};

WEFT_PARAM_SCHEMA(PrepareWeightParam, s) {
  s.Field("already_quantized", &PrepareWeightParam::already_quantized)
      .Default(false)
      .Describe("Is the weight matrix already quantized?");
}

struct IntgemmFullyConnectedParam {
  int num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
  std::string out_type = "float32";
};

WEFT_PARAM_SCHEMA(IntgemmFullyConnectedParam, s) {
  s.Field("num_hidden", &IntgemmFullyConnectedParam::num_hidden).Min(1).Describe("Number of hidden nodes of the output.");
  s.Field("no_bias", &IntgemmFullyConnectedParam::no_bias).Default(false).Describe("Whether to disable bias parameter.");
  s.Field("flatten", &IntgemmFullyConnectedParam::flatten)
      .Default(true)
      .Describe("Whether to collapse all but the first axis of the input data tensor.");
  s.Field("out_type", &IntgemmFullyConnectedParam::out_type)
      .Default("float32")
      .Choices({"float32", "int32"})
      .Describe("Output data type.");
}

namespace {

// What quantization does to one value: scale, round to nearest (ties to even, as the
// vector conversion instructions intgemm uses), and keep within [-127, 127].
inline int8_t QuantizeValue(float x, float scale) {
  float v = std::nearbyint(x * scale);
  if (!(v >= -127.0f)) v = std::isnan(v) ? 0.0f : -127.0f;
  if (v > 127.0f) v = 127.0f;
  return static_cast<int8_t>(v);
}

float MaxAbsolute(const float* p, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(p[i]));
  return m;
}

// 127 / maxabs, the multiplier that maps maxabs to 127. A zero range quantizes to zeros
// instead of dividing by zero.
float ScaleFor(float maxabs) { return maxabs > 0.0f ? 127.0f / maxabs : 0.0f; }

void Quantize(const float* x, int8_t* q, int64_t n, float scale) {
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) q[i] = QuantizeValue(x[i], scale);
  });
}

float ReadMaxabs(const NodeAttrs& attrs, const TBlob& m) {
  if (m.Size() != 1 || m.dtype != DType::kFloat32)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': maxabs must be one float32 value, got shape ",
          m.shape.ToString(), " ", DTypeName(m.dtype));
  float v = *m.ptr<float>();
  if (!(v >= 0.0f) || std::isinf(v))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': maxabs must be a finite value >= 0, got ", v);
  return v;
}

float ReadScaling(const NodeAttrs& attrs, const TBlob& s) {
  if (s.Size() != 1 || s.dtype != DType::kFloat32)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': scaling must be one float32 value, got shape ",
          s.shape.ToString(), " ", DTypeName(s.dtype));
  return *s.ptr<float>();
}

void RequireType(const NodeAttrs& attrs, const TBlob& t, DType want, const char* name) {
  if (t.dtype != want)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input '", name, "' must be ", DTypeName(want), ", got ",
          DTypeName(t.dtype));
}

// ---------------------------------------------------------------- maxabsolute
bool MaxAbsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape{1}, "output");
  return (*in)[0].is_known();
}

bool Float32In(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out, DType out_type) {
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, DType::kFloat32, "input");
  AssignType(attrs, out, 0, out_type, "output");
  return true;
}

void MaxAbsCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  RequireType(attrs, in[0], DType::kFloat32, "data");
  Store(out[0].ptr<float>(), req[0], MaxAbsolute(in[0].ptr<float>(), in[0].Size()));
}

// ---------------------------------------------------------------- prepare_data
bool PrepareDataShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  AssignShape(attrs, in, 1, Shape{1}, "input");
  return (*in)[0].is_known();
}

void CheckOverwrite(const NodeAttrs& attrs, OpReq req) {
  // A sum of quantized arrays has no meaning as quantized data.
  if (req == OpReq::kAddTo)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': its int8 output can only be written, not added to");
}

void PrepareDataCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  CheckOverwrite(attrs, req[0]);
  RequireType(attrs, in[0], DType::kFloat32, "data");
  if (out[0].shape != in[0].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have the data's shape ",
          in[0].shape.ToString(), ", got ", out[0].shape.ToString());
  Quantize(in[0].ptr<float>(), out[0].ptr<int8_t>(), in[0].Size(), ScaleFor(ReadMaxabs(attrs, in[1])));
}

// ---------------------------------------------------------------- prepare_weight
int PrepareWeightInputs(const NodeAttrs& attrs) { return attrs.Params<PrepareWeightParam>().already_quantized ? 1 : 2; }

void CheckWeightShape(const NodeAttrs& attrs, const Shape& w, const char* name) {
  if (w.ndim() != 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", name,
          "' must be a 2-D matrix (num_hidden, input size), got ", w.ToString());
}

bool PrepareWeightShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  if (in->size() == 2) AssignShape(attrs, in, 1, Shape{1}, "input");
  if (!(*in)[0].is_known()) return false;
  CheckWeightShape(attrs, (*in)[0], "weight");
  return true;
}

bool PrepareWeightType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  bool quantized = attrs.Params<PrepareWeightParam>().already_quantized;
  AssignType(attrs, in, 0, quantized ? DType::kInt8 : DType::kFloat32, "input");
  if (in->size() == 2) AssignType(attrs, in, 1, DType::kFloat32, "input");
  AssignType(attrs, out, 0, DType::kInt8, "output");
  return true;
}

void PrepareWeightCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  CheckOverwrite(attrs, req[0]);
  CheckWeightShape(attrs, in[0].shape, "weight");
  if (out[0].shape != in[0].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have the weight's shape ",
          in[0].shape.ToString(), ", got ", out[0].shape.ToString());
  if (attrs.Params<PrepareWeightParam>().already_quantized) {
    RequireType(attrs, in[0], DType::kInt8, "weight");
    const int8_t* w = in[0].ptr<int8_t>();
    for (int64_t i = 0; i < in[0].Size(); ++i)
      if (w[i] == -128)
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an already quantized weight must lie in [-127, "
              "127] (intgemm's quantization bans -128), but element ", i, " is -128");
    CopyWithReq(in[0], out[0], req[0]);
    return;
  }
  RequireType(attrs, in[0], DType::kFloat32, "weight");
  Quantize(in[0].ptr<float>(), out[0].ptr<int8_t>(), in[0].Size(), ScaleFor(ReadMaxabs(attrs, in[1])));
}

// ---------------------------------------------------------------- take_weight
bool TakeWeightShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &w = (*in)[0], &idx = (*in)[1];
  if (!w.is_known() || !idx.is_known()) return false;
  CheckWeightShape(attrs, w, "weight");
  if (idx.ndim() != 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'indices' must be 1-D, got ", idx.ToString());
  AssignShape(attrs, out, 0, Shape{idx[0], w[1]}, "output");
  return true;
}

bool TakeWeightType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, in, 0, DType::kInt8, "input");
  AssignType(attrs, in, 1, DType::kInt32, "input");
  AssignType(attrs, out, 0, DType::kInt8, "output");
  return true;
}

void TakeWeightCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  CheckOverwrite(attrs, req[0]);
  RequireType(attrs, in[0], DType::kInt8, "weight");
  RequireType(attrs, in[1], DType::kInt32, "indices");
  std::vector<Shape> ins{in[0].shape, in[1].shape}, outs{Shape()};
  TakeWeightShape(attrs, &ins, &outs);
  if (out[0].shape != outs[0])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have shape ", outs[0].ToString(),
          ", got ", out[0].shape.ToString());
  int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  const int32_t* idx = in[1].ptr<int32_t>();
  const int8_t* w = in[0].ptr<int8_t>();
  int8_t* y = out[0].ptr<int8_t>();
  for (int64_t i = 0; i < in[1].Size(); ++i) {
    if (idx[i] < 0 || idx[i] >= rows)
      Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': indices[", i, "] = ", idx[i],
            " is out of range for a weight of ", rows, " rows");
    std::copy(w + idx[i] * cols, w + (idx[i] + 1) * cols, y + i * cols);
  }
}

// ---------------------------------------------------------------- fully_connected
// acc (rows, cols) = a (rows, inner) * w (cols, inner)^T in int32. Inputs in [-127, 127]
// keep the sums exact in int32 up to 133,000 terms. oneDNN's int8 GEMM runs it where the
// CPU has VNNI (its dot-product instructions sum into int32); without VNNI oneDNN
// multiplies in pairs into int16, which saturates (its documentation says so), so those
// CPUs, and builds without oneDNN, take the plain loop.
bool ExactOneDnnInt8Gemm() {
#if defined(WEFT_USE_ONEDNN)
  static const bool vnni = [] {
    auto has = [](dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) { return (isa & want) == want; };
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return has(isa, dnnl_cpu_isa_avx512_core_vnni) || has(isa, dnnl_cpu_isa_avx2_vnni);
  }();
  return vnni;
#else
  return false;
#endif
}

void Int8Product(const NodeAttrs& attrs, const int8_t* a, const int8_t* w, int64_t rows, int64_t cols, int64_t inner,
                 int32_t* acc) {
  if (rows == 0 || cols == 0) return;
#if defined(WEFT_USE_ONEDNN)
  if (ExactOneDnnInt8Gemm()) {
    const int32_t zero = 0;
    dnnl_status_t st = dnnl_gemm_s8s8s32('N', 'T', 'F', rows, cols, inner, 1.0f, a, inner, 0, w, inner, 0, 0.0f, acc,
                                         cols, &zero);
    if (st != dnnl_success)
      Throw(ErrorKind::kRuntime, "Operator '", attrs.op->name, "': oneDNN's int8 GEMM failed with status ",
            static_cast<int>(st));
    return;
  }
#endif
  ParallelFor(rows, 1, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int32_t sum = 0;
        for (int64_t k = 0; k < inner; ++k) sum += static_cast<int32_t>(a[r * inner + k]) * w[c * inner + k];
        acc[r * cols + c] = sum;
      }
  });
}

struct FCInputs {
  int count = 2, scaling = -1, bias = -1;
};

FCInputs FCLayout(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<IntgemmFullyConnectedParam>();
  FCInputs r;
  if (p.out_type == "float32") r.scaling = r.count++;
  if (!p.no_bias) r.bias = r.count++;
  return r;
}

DType FCOutType(const NodeAttrs& attrs) {
  return attrs.Params<IntgemmFullyConnectedParam>().out_type == "int32" ? DType::kInt32 : DType::kFloat32;
}

// (rows, input size) of the data as the product sees it, and the output shape.
std::pair<Shape, Shape> FCView(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<IntgemmFullyConnectedParam>();
  if (data.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': data must have at least one axis, got ",
          data.ToString());
  int nd = data.ndim();
  if (p.flatten && nd >= 2) return {Shape{data[0], data.ProdRange(1, nd)}, Shape{data[0], p.num_hidden}};
  Shape out = data;
  out[nd - 1] = p.num_hidden;
  return {Shape{data.ProdRange(0, nd - 1), data[nd - 1]}, out};
}

bool FCShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<IntgemmFullyConnectedParam>();
  FCInputs l = FCLayout(attrs);
  if (l.scaling >= 0) AssignShape(attrs, in, l.scaling, Shape{1}, "input");
  if (l.bias >= 0 && !(*in)[l.bias].known_ndim()) AssignShape(attrs, in, l.bias, Shape{p.num_hidden}, "input");
  if (l.bias >= 0) {
    const Shape& b = (*in)[l.bias];
    if (!(b == Shape{p.num_hidden} || b == Shape{p.num_hidden, 1}))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'bias' must have shape (", p.num_hidden,
            ",) or (", p.num_hidden, ", 1), got ", b.ToString());
  }
  if (!(*in)[0].is_known()) return false;
  auto [view, oshape] = FCView(attrs, (*in)[0]);
  AssignShape(attrs, in, 1, Shape{p.num_hidden, view[1]}, "input");
  AssignShape(attrs, out, 0, oshape, "output");
  return true;
}

bool FCType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  FCInputs l = FCLayout(attrs);
  DType ot = FCOutType(attrs);
  AssignType(attrs, out, 0, ot, "output");
  AssignType(attrs, in, 1, DType::kInt8, "input");
  if (l.scaling >= 0) AssignType(attrs, in, l.scaling, DType::kFloat32, "input");
  if (l.bias >= 0) AssignType(attrs, in, l.bias, ot, "input");
  DType d = (*in)[0];
  if (d == DType::kUnknown) return false;
  if (d != DType::kFloat32 && d != DType::kInt8)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name,
          "': data must be float32 (quantized on the fly) or int8 (from intgemm_prepare_data), got ", DTypeName(d));
  return true;
}

void FCCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
               const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<IntgemmFullyConnectedParam>();
  FCInputs l = FCLayout(attrs);
  std::vector<Shape> shapes;
  for (const auto& t : in) shapes.push_back(t.shape);
  std::vector<Shape> outs{Shape()};
  FCShape(attrs, &shapes, &outs);
  if (out[0].shape != outs[0])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output must have shape ", outs[0].ToString(),
          ", got ", out[0].shape.ToString());
  DType ot = FCOutType(attrs);
  RequireType(attrs, in[1], DType::kInt8, "weight");
  if (l.bias >= 0) RequireType(attrs, in[l.bias], ot, "bias");
  if (out[0].dtype != ot)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': the output must be ", DTypeName(ot), ", got ",
          DTypeName(out[0].dtype));
  auto view = FCView(attrs, in[0].shape).first;
  int64_t rows = view[0], inner = view[1], cols = p.num_hidden;

  // Float data is quantized here with its own maximum; the product then undoes that scale.
  double multiplier = l.scaling >= 0 ? static_cast<double>(ReadScaling(attrs, in[l.scaling])) : 1.0;
  std::vector<int8_t> quantized;
  const int8_t* a;
  if (in[0].dtype == DType::kFloat32) {
    const float* x = in[0].ptr<float>();
    float scale = ScaleFor(MaxAbsolute(x, in[0].Size()));
    quantized.resize(in[0].Size());
    Quantize(x, quantized.data(), in[0].Size(), scale);
    a = quantized.data();
    multiplier = scale > 0.0f ? multiplier / scale : 0.0;
  } else {
    RequireType(attrs, in[0], DType::kInt8, "data");
    a = in[0].ptr<int8_t>();
  }
  std::vector<int32_t> acc(static_cast<size_t>(rows * cols));
  Int8Product(attrs, a, in[1].ptr<int8_t>(), rows, cols, inner, acc.data());
  ParallelFor(rows, 1, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int32_t p = acc[r * cols + c];
        if (ot == DType::kInt32) {
          Store(out[0].ptr<int32_t>() + r * cols + c, req[0], p + (l.bias >= 0 ? in[l.bias].ptr<int32_t>()[c] : 0));
        } else {
          float v = static_cast<float>(p * multiplier) + (l.bias >= 0 ? in[l.bias].ptr<float>()[c] : 0.0f);
          Store(out[0].ptr<float>() + r * cols + c, req[0], v);
        }
      }
  });
}

std::vector<std::string> FCInputNames(const NodeAttrs& attrs) {
  FCInputs l = FCLayout(attrs);
  std::vector<std::string> names{"data", "weight"};
  if (l.scaling >= 0) names.push_back("scaling");
  if (l.bias >= 0) names.push_back("bias");
  return names;
}

}  // namespace

WEFT_REGISTER_OP(_contrib_intgemm_maxabsolute)
    .Describe("The maximum absolute value of a float32 array, as a (1,) array: abs(data).max(), the range "
              "intgemm_prepare_data and intgemm_prepare_weight quantize over.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Tensor to compute maximum absolute value of")
    .SetAttr<FInferShape>("FInferShape", MaxAbsShape)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return Float32In(a, in, out, DType::kFloat32);
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kReduce)
    .SetAttr<FCompute>("FCompute<cpu>", MaxAbsCompute);

WEFT_REGISTER_OP(_contrib_intgemm_prepare_data)
    .Describe("Quantizes float32 data to int8 for intgemm_fully_connected: round(data * 127 / maxabs), kept in "
              "[-127, 127] (-128 is never produced). maxabs is typically intgemm_maxabsolute(data).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Activation matrix to be prepared for multiplication.")
    .AddArgument("maxabs", "NDArray-or-Symbol",
                 "Maximum absolute value to be used for scaling.  (The values will be multiplied by 127.0 / maxabs.")
    .SetAttr<FInferShape>("FInferShape", PrepareDataShape)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& a, std::vector<DType>* in, std::vector<DType>* out) {
                           return Float32In(a, in, out, DType::kInt8);
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PrepareDataCompute);

WEFT_REGISTER_OP(_contrib_intgemm_prepare_weight)
    .Describe("Prepares a weight matrix (num_hidden, input size) for intgemm_fully_connected: quantizes a float32 "
              "weight as intgemm_prepare_data does (round(weight * 127 / maxabs) in [-127, 127]), or takes an int8 "
              "one as it is with already_quantized=True. Weft's prepared layout is the plain row-major int8 matrix "
              "of the same shape (MXNet's is intgemm's CPU-specific tiling).")
    .SetNumInputs(PrepareWeightInputs)
    .AddArgument("weight", "NDArray-or-Symbol", "Parameter matrix to be prepared for multiplication.")
    .AddArgument("maxabs", "NDArray-or-Symbol",
                 "Maximum absolute value for scaling. The weights will be multipled by 127.0 / maxabs.")
    .SetParams<PrepareWeightParam>()
    .SetAttr<FListNames>("FListInputNames",
                         [](const NodeAttrs& attrs) {
                           return PrepareWeightInputs(attrs) == 1 ? std::vector<std::string>{"weight"}
                                                                  : std::vector<std::string>{"weight", "maxabs"};
                         })
    .SetAttr<FInferShape>("FInferShape", PrepareWeightShape)
    .SetAttr<FInferType>("FInferType", PrepareWeightType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PrepareWeightCompute);

WEFT_REGISTER_OP(_contrib_intgemm_take_weight)
    .Describe("The rows `indices` of a prepared weight (for a vocabulary shortlist): in Weft's plain prepared "
              "layout, take(weight, indices, axis=0).")
    .SetNumInputs(2)
    .AddArgument("weight", "NDArray-or-Symbol", "Tensor already in intgemm weight format to select from")
    .AddArgument("indices", "NDArray-or-Symbol", "indices to select on the 0th dimension of weight")
    .SetAttr<FInferShape>("FInferShape", TakeWeightShape)
    .SetAttr<FInferType>("FInferType", TakeWeightType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", TakeWeightCompute);

WEFT_REGISTER_OP(_contrib_intgemm_fully_connected)
    .Describe(
        "Fully connected layer in 8-bit integers: data (float32, quantized here by its own maximum absolute "
        "value, or int8 from intgemm_prepare_data) times the prepared int8 weight (num_hidden, input size), "
        "transposed. With out_type='int32' the output is the exact integer product (plus an int32 bias); with "
        "'float32' it is that product times `scaling` (divided by the on-the-fly scale 127/max|data| for float32 "
        "data) plus a float32 bias. Typically scaling = maxabs(weight)/127 for float32 data and "
        "maxabs(data)/127 * maxabs(weight)/127 for int8 data. Inputs: data, weight, [scaling if out_type is "
        "float32], [bias unless no_bias]. No gradient flows (zeros, as MXNet).")
    .SetNumInputs([](const NodeAttrs& attrs) { return FCLayout(attrs).count; })
    .AddArgument("data", "NDArray-or-Symbol",
                 "First argument to multiplication. Tensor of float32 (quantized on the fly) or int8 from "
                 "intgemm_prepare_data.")
    .AddArgument("weight", "NDArray-or-Symbol",
                 "Second argument to multiplication. Tensor of int8 from intgemm_prepare_weight.")
    .AddArgument("scaling", "NDArray-or-Symbol", "Scaling factor to apply if output type is float32.")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias term.")
    .SetParams<IntgemmFullyConnectedParam>()
    .SetAttr<FListNames>("FListInputNames", FCInputNames)
    .SetAttr<FInferShape>("FInferShape", FCShape)
    .SetAttr<FInferType>("FInferType", FCType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", FCCompute)
    .SetAttr<FGradient>("FGradient", ZeroGradient);

}  // namespace op
}  // namespace weft

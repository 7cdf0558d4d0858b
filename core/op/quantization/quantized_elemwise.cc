// The quantized operators that combine arrays element by element:
// _contrib_quantized_concat (rescales every input to the widest range), and
// _contrib_quantized_elemwise_add / _mul (int32 results, or 8 bits for a calibrated
// range). Each is one pass over memory; they run as loops, which oneDNN's concat and sum
// primitives would not beat here (both need the same rescaling reorders first).
#include "core/op/quantization/quantized_util.h"

namespace weft {
namespace op {

struct QuantizedConcatParam {
  int num_args = 1;
  int dim = 1;
};

WEFT_PARAM_SCHEMA(QuantizedConcatParam, s) {
  s.Field("num_args", &QuantizedConcatParam::num_args).Min(1).Describe("Number of arrays to join.");
  s.Field("dim", &QuantizedConcatParam::dim).Default(1).Describe("The axis to join along; negative counts from the end.");
}

struct QuantizedElemwiseParam {
  std::optional<double> min_calib_range, max_calib_range;
};

WEFT_PARAM_SCHEMA(QuantizedElemwiseParam, s) {
  s.Field("min_calib_range", &QuantizedElemwiseParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the output; with max_calib_range the result is written in 8 bits, "
                "otherwise as int32.");
  s.Field("max_calib_range", &QuantizedElemwiseParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the output (see min_calib_range).");
}

struct QuantizedMulParam {
  std::optional<double> min_calib_range, max_calib_range;
  bool enable_float_output = false;
};

WEFT_PARAM_SCHEMA(QuantizedMulParam, s) {
  s.Field("min_calib_range", &QuantizedMulParam::min_calib_range).Default(std::nullopt)
      .Describe("The calibrated minimum of the output; with max_calib_range the product is written as int8, "
                "otherwise as int32.");
  s.Field("max_calib_range", &QuantizedMulParam::max_calib_range).Default(std::nullopt)
      .Describe("The calibrated maximum of the output (see min_calib_range).");
  s.Field("enable_float_output", &QuantizedMulParam::enable_float_output).Default(false)
      .Describe("Write the product as float32 (one output, no range) instead of an integer type.");
}

namespace {

// Calls f(typed pointer) for an int8 or uint8 array.
template <typename F>
void With8Bit(const TBlob& b, F&& f) {
  if (b.dtype == DType::kUint8) f(b.ptr<uint8_t>());
  else f(b.ptr<int8_t>());
}

// Calls f(typed output pointer) for an int8, uint8 or int32 array.
template <typename F>
void WithOut(const TBlob& b, F&& f) {
  if (b.dtype == DType::kUint8) f(b.ptr<uint8_t>());
  else if (b.dtype == DType::kInt8) f(b.ptr<int8_t>());
  else f(b.ptr<int32_t>());
}

void RefuseAdd(const NodeAttrs& attrs, OpReq req) {
  if (req == OpReq::kAddTo)
    Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name,
          "': accumulating into the output (req 'add') is not supported");
}

std::vector<std::string> OutputNames(const NodeAttrs&) { return {"output", "min_output", "max_output"}; }
std::vector<std::string> PairNames(const NodeAttrs&) { return {"lhs", "rhs", "lhs_min", "lhs_max", "rhs_min", "rhs_max"}; }

// ---------------------------------------------------------------- concat
int NumArgs(const NodeAttrs& attrs) { return attrs.Params<QuantizedConcatParam>().num_args; }

std::vector<std::string> ConcatInputNames(const NodeAttrs& attrs) {
  const int n = NumArgs(attrs);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("arg" + std::to_string(i));
  for (int i = 0; i < n; ++i) {
    names.push_back("arg" + std::to_string(i) + "_min");
    names.push_back("arg" + std::to_string(i) + "_max");
  }
  return names;
}

bool QuantizedConcatShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const int n = NumArgs(attrs);
  quant::RangeShapes(attrs, in, n, 2 * n);
  quant::OutputRangeShapes(attrs, out);
  for (int i = 0; i < n; ++i)
    if (!(*in)[i].is_known()) return false;
  const Shape& s0 = (*in)[0];
  const int axis = CheckAxis(attrs, attrs.Params<QuantizedConcatParam>().dim, s0.ndim(), "dim");
  Shape joined = s0;
  joined[axis] = 0;
  for (int i = 0; i < n; ++i) {
    const Shape& s = (*in)[i];
    bool ok = s.ndim() == s0.ndim();
    for (int d = 0; ok && d < s0.ndim(); ++d) ok = d == axis || s[d] == s0[d];
    if (!ok)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i, " has shape ", s.ToString(),
            " but input 0 has shape ", s0.ToString(), "; they may differ only along axis ", axis);
    joined[axis] += s[axis];
  }
  AssignShape(attrs, out, 0, joined, "output");
  return true;
}

// int8 when any input is int8, else uint8, as MXNet.
bool QuantizedConcatType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const int n = NumArgs(attrs);
  bool any_int8 = false;
  for (int i = 0; i < n; ++i) {
    quant::CheckQuantized(attrs, *in, i);
    if ((*in)[i] == DType::kUnknown) return false;
    any_int8 = any_int8 || (*in)[i] == DType::kInt8;
  }
  quant::RangeTypes(attrs, in, n, 2 * n);
  AssignType(attrs, out, 0, any_int8 ? DType::kInt8 : DType::kUint8, "output");
  quant::OutputRangeTypes(attrs, out);
  return true;
}

void QuantizedConcatCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const int n = NumArgs(attrs);
  // The output range covers every input's and 0 (MXNet's rule).
  std::vector<quant::Range> ranges;
  float lo = 0.0f, hi = 0.0f;
  for (int i = 0; i < n; ++i) {
    std::string what = "arg" + std::to_string(i);
    ranges.push_back(quant::ReadRange(attrs, in[n + 2 * i], in[n + 2 * i + 1], in[i].dtype, what.c_str(), true));
    lo = std::min(lo, ranges.back().lo);
    hi = std::max(hi, ranges.back().hi);
  }
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    const TBlob& y = out[0];
    const double out_step = quant::Step(y.dtype, lo, hi);
    const int axis = CheckAxis(attrs, attrs.Params<QuantizedConcatParam>().dim, y.ndim(), "dim");
    const int64_t outer = y.shape.ProdRange(0, axis), inner = y.shape.ProdRange(axis + 1, y.ndim());
    const int64_t row = y.shape[axis] * inner;
    int64_t at = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t block = in[i].shape[axis] * inner;
      const double f = out_step > 0 ? quant::Step(in[i].dtype, ranges[i].lo, ranges[i].hi) / out_step : 0.0;
      With8Bit(in[i], [&](auto* x) {
        WithOut(y, [&](auto* ys) {
          using T = std::remove_pointer_t<decltype(ys)>;
          ParallelFor(outer, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(block, 1)), [&](int64_t b, int64_t e) {
            for (int64_t o = b; o < e; ++o) {
              const auto* src = x + o * block;
              T* dst = ys + o * row + at;
              for (int64_t j = 0; j < block; ++j) dst[j] = quant::Saturate<T>(src[j] * f);
            }
          });
        });
      });
      at += block;
    }
  }
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = hi;
}

// ---------------------------------------------------------------- add and mul
bool PairShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  quant::RangeShapes(attrs, in, 2, 4);
  if (out->size() == 3) quant::OutputRangeShapes(attrs, out);
  const Shape &a = (*in)[0], &b = (*in)[1];
  if (a.is_known() && b.is_known() && a != b)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': inputs 'lhs' ", a.ToString(), " and 'rhs' ",
          b.ToString(), " must have the same shape");
  const Shape& s = a.is_known() ? a : b;
  AssignShape(attrs, in, 0, s, "input");
  AssignShape(attrs, in, 1, s, "input");
  AssignShape(attrs, out, 0, s, "output");
  return s.is_known();
}

bool QuantizedAddType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<QuantizedElemwiseParam>();
  quant::CheckCalib(attrs, {p.min_calib_range, p.max_calib_range});
  quant::CheckQuantized(attrs, *in, 0);
  quant::CheckQuantized(attrs, *in, 1);
  quant::RangeTypes(attrs, in, 2, 4);
  quant::OutputRangeTypes(attrs, out);
  if ((*in)[0] == DType::kUnknown || (*in)[1] == DType::kUnknown) return false;
  DType t = DType::kInt32;
  if (p.min_calib_range) t = (*in)[0] == (*in)[1] ? (*in)[0] : DType::kInt8;
  AssignType(attrs, out, 0, t, "output");
  return true;
}

void QuantizedAddCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedElemwiseParam>();
  quant::Range ra = quant::ReadRange(attrs, in[2], in[3], in[0].dtype, "lhs", true);
  quant::Range rb = quant::ReadRange(attrs, in[4], in[5], in[1].dtype, "rhs", true);
  const double sa = quant::Step(in[0].dtype, ra.lo, ra.hi), sb = quant::Step(in[1].dtype, rb.lo, rb.hi);
  quant::Range ro;
  if (p.min_calib_range) {
    ro = quant::CalibratedRange({p.min_calib_range, p.max_calib_range}, out[0].dtype);
  } else {
    // The int32 range holds the sum of the two widest values.
    const float r = static_cast<float>(std::max(std::fabs(ra.lo), std::fabs(ra.hi)) +
                                       std::max(std::fabs(rb.lo), std::fabs(rb.hi)));
    ro = quant::Range{-r, r};
  }
  const double so = quant::Step(out[0].dtype, ro.lo, ro.hi);
  const double fa = so > 0 ? sa / so : 0.0, fb = so > 0 ? sb / so : 0.0;
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    With8Bit(in[0], [&](auto* a) {
      With8Bit(in[1], [&](auto* b) {
        WithOut(out[0], [&](auto* y) {
          using T = std::remove_pointer_t<decltype(y)>;
          ParallelFor(out[0].Size(), kElemGrain, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) y[i] = quant::Saturate<T>(a[i] * fa + b[i] * fb);
          });
        });
      });
    });
  }
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = ro.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = ro.hi;
}

int MulOutputs(const NodeAttrs& attrs) { return attrs.Params<QuantizedMulParam>().enable_float_output ? 1 : 3; }

bool QuantizedMulType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<QuantizedMulParam>();
  quant::CheckCalib(attrs, {p.min_calib_range, p.max_calib_range});
  quant::CheckQuantized(attrs, *in, 0, true);
  quant::CheckQuantized(attrs, *in, 1, true);
  quant::RangeTypes(attrs, in, 2, 4);
  if (p.enable_float_output) {
    AssignType(attrs, out, 0, DType::kFloat32, "output");
  } else {
    AssignType(attrs, out, 0, p.min_calib_range ? DType::kInt8 : DType::kInt32, "output");
    quant::OutputRangeTypes(attrs, out);
  }
  return (*in)[0] != DType::kUnknown && (*in)[1] != DType::kUnknown;
}

void QuantizedMulCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<QuantizedMulParam>();
  quant::Range ra = quant::ReadRange(attrs, in[2], in[3], DType::kInt8, "lhs", true);
  quant::Range rb = quant::ReadRange(attrs, in[4], in[5], DType::kInt8, "rhs", true);
  const double prod_step = quant::Step(DType::kInt8, ra.lo, ra.hi) * quant::Step(DType::kInt8, rb.lo, rb.hi);
  const int8_t* a = in[0].ptr<int8_t>();
  const int8_t* b = in[1].ptr<int8_t>();
  const int64_t n = out[0].Size();
  quant::Range ro{static_cast<float>(-prod_step * quant::kInt32Levels), static_cast<float>(prod_step * quant::kInt32Levels)};
  if (p.min_calib_range) ro = quant::CalibratedRange({p.min_calib_range, p.max_calib_range}, DType::kInt8);
  if (req[0] != OpReq::kNullOp) {
    RefuseAdd(attrs, req[0]);
    if (p.enable_float_output) {
      float* y = out[0].ptr<float>();
      ParallelFor(n, kElemGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = static_cast<float>(a[i] * b[i] * prod_step);
      });
    } else if (p.min_calib_range) {
      const double so = quant::Step(DType::kInt8, ro.lo, ro.hi);
      const double f = so > 0 ? prod_step / so : 0.0;
      int8_t* y = out[0].ptr<int8_t>();
      ParallelFor(n, kElemGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = quant::Saturate<int8_t>(a[i] * b[i] * f);
      });
    } else {
      int32_t* y = out[0].ptr<int32_t>();
      ParallelFor(n, kElemGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = int32_t(a[i]) * b[i];
      });
    }
  }
  if (p.enable_float_output) return;
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = ro.lo;
  if (req[2] != OpReq::kNullOp) *out[2].ptr<float>() = ro.hi;
}

}  // namespace

WEFT_REGISTER_OP(_contrib_quantized_concat)
    .Describe("Joins int8/uint8 arrays along axis dim, each rescaled to the output's range, which covers every "
              "input's range and 0. The output is int8 when any input is int8, else uint8. Inputs: the arrays, "
              "then each array's min and max.")
    .SetNumInputs([](const NodeAttrs& attrs) { return 3 * NumArgs(attrs); })
    .SetNumOutputs(3)
    // No key_var_num_args: num_args counts the arrays, a third of the inputs, so callers
    // give it (as MXNet's graphs carry it).
    .AddArgument("data", "NDArray-or-Symbol[]", "The arrays to join, then each one's min and max")
    .SetParams<QuantizedConcatParam>()
    .SetAttr<FListNames>("FListInputNames", ConcatInputNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", QuantizedConcatShape)
    .SetAttr<FInferType>("FInferType", QuantizedConcatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedConcatCompute);

WEFT_REGISTER_OP(_contrib_quantized_elemwise_add)
    .Describe("Adds two int8/uint8 arrays of one shape with their ranges: int32 with the range of the sum of the "
              "two widest values, or, given min_calib_range/max_calib_range, 8 bits over that range (the inputs' "
              "type when they agree, else int8).")
    .SetNumInputs(6)
    .SetNumOutputs(3)
    .AddArgument("lhs", "NDArray-or-Symbol", "First input, int8 or uint8.")
    .AddArgument("rhs", "NDArray-or-Symbol", "Second input, int8 or uint8.")
    .AddArgument("lhs_min", "NDArray-or-Symbol", "Minimum of lhs's range.")
    .AddArgument("lhs_max", "NDArray-or-Symbol", "Maximum of lhs's range.")
    .AddArgument("rhs_min", "NDArray-or-Symbol", "Minimum of rhs's range.")
    .AddArgument("rhs_max", "NDArray-or-Symbol", "Maximum of rhs's range.")
    .SetParams<QuantizedElemwiseParam>()
    .SetAttr<FListNames>("FListInputNames", PairNames)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", PairShape)
    .SetAttr<FInferType>("FInferType", QuantizedAddType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedAddCompute);

WEFT_REGISTER_OP(_contrib_quantized_elemwise_mul)
    .Describe("Multiplies two int8 arrays of one shape with their ranges: the exact int32 products with the range "
              "+-step_lhs * step_rhs * (2^31 - 1), int8 over min_calib_range/max_calib_range when given, or float32 "
              "with enable_float_output.")
    .SetNumInputs(6)
    .SetNumOutputs(MulOutputs)
    .AddArgument("lhs", "NDArray-or-Symbol", "First input, int8.")
    .AddArgument("rhs", "NDArray-or-Symbol", "Second input, int8.")
    .AddArgument("lhs_min", "NDArray-or-Symbol", "Minimum of lhs's range.")
    .AddArgument("lhs_max", "NDArray-or-Symbol", "Maximum of lhs's range.")
    .AddArgument("rhs_min", "NDArray-or-Symbol", "Minimum of rhs's range.")
    .AddArgument("rhs_max", "NDArray-or-Symbol", "Maximum of rhs's range.")
    .SetParams<QuantizedMulParam>()
    .SetAttr<FListNames>("FListInputNames", PairNames)
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs& attrs) {
                           if (MulOutputs(attrs) == 1) return std::vector<std::string>{"output"};
                           return OutputNames(attrs);
                         })
    .SetAttr<FInferShape>("FInferShape", PairShape)
    .SetAttr<FInferType>("FInferType", QuantizedMulType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", QuantizedMulCompute);

}  // namespace op
}  // namespace weft

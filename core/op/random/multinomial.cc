// _sample_multinomial (MXNet 1.x): draws category indices from the distributions in the
// last axis of `data`, `shape` samples per distribution, optionally with the log
// probability of each draw.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/op/op_util.h"
#include "core/op/random/multinomial.h"
#include "core/op/random/sampler.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(MultinomialParam, s) {
  s.Field("shape", &MultinomialParam::shape)
      .Default(Shape::Scalar())
      .Describe("Samples drawn from each distribution; the output shape is data.shape[:-1] + shape.");
  s.Field("get_prob", &MultinomialParam::get_prob)
      .Default(false)
      .Describe("Also return the log probability of each sample (a second output, in data's dtype).");
  s.Field("dtype", &MultinomialParam::dtype)
      .Default(DType::kInt32)
      .Describe("The dtype of the samples: int32, uint8, float16, float32 or float64.");
}

namespace {

// Entries above 1 by more than this are not probabilities (rounding of float16 rows
// aside).
double ValueTolerance(DType t) { return t == DType::kFloat16 || t == DType::kBfloat16 ? 1e-2 : 1e-4; }

// The largest category count whose indices `t` holds exactly.
int64_t MaxCategories(DType t) {
  switch (t) {
    case DType::kUint8: return 256;
    case DType::kFloat16: return 2049;
    case DType::kBfloat16: return 257;
    case DType::kFloat32: return int64_t{1} << 24;
    default: return std::numeric_limits<int64_t>::max();
  }
}

int NumOutputs(const NodeAttrs& attrs) { return attrs.Params<MultinomialParam>().get_prob ? 2 : 1; }

bool MultinomialShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<MultinomialParam>();
  for (int64_t d : p.shape)
    if (d < 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'shape': expected non-negative dimensions, got ",
            p.shape.ToString());
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  if (data.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': input 'data': expected at least 1 dimension (the categories), got shape ", data.ToString());
  const int64_t k = data[data.ndim() - 1];
  if (k == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': input 'data': expected at least one category in the last axis, got shape ", data.ToString());
  if (k > MaxCategories(p.dtype))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'dtype': expected a dtype that holds ",
          "category indices up to ", k - 1, ", got ", DTypeName(p.dtype));
  std::vector<int64_t> dims(data.begin(), data.end() - 1);
  for (int64_t d : p.shape) dims.push_back(d);
  Shape s(dims);
  for (size_t i = 0; i < out->size(); ++i) AssignShape(attrs, out, i, s, "output");
  return data.is_known();
}

bool MultinomialType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<MultinomialParam>();
  const DType t = p.dtype;
  if (t != DType::kInt32 && t != DType::kUint8 && t != DType::kFloat16 && t != DType::kFloat32 &&
      t != DType::kFloat64)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
          "': parameter 'dtype': expected one of int32, uint8, float16, float32, float64, got ", DTypeName(t));
  AssignType(attrs, out, 0, t, "output");
  const DType data = (*in)[0];
  if (data != DType::kUnknown && !IsFloatDType(data))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name,
          "': input 'data': expected probabilities in a floating-point dtype, got ", DTypeName(data));
  if (out->size() > 1) {
    AssignType(attrs, out, 1, data, "output");
    AssignType(attrs, in, 0, (*out)[1], "input");
  }
  return (*in)[0] != DType::kUnknown;
}

// Cumulative sums of each distribution, in double. As MXNet, a row need not sum to 1
// (its own sampler reads past the row when the draw exceeds the total): Weft draws in
// proportion to the row's entries, so a row summing to 0.625 is sampled as if divided by
// 0.625. A row without mass has nothing to draw.
std::vector<double> CheckedCumulative(const NodeAttrs& attrs, const TBlob& data) {
  const int64_t k = data.shape[data.shape.ndim() - 1];
  const int64_t rows = data.Size() / k;
  std::vector<double> cum(static_cast<size_t>(data.Size()));
  const double tol = ValueTolerance(data.dtype);
  WEFT_FLOAT_TYPE_SWITCH(data.dtype, T, "Operator '" + attrs.op->name + "': input 'data'", {
    const T* p = data.ptr<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double v = static_cast<double>(p[r * k + j]);
        if (!(v >= 0 && v <= 1 + tol))
          Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input 'data': expected probabilities in [0, 1], got ",
                v, " at distribution ", r, ", category ", j);
        sum += v;
        cum[r * k + j] = sum;
      }
      if (!(sum > 0))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input 'data': expected distribution ", r,
              " to have a positive total probability, got ", sum);
    }
  });
  return cum;
}

void MultinomialCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const TBlob& data = in[0];
  const int64_t k = data.shape[data.shape.ndim() - 1];
  const int64_t rows = data.Size() / k;
  const int64_t per_row = rows == 0 ? 0 : out[0].Size() / rows;
  const std::vector<double> cum = CheckedCumulative(attrs, data);
  const bool want_prob = out.size() > 1 && req[1] != OpReq::kNullOp;
  if (req[0] == OpReq::kNullOp && !want_prob) return;
  const int64_t n = out[0].Size();
  random::Draw draw = random::Reserve(attrs, ctx, static_cast<uint64_t>(n));
  WEFT_TYPE_SWITCH(out[0].dtype, I, {
    WEFT_FLOAT_TYPE_SWITCH(data.dtype, T, "Operator '" + attrs.op->name + "': input 'data'", {
      I* idx = out[0].ptr<I>();
      T* prob = want_prob ? out[1].ptr<T>() : nullptr;
      const T* p = data.ptr<T>();
      ParallelFor(n, random::kSampleGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t r = i / per_row;
          const double* c = cum.data() + r * k;
          random::ElementStream s = draw.Stream(static_cast<uint64_t>(i));
          // Scaled by the row's own total, so a sum off by rounding does not favour the last
          // category.
          const double u = s.Uniform() * c[k - 1];
          int64_t j = std::upper_bound(c, c + k, u) - c;
          // u rounded up to the total: take the last category with mass.
          if (j == k) {
            j = k - 1;
            while (j > 0 && !(static_cast<double>(p[r * k + j]) > 0)) --j;
          }
          if (req[0] != OpReq::kNullOp) Store(idx + i, req[0], static_cast<double>(j));
          if (prob) Store(prob + i, req[1], std::log(static_cast<double>(p[r * k + j])));
        }
      });
    });
  });
}

// The gradient of the log probabilities (get_prob) with respect to data: each draw j of
// row r adds ograd[j] / data[r, sample[j]] to that category (d log p / d p = 1 / p).
bool MultinomialBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& ograd = (*in)[0];
  const Shape& data = (*in)[1];
  const Shape& samples = (*in)[2];
  if (!ograd.is_known() || !data.is_known() || !samples.is_known()) return false;
  if (data.ndim() < 1 || data[data.ndim() - 1] == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': input 'data': expected at least 1 dimension with categories, got shape ", data.ToString());
  bool fits = ograd == samples && ograd.ndim() >= data.ndim() - 1;
  for (int i = 0; fits && i + 1 < data.ndim(); ++i) fits = ograd[i] == data[i];
  if (!fits)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected 'ograd' and 'samples' of one shape starting with data's leading axes ", data.ToString(),
          ", got ograd ", ograd.ToString(), " and samples ", samples.ToString());
  AssignShape(attrs, out, 0, data, "output");
  return true;
}

bool MultinomialBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const DType data = (*in)[1];
  if (data == DType::kUnknown) return false;
  if (!IsFloatDType(data))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name,
          "': input 'data': expected probabilities in a floating-point dtype, got ", DTypeName(data));
  AssignType(attrs, in, 0, data, "input");
  AssignType(attrs, out, 0, data, "output");
  return (*in)[2] != DType::kUnknown;
}

void MultinomialBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const TBlob& data = in[1];
  const int64_t k = data.shape[data.shape.ndim() - 1];
  const int64_t rows = data.Size() / k;
  const int64_t per_row = rows == 0 ? 0 : in[0].Size() / rows;
  WEFT_FLOAT_TYPE_SWITCH(data.dtype, T, "Operator '" + attrs.op->name + "': input 'data'", {
    const T* g = in[0].ptr<T>();
    const T* p = data.ptr<T>();
    T* grad = out[0].ptr<T>();
    std::vector<double> acc(static_cast<size_t>(data.Size()), 0.0);
    WEFT_TYPE_SWITCH(in[2].dtype, I, {
      const I* idx = in[2].ptr<I>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < per_row; ++j) {
          const double c = static_cast<double>(idx[r * per_row + j]);
          if (!(c >= 0 && c < static_cast<double>(k)))
            Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input 'samples': expected categories in [0, ",
                  k, "), got ", c);
          const int64_t cat = static_cast<int64_t>(c);
          acc[r * k + cat] += static_cast<double>(g[r * per_row + j]) / static_cast<double>(p[r * k + cat]);
        }
    });
    for (int64_t i = 0; i < data.Size(); ++i) Store(grad + i, req[0], acc[i]);
  });
}

}  // namespace

WEFT_REGISTER_OP(_sample_multinomial)
    .AddAlias("sample_multinomial")
    .Describe("Samples category indices from the multinomial distributions in the last axis of data.")
    .SetNumInputs(1)
    .SetNumOutputs(NumOutputs)
    .AddArgument("data", "NDArray-or-Symbol", "Probabilities; the last axis is the distribution (drawn in proportion to its entries)")
    .SetParams<MultinomialParam>()
    .SetAttr<FInferShape>("FInferShape", MultinomialShape)
    .SetAttr<FInferType>("FInferType", MultinomialType)
    // The GPU kernel keeps the rows' cumulative sums in temporary space.
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) {
                                 return std::vector<ResourceRequest>{{ResourceType::kRandom},
                                                                     {ResourceType::kTempSpace}};
                               })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MultinomialCompute)
    // The draws are not differentiable; with get_prob the log probabilities are, with
    // respect to the probabilities of the drawn categories.
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      if (!attrs.Params<MultinomialParam>().get_prob || !a.out_grads[1].defined())
        return std::vector<GradValue>{b.Op("zeros_like", {a.inputs[0]})};
      return std::vector<GradValue>{
          b.Op("_backward_sample_multinomial", {a.out_grads[1], a.inputs[0], a.outputs[0]})};
    });

WEFT_REGISTER_OP(_backward_sample_multinomial)
    .Describe("Gradient of _sample_multinomial's log probabilities with respect to data.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the log probabilities")
    .AddArgument("data", "NDArray-or-Symbol", "The forward probabilities")
    .AddArgument("samples", "NDArray-or-Symbol", "The forward samples")
    .SetAttr<FInferShape>("FInferShape", MultinomialBackwardShape)
    .SetAttr<FInferType>("FInferType", MultinomialBackwardType)
    .SetAttr<FCompute>("FCompute<cpu>", MultinomialBackward);

}  // namespace op
}  // namespace weft

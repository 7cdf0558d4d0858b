// _histogram: counts (int64) of data's elements per bin, with numpy's bins: [e_i, e_i+1)
// except the last, which includes its right edge; values outside are not counted. The bins
// are `bin_cnt` equal ones over `range` (their edges the second output) or the edges given
// as the second input (returned unchanged).
#include <algorithm>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct HistogramParam {
  std::optional<int> bin_cnt;
  std::vector<double> range;
};

WEFT_PARAM_SCHEMA(HistogramParam, s) {
  s.Field("bin_cnt", &HistogramParam::bin_cnt)
      .Default(std::nullopt)
      .Describe("Number of bins for uniform case");
  s.Field("range", &HistogramParam::range)
      .Default(std::vector<double>())
      .Describe("The lower and upper range of the bins. if not provided, range is simply (a.min(), a.max()). "
                "values outside the range are ignored. the first element of the range must be less than or "
                "equal to the last element of it. Range argument is required when bin_cnt is given.");
}

namespace {

bool HasCount(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<HistogramParam>();
  if (p.bin_cnt.has_value() != !p.range.empty())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': give bin_cnt and range together, or neither (with "
          "bins as the second input)");
  if (p.bin_cnt) {
    if (*p.bin_cnt <= 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': bin_cnt must be positive, got ", *p.bin_cnt);
    if (p.range.size() != 2 || !(p.range[0] <= p.range[1]))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': range must be (lower, upper) with lower <= upper");
  }
  return p.bin_cnt.has_value();
}

bool HistogramShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (HasCount(attrs)) {
    int64_t n = *attrs.Params<HistogramParam>().bin_cnt;
    AssignShape(attrs, out, 0, Shape({n}), "output");
    AssignShape(attrs, out, 1, Shape({n + 1}), "output");
  } else {
    const Shape& b = (*in)[1];
    if (!b.is_known()) return false;
    if (b.ndim() != 1 || b[0] < 2)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': bins must be a 1-D vector of at least 2 edges, got "
            "shape ", b.ToString());
    AssignShape(attrs, out, 0, Shape({b[0] - 1}), "output");
    AssignShape(attrs, out, 1, b, "output");
  }
  return (*in)[0].is_known();
}

bool HistogramType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, DType::kInt64, "output");
  if ((*in)[0] == DType::kUnknown) return false;
  for (size_t i = 1; i < in->size(); ++i) AssignType(attrs, in, i, (*in)[0], "input");
  AssignType(attrs, out, 1, (*in)[0], "output");
  return true;
}

void HistogramCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  bool counted = HasCount(attrs);
  const auto& p = attrs.Params<HistogramParam>();
  int64_t nbins = counted ? *p.bin_cnt : in[1].Size() - 1;
  if (out[0].Size() != nbins || out[1].Size() != nbins + 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected outputs of ", nbins, " and ", nbins + 1,
          " elements");
  std::vector<double> edges(nbins + 1);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    if (counted) {
      for (int64_t i = 0; i <= nbins; ++i)
        edges[i] = static_cast<double>(static_cast<T>((p.range[1] * i + (nbins - i) * p.range[0]) / nbins));
    } else {
      const T* e = in[1].ptr<T>();
      for (int64_t i = 0; i <= nbins; ++i) edges[i] = static_cast<double>(e[i]);
      for (int64_t i = 0; i < nbins; ++i)
        if (!(edges[i] <= edges[i + 1]))
          Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': bins must increase monotonically");
    }
    std::vector<int64_t> counts(nbins, 0);
    const T* x = in[0].ptr<T>();
    for (int64_t i = 0; i < in[0].Size(); ++i) {
      double v = static_cast<double>(x[i]);
      if (!(v >= edges.front() && v <= edges.back())) continue;
      int64_t b = std::upper_bound(edges.begin(), edges.end(), v) - edges.begin() - 1;
      counts[std::min(b, nbins - 1)] += 1;
    }
    if (req[0] != OpReq::kNullOp)
      for (int64_t i = 0; i < nbins; ++i) Store(out[0].ptr<int64_t>() + i, req[0], counts[i]);
    if (req[1] != OpReq::kNullOp)
      for (int64_t i = 0; i <= nbins; ++i) Store(out[1].ptr<T>() + i, req[1], edges[i]);
  });
}

}  // namespace

WEFT_REGISTER_OP(_histogram)
    .Describe("Counts of data's elements per bin (int64) and the bin edges: bin_cnt equal bins over range, or the "
              "edges given as bins; every bin but the last excludes its right edge, as in numpy.")
    .SetNumInputs([](const NodeAttrs& attrs) { return HasCount(attrs) ? 1 : 2; })
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .AddArgument("bins", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<HistogramParam>()
    .SetAttr<FInferShape>("FInferShape", HistogramShape)
    .SetAttr<FInferType>("FInferType", HistogramType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", HistogramCompute);

}  // namespace op
}  // namespace weft

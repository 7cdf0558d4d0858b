// _contrib_calibrate_entropy: the threshold search of entropy calibration (MXNet's
// mx.contrib.quantization, after NVIDIA's TensorRT 8-bit calibration). Given a histogram of a
// layer's values over [-t, t] (an odd number of bins, centred on zero), it tries every
// symmetric window of at least num_quantized_bins bins around the centre and keeps the one
// whose quantized form loses the least information: the KL divergence between
//   p: the window's counts, with the counts outside it folded into its two edge bins
//      (clipping), and
//   q: the window's counts merged into num_quantized_bins groups of equal width (the last
//      takes the remainder), each group's total spread evenly over its bins where p is not
//      zero (what quantization to num_quantized_bins levels keeps of the window).
// Zeros of both are smoothed away first (each zero becomes 1e-4, taken off the other bins
// evenly), so the divergence stays finite. The threshold is the window's upper edge.
//
// MXNet's own kernel leaves the window's first bin out of q's counts (not its last); here
// both edges are treated alike, so a threshold can differ from MXNet's by one bin's width.
#include <cmath>
#include <limits>
#include <numeric>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct CalibrateEntropyParam {
  int num_quantized_bins = 255;
};

WEFT_PARAM_SCHEMA(CalibrateEntropyParam, s) {
  s.Field("num_quantized_bins", &CalibrateEntropyParam::num_quantized_bins)
      .Default(255)
      .Min(1)
      .Describe("The number of quantized bins.");
}

namespace {

constexpr double kSmoothEps = 1e-4;

bool CalibrateShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, Shape({1}), "output");
  AssignShape(attrs, out, 1, Shape({1}), "output");
  const Shape& hist = (*in)[0];
  const Shape& edges = (*in)[1];
  if (!hist.is_known() || !edges.is_known()) return false;
  const int nq = attrs.Params<CalibrateEntropyParam>().num_quantized_bins;
  if (hist.ndim() != 1 || hist[0] % 2 == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected hist of shape (n,) with n odd, got ",
          hist.ToString());
  if (edges.ndim() != 1 || edges[0] != hist[0] + 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected hist_edges of shape (", hist[0] + 1,
          ",) for ", hist[0], " bins, got ", edges.ToString());
  if (nq > hist[0])
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected num_quantized_bins <= the number of bins (",
          hist[0], "), got ", nq);
  return true;
}

bool CalibrateType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  for (size_t i = 0; i < 2; ++i)
    if ((*in)[i] != DType::kUnknown && (*in)[i] != DType::kFloat32)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected float32 ", InputName(attrs, i), ", got ",
            DTypeName((*in)[i]));
  AssignType(attrs, in, 0, DType::kFloat32, "input");
  AssignType(attrs, in, 1, DType::kFloat32, "input");
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  AssignType(attrs, out, 1, DType::kFloat32, "output");
  return true;
}

// Replaces zeros by kSmoothEps and takes as much off the others, evenly; false when that is
// impossible (all zero, or a bin smaller than its share), which makes the window unusable.
bool Smooth(std::vector<double>* v) {
  size_t zeros = 0;
  for (double x : *v) zeros += x == 0;
  const size_t nonzeros = v->size() - zeros;
  if (nonzeros == 0) return false;
  const double take = kSmoothEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& x : *v) {
    x = x == 0 ? kSmoothEps : x - take;
    if (x <= 0) return false;
  }
  return true;
}

// KL(p || q) of the two after normalising each to sum 1.
double Divergence(const std::vector<double>& p, const std::vector<double>& q) {
  const double ps = std::accumulate(p.begin(), p.end(), 0.0);
  const double qs = std::accumulate(q.begin(), q.end(), 0.0);
  double d = 0;
  for (size_t k = 0; k < p.size(); ++k) d += p[k] / ps * std::log((p[k] / ps) / (q[k] / qs));
  return d;
}

void CalibrateCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const int64_t nq = attrs.Params<CalibrateEntropyParam>().num_quantized_bins;
  const float* hist = in[0].ptr<float>();
  const float* edges = in[1].ptr<float>();
  const int64_t n = in[0].Size();
  const int64_t zero = n / 2;
  const int64_t first = nq / 2;
  // prefix[j]: the count of bins [0, j), for the mass outside a window in O(1).
  std::vector<double> prefix(n + 1, 0.0);
  for (int64_t j = 0; j < n; ++j) prefix[j + 1] = prefix[j] + hist[j];
  const int64_t candidates = zero - first + 1;
  std::vector<double> divergence(candidates, std::numeric_limits<double>::infinity());
  ParallelFor(candidates, 8, [&](int64_t b, int64_t e) {
    std::vector<double> p, q;
    for (int64_t c = b; c < e; ++c) {
      const int64_t half = first + c;
      const int64_t start = zero - half, stop = zero + half + 1, m = stop - start;
      p.assign(hist + start, hist + stop);
      p.front() += prefix[start];
      p.back() += prefix[n] - prefix[stop];
      q.assign(m, 0.0);
      const int64_t width = m / nq;
      for (int64_t j = 0; j < nq; ++j) {
        const int64_t lo = j * width, hi = j == nq - 1 ? m : lo + width;
        const double total = prefix[start + hi] - prefix[start + lo];
        int64_t support = 0;
        for (int64_t k = lo; k < hi; ++k) support += p[k] != 0;
        if (support == 0) continue;
        for (int64_t k = lo; k < hi; ++k)
          if (p[k] != 0) q[k] = total / static_cast<double>(support);
      }
      if (Smooth(&p) && Smooth(&q)) divergence[c] = Divergence(p, q);
    }
  });
  // The first of equal minima, as MXNet keeps it; with no usable window, the smallest one.
  int64_t best = 0;
  for (int64_t c = 1; c < candidates; ++c)
    if (divergence[c] < divergence[best]) best = c;
  if (req[0] != OpReq::kNullOp) *out[0].ptr<float>() = edges[zero + first + best + 1];
  if (req[1] != OpReq::kNullOp) *out[1].ptr<float>() = static_cast<float>(divergence[best]);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_calibrate_entropy)
    .Describe("Finds the threshold t of a histogram (odd number of bins centred on zero) whose clipping to "
              "[-t, t] and quantization to num_quantized_bins levels keeps the values' distribution closest in "
              "KL divergence; outputs the threshold and that divergence. Inference only.")
    .SetNumInputs(2)
    .SetNumOutputs(2)
    .AddArgument("hist", "NDArray-or-Symbol", "The histogram's counts, float32 of shape (n,), n odd")
    .AddArgument("hist_edges", "NDArray-or-Symbol", "The bins' edges, float32 of shape (n + 1,)")
    .SetParams<CalibrateEntropyParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"threshold", "divergence"}; })
    .SetAttr<FInferShape>("FInferShape", CalibrateShape)
    .SetAttr<FInferType>("FInferType", CalibrateType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CalibrateCompute);

}  // namespace op
}  // namespace weft

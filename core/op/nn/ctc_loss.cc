// CTCLoss (aliases ctc_loss, _contrib_CTCLoss, _contrib_ctc_loss): the connectionist
// temporal classification loss of Graves et al. (2006) over unnormalised activations
// data (T, B, A), softmax taken over A inside. Labels (B, L) are padded with 0 when the
// blank is class 0 (blank_label='first') and with -1 when it is class A-1 ('last'),
// unless label_lengths gives the lengths; data_lengths gives each sequence's steps.
//
// The forward pass runs the alpha and beta recursions in log space per sequence and
// writes the loss (B,) and, into the hidden second output, the gradient of each loss with
// respect to the activations (zero past each sequence's length), which the backward
// operator scales by the head gradient. A labelling that no path of the given length can
// produce has an infinite loss and a zero gradient.
#include <cmath>
#include <limits>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct CTCLossParam {
  bool use_data_lengths = false;
  bool use_label_lengths = false;
  std::string blank_label = "first";
};

WEFT_PARAM_SCHEMA(CTCLossParam, s) {
  s.Field("use_data_lengths", &CTCLossParam::use_data_lengths)
      .Default(false)
      .Describe("Whether the input data_lengths gives each sequence's length; otherwise all have T steps.");
  s.Field("use_label_lengths", &CTCLossParam::use_label_lengths)
      .Default(false)
      .Describe(
          "Whether the input label_lengths gives each labelling's length; otherwise a labelling ends at the first "
          "padding value (0 with blank_label='first', -1 with 'last').");
  s.Field("blank_label", &CTCLossParam::blank_label)
      .Default("first")
      .Choices({"first", "last"})
      .Describe(
          "Which class is the blank: 'first' (0; labels in 1..A-1, padded with 0) or 'last' (A-1; labels in "
          "0..A-2, padded with -1).");
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

inline double LogAdd(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

// log(e^a + e^b + e^c) with one logarithm.
inline double LogSum3(double a, double b, double c) {
  double m = std::max(a, std::max(b, c));
  if (m == kNegInf) return kNegInf;
  return m + std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m));
}

int NumCtcInputs(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<CTCLossParam>();
  return 2 + (p.use_data_lengths ? 1 : 0) + (p.use_label_lengths ? 1 : 0);
}

bool CTCLossShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<CTCLossParam>();
  const Shape &d = (*in)[0], &l = (*in)[1];
  if (!d.is_known() || !l.is_known()) return false;
  if (d.ndim() != 3)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected data (sequence_length, batch_size, alphabet_size), got shape ", d.ToString());
  if (l.ndim() != 2 || l[0] != d[1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected label (", d[1],
          ", label_sequence_length) for data of shape ", d.ToString(), ", got shape ", l.ToString());
  if (l[1] > d[0])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': labels of length ", l[1],
          " cannot be longer than the sequences (", d[0], " steps)");
  if (d[2] < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected an alphabet of at least 2 classes (one is the blank), got data of shape ", d.ToString());
  size_t i = 2;
  for (bool used : {p.use_data_lengths, p.use_label_lengths}) {
    if (!used) continue;
    const Shape& len = (*in)[i];
    if (len.known_ndim() && (len.ndim() != 1 || (len[0] >= 0 && len[0] != d[1])))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i == 2 && p.use_data_lengths ? 2 : 3),
            " has shape ", len.ToString(), " but the batch needs (", d[1], ",)");
    AssignShape(attrs, in, i, Shape{d[1]}, "input");
    ++i;
  }
  AssignShape(attrs, out, 0, Shape{d[1]}, "output");
  AssignShape(attrs, out, 1, d, "output");
  return true;
}

// The loss and hidden gradient take the data's floating dtype; labels and lengths keep theirs.
bool CTCLossType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (t != DType::kFloat32 && t != DType::kFloat64)
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected float32 or float64 data, got ", DTypeName(t));
  AssignType(attrs, out, 0, t, "output");
  AssignType(attrs, out, 1, t, "output");
  for (DType x : *in)
    if (x == DType::kUnknown) return false;
  return true;
}

// Reads element i of an integer-valued array of any dtype.
double ValueAt(const TBlob& b, int64_t i) {
  double v = 0;
  WEFT_TYPE_SWITCH(b.dtype, L, { v = static_cast<double>(b.ptr<L>()[i]); });
  return v;
}

// One sequence's labelling, checked against the alphabet's range.
std::vector<int64_t> Labelling(const NodeAttrs& attrs, const TBlob& label, const TBlob* label_len, int64_t b,
                               int64_t A, int64_t blank) {
  const int64_t L = label.shape[1];
  int64_t n = L;
  if (label_len != nullptr) {
    double v = std::trunc(ValueAt(*label_len, b));
    if (!(v >= 0 && v <= static_cast<double>(L)))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': label_lengths[", b, "] = ", v,
            " is outside [0, ", L, "]");
    n = static_cast<int64_t>(v);
  }
  const double pad = blank == 0 ? 0.0 : -1.0;
  std::vector<int64_t> out;
  for (int64_t j = 0; j < n; ++j) {
    // Labels and lengths are integers in any dtype; fractions truncate, as MXNet casts them.
    double v = std::trunc(ValueAt(label, b * L + j));
    if (label_len == nullptr && v == pad) break;
    // The blank's own index inside the labelling is taken as a symbol of the lattice, as
    // MXNet 1.9 computes it (its gluon tests pass such labels with label_lengths).
    if (!(v >= 0 && v < static_cast<double>(A)))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': label[", b, ", ", j, "] = ", v,
            " is not a class of the alphabet of ", A);
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

// Loss and gradient of one sequence: x (T steps with stride `step` between them, A
// classes each), its labelling `lab`; writes `loss` and grad rows (same layout as x).
template <typename T>
void CtcOne(const T* x, int64_t steps, int64_t step, int64_t A, const std::vector<int64_t>& lab, int64_t blank,
            double* loss, T* grad) {
  const int64_t S = 2 * static_cast<int64_t>(lab.size()) + 1;
  auto sym = [&](int64_t s) { return (s & 1) ? lab[static_cast<size_t>(s >> 1)] : blank; };
  // Log-softmax of every step.
  std::vector<double> lp(static_cast<size_t>(steps * A));
  for (int64_t t = 0; t < steps; ++t) {
    const T* r = x + t * step;
    double m = kNegInf;
    for (int64_t k = 0; k < A; ++k) m = std::max(m, static_cast<double>(r[k]));
    double z = 0;
    for (int64_t k = 0; k < A; ++k) z += std::exp(static_cast<double>(r[k]) - m);
    double lz = m + std::log(z);
    for (int64_t k = 0; k < A; ++k) lp[static_cast<size_t>(t * A + k)] = static_cast<double>(r[k]) - lz;
  }
  auto LP = [&](int64_t t, int64_t k) { return lp[static_cast<size_t>(t * A + k)]; };
  // alpha[t][s]: log probability of the prefixes ending in extended symbol s at step t
  // (emission at t included); beta[t][s]: of the suffixes after step t given s at t.
  std::vector<double> alpha(static_cast<size_t>(steps * S), kNegInf), beta(static_cast<size_t>(steps * S), kNegInf);
  auto AL = [&](int64_t t, int64_t s) -> double& { return alpha[static_cast<size_t>(t * S + s)]; };
  auto BE = [&](int64_t t, int64_t s) -> double& { return beta[static_cast<size_t>(t * S + s)]; };
  double ll = kNegInf;
  if (steps > 0) {
    AL(0, 0) = LP(0, blank);
    if (S > 1) AL(0, 1) = LP(0, sym(1));
    for (int64_t t = 1; t < steps; ++t)
      for (int64_t s = 0; s < S; ++s) {
        double a = LogSum3(AL(t - 1, s), s >= 1 ? AL(t - 1, s - 1) : kNegInf,
                           s >= 2 && sym(s) != blank && sym(s) != sym(s - 2) ? AL(t - 1, s - 2) : kNegInf);
        AL(t, s) = a == kNegInf ? kNegInf : a + LP(t, sym(s));
      }
    BE(steps - 1, S - 1) = 0;
    if (S > 1) BE(steps - 1, S - 2) = 0;
    for (int64_t t = steps - 2; t >= 0; --t)
      for (int64_t s = 0; s < S; ++s) {
        BE(t, s) = LogSum3(BE(t + 1, s) + LP(t + 1, sym(s)),
                           s + 1 < S ? BE(t + 1, s + 1) + LP(t + 1, sym(s + 1)) : kNegInf,
                           s + 2 < S && sym(s + 2) != blank && sym(s + 2) != sym(s)
                               ? BE(t + 1, s + 2) + LP(t + 1, sym(s + 2))
                               : kNegInf);
      }
    ll = AL(steps - 1, S - 1);
    if (S > 1) ll = LogAdd(ll, AL(steps - 1, S - 2));
  } else {
    ll = lab.empty() ? 0.0 : kNegInf;
  }
  *loss = -ll;
  if (grad == nullptr) return;
  std::vector<double> occ(static_cast<size_t>(A));
  for (int64_t t = 0; t < steps; ++t) {
    T* g = grad + t * step;
    if (ll == kNegInf) {
      for (int64_t k = 0; k < A; ++k) g[k] = T(0);
      continue;
    }
    // The posterior occupancy of each class at t, summed over its extended symbols.
    std::fill(occ.begin(), occ.end(), 0.0);
    for (int64_t s = 0; s < S; ++s) occ[static_cast<size_t>(sym(s))] += std::exp(AL(t, s) + BE(t, s) - ll);
    // d(-log p)/dx_k = softmax_k - occupancy_k.
    for (int64_t k = 0; k < A; ++k) g[k] = static_cast<T>(std::exp(LP(t, k)) - occ[static_cast<size_t>(k)]);
  }
}

void CTCLossCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<CTCLossParam>();
  const Shape& d = in[0].shape;
  const int64_t T_ = d[0], B = d[1], A = d[2];
  const int64_t blank = p.blank_label == "first" ? 0 : A - 1;
  const TBlob* data_len = p.use_data_lengths ? &in[2] : nullptr;
  const TBlob* label_len = p.use_label_lengths ? &in[p.use_data_lengths ? 3 : 2] : nullptr;
  // Lengths and labels are checked here, serially: an error must not leave a parallel region.
  std::vector<int64_t> steps(static_cast<size_t>(B), T_);
  std::vector<std::vector<int64_t>> labs(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    if (data_len != nullptr) {
      double v = std::trunc(ValueAt(*data_len, b));
      if (!(v >= 0 && v <= static_cast<double>(T_)))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': data_lengths[", b, "] = ", v, " is outside [0, ",
              T_, "]");
      steps[static_cast<size_t>(b)] = static_cast<int64_t>(v);
    }
    labs[static_cast<size_t>(b)] = Labelling(attrs, in[1], label_len, b, A, blank);
  }
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "CTCLoss", {
    const T* x = in[0].ptr<T>();
    T* grad = req[1] == OpReq::kNullOp ? nullptr : out[1].ptr<T>();
    if (grad != nullptr) std::fill(grad, grad + out[1].Size(), T(0));
    std::vector<double> loss(static_cast<size_t>(B));
    ParallelFor(B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b)
        CtcOne(x + b * A, steps[static_cast<size_t>(b)], B * A, A, labs[static_cast<size_t>(b)], blank,
               &loss[static_cast<size_t>(b)], grad == nullptr ? nullptr : grad + b * A);
    });
    if (req[0] != OpReq::kNullOp)
      for (int64_t b = 0; b < B; ++b) Store(out[0].ptr<T>() + b, req[0], loss[static_cast<size_t>(b)]);
  });
}

// Inputs: ograd (B,), the forward's hidden gradient (T, B, A); output: the data's gradient.
bool CTCLossBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& g = (*in)[1];
  if (!g.is_known()) return false;
  if (g.ndim() != 3)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected the forward gradient (T, B, A), got shape ",
          g.ToString());
  AssignShape(attrs, in, 0, Shape{g[1]}, "input");
  AssignShape(attrs, out, 0, g, "output");
  return true;
}

void CTCLossBackward(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                     const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = in[1].shape;
  const int64_t B = s[1], A = s[2];
  WEFT_FLOAT_TYPE_SWITCH(in[1].dtype, T, "_backward_ctc_loss", {
    const T* og = in[0].ptr<T>();
    const T* g = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(s.Size(), kElemGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        Store(y + i, req[0], static_cast<double>(og[(i / A) % B]) * static_cast<double>(g[i]));
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(CTCLoss)
    .Describe(
        "Connectionist temporal classification loss of data (sequence_length, batch_size, alphabet_size), "
        "unnormalised activations (softmax is applied inside), against label (batch_size, label_sequence_length). "
        "One class is the blank (blank_label); labellings are padded with 0 ('first') or -1 ('last') unless "
        "label_lengths is used. The output is the loss of each sequence (batch_size,).")
    .AddAlias("ctc_loss")
    .AddAlias("_contrib_CTCLoss")
    .AddAlias("_contrib_ctc_loss")
    .SetNumInputs(NumCtcInputs)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The activations (sequence_length, batch_size, alphabet_size)")
    .AddArgument("label", "NDArray-or-Symbol", "The labellings (batch_size, label_sequence_length)")
    .AddArgument("data_lengths", "NDArray-or-Symbol", "The length of each sequence (with use_data_lengths)")
    .AddArgument("label_lengths", "NDArray-or-Symbol", "The length of each labelling (with use_label_lengths)")
    .SetParams<CTCLossParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"out", "grad"}; })
    .SetAttr<FInferShape>("FInferShape", CTCLossShape)
    .SetAttr<FInferType>("FInferType", CTCLossType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CTCLossCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> r(a.inputs.size());
      r[0] = b.Op("_backward_ctc_loss", {a.out_grads[0], a.outputs[1]}, attrs.dict);
      return r;
    });

WEFT_REGISTER_OP(_backward_ctc_loss)
    .Describe("Gradient of CTCLoss with respect to its data: the forward's gradient scaled by each loss's head gradient.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the loss (batch_size,)")
    .AddArgument("grad", "NDArray-or-Symbol", "The forward's hidden gradient (sequence_length, batch_size, alphabet_size)")
    .SetParams<CTCLossParam>()
    .SetAttr<FInferShape>("FInferShape", CTCLossBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", CTCLossBackward);

}  // namespace op
}  // namespace weft

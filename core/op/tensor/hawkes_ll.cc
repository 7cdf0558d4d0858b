// _contrib_hawkesll: the log likelihood of K independent self-exciting (Hawkes) processes
// with exponential decay, per sample of a batch of N ragged sequences, and the processes'
// memory at the end of the observation window. With intensity
//   lambda_k(t) = lda_k + alpha_k beta_k sum_{t_i < t, mark_i = k} exp(-beta_k (t - t_i))
// and memory s_k(t) = sum_{t_i < t} exp(-beta_k (t - t_i)) (carried in from `state`), the
// log likelihood is sum over events of log lambda(t_i) minus the integral of every
// intensity over (0, max_time]; the events are lags[n, :valid_length[n]] (times since the
// previous event) with marks[n, :]. Outputs: the (N,) log likelihoods and the (N, K)
// memory at max_time.
//
// _contrib_backward_hawkesll carries the gradient of both outputs to lda, alpha, beta and
// state by differentiating the same recursion (the memory's derivatives with respect to
// beta_k and to its starting value travel along with it). Like MXNet it gives no gradient
// to lags, marks, valid_length or max_time (its outputs for them are zero); unlike MXNet's
// it also carries the gradient of the returned memory and reaches `state`.
#include <cmath>

#include "core/op/op_util.h"

namespace weft {
namespace op {
namespace {

enum Input { kLda, kAlpha, kBeta, kState, kLags, kMarks, kValidLength, kMaxTime, kNumInputs };

struct Dims {
  int64_t n, t, k;
};

// Checks the eight inputs' shapes against lda (N, K) and lags (N, T).
Dims CheckHawkesShapes(const NodeAttrs& attrs, const std::vector<Shape>& in) {
  const Shape &lda = in[kLda], &lags = in[kLags];
  auto fail = [&](const char* name, const Shape& want, const Shape& got) {
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", name, "' must have shape ", want.ToString(),
          ", got ", got.ToString(), " (lda is (N, K) and lags (N, T))");
  };
  if (lda.ndim() != 2) fail("lda", Shape{-1, -1}, lda);
  if (lags.ndim() != 2) fail("lags", Shape{lda[0], -1}, lags);
  Dims d{lags[0], lags[1], lda[1]};
  const std::pair<const char*, Shape> want[] = {
      {"lda", Shape{d.n, d.k}},   {"alpha", Shape{d.k}},        {"beta", Shape{d.k}},
      {"state", Shape{d.n, d.k}}, {"lags", Shape{d.n, d.t}},    {"marks", Shape{d.n, d.t}},
      {"valid_length", Shape{d.n}}, {"max_time", Shape{d.n}}};
  for (int i = 0; i < kNumInputs; ++i)
    if (in[i] != want[i].second) fail(want[i].first, want[i].second, in[i]);
  return d;
}

bool HawkesShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  for (const auto& s : *in) if (!s.is_known()) return false;
  Dims d = CheckHawkesShapes(attrs, *in);
  AssignShape(attrs, out, 0, Shape{d.n}, "output");
  AssignShape(attrs, out, 1, Shape{d.n, d.k}, "output");
  return true;
}

// Every input but marks (int32) shares one floating dtype; `first` is where the forward
// inputs start (1 or 2 in the backward, after the output gradients).
bool HawkesType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out, size_t first) {
  DType t = DType::kUnknown;
  for (size_t i = 0; i < in->size() && t == DType::kUnknown; ++i)
    if (i != first + kMarks) t = (*in)[i];
  for (size_t i = 0; i < out->size() && t == DType::kUnknown; ++i) t = (*out)[i];
  AssignType(attrs, in, first + kMarks, DType::kInt32, "input");
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point inputs, got ", DTypeName(t));
  for (size_t i = 0; i < in->size(); ++i)
    if (i != first + kMarks) AssignType(attrs, in, i, t, "input");
  for (size_t i = 0; i < out->size(); ++i)
    AssignType(attrs, out, i, first > 0 && i == kMarks ? DType::kInt32 : t, "output");
  return true;
}

// The events of sample n, checked: how many, and each one's mark.
int64_t ValidLength(const NodeAttrs& attrs, double v, int64_t n, int64_t t) {
  if (!(v >= 0 && v <= static_cast<double>(t)) || v != std::floor(v))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': valid_length[", n, "] = ", v,
          " is not a whole number of events in [0, ", t, "]");
  return static_cast<int64_t>(v);
}

int32_t Mark(const NodeAttrs& attrs, int32_t m, int64_t n, int64_t j, int64_t k) {
  if (m < 0 || m >= k)
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': marks[", n, ", ", j, "] = ", m,
          " is not a process of [0, ", k, ")");
  return m;
}

template <typename T>
void HawkesForward(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                   const std::vector<TBlob>& out) {
  Dims dm = CheckHawkesShapes(attrs, {in[0].shape, in[1].shape, in[2].shape, in[3].shape, in[4].shape,
                                      in[5].shape, in[6].shape, in[7].shape});
  const T *lda = in[kLda].ptr<T>(), *alpha = in[kAlpha].ptr<T>(), *beta = in[kBeta].ptr<T>();
  const T *state = in[kState].ptr<T>(), *lags = in[kLags].ptr<T>(), *vlen = in[kValidLength].ptr<T>();
  const T* max_time = in[kMaxTime].ptr<T>();
  const int32_t* marks = in[kMarks].ptr<int32_t>();
  for (int64_t n = 0; n < dm.n; ++n) {
    int64_t len = ValidLength(attrs, static_cast<double>(vlen[n]), n, dm.t);
    std::vector<double> last(dm.k, 0.0), s(dm.k);
    for (int64_t c = 0; c < dm.k; ++c) s[c] = static_cast<double>(state[n * dm.k + c]);
    double t = 0, ll = 0;
    for (int64_t j = 0; j < len; ++j) {
      int32_t c = Mark(attrs, marks[n * dm.t + j], n, j, dm.k);
      double mu = lda[n * dm.k + c], a = alpha[c], b = beta[c];
      t += static_cast<double>(lags[n * dm.t + j]);
      double d = t - last[c], ed = std::exp(-b * d);
      ll += std::log(mu + a * b * s[c] * ed) - (mu * d + a * s[c] * (1 - ed));
      s[c] = 1 + s[c] * ed;
      last[c] = t;
    }
    for (int64_t c = 0; c < dm.k; ++c) {
      double mu = lda[n * dm.k + c], a = alpha[c], b = beta[c];
      double d = static_cast<double>(max_time[n]) - last[c], ed = std::exp(-b * d);
      ll -= mu * d + a * s[c] * (1 - ed);
      if (req[1] != OpReq::kNullOp) Store(out[1].ptr<T>() + n * dm.k + c, req[1], ed * s[c]);
    }
    if (req[0] != OpReq::kNullOp) Store(out[0].ptr<T>() + n, req[0], ll);
  }
}

// Inputs (d output, d out_state, the eight forward inputs); outputs one gradient per
// forward input.
template <typename T>
void HawkesBackward(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                    const std::vector<TBlob>& out) {
  std::vector<Shape> fwd;
  for (int i = 0; i < kNumInputs; ++i) fwd.push_back(in[2 + i].shape);
  Dims dm = CheckHawkesShapes(attrs, fwd);
  if (in[0].shape != Shape{dm.n} || in[1].shape != Shape{dm.n, dm.k})
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the output gradients must have shapes (", dm.n,
          ",) and (", dm.n, ", ", dm.k, "), got ", in[0].shape.ToString(), " and ", in[1].shape.ToString());
  for (int i = 0; i < kNumInputs; ++i)
    if (req[i] != OpReq::kNullOp && out[i].shape != fwd[i])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': gradient ", i, " must have shape ",
            fwd[i].ToString(), ", got ", out[i].shape.ToString());
  const T *g_ll = in[0].ptr<T>(), *g_state = in[1].ptr<T>();
  const T *lda = in[2 + kLda].ptr<T>(), *alpha = in[2 + kAlpha].ptr<T>(), *beta = in[2 + kBeta].ptr<T>();
  const T *state = in[2 + kState].ptr<T>(), *lags = in[2 + kLags].ptr<T>();
  const T *vlen = in[2 + kValidLength].ptr<T>(), *max_time = in[2 + kMaxTime].ptr<T>();
  const int32_t* marks = in[2 + kMarks].ptr<int32_t>();
  std::vector<double> g_mu(dm.n * dm.k, 0.0), g_s0(dm.n * dm.k, 0.0), g_alpha(dm.k, 0.0), g_beta(dm.k, 0.0);
  for (int64_t n = 0; n < dm.n; ++n) {
    int64_t len = ValidLength(attrs, static_cast<double>(vlen[n]), n, dm.t);
    double gl = static_cast<double>(g_ll[n]);
    // s: memory; sb: its derivative in beta_c; sp: its derivative in its starting value.
    std::vector<double> last(dm.k, 0.0), s(dm.k), sb(dm.k, 0.0), sp(dm.k, 1.0);
    for (int64_t c = 0; c < dm.k; ++c) s[c] = static_cast<double>(state[n * dm.k + c]);
    double t = 0;
    for (int64_t j = 0; j < len; ++j) {
      int32_t c = Mark(attrs, marks[n * dm.t + j], n, j, dm.k);
      int64_t nc = n * dm.k + c;
      double mu = lda[nc], a = alpha[c], b = beta[c];
      t += static_cast<double>(lags[n * dm.t + j]);
      double d = t - last[c], ed = std::exp(-b * d);
      double lam = mu + a * b * s[c] * ed;
      g_mu[nc] += gl * (1 / lam - d);
      g_alpha[c] += gl * (b * s[c] * ed / lam - s[c] * (1 - ed));
      g_beta[c] += gl * (a * ed * (s[c] * (1 - b * d) + b * sb[c]) / lam - a * (sb[c] * (1 - ed) + s[c] * d * ed));
      g_s0[nc] += gl * (a * b * ed * sp[c] / lam - a * (1 - ed) * sp[c]);
      sb[c] = ed * (sb[c] - d * s[c]);
      sp[c] = ed * sp[c];
      s[c] = 1 + s[c] * ed;
      last[c] = t;
    }
    for (int64_t c = 0; c < dm.k; ++c) {
      int64_t nc = n * dm.k + c;
      double a = alpha[c], b = beta[c], gs = static_cast<double>(g_state[nc]);
      double d = static_cast<double>(max_time[n]) - last[c], ed = std::exp(-b * d);
      g_mu[nc] -= gl * d;
      g_alpha[c] -= gl * s[c] * (1 - ed);
      g_beta[c] -= gl * a * (sb[c] * (1 - ed) + s[c] * d * ed);
      g_s0[nc] -= gl * a * (1 - ed) * sp[c];
      // The returned memory is ed * s.
      g_beta[c] += gs * ed * (sb[c] - d * s[c]);
      g_s0[nc] += gs * ed * sp[c];
    }
  }
  auto put = [&](int i, const std::vector<double>& g) {
    if (req[i] == OpReq::kNullOp) return;
    T* p = out[i].ptr<T>();
    for (size_t j = 0; j < g.size(); ++j) Store(p + j, req[i], g[j]);
  };
  put(kLda, g_mu);
  put(kAlpha, g_alpha);
  put(kBeta, g_beta);
  put(kState, g_s0);
  for (int i = kLags; i < kNumInputs; ++i) {
    if (req[i] == OpReq::kNullOp) continue;
    WEFT_TYPE_SWITCH(out[i].dtype, G, {
      G* p = out[i].ptr<G>();
      for (int64_t j = 0; j < out[i].Size(); ++j) Store(p + j, req[i], 0.0);
    });
  }
}

void CheckDTypes(const NodeAttrs& attrs, const std::vector<TBlob>& in, size_t first) {
  for (size_t i = 0; i < in.size(); ++i) {
    DType want = i == first + kMarks ? DType::kInt32 : in[0].dtype;
    if (in[i].dtype != want)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': input ", i, " must have dtype ", DTypeName(want),
            ", got ", DTypeName(in[i].dtype));
  }
}

}  // namespace

WEFT_REGISTER_OP(_contrib_hawkesll)
    .Describe(
        "Log likelihood of a marked self-exciting Hawkes process with exponential decay: K independent processes "
        "of intensity lda_k + alpha_k beta_k sum_{t_i < t, mark_i = k} exp(-beta_k (t - t_i)), observed on (0, "
        "max_time[n]] for each of N samples whose events are given as ragged rows (lags: times since the "
        "previous event, marks: process ids, valid_length: how many). state carries the memory "
        "sum exp(-beta_k (t - t_i)) of earlier events in; the outputs are the (N,) log likelihoods and the "
        "(N, K) memory at max_time.")
    .SetNumInputs(kNumInputs)
    .SetNumOutputs(2)
    .AddArgument("lda", "NDArray-or-Symbol", "Shape (N, K) The intensity for each of the K processes, for each sample")
    .AddArgument("alpha", "NDArray-or-Symbol", "Shape (K,) The infectivity factor (branching ratio) for each process")
    .AddArgument("beta", "NDArray-or-Symbol", "Shape (K,) The decay parameter for each process")
    .AddArgument("state", "NDArray-or-Symbol", "Shape (N, K) the Hawkes state for each process")
    .AddArgument("lags", "NDArray-or-Symbol", "Shape (N, T) the interarrival times")
    .AddArgument("marks", "NDArray-or-Symbol", "Shape (N, T) the marks (process ids)")
    .AddArgument("valid_length", "NDArray-or-Symbol", "The number of valid points in the process")
    .AddArgument("max_time", "NDArray-or-Symbol", "the length of the interval where the processes were sampled")
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "out_state"}; })
    .SetAttr<FInferShape>("FInferShape", HawkesShape)
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return HawkesType(attrs, in, out, 0);
                         })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         CheckDTypes(attrs, in, 0);
                         WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(),
                                                { HawkesForward<T>(attrs, in, req, out); });
                       })
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> ins{a.out_grads[0], a.out_grads[1]};
      ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
      std::vector<GradValue> g = b.Call("_contrib_backward_hawkesll", ins, attrs.dict);
      // No gradient flows to the observations (lags, marks, valid_length, max_time).
      for (int i = kLags; i < kNumInputs; ++i) g[i] = GradValue();
      return g;
    });

WEFT_REGISTER_OP(_contrib_backward_hawkesll)
    .Describe("Gradients of _contrib_hawkesll with respect to its eight inputs (zero for lags, marks, valid_length "
              "and max_time).")
    .SetNumInputs(kNumInputs + 2)
    .SetNumOutputs(kNumInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the log likelihoods")
    .AddArgument("ograd_state", "NDArray-or-Symbol", "Gradient of the returned state")
    .AddArgument("lda", "NDArray-or-Symbol", "The forward lda")
    .AddArgument("alpha", "NDArray-or-Symbol", "The forward alpha")
    .AddArgument("beta", "NDArray-or-Symbol", "The forward beta")
    .AddArgument("state", "NDArray-or-Symbol", "The forward state")
    .AddArgument("lags", "NDArray-or-Symbol", "The forward lags")
    .AddArgument("marks", "NDArray-or-Symbol", "The forward marks")
    .AddArgument("valid_length", "NDArray-or-Symbol", "The forward valid_length")
    .AddArgument("max_time", "NDArray-or-Symbol", "The forward max_time")
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            std::vector<Shape> fwd(in->begin() + 2, in->end());
                            for (const auto& s : fwd) if (!s.is_known()) return false;
                            Dims d = CheckHawkesShapes(attrs, fwd);
                            AssignShape(attrs, in, 0, Shape{d.n}, "input");
                            AssignShape(attrs, in, 1, Shape{d.n, d.k}, "input");
                            for (int i = 0; i < kNumInputs; ++i) AssignShape(attrs, out, i, fwd[i], "output");
                            return true;
                          })
    .SetAttr<FInferType>("FInferType",
                         [](const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
                           return HawkesType(attrs, in, out, 2);
                         })
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
                         CheckDTypes(attrs, in, 2);
                         WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(),
                                                { HawkesBackward<T>(attrs, in, req, out); });
                       });

}  // namespace op
}  // namespace weft

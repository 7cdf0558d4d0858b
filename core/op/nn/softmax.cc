// softmax, log_softmax, softmin (axis, temperature, dtype, use_length) and
// SoftmaxActivation (mode instance / channel), with their `_backward_<op>` operators.
//
// The data is seen as outer x n x inner with n the softmax axis; each (outer, inner) pair is
// one row of n values `inner` apart. With use_length, a second input (the data shape
// without the axis, any numeric dtype) gives each row's length: positions at or beyond it
// are outputs of 0 and get gradient 0. With `dtype`, the output has that dtype and the
// gradient the data's; the backward then takes the forward data too, only for its dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/op/nn/norm_util.h"
#include "core/op/nn/softmax_param.h"
#include "core/op/serial_scope.h"
#include "core/op/work_estimate.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace weft {
namespace op {

namespace {

using nn::Acc;
using nn::Put;

enum class Kind { kSoftmax, kLogSoftmax, kSoftmin };

// Elements under which a softmax runs on the calling thread: (32, 1000) takes a few
// microseconds on one core, less than waking a second thread would cost (serial_scope.h).
constexpr int64_t kSerialElems = 1 << 16;

Kind KindOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("log_softmax") != std::string::npos) return Kind::kLogSoftmax;
  if (n.find("softmin") != std::string::npos) return Kind::kSoftmin;
  return Kind::kSoftmax;
}

double Temperature(const NodeAttrs& attrs, const SoftmaxParam& p) {
  double t = p.temperature.value_or(1.0);
  if (!(t != 0.0) || !std::isfinite(t)) nn::BadParam(attrs, "temperature", "a finite non-zero value", param_parse::Format(t));
  return t;
}

// Every row's valid length (n when there is no length input).
std::vector<int64_t> RowLengths(const NodeAttrs& attrs, const TBlob* len, int64_t rows, int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(rows), n);
  if (len == nullptr) return r;
  WEFT_TYPE_SWITCH(len->dtype, L, {
    const L* l = len->ptr<L>();
    for (int64_t i = 0; i < rows; ++i) {
      double v = static_cast<double>(l[i]);
      if (!(v >= 0))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': input 'length' must be >= 0, got ", v, " at ", i);
      r[static_cast<size_t>(i)] = std::min<int64_t>(n, static_cast<int64_t>(v));
    }
  });
  return r;
}

template <typename TI, typename TO>
void Forward(Kind kind, double temperature, const TBlob& xb, const TBlob& yb, OpReq req, const nn::AxisSplit& sp,
             const std::vector<int64_t>& lens) {
  using A = std::conditional_t<std::is_same_v<TI, double> || std::is_same_v<TO, double>, double, float>;
  const TI* x = xb.ptr<TI>();
  TO* y = yb.ptr<TO>();
  const int64_t n = sp.n, inner = sp.inner;
  const A inv_t = static_cast<A>(kind == Kind::kSoftmin ? -1.0 / temperature : 1.0 / temperature);
  const int64_t grain = std::max<int64_t>(1, kSerialElems / std::max<int64_t>(n, 1));
  ParallelFor(sp.outer * inner, grain, [&](int64_t rb, int64_t re) {
    std::vector<A> buf(static_cast<size_t>(n));
    for (int64_t r = rb; r < re; ++r) {
      const int64_t o = r / inner, i = r % inner, base = o * n * inner + i;
      const int64_t len = lens[static_cast<size_t>(r)];
      A mx = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < len; ++k) {
        A v = static_cast<A>(x[base + k * inner]) * inv_t;
        buf[static_cast<size_t>(k)] = v;
        mx = std::max(mx, v);
      }
      A sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(buf[static_cast<size_t>(k)] - mx);
      if (kind == Kind::kLogSoftmax) {
        A lse = mx + std::log(sum);
        for (int64_t k = 0; k < len; ++k) Put(y + base + k * inner, req, buf[static_cast<size_t>(k)] - lse);
      } else {
        A inv = A(1) / sum;
        for (int64_t k = 0; k < len; ++k)
          Put(y + base + k * inner, req, std::exp(buf[static_cast<size_t>(k)] - mx) * inv);
      }
      for (int64_t k = len; k < n; ++k) Put(y + base + k * inner, req, A(0));
    }
  });
}

// dx from out_grad g and the forward output y: softmax / softmin: y * (g - sum(g y)) * s;
// log_softmax: (g - exp(y) * sum(g)) * s, with s = 1/T (-1/T for softmin).
template <typename TO, typename TI>
void Backward(Kind kind, double temperature, const TBlob& gb, const TBlob& yb, const TBlob& db, OpReq req,
              const nn::AxisSplit& sp, const std::vector<int64_t>& lens) {
  using A = std::conditional_t<std::is_same_v<TI, double> || std::is_same_v<TO, double>, double, float>;
  const TO* g = gb.ptr<TO>();
  const TO* y = yb.ptr<TO>();
  TI* dx = db.ptr<TI>();
  const int64_t n = sp.n, inner = sp.inner;
  const A s = static_cast<A>(kind == Kind::kSoftmin ? -1.0 / temperature : 1.0 / temperature);
  const int64_t grain = std::max<int64_t>(1, kSerialElems / std::max<int64_t>(n, 1));
  ParallelFor(sp.outer * inner, grain, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const int64_t o = r / inner, i = r % inner, base = o * n * inner + i;
      const int64_t len = lens[static_cast<size_t>(r)];
      A dot = 0;
      if (kind == Kind::kLogSoftmax) {
        for (int64_t k = 0; k < len; ++k) dot += static_cast<A>(g[base + k * inner]);
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          Put(dx + j, req, (static_cast<A>(g[j]) - std::exp(static_cast<A>(y[j])) * dot) * s);
        }
      } else {
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          dot += static_cast<A>(g[j]) * static_cast<A>(y[j]);
        }
        for (int64_t k = 0; k < len; ++k) {
          const int64_t j = base + k * inner;
          Put(dx + j, req, static_cast<A>(y[j]) * (static_cast<A>(g[j]) - dot) * s);
        }
      }
      for (int64_t k = len; k < n; ++k) Put(dx + base + k * inner, req, A(0));
    }
  });
}

bool SoftmaxShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SoftmaxParam>();
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  int axis = CheckAxis(attrs, p.axis, d.ndim());
  Temperature(attrs, p);  // a bad value fails at the call, before anything runs
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  if (p.use_length) {
    std::vector<int64_t> ls;
    for (int k = 0; k < d.ndim(); ++k) if (k != axis) ls.push_back(d[k]);
    AssignShape(attrs, in, 1, Shape(ls), "input");
  }
  return true;
}

bool SoftmaxType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<SoftmaxParam>();
  DType d = (*in)[0];
  if (d == DType::kUnknown) return false;
  if (!IsFloatDType(d))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a floating-point input 'data', got ",
          DTypeName(d));
  DType o = p.dtype.value_or(d);
  if (!IsFloatDType(o)) nn::BadParam(attrs, "dtype", "float16, float32 or float64", DTypeName(o));
  AssignType(attrs, out, 0, o, "output");
  if (p.use_length && (*in)[1] == DType::kUnknown) (*in)[1] = DType::kInt32;
  return true;
}

#if defined(WEFT_USE_ONEDNN)
// float32 softmax without temperature or lengths, written (not added) to a float32 output,
// runs oneDNN's primitive on the data seen as (outer, n, inner), cached by shape.
// (oneDNN's logsoftmax loses relative precision on outputs near 0, so log_softmax keeps
// the loops below.)
dnnl::engine& SoftmaxEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

const dnnl::softmax_forward& GetSoftmaxPrimitive(const nn::AxisSplit& sp) {
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<dnnl::softmax_forward>> cache;
  Key key{sp.outer, sp.n, sp.inner};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  dnnl::memory::desc md({sp.outer, sp.n, sp.inner}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::abc);
  dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md, 1);
  auto prim = std::make_unique<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(d, SoftmaxEngine()));
  return *cache.emplace(key, std::move(prim)).first->second;
}

bool DnnlSoftmax(Kind kind, double t, const SoftmaxParam& p, const TBlob& x, const TBlob& y, OpReq req,
                 const nn::AxisSplit& sp) {
  if (kind != Kind::kSoftmax || t != 1.0 || p.use_length || req == OpReq::kAddTo || x.dtype != DType::kFloat32 ||
      y.dtype != DType::kFloat32 || x.Size() == 0)
    return false;
  static thread_local dnnl::stream strm(SoftmaxEngine());
  SerialScope serial(static_cast<int64_t>(x.Size()) < kSerialElems);
  dnnl::memory::desc md({sp.outer, sp.n, sp.inner}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::abc);
  GetSoftmaxPrimitive(sp).execute(strm, {{DNNL_ARG_SRC, dnnl::memory(md, SoftmaxEngine(), x.dptr)},
                      {DNNL_ARG_DST, dnnl::memory(md, SoftmaxEngine(), y.dptr)}});
  strm.wait();
  return true;
}
#endif

void SoftmaxCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SoftmaxParam>();
  double t = Temperature(attrs, p);
  int axis = p.axis < 0 ? p.axis + in[0].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[0].shape, axis);
#if defined(WEFT_USE_ONEDNN)
  if (DnnlSoftmax(KindOf(attrs), t, p, in[0], out[0], req[0], sp)) return;
#endif
  std::vector<int64_t> lens = RowLengths(attrs, p.use_length ? &in[1] : nullptr, sp.outer * sp.inner, sp.n);
  Kind kind = KindOf(attrs);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, TI, {
    WEFT_NN_FLOAT_SWITCH(attrs, out[0].dtype, TO, { Forward<TI, TO>(kind, t, in[0], out[0], req[0], sp, lens); });
  });
}

// Backward inputs: out_grad, output [, length] [, data (only with dtype)].
int BackwardNumInputs(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<SoftmaxParam>();
  return 2 + (p.use_length ? 1 : 0) + (p.dtype ? 1 : 0);
}

void SoftmaxBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SoftmaxParam>();
  double t = Temperature(attrs, p);
  int axis = p.axis < 0 ? p.axis + in[1].ndim() : p.axis;
  nn::AxisSplit sp = nn::SplitAt(in[1].shape, axis);
  std::vector<int64_t> lens = RowLengths(attrs, p.use_length ? &in[2] : nullptr, sp.outer * sp.inner, sp.n);
  Kind kind = KindOf(attrs);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, TO, {
    WEFT_NN_FLOAT_SWITCH(attrs, out[0].dtype, TI, {
      Backward<TO, TI>(kind, t, in[0], in[1], out[0], req[0], sp, lens);
    });
  });
}

bool SoftmaxBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SoftmaxParam>();
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  if (p.dtype) AssignShape(attrs, in, in->size() - 1, d, "input");
  if (p.use_length) {
    int axis = CheckAxis(attrs, p.axis, d.ndim());
    std::vector<int64_t> ls;
    for (int k = 0; k < d.ndim(); ++k) if (k != axis) ls.push_back(d[k]);
    AssignShape(attrs, in, 2, Shape(ls), "input");
    AssignShape(attrs, out, 1, Shape(ls), "output");
  }
  return true;
}

bool SoftmaxBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const auto& p = attrs.Params<SoftmaxParam>();
  DType o = (*in)[1];
  if (o == DType::kUnknown) return false;
  AssignType(attrs, in, 0, o, "input");
  DType d = p.dtype ? in->back() : o;
  if (d == DType::kUnknown) return false;
  AssignType(attrs, out, 0, d, "output");
  if (p.use_length) AssignType(attrs, out, 1, (*in)[2], "output");
  return true;
}

int BackwardNumOutputs(const NodeAttrs& attrs) { return attrs.Params<SoftmaxParam>().use_length ? 2 : 1; }

void SoftmaxBackwardWithLength(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SoftmaxBackwardCompute(attrs, ctx, in, req, out);
  // The lengths are integers in effect: their gradient is zero.
  if (out.size() > 1) nn::ZeroOut(out[1], req[1]);
}

FGradient SoftmaxGrad(const std::string& backward) {
  return [backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    const auto& p = attrs.Params<SoftmaxParam>();
    std::vector<GradValue> ins{a.out_grads[0], a.outputs[0]};
    if (p.use_length) ins.push_back(a.inputs[1]);
    if (p.dtype) ins.push_back(a.inputs[0]);
    std::vector<GradValue> g = b.Call(backward, ins, attrs.dict);
    if (p.use_length) return std::vector<GradValue>{g[0], GradValue()};
    return std::vector<GradValue>{g[0]};
  };
}

// ------------------------------------------------------------------ SoftmaxActivation
nn::AxisSplit ActivationSplit(const NodeAttrs& attrs, const Shape& s) {
  nn::AxisSplit sp;
  bool channel = attrs.Params<SoftmaxActivationParam>().mode == "channel";
  if (channel) {
    if (s.ndim() < 2)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': mode 'channel' needs data with at least 2 dimensions, got ",
            s.ToString());
    return nn::SplitAt(s, 1);
  }
  sp.outer = s.ndim() > 0 ? s[0] : 1;
  sp.n = s.ndim() > 0 ? s.Size() / std::max<int64_t>(sp.outer, 1) : 1;
  if (sp.outer == 0) sp.n = 0;
  return sp;
}

bool SoftmaxActivationShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  ActivationSplit(attrs, d);
  return SameShape(attrs, in, out);
}

void SoftmaxActivationCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = ActivationSplit(attrs, in[0].shape);
  std::vector<int64_t> lens(static_cast<size_t>(sp.outer * sp.inner), sp.n);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, { Forward<T, T>(Kind::kSoftmax, 1.0, in[0], out[0], req[0], sp, lens); });
}

void SoftmaxActivationBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = ActivationSplit(attrs, in[1].shape);
  std::vector<int64_t> lens(static_cast<size_t>(sp.outer * sp.inner), sp.n);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    Backward<T, T>(Kind::kSoftmax, 1.0, in[0], in[1], out[0], req[0], sp, lens);
  });
}

// A softmax passes over its rows three times (maximum, sum of exponentials, scaling) with
// an exponential per element: about four times an add's time per byte; its gradient about
// as much.
double SoftmaxNs(const NodeAttrs&, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  return StreamNs(in, out, 4.0);
}

}  // namespace

#define WEFT_SOFTMAX_OP(name, doc)                                                                    \
  WEFT_REGISTER_OP(name)                                                                              \
      .Describe(doc)                                                                                  \
      .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<SoftmaxParam>().use_length ? 2 : 1; }) \
      .AddArgument("data", "NDArray-or-Symbol", "The input array")                                    \
      .AddArgument("length", "NDArray-or-Symbol", "Row lengths (with use_length)")                    \
      .SetParams<SoftmaxParam>()                                                                      \
      .SetAttr<FInferShape>("FInferShape", SoftmaxShape)                                              \
      .SetAttr<FInferType>("FInferType", SoftmaxType)                                                 \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                          \
      .SetAttr<FCompute>("FCompute<cpu>", SoftmaxCompute)                                             \
      .SetAttr<FEstimateNs>("FEstimateNs", SoftmaxNs)                                                 \
      .SetAttr<FGradient>("FGradient", SoftmaxGrad("_backward_" #name));                              \
  WEFT_REGISTER_OP(_backward_##name)                                                                  \
      .Describe("Gradient of " #name ": (out_grad, output [, length] [, data]) -> d data [, d length].") \
      .SetNumInputs(BackwardNumInputs)                                                                \
      .SetNumOutputs(BackwardNumOutputs)                                                              \
      .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")                         \
      .AddArgument("output", "NDArray-or-Symbol", "The forward output")                               \
      .SetParams<SoftmaxParam>()                                                                      \
      .SetAttr<FInferShape>("FInferShape", SoftmaxBackwardShape)                                      \
      .SetAttr<FInferType>("FInferType", SoftmaxBackwardType)                                         \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                                          \
      .SetAttr<FCompute>("FCompute<cpu>", SoftmaxBackwardWithLength)                                  \
      .SetAttr<FEstimateNs>("FEstimateNs", SoftmaxNs)

WEFT_SOFTMAX_OP(softmax, "Softmax along `axis`: exp(x / T) / sum(exp(x / T)).");
WEFT_SOFTMAX_OP(log_softmax, "Log-softmax along `axis`: x / T - log(sum(exp(x / T))).");
WEFT_SOFTMAX_OP(softmin, "Softmin along `axis`: softmax of -x / T.");

#undef WEFT_SOFTMAX_OP

WEFT_REGISTER_OP(SoftmaxActivation)
    .Describe("Softmax over all axes but the first (mode instance) or over axis 1 (mode channel).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetParams<SoftmaxActivationParam>()
    .SetAttr<FInferShape>("FInferShape", SoftmaxActivationShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SoftmaxActivationCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", SoftmaxNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_SoftmaxActivation", {a.out_grads[0], a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_SoftmaxActivation)
    .Describe("Gradient of SoftmaxActivation: (out_grad, output) -> d data.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .SetParams<SoftmaxActivationParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SoftmaxActivationBackwardCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", SoftmaxNs);

}  // namespace op
}  // namespace weft

// Loss layers whose gradient ignores the incoming head gradient, as in MXNet 1.x:
// SoftmaxOutput, LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput and
// MakeLoss (alias make_loss); softmax_cross_entropy (a scalar loss, differentiated through
// its head gradient); _sparse_softmax_cross_entropy (the same per position, for Gluon's
// SoftmaxCrossEntropyLoss); BlockGrad (alias stop_gradient), the identity with zero
// gradient. Labels get no gradient.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/op/indexing/index_mode.h"
#include "core/op/nn/loss_output.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(SoftmaxOutputParam, s) {
  s.Field("grad_scale", &SoftmaxOutputParam::grad_scale).Default(1.0).Describe("Scales the gradient.");
  s.Field("ignore_label", &SoftmaxOutputParam::ignore_label)
      .Default(-1.0)
      .Describe("The label whose positions get no gradient (with use_ignore).");
  s.Field("multi_output", &SoftmaxOutputParam::multi_output)
      .Default(false)
      .Describe("Softmax over axis 1 of (N, C, ...) data, with labels (N, ...).");
  s.Field("use_ignore", &SoftmaxOutputParam::use_ignore).Default(false).Describe("Honour ignore_label.");
  s.Field("preserve_shape", &SoftmaxOutputParam::preserve_shape)
      .Default(false)
      .Describe("Softmax over the last axis, with labels of the data's shape without it.");
  s.Field("normalization", &SoftmaxOutputParam::normalization)
      .Default("null")
      .Choices({"null", "batch", "valid"})
      .Describe("Divide the gradient by nothing, the batch size, or the number of labels not ignored.");
  s.Field("out_grad", &SoftmaxOutputParam::out_grad).Default(false).Describe("Multiply by the head gradient.");
  s.Field("smooth_alpha", &SoftmaxOutputParam::smooth_alpha)
      .Default(0.0)
      .Range(0, 1)
      .Describe("Label smoothing: the target is 1 - alpha at the label and alpha / (C - 1) elsewhere.");
}

WEFT_PARAM_SCHEMA(SparseCEParam, s) {
  s.Field("axis", &SparseCEParam::axis).Default(-1).Describe("The class axis; negative counts from the end.");
}

WEFT_PARAM_SCHEMA(RegressionOutputParam, s) {
  s.Field("grad_scale", &RegressionOutputParam::grad_scale).Default(1.0).Describe("Scales the gradient.");
}

WEFT_PARAM_SCHEMA(MakeLossParam, s) {
  s.Field("grad_scale", &MakeLossParam::grad_scale).Default(1.0).Describe("The gradient of every element.");
  s.Field("valid_thresh", &MakeLossParam::valid_thresh)
      .Default(0.0)
      .Describe("With normalization 'valid', elements above it are counted.");
  s.Field("normalization", &MakeLossParam::normalization)
      .Default("null")
      .Choices({"null", "batch", "valid"})
      .Describe("Divide the gradient by nothing, the batch size, or the number of valid elements.");
}

namespace {

using nn::Acc;
using nn::Put;

// ------------------------------------------------------------------ SoftmaxOutput
// The data as rows x C x inner: the class axis and the positions that share a label.
nn::AxisSplit SoftmaxOutputSplit(const SoftmaxOutputParam& p, const Shape& d) {
  if (p.multi_output) return nn::SplitAt(d, 1);
  if (p.preserve_shape) return nn::SplitAt(d, d.ndim() - 1);
  nn::AxisSplit sp;
  sp.outer = d[0];
  sp.n = 1;
  for (int k = 1; k < d.ndim(); ++k) sp.n *= d[k];
  return sp;
}

Shape SoftmaxOutputLabelShape(const SoftmaxOutputParam& p, const Shape& d) {
  std::vector<int64_t> l;
  if (p.multi_output) {
    for (int k = 0; k < d.ndim(); ++k) if (k != 1) l.push_back(d[k]);
  } else if (p.preserve_shape) {
    for (int k = 0; k + 1 < d.ndim(); ++k) l.push_back(d[k]);
  } else {
    l.push_back(d[0]);
  }
  return Shape(l);
}

// Whether `label` is one of the other label shapes MXNet accepts for data `d`: the data's own
// shape (a probability per class, "soft labels") or, with multi_output, (N, prod(spatial))
// and (N, 1, spatial...), which hold the labels in the same order as (N, spatial...).
bool SoftmaxOutputOtherLabelShape(const SoftmaxOutputParam& p, const Shape& d, const Shape& label) {
  if (!label.is_known()) return false;
  if (label == d) return true;
  if (!p.multi_output || d.ndim() < 2) return false;
  int64_t spatial = 1;
  for (int k = 2; k < d.ndim(); ++k) spatial *= d[k];
  Shape ones = d;
  ones[1] = 1;
  return label == Shape{d[0], spatial} || label == ones;
}

bool SoftmaxOutputShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SoftmaxOutputParam>();
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, p.multi_output ? 2 : 1);
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  if (!SoftmaxOutputOtherLabelShape(p, d, (*in)[1]))
    AssignShape(attrs, in, 1, SoftmaxOutputLabelShape(p, d), "input");
  return true;
}

// The data's dtype for data and output; the label keeps its own (any numeric dtype).
bool DataTypeLabelAny(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType d = (*in)[0];
  if (d == DType::kUnknown) d = (*out)[0];
  if (d == DType::kUnknown) return false;
  if (!IsFloatDType(d))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a floating-point input 'data', got ",
          DTypeName(d));
  AssignType(attrs, in, 0, d, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, d, "output");
  if (in->size() > 1 && (*in)[1] == DType::kUnknown) (*in)[1] = d;
  return true;
}

// Softmax of every row (rows x C x inner, class stride `inner`).
template <typename T>
void RowSoftmax(const T* x, T* y, OpReq req, const nn::AxisSplit& sp) {
  using A = Acc<T>;
  const int64_t C = sp.n, inner = sp.inner;
  ParallelFor(sp.outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t rb, int64_t re) {
    std::vector<A> buf(static_cast<size_t>(C));
    for (int64_t r = rb; r < re; ++r) {
      const int64_t base = (r / inner) * C * inner + r % inner;
      A mx = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < C; ++k) mx = std::max(mx, static_cast<A>(x[base + k * inner]));
      A sum = 0;
      for (int64_t k = 0; k < C; ++k) {
        A e = std::exp(static_cast<A>(x[base + k * inner]) - mx);
        buf[static_cast<size_t>(k)] = e;
        sum += e;
      }
      for (int64_t k = 0; k < C; ++k) Put(y + base + k * inner, req, buf[static_cast<size_t>(k)] / sum);
    }
  });
}

// Labels as doubles, whatever their dtype. A bool label is read by its bytes: an array
// filled from raw host bytes may hold values other than 0 and 1, and reading those as bool
// is undefined.
std::vector<double> LabelValues(const TBlob& l) {
  std::vector<double> v(static_cast<size_t>(l.Size()));
  if (l.dtype == DType::kBool) {
    const uint8_t* p = static_cast<const uint8_t*>(l.dptr);
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i] != 0 ? 1.0 : 0.0;
    return v;
  }
  WEFT_TYPE_SWITCH(l.dtype, L, {
    const L* p = l.ptr<L>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  });
  return v;
}

void SoftmaxOutputCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = SoftmaxOutputSplit(attrs.Params<SoftmaxOutputParam>(), in[0].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, { RowSoftmax<T>(in[0].ptr<T>(), out[0].ptr<T>(), req[0], sp); });
}

// Inputs: out_grad, output, label. Output: d data.
void SoftmaxOutputBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SoftmaxOutputParam>();
  if (in[2].shape == in[1].shape) {
    // Probability labels: d data = (softmax - label) * grad_scale, never normalised (MXNet's rule).
    WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
      using A = Acc<T>;
      const T* g = in[0].ptr<T>();
      const T* y = in[1].ptr<T>();
      const std::vector<double> lab = LabelValues(in[2]);  // the label keeps its own dtype
      T* dx = out[0].ptr<T>();
      ParallelFor(in[1].Size(), kElemGrain, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) {
          A v = (static_cast<A>(y[j]) - static_cast<A>(lab[static_cast<size_t>(j)])) * static_cast<A>(p.grad_scale);
          if (p.out_grad) v *= static_cast<A>(g[j]);
          Put(dx + j, req[0], v);
        }
      });
    });
    return;
  }
  nn::AxisSplit sp = SoftmaxOutputSplit(p, in[1].shape);
  std::vector<double> label = LabelValues(in[2]);
  const int64_t C = sp.n, inner = sp.inner, rows = sp.outer * inner;
  // Saturating conversions: a label far out of range (a hand call's) is no undefined behaviour.
  auto ignored = [&](double l) {
    return p.use_ignore && ConvertValue<int64_t>(l) == ConvertValue<int64_t>(p.ignore_label);
  };
  double norm = 1;
  if (p.normalization == "batch") {
    norm = static_cast<double>(in[1].shape[0]);
  } else if (p.normalization == "valid") {
    int64_t valid = 0;
    for (double l : label) valid += ignored(l) ? 0 : 1;
    norm = static_cast<double>(std::max<int64_t>(valid, 1));
  }
  // With multi_output MXNet also averages over the positions that share a label, except
  // under 'valid', whose count already includes them.
  if (p.multi_output && p.normalization != "valid") norm *= static_cast<double>(inner);
  const double scale = p.grad_scale / std::max(norm, 1e-300);
  const double off = C > 1 ? p.smooth_alpha / static_cast<double>(C - 1) : 0.0;
  const double on = 1.0 - p.smooth_alpha;
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    using A = Acc<T>;
    const T* g = in[0].ptr<T>();
    const T* y = in[1].ptr<T>();
    T* dx = out[0].ptr<T>();
    ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const int64_t base = (r / inner) * C * inner + r % inner;
        const double l = label[static_cast<size_t>(r)];
        const bool skip = ignored(l);
        const int64_t li = ConvertValue<int64_t>(l);
        for (int64_t k = 0; k < C; ++k) {
          const int64_t j = base + k * inner;
          A v = 0;
          if (!skip) {
            double target = k == li ? on : off;
            v = static_cast<A>((static_cast<double>(y[j]) - target) * scale);
            if (p.out_grad) v *= static_cast<A>(g[j]);
          }
          Put(dx + j, req[0], v);
        }
      }
    });
  });
}

std::vector<GradValue> SoftmaxOutputGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  return {b.Op("_backward_SoftmaxOutput", {a.out_grads[0], a.outputs[0], a.inputs[1]}, attrs.dict), GradValue()};
}

bool SoftmaxOutputBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  const auto& p = attrs.Params<SoftmaxOutputParam>();
  if (!SoftmaxOutputOtherLabelShape(p, d, (*in)[2])) AssignShape(attrs, in, 2, SoftmaxOutputLabelShape(p, d), "input");
  return true;
}

bool BackwardTypeFromInput1(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType d = (*in)[1];
  if (d == DType::kUnknown) return false;
  AssignType(attrs, in, 0, d, "input");
  AssignType(attrs, out, 0, d, "output");
  return true;
}

// ------------------------------------------------------------------ regression outputs
enum class Reg { kLinear, kLogistic, kMAE };

Reg RegOf(const NodeAttrs& attrs) {
  const std::string& n = attrs.op->name;
  if (n.find("Logistic") != std::string::npos) return Reg::kLogistic;
  if (n.find("MAE") != std::string::npos) return Reg::kMAE;
  return Reg::kLinear;
}

// The label holds one value per data element: the data's shape, or (N,) for (N, 1) data.
bool RegressionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0];
  if (!d.known_ndim()) d = (*out)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, out, 0, d, "output");
  Shape& l = (*in)[1];
  if (!l.known_ndim()) {
    l = d;
  } else if (!(l.is_known() && l.Size() == d.Size() && l.ndim() >= 1 && l[0] == d[0])) {
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'label' must have one value per data element ",
          "(shape ", d.ToString(), "), got shape ", l.ToString());
  }
  return true;
}

void RegressionCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  Reg k = RegOf(attrs);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(in[0].Size(), kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        A v = static_cast<A>(x[i]);
        Put(y + i, req[0], k == Reg::kLogistic ? A(1) / (A(1) + std::exp(-v)) : v);
      }
    });
  });
}

// Inputs: output, label. d data = grad_scale / (label size / batch) * (out - label), or its
// sign for MAE. Outputs, as MXNet's: d data and d label; the label is a constant of the
// loss, so d label is zero (and FGradient gives the label no gradient).
void RegressionBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  // An empty label has no memory (a null pointer memset may not be given).
  if ((req[1] == OpReq::kWriteTo || req[1] == OpReq::kWriteInplace) && out[1].Bytes() != 0)
    std::memset(out[1].dptr, 0, out[1].Bytes());
  if (req[0] == OpReq::kNullOp) return;
  Reg k = RegOf(attrs);
  std::vector<double> label = LabelValues(in[1]);
  const int64_t n = in[0].Size();
  const int64_t batch = in[1].ndim() > 0 ? in[1].shape[0] : 1;
  const double per_sample = batch > 0 ? static_cast<double>(in[1].Size()) / static_cast<double>(batch) : 1.0;
  const double scale = attrs.Params<RegressionOutputParam>().grad_scale / std::max(per_sample, 1.0);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* y = in[0].ptr<T>();
    T* dx = out[0].ptr<T>();
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double d = static_cast<double>(y[i]) - label[static_cast<size_t>(i)];
        if (k == Reg::kMAE) d = d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
        Put(dx + i, req[0], static_cast<A>(d * scale));
      }
    });
  });
}

std::vector<GradValue> RegressionGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  return {b.Op("_backward_" + attrs.op->name, {a.outputs[0], a.inputs[1]}, attrs.dict), GradValue()};
}

bool RegressionBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> data_out{(*out)[0]};
  if (!RegressionShape(attrs, in, &data_out)) return false;
  (*out)[0] = data_out[0];
  AssignShape(attrs, out, 1, (*in)[1], "output");
  return true;
}

bool RegressionBackwardType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  if ((*in)[0] == DType::kUnknown || (*in)[1] == DType::kUnknown) return false;
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, out, 1, (*in)[1], "output");
  return true;
}

// ------------------------------------------------------------------ softmax_cross_entropy
bool CrossEntropyShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.is_known()) return false;
  if (d.ndim() != 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' must be 2-D (batch, classes), got shape ",
          d.ToString());
  AssignShape(attrs, in, 1, Shape{d[0]}, "input");
  AssignShape(attrs, out, 0, Shape{1}, "output");
  return true;
}

template <typename T>
void CrossEntropyRows(const TBlob& data, const std::vector<double>& label, std::vector<double>* loss,
                      T* grad, double gscale, OpReq req) {
  using A = Acc<T>;
  const int64_t N = data.shape[0], C = data.shape[1];
  const T* x = data.ptr<T>();
  ParallelFor(N, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* xr = x + r * C;
      A mx = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < C; ++k) mx = std::max(mx, static_cast<A>(xr[k]));
      A sum = 0;
      for (int64_t k = 0; k < C; ++k) sum += std::exp(static_cast<A>(xr[k]) - mx);
      const A lse = mx + std::log(sum);
      const int64_t li = ConvertValue<int64_t>(label[static_cast<size_t>(r)]);
      if (loss) (*loss)[static_cast<size_t>(r)] = li >= 0 && li < C ? static_cast<double>(lse - static_cast<A>(xr[li])) : 0.0;
      if (grad) {
        for (int64_t k = 0; k < C; ++k) {
          double p = std::exp(static_cast<double>(static_cast<A>(xr[k]) - lse));
          Put(grad + r * C + k, req, static_cast<A>((p - (k == li ? 1.0 : 0.0)) * gscale));
        }
      }
    }
  });
}

void CrossEntropyCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<double> label = LabelValues(in[1]);
  const int64_t C = in[0].shape[1];
  for (size_t i = 0; i < label.size(); ++i)
    if (!(label[i] >= 0 && label[i] < static_cast<double>(C)))
      Throw(ErrorKind::kValue, "Operator 'softmax_cross_entropy': label ", label[i], " at ", i,
            " is outside [0, ", C, ")");
  std::vector<double> loss(label.size(), 0.0);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    CrossEntropyRows<T>(in[0], label, &loss, nullptr, 0.0, OpReq::kWriteTo);
    double total = 0;
    for (double v : loss) total += v;
    Put(out[0].ptr<T>(), req[0], static_cast<Acc<T>>(total));
  });
}

// Inputs: out_grad (1,), data, label. d data = (softmax(data) - one_hot(label)) * out_grad.
void CrossEntropyBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<double> label = LabelValues(in[2]);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    double g = static_cast<double>(in[0].ptr<T>()[0]);
    CrossEntropyRows<T>(in[1], label, nullptr, out[0].ptr<T>(), g, req[0]);
  });
}

bool CrossEntropyBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  // The forward's loss is one value, and so is its gradient, which the kernel reads.
  AssignShape(attrs, in, 0, Shape({1}), "out_grad");
  // data and label as the forward takes them: the kernel reads one label per row.
  std::vector<Shape> forward_in = {(*in)[1], (*in)[2]}, forward_out(1);
  if (!CrossEntropyShape(attrs, &forward_in, &forward_out)) return false;
  (*in)[2] = forward_in[1];
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

// ------------------------------------------------------------------ _sparse_softmax_cross_entropy
// -log(softmax(data, axis))[label] at every position of the other axes, the value of
// -pick(log_softmax(data, axis), label, axis, keepdims=True) (labels clipped into range as
// pick's default mode does) in one pass instead of three operators and their gradients.
nn::AxisSplit SparseCESplit(const NodeAttrs& attrs, const Shape& data) {
  return nn::SplitAt(data, CheckAxis(attrs, attrs.Params<SparseCEParam>().axis, data.ndim()));
}

bool SparseCEShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.is_known()) return false;
  nn::CheckMinNdim(attrs, d, 1);
  int axis = CheckAxis(attrs, attrs.Params<SparseCEParam>().axis, d.ndim());
  Shape o = d;
  o[axis] = 1;
  // A label clipped into an empty class axis would be -1.
  if (d[axis] == 0 && o.Size() > 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' of shape ", d.ToString(),
          " has no classes along axis ", axis);
  const Shape& label = (*in)[1];
  // Labels come shaped like the loss or with the class axis left out: only the count matters.
  if (label.is_known() && label.Size() != o.Size())
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'label' has shape ", label.ToString(), " (",
          label.Size(), " labels) but data of shape ", d.ToString(), " needs one label per position, ", o.Size(),
          " in all");
  if (!label.is_known()) {
    std::vector<int64_t> dims;
    for (int k = 0; k < d.ndim(); ++k)
      if (k != axis) dims.push_back(d[k]);
    if (dims.empty()) dims.push_back(1);
    AssignShape(attrs, in, 1, Shape(dims), "input");
  }
  AssignShape(attrs, out, 0, o, "output");
  return true;
}

// Inputs: out_grad (the loss's shape), data, label.
bool SparseCEBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> forward_in = {(*in)[1], (*in)[2]}, forward_out(1);
  if (!SparseCEShape(attrs, &forward_in, &forward_out)) return false;
  // The kernel reads one gradient per loss value: out_grad must be shaped like the loss.
  AssignShape(attrs, in, 0, forward_out[0], "out_grad");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

// Per position: the log-sum-exp along the axis; `grad`, when given, receives
// (softmax - one_hot(label)) * ograd[position] under `req`.
template <typename T>
void SparseCERows(const TBlob& data, const std::vector<int64_t>& label, const nn::AxisSplit& sp, T* loss, T* grad,
                  const T* ograd, OpReq req) {
  using A = Acc<T>;
  const T* x = data.ptr<T>();
  const int64_t n = sp.n, inner = sp.inner;
  ParallelFor(sp.outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t pos = b; pos < e; ++pos) {
      const int64_t o = pos / inner, i = pos % inner;
      const T* xr = x + o * n * inner + i;
      A mx = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, static_cast<A>(xr[k * inner]));
      A sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<A>(xr[k * inner]) - mx);
      const A lse = mx + std::log(sum);
      const int64_t li = label[static_cast<size_t>(pos)];
      if (loss) loss[pos] = static_cast<T>(lse - static_cast<A>(xr[li * inner]));
      if (grad) {
        const A g = static_cast<A>(ograd[pos]);
        T* gr = grad + o * n * inner + i;
        for (int64_t k = 0; k < n; ++k) {
          A p = std::exp(static_cast<A>(xr[k * inner]) - lse);
          Put(gr + k * inner, req, (p - (k == li ? A(1) : A(0))) * g);
        }
      }
    }
  });
}

void SparseCECompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  WEFT_CHECK(req[0] == OpReq::kWriteTo || req[0] == OpReq::kWriteInplace, kValue, "Operator '", attrs.op->name,
             "': the loss output only supports write requests");
  nn::AxisSplit sp = SparseCESplit(attrs, in[0].shape);
  std::vector<int64_t> label = ResolveIndices(in[1], sp.n, IndexMode::kClip, attrs, 0);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    SparseCERows<T>(in[0], label, sp, out[0].ptr<T>(), nullptr, nullptr, OpReq::kWriteTo);
  });
}

// Inputs: out_grad (the loss's shape), data, label.
void SparseCEBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  nn::AxisSplit sp = SparseCESplit(attrs, in[1].shape);
  std::vector<int64_t> label = ResolveIndices(in[2], sp.n, IndexMode::kClip, attrs, 0);
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    SparseCERows<T>(in[1], label, sp, nullptr, out[0].ptr<T>(), in[0].ptr<T>(), req[0]);
  });
}

// ------------------------------------------------------------------ MakeLoss, BlockGrad
void MakeLossBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<MakeLossParam>();
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = Acc<T>;
    const T* y = in[0].ptr<T>();
    const int64_t n = in[0].Size();
    double norm = 1;
    if (p.normalization == "batch") {
      norm = in[0].ndim() > 0 ? static_cast<double>(in[0].shape[0]) : 1.0;
    } else if (p.normalization == "valid") {
      int64_t valid = 0;
      for (int64_t i = 0; i < n; ++i) valid += static_cast<double>(y[i]) > p.valid_thresh ? 1 : 0;
      norm = static_cast<double>(valid);
    }
    const A v = static_cast<A>(p.grad_scale / std::max(norm, 1.0));
    T* dx = out[0].ptr<T>();
    ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Put(dx + i, req[0], v);
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(SoftmaxOutput)
    .Describe("Softmax with a cross-entropy gradient: d data = (softmax - one_hot(label)) * grad_scale / norm; "
              "the head gradient is ignored unless out_grad.")
    .AddAlias("Softmax")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input scores")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels")
    .SetParams<SoftmaxOutputParam>()
    .SetAttr<FInferShape>("FInferShape", SoftmaxOutputShape)
    .SetAttr<FInferType>("FInferType", DataTypeLabelAny)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SoftmaxOutputCompute)
    .SetAttr<FGradient>("FGradient", SoftmaxOutputGrad);

WEFT_REGISTER_OP(_backward_SoftmaxOutput)
    .Describe("Gradient of SoftmaxOutput: (out_grad, output, label) -> d data.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output (used with out_grad only)")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels")
    .SetParams<SoftmaxOutputParam>()
    .SetAttr<FInferShape>("FInferShape", SoftmaxOutputBackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardTypeFromInput1)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    // The GPU kernel counts the labels not ignored (normalization='valid') in temporary space.
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<FCompute>("FCompute<cpu>", SoftmaxOutputBackwardCompute);

#define WEFT_REGRESSION_OUTPUT(name, doc)                                            \
  WEFT_REGISTER_OP(name)                                                             \
      .Describe(doc)                                                                 \
      .SetNumInputs(2)                                                               \
      .AddArgument("data", "NDArray-or-Symbol", "Input data")                        \
      .AddArgument("label", "NDArray-or-Symbol", "Targets, one per data element")    \
      .SetParams<RegressionOutputParam>()                                            \
      .SetAttr<FInferShape>("FInferShape", RegressionShape)                          \
      .SetAttr<FInferType>("FInferType", DataTypeLabelAny)                           \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                         \
      .SetAttr<FCompute>("FCompute<cpu>", RegressionCompute)                         \
      .SetAttr<FGradient>("FGradient", RegressionGrad);                              \
  WEFT_REGISTER_OP(_backward_##name)                                                 \
      .Describe("Gradient of " #name ": (output, label) -> (d data, d label = 0).")  \
      .SetNumInputs(2)                                                               \
      .SetNumOutputs(2)                                                              \
      .AddArgument("output", "NDArray-or-Symbol", "The forward output")              \
      .AddArgument("label", "NDArray-or-Symbol", "Targets")                          \
      .SetParams<RegressionOutputParam>()                                            \
      .SetAttr<FInferShape>("FInferShape", RegressionBackwardShape)                  \
      .SetAttr<FInferType>("FInferType", RegressionBackwardType)                     \
      .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)                         \
      .SetAttr<FCompute>("FCompute<cpu>", RegressionBackwardCompute)

WEFT_REGRESSION_OUTPUT(LinearRegressionOutput,
                       "Identity; gradient (out - label) * grad_scale / (label elements per sample).");
WEFT_REGRESSION_OUTPUT(LogisticRegressionOutput,
                       "Sigmoid; gradient (out - label) * grad_scale / (label elements per sample).");
WEFT_REGRESSION_OUTPUT(MAERegressionOutput,
                       "Identity; gradient sign(out - label) * grad_scale / (label elements per sample).");

#undef WEFT_REGRESSION_OUTPUT

WEFT_REGISTER_OP(softmax_cross_entropy)
    .Describe("Sum over the batch of -log(softmax(data)[label]); data (batch, classes), label (batch,).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input scores (batch, classes)")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels (batch,)")
    .SetAttr<FInferShape>("FInferShape", CrossEntropyShape)
    .SetAttr<FInferType>("FInferType", DataTypeLabelAny)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CrossEntropyCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_softmax_cross_entropy", {a.out_grads[0], a.inputs[0], a.inputs[1]}), GradValue()};
    });

WEFT_REGISTER_OP(_backward_softmax_cross_entropy)
    .Describe("Gradient of softmax_cross_entropy: (out_grad, data, label) -> d data.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the loss, shape (1,)")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("label", "NDArray-or-Symbol", "Class labels")
    .SetAttr<FInferShape>("FInferShape", CrossEntropyBackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardTypeFromInput1)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CrossEntropyBackwardCompute);

WEFT_REGISTER_OP(_sparse_softmax_cross_entropy)
    .Describe("-log(softmax(data, axis))[label] at every other position, shaped like data with the axis kept as 1; "
              "labels are clipped into [0, classes).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Input scores")
    .AddArgument("label", "NDArray-or-Symbol", "Class indices, one per position (any dtype; fractions truncate)")
    .SetParams<SparseCEParam>()
    .SetAttr<FInferShape>("FInferShape", SparseCEShape)
    .SetAttr<FInferType>("FInferType", DataTypeLabelAny)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SparseCECompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_sparse_softmax_cross_entropy", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict),
          GradValue()};
    });

WEFT_REGISTER_OP(_backward_sparse_softmax_cross_entropy)
    .Describe("Gradient of _sparse_softmax_cross_entropy: (out_grad, data, label) -> (softmax - one_hot) * out_grad.")
    .SetNumInputs(3)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the loss")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("label", "NDArray-or-Symbol", "Class indices")
    .SetParams<SparseCEParam>()
    .SetAttr<FInferShape>("FInferShape", SparseCEBackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardTypeFromInput1)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SparseCEBackwardCompute);

WEFT_REGISTER_OP(MakeLoss)
    .AddAlias("make_loss")
    .Describe("Identity whose gradient is grad_scale / norm everywhere, ignoring the head gradient.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The loss")
    .SetParams<MakeLossParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_MakeLoss", {a.outputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_MakeLoss)
    .Describe("Gradient of MakeLoss: (output) -> grad_scale / norm everywhere.")
    .SetNumInputs(1)
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .SetParams<MakeLossParam>()
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    // The GPU kernel counts the valid elements (normalization='valid') in temporary space.
    .SetAttr<FResourceRequest>("FResourceRequest",
                               [](const NodeAttrs&) { return std::vector<ResourceRequest>{{ResourceType::kTempSpace}}; })
    .SetAttr<FCompute>("FCompute<cpu>", MakeLossBackwardCompute);

WEFT_REGISTER_OP(BlockGrad)
    .AddAlias("stop_gradient")
    .Describe("Identity that stops the gradient: its input gets zero gradient.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input array")
    .SetAttr<FInferShape>("FInferShape", SameShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kElemwise)
    .SetAttr<FCompute>("FCompute<cpu>", IdentityCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs&, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("zeros_like", {a.inputs[0]})};
    });

}  // namespace op
}  // namespace weft

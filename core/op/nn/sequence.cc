// Sequence operators on padded batches, MXNet's SequenceMask, SequenceLast and
// SequenceReverse. The data is (T, B, ...) with axis=0 or (B, T, ...) with axis=1
// (SequenceReverse: axis 0 only, as in MXNet); the optional second input, used when
// use_sequence_length=True, holds the B valid lengths in any dtype (truncated to
// integers). Lengths outside the valid range are clipped rather than read past the data:
// to [0, T] for SequenceMask and SequenceReverse (a length above T means the whole
// sequence) and to [1, T] for SequenceLast (which always picks an existing step).
// The lengths get no gradient.
#include <cmath>
#include <type_traits>

#include "core/op/op_util.h"
#include "core/op/nn/sequence.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(SequenceMaskParam, s) {
  s.Field("use_sequence_length", &SequenceMaskParam::use_sequence_length)
      .Default(false)
      .Describe("Whether the second input gives the lengths; otherwise every sequence is full.");
  s.Field("value", &SequenceMaskParam::value).Default(0.0).Describe("The value written past each length.");
  s.Field("axis", &SequenceMaskParam::axis).Default(0).Range(0, 1).Describe("The time axis: 0 or 1.");
}

WEFT_PARAM_SCHEMA(SequenceLastParam, s) {
  s.Field("use_sequence_length", &SequenceLastParam::use_sequence_length)
      .Default(false)
      .Describe("Whether the second input gives the lengths; otherwise every sequence is full.");
  s.Field("axis", &SequenceLastParam::axis).Default(0).Range(0, 1).Describe("The time axis: 0 or 1.");
}

WEFT_PARAM_SCHEMA(SequenceReverseParam, s) {
  s.Field("use_sequence_length", &SequenceReverseParam::use_sequence_length)
      .Default(false)
      .Describe("Whether the second input gives the lengths; otherwise every sequence is full.");
  s.Field("axis", &SequenceReverseParam::axis).Default(0).Range(0, 0).Describe("The time axis: only 0.");
}

namespace {

// The data as (T, B, R) with the time axis where `axis` says.
struct SeqView {
  int64_t T = 0, B = 0, R = 0;
  int axis = 0;
  // Flat offset of the start of row (t, b).
  int64_t Offset(int64_t t, int64_t b) const { return (axis == 0 ? t * B + b : b * T + t) * R; }
};

SeqView View(const Shape& s, int axis) {
  SeqView v;
  v.axis = axis;
  v.T = s[axis];
  v.B = s[1 - axis];
  v.R = s.ProdRange(2, s.ndim());
  return v;
}

template <typename P>
bool UsesLength(const NodeAttrs& attrs) { return attrs.Params<P>().use_sequence_length; }

template <typename P>
int NumSeqInputs(const NodeAttrs& attrs) { return UsesLength<P>(attrs) ? 2 : 1; }

// Checks the data's rank and the lengths' shape (B,).
void CheckSeqShapes(const NodeAttrs& attrs, std::vector<Shape>* in, int axis, bool use_len, size_t data_i,
                    size_t len_i) {
  const Shape& d = (*in)[data_i];
  if (d.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data with at least 2 dimensions (",
          axis == 0 ? "time, batch" : "batch, time", ", ...), got shape ", d.ToString());
  if (use_len) {
    const Shape& l = (*in)[len_i];
    if (l.known_ndim() && (l.ndim() != 1 || (l[0] >= 0 && l[0] != d[1 - axis])))
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'sequence_length' has shape ", l.ToString(),
            " but data of shape ", d.ToString(), " (axis=", axis, ") needs (", d[1 - axis], ",)");
    AssignShape(attrs, in, len_i, Shape{d[1 - axis]}, "input");
  }
}

// The B lengths, clipped to [lo, T]; all T without a lengths input.
std::vector<int64_t> Lengths(const TBlob* len, const SeqView& v, int64_t lo) {
  std::vector<int64_t> out(static_cast<size_t>(v.B), v.T);
  if (len == nullptr) return out;
  WEFT_TYPE_SWITCH(len->dtype, L, {
    const L* p = len->ptr<L>();
    for (int64_t b = 0; b < v.B; ++b) {
      double d = static_cast<double>(p[b]);
      int64_t n = !(d > static_cast<double>(lo)) ? lo : (d >= static_cast<double>(v.T) ? v.T : static_cast<int64_t>(d));
      out[static_cast<size_t>(b)] = std::max(lo, n);
    }
  });
  return out;
}

// Output dtype = data dtype; the lengths keep theirs.
bool SeqType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, out, 0, (*in)[0], "output");
  AssignType(attrs, in, 0, (*out)[0], "input");
  for (DType t : *in)
    if (t == DType::kUnknown) return false;
  return (*out)[0] != DType::kUnknown;
}

// dst[0, n) (op)= src[0, n), as the request says.
template <typename T>
inline void CopyRow(T* dst, const T* src, int64_t n, OpReq req) {
  if (req == OpReq::kAddTo) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
  } else {
    std::copy(src, src + n, dst);
  }
}

// dst[0, n) (op)= v.
template <typename T>
inline void FillRow(T* dst, T v, int64_t n, OpReq req) {
  if (req == OpReq::kAddTo) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(dst[i] + v);
  } else {
    std::fill(dst, dst + n, v);
  }
}

// ---------------------------------------------------------------- SequenceMask
bool SequenceMaskShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SequenceMaskParam>();
  if (!(*in)[0].is_known()) return false;
  CheckSeqShapes(attrs, in, p.axis, p.use_sequence_length, 0, 1);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return true;
}

// Rows (t, b) with t < len[b] take src; the others take `fill`.
template <typename T>
void MaskRows(const SeqView& v, const std::vector<int64_t>& len, const T* src, T* dst, T fill, OpReq req) {
  ParallelFor(v.T * v.B, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.R, 1)), [&](int64_t b0, int64_t e0) {
    for (int64_t r = b0; r < e0; ++r) {
      int64_t t = v.axis == 0 ? r / v.B : r % v.T;
      int64_t b = v.axis == 0 ? r % v.B : r / v.T;
      int64_t off = v.Offset(t, b);
      if (t < len[static_cast<size_t>(b)]) CopyRow(dst + off, src + off, v.R, req);
      else FillRow(dst + off, fill, v.R, req);
    }
  });
}

void SequenceMaskCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceMaskParam>();
  SeqView v = View(in[0].shape, p.axis);
  std::vector<int64_t> len = Lengths(p.use_sequence_length ? &in[1] : nullptr, v, 0);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    MaskRows(v, len, in[0].ptr<T>(), out[0].ptr<T>(), ConvertValue<T>(p.value), req[0]);
  });
}

// Inputs: ograd[, sequence_length]. The gradient passes where the data was kept.
void SequenceMaskBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceMaskParam>();
  SeqView v = View(in[0].shape, p.axis);
  std::vector<int64_t> len = Lengths(p.use_sequence_length ? &in[1] : nullptr, v, 0);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    MaskRows(v, len, in[0].ptr<T>(), out[0].ptr<T>(), static_cast<T>(0), req[0]);
  });
}

// ---------------------------------------------------------------- SequenceLast
Shape DropAxis(const Shape& s, int axis) {
  std::vector<int64_t> d = s.ToVector();
  d.erase(d.begin() + axis);
  return Shape(d);
}

// SequenceLast picks an existing step: data needs one along the time axis.
void CheckHasStep(const NodeAttrs& attrs, const Shape& data, int axis) {
  if (data[axis] < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected at least one time step along axis ", axis,
          ", got data of shape ", data.ToString());
}

bool SequenceLastShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SequenceLastParam>();
  if (!(*in)[0].is_known()) return false;
  CheckSeqShapes(attrs, in, p.axis, p.use_sequence_length, 0, 1);
  CheckHasStep(attrs, (*in)[0], p.axis);
  AssignShape(attrs, out, 0, DropAxis((*in)[0], p.axis), "output");
  return true;
}

void SequenceLastCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceLastParam>();
  SeqView v = View(in[0].shape, p.axis);
  std::vector<int64_t> len = Lengths(p.use_sequence_length ? &in[1] : nullptr, v, 1);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(v.B, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.R, 1)), [&](int64_t b0, int64_t e0) {
      for (int64_t b = b0; b < e0; ++b) CopyRow(y + b * v.R, x + v.Offset(len[b] - 1, b), v.R, req[0]);
    });
  });
}

// Inputs: ograd, data (for its shape)[, sequence_length]. The gradient goes to the picked
// step of each sequence; every other step gets zero.
void SequenceLastBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceLastParam>();
  SeqView v = View(in[1].shape, p.axis);
  std::vector<int64_t> len = Lengths(p.use_sequence_length ? &in[2] : nullptr, v, 1);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    T* dx = out[0].ptr<T>();
    ParallelFor(v.T * v.B, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.R, 1)), [&](int64_t b0, int64_t e0) {
      for (int64_t r = b0; r < e0; ++r) {
        int64_t t = v.axis == 0 ? r / v.B : r % v.T;
        int64_t b = v.axis == 0 ? r % v.B : r / v.T;
        T* dst = dx + v.Offset(t, b);
        if (t == len[static_cast<size_t>(b)] - 1) CopyRow(dst, g + b * v.R, v.R, req[0]);
        else if (req[0] != OpReq::kAddTo) std::fill(dst, dst + v.R, static_cast<T>(0));
      }
    });
  });
}

bool SequenceLastBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SequenceLastParam>();
  if (!(*in)[1].is_known()) return false;
  CheckSeqShapes(attrs, in, p.axis, p.use_sequence_length, 1, 2);
  CheckHasStep(attrs, (*in)[1], p.axis);
  AssignShape(attrs, in, 0, DropAxis((*in)[1], p.axis), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

// ---------------------------------------------------------------- SequenceReverse
bool SequenceReverseShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<SequenceReverseParam>();
  if (!(*in)[0].is_known()) return false;
  CheckSeqShapes(attrs, in, p.axis, p.use_sequence_length, 0, 1);
  AssignShape(attrs, out, 0, (*in)[0], "output");
  return true;
}

// Step t of sequence b comes from step len[b]-1-t when t < len[b] and stays otherwise.
// The map is its own inverse, so the gradient is the same operator on the output gradient.
void SequenceReverseCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<SequenceReverseParam>();
  SeqView v = View(in[0].shape, p.axis);
  std::vector<int64_t> len = Lengths(p.use_sequence_length ? &in[1] : nullptr, v, 0);
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(v.T * v.B, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(v.R, 1)), [&](int64_t b0, int64_t e0) {
      for (int64_t r = b0; r < e0; ++r) {
        int64_t t = r / v.B, b = r % v.B;
        int64_t n = len[static_cast<size_t>(b)];
        int64_t src = t < n ? n - 1 - t : t;
        CopyRow(y + v.Offset(t, b), x + v.Offset(src, b), v.R, req[0]);
      }
    });
  });
}

// The gradient of a sequence operator: `backward_op` on the output gradient (and the data,
// when `with_data`), plus the lengths when they are used; the lengths get no gradient.
template <typename P>
FGradient SequenceGrad(const char* backward_op, bool with_data) {
  return [backward_op, with_data](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    std::vector<GradValue> ins = {a.out_grads[0]};
    if (with_data) ins.push_back(a.inputs[0]);
    if (UsesLength<P>(attrs)) ins.push_back(a.inputs[1]);
    std::vector<GradValue> r = {b.Op(backward_op, ins, attrs.dict)};
    if (UsesLength<P>(attrs)) r.push_back(GradValue{});
    return r;
  };
}

}  // namespace

WEFT_REGISTER_OP(SequenceMask)
    .Describe(
        "Sets the steps of each sequence past its length to `value`: data is (T, B, ...) with axis=0 or (B, T, ...) "
        "with axis=1, sequence_length (B,) when use_sequence_length=True (otherwise the data is returned).")
    .SetNumInputs(NumSeqInputs<SequenceMaskParam>)
    .AddArgument("data", "NDArray-or-Symbol", "The padded sequences")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "The length of each sequence (B,)")
    .SetParams<SequenceMaskParam>()
    .SetAttr<FInferShape>("FInferShape", SequenceMaskShape)
    .SetAttr<FInferType>("FInferType", SeqType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SequenceMaskCompute)
    .SetAttr<FGradient>("FGradient", SequenceGrad<SequenceMaskParam>("_backward_SequenceMask", false));

WEFT_REGISTER_OP(_backward_SequenceMask)
    .Describe("Gradient of SequenceMask: the output gradient, zero past each length.")
    .SetNumInputs(NumSeqInputs<SequenceMaskParam>)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "The length of each sequence (B,)")
    .SetParams<SequenceMaskParam>()
    .SetAttr<FInferShape>("FInferShape", SequenceMaskShape)
    .SetAttr<FInferType>("FInferType", SeqType)
    .SetAttr<FCompute>("FCompute<cpu>", SequenceMaskBackward);

WEFT_REGISTER_OP(SequenceLast)
    .Describe(
        "Takes the last valid step of each sequence: data (T, B, ...) with axis=0 or (B, T, ...) with axis=1 gives "
        "(B, ...); without use_sequence_length the last step T-1.")
    .SetNumInputs(NumSeqInputs<SequenceLastParam>)
    .AddArgument("data", "NDArray-or-Symbol", "The padded sequences")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "The length of each sequence (B,)")
    .SetParams<SequenceLastParam>()
    .SetAttr<FInferShape>("FInferShape", SequenceLastShape)
    .SetAttr<FInferType>("FInferType", SeqType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SequenceLastCompute)
    .SetAttr<FGradient>("FGradient", SequenceGrad<SequenceLastParam>("_backward_SequenceLast", true));

WEFT_REGISTER_OP(_backward_SequenceLast)
    .Describe("Gradient of SequenceLast: the output gradient placed at each sequence's last valid step.")
    .SetNumInputs([](const NodeAttrs& attrs) { return NumSeqInputs<SequenceLastParam>(attrs) + 1; })
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "The length of each sequence (B,)")
    .SetParams<SequenceLastParam>()
    .SetAttr<FInferShape>("FInferShape", SequenceLastBackwardShape)
    .SetAttr<FInferType>("FInferType", SeqType)
    .SetAttr<FCompute>("FCompute<cpu>", SequenceLastBackward);

WEFT_REGISTER_OP(SequenceReverse)
    .Describe(
        "Reverses the first sequence_length[b] steps of each sequence b of data (T, B, ...), leaving the padding in "
        "place; without use_sequence_length the whole time axis is reversed.")
    .SetNumInputs(NumSeqInputs<SequenceReverseParam>)
    .AddArgument("data", "NDArray-or-Symbol", "The padded sequences (T, B, ...)")
    .AddArgument("sequence_length", "NDArray-or-Symbol", "The length of each sequence (B,)")
    .SetParams<SequenceReverseParam>()
    .SetAttr<FInferShape>("FInferShape", SequenceReverseShape)
    .SetAttr<FInferType>("FInferType", SeqType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SequenceReverseCompute)
    .SetAttr<FGradient>("FGradient", SequenceGrad<SequenceReverseParam>("SequenceReverse", false));

}  // namespace op
}  // namespace weft

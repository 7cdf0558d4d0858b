// Pad, as MXNet has it: 4-D or 5-D data padded on its spatial axes (the last 2 or 3) with
// pad_width = (before, after) per axis for every axis, zeros for the batch and channel
// axes. Modes: 'constant' (constant_value), 'edge' (the border element repeated) and
// 'reflect' (mirrored without repeating the border, so each pad must be smaller than its
// axis). Each output element either reads one input element or is the constant, so the
// forward is a gather and the backward the matching scatter-add.
#include <string>

#include "core/op/op_util.h"
#include "core/op/nn/pad.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(PadParam, s) {
  s.Field("mode", &PadParam::mode)
      .Default("constant")
      .Choices({"constant", "edge", "reflect"})
      .Describe("'constant': pad with constant_value; 'edge': repeat the border; 'reflect': mirror the data.");
  s.Field("pad_width", &PadParam::pad_width)
      .Describe("(before, after) pairs for every axis; the batch and channel pairs must be 0.");
  s.Field("constant_value", &PadParam::constant_value).Default(0.0).Describe("The value of 'constant' padding.");
}

namespace {

// The three spatial axes (a 4-D input has a leading spatial axis of size 1): for each
// output position along an axis, the input position it reads, or -1 for the constant.
struct PadPlan {
  int64_t slices = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::vector<int64_t> src[3];
};

void CheckPadWidth(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<PadParam>();
  const Shape& pw = p.pad_width;
  if (data.ndim() != 4 && data.ndim() != 5)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected 4-D or 5-D data, got shape ", data.ToString());
  if (pw.ndim() != 2 * data.ndim())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'pad_width' must have ", 2 * data.ndim(),
          " entries (before, after for each axis of data ", data.ToString(), "), got ", pw.ToString());
  for (int i = 0; i < 4; ++i)
    if (pw[i] != 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'pad_width' = ", pw.ToString(),
            " pads the batch or channel axis; only the spatial axes (the last ", data.ndim() - 2,
            ") can be padded, so its first 4 entries must be 0");
  for (int i = 4; i < pw.ndim(); ++i)
    if (pw[i] < 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'pad_width' = ", pw.ToString(),
            " has a negative entry");
  if (p.mode == "reflect") {
    for (int d = 2; d < data.ndim(); ++d)
      if (pw[2 * d] >= data[d] || pw[2 * d + 1] >= data[d])
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
              "': mode 'reflect' needs each pad smaller than its axis, but pad_width = ", pw.ToString(),
              " pads axis ", d, " of size ", data[d], " by (", pw[2 * d], ", ", pw[2 * d + 1], ")");
  }
  if (p.mode == "edge") {
    for (int d = 2; d < data.ndim(); ++d)
      if (data[d] == 0 && (pw[2 * d] > 0 || pw[2 * d + 1] > 0))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': mode 'edge' cannot pad the empty axis ", d,
              " of data ", data.ToString());
  }
}

Shape PaddedShape(const NodeAttrs& attrs, const Shape& data) {
  const Shape& pw = attrs.Params<PadParam>().pad_width;
  Shape out = data;
  for (int d = 0; d < data.ndim(); ++d) out[d] = data[d] + pw[2 * d] + pw[2 * d + 1];
  return out;
}

PadPlan Plan(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<PadParam>();
  const Shape& pw = p.pad_width;
  PadPlan plan;
  plan.slices = data[0] * data[1];
  const int first = 5 - data.ndim();  // 4-D data uses spatial slots 1 and 2
  for (int d = 2; d < data.ndim(); ++d) {
    int s = first + d - 2;
    int64_t n = data[d], before = pw[2 * d];
    plan.in[s] = n;
    plan.out[s] = n + before + pw[2 * d + 1];
    std::vector<int64_t>& src = plan.src[s];
    src.resize(static_cast<size_t>(plan.out[s]));
    for (int64_t o = 0; o < plan.out[s]; ++o) {
      int64_t i = o - before;
      if (i < 0 || i >= n) {
        if (p.mode == "constant") i = -1;
        else if (p.mode == "edge") i = i < 0 ? 0 : n - 1;
        else i = i < 0 ? -i : 2 * (n - 1) - i;
      }
      src[static_cast<size_t>(o)] = i;
    }
  }
  for (int s = 0; s < 3; ++s)
    if (plan.src[s].empty()) plan.src[s] = {0};
  return plan;
}

bool PadShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  CheckPadWidth(attrs, x);
  AssignShape(attrs, out, 0, PaddedShape(attrs, x), "output");
  return true;
}

// Calls f(out_index, in_index or -1) for every output element of one slice.
template <typename F>
inline void WalkSlice(const PadPlan& p, F&& f) {
  int64_t o = 0;
  for (int64_t z = 0; z < p.out[0]; ++z) {
    int64_t iz = p.src[0][z];
    for (int64_t y = 0; y < p.out[1]; ++y) {
      int64_t iy = p.src[1][y];
      int64_t row = (iz < 0 || iy < 0) ? -1 : (iz * p.in[1] + iy) * p.in[2];
      for (int64_t x = 0; x < p.out[2]; ++x, ++o) {
        int64_t ix = p.src[2][x];
        f(o, (row < 0 || ix < 0) ? -1 : row + ix);
      }
    }
  }
}

void PadCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  PadPlan p = Plan(attrs, in[0].shape);
  const int64_t in_slice = p.in[0] * p.in[1] * p.in[2], out_slice = p.out[0] * p.out[1] * p.out[2];
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T fill = ConvertValue<T>(attrs.Params<PadParam>().constant_value);
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t grain = std::max<int64_t>(1, kElemGrain / std::max<int64_t>(out_slice, 1));
    ParallelFor(p.slices, grain, [&](int64_t b, int64_t e) {
      for (int64_t sl = b; sl < e; ++sl) {
        const T* xs = x + sl * in_slice;
        T* ys = y + sl * out_slice;
        WalkSlice(p, [&](int64_t o, int64_t i) {
          T v = i < 0 ? fill : xs[i];
          ys[o] = add ? static_cast<T>(ys[o] + v) : v;
        });
      }
    });
  });
}

// Inputs: ograd, data (for its shape). Each output-gradient element is added to the input
// element it was read from; the constant border gets none.
void PadBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  PadPlan p = Plan(attrs, in[1].shape);
  const int64_t in_slice = p.in[0] * p.in[1] * p.in[2], out_slice = p.out[0] * p.out[1] * p.out[2];
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* g = in[0].ptr<T>();
    T* dx = out[0].ptr<T>();
    const int64_t grain = std::max<int64_t>(1, kElemGrain / std::max<int64_t>(out_slice, 1));
    ParallelFor(p.slices, grain, [&](int64_t b, int64_t e) {
      for (int64_t sl = b; sl < e; ++sl) {
        const T* gs = g + sl * out_slice;
        T* ds = dx + sl * in_slice;
        if (!add) std::fill(ds, ds + in_slice, static_cast<T>(0));
        WalkSlice(p, [&](int64_t o, int64_t i) {
          if (i >= 0) ds[i] = static_cast<T>(ds[i] + gs[o]);
        });
      }
    });
  });
}

bool PadBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[1];
  if (!x.is_known()) return false;
  CheckPadWidth(attrs, x);
  AssignShape(attrs, in, 0, PaddedShape(attrs, x), "input");
  AssignShape(attrs, out, 0, x, "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(Pad)
    .Describe(
        "Pads the spatial axes of 4-D (N, C, H, W) or 5-D (N, C, D, H, W) data by pad_width (before, after per axis; "
        "zero for N and C) with a constant, the edge values or a reflection.")
    .AddAlias("pad")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "4-D or 5-D input")
    .SetParams<PadParam>()
    .SetAttr<FInferShape>("FInferShape", PadShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", PadCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_Pad", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_Pad)
    .Describe("Gradient of Pad: each output-gradient element added to the input element it came from.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .SetParams<PadParam>()
    .SetAttr<FInferShape>("FInferShape", PadBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", PadBackward);

}  // namespace op
}  // namespace weft

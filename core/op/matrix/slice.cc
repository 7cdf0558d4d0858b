// slice: a strided box along the leading axes, with Python slice semantics per axis
// (begin, end and step tuples whose entries may be None). Its gradient writes the
// output gradient into zeros of the input's shape (_backward_slice). _slice_assign and
// _slice_assign_scalar write into the same box of a copy of their first input.
#include <cctype>
#include <cstring>
#include <optional>
#include <string>

#include "core/op/matrix/slice_kernel.h"

namespace weft {
namespace op {

struct SliceParam {
  std::string begin, end, step;
};

WEFT_PARAM_SCHEMA(SliceParam, s) {
  s.Field("begin", &SliceParam::begin).Describe("Starting indices, a tuple of int or None, e.g. (0, None, -2).");
  s.Field("end", &SliceParam::end).Describe("Ending indices (excluded), a tuple of int or None.");
  s.Field("step", &SliceParam::step).Default("()").Describe("Steps, a tuple of int or None (1); () means all 1.");
}

struct SliceAssignScalarParam {
  double scalar = 0;
  std::string begin, end, step;
};

WEFT_PARAM_SCHEMA(SliceAssignScalarParam, s) {
  s.Field("scalar", &SliceAssignScalarParam::scalar).Default(0).Describe("The scalar value for assignment.");
  s.Field("begin", &SliceAssignScalarParam::begin).Describe("Starting indices, a tuple of int or None.");
  s.Field("end", &SliceAssignScalarParam::end).Describe("Ending indices (excluded), a tuple of int or None.");
  s.Field("step", &SliceAssignScalarParam::step).Default("()").Describe("Steps, a tuple of int or None (1).");
}

namespace {

// Parses "(1, None, -2)", "[1,2]", "3" or "()".
std::vector<std::optional<int64_t>> ParseIndexTuple(const NodeAttrs& attrs, const char* name, const std::string& text) {
  std::vector<std::optional<int64_t>> out;
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  if (!t.empty() && (t.front() == '(' || t.front() == '[')) {
    if (t.size() < 2 || (t.back() != ')' && t.back() != ']'))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", name,
            "': expected a tuple of int or None, got '", text, "'");
    t = t.substr(1, t.size() - 2);
  }
  size_t pos = 0;
  while (pos < t.size()) {
    size_t comma = t.find(',', pos);
    std::string item = t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "None" || item == "none") {
      out.push_back(std::nullopt);
    } else {
      char* stop = nullptr;
      long long v = std::strtoll(item.c_str(), &stop, 10);
      if (item.empty() || *stop != '\0')
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter '", name,
              "': expected a tuple of int or None, got '", text, "'");
      out.push_back(v);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

template <typename P = SliceParam>
SliceBox SliceBoxOf(const NodeAttrs& attrs, const Shape& in) {
  const auto& p = attrs.Params<P>();
  auto begin = ParseIndexTuple(attrs, "begin", p.begin);
  auto end = ParseIndexTuple(attrs, "end", p.end);
  auto step = ParseIndexTuple(attrs, "step", p.step);
  if (begin.size() != end.size() || (!step.empty() && step.size() != begin.size()))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': begin=", p.begin, ", end=", p.end, " and step=", p.step,
          " must have the same length");
  if (static_cast<int>(begin.size()) > in.ndim())
    Throw(ErrorKind::kIndex, "Operator '", attrs.op->name, "': begin=", p.begin, " has ", begin.size(),
          " entries but the input of shape ", in.ToString(), " has ", in.ndim(), " dimensions");
  SliceBox box = FullBox(in);
  for (size_t d = 0; d < begin.size(); ++d) {
    int64_t s = step.empty() || !step[d] ? 1 : *step[d];
    if (s == 0) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': step=", p.step, " has a zero step");
    NarrowAxis(&box, static_cast<int>(d), in[static_cast<int>(d)], begin[d], end[d], s);
  }
  return box;
}

bool SliceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  if (!(*in)[0].is_known()) {
    AssignShape(attrs, out, 0, PartialSliceShape((*in)[0], [&](const Shape& s) { return SliceBoxOf(attrs, s); }), "output");
    return false;
  }
  AssignShape(attrs, out, 0, BoxShape(SliceBoxOf(attrs, (*in)[0])), "output");
  return true;
}

void SliceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceForward(ctx, in[0], SliceBoxOf(attrs, in[0].shape), out[0], req[0]);
}

void SliceBackwardCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  SliceBackward(ctx, in[0], SliceBoxOf(attrs, in[1].shape), out[0], req[0]);
}

bool SliceBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  AssignShape(attrs, in, 0, BoxShape(SliceBoxOf(attrs, (*in)[1])), "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

// Inputs (lhs, rhs): lhs with rhs, shaped like the box, written into the box.
bool SliceAssignShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  AssignShape(attrs, out, 0, (*in)[0], "output");
  AssignShape(attrs, in, 0, (*out)[0], "input");
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, in, 1, BoxShape(SliceBoxOf(attrs, (*in)[0])), "input");
  return (*in)[1].is_known();
}

// Copies lhs into the output unless they share memory.
void CopyBase(const OpContext& ctx, const TBlob& lhs, const TBlob& out, OpReq req) {
  if (req != OpReq::kWriteTo && req != OpReq::kWriteInplace) return;
  if (OnGPU(ctx)) gpu::Copy(ctx, lhs, out, OpReq::kWriteTo);
  else CopyWithReq(lhs, out, OpReq::kWriteTo);
}

void SliceAssignCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (req[0] == OpReq::kAddTo)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "' cannot add to its output");
  SliceBox box = SliceBoxOf(attrs, in[0].shape);
  if (in[1].shape != BoxShape(box) || out[0].shape != in[0].shape)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected rhs of shape ", BoxShape(box).ToString(),
          " and an output of lhs's shape ", in[0].shape.ToString(), ", got ", in[1].shape.ToString(), " and ",
          out[0].shape.ToString());
  CopyBase(ctx, in[0], out[0], req[0]);
  int64_t base;
  std::vector<int64_t> st = BoxStrides(out[0].shape, box, &base);
  if (OnGPU(ctx)) return gpu::StridedScatter(ctx, in[1].shape, st, base, in[1], out[0], OpReq::kWriteTo);
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    const T* r = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    ForEachStridedRow(in[1].shape, st, base, [&](int64_t i, int64_t off, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) y[off + k * step] = r[i + k];
    });
  });
}

void SliceAssignScalarCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (req[0] == OpReq::kAddTo)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "' cannot add to its output");
  SliceBox box = SliceBoxOf<SliceAssignScalarParam>(attrs, in[0].shape);
  CopyBase(ctx, in[0], out[0], req[0]);
  int64_t base;
  std::vector<int64_t> st = BoxStrides(out[0].shape, box, &base);
  double v = attrs.Params<SliceAssignScalarParam>().scalar;
  WEFT_TYPE_SWITCH(out[0].dtype, T, {
    T* y = out[0].ptr<T>();
    T value = ConvertValue<T>(v);
    if (OnGPU(ctx)) {
      uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof(T));
      return gpu::StridedFill(ctx, BoxShape(box), st, base, out[0], bits);
    }
    ForEachStridedRow(BoxShape(box), st, base, [&](int64_t, int64_t off, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) y[off + k * step] = value;
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(slice)
    .Describe("A strided slice along the leading axes: axis i keeps begin[i]:end[i]:step[i] (Python semantics, "
              "None for the default); later axes are kept whole.")
    .AddAlias("crop")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<SliceParam>()
    .SetAttr<FInferShape>("FInferShape", SliceShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SliceCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_slice", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_slice)
    .Describe("Gradient of slice: zeros of the input's shape with the output gradient in the slice.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<SliceParam>()
    .SetAttr<FInferShape>("FInferShape", SliceBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", SliceBackwardCompute);

WEFT_REGISTER_OP(_slice_assign)
    .Describe("lhs with rhs assigned to the slice begin:end:step of it (as slice takes); the output may be lhs.")
    .AddAlias("_crop_assign")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "Source input")
    .AddArgument("rhs", "NDArray-or-Symbol", "value to assign")
    .SetParams<SliceParam>()
    .SetAttr<FInferShape>("FInferShape", SliceAssignShape)
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SliceAssignCompute);

WEFT_REGISTER_OP(_slice_assign_scalar)
    .Describe("The input with a scalar assigned to the slice begin:end:step of it; the output may be the input.")
    .AddAlias("_crop_assign_scalar")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Source input")
    .SetParams<SliceAssignScalarParam>()
    .SetAttr<FInferShape>("FInferShape",
                          [](const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
                            if ((*in)[0].is_known()) SliceBoxOf<SliceAssignScalarParam>(attrs, (*in)[0]);
                            return SameShape(attrs, in, out);
                          })
    .SetAttr<FInplaceOption>("FInplaceOption",
                             [](const NodeAttrs&) { return std::vector<std::pair<int, int>>{{0, 0}}; })
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SliceAssignScalarCompute);

WEFT_DEVICE_COMPUTE(slice, SliceCompute);
WEFT_DEVICE_COMPUTE(_backward_slice, SliceBackwardCompute);
WEFT_DEVICE_COMPUTE(_slice_assign, SliceAssignCompute);
WEFT_DEVICE_COMPUTE(_slice_assign_scalar, SliceAssignScalarCompute);

}  // namespace op
}  // namespace weft

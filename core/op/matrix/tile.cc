// tile: repeats the whole array reps[d] times along each axis d. The output seen as
// interleaved (rep0, d0, rep1, d1, ...) axes reads the input with stride 0 along the rep
// axes, and the gradient sums over them (_backward_tile).
#include <string>

#include "core/base/checked_size.h"
#include "core/base/np_shape.h"
#include "core/op/reduce/reduce_kernel.h"
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct TileParam {
  Shape reps = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(TileParam, s) {
  s.Field("reps", &TileParam::reps)
      .Describe("Repetitions per axis; aligned to the input's last axes (missing ones are 1, extra ones add axes).");
}

namespace {

// The input shape and reps padded with leading 1s to one rank.
void AlignedDims(const NodeAttrs& attrs, const Shape& in, std::vector<int64_t>* dims, std::vector<int64_t>* reps) {
  const Shape& r = attrs.Params<TileParam>().reps;
  for (int64_t v : r) {
    if (v < 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': reps=", r.ToString(), " has a negative entry");
    // As MXNet: a zero repeat makes a zero size, which its legacy shape mode reads as unknown.
    if (v == 0 && NpShapeMode().load() == 0)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': reps=", r.ToString(),
            " has a zero entry, which MXNet's legacy shape mode reads as an unknown size; turn on numpy shape "
            "semantics (mx.util.np_shape()) for zero-size results");
  }
  int nd = std::max(in.ndim(), std::max(r.ndim(), 0));
  dims->assign(nd, 1);
  reps->assign(nd, 1);
  for (int d = 0; d < in.ndim(); ++d) (*dims)[nd - in.ndim() + d] = in[d];
  for (int d = 0; d < r.ndim(); ++d) (*reps)[nd - r.ndim() + d] = r[d];
}

// The output as (rep0, d0, rep1, d1, ...) with input strides (0, s0, 0, s1, ...).
Shape Interleaved(const std::vector<int64_t>& dims, const std::vector<int64_t>& reps, std::vector<int64_t>* stride) {
  std::vector<int64_t> s;
  int64_t run = 1;
  stride->assign(2 * dims.size(), 0);
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    (*stride)[2 * d + 1] = run;
    run *= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    s.push_back(reps[d]);
    s.push_back(dims[d]);
  }
  return Shape(s);
}

bool TileShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  std::vector<int64_t> dims, reps;
  AlignedDims(attrs, (*in)[0], &dims, &reps);
  // reps are checked non-negative; a product past int64 is an error, not a wrapped size
  // (fuzz_c_api found reps of 2^63 - 1).
  for (size_t d = 0; d < dims.size(); ++d)
    dims[d] = CheckedMul(dims[d], reps[d], "Operator '" + attrs.op->name + "': output axis " + std::to_string(d));
  AssignShape(attrs, out, 0, Shape(dims), "output");
  return true;
}

void TileCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                 const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  std::vector<int64_t> dims, reps, stride;
  AlignedDims(attrs, in[0].shape, &dims, &reps);
  Shape walk = Interleaved(dims, reps, &stride);
  StridedGather(ctx, walk, stride, 0, in[0], out[0], req[0]);
}

// Inputs (ograd, data): sums the gradient over the rep axes of the interleaved view.
void TileBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                  const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  std::vector<int64_t> dims, reps, stride;
  AlignedDims(attrs, in[1].shape, &dims, &reps);
  Shape walk = Interleaved(dims, reps, &stride);
  std::vector<bool> flags(walk.ndim());
  for (int d = 0; d < walk.ndim(); ++d) flags[d] = d % 2 == 0;
  SumAxes(ctx, in[0], walk, flags, out[0], req[0]);
}

bool TileBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[1].is_known()) return false;
  std::vector<Shape> fwd_out(1);
  std::vector<Shape> fwd_in = {(*in)[1]};
  TileShape(attrs, &fwd_in, &fwd_out);
  AssignShape(attrs, in, 0, fwd_out[0], "input");
  AssignShape(attrs, out, 0, (*in)[1], "output");
  return true;
}

}  // namespace

WEFT_REGISTER_OP(tile)
    .Describe("Repeats the whole input reps[d] times along each axis d (reps aligned to the last axes).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetParams<TileParam>()
    .SetAttr<FInferShape>("FInferShape", TileShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", TileCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_tile", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_tile)
    .Describe("Gradient of tile: the output gradient summed over the repetitions.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input (for its shape)")
    .SetParams<TileParam>()
    .SetAttr<FInferShape>("FInferShape", TileBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", TileBackward);

WEFT_DEVICE_COMPUTE(tile, TileCompute);
WEFT_DEVICE_COMPUTE(_backward_tile, TileBackward);

}  // namespace op
}  // namespace weft

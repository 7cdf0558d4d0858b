// depth_to_space and space_to_depth on NCHW: blocks of block_size x block_size pixels
// to channels and back (the channel of a block pixel (i, j) is (i * b + j) * C + c). Each
// is the other's gradient.
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct DepthSpaceParam {
  int block_size = 1;
};

WEFT_PARAM_SCHEMA(DepthSpaceParam, s) {
  s.Field("block_size", &DepthSpaceParam::block_size)
      .Describe("Blocks of [block_size, block_size] are moved");
}

namespace {

int Block(const NodeAttrs& attrs) {
  int b = attrs.Params<DepthSpaceParam>().block_size;
  if (b <= 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': block_size must be a positive integer, got ", b);
  return b;
}

void CheckNCHW(const NodeAttrs& attrs, const Shape& s) {
  if (s.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a 4-D (N, C, H, W) input, got shape ",
          s.ToString());
  for (int d = 0; d < 4; ++d)
    if (s[d] == 0)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': dimension ", d, " of ", s.ToString(), " is 0");
}

// The space-side shape (N, C, H*b, W*b) and depth-side shape (N, C*b*b, H, W) of a call.
bool ToSpace(const NodeAttrs& attrs) { return attrs.op->name == "depth_to_space"; }

Shape OutShape(const NodeAttrs& attrs, const Shape& in) {
  CheckNCHW(attrs, in);
  int64_t b = Block(attrs);
  if (ToSpace(attrs)) {
    if (in[1] % (b * b) != 0)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the depth ", in[1], " of ", in.ToString(),
            " is not a multiple of block_size^2 = ", b * b);
    return Shape({in[0], in[1] / (b * b), in[2] * b, in[3] * b});
  }
  if (in[2] % b != 0 || in[3] % b != 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': the height and width of ", in.ToString(),
          " must be multiples of block_size = ", b);
  return Shape({in[0], in[1] * b * b, in[2] / b, in[3] / b});
}

bool DepthSpaceShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  AssignShape(attrs, out, 0, OutShape(attrs, (*in)[0]), "output");
  return true;
}

void DepthSpaceCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  bool to_space = ToSpace(attrs);
  // Walk the space side (N, C, H, W) and find each element in the depth side (N, C*b*b, H/b, W/b).
  const Shape& space = to_space ? out[0].shape : in[0].shape;
  int64_t b = Block(attrs);
  int64_t n = space[0], c = space[1], h = space[2], w = space[3], hb = h / b, wb = w / b;
  if (OnGPU(ctx)) {
    // The space side walked as (N, C, H/b, b, W/b, b) with each axis's stride in the depth side.
    const Shape walk{n, c, hb, b, wb, b};
    const std::vector<int64_t> stride{c * b * b * hb * wb, hb * wb, wb, b * c * hb * wb, 1, c * hb * wb};
    if (to_space) return gpu::StridedGather(ctx, walk, stride, 0, in[0], out[0], req[0]);
    return gpu::StridedScatter(ctx, walk, stride, 0, in[0], out[0], req[0]);
  }
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(n * c * h, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(w, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t yy = r % h, cc = (r / h) % c, nn = r / (h * c);
        for (int64_t xx = 0; xx < w; ++xx) {
          int64_t dc = ((yy % b) * b + xx % b) * c + cc;
          int64_t depth = ((nn * c * b * b + dc) * hb + yy / b) * wb + xx / b;
          int64_t sp = r * w + xx;
          if (to_space) Store(y + sp, req[0], x[depth]);
          else Store(y + depth, req[0], x[sp]);
        }
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(depth_to_space)
    .Describe("Moves channel blocks of an NCHW input into block_size x block_size pixel blocks: (N, C, H, W) -> "
              "(N, C / block_size^2, H * block_size, W * block_size).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<DepthSpaceParam>()
    .SetAttr<FInferShape>("FInferShape", DepthSpaceShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", DepthSpaceCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("space_to_depth", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(space_to_depth)
    .Describe("Moves block_size x block_size pixel blocks of an NCHW input into channels: (N, C, H, W) -> "
              "(N, C * block_size^2, H / block_size, W / block_size).")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetParams<DepthSpaceParam>()
    .SetAttr<FInferShape>("FInferShape", DepthSpaceShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", DepthSpaceCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("depth_to_space", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_DEVICE_COMPUTE(depth_to_space, DepthSpaceCompute);
WEFT_DEVICE_COMPUTE(space_to_depth, DepthSpaceCompute);

}  // namespace op
}  // namespace weft

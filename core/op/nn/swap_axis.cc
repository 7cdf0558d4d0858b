// SwapAxis (swapaxes): exchanges two axes, MXNet's parameters dim1 and dim2 (negative
// values count from the end). Its gradient is the same swap of the output gradient.
#include "core/op/data_move.h"

namespace weft {
namespace op {

struct SwapAxisParam {
  int dim1 = 0;
  int dim2 = 0;
};

WEFT_PARAM_SCHEMA(SwapAxisParam, s) {
  s.Field("dim1", &SwapAxisParam::dim1).Default(0).Describe("The first axis to swap.");
  s.Field("dim2", &SwapAxisParam::dim2).Default(0).Describe("The second axis to swap.");
}

namespace {

void Axes(const NodeAttrs& attrs, int ndim, int* lo, int* hi) {
  const auto& p = attrs.Params<SwapAxisParam>();
  int a = CheckAxis(attrs, p.dim1, ndim, "dim1"), b = CheckAxis(attrs, p.dim2, ndim, "dim2");
  *lo = std::min(a, b);
  *hi = std::max(a, b);
}

bool SwapAxisShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& x = (*in)[0];
  if (!x.is_known()) return false;
  if (x.ndim() < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected an input with at least 1 dimension, got shape ",
          x.ToString());
  int lo, hi;
  Axes(attrs, x.ndim(), &lo, &hi);
  Shape y = x;
  std::swap(y[lo], y[hi]);
  AssignShape(attrs, out, 0, y, "output");
  return true;
}

// The input seen as (A, n1, B, n2, C) becomes (A, n2, B, n1, C); the walk goes over the
// output in order, copying runs of C contiguous elements.
void SwapAxisCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& s = in[0].shape;
  int lo, hi;
  Axes(attrs, s.ndim(), &lo, &hi);
  if (lo == hi) {
    if (OnGPU(ctx)) return gpu::Copy(ctx, in[0], out[0], req[0]);
    CopyWithReq(in[0], out[0], req[0]);
    return;
  }
  const int64_t n1 = s[lo], n2 = s[hi];
  const int64_t B = s.ProdRange(lo + 1, hi), C = s.ProdRange(hi + 1, s.ndim());
  if (OnGPU(ctx)) {
    // The same walk over (A, n2, B, n1, C), strided through the input (A, n1, B, n2, C).
    const std::vector<int64_t> stride{n1 * B * n2 * C, C, n2 * C, B * n2 * C, 1};
    return StridedGather(ctx, Shape{s.ProdRange(0, lo), n2, B, n1, C}, stride, 0, in[0], out[0], req[0]);
  }
  const int64_t runs = s.ProdRange(0, lo) * n2 * B * n1;
  const bool add = req[0] == OpReq::kAddTo;
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(runs, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        // r indexes (a, j, bb, i) of the output.
        int64_t i = r % n1, t = r / n1;
        int64_t bb = t % B;
        t /= B;
        int64_t j = t % n2, a = t / n2;
        const T* src = x + (((a * n1 + i) * B + bb) * n2 + j) * C;
        T* dst = y + r * C;
        if (add) {
          for (int64_t c = 0; c < C; ++c) dst[c] = static_cast<T>(dst[c] + src[c]);
        } else {
          std::copy(src, src + C, dst);
        }
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(SwapAxis)
    .Describe("Interchanges axes dim1 and dim2 of the input.")
    .AddAlias("swapaxes")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input array")
    .SetParams<SwapAxisParam>()
    .SetAttr<FInferShape>("FInferShape", SwapAxisShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kInjective)
    .SetAttr<FCompute>("FCompute<cpu>", SwapAxisCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("SwapAxis", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_DEVICE_COMPUTE(SwapAxis, SwapAxisCompute);

}  // namespace op
}  // namespace weft

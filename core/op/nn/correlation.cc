// Correlation (FlowNet's correlation layer): compares every patch of data1 with the patches
// of data2 around it. For an output cell (i, j) and a displacement (dy, dx) on the grid
// {-r, ..., r} * stride2 (r = max_displacement / stride2; one output channel per
// displacement, row-major), the patch of data1 at (y1, x1) = (i, j) * stride1 +
// max_displacement - pad_size (its top-left corner in the unpadded image) is compared with
// the patch of data2 at (y1 + dy, x1 + dx), over kernel_size x kernel_size cells and all
// channels: the sum of products (is_multiply) or of absolute differences, divided by
// kernel_size^2 * channels. Cells in the padding read as 0. The output is
// (n, (2r + 1)^2, ceil((H + 2 * pad - 2 * border) / stride1), likewise for W) with
// border = max_displacement + (kernel_size - 1) / 2.
#include <cmath>

#include "core/op/nn/item_grain.h"
#include "core/op/nn/norm_util.h"

namespace weft {
namespace op {

struct CorrelationParam {
  int kernel_size = 1;
  int max_displacement = 1;
  int stride1 = 1;
  int stride2 = 1;
  int pad_size = 0;
  bool is_multiply = true;
};

WEFT_PARAM_SCHEMA(CorrelationParam, s) {
  s.Field("kernel_size", &CorrelationParam::kernel_size).Default(1).Range(1, 1 << 16).Describe("Patch size (odd).");
  s.Field("max_displacement", &CorrelationParam::max_displacement).Default(1).Range(0, 1 << 16).Describe("Largest displacement compared.");
  s.Field("stride1", &CorrelationParam::stride1).Default(1).Range(1, 1 << 16).Describe("Stride of the patches of data1.");
  s.Field("stride2", &CorrelationParam::stride2).Default(1).Range(1, 1 << 16).Describe("Stride of the displacements around each patch.");
  s.Field("pad_size", &CorrelationParam::pad_size).Default(0).Range(0, 1 << 16).Describe("Zero padding on every side of both inputs.");
  s.Field("is_multiply", &CorrelationParam::is_multiply).Default(true).Describe("Sum products (true) or absolute differences (false).");
}

namespace {

struct CorrGeom {
  int64_t n, c, H, W, k, pad, s1, s2, md, radius, grid, top_h, top_w;
  int64_t channels() const { return grid * grid; }
};

CorrGeom Geometry(const NodeAttrs& attrs, const Shape& d) {
  const auto& p = attrs.Params<CorrelationParam>();
  const std::string& op = attrs.op->name;
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", op, "': the inputs must be 4-D (n, c, h, w), got shape ", d.ToString());
  if (p.kernel_size % 2 == 0)
    Throw(ErrorKind::kValue, "Operator '", op, "': kernel_size must be odd, got ", p.kernel_size);
  CorrGeom g{d[0], d[1], d[2], d[3], p.kernel_size, p.pad_size, p.stride1, p.stride2, p.max_displacement, 0, 0, -1, -1};
  g.radius = g.md / g.s2;
  g.grid = 2 * g.radius + 1;
  const int64_t border = g.md + (g.k - 1) / 2;
  auto top = [&](int64_t extent) {
    const int64_t room = extent + 2 * g.pad - 2 * border;
    return room <= 0 ? int64_t{0} : (room + g.s1 - 1) / g.s1;
  };
  if (g.H >= 0) g.top_h = top(g.H);
  if (g.W >= 0) g.top_w = top(g.W);
  if (g.top_h == 0 || g.top_w == 0)
    Throw(ErrorKind::kShape, "Operator '", op, "': the padded input (", g.H + 2 * g.pad, ", ", g.W + 2 * g.pad,
          ") is too small for max_displacement ", g.md, " and kernel_size ", g.k, " (data shape ", d.ToString(), ")");
  return g;
}

Shape OutShape(const CorrGeom& g) { return Shape({g.n, g.channels(), g.top_h, g.top_w}); }

bool CorrelationShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape d = (*in)[0].known_ndim() ? (*in)[0] : (*in)[1];
  if (!d.known_ndim()) return false;
  AssignShape(attrs, in, 0, d, "input");
  AssignShape(attrs, in, 1, (*in)[0], "input");
  AssignShape(attrs, in, 0, (*in)[1], "input");
  AssignShape(attrs, out, 0, OutShape(Geometry(attrs, (*in)[0])), "output");
  return (*in)[0].is_known();
}

// Calls f(offset in data1 or -1, offset in data2 or -1) for every compared pair of cells of
// output cell (i, j) and displacement channel tc of batch item b, channel-inner.
template <typename F>
void ForEachPair(const CorrGeom& g, int64_t b, int64_t tc, int64_t i, int64_t j, F&& f) {
  const int64_t y1 = i * g.s1 + g.md - g.pad, x1 = j * g.s1 + g.md - g.pad;
  const int64_t y2 = y1 + (tc / g.grid - g.radius) * g.s2, x2 = x1 + (tc % g.grid - g.radius) * g.s2;
  const int64_t plane = g.H * g.W;
  for (int64_t h = 0; h < g.k; ++h)
    for (int64_t w = 0; w < g.k; ++w) {
      const bool in1 = y1 + h >= 0 && y1 + h < g.H && x1 + w >= 0 && x1 + w < g.W;
      const bool in2 = y2 + h >= 0 && y2 + h < g.H && x2 + w >= 0 && x2 + w < g.W;
      if (!in1 && !in2) continue;
      const int64_t o1 = in1 ? (b * g.c * g.H + y1 + h) * g.W + x1 + w : -1;
      const int64_t o2 = in2 ? (b * g.c * g.H + y2 + h) * g.W + x2 + w : -1;
      for (int64_t c = 0; c < g.c; ++c) f(in1 ? o1 + c * plane : -1, in2 ? o2 + c * plane : -1);
    }
}

void CorrelationCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const bool mul = attrs.Params<CorrelationParam>().is_multiply;
  CorrGeom g = Geometry(attrs, in[0].shape);
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    using A = nn::Acc<T>;
    const T* a = in[0].ptr<T>();
    const T* b = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    const A norm = static_cast<A>(g.k * g.k * g.c);
    ParallelFor(g.n * g.channels(), ItemGrain(g.top_h * g.top_w * g.k * g.k * g.c), [&](int64_t qb, int64_t qe) {
      for (int64_t q = qb; q < qe; ++q) {
        const int64_t n = q / g.channels(), tc = q % g.channels();
        for (int64_t i = 0; i < g.top_h; ++i)
          for (int64_t j = 0; j < g.top_w; ++j) {
            A sum = 0;
            ForEachPair(g, n, tc, i, j, [&](int64_t o1, int64_t o2) {
              const A v1 = o1 >= 0 ? static_cast<A>(a[o1]) : A(0), v2 = o2 >= 0 ? static_cast<A>(b[o2]) : A(0);
              sum += mul ? v1 * v2 : std::abs(v1 - v2);
            });
            nn::Put(y + (q * g.top_h + i) * g.top_w + j, req[0], sum / norm);
          }
      }
    });
  });
}

// _backward_Correlation: (out_grad, data1, data2) -> (d data1, d data2).
bool CorrelationBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  AssignShape(attrs, in, 2, d, "input");
  AssignShape(attrs, in, 0, OutShape(Geometry(attrs, d)), "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, d, "output");
  return true;
}

void CorrelationBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const bool mul = attrs.Params<CorrelationParam>().is_multiply;
  CorrGeom g = Geometry(attrs, in[1].shape);
  if (in[2].shape != in[1].shape || in[0].shape != OutShape(g))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data2 of shape ", in[1].shape.ToString(),
          " and out_grad of shape ", OutShape(g).ToString(), ", got ", in[2].shape.ToString(), " and ",
          in[0].shape.ToString());
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    using A = nn::Acc<T>;
    const T* og = in[0].ptr<T>();
    const T* a = in[1].ptr<T>();
    const T* b = in[2].ptr<T>();
    const int64_t item = g.c * g.H * g.W;
    const A norm = static_cast<A>(g.k * g.k * g.c);
    // Each batch item's gradients are accumulated in its own buffers, then stored.
    ParallelFor(g.n, ItemGrain(g.channels() * g.top_h * g.top_w * g.k * g.k * g.c), [&](int64_t nb, int64_t ne) {
      std::vector<A> g1(static_cast<size_t>(item)), g2(static_cast<size_t>(item));
      for (int64_t n = nb; n < ne; ++n) {
        std::fill(g1.begin(), g1.end(), A(0));
        std::fill(g2.begin(), g2.end(), A(0));
        const int64_t base = n * item;
        for (int64_t tc = 0; tc < g.channels(); ++tc)
          for (int64_t i = 0; i < g.top_h; ++i)
            for (int64_t j = 0; j < g.top_w; ++j) {
              const A go = static_cast<A>(og[((n * g.channels() + tc) * g.top_h + i) * g.top_w + j]) / norm;
              if (go == A(0)) continue;
              ForEachPair(g, n, tc, i, j, [&](int64_t o1, int64_t o2) {
                const A v1 = o1 >= 0 ? static_cast<A>(a[o1]) : A(0), v2 = o2 >= 0 ? static_cast<A>(b[o2]) : A(0);
                if (mul) {
                  if (o1 >= 0) g1[static_cast<size_t>(o1 - base)] += go * v2;
                  if (o2 >= 0) g2[static_cast<size_t>(o2 - base)] += go * v1;
                } else {
                  const A sign = v1 >= v2 ? A(1) : A(-1);
                  if (o1 >= 0) g1[static_cast<size_t>(o1 - base)] += go * sign;
                  if (o2 >= 0) g2[static_cast<size_t>(o2 - base)] -= go * sign;
                }
              });
            }
        for (int k = 0; k < 2; ++k) {
          if (req[k] == OpReq::kNullOp) continue;
          T* dst = out[k].ptr<T>() + base;
          const std::vector<A>& src = k == 0 ? g1 : g2;
          for (int64_t e = 0; e < item; ++e) nn::Put(dst + e, req[k], src[static_cast<size_t>(e)]);
        }
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(Correlation)
    .Describe("Correlation of the patches of data1 with the displaced patches of data2 (FlowNet): one output channel "
              "per displacement, the mean over a patch and the channels of products or absolute differences.")
    .SetNumInputs(2)
    .AddArgument("data1", "NDArray-or-Symbol", "First input (n, c, h, w)")
    .AddArgument("data2", "NDArray-or-Symbol", "Second input, the shape of data1")
    .SetParams<CorrelationParam>()
    .SetAttr<FInferShape>("FInferShape", CorrelationShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CorrelationCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Correlation", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Correlation)
    .Describe("Gradient of Correlation: (out_grad, data1, data2) -> (d data1, d data2).")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data1", "NDArray-or-Symbol", "The forward data1")
    .AddArgument("data2", "NDArray-or-Symbol", "The forward data2")
    .SetParams<CorrelationParam>()
    .SetAttr<FInferShape>("FInferShape", CorrelationBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", CorrelationBackward);

}  // namespace op
}  // namespace weft

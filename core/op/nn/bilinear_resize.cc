// _contrib_BilinearResize2D: bilinear resizing of the two spatial axes of NCHW data, and
// _contrib_AdaptiveAvgPooling2D: average pooling to a given output size.
//
// BilinearResize2D's output size comes from `mode`: size (height/width, or the input's size
// times scale_height/scale_width when given), odd_scale (an odd input extent e becomes
// (e - 1) * scale + 1, an even one e * scale), like (the second input's height and width),
// to_even_down/to_even_up/to_odd_down/to_odd_up (the nearest even or odd extent below or
// above). Interpolation follows align_corners (resample.h). The gradient scatters each output
// gradient back onto its four source cells; `like` gets a zero gradient.
//
// AdaptiveAvgPooling2D averages, for output cell (i, j), the input rows
// [floor(i * H / h), ceil((i + 1) * H / h)) and likewise the columns, so windows may overlap.
#include <cmath>
#include <optional>

#include "core/op/nn/item_grain.h"
#include "core/op/nn/norm_util.h"
#include "core/op/nn/resample.h"

namespace weft {
namespace op {

struct BilinearResizeParam {
  int height = 1;
  int width = 1;
  std::optional<double> scale_height, scale_width;
  std::string mode;
  bool align_corners = true;
};

WEFT_PARAM_SCHEMA(BilinearResizeParam, s) {
  s.Field("height", &BilinearResizeParam::height).Default(1).Range(1, 1 << 30).Describe("Output height (mode 'size' without scale_height).");
  s.Field("width", &BilinearResizeParam::width).Default(1).Range(1, 1 << 30).Describe("Output width (mode 'size' without scale_width).");
  s.Field("scale_height", &BilinearResizeParam::scale_height).Default(std::nullopt).Describe("Scale of the height (modes 'size' and 'odd_scale').");
  s.Field("scale_width", &BilinearResizeParam::scale_width).Default(std::nullopt).Describe("Scale of the width (modes 'size' and 'odd_scale').");
  s.Field("mode", &BilinearResizeParam::mode)
      .Default("size")
      .Choices({"size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up"})
      .Describe("How the output size is chosen (see the operator's description).");
  s.Field("align_corners", &BilinearResizeParam::align_corners).Default(true).Describe("Line up the corner cells of input and output instead of scaling cell areas.");
}

struct AdaptivePoolParam {
  Shape output_size;
};

WEFT_PARAM_SCHEMA(AdaptivePoolParam, s) {
  s.Field("output_size", &AdaptivePoolParam::output_size)
      .Default(Shape::Scalar())
      .Describe("Output (height, width), or one size for both; (1, 1) when empty.");
}

namespace {

void CheckNCHW(const NodeAttrs& attrs, const Shape& d, const char* what) {
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input '", what,
          "' must be 4-D (batch, channel, height, width), got shape ", d.ToString());
}

// The data's height and width must hold at least one cell each: every output cell reads some.
void CheckSpatial(const NodeAttrs& attrs, const Shape& d) {
  if (d[2] == 0 || d[3] == 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'data' has an empty height or width (shape ",
          d.ToString(), ")");
}

// ------------------------------------------------------------------ BilinearResize2D
int64_t Scaled(const NodeAttrs& attrs, int64_t extent, const std::optional<double>& scale, const char* name) {
  if (!scale)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': mode 'odd_scale' needs ", name);
  return extent % 2 == 0 ? static_cast<int64_t>(static_cast<double>(extent) * *scale)
                         : static_cast<int64_t>(static_cast<double>(extent - 1) * *scale) + 1;
}

// (height, width) of the output for data d; -1 where unknown.
std::pair<int64_t, int64_t> ResizeTo(const NodeAttrs& attrs, const Shape& d, const Shape& like) {
  const auto& p = attrs.Params<BilinearResizeParam>();
  const int64_t H = d[2], W = d[3];
  auto unknown_or = [](int64_t e, int64_t v) { return e < 0 ? int64_t{-1} : v; };
  int64_t h = -1, w = -1;
  if (p.mode == "size") {
    h = p.scale_height ? unknown_or(H, static_cast<int64_t>(*p.scale_height * static_cast<double>(H))) : p.height;
    w = p.scale_width ? unknown_or(W, static_cast<int64_t>(*p.scale_width * static_cast<double>(W))) : p.width;
  } else if (p.mode == "odd_scale") {
    h = unknown_or(H, Scaled(attrs, H, p.scale_height, "scale_height"));
    w = unknown_or(W, Scaled(attrs, W, p.scale_width, "scale_width"));
  } else if (p.mode == "like") {
    if (!like.known_ndim()) return {-1, -1};
    CheckNCHW(attrs, like, "like");
    h = like[2];
    w = like[3];
  } else {
    const bool even = p.mode == "to_even_down" || p.mode == "to_even_up";
    const bool up = p.mode == "to_even_up" || p.mode == "to_odd_up";
    auto fit = [&](int64_t e) {
      if (e < 0) return int64_t{-1};
      const bool is_even = e % 2 == 0;
      return is_even == even ? e : e + (up ? 1 : -1);
    };
    h = fit(H);
    w = fit(W);
  }
  if ((h == 0 || w == 0 || h < -1 || w < -1))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': mode '", p.mode, "' gives an empty output (", h, ", ",
          w, ") for data of shape ", d.ToString());
  return {h, w};
}

bool ResizeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  CheckNCHW(attrs, d, "data");
  CheckSpatial(attrs, d);
  auto hw = ResizeTo(attrs, d, in->size() > 1 ? (*in)[1] : Shape());
  AssignShape(attrs, out, 0, Shape({d[0], d[1], hw.first, hw.second}), "output");
  return d.is_known() && (*out)[0].is_known() && (in->size() < 2 || (*in)[1].is_known());
}

bool ResizeType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected a floating-point input 'data', got ", DTypeName(t));
  AssignType(attrs, out, 0, t, "output");
  return true;
}

// planes of (H, W) <-> planes of (h, w).
template <typename T>
void ResizeForward(int64_t planes, int64_t H, int64_t W, int64_t h, int64_t w, bool align, const T* x, T* y,
                   OpReq req) {
  using A = nn::Acc<T>;
  const auto ty = LinearTaps(H, h, align, true), tx = LinearTaps(W, w, align, true);
  ParallelFor(planes, ItemGrain(h * w * 4), [&](int64_t pb, int64_t pe) {
    for (int64_t pl = pb; pl < pe; ++pl) {
      const T* src = x + pl * H * W;
      T* dst = y + pl * h * w;
      for (int64_t i = 0; i < h; ++i) {
        const LinearTap& a = ty[static_cast<size_t>(i)];
        const T* r0 = src + a.i0 * W;
        const T* r1 = src + a.i1 * W;
        for (int64_t j = 0; j < w; ++j) {
          const LinearTap& b = tx[static_cast<size_t>(j)];
          const A v = a.w0 * (b.w0 * static_cast<A>(r0[b.i0]) + b.w1 * static_cast<A>(r0[b.i1])) +
                      a.w1 * (b.w0 * static_cast<A>(r1[b.i0]) + b.w1 * static_cast<A>(r1[b.i1]));
          nn::Put(dst + i * w + j, req, v);
        }
      }
    }
  });
}

template <typename T>
void ResizeBackward(int64_t planes, int64_t H, int64_t W, int64_t h, int64_t w, bool align, const T* gy, T* gx,
                    OpReq req) {
  using A = nn::Acc<T>;
  const auto ty = LinearTaps(H, h, align, true), tx = LinearTaps(W, w, align, true);
  ParallelFor(planes, ItemGrain(h * w * 4 + H * W), [&](int64_t pb, int64_t pe) {
    std::vector<A> acc(static_cast<size_t>(H * W));
    for (int64_t pl = pb; pl < pe; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const T* g = gy + pl * h * w;
      for (int64_t i = 0; i < h; ++i) {
        const LinearTap& a = ty[static_cast<size_t>(i)];
        for (int64_t j = 0; j < w; ++j) {
          const LinearTap& b = tx[static_cast<size_t>(j)];
          const A v = static_cast<A>(g[i * w + j]);
          acc[static_cast<size_t>(a.i0 * W + b.i0)] += a.w0 * b.w0 * v;
          acc[static_cast<size_t>(a.i0 * W + b.i1)] += a.w0 * b.w1 * v;
          acc[static_cast<size_t>(a.i1 * W + b.i0)] += a.w1 * b.w0 * v;
          acc[static_cast<size_t>(a.i1 * W + b.i1)] += a.w1 * b.w1 * v;
        }
      }
      T* dst = gx + pl * H * W;
      for (int64_t k = 0; k < H * W; ++k) nn::Put(dst + k, req, acc[static_cast<size_t>(k)]);
    }
  });
}

void ResizeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[0].shape;
  const Shape& o = out[0].shape;
  const bool align = attrs.Params<BilinearResizeParam>().align_corners;
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    ResizeForward<T>(d[0] * d[1], d[2], d[3], o[2], o[3], align, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
  });
}

// _backward_contrib_BilinearResize2D: (out_grad, data) -> d data.
bool ResizeBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  const Shape& g = (*in)[0];
  if (!d.is_known() || !g.known_ndim()) return false;
  CheckNCHW(attrs, d, "data");
  CheckSpatial(attrs, d);
  CheckNCHW(attrs, g, "out_grad");
  if (attrs.Params<BilinearResizeParam>().mode != "like") {
    auto hw = ResizeTo(attrs, d, Shape());
    AssignShape(attrs, in, 0, Shape({d[0], d[1], hw.first, hw.second}), "input");
  } else {
    AssignShape(attrs, in, 0, Shape({d[0], d[1], -1, -1}), "input");
  }
  AssignShape(attrs, out, 0, d, "output");
  return (*in)[0].is_known();
}

void ResizeBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[1].shape;
  const Shape& g = in[0].shape;
  if (d.ndim() != 4 || g.ndim() != 4 || g[0] != d[0] || g[1] != d[1] || out[0].shape != d)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad of shape ", g.ToString(),
          " does not fit data of shape ", d.ToString());
  const bool align = attrs.Params<BilinearResizeParam>().align_corners;
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    ResizeBackward<T>(d[0] * d[1], d[2], d[3], g[2], g[3], align, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
  });
}

// ------------------------------------------------------------------ AdaptiveAvgPooling2D
std::pair<int64_t, int64_t> PoolTo(const NodeAttrs& attrs) {
  const Shape& s = attrs.Params<AdaptivePoolParam>().output_size;
  std::pair<int64_t, int64_t> hw{1, 1};
  if (s.ndim() == 1) hw = {s[0], s[0]};
  else if (s.ndim() == 2) hw = {s[0], s[1]};
  else if (s.ndim() > 2)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': output_size must be one size or (height, width), got ",
          s.ToString());
  if (hw.first < 1 || hw.second < 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': output_size must be positive, got ", s.ToString());
  return hw;
}

bool PoolShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.known_ndim()) return false;
  CheckNCHW(attrs, d, "data");
  CheckSpatial(attrs, d);
  auto hw = PoolTo(attrs);
  AssignShape(attrs, out, 0, Shape({d[0], d[1], hw.first, hw.second}), "output");
  return d.is_known();
}

int64_t WindowStart(int64_t o, int64_t out, int64_t in) {
  return static_cast<int64_t>(std::floor(static_cast<double>(o * in) / static_cast<double>(out)));
}
int64_t WindowEnd(int64_t o, int64_t out, int64_t in) {
  return static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * in) / static_cast<double>(out)));
}

// forward: x (planes, H, W) -> y (planes, h, w); backward: the mean's gradient spread evenly.
template <typename T>
void AdaptivePool(int64_t planes, int64_t H, int64_t W, int64_t h, int64_t w, const T* src, T* dst, OpReq req,
                  bool backward) {
  using A = nn::Acc<T>;
  ParallelFor(planes, ItemGrain(H * W + h * w), [&](int64_t pb, int64_t pe) {
    std::vector<A> acc(backward ? static_cast<size_t>(H * W) : 0);
    for (int64_t pl = pb; pl < pe; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t i = 0; i < h; ++i) {
        const int64_t r0 = WindowStart(i, h, H), r1 = WindowEnd(i, h, H);
        for (int64_t j = 0; j < w; ++j) {
          const int64_t c0 = WindowStart(j, w, W), c1 = WindowEnd(j, w, W);
          const A count = static_cast<A>((r1 - r0) * (c1 - c0));
          if (!backward) {
            const T* x = src + pl * H * W;
            A sum = 0;
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t c = c0; c < c1; ++c) sum += static_cast<A>(x[r * W + c]);
            nn::Put(dst + (pl * h + i) * w + j, req, sum / count);
          } else {
            const A g = static_cast<A>(src[(pl * h + i) * w + j]) / count;
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t c = c0; c < c1; ++c) acc[static_cast<size_t>(r * W + c)] += g;
          }
        }
      }
      if (backward)
        for (int64_t k = 0; k < H * W; ++k) nn::Put(dst + pl * H * W + k, req, acc[static_cast<size_t>(k)]);
    }
  });
}

void PoolCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>& req,
                 const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[0].shape;
  const Shape& o = out[0].shape;
  WEFT_NN_FLOAT_SWITCH(attrs, in[0].dtype, T, {
    AdaptivePool<T>(d[0] * d[1], d[2], d[3], o[2], o[3], in[0].ptr<T>(), out[0].ptr<T>(), req[0], false);
  });
}

// _backward_contrib_AdaptiveAvgPooling2D: (out_grad, data) -> d data.
bool PoolBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[1];
  if (!d.is_known()) return false;
  CheckNCHW(attrs, d, "data");
  CheckSpatial(attrs, d);
  auto hw = PoolTo(attrs);
  AssignShape(attrs, in, 0, Shape({d[0], d[1], hw.first, hw.second}), "input");
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

void PoolBackwardCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[1].shape;
  auto hw = PoolTo(attrs);
  if (d.ndim() != 4 || in[0].shape != Shape({d[0], d[1], hw.first, hw.second}) || out[0].shape != d)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': out_grad of shape ", in[0].shape.ToString(),
          " does not fit data of shape ", d.ToString(), " and output_size ",
          attrs.Params<AdaptivePoolParam>().output_size.ToString());
  WEFT_NN_FLOAT_SWITCH(attrs, in[1].dtype, T, {
    AdaptivePool<T>(d[0] * d[1], d[2], d[3], hw.first, hw.second, in[0].ptr<T>(), out[0].ptr<T>(), req[0], true);
  });
}

bool BackwardTypeOfData(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  return SameFloatType(attrs, in, out);
}

}  // namespace

WEFT_REGISTER_OP(_contrib_BilinearResize2D)
    .Describe("Bilinear resizing of the height and width of NCHW data; the output size comes from mode (size, "
              "odd_scale, like, to_even_down, to_even_up, to_odd_down, to_odd_up).")
    .SetNumInputs([](const NodeAttrs& attrs) { return attrs.Params<BilinearResizeParam>().mode == "like" ? 2 : 1; })
    .AddArgument("data", "NDArray-or-Symbol", "Input data (n, c, h, w)")
    .AddArgument("like", "NDArray-or-Symbol", "With mode 'like': the array whose height and width to take")
    .SetParams<BilinearResizeParam>()
    .SetAttr<FInferShape>("FInferShape", ResizeShape)
    .SetAttr<FInferType>("FInferType", ResizeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ResizeCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> g{
          b.Op("_backward_contrib_BilinearResize2D", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
      if (a.inputs.size() > 1) g.push_back(b.Op("zeros_like", {a.inputs[1]}));
      return g;
    });

WEFT_REGISTER_OP(_backward_contrib_BilinearResize2D)
    .Describe("Gradient of _contrib_BilinearResize2D: (out_grad, data) -> d data.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .SetParams<BilinearResizeParam>()
    .SetAttr<FInferShape>("FInferShape", ResizeBackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardTypeOfData)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ResizeBackwardCompute);

WEFT_REGISTER_OP(_contrib_AdaptiveAvgPooling2D)
    .Describe("Average pooling of NCHW data to output_size (h, w): output cell (i, j) averages rows "
              "[floor(i * H / h), ceil((i + 1) * H / h)) and the columns likewise.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data (n, c, h, w)")
    .SetParams<AdaptivePoolParam>()
    .SetAttr<FInferShape>("FInferShape", PoolShape)
    .SetAttr<FInferType>("FInferType", ResizeType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PoolCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{
          b.Op("_backward_contrib_AdaptiveAvgPooling2D", {a.out_grads[0], a.inputs[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_contrib_AdaptiveAvgPooling2D)
    .Describe("Gradient of _contrib_AdaptiveAvgPooling2D: (out_grad, data) -> d data.")
    .SetNumInputs(2)
    .AddArgument("out_grad", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data (for its shape)")
    .SetParams<AdaptivePoolParam>()
    .SetAttr<FInferShape>("FInferShape", PoolBackwardShape)
    .SetAttr<FInferType>("FInferType", BackwardTypeOfData)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PoolBackwardCompute);

}  // namespace op
}  // namespace weft

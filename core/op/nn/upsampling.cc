// UpSampling with MXNet's parameters, on (N, C, H, W) data.
//
// 'nearest' takes num_args inputs; the output is H0*scale x W0*scale (input 0's size) and
// each input i is repeated by (output size / its size) along each spatial axis, which must
// divide evenly. multi_input_mode 'concat' stacks the results along the channels, 'sum'
// adds them (equal channel counts).
//
// 'bilinear' is MXNet's: a depthwise transposed convolution of the data with the second
// input, weight (C, 1, k, k), k = 2*scale - scale%2, stride scale and padding
// ceil((scale-1)/2), which makes the output exactly H*scale x W*scale. The weight is a
// learnable input (MXNet initialises it with the bilinear kernel) and gets a gradient.
#include <cmath>
#include <string>
#include <type_traits>

#include "core/op/op_util.h"
#include "core/op/nn/upsampling.h"

namespace weft {
namespace op {

WEFT_PARAM_SCHEMA(UpSamplingParam, s) {
  s.Field("scale", &UpSamplingParam::scale).Min(1).Describe("Up-sampling factor of each spatial axis.");
  s.Field("num_filter", &UpSamplingParam::num_filter)
      .Default(0)
      .Min(0)
      .Describe("'bilinear': the number of channels (0: taken from the data).");
  s.Field("sample_type", &UpSamplingParam::sample_type)
      .Choices({"nearest", "bilinear"})
      .Describe("Up-sampling method.");
  s.Field("multi_input_mode", &UpSamplingParam::multi_input_mode)
      .Default("concat")
      .Choices({"concat", "sum"})
      .Describe("'nearest' with several inputs: concatenate them along the channels or add them.");
  s.Field("num_args", &UpSamplingParam::num_args)
      .Min(1)
      .Describe("Number of inputs: the arrays to up-sample ('nearest') or 2, data and weight ('bilinear').");
  s.Field("workspace", &UpSamplingParam::workspace).Default(512).Min(0).Describe("Accepted for compatibility (MB).");
}

namespace {

bool IsBilinear(const NodeAttrs& attrs) { return attrs.Params<UpSamplingParam>().sample_type == "bilinear"; }

int NumUpInputs(const NodeAttrs& attrs) { return IsBilinear(attrs) ? 2 : attrs.Params<UpSamplingParam>().num_args; }

int Kernel(int scale) { return 2 * scale - scale % 2; }
int Padding(int scale) { return scale / 2; }  // = ceil((scale - 1) / 2)

void Check4D(const NodeAttrs& attrs, const Shape& s, size_t i) {
  if (s.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': ", InputName(attrs, i),
          " must be 4-D (N, C, H, W), got shape ", s.ToString());
}

// The output shape from the known input shapes (checks how they fit together).
Shape UpOutputShape(const NodeAttrs& attrs, const std::vector<Shape>& in, size_t first) {
  const auto& p = attrs.Params<UpSamplingParam>();
  const Shape& d0 = in[first];
  Check4D(attrs, d0, first);
  Shape out{d0[0], d0[1], d0[2] * p.scale, d0[3] * p.scale};
  if (IsBilinear(attrs)) {
    if (p.num_filter != 0 && p.num_filter != d0[1])
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': parameter 'num_filter' = ", p.num_filter,
            " must equal the number of channels of data ", d0.ToString(), " for 'bilinear'");
    return out;
  }
  out[1] = 0;
  for (size_t i = first; i < in.size(); ++i) {
    const Shape& s = in[i];
    Check4D(attrs, s, i);
    if (s[0] != d0[0])
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i - first, " has shape ", s.ToString(),
            " but input 0 has shape ", d0.ToString(), "; the batch sizes differ");
    if (s[2] == 0 || s[3] == 0 || out[2] % s[2] != 0 || out[3] % s[3] != 0)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input ", i - first, " of shape ", s.ToString(),
            " cannot be up-sampled to ", out[2], "x", out[3], " (input 0 ", d0.ToString(), " times scale ", p.scale,
            "): its spatial size must divide the output's");
    if (p.multi_input_mode == "sum") {
      if (s[1] != d0[1])
        Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': multi_input_mode 'sum' needs equal channels, but ",
              "input ", i - first, " has shape ", s.ToString(), " and input 0 ", d0.ToString());
      out[1] = d0[1];
    } else {
      out[1] += s[1];
    }
  }
  return out;
}

Shape WeightShape(const NodeAttrs& attrs, const Shape& data) {
  int k = Kernel(attrs.Params<UpSamplingParam>().scale);
  return Shape{data[1], 1, k, k};
}

bool UpSamplingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (IsBilinear(attrs)) {
    const auto& p = attrs.Params<UpSamplingParam>();
    if (p.num_args != 2)
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name,
            "': 'bilinear' takes 2 inputs (data, weight), got num_args=", p.num_args);
    if (!(*in)[0].is_known()) return false;
    Check4D(attrs, (*in)[0], 0);
    const Shape want = WeightShape(attrs, (*in)[0]);
    const Shape& got = (*in)[1];
    if (got.known_ndim() && got != want)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': input 'weight' has shape ", got.ToString(),
            " but data of shape ", (*in)[0].ToString(), " with scale=", p.scale, " needs ", want.ToString(),
            " (channels, 1, 2*scale - scale%2, 2*scale - scale%2)");
    AssignShape(attrs, in, 1, want, "input");
    AssignShape(attrs, out, 0, UpOutputShape(attrs, *in, 0), "output");
    return true;
  }
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  AssignShape(attrs, out, 0, UpOutputShape(attrs, *in, 0), "output");
  return true;
}

// ---------------------------------------------------------------- nearest
// out[n, c0 + c, y, x] (op)= in[n, c, y / sy, x / sx] for one input.
template <typename T>
void NearestForward(const TBlob& x, const TBlob& y, int64_t c0, bool add) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OC = y.shape[1], OH = y.shape[2], OW = y.shape[3];
  const int64_t sy = OH / H, sx = OW / W;
  const T* xp = x.ptr<T>();
  T* yp = y.ptr<T>();
  ParallelFor(N * C * OH, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(OW, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t oy = r % OH, nc = r / OH, c = nc % C, n = nc / C;
      const T* src = xp + (nc * H + oy / sy) * W;
      T* dst = yp + ((n * OC + c0 + c) * OH + oy) * OW;
      if (add) {
        for (int64_t ox = 0; ox < OW; ++ox) dst[ox] = static_cast<T>(dst[ox] + src[ox / sx]);
      } else {
        for (int64_t ox = 0; ox < OW; ++ox) dst[ox] = src[ox / sx];
      }
    }
  });
}

// dx[n, c, iy, ix] (op)= sum of g[n, c0 + c] over the block that (iy, ix) was copied to.
template <typename T>
void NearestBackward(const TBlob& g, const TBlob& dx, int64_t c0, OpReq req) {
  using A = typename AccType<T>::type;
  const int64_t N = dx.shape[0], C = dx.shape[1], H = dx.shape[2], W = dx.shape[3];
  const int64_t OC = g.shape[1], OH = g.shape[2], OW = g.shape[3];
  const int64_t sy = OH / H, sx = OW / W;
  const T* gp = g.ptr<T>();
  T* dp = dx.ptr<T>();
  ParallelFor(N * C * H, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(OW * sy, 1)), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(W));
    for (int64_t r = b; r < e; ++r) {
      int64_t iy = r % H, nc = r / H, c = nc % C, n = nc / C;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = 0; k < sy; ++k) {
        const T* src = gp + ((n * OC + c0 + c) * OH + iy * sy + k) * OW;
        for (int64_t ox = 0; ox < OW; ++ox) acc[ox / sx] += static_cast<A>(src[ox]);
      }
      T* dst = dp + r * W;
      for (int64_t ix = 0; ix < W; ++ix) Store(dst + ix, req, acc[ix]);
    }
  });
}

// ---------------------------------------------------------------- bilinear
// The transposed depthwise convolution: input (iy, ix) contributes to output
// (iy*s - pad + ky, ix*s - pad + kx) with weight w[c, 0, ky, kx].
struct DeconvGeom {
  int64_t N, C, H, W, OH, OW, k, s, pad;
};

DeconvGeom Geom(const NodeAttrs& attrs, const Shape& data) {
  int scale = attrs.Params<UpSamplingParam>().scale;
  return DeconvGeom{data[0], data[1], data[2], data[3], data[2] * scale, data[3] * scale, Kernel(scale), scale,
                    Padding(scale)};
}

template <typename T>
void BilinearForward(const DeconvGeom& g, const T* x, const T* w, T* y, OpReq req) {
  using A = typename AccType<T>::type;
  const int64_t out_plane = g.OH * g.OW;
  const int64_t grain = std::max<int64_t>(1, kElemGrain / std::max<int64_t>(out_plane * 4, 1));
  ParallelFor(g.N * g.C, grain, [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(out_plane));
    for (int64_t nc = b; nc < e; ++nc) {
      const T* xs = x + nc * g.H * g.W;
      const T* ws = w + (nc % g.C) * g.k * g.k;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t iy = 0; iy < g.H; ++iy)
        for (int64_t ky = 0; ky < g.k; ++ky) {
          int64_t oy = iy * g.s - g.pad + ky;
          if (oy < 0 || oy >= g.OH) continue;
          A* arow = acc.data() + oy * g.OW;
          for (int64_t ix = 0; ix < g.W; ++ix) {
            A v = static_cast<A>(xs[iy * g.W + ix]);
            for (int64_t kx = 0; kx < g.k; ++kx) {
              int64_t ox = ix * g.s - g.pad + kx;
              if (ox >= 0 && ox < g.OW) arow[ox] += v * static_cast<A>(ws[ky * g.k + kx]);
            }
          }
        }
      T* ys = y + nc * out_plane;
      for (int64_t i = 0; i < out_plane; ++i) Store(ys + i, req, acc[i]);
    }
  });
}

// dx[iy, ix] = sum over (ky, kx) of g[oy, ox] * w[ky, kx]; dw[c, ky, kx] = sum over n,
// iy, ix of g[n, c, oy, ox] * x[n, c, iy, ix].
template <typename T>
void BilinearBackward(const DeconvGeom& g, const T* gy, const T* x, const T* w, T* dx, OpReq req_x, T* dw,
                      OpReq req_w) {
  using A = typename AccType<T>::type;
  const int64_t out_plane = g.OH * g.OW, in_plane = g.H * g.W, kk = g.k * g.k;
  auto for_taps = [&](int64_t nc, auto&& f) {
    const T* gs = gy + nc * out_plane;
    for (int64_t iy = 0; iy < g.H; ++iy)
      for (int64_t ky = 0; ky < g.k; ++ky) {
        int64_t oy = iy * g.s - g.pad + ky;
        if (oy < 0 || oy >= g.OH) continue;
        for (int64_t ix = 0; ix < g.W; ++ix)
          for (int64_t kx = 0; kx < g.k; ++kx) {
            int64_t ox = ix * g.s - g.pad + kx;
            if (ox >= 0 && ox < g.OW) f(iy * g.W + ix, ky * g.k + kx, static_cast<A>(gs[oy * g.OW + ox]));
          }
      }
  };
  if (req_x != OpReq::kNullOp) {
    const int64_t grain = std::max<int64_t>(1, kElemGrain / std::max<int64_t>(out_plane * 4, 1));
    ParallelFor(g.N * g.C, grain, [&](int64_t b, int64_t e) {
      std::vector<A> acc(static_cast<size_t>(in_plane));
      for (int64_t nc = b; nc < e; ++nc) {
        const T* ws = w + (nc % g.C) * kk;
        std::fill(acc.begin(), acc.end(), A(0));
        for_taps(nc, [&](int64_t i, int64_t t, A gv) { acc[i] += gv * static_cast<A>(ws[t]); });
        T* ds = dx + nc * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) Store(ds + i, req_x, acc[i]);
      }
    });
  }
  if (req_w != OpReq::kNullOp) {
    ParallelFor(g.C, 1, [&](int64_t b, int64_t e) {
      std::vector<A> acc(static_cast<size_t>(kk));
      for (int64_t c = b; c < e; ++c) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t n = 0; n < g.N; ++n) {
          const T* xs = x + (n * g.C + c) * in_plane;
          for_taps(n * g.C + c, [&](int64_t i, int64_t t, A gv) { acc[t] += gv * static_cast<A>(xs[i]); });
        }
        for (int64_t t = 0; t < kk; ++t) Store(dw + c * kk + t, req_w, acc[t]);
      }
    });
  }
}

// ---------------------------------------------------------------- compute functions
void UpSamplingCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (IsBilinear(attrs)) {
    DeconvGeom g = Geom(attrs, in[0].shape);
    WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "' ('bilinear'): input 'data'", {
      BilinearForward(g, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]);
    });
    return;
  }
  const bool sum = attrs.Params<UpSamplingParam>().multi_input_mode == "sum";
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    int64_t c0 = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      // With 'sum' the first input writes (or adds, for kAddTo) and the rest add.
      bool add = req[0] == OpReq::kAddTo || (sum && i > 0);
      NearestForward<T>(in[i], out[0], c0, add);
      if (!sum) c0 += in[i].shape[1];
    }
  });
}

// Inputs: ograd, then the forward inputs. Outputs: one gradient per forward input.
void UpSamplingBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (IsBilinear(attrs)) {
    DeconvGeom g = Geom(attrs, in[1].shape);
    WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "Operator '" + attrs.op->name + "' ('bilinear'): input 'ograd'", {
      BilinearBackward(g, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), req[0], out[1].ptr<T>(),
                       req[1]);
    });
    return;
  }
  const bool sum = attrs.Params<UpSamplingParam>().multi_input_mode == "sum";
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    int64_t c0 = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': no gradient for dtype bool");
      } else if (req[i] != OpReq::kNullOp) {
        NearestBackward<T>(in[0], out[i], c0, req[i]);
      }
      if (!sum) c0 += out[i].shape[1];
    }
  });
}

bool UpSamplingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  std::vector<Shape> fwd_in(in->begin() + 1, in->end()), fwd_out{(*in)[0]};
  if (!UpSamplingShape(attrs, &fwd_in, &fwd_out)) return false;
  AssignShape(attrs, in, 0, fwd_out[0], "input");
  for (size_t i = 0; i < fwd_in.size(); ++i) {
    AssignShape(attrs, in, i + 1, fwd_in[i], "input");
    AssignShape(attrs, out, i, fwd_in[i], "output");
  }
  return true;
}

}  // namespace

WEFT_REGISTER_OP(UpSampling)
    .Describe(
        "Up-samples (N, C, H, W) data by `scale` along H and W: 'nearest' repeats elements (several inputs are "
        "concatenated along the channels or summed); 'bilinear' is a depthwise transposed convolution with the "
        "weight input (C, 1, 2*scale - scale%2, same), stride scale and padding ceil((scale-1)/2).")
    .SetNumInputs(NumUpInputs)
    .SetKeyVarNumArgs("num_args")
    .AddArgument("data", "NDArray-or-Symbol[]", "The arrays to up-sample ('nearest') or data and weight ('bilinear')")
    .SetParams<UpSamplingParam>()
    .SetAttr<FInferShape>("FInferShape", UpSamplingShape)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", UpSamplingCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> ins = {a.out_grads[0]};
      ins.insert(ins.end(), a.inputs.begin(), a.inputs.end());
      return b.Call("_backward_UpSampling", ins, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_UpSampling)
    .Describe("Gradients of UpSampling with respect to each input (and the weight for 'bilinear').")
    .SetNumInputs([](const NodeAttrs& attrs) { return NumUpInputs(attrs) + 1; })
    .SetNumOutputs(NumUpInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol[]", "The forward inputs")
    .SetParams<UpSamplingParam>()
    .SetAttr<FInferShape>("FInferShape", UpSamplingBackwardShape)
    .SetAttr<FCompute>("FCompute<cpu>", UpSamplingBackward);

}  // namespace op
}  // namespace weft

// _contrib_DeformableConvolution (Dai et al., 2017) and _contrib_ModulatedDeformableConvolution
// (DCNv2, Zhu et al., 2018): 2-D convolutions whose every kernel tap reads the input at a
// learnt fractional displacement, bilinearly interpolated, and (modulated) scaled by a
// learnt mask.
//
// Inputs data (n, c, h, w), offset (n, dg * 2 * kh * kw, oh, ow), for the modulated form
// mask (n, dg * kh * kw, oh, ow), weight (num_filter, c / num_group, kh, kw) and, unless
// no_bias, bias (num_filter,). The data channels split into dg = num_deformable_group
// groups; group d reads offset channels [d * 2K, (d + 1) * 2K) (K = kh * kw): channel
// 2 * (i * kw + j) displaces tap (i, j) along y, the next one along x.
//
// The two forms interpolate differently near the border, as MXNet's do (and the original
// implementations before it): the plain form reads only points inside [0, h) x [0, w) and
// holds the last row (column) for points beyond it; the modulated form reads points in
// (-1, h) x (-1, w) with the pixels outside the map taken as zeros.
//
// Each sample is im2col with sampled taps, then one Gemm per group (linalg/gemm.h: oneDNN's
// GEMM for float32); the gradients are the exact derivatives of that forward.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/op/linalg/gemm.h"
#include "core/op/nn/conv_common.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

template <bool kModulated>
struct DeformConvParamT {
  Shape kernel, stride, dilate, pad;
  int num_filter = 0;
  int num_group = 1;
  int num_deformable_group = 1;
  int64_t workspace = 1024;
  bool no_bias = false;
  int im2col_step = 64;  // the modulated form's only
  std::string layout;
};
using DeformableConvolutionParam = DeformConvParamT<false>;
using ModulatedDeformableConvolutionParam = DeformConvParamT<true>;

template <bool kModulated>
void DeclareDeformConvFields(ParamSchema<DeformConvParamT<kModulated>>& s) {
  using P = DeformConvParamT<kModulated>;
  s.Field("kernel", &P::kernel).Describe("Convolution kernel size: (h, w).");
  s.Field("stride", &P::stride).Default(Shape::Scalar()).Describe("Stride: (h, w); 1 per axis when empty.");
  s.Field("dilate", &P::dilate).Default(Shape::Scalar()).Describe("Dilation: (h, w); 1 per axis when empty.");
  s.Field("pad", &P::pad).Default(Shape::Scalar()).Describe("Zero padding on both sides: (h, w); 0 when empty.");
  s.Field("num_filter", &P::num_filter).Range(1, 100000).Describe("Number of output channels.");
  s.Field("num_group", &P::num_group).Default(1).Range(1, 100000).Describe("Number of groups.");
  s.Field("num_deformable_group", &P::num_deformable_group)
      .Default(1)
      .Range(1, 100000)
      .Describe("Number of groups of data channels that share one set of offsets.");
  s.Field("workspace", &P::workspace).Default(1024).Min(0).Describe("Workspace limit in MB (unused on the CPU).");
  s.Field("no_bias", &P::no_bias).Default(false).Describe("Whether to leave out the bias input.");
  if (kModulated)
    s.Field("im2col_step", &P::im2col_step)
        .Default(64)
        .Range(1, 1 << 30)
        .Describe("Images per im2col pass on the GPU; a batch larger than it must be a multiple of it.");
  s.Field("layout", &P::layout)
      .Default("None")
      .Choices({"None", "NCW", "NCHW", "NCDHW"})
      .Describe("Data layout; only NCHW (the default for a 2-D kernel) is supported.");
}

WEFT_PARAM_SCHEMA(DeformableConvolutionParam, s) { DeclareDeformConvFields<false>(s); }
WEFT_PARAM_SCHEMA(ModulatedDeformableConvolutionParam, s) { DeclareDeformConvFields<true>(s); }

namespace {

struct DeformGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;    // data
  int64_t f = 0, g = 1, dg = 1;          // filters, groups, deformable groups
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;
  int64_t K() const { return kh * kw; }
  int64_t O() const { return oh * ow; }
  int64_t I() const { return h * w; }
};

// The window parameters, checked with the layout and the rank of data (whose dims may
// still be unknown).
template <bool kModulated>
WindowAxes CheckedWindow(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<DeformConvParamT<kModulated>>();
  const std::string& op = attrs.op->name;
  WindowAxes wa = ParseWindow(op, p.kernel, p.stride, &p.dilate, p.pad);
  if (wa.nd != 2)
    Throw(ErrorKind::kUnsupported, "Operator '", op, "': only 2-D kernels (h, w) are supported, got kernel ",
          p.kernel.ToString());
  CheckLayoutAndRank(op, p.layout, 2, data);
  return wa;
}

// The geometry on a known data shape; throws naming the operator and what does not fit.
template <bool kModulated>
DeformGeom GeomOf(const NodeAttrs& attrs, const Shape& data) {
  const auto& p = attrs.Params<DeformConvParamT<kModulated>>();
  const std::string& op = attrs.op->name;
  WindowAxes wa = CheckedWindow<kModulated>(attrs, data);
  DeformGeom g;
  g.n = data[0], g.c = data[1], g.h = data[2], g.w = data[3];
  g.f = p.num_filter, g.g = p.num_group, g.dg = p.num_deformable_group;
  g.kh = wa.k[0], g.kw = wa.k[1], g.sh = wa.s[0], g.sw = wa.s[1];
  g.dh = wa.d[0], g.dw = wa.d[1], g.ph = wa.p[0], g.pw = wa.p[1];
  if (g.f % g.g != 0)
    Throw(ErrorKind::kValue, "Operator '", op, "': num_filter (", g.f, ") is not divisible by num_group (", g.g, ")");
  if (g.c % g.g != 0)
    Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", data.ToString(), " whose ", g.c,
          " channels are not divisible by num_group (", g.g, ")");
  if (g.c % g.dg != 0)
    Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", data.ToString(), " whose ", g.c,
          " channels are not divisible by num_deformable_group (", g.dg, ")");
  if (kModulated && g.f % g.dg != 0)
    Throw(ErrorKind::kValue, "Operator '", op, "': num_filter (", g.f, ") is not divisible by num_deformable_group (",
          g.dg, ")");
  if (kModulated) {
    const int64_t step = p.im2col_step;
    if (g.n > step && g.n % step != 0)
      Throw(ErrorKind::kShape, "Operator '", op, "': a batch of ", g.n, " is larger than im2col_step (", step,
            ") and not a multiple of it");
  }
  const int64_t ext_h = g.dh * (g.kh - 1) + 1, ext_w = g.dw * (g.kw - 1) + 1;
  if (ext_h > g.h + 2 * g.ph || ext_w > g.w + 2 * g.pw)
    Throw(ErrorKind::kShape, "Operator '", op, "': kernel (", g.kh, ",", g.kw, ") of extent (", ext_h, ",", ext_w,
          ") is larger than the padded input (", g.h + 2 * g.ph, ",", g.w + 2 * g.pw, ") (data shape ",
          data.ToString(), ")");
  g.oh = (g.h + 2 * g.ph - ext_h) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - ext_w) / g.sw + 1;
  return g;
}

Shape OffsetShape(const DeformGeom& g) { return Shape{g.n, g.dg * 2 * g.K(), g.oh, g.ow}; }
Shape MaskShape(const DeformGeom& g) { return Shape{g.n, g.dg * g.K(), g.oh, g.ow}; }
Shape WeightShape(const DeformGeom& g) { return Shape{g.f, g.c / g.g, g.kh, g.kw}; }
Shape OutShape(const DeformGeom& g) { return Shape{g.n, g.f, g.oh, g.ow}; }

// Input positions: data, offset, [mask], weight, [bias].
template <bool kModulated>
bool DeformConvShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& data = (*in)[0];
  if (!data.known_ndim()) return false;
  CheckedWindow<kModulated>(attrs, data);
  if (!data.is_known()) return false;
  DeformGeom g = GeomOf<kModulated>(attrs, data);
  size_t i = 1;
  AssignShape(attrs, in, i++, OffsetShape(g), "input");
  if (kModulated) AssignShape(attrs, in, i++, MaskShape(g), "input");
  AssignShape(attrs, in, i++, WeightShape(g), "input");
  if (!attrs.Params<DeformConvParamT<kModulated>>().no_bias) AssignShape(attrs, in, i, Shape{g.f}, "input");
  AssignShape(attrs, out, 0, OutShape(g), "output");
  return true;
}

// One kernel tap of one output cell: the pixels its bilinear sample reads (n of them, at
// most four), their weights and the weights' derivatives along y and x.
struct Tap {
  int n = 0;
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
  double wy[4] = {0, 0, 0, 0};
  double wx[4] = {0, 0, 0, 0};
};

// The tap at (y, x) of an H x W map, by the plain form's rule (zero_outside false) or the
// modulated form's (true); see the head of the file.
inline Tap TapAt(double y, double x, int64_t H, int64_t W, bool zero_outside) {
  Tap t;
  const double fh = static_cast<double>(H), fw = static_cast<double>(W);
  if (zero_outside ? !(y > -1 && x > -1 && y < fh && x < fw) : !(y >= 0 && x >= 0 && y < fh && x < fw)) return t;
  int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), ky = 1, kx = 1;
  if (!zero_outside) {
    // Beyond the last row (column) the sample holds it: no weight on a next one, no slope.
    if (y0 >= H - 1) y0 = y1 = H - 1, ly = 0, ky = 0;
    if (x0 >= W - 1) x0 = x1 = W - 1, lx = 0, kx = 0;
  }
  const int64_t ys[4] = {y0, y0, y1, y1}, xs[4] = {x0, x1, x0, x1};
  const double w[4] = {(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx};
  const double wy[4] = {-ky * (1 - lx), -ky * lx, ky * (1 - lx), ky * lx};
  const double wx[4] = {-kx * (1 - ly), kx * (1 - ly), -kx * ly, kx * ly};
  for (int k = 0; k < 4; ++k) {
    if (ys[k] < 0 || ys[k] >= H || xs[k] < 0 || xs[k] >= W) continue;  // a zero pixel
    t.pos[t.n] = ys[k] * W + xs[k];
    t.w[t.n] = w[k], t.wy[t.n] = wy[k], t.wx[t.n] = wx[k];
    ++t.n;
  }
  return t;
}

// The taps of one sample, (dg, K, O) row-major, from its offsets (dg * 2K, O).
template <typename T>
void BuildTaps(const DeformGeom& g, bool zero_outside, const T* off, std::vector<Tap>* taps) {
  const int64_t K = g.K(), O = g.O();
  taps->resize(static_cast<size_t>(g.dg * K * O));
  ParallelFor(g.dg * K, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(O, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t d = row / K, k = row % K, i = k / g.kw, j = k % g.kw;
      const T* oy = off + (d * 2 * K + 2 * k) * O;
      const T* ox = oy + O;
      Tap* dst = taps->data() + row * O;
      for (int64_t yo = 0; yo < g.oh; ++yo)
        for (int64_t xo = 0; xo < g.ow; ++xo) {
          const int64_t o = yo * g.ow + xo;
          const double y = static_cast<double>(yo * g.sh - g.ph + i * g.dh) + static_cast<double>(oy[o]);
          const double x = static_cast<double>(xo * g.sw - g.pw + j * g.dw) + static_cast<double>(ox[o]);
          dst[o] = TapAt(y, x, g.h, g.w, zero_outside);
        }
    }
  });
}

// The taps laid out for the sampled im2col: per tap row, corner-major arrays of O pixel
// indices and weights, so the loop over output cells has no branch. A
// corner a sample does not read points past the channel's last pixel, at a zero the
// im2col places there (a weight of 0 on a real pixel would still carry its NaN or Inf).
struct FlatTaps {
  std::vector<int64_t> pos;  // [(tap_row * 4 + corner) * O + o]
  std::vector<double> w;
};

void FlattenTaps(const DeformGeom& g, const std::vector<Tap>& taps, FlatTaps* f) {
  const int64_t O = g.O(), rows = g.dg * g.K(), I = g.I();
  f->pos.resize(static_cast<size_t>(rows * 4 * O));
  f->w.resize(f->pos.size());
  ParallelFor(rows, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(O, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row)
      for (int q = 0; q < 4; ++q) {
        int64_t* pos = f->pos.data() + (row * 4 + q) * O;
        double* w = f->w.data() + (row * 4 + q) * O;
        const Tap* t = taps.data() + row * O;
        for (int64_t o = 0; o < O; ++o) {
          pos[o] = q < t[o].n ? t[o].pos[q] : I;
          w[o] = q < t[o].n ? t[o].w[q] : 0.0;
        }
      }
  });
}

// col (c * K, O) of one sample: row (channel, tap) holds the sampled input, times the mask
// (dg * K, O) when there is one.
template <typename T>
void DeformIm2Col(const DeformGeom& g, const FlatTaps& ft, const T* x, const T* mask, T* col) {
  const int64_t K = g.K(), O = g.O(), I = g.I(), per_dg = g.c / g.dg;
  ParallelFor(g.c, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(K * O, 1)), [&](int64_t b, int64_t e) {
    // The thread's channels, each followed by the zero that unread corners point at.
    std::vector<T> planes(static_cast<size_t>((e - b) * (I + 1)));
    for (int64_t ch = b; ch < e; ++ch) {
      T* dst = planes.data() + (ch - b) * (I + 1);
      std::copy(x + ch * I, x + (ch + 1) * I, dst);
      dst[I] = T(0);
    }
    // Tap-major: one tap's arrays are read for every channel while they are in cache.
    for (int64_t k = 0; k < K; ++k)
      for (int64_t ch = b; ch < e; ++ch) {
        const int64_t tap_row = (ch / per_dg) * K + k;
        const int64_t* p = ft.pos.data() + tap_row * 4 * O;
        const double* w = ft.w.data() + tap_row * 4 * O;
        const T* img = planes.data() + (ch - b) * (I + 1);
        const T* m = mask != nullptr ? mask + tap_row * O : nullptr;
        T* dst = col + (ch * K + k) * O;
        for (int64_t o = 0; o < O; ++o) {
          double v = w[o] * static_cast<double>(img[p[o]]) + w[O + o] * static_cast<double>(img[p[O + o]]) +
                     w[2 * O + o] * static_cast<double>(img[p[2 * O + o]]) +
                     w[3 * O + o] * static_cast<double>(img[p[3 * O + o]]);
          if (m != nullptr) v *= static_cast<double>(m[o]);
          dst[o] = static_cast<T>(v);
        }
      }
  });
}

template <typename T>
void DeformForward(const char* op, const DeformGeom& g, bool modulated, const T* x, const T* off, const T* mask,
                   const T* w, const T* bias, T* y, OpReq req) {
  const int64_t K = g.K(), O = g.O(), cg = g.c / g.g, fg = g.f / g.g;
  std::vector<Tap> taps;
  FlatTaps flat;
  std::vector<T> col(static_cast<size_t>(g.c * K * O));
  for (int64_t n = 0; n < g.n; ++n) {
    BuildTaps(g, modulated, off + n * g.dg * 2 * K * O, &taps);
    FlattenTaps(g, taps, &flat);
    DeformIm2Col(g, flat, x + n * g.c * g.I(), modulated ? mask + n * g.dg * K * O : nullptr, col.data());
    for (int64_t gi = 0; gi < g.g; ++gi)
      Gemm(DTypeOf<T>::value, fg, O, cg * K, GemmOperand{w + gi * fg * cg * K, cg * K, 0, false},
           GemmOperand{col.data() + gi * cg * K * O, O, 0, false}, req == OpReq::kAddTo ? 1.0 : 0.0,
           y + (n * g.f + gi * fg) * O, O, 0, 1, op);
  }
  if (bias != nullptr) AddBias(DTypeOf<T>::value, y, bias, g.n, g.f, O);
}

// The gradients' destinations and requests; null pointers for those not wanted.
template <typename T>
struct DeformGrads {
  T* data = nullptr;
  T* offset = nullptr;
  T* mask = nullptr;
  T* weight = nullptr;
  T* bias = nullptr;
  OpReq req_data = OpReq::kNullOp, req_offset = OpReq::kNullOp, req_mask = OpReq::kNullOp;
  OpReq req_weight = OpReq::kNullOp, req_bias = OpReq::kNullOp;
};

template <typename T>
void DeformBackward(const char* op, const DeformGeom& g, bool modulated, const T* dy, const T* x, const T* off,
                    const T* mask, const T* w, const DeformGrads<T>& gr) {
  const int64_t K = g.K(), O = g.O(), cg = g.c / g.g, fg = g.f / g.g, per_dg = g.c / g.dg, I = g.I();
  const DType dt = DTypeOf<T>::value;
  if (gr.req_data != OpReq::kNullOp && gr.req_data != OpReq::kAddTo) std::fill_n(gr.data, g.n * g.c * I, T(0));
  const bool want_coords = gr.req_offset != OpReq::kNullOp || (modulated && gr.req_mask != OpReq::kNullOp);
  const bool want_cols = gr.req_data != OpReq::kNullOp || want_coords;
  std::vector<Tap> taps;
  FlatTaps flat;
  std::vector<T> col(static_cast<size_t>(g.c * K * O));
  for (int64_t n = 0; n < g.n; ++n) {
    const T* xn = x + n * g.c * I;
    const T* mn = modulated ? mask + n * g.dg * K * O : nullptr;
    BuildTaps(g, modulated, off + n * g.dg * 2 * K * O, &taps);
    if (want_cols) {
      // col = the gradient of the sampled columns: weight^T times the output gradient.
      for (int64_t gi = 0; gi < g.g; ++gi)
        Gemm(dt, cg * K, O, fg, GemmOperand{w + gi * fg * cg * K, cg * K, 0, true},
             GemmOperand{dy + (n * g.f + gi * fg) * O, O, 0, false}, 0.0, col.data() + gi * cg * K * O, O, 0, 1, op);
      if (gr.req_data != OpReq::kNullOp) {
        T* gx = gr.data + n * g.c * I;
        // Channels own disjoint planes of the gradient, so they split across threads.
        ParallelFor(g.c, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(K * O, 1)), [&](int64_t b, int64_t e) {
          for (int64_t ch = b; ch < e; ++ch) {
            T* plane = gx + ch * I;
            for (int64_t k = 0; k < K; ++k) {
              const int64_t tap_row = (ch / per_dg) * K + k;
              const Tap* t = taps.data() + tap_row * O;
              const T* src = col.data() + (ch * K + k) * O;
              for (int64_t o = 0; o < O; ++o) {
                double v = static_cast<double>(src[o]);
                if (mn != nullptr) v *= static_cast<double>(mn[tap_row * O + o]);
                for (int q = 0; q < t[o].n; ++q)
                  plane[t[o].pos[q]] = static_cast<T>(static_cast<double>(plane[t[o].pos[q]]) + v * t[o].w[q]);
              }
            }
          }
        });
      }
      if (want_coords) {
        T* goff = gr.offset != nullptr ? gr.offset + n * g.dg * 2 * K * O : nullptr;
        T* gmask = modulated && gr.mask != nullptr ? gr.mask + n * g.dg * K * O : nullptr;
        ParallelFor(g.dg * K, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(per_dg * O, 1)), [&](int64_t b, int64_t e) {
          std::vector<double> sy(static_cast<size_t>(O)), sx(static_cast<size_t>(O)), sm(static_cast<size_t>(O));
          for (int64_t tap_row = b; tap_row < e; ++tap_row) {
            const int64_t d = tap_row / K, k = tap_row % K;
            std::fill(sy.begin(), sy.end(), 0.0);
            std::fill(sx.begin(), sx.end(), 0.0);
            std::fill(sm.begin(), sm.end(), 0.0);
            const Tap* t = taps.data() + tap_row * O;
            for (int64_t ch = d * per_dg; ch < (d + 1) * per_dg; ++ch) {
              const T* img = xn + ch * I;
              const T* src = col.data() + (ch * K + k) * O;
              for (int64_t o = 0; o < O; ++o) {
                const double gc = static_cast<double>(src[o]);
                double vy = 0, vx = 0, v = 0;
                for (int q = 0; q < t[o].n; ++q) {
                  const double px = static_cast<double>(img[t[o].pos[q]]);
                  vy += t[o].wy[q] * px, vx += t[o].wx[q] * px, v += t[o].w[q] * px;
                }
                sy[o] += gc * vy, sx[o] += gc * vx, sm[o] += gc * v;
              }
            }
            for (int64_t o = 0; o < O; ++o) {
              const double m = mn != nullptr ? static_cast<double>(mn[tap_row * O + o]) : 1.0;
              if (goff != nullptr && gr.req_offset != OpReq::kNullOp) {
                Store(goff + (d * 2 * K + 2 * k) * O + o, gr.req_offset, sy[o] * m);
                Store(goff + (d * 2 * K + 2 * k + 1) * O + o, gr.req_offset, sx[o] * m);
              }
              if (gmask != nullptr && gr.req_mask != OpReq::kNullOp) Store(gmask + tap_row * O + o, gr.req_mask, sm[o]);
            }
          }
        });
      }
    }
    if (gr.req_weight != OpReq::kNullOp) {
      FlattenTaps(g, taps, &flat);
      DeformIm2Col(g, flat, xn, mn, col.data());
      const double beta = n == 0 && gr.req_weight != OpReq::kAddTo ? 0.0 : 1.0;
      for (int64_t gi = 0; gi < g.g; ++gi)
        Gemm(dt, fg, cg * K, O, GemmOperand{dy + (n * g.f + gi * fg) * O, O, 0, false},
             GemmOperand{col.data() + gi * cg * K * O, O, 0, true}, beta, gr.weight + gi * fg * cg * K, cg * K, 0, 1,
             op);
    }
  }
  if (g.n == 0 && gr.req_weight != OpReq::kNullOp && gr.req_weight != OpReq::kAddTo)
    std::fill_n(gr.weight, g.f * cg * K, T(0));
  if (gr.req_bias != OpReq::kNullOp) BiasGrad(dt, dy, gr.bias, gr.req_bias, g.n, g.f, O);
}

template <bool kModulated>
void DeformConvCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<DeformConvParamT<kModulated>>();
  DeformGeom g = GeomOf<kModulated>(attrs, in[0].shape);
  const size_t wi = kModulated ? 3 : 2;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    DeformForward<T>(attrs.op->name.c_str(), g, kModulated, in[0].ptr<T>(), in[1].ptr<T>(),
                     kModulated ? in[2].ptr<T>() : nullptr, in[wi].ptr<T>(), p.no_bias ? nullptr : in[wi + 1].ptr<T>(),
                     out[0].ptr<T>(), req[0]);
  });
}

// Inputs: ograd, data, offset, [mask], weight. Outputs: the gradients of data, offset,
// [mask], weight and (unless no_bias) bias.
template <bool kModulated>
bool DeformConvBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& data = (*in)[1];
  if (!data.known_ndim()) return false;
  CheckedWindow<kModulated>(attrs, data);
  if (!data.is_known()) return false;
  DeformGeom g = GeomOf<kModulated>(attrs, data);
  std::vector<Shape> fwd = {OffsetShape(g)};
  if (kModulated) fwd.push_back(MaskShape(g));
  fwd.push_back(WeightShape(g));
  AssignShape(attrs, in, 0, OutShape(g), "input");
  AssignShape(attrs, out, 0, data, "output");
  for (size_t i = 0; i < fwd.size(); ++i) {
    AssignShape(attrs, in, i + 2, fwd[i], "input");
    AssignShape(attrs, out, i + 1, fwd[i], "output");
  }
  if (!attrs.Params<DeformConvParamT<kModulated>>().no_bias) AssignShape(attrs, out, fwd.size() + 1, Shape{g.f}, "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return true;
}

template <bool kModulated>
void DeformConvBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<DeformConvParamT<kModulated>>();
  DeformGeom g = GeomOf<kModulated>(attrs, in[1].shape);
  const size_t wi = kModulated ? 4 : 3;  // the weight among the inputs; its gradient is output wi - 1
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    DeformGrads<T> gr;
    gr.data = out[0].ptr<T>(), gr.req_data = req[0];
    gr.offset = out[1].ptr<T>(), gr.req_offset = req[1];
    if (kModulated) gr.mask = out[2].ptr<T>(), gr.req_mask = req[2];
    gr.weight = out[wi - 1].ptr<T>(), gr.req_weight = req[wi - 1];
    if (!p.no_bias) gr.bias = out[wi].ptr<T>(), gr.req_bias = req[wi];
    DeformBackward<T>(attrs.op->name.c_str(), g, kModulated, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(),
                      kModulated ? in[3].ptr<T>() : nullptr, in[wi].ptr<T>(), gr);
  });
}

template <bool kModulated>
std::vector<GradValue> DeformConvGrad(GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
  std::vector<GradValue> ins = {a.out_grads[0], a.inputs[0], a.inputs[1], a.inputs[2]};
  if (kModulated) ins.push_back(a.inputs[3]);
  return b.Call(kModulated ? "_backward_ModulatedDeformableConvolution" : "_backward_DeformableConvolution", ins,
                attrs.dict);
}

int DeformConvInputs(const NodeAttrs& attrs) { return attrs.Params<DeformableConvolutionParam>().no_bias ? 3 : 4; }
int ModulatedConvInputs(const NodeAttrs& attrs) {
  return attrs.Params<ModulatedDeformableConvolutionParam>().no_bias ? 4 : 5;
}

}  // namespace

WEFT_REGISTER_OP(_contrib_DeformableConvolution)
    .Describe(
        "2-D deformable convolution (https://arxiv.org/abs/1703.06211): a convolution whose tap (i, j) at output "
        "cell (y, x) reads data at (y * stride - pad + i * dilate + dy, x * stride - pad + j * dilate + dx), "
        "bilinearly interpolated, (dy, dx) taken from offset. Shapes: data (n, c, h, w), offset (n, "
        "num_deformable_group * 2 * kh * kw, oh, ow), weight (num_filter, c / num_group, kh, kw), bias "
        "(num_filter,) unless no_bias, output (n, num_filter, oh, ow) with oh = floor((h + 2 * pad - dilate * (kh "
        "- 1) - 1) / stride) + 1 (likewise ow). Data channel group d of num_deformable_group reads offset channels "
        "[2K * d, 2K * (d + 1)) (K = kh * kw): 2 * (i * kw + j) for dy of tap (i, j), the next for dx. Points "
        "outside [0, h) x [0, w) read 0; beyond the last row or column the sample holds it.")
    .SetNumInputs(DeformConvInputs)
    .AddArgument("data", "NDArray-or-Symbol", "Input data (n, c, h, w)")
    .AddArgument("offset", "NDArray-or-Symbol", "The displacement of every tap (n, num_deformable_group * 2 * kh * kw, oh, ow)")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight matrix")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias parameter")
    .SetParams<DeformableConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeformConvShape<false>)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DeformConvCompute<false>)
    .SetAttr<FGradient>("FGradient", DeformConvGrad<false>);

WEFT_REGISTER_OP(_backward_DeformableConvolution)
    .Describe("Gradients of _contrib_DeformableConvolution with respect to data, offset, weight and (unless no_bias) bias.")
    .SetNumInputs(4)
    .SetNumOutputs(DeformConvInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("offset", "NDArray-or-Symbol", "The forward offset")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .SetParams<DeformableConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeformConvBackwardShape<false>)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", DeformConvBackward<false>);

WEFT_REGISTER_OP(_contrib_ModulatedDeformableConvolution)
    .Describe(
        "2-D modulated deformable convolution (DCNv2, https://arxiv.org/abs/1811.11168): as "
        "_contrib_DeformableConvolution, with every sampled tap multiplied by mask. Shapes: data (n, c, h, w), "
        "offset (n, num_deformable_group * 2 * kh * kw, oh, ow), mask (n, num_deformable_group * kh * kw, oh, ow), "
        "weight (num_filter, c / num_group, kh, kw), bias (num_filter,) unless no_bias, output (n, num_filter, oh, "
        "ow). Points in (-1, h) x (-1, w) are interpolated with the pixels outside the map taken as zeros; points "
        "further out read 0.")
    .SetNumInputs(ModulatedConvInputs)
    .AddArgument("data", "NDArray-or-Symbol", "Input data (n, c, h, w)")
    .AddArgument("offset", "NDArray-or-Symbol", "The displacement of every tap (n, num_deformable_group * 2 * kh * kw, oh, ow)")
    .AddArgument("mask", "NDArray-or-Symbol", "The scale of every tap (n, num_deformable_group * kh * kw, oh, ow)")
    .AddArgument("weight", "NDArray-or-Symbol", "Weight matrix")
    .AddArgument("bias", "NDArray-or-Symbol", "Bias parameter")
    .SetParams<ModulatedDeformableConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeformConvShape<true>)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DeformConvCompute<true>)
    .SetAttr<FGradient>("FGradient", DeformConvGrad<true>);

WEFT_REGISTER_OP(_backward_ModulatedDeformableConvolution)
    .Describe(
        "Gradients of _contrib_ModulatedDeformableConvolution with respect to data, offset, mask, weight and "
        "(unless no_bias) bias.")
    .SetNumInputs(5)
    .SetNumOutputs(ModulatedConvInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("offset", "NDArray-or-Symbol", "The forward offset")
    .AddArgument("mask", "NDArray-or-Symbol", "The forward mask")
    .AddArgument("weight", "NDArray-or-Symbol", "The forward weight")
    .SetParams<ModulatedDeformableConvolutionParam>()
    .SetAttr<FInferShape>("FInferShape", DeformConvBackwardShape<true>)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", DeformConvBackward<true>);

}  // namespace op
}  // namespace weft

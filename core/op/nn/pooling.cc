// Pooling (max, avg, sum, lp over 1, 2 or 3 spatial axes) and its gradient.
//
// Output size per axis, with in the input size, k the kernel, p the pad and s the stride:
//   valid: floor((in + 2p - k) / s) + 1      full: ceil((in + 2p - k) / s) + 1
//   same (1-D only, no pad): ceil(in / s), padded on both sides as evenly as possible.
// A window starting at o * s - p reaches to min(start + k, in + p); average pooling with
// count_include_pad divides by that span (so a window overhanging the padded input under
// 'full' counts only the padded input), without it by the input cells inside the window.
// float32 max and average pooling run on oneDNN; the rest on the loops below.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/op/nn/conv_common.h"
#include "core/op/nn/pooling_geom.h"
#include "core/op/op_util.h"
#include "core/op/reduced_float.h"
#include "core/op/work_estimate.h"

#if defined(WEFT_USE_ONEDNN)
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace weft {
namespace op {

PoolGeom MakePoolGeom(const NodeAttrs& attrs, const Shape& given, bool channels_last) {
  const auto& prm = attrs.Params<PoolingParam>();
  const std::string& op = attrs.op->name;
  const bool last = IsChannelsLast(prm.layout);
  // Checked by CheckLayoutAndRank below; the global kernel needs the spatial sizes first.
  const Shape data = last && channels_last ? ToChannelsFirst(given) : given;
  PoolGeom g;
  g.kind = prm.pool_type == "max" ? PoolKind::kMax
           : prm.pool_type == "avg" ? PoolKind::kAvg
           : prm.pool_type == "sum" ? PoolKind::kSum
                                    : PoolKind::kLp;
  g.include_pad = !(prm.count_include_pad == "False" || prm.count_include_pad == "false" ||
                    prm.count_include_pad == "0");
  if (g.kind == PoolKind::kLp) {
    if (!prm.p_value)
      Throw(ErrorKind::kValue, "Operator '", op, "': pool_type='lp' needs parameter 'p_value'");
    g.p = *prm.p_value;
  }
  WindowAxes w;
  if (prm.global_pool) {
    w.nd = data.ndim() - 2;
    if (w.nd < 1 || w.nd > 3)
      Throw(ErrorKind::kShape, "Operator '", op, "': input 'data' has shape ", given.ToString(),
            " but global pooling needs rank 3, 4 or 5 (NCW, NCHW, NCDHW or NWC, NHWC, NDHWC)");
    for (int i = 0; i < w.nd; ++i) w.k[i] = data[2 + i];
  } else {
    if (prm.kernel.ndim() <= 0)
      Throw(ErrorKind::kValue, "Operator '", op, "': parameter 'kernel' is required unless global_pool=True");
    // 'same' infers its own padding, so MXNet accepts any all-zero pad there, whatever its
    // length (scripts pass pad=(0,0,0) with a 1-D kernel).
    bool same_pad = prm.pooling_convention == "same";
    if (same_pad)
      for (int64_t v : prm.pad)
        if (v != 0)
          Throw(ErrorKind::kValue, "Operator '", op, "': pooling_convention='same' does not take a pad, got pad ",
                prm.pad.ToString());
    w = ParseWindow(op, prm.kernel, prm.stride, nullptr, same_pad ? Shape::Scalar() : prm.pad);
  }
  CheckLayoutAndRank(op, prm.layout, w.nd, given, channels_last);
  bool same = prm.pooling_convention == "same" && !prm.global_pool;
  if (same && w.nd != 1)
    Throw(ErrorKind::kValue, "Operator '", op, "': pooling_convention='same' supports 1-D pooling only, got kernel ",
          prm.kernel.ToString());
  g.nd = w.nd;
  g.n = data[0];
  g.c = data[1];
  int64_t padded[3];
  bool fits = true;
  for (int i = 0; i < w.nd; ++i) {
    int j = 3 - w.nd + i;
    int64_t in = data[2 + i];
    g.in[j] = in;
    g.k[j] = w.k[i];
    g.s[j] = w.s[i];
    g.pl[j] = w.p[i];
    padded[i] = in + 2 * w.p[i];
    if (in < 0) {
      g.out[j] = -1;
      continue;
    }
    if (same) {
      g.out[j] = (in + w.s[i] - 1) / w.s[i];
      int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * w.s[i] + w.k[i] - in);
      g.pl[j] = total / 2;
      g.limit[j] = in + total - total / 2;
      continue;
    }
    if (w.k[i] > padded[i]) fits = false;
    int64_t span = padded[i] - w.k[i];
    g.out[j] = prm.pooling_convention == "full" ? (span + w.s[i] - 1) / w.s[i] + 1 : span / w.s[i] + 1;
    g.limit[j] = in + w.p[i];
  }
  if (!fits)
    Throw(ErrorKind::kShape, "Operator '", op, "': kernel ", TupleString(w.k, w.nd),
          " is larger than the padded input ", TupleString(padded, w.nd), " (data shape ", given.ToString(), ", pad ",
          TupleString(w.p, w.nd), ")");
  return g;
}

namespace {

// Runs f(lo, hi) over the planes [lo, hi) of the n * c (image, channel) planes, split
// across threads so that each takes at least kElemGrain input cells.
template <typename F>
void OverPlanes(const PoolGeom& g, F&& f) {
  ParallelFor(g.n * g.c, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(g.InSize(), 1)), f);
}

Shape PoolOutShape(const PoolGeom& g) {
  std::vector<int64_t> d{g.n, g.c};
  for (int i = 3 - g.nd; i < 3; ++i) d.push_back(g.out[i]);
  return Shape(d);
}

// The output shape in the operator's layout.
Shape PoolOutShape(const NodeAttrs& attrs, const Shape& data) {
  Shape o = PoolOutShape(MakePoolGeom(attrs, data, true));
  return IsChannelsLast(attrs.Params<PoolingParam>().layout) ? ToChannelsLast(o) : o;
}

bool PoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].known_ndim()) return false;
  AssignShape(attrs, out, 0, PoolOutShape(attrs, (*in)[0]), "output");
  return (*in)[0].is_known();
}

// ---------------------------------------------------------------- plain loops
// One window along each axis: [b, e) of input cells, and the include-pad span.
struct Window {
  int64_t b[3], e[3];
  int64_t span;
};

// Output index o's window along axis i: the input cells [b, e) and the include-pad span.
struct AxisWindow {
  int64_t b, e, span;
};

inline AxisWindow WindowOnAxis(const PoolGeom& g, int i, int64_t o) {
  int64_t start = o * g.s[i] - g.pl[i];
  int64_t stop = std::min(start + g.k[i], g.limit[i]);
  return {std::max<int64_t>(start, 0), std::min(stop, g.in[i]), std::max<int64_t>(stop - start, 0)};
}

inline Window WindowAt(const PoolGeom& g, const int64_t* o) {
  Window w;
  w.span = 1;
  for (int i = 0; i < 3; ++i) {
    AxisWindow a = WindowOnAxis(g, i, o[i]);
    w.span *= a.span;
    w.b[i] = a.b;
    w.e[i] = a.e;
  }
  return w;
}

template <typename A>
inline A PowP(A v, int p) {
  A r = v;
  for (int i = 1; i < p; ++i) r *= v;
  return r;
}

template <typename A>
inline A RootP(A v, int p) {
  if (p == 1) return v;
  if (p == 2) return std::sqrt(v);
  if (p == 3) return std::cbrt(v);
  return std::pow(v, A(1) / A(p));
}

template <typename F>
void ForEachOutput(const PoolGeom& g, F&& f) {
  int64_t o[3];
  for (o[0] = 0; o[0] < g.out[0]; ++o[0])
    for (o[1] = 0; o[1] < g.out[1]; ++o[1])
      for (o[2] = 0; o[2] < g.out[2]; ++o[2]) f(o, (o[0] * g.out[1] + o[1]) * g.out[2] + o[2]);
}

template <typename T>
void PlainPoolForward(const PoolGeom& g, const T* x, T* y, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t I = g.InSize(), O = g.OutSize();
  OverPlanes(g, [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      const T* xp = x + plane * I;
      T* yp = y + plane * O;
      ForEachOutput(g, [&](const int64_t* o, int64_t oi) {
        Window w = WindowAt(g, o);
        A acc = g.kind == PoolKind::kMax ? std::numeric_limits<A>::lowest() : A(0);
        int64_t count = 0;
        for (int64_t a = w.b[0]; a < w.e[0]; ++a)
          for (int64_t b = w.b[1]; b < w.e[1]; ++b) {
            const T* row = xp + (a * g.in[1] + b) * g.in[2];
            for (int64_t c = w.b[2]; c < w.e[2]; ++c) {
              A v = static_cast<A>(row[c]);
              if (g.kind == PoolKind::kMax) acc = std::max(acc, v);
              else if (g.kind == PoolKind::kLp) acc += PowP(v, g.p);
              else acc += v;
            }
            count += std::max<int64_t>(w.e[2] - w.b[2], 0);
          }
        if (g.kind == PoolKind::kAvg) {
          int64_t div = g.include_pad ? w.span : count;
          acc = div > 0 ? acc / static_cast<A>(div) : A(0);
        } else if (g.kind == PoolKind::kLp) {
          acc = RootP(acc, g.p);
        }
        Store(yp + oi, req, acc);
      });
    }
  });
}

template <typename T>
void PlainPoolBackward(const PoolGeom& g, const T* dy, const T* x, const T* y, T* dx, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t I = g.InSize(), O = g.OutSize();
  OverPlanes(g, [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      const T* xp = x + plane * I;
      const T* dyp = dy + plane * O;
      const T* yp = y + plane * O;
      T* dxp = dx + plane * I;
      if (req != OpReq::kAddTo) std::fill_n(dxp, I, T(0));
      ForEachOutput(g, [&](const int64_t* o, int64_t oi) {
        Window w = WindowAt(g, o);
        A grad = static_cast<A>(dyp[oi]);
        if (g.kind == PoolKind::kMax) {
          // The first maximum in scan order takes the whole gradient.
          int64_t best = -1;
          A bv = std::numeric_limits<A>::lowest();
          for (int64_t a = w.b[0]; a < w.e[0]; ++a)
            for (int64_t b = w.b[1]; b < w.e[1]; ++b)
              for (int64_t c = w.b[2]; c < w.e[2]; ++c) {
                int64_t idx = (a * g.in[1] + b) * g.in[2] + c;
                A v = static_cast<A>(xp[idx]);
                if (best < 0 || v > bv) {
                  best = idx;
                  bv = v;
                }
              }
          if (best >= 0) dxp[best] = static_cast<T>(static_cast<A>(dxp[best]) + grad);
          return;
        }
        A scale = grad;
        A out = static_cast<A>(yp[oi]);
        if (g.kind == PoolKind::kAvg) {
          int64_t count = 1;
          for (int i = 0; i < 3; ++i) count *= std::max<int64_t>(w.e[i] - w.b[i], 0);
          int64_t div = g.include_pad ? w.span : count;
          scale = div > 0 ? grad / static_cast<A>(div) : A(0);
        }
        for (int64_t a = w.b[0]; a < w.e[0]; ++a)
          for (int64_t b = w.b[1]; b < w.e[1]; ++b)
            for (int64_t c = w.b[2]; c < w.e[2]; ++c) {
              int64_t idx = (a * g.in[1] + b) * g.in[2] + c;
              A d = scale;
              // d out / d x = (x / out)^(p - 1) for out = (sum x^p)^(1/p).
              if (g.kind == PoolKind::kLp && g.p > 1)
                d = out != A(0) ? grad * PowP(static_cast<A>(xp[idx]) / out, g.p - 1) : A(0);
              dxp[idx] = static_cast<T>(static_cast<A>(dxp[idx]) + d);
            }
      });
    }
  });
}

// ---------------------------------------------------------------- 2-D max and average
// The common case by output row: each kernel tap is one strided pass over the row's
// outputs, which the compiler vectorises, instead of a walk of each output's window. Taken
// for float32 too where oneDNN has only its reference kernel for plain NCHW (on AVX2 it took
// 10 ms for LeNet's first pooling at batch 128, these loops under 1 ms). Same results as
// the loops above: max keeps the first maximum in scan order, NaN as std::max treats it.

// The outputs [*lo, *hi) along an axis whose window holds input cell o * s - pl + tap, for
// those cells inside the input.
inline void TapRange(const PoolGeom& g, int i, int64_t tap, int64_t* lo, int64_t* hi) {
  int64_t first = g.pl[i] - tap, last = g.in[i] - 1 + g.pl[i] - tap;
  *lo = first <= 0 ? 0 : (first + g.s[i] - 1) / g.s[i];
  *hi = last < 0 ? 0 : std::min(g.out[i], last / g.s[i] + 1);
  if (*hi < *lo) *hi = *lo;
}

// Runs f(stride) with the stride a compile-time constant for the usual 1 and 2.
template <typename F>
inline void WithStride(int64_t s, F&& f) {
  if (s == 1) f(std::integral_constant<int64_t, 1>());
  else if (s == 2) f(std::integral_constant<int64_t, 2>());
  else f(s);
}

// The input cells of a window along one axis (none when it lies in the padding).
inline int64_t Cells(const AxisWindow& a) { return std::max<int64_t>(a.e - a.b, 0); }

// Each output row's and column's window, and each output's average divisor.
struct Windows2D {
  std::vector<AxisWindow> rows, cols;
  explicit Windows2D(const PoolGeom& g) : rows(g.out[1]), cols(g.out[2]) {
    for (int64_t o = 0; o < g.out[1]; ++o) rows[o] = WindowOnAxis(g, 1, o);
    for (int64_t o = 0; o < g.out[2]; ++o) cols[o] = WindowOnAxis(g, 2, o);
  }
  int64_t AvgDivisor(const PoolGeom& g, int64_t oh, int64_t ow) const {
    return g.include_pad ? rows[oh].span * cols[ow].span : Cells(rows[oh]) * Cells(cols[ow]);
  }
};

bool Fast2D(const PoolGeom& g) { return g.nd == 2 && (g.kind == PoolKind::kMax || g.kind == PoolKind::kAvg); }

template <typename T>
void Pool2DForward(const PoolGeom& g, const T* x, T* y, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], sw = g.s[2];
  const bool max = g.kind == PoolKind::kMax;
  const Windows2D win(g);
  const std::vector<AxisWindow>& rows = win.rows;
  OverPlanes(g, [&](int64_t lo, int64_t hi) {
    std::vector<A> acc(OW);
    for (int64_t plane = lo; plane < hi; ++plane) {
      const T* xp = x + plane * H * W;
      T* yp = y + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        std::fill(acc.begin(), acc.end(), max ? std::numeric_limits<A>::lowest() : A(0));
        for (int64_t h = rows[oh].b; h < rows[oh].e; ++h)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int64_t a, b;
            TapRange(g, 2, kw, &a, &b);
            const T* src = xp + h * W + kw - g.pl[2];
            A* out = acc.data();
            WithStride(sw, [&](auto s) {
              if (max)
                for (int64_t o = a; o < b; ++o) out[o] = std::max(out[o], static_cast<A>(src[o * s]));
              else
                for (int64_t o = a; o < b; ++o) out[o] += static_cast<A>(src[o * s]);
            });
          }
        for (int64_t ow = 0; ow < OW; ++ow) {
          A v = acc[ow];
          if (!max) {
            int64_t div = win.AvgDivisor(g, oh, ow);
            v = div > 0 ? v / static_cast<A>(div) : A(0);
          }
          Store(yp + oh * OW + ow, req, v);
        }
      }
    }
  });
}

template <typename T>
void Pool2DBackward(const PoolGeom& g, const T* dy, const T* x, T* dx, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], sw = g.s[2];
  const bool max = g.kind == PoolKind::kMax;
  const Windows2D win(g);
  const std::vector<AxisWindow>& rows = win.rows;
  OverPlanes(g, [&](int64_t lo, int64_t hi) {
    std::vector<A> best(OW), scale(OW);
    std::vector<int64_t> where(OW);
    for (int64_t plane = lo; plane < hi; ++plane) {
      const T* xp = x + plane * H * W;
      const T* dyp = dy + plane * OH * OW;
      T* dxp = dx + plane * H * W;
      if (req != OpReq::kAddTo) std::fill_n(dxp, H * W, T(0));
      for (int64_t oh = 0; oh < OH; ++oh) {
        const AxisWindow& r = rows[oh];
        if (max) {
          std::fill(where.begin(), where.end(), int64_t{-1});
          for (int64_t h = r.b; h < r.e; ++h)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              int64_t a, b;
              TapRange(g, 2, kw, &a, &b);
              const int64_t base = h * W + kw - g.pl[2];
              A* bv = best.data();
              int64_t* at = where.data();
              WithStride(sw, [&](auto s) {
                for (int64_t o = a; o < b; ++o) {
                  A v = static_cast<A>(xp[base + o * s]);
                  bool take = at[o] < 0 || v > bv[o];
                  bv[o] = take ? v : bv[o];
                  at[o] = take ? base + o * s : at[o];
                }
              });
            }
          for (int64_t ow = 0; ow < OW; ++ow)
            if (where[ow] >= 0)
              dxp[where[ow]] = static_cast<T>(static_cast<A>(dxp[where[ow]]) + static_cast<A>(dyp[oh * OW + ow]));
          continue;
        }
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t div = win.AvgDivisor(g, oh, ow);
          scale[ow] = div > 0 ? static_cast<A>(dyp[oh * OW + ow]) / static_cast<A>(div) : A(0);
        }
        for (int64_t h = r.b; h < r.e; ++h)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int64_t a, b;
            TapRange(g, 2, kw, &a, &b);
            T* dst = dxp + h * W + kw - g.pl[2];
            const A* sc = scale.data();
            WithStride(sw, [&](auto s) {
              for (int64_t o = a; o < b; ++o) dst[o * s] = static_cast<T>(static_cast<A>(dst[o * s]) + sc[o]);
            });
          }
      }
    }
  });
}

// Max pooling whose windows tile the input, without overlap or padding (kernel == stride,
// as LeNet's and VGG's 2x2/2): each input cell lies in at most one window. So the gradient
// is written once per cell (the window's first maximum takes its gradient, the other cells
// 0) instead of zeroing the plane and scattering into it, and both passes go window by
// window with the taps unrolled for 2x2: the row loops above spend most of their time
// setting up short strided loops there. Same results as those loops.
bool TiledMax2D(const PoolGeom& g) {
  return g.nd == 2 && g.kind == PoolKind::kMax && g.k[1] == g.s[1] && g.k[2] == g.s[2] && g.pl[1] == 0 &&
         g.pl[2] == 0 && g.out[1] * g.k[1] <= g.in[1] && g.out[2] * g.k[2] <= g.in[2];
}

// Runs f(kh, kw) with both compile-time 2 for 2x2 windows.
template <typename F>
void WithTiles(const PoolGeom& g, F&& f) {
  if (g.k[1] == 2 && g.k[2] == 2) f(std::integral_constant<int64_t, 2>(), std::integral_constant<int64_t, 2>());
  else f(g.k[1], g.k[2]);
}

template <typename T>
void TiledMaxForward(const PoolGeom& g, const T* x, T* y, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  WithTiles(g, [&](auto kh, auto kw) {
    OverPlanes(g, [&](int64_t lo, int64_t hi) {
      for (int64_t plane = lo; plane < hi; ++plane)
        for (int64_t oh = 0; oh < OH; ++oh) {
          const T* x0 = x + plane * H * W + oh * kh * W;
          T* yr = y + (plane * OH + oh) * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            A m = std::numeric_limits<A>::lowest();
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) m = std::max(m, static_cast<A>(x0[i * W + ow * kw + j]));
            Store(yr + ow, req, m);
          }
        }
    });
  });
}

// One output row of 2x2 windows: the four cells' first maximum by selects, never by
// branches (on real data the compiler's branches were mispredicted about half the time,
// 5x the forward's time). float32 runs 8 or 4 windows per step in vectors: each input
// row's cells deinterleaved into left and right, the gradients interleaved back.
template <typename A>
inline void FirstMax4(A a, A b, A c, A d, A g, A* va, A* vb, A* vc, A* vd) {
  bool tb = b > a;
  A m = tb ? b : a;
  bool tc = c > m;
  m = tc ? c : m;
  bool td = d > m;
  tc = tc && !td;
  tb = tb && !tc && !td;
  *va = !tb && !tc && !td ? g : A(0);
  *vb = tb ? g : A(0);
  *vc = tc ? g : A(0);
  *vd = td ? g : A(0);
}

// float32 vectors of N lanes and their comparison masks (GCC's vector extensions).
template <int N>
struct FloatVectors {
  typedef float V __attribute__((vector_size(4 * N)));
  typedef int32_t I __attribute__((vector_size(4 * N)));
};

// Lane shuffles of two vectors of N floats: the even and the odd lanes of (a, b), and the
// low and high halves of a and b interleaved. GCC takes the lane indices as a vector, made
// once here; clang (the sanitizer and fuzzing build) only as constants, spelled out.
template <int N>
struct Shuffles {
  using V = typename FloatVectors<N>::V;
#if defined(__clang__)
  V Even(V a, V b) const {
    if constexpr (N == 8) return __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    else return __builtin_shufflevector(a, b, 0, 2, 4, 6);
  }
  V Odd(V a, V b) const {
    if constexpr (N == 8) return __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
    else return __builtin_shufflevector(a, b, 1, 3, 5, 7);
  }
  V Lo(V a, V b) const {
    if constexpr (N == 8) return __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
    else return __builtin_shufflevector(a, b, 0, 4, 1, 5);
  }
  V Hi(V a, V b) const {
    if constexpr (N == 8) return __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15);
    else return __builtin_shufflevector(a, b, 2, 6, 3, 7);
  }
#else
  typename FloatVectors<N>::I even, odd, lo, hi;
  Shuffles() {
    for (int i = 0; i < N; ++i) {
      even[i] = 2 * i;
      odd[i] = 2 * i + 1;
      lo[i] = i % 2 == 0 ? i / 2 : N + i / 2;
      hi[i] = i % 2 == 0 ? N / 2 + i / 2 : N + N / 2 + i / 2;
    }
  }
  V Even(V a, V b) const { return __builtin_shuffle(a, b, even); }
  V Odd(V a, V b) const { return __builtin_shuffle(a, b, odd); }
  V Lo(V a, V b) const { return __builtin_shuffle(a, b, lo); }
  V Hi(V a, V b) const { return __builtin_shuffle(a, b, hi); }
#endif
};

// The windows of a row from `ow` on, N at a time while N remain; returns the first window
// left over.
template <int N, bool Add>
int64_t Tiled2x2Vectors(const float* r0, const float* r1, const float* g, float* d0, float* d1, int64_t ow,
                        int64_t OW) {
  using V = typename FloatVectors<N>::V;
  using I = typename FloatVectors<N>::I;
  auto load = [](const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  };
  auto store = [](float* p, V v) { std::memcpy(p, &v, sizeof(V)); };
  const Shuffles<N> S;
  const V zero{};
  for (; ow + N <= OW; ow += N) {
    V p0 = load(r0 + 2 * ow), p1 = load(r0 + 2 * ow + N), q0 = load(r1 + 2 * ow), q1 = load(r1 + 2 * ow + N);
    V a = S.Even(p0, p1), b = S.Odd(p0, p1);
    V c = S.Even(q0, q1), d = S.Odd(q0, q1);
    I tb = b > a;
    V m = tb ? b : a;
    I tc = c > m;
    m = tc ? c : m;
    I td = d > m;
    tc = tc & ~td;
    tb = tb & ~tc & ~td;
    I ta = ~(tb | tc | td);
    V gv = load(g + ow);
    V va = ta ? gv : zero, vb = tb ? gv : zero, vc = tc ? gv : zero, vd = td ? gv : zero;
    V o0 = S.Lo(va, vb), o1 = S.Hi(va, vb);
    V o2 = S.Lo(vc, vd), o3 = S.Hi(vc, vd);
    if (Add) {
      o0 += load(d0 + 2 * ow);
      o1 += load(d0 + 2 * ow + N);
      o2 += load(d1 + 2 * ow);
      o3 += load(d1 + 2 * ow + N);
    }
    store(d0 + 2 * ow, o0);
    store(d0 + 2 * ow + N, o1);
    store(d1 + 2 * ow, o2);
    store(d1 + 2 * ow + N, o3);
  }
  return ow;
}

template <bool Add, typename T>
void Tiled2x2BackwardRow(const T* r0, const T* r1, const T* g, T* d0, T* d1, int64_t OW) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  int64_t ow = 0;
  if constexpr (std::is_same_v<T, float>) {
    ow = Tiled2x2Vectors<8, Add>(r0, r1, g, d0, d1, ow, OW);
    ow = Tiled2x2Vectors<4, Add>(r0, r1, g, d0, d1, ow, OW);
  }
  for (; ow < OW; ++ow) {
    A va, vb, vc, vd;
    FirstMax4<A>(static_cast<A>(r0[2 * ow]), static_cast<A>(r0[2 * ow + 1]), static_cast<A>(r1[2 * ow]),
                 static_cast<A>(r1[2 * ow + 1]), static_cast<A>(g[ow]), &va, &vb, &vc, &vd);
    if (Add) {
      va += static_cast<A>(d0[2 * ow]);
      vb += static_cast<A>(d0[2 * ow + 1]);
      vc += static_cast<A>(d1[2 * ow]);
      vd += static_cast<A>(d1[2 * ow + 1]);
    }
    d0[2 * ow] = static_cast<T>(va);
    d0[2 * ow + 1] = static_cast<T>(vb);
    d1[2 * ow] = static_cast<T>(vc);
    d1[2 * ow + 1] = static_cast<T>(vd);
  }
}

template <typename T>
void TiledMaxBackward(const PoolGeom& g, const T* dy, const T* x, T* dx, OpReq req) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], kh = g.k[1], kw = g.k[2];
  const bool add = req == OpReq::kAddTo, two = kh == 2 && kw == 2;
  OverPlanes(g, [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      const T* xp = x + plane * H * W;
      const T* dyp = dy + plane * OH * OW;
      T* dxp = dx + plane * H * W;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T* x0 = xp + oh * kh * W;
        T* d0 = dxp + oh * kh * W;
        const T* gr = dyp + oh * OW;
        if (two && add) {
          Tiled2x2BackwardRow<true, T>(x0, x0 + W, gr, d0, d0 + W, OW);
        } else if (two) {
          Tiled2x2BackwardRow<false, T>(x0, x0 + W, gr, d0, d0 + W, OW);
        } else {
          for (int64_t ow = 0; ow < OW; ++ow) {
            // Scan order as Pool2DBackward: row by row, the first cell always taken, later
            // ones only when greater (so a NaN in first place keeps the gradient).
            const T* win = x0 + ow * kw;
            A best = static_cast<A>(win[0]);
            int64_t at = 0;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                A v = static_cast<A>(win[i * W + j]);
                if (v > best) {
                  best = v;
                  at = i * kw + j;
                }
              }
            const A grad = static_cast<A>(gr[ow]);
            T* cell = d0 + ow * kw;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                A v = i * kw + j == at ? grad : A(0);
                cell[i * W + j] = static_cast<T>(add ? static_cast<A>(cell[i * W + j]) + v : v);
              }
          }
        }
        // Columns past the last window get no gradient.
        if (!add)
          for (int64_t i = 0; i < kh; ++i) std::fill(d0 + i * W + OW * kw, d0 + (i + 1) * W, T(0));
      }
      if (!add) std::fill(dxp + OH * kh * W, dxp + H * W, T(0));
    }
  });
}

// ---------------------------------------------------------------- oneDNN
#if defined(WEFT_USE_ONEDNN)
using dnnl::memory;

dnnl::engine& PoolEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The primitives of one geometry: the inference forward, and for the gradient a training
// forward (max pooling's workspace records the argmax) and the backward.
struct PoolPlan {
  memory::desc src, dst, ws;
  dnnl::pooling_forward infer, train;
  dnnl::pooling_backward back;
  bool has_ws = false;
  // Whether oneDNN runs a JIT kernel; its reference kernels (plain NCHW on AVX2) are much
  // slower than the 2-D loops above, which then take the call.
  bool jit = false;
};

// oneDNN divides include-pad averages by the whole kernel, so windows that overhang the
// padded input ('full' convention) stay on the plain loops; sum and lp have no primitive.
// Tiled max pooling stays on its own loops even where oneDNN has a JIT kernel for plain
// NCHW (AVX-512): with no overlap they write each gradient cell once, where oneDNN's
// backward runs the training forward again for its argmax record first. LeNet's first
// pooling (64x20x24x24): backward 0.59 -> 0.15 ms, forward 0.23 -> 0.12 ms on Zen 4.
bool OneDnnFits(const PoolGeom& g) {
  if (g.kind == PoolKind::kSum || g.kind == PoolKind::kLp || TiledMax2D(g)) return false;
  if (g.kind == PoolKind::kAvg && g.include_pad)
    for (int i = 0; i < 3; ++i)
      if ((g.out[i] - 1) * g.s[i] - g.pl[i] + g.k[i] > g.limit[i]) return false;
  return true;
}

// The dtypes pooling runs through oneDNN: float32, and bfloat16 written straight to the
// output (an accumulating request in bfloat16 takes the plain loops).
bool DnnlPoolType(DType dt, OpReq req) {
  return dt == DType::kFloat32 || (dt == DType::kBfloat16 && req != OpReq::kAddTo);
}

std::shared_ptr<PoolPlan> MakePoolPlan(const PoolGeom& g, DType dtype) {
  const memory::data_type dt = dtype == DType::kBfloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  static const memory::format_tag tags[] = {memory::format_tag::ncw, memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  memory::dims sd{g.n, g.c}, dd{g.n, g.c}, strides, kernel, pl, pr;
  for (int i = 3 - g.nd; i < 3; ++i) {
    sd.push_back(g.in[i]);
    dd.push_back(g.out[i]);
    strides.push_back(g.s[i]);
    kernel.push_back(g.k[i]);
    pl.push_back(g.pl[i]);
    // oneDNN checks the output size with integer division, so a last window that stops
    // short of the input's end is a right padding of 0.
    pr.push_back(std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + g.k[i] - g.in[i] - g.pl[i]));
  }
  auto plan = std::make_shared<PoolPlan>();
  plan->src = memory::desc(sd, dt, tags[g.nd - 1]);
  plan->dst = memory::desc(dd, dt, tags[g.nd - 1]);
  dnnl::algorithm alg = g.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                        : g.include_pad          ? dnnl::algorithm::pooling_avg_include_padding
                                                 : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::pooling_forward::desc fi(dnnl::prop_kind::forward_inference, alg, plan->src, plan->dst, strides, kernel, pl, pr);
  plan->infer = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(fi, PoolEngine()));
  dnnl::pooling_forward::desc ft(dnnl::prop_kind::forward_training, alg, plan->src, plan->dst, strides, kernel, pl, pr);
  dnnl::pooling_forward::primitive_desc tpd(ft, PoolEngine());
  plan->train = dnnl::pooling_forward(tpd);
  plan->jit = std::string(tpd.impl_info_str()).rfind("jit", 0) == 0;
  plan->ws = tpd.workspace_desc();
  plan->has_ws = plan->ws.get_size() > 0;
  dnnl::pooling_backward::desc bd(alg, plan->src, plan->dst, strides, kernel, pl, pr);
  plan->back = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(bd, PoolEngine(), tpd));
  return plan;
}

std::shared_ptr<PoolPlan> GetPoolPlan(const PoolGeom& g, DType dt) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<PoolPlan>> cache;
  std::string key;
  for (int64_t v : {int64_t(g.nd), g.n, g.c, int64_t(g.kind), int64_t(g.include_pad), int64_t(dt)})
    key += std::to_string(v) + ',';
  for (int i = 0; i < 3; ++i)
    for (int64_t v : {g.in[i], g.out[i], g.k[i], g.s[i], g.pl[i]}) key += std::to_string(v) + ',';
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::shared_ptr<PoolPlan> plan;
  try {
    plan = MakePoolPlan(g, dt);
  } catch (const dnnl::error&) {
    plan = nullptr;  // remembered, so the plain loops take this geometry without asking again
  }
  cache.emplace(key, plan);
  return plan;
}

dnnl::stream& PoolStream() {
  static thread_local dnnl::stream strm(PoolEngine());
  return strm;
}

size_t Align64(size_t b) { return (b + 63) / 64 * 64; }

void AddIntoF(float* dst, const float* src, int64_t n) {
  ParallelFor(n, kElemGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] += src[i];
  });
}
#endif

void PoolingCompute(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (IsChannelsLast(attrs.Params<PoolingParam>().layout))
    return RunChannelsFirst<PoolingParam>(attrs, ctx, in, req, out, PoolingCompute);
  PoolGeom g = MakePoolGeom(attrs, in[0].shape);
#if defined(WEFT_USE_ONEDNN)
  if (DnnlPoolType(in[0].dtype, req[0]) && g.n > 0 && g.c > 0 && OneDnnFits(g)) {
    auto plan = GetPoolPlan(g, in[0].dtype);
    if (plan && (plan->jit || !Fast2D(g))) {
      bool add = req[0] == OpReq::kAddTo;
      size_t bytes = Align64(out[0].Bytes());
      void* target = add ? ctx.requested.at(0).temp->Get(bytes) : out[0].dptr;
      plan->infer.execute(PoolStream(), {{DNNL_ARG_SRC, memory(plan->src, PoolEngine(), in[0].dptr)},
                                         {DNNL_ARG_DST, memory(plan->dst, PoolEngine(), target)}});
      PoolStream().wait();
      if (add) AddIntoF(out[0].ptr<float>(), static_cast<const float*>(target), out[0].Size());
      return;
    }
  }
#endif
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    if constexpr (std::is_same_v<T, bool>) {
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': bool arrays are not supported");
    } else if (TiledMax2D(g)) {
      TiledMaxForward<T>(g, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
    } else if (Fast2D(g)) {
      Pool2DForward<T>(g, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
    } else {
      PlainPoolForward<T>(g, in[0].ptr<T>(), out[0].ptr<T>(), req[0]);
    }
  });
}

// Inputs: ograd, data, the forward output. Output: the data gradient.
bool PoolingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& data = (*in)[1];
  if (!data.is_known()) return false;
  Shape o = PoolOutShape(attrs, data);
  AssignShape(attrs, in, 0, o, "input");
  AssignShape(attrs, in, 2, o, "input");
  AssignShape(attrs, out, 0, data, "output");
  return true;
}

void PoolingBackward(const NodeAttrs& attrs, const OpContext& ctx, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  if (IsChannelsLast(attrs.Params<PoolingParam>().layout))
    return RunChannelsFirst<PoolingParam>(attrs, ctx, in, req, out, PoolingBackward);
  PoolGeom g = MakePoolGeom(attrs, in[1].shape);
#if defined(WEFT_USE_ONEDNN)
  if (DnnlPoolType(in[0].dtype, req[0]) && g.n > 0 && g.c > 0 && OneDnnFits(g)) {
    auto plan = GetPoolPlan(g, in[0].dtype);
    if (plan && (plan->jit || !Fast2D(g))) {
      bool add = req[0] == OpReq::kAddTo;
      size_t dst_bytes = Align64(plan->dst.get_size()), ws_bytes = Align64(plan->ws.get_size());
      size_t dx_bytes = add ? Align64(out[0].Bytes()) : 0;
      size_t need = (plan->has_ws ? dst_bytes + ws_bytes : 0) + dx_bytes;
      char* temp = need > 0 ? static_cast<char*>(ctx.requested.at(0).temp->Get(need)) : nullptr;
      dnnl::stream& strm = PoolStream();
      std::unordered_map<int, memory> args;
      if (plan->has_ws) {
        // The training forward recomputes the argmax record that the backward reads.
        memory ws(plan->ws, PoolEngine(), temp + dst_bytes);
        plan->train.execute(strm, {{DNNL_ARG_SRC, memory(plan->src, PoolEngine(), in[1].dptr)},
                                   {DNNL_ARG_DST, memory(plan->dst, PoolEngine(), temp)},
                                   {DNNL_ARG_WORKSPACE, ws}});
        args.emplace(DNNL_ARG_WORKSPACE, ws);
      }
      void* target = add ? temp + need - dx_bytes : out[0].dptr;
      args.emplace(DNNL_ARG_DIFF_DST, memory(plan->dst, PoolEngine(), in[0].dptr));
      args.emplace(DNNL_ARG_DIFF_SRC, memory(plan->src, PoolEngine(), target));
      plan->back.execute(strm, args);
      strm.wait();
      if (add) AddIntoF(out[0].ptr<float>(), static_cast<const float*>(target), out[0].Size());
      return;
    }
  }
#endif
  if (ReducedFloat(in[0].dtype)) {
    // Overlapping windows add into the same input cells: in float32, rounded once
    // (reduced_float.h); bfloat16 3x3/1 average pooling lost 0.7 % of the largest gradient.
    const DType dt = in[0].dtype;
    std::vector<float> dy = Widen(dt, in[0].dptr, in[0].Size()), x = Widen(dt, in[1].dptr, in[1].Size()),
                       y = Widen(dt, in[2].dptr, in[2].Size()), dx(static_cast<size_t>(out[0].Size()));
    if (TiledMax2D(g)) {
      TiledMaxBackward<float>(g, dy.data(), x.data(), dx.data(), OpReq::kWriteTo);
    } else if (Fast2D(g)) {
      Pool2DBackward<float>(g, dy.data(), x.data(), dx.data(), OpReq::kWriteTo);
    } else {
      PlainPoolBackward<float>(g, dy.data(), x.data(), y.data(), dx.data(), OpReq::kWriteTo);
    }
    Narrow(dt, dx, out[0].dptr, req[0]);
    return;
  }
  WEFT_TYPE_SWITCH(in[0].dtype, T, {
    if constexpr (std::is_same_v<T, bool>) {
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': bool arrays are not supported");
    } else if (TiledMax2D(g)) {
      TiledMaxBackward<T>(g, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]);
    } else if (Fast2D(g)) {
      Pool2DBackward<T>(g, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), req[0]);
    } else {
      PlainPoolBackward<T>(g, in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), out[0].ptr<T>(), req[0]);
    }
  });
}

// Window elements visited: each output element's window (kernel, or the whole spatial extent
// under global_pool, where the input is visited once), at the rate of the pool type.
double PoolTaps(const NodeAttrs& attrs, const TBlob& data, const TBlob& output) {
  const auto& p = attrs.Params<PoolingParam>();
  if (p.global_pool) return static_cast<double>(data.Size());
  return static_cast<double>(output.Size()) * static_cast<double>(p.kernel.Size());
}

double PoolingNs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  const double rate = attrs.Params<PoolingParam>().pool_type == "lp" ? kNsPerLpPoolTap : kNsPerPoolTap;
  return PoolTaps(attrs, in[0], out[0]) * rate + StreamNs(in, out);
}

// Inputs: ograd (the output's shape), data, output.
double PoolingBackwardNs(const NodeAttrs& attrs, const std::vector<TBlob>& in, const std::vector<TBlob>& out) {
  const double rate = attrs.Params<PoolingParam>().pool_type == "lp" ? kNsPerLpPoolTap : kNsPerPoolBackwardTap;
  return PoolTaps(attrs, in[1], in[0]) * rate + StreamNs(in, out);
}

std::vector<ResourceRequest> PoolTempSpace(const NodeAttrs&) { return {ResourceRequest{ResourceType::kTempSpace}}; }

}  // namespace

WEFT_REGISTER_OP(Pooling)
    .Describe(
        "Pooling over 1, 2 or 3 spatial axes (layouts NCW, NCHW, NCDHW, or NWC, NHWC, NDHWC on the CPU): max, avg, sum or lp (p_value) over each "
        "window. Output size per axis: valid floor((in + 2 * pad - kernel) / stride) + 1, full ceil(...) + 1, "
        "same ceil(in / stride) (1-D). global_pool pools the whole spatial extent.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input data to the pooling operator.")
    .SetParams<PoolingParam>()
    .SetAttr<FInferShape>("FInferShape", PoolingShape)
    .SetAttr<FResourceRequest>("FResourceRequest", PoolTempSpace)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PoolingCompute)
    .SetAttr<FEstimateNs>("FEstimateNs", PoolingNs)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_Pooling", {a.out_grads[0], a.inputs[0], a.outputs[0]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_Pooling)
    .Describe("Gradient of Pooling with respect to its input.")
    .SetNumInputs(3)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward input")
    .AddArgument("output", "NDArray-or-Symbol", "The forward output")
    .SetParams<PoolingParam>()
    .SetAttr<FInferShape>("FInferShape", PoolingBackwardShape)
    .SetAttr<FResourceRequest>("FResourceRequest", PoolTempSpace)
    .SetAttr<FCompute>("FCompute<cpu>", PoolingBackward)
    .SetAttr<FEstimateNs>("FEstimateNs", PoolingBackwardNs);

}  // namespace op
}  // namespace weft

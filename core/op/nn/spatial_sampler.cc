// The spatial transformer family of MXNet 1.x: GridGenerator (a sampling grid from an
// affine matrix or an optical flow), BilinearSampler (data sampled at a grid) and
// SpatialTransformer (the two in one). A grid is (N, 2, H, W): channel 0 holds x and
// channel 1 holds y, both normalised to [-1, 1] over the sampled image, so -1 is the
// first pixel's centre and 1 the last one's. Samples outside the image read zeros.
//
// The operators keep MXNet's hidden outputs (GridGenerator's grid_dst, BilinearSampler's
// tmp, SpatialTransformer's grid_dst and grid_src) so that graphs count outputs as MXNet
// does; the backward operators recompute what they need from the inputs instead of
// reading them, so a hand-called backward needs only arrays whose shapes it can check.
#include <cmath>
#include <optional>
#include <vector>

#include "core/op/op_util.h"

namespace weft {
namespace op {

struct GridGeneratorParam {
  std::string transform_type;
  Shape target_shape = Shape{0, 0};
};

WEFT_PARAM_SCHEMA(GridGeneratorParam, s) {
  s.Field("transform_type", &GridGeneratorParam::transform_type)
      .Choices({"affine", "warp"})
      .Describe(
          "The type of transformation: 'affine' takes affine matrices (batch, 6), 'warp' optical flows "
          "(batch, 2, h, w).");
  s.Field("target_shape", &GridGeneratorParam::target_shape)
      .Default(Shape{0, 0})
      .Describe("The output shape (H, W); required for 'affine', ignored for 'warp'.");
}

struct BilinearSamplerParam {
  std::optional<int> cudnn_off;  // MXNet's optional bool: True/False parse as 1/0
};

WEFT_PARAM_SCHEMA(BilinearSamplerParam, s) {
  s.Field("cudnn_off", &BilinearSamplerParam::cudnn_off)
      .Default(std::nullopt)
      .Range(0, 1)
      .Describe("Accepted for compatibility (no cuDNN path here): None, True or False.");
}

struct SpatialTransformerParam {
  Shape target_shape = Shape{0, 0};
  std::string transform_type;
  std::string sampler_type;
  std::optional<int> cudnn_off;  // MXNet's optional bool: True/False parse as 1/0
};

WEFT_PARAM_SCHEMA(SpatialTransformerParam, s) {
  s.Field("target_shape", &SpatialTransformerParam::target_shape)
      .Default(Shape{0, 0})
      .Describe("The output shape (H, W).");
  s.Field("transform_type", &SpatialTransformerParam::transform_type)
      .Choices({"affine"})
      .Describe("The transformation type: only 'affine'.");
  s.Field("sampler_type", &SpatialTransformerParam::sampler_type)
      .Choices({"bilinear"})
      .Describe("The sampling type: only 'bilinear'.");
  s.Field("cudnn_off", &SpatialTransformerParam::cudnn_off)
      .Default(std::nullopt)
      .Range(0, 1)
      .Describe("Accepted for compatibility (no cuDNN path here): None, True or False.");
}

namespace {

// The normalised coordinate of pixel i of n: -1 + 2 i / (n - 1); a one-pixel axis sits at -1
// (MXNet divides by zero there).
inline double NormCoord(int64_t i, int64_t n) { return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / (n - 1) : -1.0; }

// Checks target_shape = (H, W) with both positive and returns it.
Shape TargetShape(const NodeAttrs& attrs, const Shape& t) {
  if (t.ndim() != 2 || t[0] < 1 || t[1] < 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected target_shape (H, W) with H, W >= 1, got ",
          t.ToString());
  return t;
}

// ---------------------------------------------------------------- the affine grid
// out (N, 2, H, W): (x', y') = theta[n] (2x3) . (x, y, 1) at every target pixel.
template <typename T>
void AffineGrid(const T* theta, int64_t N, int64_t H, int64_t W, T* out, OpReq req) {
  using A = typename AccType<T>::type;
  const int64_t P = H * W;
  ParallelFor(N * H, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(W, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t n = r / H, h = r % H;
      const T* t = theta + n * 6;
      A y = static_cast<A>(NormCoord(h, H));
      for (int64_t w = 0; w < W; ++w) {
        A x = static_cast<A>(NormCoord(w, W));
        Store(out + n * 2 * P + h * W + w, req, static_cast<A>(t[0]) * x + static_cast<A>(t[1]) * y + static_cast<A>(t[2]));
        Store(out + n * 2 * P + P + h * W + w, req,
              static_cast<A>(t[3]) * x + static_cast<A>(t[4]) * y + static_cast<A>(t[5]));
      }
    }
  });
}

// gtheta (N, 6) from the grid's gradient g (N, 2, H, W): the sum over target pixels of g
// times (x, y, 1).
template <typename T, typename G>
void AffineGridGrad(const G* g, int64_t N, int64_t H, int64_t W, T* gtheta, OpReq req) {
  const int64_t P = H * W;
  ParallelFor(N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      double acc[6] = {0, 0, 0, 0, 0, 0};
      for (int64_t h = 0; h < H; ++h) {
        double y = NormCoord(h, H);
        for (int64_t w = 0; w < W; ++w) {
          double x = NormCoord(w, W);
          double gx = static_cast<double>(g[n * 2 * P + h * W + w]);
          double gy = static_cast<double>(g[n * 2 * P + P + h * W + w]);
          acc[0] += gx * x, acc[1] += gx * y, acc[2] += gx;
          acc[3] += gy * x, acc[4] += gy * y, acc[5] += gy;
        }
      }
      for (int k = 0; k < 6; ++k) Store(gtheta + n * 6 + k, req, acc[k]);
    }
  });
}

// grid_dst (3, H*W): the target coordinates (x, y, 1).
template <typename T>
void AffineTargetCoords(int64_t H, int64_t W, T* dst) {
  const int64_t P = H * W;
  for (int64_t p = 0; p < P; ++p) {
    dst[p] = static_cast<T>(NormCoord(p % W, W));
    dst[P + p] = static_cast<T>(NormCoord(p / W, H));
    dst[2 * P + p] = static_cast<T>(1);
  }
}

// ---------------------------------------------------------------- bilinear sampling
// Where a grid point falls in an H x W image: its top-left pixel and the fractions to
// the right and down. `inside` is false when none of the four neighbours exist (far
// outside, or not a number), so no cast of a huge coordinate happens.
struct Tap {
  int64_t x0 = 0, y0 = 0;
  double fx = 0, fy = 0;
  bool inside = false;
};

inline Tap TapAt(double gx, double gy, int64_t H, int64_t W) {
  Tap t;
  double xr = (gx + 1) * static_cast<double>(W - 1) / 2;
  double yr = (gy + 1) * static_cast<double>(H - 1) / 2;
  if (!(xr > -1 && xr < static_cast<double>(W) && yr > -1 && yr < static_cast<double>(H))) return t;
  double xf = std::floor(xr), yf = std::floor(yr);
  t.x0 = static_cast<int64_t>(xf);
  t.y0 = static_cast<int64_t>(yf);
  t.fx = xr - xf;
  t.fy = yr - yf;
  t.inside = true;
  return t;
}

// The four neighbours' values (zero outside the image): top-left, top-right,
// bottom-left, bottom-right.
template <typename T>
inline void Corners(const T* img, int64_t H, int64_t W, const Tap& t, double v[4]) {
  for (int k = 0; k < 4; ++k) {
    int64_t x = t.x0 + (k & 1), y = t.y0 + (k >> 1);
    v[k] = (x >= 0 && x < W && y >= 0 && y < H) ? static_cast<double>(img[y * W + x]) : 0.0;
  }
}

// The four neighbours of a grid point as flat offsets and weights, a missing neighbour
// having offset 0 and weight 0, so the per-channel loop has no branches.
struct Taps4 {
  int64_t off[4];
  double w[4];
};

inline Taps4 Taps4At(double gx, double gy, int64_t H, int64_t W) {
  Taps4 r{{0, 0, 0, 0}, {0, 0, 0, 0}};
  Tap t = TapAt(gx, gy, H, W);
  if (!t.inside) return r;
  const double w[4] = {(1 - t.fy) * (1 - t.fx), (1 - t.fy) * t.fx, t.fy * (1 - t.fx), t.fy * t.fx};
  for (int k = 0; k < 4; ++k) {
    int64_t x = t.x0 + (k & 1), y = t.y0 + (k >> 1);
    if (x >= 0 && x < W && y >= 0 && y < H) r.off[k] = y * W + x, r.w[k] = w[k];
  }
  return r;
}

// out (N, C, Ho, Wo) = data (N, C, H, W) sampled at grid (N, 2, Ho, Wo). Work goes by
// blocks of grid points of one image: their taps are found once, then every channel
// reads them.
template <typename T>
void BilinearForward(const T* data, const T* grid, int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho,
                     int64_t Wo, T* out, OpReq req) {
  const int64_t P = Ho * Wo;
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (P + kBlock - 1) / kBlock;
  ParallelFor(N * blocks, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(kBlock * C, 1)), [&](int64_t b, int64_t e) {
    std::vector<Taps4> taps(static_cast<size_t>(kBlock));
    for (int64_t nb = b; nb < e; ++nb) {
      const int64_t n = nb / blocks, p0 = (nb % blocks) * kBlock, len = std::min(kBlock, P - p0);
      const T* gr = grid + n * 2 * P;
      for (int64_t i = 0; i < len; ++i)
        taps[static_cast<size_t>(i)] =
            Taps4At(static_cast<double>(gr[p0 + i]), static_cast<double>(gr[P + p0 + i]), H, W);
      for (int64_t c = 0; c < C; ++c) {
        const T* img = data + (n * C + c) * H * W;
        T* y = out + (n * C + c) * P + p0;
        for (int64_t i = 0; i < len; ++i) {
          const Taps4& t = taps[static_cast<size_t>(i)];
          double r = t.w[0] * static_cast<double>(img[t.off[0]]) + t.w[1] * static_cast<double>(img[t.off[1]]) +
                     t.w[2] * static_cast<double>(img[t.off[2]]) + t.w[3] * static_cast<double>(img[t.off[3]]);
          Store(y + i, req, r);
        }
      }
    }
  });
}

// The gradients of BilinearForward: gdata (N, C, H, W) as req_data says (null skips it);
// ggrid (N, 2, Ho, Wo), in double, always written.
template <typename T>
void BilinearBackward(const T* ograd, const T* data, const T* grid, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t Ho, int64_t Wo, T* gdata, OpReq req_data, double* ggrid) {
  const int64_t P = Ho * Wo;
  using A = typename AccType<T>::type;
  if (gdata != nullptr && req_data != OpReq::kAddTo) std::fill(gdata, gdata + N * C * H * W, T(0));
  // Tasks own whole images n, so the scatter into gdata never races.
  ParallelFor(N, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* gr = grid + n * 2 * P;
      for (int64_t p = 0; p < P; ++p) {
        Tap t = TapAt(static_cast<double>(gr[p]), static_cast<double>(gr[P + p]), H, W);
        double gx = 0, gy = 0;
        if (t.inside) {
          const double w[4] = {(1 - t.fy) * (1 - t.fx), (1 - t.fy) * t.fx, t.fy * (1 - t.fx), t.fy * t.fx};
          for (int64_t c = 0; c < C; ++c) {
            const int64_t nc = n * C + c;
            double g = static_cast<double>(ograd[nc * P + p]);
            double v[4];
            Corners(data + nc * H * W, H, W, t, v);
            gx += g * ((v[1] - v[0]) * (1 - t.fy) + (v[3] - v[2]) * t.fy);
            gy += g * ((v[2] - v[0]) * (1 - t.fx) + (v[3] - v[1]) * t.fx);
            if (gdata == nullptr) continue;
            T* gimg = gdata + nc * H * W;
            for (int k = 0; k < 4; ++k) {
              int64_t x = t.x0 + (k & 1), y = t.y0 + (k >> 1);
              if (x >= 0 && x < W && y >= 0 && y < H)
                gimg[y * W + x] = static_cast<T>(static_cast<A>(gimg[y * W + x]) + static_cast<A>(g * w[k]));
            }
          }
        }
        ggrid[n * 2 * P + p] = gx * static_cast<double>(W - 1) / 2;
        ggrid[n * 2 * P + P + p] = gy * static_cast<double>(H - 1) / 2;
      }
    }
  });
}

// ---------------------------------------------------------------- GridGenerator
bool IsAffine(const NodeAttrs& attrs) { return attrs.Params<GridGeneratorParam>().transform_type == "affine"; }

// The grid's shape for data of shape d, checking d.
Shape GridOutShape(const NodeAttrs& attrs, const Shape& d) {
  if (IsAffine(attrs)) {
    if (d.ndim() != 2 || d[1] != 6)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
            "': with transform_type='affine', expected data of affine matrices (batch, 6), got shape ", d.ToString());
    Shape t = TargetShape(attrs, attrs.Params<GridGeneratorParam>().target_shape);
    return Shape{d[0], 2, t[0], t[1]};
  }
  if (d.ndim() != 4 || d[1] != 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': with transform_type='warp', expected data of optical flows (batch, 2, h, w), got shape ", d.ToString());
  return d;
}

Shape GridDstShape(const NodeAttrs& attrs, const Shape& out) {
  return IsAffine(attrs) ? Shape{3, out[2] * out[3]} : Shape{2, out[2], out[3]};
}

bool GridGeneratorShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  if (!(*in)[0].is_known()) return false;
  Shape o = GridOutShape(attrs, (*in)[0]);
  AssignShape(attrs, out, 0, o, "output");
  AssignShape(attrs, out, 1, GridDstShape(attrs, o), "output");
  return true;
}

void GridGeneratorCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& o = out[0].shape;
  const int64_t N = o[0], H = o[2], W = o[3];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "GridGenerator", {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    T* dst = out[1].ptr<T>();
    if (IsAffine(attrs)) {
      if (req[0] != OpReq::kNullOp) AffineGrid(x, N, H, W, y, req[0]);
      if (req[1] != OpReq::kNullOp) AffineTargetCoords(H, W, dst);
    } else {
      const double sx = W > 1 ? (W - 1) / 2.0 : 0.0, sy = H > 1 ? (H - 1) / 2.0 : 0.0;
      const int64_t P = H * W;
      // x' = (flow_x + w) / ((W-1)/2) - 1, y' likewise: the flow moves pixels, the grid is
      // normalised; a one-pixel axis sits at -1 as in NormCoord.
      if (req[0] != OpReq::kNullOp)
        ParallelFor(N * 2 * H, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(W, 1)), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            int64_t ch = (r / H) % 2, h = r % H;
            for (int64_t w = 0; w < W; ++w) {
              double base = ch == 0 ? static_cast<double>(w) : static_cast<double>(h);
              double s = ch == 0 ? sx : sy;
              Store(y + r * W + w, req[0], s > 0 ? (static_cast<double>(x[r * W + w]) + base) / s - 1.0 : -1.0);
            }
          }
        });
      if (req[1] != OpReq::kNullOp)
        for (int64_t p = 0; p < P; ++p) {
          dst[p] = static_cast<T>(p % W);
          dst[P + p] = static_cast<T>(p / W);
        }
    }
  });
}

// Input: ograd (the grid's gradient); output: the data's gradient.
bool GridGeneratorBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& g = (*in)[0];
  if (!g.is_known()) return false;
  bool ok = g.ndim() == 4 && g[1] == 2;
  if (ok && IsAffine(attrs)) {
    Shape t = TargetShape(attrs, attrs.Params<GridGeneratorParam>().target_shape);
    ok = g[2] == t[0] && g[3] == t[1];
  }
  if (!ok)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected the gradient of a grid (batch, 2, ",
          IsAffine(attrs) ? "target_shape" : "h, w", "), got shape ", g.ToString());
  AssignShape(attrs, out, 0, IsAffine(attrs) ? Shape{g[0], 6} : g, "output");
  return true;
}

void GridGeneratorBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& g = in[0].shape;
  const int64_t N = g[0], H = g[2], W = g[3];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_GridGenerator", {
    const T* og = in[0].ptr<T>();
    T* gd = out[0].ptr<T>();
    if (IsAffine(attrs)) {
      AffineGridGrad(og, N, H, W, gd, req[0]);
    } else {
      const double sx = W > 1 ? (W - 1) / 2.0 : 0.0, sy = H > 1 ? (H - 1) / 2.0 : 0.0;
      ParallelFor(N * 2 * H * W, kElemGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          bool is_x = (i / (H * W)) % 2 == 0;
          double s = is_x ? sx : sy;
          Store(gd + i, req[0], s > 0 ? static_cast<double>(og[i]) / s : 0.0);
        }
      });
    }
  });
}

// ---------------------------------------------------------------- BilinearSampler
void CheckSamplerShapes(const NodeAttrs& attrs, const Shape& d, const Shape& g) {
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data (batch, channel, h, w), got shape ",
          d.ToString());
  if (g.ndim() != 4 || g[1] != 2 || g[0] != d[0] || g[2] < 1 || g[3] < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a grid (", d[0],
          ", 2, h, w) for data of shape ", d.ToString(), ", got shape ", g.ToString());
}

bool BilinearSamplerShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &g = (*in)[1];
  if (!d.is_known() || !g.is_known()) return false;
  CheckSamplerShapes(attrs, d, g);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], g[2], g[3]}, "output");
  AssignShape(attrs, out, 1, Shape{d[0], g[2], g[3], 2}, "output");
  return true;
}

void BilinearSamplerCompute(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                            const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape &d = in[0].shape, &g = in[1].shape;
  const int64_t P = g[2] * g[3];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "BilinearSampler", {
    const T* grid = in[1].ptr<T>();
    if (req[0] != OpReq::kNullOp)
      BilinearForward(in[0].ptr<T>(), grid, d[0], d[1], d[2], d[3], g[2], g[3], out[0].ptr<T>(), req[0]);
    // tmp: the grid laid out as (N, h, w, 2), what cuDNN's sampler reads.
    if (req[1] != OpReq::kNullOp) {
      T* tmp = out[1].ptr<T>();
      for (int64_t n = 0; n < d[0]; ++n)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t c = 0; c < 2; ++c) tmp[(n * P + p) * 2 + c] = grid[(n * 2 + c) * P + p];
    }
  });
}

// Inputs: ograd, data, grid; outputs: the gradients of data and grid.
bool BilinearSamplerBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &g = (*in)[2];
  if (!d.is_known() || !g.is_known()) return false;
  CheckSamplerShapes(attrs, d, g);
  AssignShape(attrs, in, 0, Shape{d[0], d[1], g[2], g[3]}, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, g, "output");
  return true;
}

void BilinearSamplerBackward(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in,
                             const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape &d = in[1].shape, &g = in[2].shape;
  if (req[0] == OpReq::kNullOp && req[1] == OpReq::kNullOp) return;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_BilinearSampler", {
    std::vector<double> ggrid(static_cast<size_t>(g.Size()));
    BilinearBackward(in[0].ptr<T>(), in[1].ptr<T>(), in[2].ptr<T>(), d[0], d[1], d[2], d[3], g[2], g[3],
                     req[0] == OpReq::kNullOp ? nullptr : out[0].ptr<T>(), req[0], ggrid.data());
    if (req[1] != OpReq::kNullOp) {
      T* gg = out[1].ptr<T>();
      for (int64_t i = 0; i < g.Size(); ++i) Store(gg + i, req[1], ggrid[static_cast<size_t>(i)]);
    }
  });
}

// ---------------------------------------------------------------- SpatialTransformer
void CheckTransformerShapes(const NodeAttrs& attrs, const Shape& d, const Shape& loc) {
  if (d.ndim() != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data (batch, channel, h, w), got shape ",
          d.ToString());
  if (loc.ndim() != 2 || loc[1] != 6 || loc[0] != d[0])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected loc of affine matrices (", d[0],
          ", 6) for data of shape ", d.ToString(), ", got shape ", loc.ToString());
}

bool SpatialTransformerShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &loc = (*in)[1];
  if (!d.is_known() || !loc.is_known()) return false;
  CheckTransformerShapes(attrs, d, loc);
  Shape t = TargetShape(attrs, attrs.Params<SpatialTransformerParam>().target_shape);
  AssignShape(attrs, out, 0, Shape{d[0], d[1], t[0], t[1]}, "output");
  AssignShape(attrs, out, 1, Shape{3, t[0] * t[1]}, "output");
  AssignShape(attrs, out, 2, Shape{d[0], 2, t[0] * t[1]}, "output");
  return true;
}

void SpatialTransformerCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                               const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& d = in[0].shape;
  Shape t = TargetShape(attrs, attrs.Params<SpatialTransformerParam>().target_shape);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "SpatialTransformer", {
    std::vector<T> grid(static_cast<size_t>(d[0] * 2 * t[0] * t[1]));
    AffineGrid(in[1].ptr<T>(), d[0], t[0], t[1], grid.data(), OpReq::kWriteTo);
    if (req[0] != OpReq::kNullOp)
      BilinearForward(in[0].ptr<T>(), grid.data(), d[0], d[1], d[2], d[3], t[0], t[1], out[0].ptr<T>(), req[0]);
    if (req[1] != OpReq::kNullOp) AffineTargetCoords(t[0], t[1], out[1].ptr<T>());
    if (req[2] != OpReq::kNullOp) std::copy(grid.begin(), grid.end(), out[2].ptr<T>());
  });
}

// Inputs: ograd, data, loc; outputs: the gradients of data and loc.
bool SpatialTransformerBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &loc = (*in)[2];
  if (!d.is_known() || !loc.is_known()) return false;
  CheckTransformerShapes(attrs, d, loc);
  Shape t = TargetShape(attrs, attrs.Params<SpatialTransformerParam>().target_shape);
  AssignShape(attrs, in, 0, Shape{d[0], d[1], t[0], t[1]}, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, loc, "output");
  return true;
}

void SpatialTransformerBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                                const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp && req[1] == OpReq::kNullOp) return;
  const Shape& d = in[1].shape;
  Shape t = TargetShape(attrs, attrs.Params<SpatialTransformerParam>().target_shape);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_SpatialTransformer", {
    std::vector<T> grid(static_cast<size_t>(d[0] * 2 * t[0] * t[1]));
    AffineGrid(in[2].ptr<T>(), d[0], t[0], t[1], grid.data(), OpReq::kWriteTo);
    std::vector<double> ggrid(grid.size());
    BilinearBackward(in[0].ptr<T>(), in[1].ptr<T>(), grid.data(), d[0], d[1], d[2], d[3], t[0], t[1],
                     req[0] == OpReq::kNullOp ? nullptr : out[0].ptr<T>(), req[0], ggrid.data());
    if (req[1] != OpReq::kNullOp) AffineGridGrad(ggrid.data(), d[0], t[0], t[1], out[1].ptr<T>(), req[1]);
  });
}

}  // namespace

WEFT_REGISTER_OP(GridGenerator)
    .Describe(
        "Makes a sampling grid (batch, 2, H, W) of normalised (x, y) source coordinates for BilinearSampler: from "
        "affine matrices (batch, 6) over a target_shape (H, W) grid, or from optical flows (batch, 2, H, W) in "
        "pixels. The second output, grid_dst (hidden), holds the target coordinates.")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "Affine matrices (batch, 6) or optical flows (batch, 2, h, w)")
    .SetParams<GridGeneratorParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "grid_dst"}; })
    .SetAttr<FInferShape>("FInferShape", GridGeneratorShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", GridGeneratorCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_GridGenerator", {a.out_grads[0]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_GridGenerator)
    .Describe("Gradient of GridGenerator with respect to its data.")
    .SetNumInputs(1)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the grid")
    .SetParams<GridGeneratorParam>()
    .SetAttr<FInferShape>("FInferShape", GridGeneratorBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", GridGeneratorBackward);

WEFT_REGISTER_OP(BilinearSampler)
    .Describe(
        "Samples data (batch, channel, h, w) at a grid (batch, 2, H, W) of normalised (x, y) coordinates, -1 and 1 "
        "being the centres of the first and last pixels, with bilinear interpolation; points outside read zeros. "
        "The output is (batch, channel, H, W); the second output, tmp (hidden), is the grid as (batch, H, W, 2).")
    .SetNumInputs(2)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The images to sample (batch, channel, h, w)")
    .AddArgument("grid", "NDArray-or-Symbol", "Where to sample (batch, 2, H, W): channel 0 is x, channel 1 is y")
    .SetParams<BilinearSamplerParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "tmp"}; })
    .SetAttr<FInferShape>("FInferShape", BilinearSamplerShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BilinearSamplerCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_BilinearSampler", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_BilinearSampler)
    .Describe("Gradient of BilinearSampler with respect to its data and grid.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("grid", "NDArray-or-Symbol", "The forward grid")
    .SetParams<BilinearSamplerParam>()
    .SetAttr<FInferShape>("FInferShape", BilinearSamplerBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", BilinearSamplerBackward);

WEFT_REGISTER_OP(SpatialTransformer)
    .Describe(
        "Applies an affine transformation to data (batch, channel, h, w): the affine matrices loc (batch, 6) map "
        "a target_shape (H, W) grid of normalised coordinates into the data, which is sampled there bilinearly "
        "(GridGenerator then BilinearSampler). Hidden outputs: grid_dst (3, H*W) and grid_src (batch, 2, H*W).")
    .SetNumInputs(2)
    .SetNumOutputs(3)
    .AddArgument("data", "NDArray-or-Symbol", "The images to transform (batch, channel, h, w)")
    .AddArgument("loc", "NDArray-or-Symbol",
                 "The affine matrices (batch, 6), row-major 2x3, typically a localisation network's output")
    .SetParams<SpatialTransformerParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "grid_dst", "grid_src"}; })
    .SetAttr<FInferShape>("FInferShape", SpatialTransformerShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", SpatialTransformerCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return b.Call("_backward_SpatialTransformer", {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_SpatialTransformer)
    .Describe("Gradient of SpatialTransformer with respect to its data and loc.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("loc", "NDArray-or-Symbol", "The forward affine matrices")
    .SetParams<SpatialTransformerParam>()
    .SetAttr<FInferShape>("FInferShape", SpatialTransformerBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", SpatialTransformerBackward);

}  // namespace op
}  // namespace weft

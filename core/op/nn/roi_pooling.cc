// Region-of-interest pooling: ROIPooling (max over quantised bins, Fast R-CNN),
// _contrib_ROIAlign (averages of bilinear samples over exact bins, Mask R-CNN; with
// position_sensitive bins as in R-FCN and Detectron2's half-pixel `aligned` boxes),
// _contrib_PSROIPooling (R-FCN's position-sensitive average over quantised bins) and
// _contrib_RROIAlign (ROIAlign over rotated boxes [batch_index, cx, cy, w, h, degrees],
// which MXNet gives no gradient; Weft gives data one, the sums of its samples' weights). Data
// is (N, C, H, W); each ROI is a row [batch_index, x1, y1, x2, y2] in image coordinates,
// scaled to the feature map by spatial_scale. An ROI whose batch index is outside [0, N)
// pools to zeros. Neither operator gives the ROIs a gradient (zeros, as in MXNet).
//
// The backward operators take the forward data and ROIs and recompute where each output
// came from instead of reading ROIPooling's hidden maxidx output, so a hand-called backward
// cannot be made to write outside the data's gradient.
#include <cmath>
#include <limits>
#include <vector>

#include "core/op/nn/roi_common.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct ROIPoolingParam {
  Shape pooled_size;
  double spatial_scale = 1;
};

WEFT_PARAM_SCHEMA(ROIPoolingParam, s) {
  s.Field("pooled_size", &ROIPoolingParam::pooled_size).Describe("The output size of each ROI: (h, w).");
  s.Field("spatial_scale", &ROIPoolingParam::spatial_scale)
      .Range(0, 1)
      .Describe("The feature map's size over the image's (the inverse of the network's total stride).");
}

struct PSROIPoolingParam {
  double spatial_scale = 1;
  int output_dim = 0;
  int pooled_size = 0;
  int group_size = 0;
};

WEFT_PARAM_SCHEMA(PSROIPoolingParam, s) {
  s.Field("spatial_scale", &PSROIPoolingParam::spatial_scale)
      .Range(0, 1)
      .Describe("The feature map's size over the image's (the inverse of the network's total stride).");
  s.Field("output_dim", &PSROIPoolingParam::output_dim).Min(1).Describe("The output channels.");
  s.Field("pooled_size", &PSROIPoolingParam::pooled_size).Min(1).Describe("The output size of each ROI (square).");
  s.Field("group_size", &PSROIPoolingParam::group_size)
      .Default(0)
      .Min(0)
      .Describe("The side of the grid of position-sensitive channel groups; 0 means pooled_size.");
}

struct ROIAlignParam {
  Shape pooled_size;
  double spatial_scale = 1;
  int sample_ratio = -1;
  bool position_sensitive = false;
  bool aligned = false;
};

WEFT_PARAM_SCHEMA(ROIAlignParam, s) {
  s.Field("pooled_size", &ROIAlignParam::pooled_size).Describe("The output size of each ROI: (h, w).");
  s.Field("spatial_scale", &ROIAlignParam::spatial_scale)
      .Range(0, 1)
      .Describe("The feature map's size over the image's (the inverse of the network's total stride).");
  s.Field("sample_ratio", &ROIAlignParam::sample_ratio)
      .Default(-1)
      .Describe("Samples per bin along each axis; <= 0 picks ceil(bin size) adaptively.");
  s.Field("position_sensitive", &ROIAlignParam::position_sensitive)
      .Default(false)
      .Describe(
          "Position-sensitive pooling (R-FCN): bin (i, j) of output channel c reads input channel "
          "(c * h + i) * w + j, so the output has C / (h * w) channels.");
  s.Field("aligned", &ROIAlignParam::aligned)
      .Default(false)
      .Describe("Shift the scaled box by half a pixel (Detectron2's aligned ROIAlign); boxes must then be non-empty.");
}

struct RROIAlignParam {
  Shape pooled_size;
  double spatial_scale = 1;
  int sampling_ratio = -1;
};

WEFT_PARAM_SCHEMA(RROIAlignParam, s) {
  s.Field("pooled_size", &RROIAlignParam::pooled_size).Describe("The output size of each ROI: (h, w).");
  s.Field("spatial_scale", &RROIAlignParam::spatial_scale)
      .Range(0, 1)
      .Describe("The feature map's size over the image's (the inverse of the network's total stride).");
  s.Field("sampling_ratio", &RROIAlignParam::sampling_ratio)
      .Default(-1)
      .Describe("Samples per bin along each axis; <= 0 picks ceil(bin size) adaptively.");
}

namespace {

Shape PooledSize(const NodeAttrs& attrs, const Shape& p) {
  if (p.ndim() != 2 || p[0] < 1 || p[1] < 1)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected pooled_size (h, w) with h, w >= 1, got ",
          p.ToString());
  return p;
}

// The data and ROI dtypes: one floating dtype for data, rois and the output.
bool RoiType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = (*in)[0];
  if (t == DType::kUnknown) t = (*out)[0];
  if (t == DType::kUnknown) return false;
  if (!IsFloatDType(t))
    Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': expected floating-point data, got ", DTypeName(t));
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, t, "input");
  AssignType(attrs, out, 0, t, "output");
  return true;
}

// ---------------------------------------------------------------- ROIPooling
// Calls f(out_index, flat data index or -1) for every output element, the index being
// where the maximum of that bin lies (the first one in row-major order on ties).
template <typename T, typename F>
void RoiPoolArgmax(const NodeAttrs& attrs, const T* data, const T* rois, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t R, F&& f) {
  const auto& p = attrs.Params<ROIPoolingParam>();
  Shape ps = PooledSize(attrs, p.pooled_size);
  const int64_t PH = ps[0], PW = ps[1];
  const double scale = p.spatial_scale;
  ParallelFor(R * C, 1, [&](int64_t b, int64_t e) {
    for (int64_t rc = b; rc < e; ++rc) {
      int64_t r = rc / C, c = rc % C;
      const T* roi = rois + r * 5;
      int64_t n = RoiBatch(roi, N);
      // Coordinates far outside any image are clamped before the integer cast; the bins
      // they make are clipped to the image below anyway.
      auto q = [&](T v) {
        double x = std::round(static_cast<double>(v) * scale);
        return static_cast<int64_t>(std::isnan(x) ? 0.0 : std::max(-1e15, std::min(1e15, x)));
      };
      int64_t x1 = q(roi[1]), y1 = q(roi[2]), x2 = q(roi[3]), y2 = q(roi[4]);
      const double bin_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / PH;
      const double bin_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / PW;
      const T* img = n >= 0 ? data + (n * C + c) * H * W : nullptr;
      for (int64_t ph = 0; ph < PH; ++ph) {
        int64_t hs = std::min(std::max<int64_t>(static_cast<int64_t>(std::floor(ph * bin_h)) + y1, 0), H);
        int64_t he = std::min(std::max<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + y1, 0), H);
        for (int64_t pw = 0; pw < PW; ++pw) {
          int64_t ws = std::min(std::max<int64_t>(static_cast<int64_t>(std::floor(pw * bin_w)) + x1, 0), W);
          int64_t we = std::min(std::max<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + x1, 0), W);
          int64_t arg = -1;
          if (img != nullptr && he > hs && we > ws) {
            double best = -std::numeric_limits<double>::max();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w)
                if (static_cast<double>(img[h * W + w]) > best) {
                  best = static_cast<double>(img[h * W + w]);
                  arg = h * W + w;
                }
            if (arg < 0) arg = -2;  // a bin with no value above the lowest float (NaNs only)
          }
          f((rc * PH + ph) * PW + pw, arg < 0 ? arg : (n * C + c) * H * W + arg);
        }
      }
    }
  });
}

bool ROIPoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &r = (*in)[1];
  if (!d.known_ndim() || !r.known_ndim()) return false;
  CheckRoiInputs(attrs, d, r);
  Shape ps = PooledSize(attrs, attrs.Params<ROIPoolingParam>().pooled_size);
  Shape o{r[0], d[1], ps[0], ps[1]};
  AssignShape(attrs, out, 0, o, "output");
  AssignShape(attrs, out, 1, o, "output");
  return d.is_known() && r.is_known();
}

bool ROIPoolingType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  std::vector<DType> first = {(*out)[0]};
  bool ok = RoiType(attrs, in, &first);
  (*out)[0] = first[0];
  AssignType(attrs, out, 1, DType::kInt64, "output");
  return ok;
}

void ROIPoolingCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& d = in[0].shape;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "ROIPooling", {
    const T* data = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    int64_t* idx = out[1].ptr<int64_t>();
    RoiPoolArgmax(attrs, data, in[1].ptr<T>(), d[0], d[1], d[2], d[3], in[1].shape[0], [&](int64_t o, int64_t a) {
      // Empty bins and ROIs of no image give 0; a bin of NaNs the lowest float, as MXNet's.
      double v = a >= 0 ? static_cast<double>(data[a]) : (a == -1 ? 0.0 : -std::numeric_limits<float>::max());
      if (req[0] != OpReq::kNullOp) Store(y + o, req[0], v);
      if (req[1] != OpReq::kNullOp) idx[o] = a < 0 ? -1 : a;
    });
  });
}

// Inputs: ograd, data, rois; outputs: the gradients of data and rois.
bool ROIPoolingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &r = (*in)[2];
  if (!d.is_known() || !r.is_known()) return false;
  CheckRoiInputs(attrs, d, r);
  Shape ps = PooledSize(attrs, attrs.Params<ROIPoolingParam>().pooled_size);
  AssignShape(attrs, in, 0, Shape{r[0], d[1], ps[0], ps[1]}, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, r, "output");
  return true;
}

void ROIPoolingBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                        const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& d = in[1].shape;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_ROIPooling", {
    if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
      std::fill(out[1].ptr<T>(), out[1].ptr<T>() + out[1].Size(), T(0));
    if (req[0] != OpReq::kNullOp) {
      const T* g = in[0].ptr<T>();
      T* gd = out[0].ptr<T>();
      if (req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
      std::vector<int64_t> arg(static_cast<size_t>(in[0].Size()));
      RoiPoolArgmax(attrs, in[1].ptr<T>(), in[2].ptr<T>(), d[0], d[1], d[2], d[3], in[2].shape[0],
                    [&](int64_t o, int64_t a) { arg[static_cast<size_t>(o)] = a; });
      // Serial: ROIs overlap, so bins of different ROIs may share a maximum.
      for (size_t o = 0; o < arg.size(); ++o)
        if (arg[o] >= 0) gd[arg[o]] = static_cast<T>(static_cast<double>(gd[arg[o]]) + static_cast<double>(g[o]));
    }
  });
}

// ---------------------------------------------------------------- PSROIPooling
int PsGroup(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<PSROIPoolingParam>();
  return p.group_size > 0 ? p.group_size : p.pooled_size;
}

bool PSROIPoolingShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &r = (*in)[1];
  if (!d.known_ndim() || !r.known_ndim()) return false;
  CheckRoiInputs(attrs, d, r);
  const auto& p = attrs.Params<PSROIPoolingParam>();
  const int64_t g = PsGroup(attrs);
  if (d[1] >= 0 && d[1] < p.output_dim * g * g)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected at least output_dim * group_size^2 = ",
          p.output_dim * g * g, " channels, got data of shape ", d.ToString());
  AssignShape(attrs, out, 0, Shape{r[0], p.output_dim, p.pooled_size, p.pooled_size}, "output");
  return d.is_known() && r.is_known();
}

// Calls f(output index, input channel plane, [hs, he) x [ws, we)) for every output
// element whose bin is not empty; the others are zero.
template <typename T, typename F>
void PsRoiBins(const NodeAttrs& attrs, const T* rois, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, F&& f) {
  const auto& p = attrs.Params<PSROIPoolingParam>();
  const int64_t P = p.pooled_size, D = p.output_dim, G = PsGroup(attrs);
  // Bin edges far outside the map are clamped before the integer cast; they clip to it anyway.
  auto edge = [](double v, int64_t n) {
    return static_cast<int64_t>(std::isnan(v) ? 0.0 : std::min(std::max(v, 0.0), static_cast<double>(n)));
  };
  for (int64_t r = 0; r < R; ++r) {
    const T* roi = rois + r * 5;
    const int64_t n = RoiBatch(roi, N);
    if (n < 0) continue;
    const double x1 = std::round(static_cast<double>(roi[1])) * p.spatial_scale;
    const double y1 = std::round(static_cast<double>(roi[2])) * p.spatial_scale;
    const double x2 = (std::round(static_cast<double>(roi[3])) + 1) * p.spatial_scale;
    const double y2 = (std::round(static_cast<double>(roi[4])) + 1) * p.spatial_scale;
    // Boxes thinner than a tenth of a pixel are widened to it.
    const double bh = std::max(y2 - y1, 0.1) / P, bw = std::max(x2 - x1, 0.1) / P;
    for (int64_t ph = 0; ph < P; ++ph) {
      const int64_t hs = edge(std::floor(ph * bh + y1), H), he = edge(std::ceil((ph + 1) * bh + y1), H);
      const int64_t gh = std::min(std::max<int64_t>(ph * G / P, 0), G - 1);
      for (int64_t pw = 0; pw < P; ++pw) {
        const int64_t ws = edge(std::floor(pw * bw + x1), W), we = edge(std::ceil((pw + 1) * bw + x1), W);
        if (he <= hs || we <= ws) continue;
        const int64_t gw = std::min(std::max<int64_t>(pw * G / P, 0), G - 1);
        for (int64_t c = 0; c < D; ++c)
          f(((r * D + c) * P + ph) * P + pw, (n * C + (c * G + gh) * G + gw) * H * W, hs, he, ws, we);
      }
    }
  }
}

void PSROIPoolingCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                         const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape& d = in[0].shape;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_PSROIPooling", {
    const T* data = in[0].ptr<T>();
    std::vector<double> y(static_cast<size_t>(out[0].Size()), 0.0);
    PsRoiBins(attrs, in[1].ptr<T>(), d[0], d[1], d[2], d[3], in[1].shape[0],
              [&](int64_t o, int64_t plane, int64_t hs, int64_t he, int64_t ws, int64_t we) {
                double sum = 0;
                for (int64_t h = hs; h < he; ++h)
                  for (int64_t w = ws; w < we; ++w) sum += static_cast<double>(data[plane + h * d[3] + w]);
                y[static_cast<size_t>(o)] = sum / static_cast<double>((he - hs) * (we - ws));
              });
    T* dst = out[0].ptr<T>();
    for (size_t i = 0; i < y.size(); ++i) Store(dst + i, req[0], y[i]);
  });
}

// Inputs: ograd, data, rois; outputs: the gradients of data and rois.
bool PSROIPoolingBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &r = (*in)[2];
  if (!d.is_known() || !r.is_known()) return false;
  std::vector<Shape> fwd_in = {d, r}, fwd_out = {Shape()};
  PSROIPoolingShape(attrs, &fwd_in, &fwd_out);
  AssignShape(attrs, in, 0, fwd_out[0], "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, r, "output");
  return true;
}

void PSROIPoolingBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape& d = in[1].shape;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_PSROIPooling", {
    if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
      std::fill(out[1].ptr<T>(), out[1].ptr<T>() + out[1].Size(), T(0));
    if (req[0] != OpReq::kNullOp) {
      const T* g = in[0].ptr<T>();
      T* gd = out[0].ptr<T>();
      if (req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
      PsRoiBins(attrs, in[2].ptr<T>(), d[0], d[1], d[2], d[3], in[2].shape[0],
                [&](int64_t o, int64_t plane, int64_t hs, int64_t he, int64_t ws, int64_t we) {
                  const double v = static_cast<double>(g[o]) / static_cast<double>((he - hs) * (we - ws));
                  for (int64_t h = hs; h < he; ++h)
                    for (int64_t w = ws; w < we; ++w) {
                      T* x = gd + plane + h * d[3] + w;
                      *x = static_cast<T>(static_cast<double>(*x) + v);
                    }
                });
    }
  });
}

// ---------------------------------------------------------------- ROIAlign
// One bilinear sample: up to four (flat pixel index, weight) pairs.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// The sample at (y, x) in an H x W map, following Mask R-CNN's rules: points more than
// a pixel outside read nothing; points within a pixel outside are clamped to the edge.
inline Sample SampleAt(double y, double x, int64_t H, int64_t W) {
  Sample s;
  if (!(y >= -1.0 && y <= static_cast<double>(H) && x >= -1.0 && x <= static_cast<double>(W))) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= H - 1) y1 = y0 = H - 1, y = static_cast<double>(y0);
  else y1 = y0 + 1;
  if (x0 >= W - 1) x1 = x0 = W - 1, x = static_cast<double>(x0);
  else x1 = x0 + 1;
  double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * W + x0, s.pos[1] = y0 * W + x1, s.pos[2] = y1 * W + x0, s.pos[3] = y1 * W + x1;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

// Where one ROI's samples lie: its image (-1 pools to zeros), its top-left corner and
// bin size on the feature map, and the samples per bin along each axis.
struct RoiGeom {
  int64_t n = -1;
  double x1 = 0, y1 = 0, bh = 0, bw = 0;
  int64_t gh = 1, gw = 1;
};

// Throws on a malformed ROI; called for every ROI before any parallel loop, since an
// exception must not leave an OpenMP region.
template <typename T>
RoiGeom GeomOf(const NodeAttrs& attrs, const T* roi, int64_t N) {
  const auto& p = attrs.Params<ROIAlignParam>();
  Shape ps = PooledSize(attrs, p.pooled_size);
  const int64_t PH = ps[0], PW = ps[1];
  RoiGeom g;
  g.n = RoiBatch(roi, N);
  if (g.n < 0) return g;
  const double off = p.aligned ? 0.5 : 0.0;
  double x1 = static_cast<double>(roi[1]) * p.spatial_scale - off, y1 = static_cast<double>(roi[2]) * p.spatial_scale - off;
  double x2 = static_cast<double>(roi[3]) * p.spatial_scale - off, y2 = static_cast<double>(roi[4]) * p.spatial_scale - off;
  double rw = x2 - x1, rh = y2 - y1;
  if (!std::isfinite(rw) || !std::isfinite(rh) || !std::isfinite(x1) || !std::isfinite(y1))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ROI [", static_cast<double>(roi[1]), ", ",
          static_cast<double>(roi[2]), ", ", static_cast<double>(roi[3]), ", ", static_cast<double>(roi[4]),
          "] has a coordinate that is not finite");
  if (p.aligned) {
    if (!(rw > 0 && rh > 0))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': with aligned=True, expected ROIs of positive width ",
            "and height, got width ", rw, " and height ", rh, " on the feature map");
  } else {
    // Degenerate boxes are widened to one pixel, as in Fast R-CNN.
    rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  }
  g.x1 = x1, g.y1 = y1, g.bh = rh / PH, g.bw = rw / PW;
  double gh = p.sample_ratio > 0 ? p.sample_ratio : std::ceil(g.bh);
  double gw = p.sample_ratio > 0 ? p.sample_ratio : std::ceil(g.bw);
  // An ROI spanning millions of pixels per bin is a malformed box, not a workload.
  constexpr double kMaxSamples = 1 << 22;
  if (gh * gw * PH * PW > kMaxSamples)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an ROI of ", rw, " x ", rh,
          " feature-map pixels would take more than ", kMaxSamples, " samples; pass sample_ratio or smaller boxes");
  g.gh = static_cast<int64_t>(std::max(gh, 1.0));
  g.gw = static_cast<int64_t>(std::max(gw, 1.0));
  return g;
}

template <typename T>
std::vector<RoiGeom> GeomsOf(const NodeAttrs& attrs, const T* rois, int64_t R, int64_t N) {
  std::vector<RoiGeom> out(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) out[static_cast<size_t>(r)] = GeomOf(attrs, rois + r * 5, N);
  return out;
}

// The samples of every bin of an ROI, row-major over (ph, pw), gh * gw per bin.
std::vector<Sample> SamplesOf(const RoiGeom& g, int64_t PH, int64_t PW, int64_t H, int64_t W) {
  std::vector<Sample> s;
  s.reserve(static_cast<size_t>(PH * PW * g.gh * g.gw));
  for (int64_t ph = 0; ph < PH; ++ph)
    for (int64_t pw = 0; pw < PW; ++pw)
      for (int64_t iy = 0; iy < g.gh; ++iy) {
        double y = g.y1 + ph * g.bh + (iy + 0.5) * g.bh / static_cast<double>(g.gh);
        for (int64_t ix = 0; ix < g.gw; ++ix) {
          double x = g.x1 + pw * g.bw + (ix + 0.5) * g.bw / static_cast<double>(g.gw);
          s.push_back(SampleAt(y, x, H, W));
        }
      }
  return s;
}

// The output shape for data d and rois r.
Shape RoiAlignOutShape(const NodeAttrs& attrs, const Shape& d, const Shape& r) {
  const auto& p = attrs.Params<ROIAlignParam>();
  Shape ps = PooledSize(attrs, p.pooled_size);
  int64_t c = d[1];
  if (p.position_sensitive) {
    if (c >= 0 && c % (ps[0] * ps[1]) != 0)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': with position_sensitive=True, expected channels ",
            "divisible by pooled_size h * w = ", ps[0] * ps[1], ", got data of shape ", d.ToString());
    c = c < 0 ? -1 : c / (ps[0] * ps[1]);
  }
  return Shape{r[0], c, ps[0], ps[1]};
}

// The input channel of output channel c at bin (ph, pw).
inline int64_t RoiAlignChannel(bool ps, int64_t c, int64_t ph, int64_t pw, int64_t PH, int64_t PW) {
  return ps ? (c * PH + ph) * PW + pw : c;
}

bool ROIAlignShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &r = (*in)[1];
  if (!d.known_ndim() || !r.known_ndim()) return false;
  CheckRoiInputs(attrs, d, r);
  AssignShape(attrs, out, 0, RoiAlignOutShape(attrs, d, r), "output");
  return d.is_known() && r.is_known();
}

// One ROI's output for ROIAlign and RROIAlign: each of `bins` bins of each of C channels is
// the mean of its `per_bin` bilinear samples (samples[bin * per_bin + k]) of the image plane
// image(c, bin) gives; zeros where the ROI reads nothing.
template <typename T, typename Image>
void AverageBins(const std::vector<Sample>& samples, int64_t per_bin, int64_t C, int64_t bins, bool reads, OpReq req,
                 T* y, Image image) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t bin = 0; bin < bins; ++bin) {
      double acc = 0;
      if (reads) {
        const T* img = image(c, bin);
        for (int64_t k = 0; k < per_bin; ++k) {
          const Sample& s = samples[static_cast<size_t>(bin * per_bin + k)];
          for (int j = 0; j < 4; ++j) acc += s.w[j] * static_cast<double>(img[s.pos[j]]);
        }
        acc /= static_cast<double>(per_bin);
      }
      Store(y + c * bins + bin, req, acc);
    }
}

void ROIAlignCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape &d = in[0].shape, &o = out[0].shape;
  const int64_t N = d[0], CI = d[1], H = d[2], W = d[3], R = o[0], C = o[1], PH = o[2], PW = o[3];
  const bool ps = attrs.Params<ROIAlignParam>().position_sensitive;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_ROIAlign", {
    const T* data = in[0].ptr<T>();
    const T* rois = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    std::vector<RoiGeom> geoms = GeomsOf(attrs, rois, R, N);
    ParallelFor(R, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const RoiGeom& geom = geoms[static_cast<size_t>(r)];
        // An empty map has no pixel to read: its ROIs pool to zeros.
        const bool reads = geom.n >= 0 && H > 0 && W > 0;
        std::vector<Sample> samples = reads ? SamplesOf(geom, PH, PW, H, W) : std::vector<Sample>();
        AverageBins(samples, geom.gh * geom.gw, C, PH * PW, reads, req[0], y + r * C * PH * PW,
                    [&](int64_t c, int64_t bin) {
                      return data + (geom.n * CI + RoiAlignChannel(ps, c, bin / PW, bin % PW, PH, PW)) * H * W;
                    });
      }
    });
  });
}

// Inputs: ograd, data, rois; outputs: the gradients of data and rois.
bool ROIAlignBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &r = (*in)[2];
  if (!d.is_known() || !r.is_known()) return false;
  CheckRoiInputs(attrs, d, r);
  AssignShape(attrs, in, 0, RoiAlignOutShape(attrs, d, r), "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, r, "output");
  return true;
}

void ROIAlignBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape &d = in[1].shape, &o = in[0].shape;
  const int64_t N = d[0], CI = d[1], H = d[2], W = d[3], R = o[0], C = o[1], PH = o[2], PW = o[3];
  const bool ps = attrs.Params<ROIAlignParam>().position_sensitive;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_ROIAlign", {
    if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
      std::fill(out[1].ptr<T>(), out[1].ptr<T>() + out[1].Size(), T(0));
    if (req[0] != OpReq::kNullOp) {
      const T* g = in[0].ptr<T>();
      const T* rois = in[2].ptr<T>();
      T* gd = out[0].ptr<T>();
      if (req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
      // Serial over ROIs: different ROIs may sample the same pixels.
      std::vector<RoiGeom> geoms = GeomsOf(attrs, rois, R, N);
      for (int64_t r = 0; r < R; ++r) {
        const RoiGeom& geom = geoms[static_cast<size_t>(r)];
        if (geom.n < 0 || H == 0 || W == 0) continue;
        std::vector<Sample> samples = SamplesOf(geom, PH, PW, H, W);
        const int64_t per_bin = geom.gh * geom.gw;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t bin = 0; bin < PH * PW; ++bin) {
            double gv = static_cast<double>(g[(r * C + c) * PH * PW + bin]) / static_cast<double>(per_bin);
            T* gimg = gd + (geom.n * CI + RoiAlignChannel(ps, c, bin / PW, bin % PW, PH, PW)) * H * W;
            for (int64_t k = 0; k < per_bin; ++k) {
              const Sample& s = samples[static_cast<size_t>(bin * per_bin + k)];
              for (int j = 0; j < 4; ++j)
                if (s.w[j] != 0) gimg[s.pos[j]] = static_cast<T>(static_cast<double>(gimg[s.pos[j]]) + gv * s.w[j]);
            }
          }
      }
    }
  });
}

// ---------------------------------------------------------------- RROIAlign
// A rotated ROI on the feature map: its image (-1 pools to zeros), centre, rotation, the
// corner of its unrotated box relative to the centre, bin size and samples per bin.
struct RRoiGeom {
  int64_t n = -1;
  double cx = 0, cy = 0, cos_t = 1, sin_t = 0, x0 = 0, y0 = 0, bh = 0, bw = 0;
  int64_t gh = 1, gw = 1;
};

// Throws on a malformed ROI; called for every ROI before any parallel loop.
template <typename T>
RRoiGeom RotatedGeomOf(const NodeAttrs& attrs, const T* roi, int64_t N) {
  const auto& p = attrs.Params<RROIAlignParam>();
  Shape ps = PooledSize(attrs, p.pooled_size);
  RRoiGeom g;
  g.n = RoiBatch(roi, N);
  if (g.n < 0) return g;
  const double scale = p.spatial_scale;
  double vals[5];
  for (int i = 0; i < 5; ++i) vals[i] = static_cast<double>(roi[i + 1]);
  for (double v : vals)
    if (!std::isfinite(v))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ROI [", vals[0], ", ", vals[1], ", ", vals[2], ", ",
            vals[3], ", ", vals[4], "] has a value that is not finite");
  // Degenerate boxes are widened to one pixel, as in ROIAlign.
  const double rw = std::max(vals[2] * scale, 1.0), rh = std::max(vals[3] * scale, 1.0);
  const double theta = vals[4] * M_PI / 180.0;
  g.cx = vals[0] * scale, g.cy = vals[1] * scale, g.cos_t = std::cos(theta), g.sin_t = std::sin(theta);
  g.x0 = -rw / 2, g.y0 = -rh / 2, g.bh = rh / ps[0], g.bw = rw / ps[1];
  const double gh = p.sampling_ratio > 0 ? p.sampling_ratio : std::ceil(rh / ps[0]);
  const double gw = p.sampling_ratio > 0 ? p.sampling_ratio : std::ceil(rw / ps[1]);
  constexpr double kMaxSamples = 1 << 22;
  if (gh * gw * ps[0] * ps[1] > kMaxSamples)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': an ROI of ", rw, " x ", rh,
          " feature-map pixels would take more than ", kMaxSamples, " samples; pass sampling_ratio or smaller boxes");
  g.gh = static_cast<int64_t>(std::max(gh, 1.0)), g.gw = static_cast<int64_t>(std::max(gw, 1.0));
  return g;
}

// The samples of every bin, row-major over (ph, pw), gh * gw per bin: a regular grid in
// the unrotated box, turned by the ROI's angle about its centre.
std::vector<Sample> RotatedSamplesOf(const RRoiGeom& g, int64_t PH, int64_t PW, int64_t H, int64_t W) {
  std::vector<Sample> s;
  s.reserve(static_cast<size_t>(PH * PW * g.gh * g.gw));
  for (int64_t ph = 0; ph < PH; ++ph)
    for (int64_t pw = 0; pw < PW; ++pw)
      for (int64_t iy = 0; iy < g.gh; ++iy) {
        const double yy = g.y0 + ph * g.bh + (iy + 0.5) * g.bh / static_cast<double>(g.gh);
        for (int64_t ix = 0; ix < g.gw; ++ix) {
          const double xx = g.x0 + pw * g.bw + (ix + 0.5) * g.bw / static_cast<double>(g.gw);
          s.push_back(SampleAt(yy * g.cos_t - xx * g.sin_t + g.cy, xx * g.cos_t + yy * g.sin_t + g.cx, H, W));
        }
      }
  return s;
}

template <typename T>
std::vector<RRoiGeom> RotatedGeomsOf(const NodeAttrs& attrs, const T* rois, int64_t R, int64_t N) {
  std::vector<RRoiGeom> out(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) out[static_cast<size_t>(r)] = RotatedGeomOf(attrs, rois + r * 6, N);
  return out;
}

void CheckRotatedInputs(const NodeAttrs& attrs, const Shape& d, const Shape& r) {
  CheckRoiInputs(attrs, d, r, 6, "[batch_index, center_x, center_y, width, height, degrees]");
}

bool RROIAlignShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &r = (*in)[1];
  if (!d.known_ndim() || !r.known_ndim()) return false;
  CheckRotatedInputs(attrs, d, r);
  Shape ps = PooledSize(attrs, attrs.Params<RROIAlignParam>().pooled_size);
  AssignShape(attrs, out, 0, Shape{r[0], d[1], ps[0], ps[1]}, "output");
  return d.is_known() && r.is_known();
}

void RROIAlignCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const Shape &d = in[0].shape, &o = out[0].shape;
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3], R = o[0], PH = o[2], PW = o[3];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_RROIAlign", {
    const T* data = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    std::vector<RRoiGeom> geoms = RotatedGeomsOf(attrs, in[1].ptr<T>(), R, N);
    ParallelFor(R, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(C * PH * PW * 4, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const RRoiGeom& geom = geoms[static_cast<size_t>(r)];
        // An empty map has no pixel to read: its ROIs pool to zeros.
        const bool reads = geom.n >= 0 && H > 0 && W > 0;
        std::vector<Sample> samples = reads ? RotatedSamplesOf(geom, PH, PW, H, W) : std::vector<Sample>();
        AverageBins(samples, geom.gh * geom.gw, C, PH * PW, reads, req[0], y + r * C * PH * PW,
                    [&](int64_t c, int64_t) { return data + (geom.n * C + c) * H * W; });
      }
    });
  });
}

// Inputs: ograd, data, rois; outputs: the gradients of data and rois.
bool RROIAlignBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[1], &r = (*in)[2];
  if (!d.is_known() || !r.is_known()) return false;
  CheckRotatedInputs(attrs, d, r);
  Shape ps = PooledSize(attrs, attrs.Params<RROIAlignParam>().pooled_size);
  AssignShape(attrs, in, 0, Shape{r[0], d[1], ps[0], ps[1]}, "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, r, "output");
  return true;
}

void RROIAlignBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                       const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const Shape &d = in[1].shape, &o = in[0].shape;
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3], R = o[0], PH = o[2], PW = o[3];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_RROIAlign", {
    if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
      std::fill(out[1].ptr<T>(), out[1].ptr<T>() + out[1].Size(), T(0));
    if (req[0] != OpReq::kNullOp) {
      const T* g = in[0].ptr<T>();
      T* gd = out[0].ptr<T>();
      if (req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
      // Serial over ROIs: different ROIs may sample the same pixels.
      std::vector<RRoiGeom> geoms = RotatedGeomsOf(attrs, in[2].ptr<T>(), R, N);
      for (int64_t r = 0; r < R; ++r) {
        const RRoiGeom& geom = geoms[static_cast<size_t>(r)];
        if (geom.n < 0 || H == 0 || W == 0) continue;
        std::vector<Sample> samples = RotatedSamplesOf(geom, PH, PW, H, W);
        const int64_t per_bin = geom.gh * geom.gw;
        for (int64_t c = 0; c < C; ++c) {
          T* gimg = gd + (geom.n * C + c) * H * W;
          for (int64_t bin = 0; bin < PH * PW; ++bin) {
            const double gv = static_cast<double>(g[(r * C + c) * PH * PW + bin]) / static_cast<double>(per_bin);
            for (int64_t k = 0; k < per_bin; ++k) {
              const Sample& s = samples[static_cast<size_t>(bin * per_bin + k)];
              for (int j = 0; j < 4; ++j)
                if (s.w[j] != 0) gimg[s.pos[j]] = static_cast<T>(static_cast<double>(gimg[s.pos[j]]) + gv * s.w[j]);
            }
          }
        }
      }
    }
  });
}

// The gradient of an ROI operator: `backward` on (ograd, data, rois), giving both inputs'.
FGradient RoiGrad(const char* backward) {
  return [backward](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
    return b.Call(backward, {a.out_grads[0], a.inputs[0], a.inputs[1]}, attrs.dict);
  };
}

}  // namespace

WEFT_REGISTER_OP(ROIPooling)
    .Describe(
        "Max-pools each region of interest of data (N, C, H, W) to pooled_size (h, w): rois (R, 5) rows "
        "[batch_index, x1, y1, x2, y2] are scaled by spatial_scale and rounded, split into h x w bins, and each "
        "bin's maximum taken. The output is (R, C, h, w); the second output, maxidx (hidden), holds the flat data "
        "index of each maximum (-1 for empty bins).")
    .SetNumInputs(2)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The feature maps (N, C, H, W)")
    .AddArgument("rois", "NDArray-or-Symbol", "The regions (R, 5): [batch_index, x1, y1, x2, y2] in image coordinates")
    .SetParams<ROIPoolingParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "maxidx"}; })
    .SetAttr<FInferShape>("FInferShape", ROIPoolingShape)
    .SetAttr<FInferType>("FInferType", ROIPoolingType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ROIPoolingCompute)
    .SetAttr<FGradient>("FGradient", RoiGrad("_backward_ROIPooling"));

WEFT_REGISTER_OP(_backward_ROIPooling)
    .Describe("Gradient of ROIPooling: each output gradient added at its bin's maximum; zeros for the rois.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("rois", "NDArray-or-Symbol", "The forward rois")
    .SetParams<ROIPoolingParam>()
    .SetAttr<FInferShape>("FInferShape", ROIPoolingBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", ROIPoolingBackward);

WEFT_REGISTER_OP(_contrib_ROIAlign)
    .Describe(
        "Pools each region of interest of data (N, C, H, W) to pooled_size (h, w) without quantisation: each of "
        "the h x w bins of a scaled ROI [batch_index, x1, y1, x2, y2] averages bilinear samples taken on a regular "
        "grid inside it (sample_ratio per axis, or ceil(bin size)). An ROI with a batch index outside [0, N) "
        "gives zeros. The output is (R, C, h, w), or (R, C / (h*w), h, w) with position_sensitive.")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The feature maps (N, C, H, W)")
    .AddArgument("rois", "NDArray-or-Symbol", "The regions (R, 5): [batch_index, x1, y1, x2, y2] in image coordinates")
    .SetParams<ROIAlignParam>()
    .SetAttr<FInferShape>("FInferShape", ROIAlignShape)
    .SetAttr<FInferType>("FInferType", RoiType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ROIAlignCompute)
    .SetAttr<FGradient>("FGradient", RoiGrad("_backward_ROIAlign"));

WEFT_REGISTER_OP(_backward_ROIAlign)
    .Describe("Gradient of _contrib_ROIAlign: each bin's gradient spread over its samples' pixels; zeros for the rois.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("rois", "NDArray-or-Symbol", "The forward rois")
    .SetParams<ROIAlignParam>()
    .SetAttr<FInferShape>("FInferShape", ROIAlignBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", ROIAlignBackward);

WEFT_REGISTER_OP(_contrib_PSROIPooling)
    .Describe(
        "Position-sensitive ROI pooling (R-FCN): each ROI [batch_index, x1, y1, x2, y2], its corners rounded and "
        "scaled by spatial_scale, is split into pooled_size x pooled_size bins; bin (i, j) of output channel c "
        "averages input channel (c * group_size + gi) * group_size + gj, (gi, gj) being the bin's cell on a "
        "group_size grid. The output is (R, output_dim, pooled_size, pooled_size).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The feature maps (N, C, H, W), C >= output_dim * group_size^2")
    .AddArgument("rois", "NDArray-or-Symbol", "The regions (R, 5): [batch_index, x1, y1, x2, y2] in image coordinates")
    .SetParams<PSROIPoolingParam>()
    .SetAttr<FInferShape>("FInferShape", PSROIPoolingShape)
    .SetAttr<FInferType>("FInferType", RoiType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", PSROIPoolingCompute)
    .SetAttr<FGradient>("FGradient", RoiGrad("_backward_PSROIPooling"));

WEFT_REGISTER_OP(_backward_PSROIPooling)
    .Describe("Gradient of _contrib_PSROIPooling: each bin's gradient spread evenly over its pixels; zeros for the rois.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("rois", "NDArray-or-Symbol", "The forward rois")
    .SetParams<PSROIPoolingParam>()
    .SetAttr<FInferShape>("FInferShape", PSROIPoolingBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", PSROIPoolingBackward);

WEFT_REGISTER_OP(_contrib_RROIAlign)
    .Describe(
        "Rotated ROI align (Ma et al., 2018, for text detection): each ROI [batch_index, center_x, center_y, width, "
        "height, degrees] is scaled by spatial_scale (boxes under a pixel widened to one), split into pooled_size "
        "(h, w) bins, and each bin averages bilinear samples taken on a regular grid (sampling_ratio per axis, or "
        "ceil(bin size)) of the box turned by its angle about its centre. An ROI with a batch index outside [0, N) "
        "gives zeros. The output is (R, C, h, w).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The feature maps (N, C, H, W)")
    .AddArgument("rois", "NDArray-or-Symbol",
                 "The rotated regions (R, 6): [batch_index, center_x, center_y, width, height, degrees] in image "
                 "coordinates")
    .SetParams<RROIAlignParam>()
    .SetAttr<FInferShape>("FInferShape", RROIAlignShape)
    .SetAttr<FInferType>("FInferType", RoiType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", RROIAlignCompute)
    .SetAttr<FGradient>("FGradient", RoiGrad("_backward_RROIAlign"));

WEFT_REGISTER_OP(_backward_RROIAlign)
    .Describe("Gradient of _contrib_RROIAlign: each bin's gradient spread over its samples' pixels; zeros for the rois.")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("rois", "NDArray-or-Symbol", "The forward rois")
    .SetParams<RROIAlignParam>()
    .SetAttr<FInferShape>("FInferShape", RROIAlignBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", RROIAlignBackward);

}  // namespace op
}  // namespace weft

// _contrib_DeformablePSROIPooling (Deformable ConvNets, Dai et al., 2017): R-FCN's
// position-sensitive ROI pooling with bins that average bilinear samples and that a
// learnt `trans` input displaces, in fractions of the ROI's size.
//
// An ROI [batch_index, x1, y1, x2, y2] has its corners rounded, scaled by spatial_scale
// and shifted by half a pixel: it spans [x1 * s - 0.5, (x2 + 1) * s - 0.5) (at least 0.1
// wide). Bin (ph, pw) of output channel c starts at its place in the ROI plus trans_std
// times the ROI's size times trans (r, 2 * class + {0: x, 1: y}, part_h, part_w), class
// being c / (output_dim / classes) and (part_h, part_w) the bin's cell on a part_size grid;
// it averages sample_per_part^2 points spaced bin / sample_per_part apart from that start,
// read from input channel (c * group_size + gh) * group_size + gw, (gh, gw) the bin's
// cell on a group_size grid. Points more than half a pixel outside the map are left out
// (a bin with none pools to 0); the others are clamped to the map and interpolated.
//
// The second output, top_count (hidden), is each bin's number of points, as in MXNet;
// the backward operator recomputes it from the forward inputs instead of reading it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/op/nn/roi_common.h"
#include "core/op/op_util.h"

namespace weft {
namespace op {

struct DeformablePSROIPoolingParam {
  double spatial_scale = 1;
  int output_dim = 0;
  int group_size = 0;
  int pooled_size = 0;
  int part_size = 0;
  int sample_per_part = 1;
  double trans_std = 0;
  bool no_trans = false;
};

WEFT_PARAM_SCHEMA(DeformablePSROIPoolingParam, s) {
  s.Field("spatial_scale", &DeformablePSROIPoolingParam::spatial_scale)
      .Range(0, 1)
      .Describe("The feature map's size over the image's (the inverse of the network's total stride).");
  s.Field("output_dim", &DeformablePSROIPoolingParam::output_dim).Min(1).Describe("The output channels.");
  s.Field("group_size", &DeformablePSROIPoolingParam::group_size)
      .Min(1)
      .Describe("The side of the grid of position-sensitive channel groups.");
  s.Field("pooled_size", &DeformablePSROIPoolingParam::pooled_size).Min(1).Describe("The output size of each ROI (square).");
  s.Field("part_size", &DeformablePSROIPoolingParam::part_size)
      .Default(0)
      .Min(0)
      .Describe("The side of the grid of trans cells; 0 means pooled_size.");
  s.Field("sample_per_part", &DeformablePSROIPoolingParam::sample_per_part)
      .Default(1)
      .Min(1)
      .Describe("Samples per bin along each axis.");
  s.Field("trans_std", &DeformablePSROIPoolingParam::trans_std)
      .Default(0.0)
      .Range(0, 1)
      .Describe("The scale of trans: a bin moves by trans * trans_std times the ROI's size.");
  s.Field("no_trans", &DeformablePSROIPoolingParam::no_trans)
      .Default(false)
      .Describe("Whether to leave out the trans input (bins stay in place).");
}

namespace {

const DeformablePSROIPoolingParam& Params(const NodeAttrs& attrs) {
  return attrs.Params<DeformablePSROIPoolingParam>();
}

int64_t PartSize(const DeformablePSROIPoolingParam& p) { return p.part_size > 0 ? p.part_size : p.pooled_size; }

// Checks data, rois and (unless no_trans) trans; returns the number of trans classes.
int64_t CheckInputs(const NodeAttrs& attrs, const Shape& d, const Shape& r, const Shape* t) {
  const auto& p = Params(attrs);
  CheckRoiInputs(attrs, d, r);
  const int64_t G = p.group_size;
  if (d[1] >= 0 && d[1] < p.output_dim * G * G)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected at least output_dim * group_size^2 = ",
          p.output_dim * G * G, " channels, got data of shape ", d.ToString());
  if (t == nullptr) return 1;
  const int64_t part = PartSize(p);
  if (t->ndim() != 4 || (*t)[1] < 2 || (*t)[1] % 2 != 0 || p.output_dim % ((*t)[1] / 2) != 0)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected trans (num_rois, 2 * classes, ", part, ", ",
          part, ") with classes dividing output_dim (", p.output_dim, "), got shape ", t->ToString());
  return (*t)[1] / 2;
}

Shape OutShape(const NodeAttrs& attrs, const Shape& r) {
  const auto& p = Params(attrs);
  return Shape{r[0], p.output_dim, p.pooled_size, p.pooled_size};
}

bool DPSROIShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = Params(attrs);
  const Shape &d = (*in)[0], &r = (*in)[1];
  if (!d.known_ndim() || !r.known_ndim()) return false;
  // Without a known trans (whose classes no other shape tells) the outputs are still known.
  const Shape* t = p.no_trans || !(*in)[2].known_ndim() ? nullptr : &(*in)[2];
  CheckInputs(attrs, d, r, t);
  if (t != nullptr) {
    const int64_t part = PartSize(p);
    AssignShape(attrs, in, 2, Shape{r[0], (*t)[1], part, part}, "input");
  }
  AssignShape(attrs, out, 0, OutShape(attrs, r), "output");
  AssignShape(attrs, out, 1, OutShape(attrs, r), "output");
  for (const auto& s : *in) if (!s.is_known()) return false;
  return true;
}

// One point of a bin: the pixels it reads, their weights and the weights' derivatives
// along x and y (zero where the point is clamped to the map).
struct Point {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
  double wx[4] = {0, 0, 0, 0};
  double wy[4] = {0, 0, 0, 0};
};

inline Point PointAt(double x, double y, int64_t H, int64_t W) {
  Point pt;
  const double kx = x > 0 && x < W - 1 ? 1 : 0, ky = y > 0 && y < H - 1 ? 1 : 0;
  x = std::min(std::max(x, 0.0), static_cast<double>(W - 1));
  y = std::min(std::max(y, 0.0), static_cast<double>(H - 1));
  const int64_t x0 = static_cast<int64_t>(std::floor(x)), y0 = static_cast<int64_t>(std::floor(y));
  const int64_t x1 = std::min(x0 + 1, W - 1), y1 = std::min(y0 + 1, H - 1);
  const double lx = x - x0, ly = y - y0;
  const int64_t ys[4] = {y0, y0, y1, y1}, xs[4] = {x0, x1, x0, x1};
  const double w[4] = {(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx};
  const double wx[4] = {-(1 - ly), 1 - ly, -ly, ly};
  const double wy[4] = {-(1 - lx), -lx, 1 - lx, lx};
  for (int k = 0; k < 4; ++k) {
    pt.pos[k] = ys[k] * W + xs[k];
    pt.w[k] = w[k], pt.wx[k] = kx * wx[k], pt.wy[k] = ky * wy[k];
  }
  return pt;
}

// Calls f(out_index, data plane offset, trans index of x (-1 without trans), roi width,
// roi height, the bin's points) for every output element of ROI r whose image exists.
template <typename T, typename F>
void ForEachBin(const NodeAttrs& attrs, const T* rois, const T* trans, int64_t classes, int64_t r, int64_t N,
                int64_t C, int64_t H, int64_t W, F&& f) {
  const auto& p = Params(attrs);
  const int64_t P = p.pooled_size, D = p.output_dim, G = p.group_size, part = PartSize(p), S = p.sample_per_part;
  const T* roi = rois + r * 5;
  const int64_t n = RoiBatch(roi, N);
  if (n < 0) return;
  const double s = p.spatial_scale;
  const double x1 = std::round(static_cast<double>(roi[1])) * s - 0.5;
  const double y1 = std::round(static_cast<double>(roi[2])) * s - 0.5;
  const double x2 = (std::round(static_cast<double>(roi[3])) + 1) * s - 0.5;
  const double y2 = (std::round(static_cast<double>(roi[4])) + 1) * s - 0.5;
  const double rw = std::max(x2 - x1, 0.1), rh = std::max(y2 - y1, 0.1);
  const double bw = rw / P, bh = rh / P, sw = bw / S, sh = bh / S;
  const int64_t per_class = D / classes;
  std::vector<Point> points;
  points.reserve(static_cast<size_t>(S * S));
  for (int64_t c = 0; c < D; ++c)
    for (int64_t ph = 0; ph < P; ++ph)
      for (int64_t pw = 0; pw < P; ++pw) {
        const int64_t part_h = ph * part / P, part_w = pw * part / P;
        int64_t t_idx = -1;
        double tx = 0, ty = 0;
        if (trans != nullptr) {
          t_idx = ((r * classes + c / per_class) * 2 * part + part_h) * part + part_w;
          tx = static_cast<double>(trans[t_idx]) * p.trans_std;
          ty = static_cast<double>(trans[t_idx + part * part]) * p.trans_std;
        }
        const double ws = pw * bw + x1 + tx * rw, hs = ph * bh + y1 + ty * rh;
        points.clear();
        for (int64_t ih = 0; ih < S; ++ih)
          for (int64_t iw = 0; iw < S; ++iw) {
            const double x = ws + iw * sw, y = hs + ih * sh;
            // An empty map has no pixel to clamp to.
            if (H <= 0 || W <= 0 || !(x >= -0.5 && x <= W - 0.5 && y >= -0.5 && y <= H - 0.5)) continue;
            points.push_back(PointAt(x, y, H, W));
          }
        const int64_t gh = std::min(ph * G / P, G - 1), gw = std::min(pw * G / P, G - 1);
        const int64_t plane = (n * C + (c * G + gh) * G + gw) * H * W;
        f(((r * D + c) * P + ph) * P + pw, plane, t_idx, rw, rh, points);
      }
}

void DPSROICompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = Params(attrs);
  const Shape& d = in[0].shape;
  const int64_t R = in[1].shape[0], classes = p.no_trans ? 1 : in[2].shape[1] / 2;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_DeformablePSROIPooling", {
    const T* data = in[0].ptr<T>();
    const T* trans = p.no_trans ? nullptr : in[2].ptr<T>();
    std::vector<double> y(static_cast<size_t>(out[0].Size()), 0.0), count(y.size(), 0.0);
    const int64_t per_roi = p.output_dim * p.pooled_size * p.pooled_size * p.sample_per_part * p.sample_per_part;
    ParallelFor(R, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(per_roi, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        ForEachBin(attrs, in[1].ptr<T>(), trans, classes, r, d[0], d[1], d[2], d[3],
                   [&](int64_t o, int64_t plane, int64_t, double, double, const std::vector<Point>& pts) {
                     if (pts.empty()) return;
                     double sum = 0;
                     for (const Point& pt : pts)
                       for (int k = 0; k < 4; ++k) sum += pt.w[k] * static_cast<double>(data[plane + pt.pos[k]]);
                     y[static_cast<size_t>(o)] = sum / static_cast<double>(pts.size());
                     count[static_cast<size_t>(o)] = static_cast<double>(pts.size());
                   });
    });
    for (int i = 0; i < 2; ++i) {
      if (req[i] == OpReq::kNullOp) continue;
      const std::vector<double>& src = i == 0 ? y : count;
      T* dst = out[i].ptr<T>();
      for (size_t k = 0; k < src.size(); ++k) Store(dst + k, req[i], src[k]);
    }
  });
}

// Inputs: ograd, data, rois, [trans]; outputs: the gradients of data, rois and [trans].
bool DPSROIBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = Params(attrs);
  const Shape &d = (*in)[1], &r = (*in)[2];
  if (!d.is_known() || !r.is_known()) return false;
  if (!p.no_trans) {
    const Shape& t = (*in)[3];
    if (!t.is_known()) return false;
    CheckInputs(attrs, d, r, &t);
    const int64_t part = PartSize(p);
    AssignShape(attrs, in, 3, Shape{r[0], t[1], part, part}, "input");
    AssignShape(attrs, out, 2, t, "output");
  } else {
    CheckInputs(attrs, d, r, nullptr);
  }
  AssignShape(attrs, in, 0, OutShape(attrs, r), "input");
  AssignShape(attrs, out, 0, d, "output");
  AssignShape(attrs, out, 1, r, "output");
  return true;
}

void DPSROIBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = Params(attrs);
  const Shape& d = in[1].shape;
  const int64_t R = in[2].shape[0], classes = p.no_trans ? 1 : in[3].shape[1] / 2;
  const int64_t part = PartSize(p);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_DeformablePSROIPooling", {
    const T* g = in[0].ptr<T>();
    const T* data = in[1].ptr<T>();
    const T* trans = p.no_trans ? nullptr : in[3].ptr<T>();
    if (req[1] != OpReq::kNullOp && req[1] != OpReq::kAddTo)
      std::fill(out[1].ptr<T>(), out[1].ptr<T>() + out[1].Size(), T(0));
    const bool want_data = req[0] != OpReq::kNullOp, want_trans = !p.no_trans && req[2] != OpReq::kNullOp;
    T* gd = out[0].ptr<T>();
    if (want_data && req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
    std::vector<double> gt(want_trans ? static_cast<size_t>(out[2].Size()) : 0, 0.0);
    // Serial: ROIs overlap, and bins of one trans cell share its gradient.
    for (int64_t r = 0; r < R; ++r)
      ForEachBin(attrs, in[2].ptr<T>(), trans, classes, r, d[0], d[1], d[2], d[3],
                 [&](int64_t o, int64_t plane, int64_t t_idx, double rw, double rh, const std::vector<Point>& pts) {
                   if (pts.empty()) return;
                   const double gv = static_cast<double>(g[o]) / static_cast<double>(pts.size());
                   double dx = 0, dy = 0;
                   for (const Point& pt : pts)
                     for (int k = 0; k < 4; ++k) {
                       if (want_data) {
                         T* px = gd + plane + pt.pos[k];
                         *px = static_cast<T>(static_cast<double>(*px) + gv * pt.w[k]);
                       }
                       const double v = static_cast<double>(data[plane + pt.pos[k]]);
                       dx += pt.wx[k] * v, dy += pt.wy[k] * v;
                     }
                   if (want_trans) {
                     gt[static_cast<size_t>(t_idx)] += dx * gv * p.trans_std * rw;
                     gt[static_cast<size_t>(t_idx + part * part)] += dy * gv * p.trans_std * rh;
                   }
                 });
    if (want_trans) {
      T* dst = out[2].ptr<T>();
      for (size_t k = 0; k < gt.size(); ++k) Store(dst + k, req[2], gt[k]);
    }
  });
}

int NumInputs(const NodeAttrs& attrs) { return Params(attrs).no_trans ? 2 : 3; }

}  // namespace

WEFT_REGISTER_OP(_contrib_DeformablePSROIPooling)
    .Describe(
        "Deformable position-sensitive ROI pooling (https://arxiv.org/abs/1703.06211). Each ROI [batch_index, x1, "
        "y1, x2, y2] (corners rounded, scaled by spatial_scale) is split into pooled_size x pooled_size bins; bin "
        "(i, j) of output channel c, moved by trans_std * trans (num_rois, 2 * classes, part_size, part_size) in "
        "fractions of the ROI's width (channel 2 * class) and height (2 * class + 1), averages sample_per_part^2 "
        "bilinear samples of input channel (c * group_size + gi) * group_size + gj, (gi, gj) being the bin's cell "
        "on a group_size grid. The output is (num_rois, output_dim, pooled_size, pooled_size); the second output, "
        "top_count (hidden), counts each bin's samples that fall on the map.")
    .SetNumInputs(NumInputs)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The feature maps (N, C, H, W), C >= output_dim * group_size^2")
    .AddArgument("rois", "NDArray-or-Symbol", "The regions (R, 5): [batch_index, x1, y1, x2, y2] in image coordinates")
    .AddArgument("trans", "NDArray-or-Symbol", "The bins' displacements (R, 2 * classes, part_size, part_size)")
    .SetParams<DeformablePSROIPoolingParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "top_count"}; })
    .SetAttr<FInferShape>("FInferShape", DPSROIShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", DPSROICompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      std::vector<GradValue> ins = {a.out_grads[0], a.inputs[0], a.inputs[1]};
      if (!Params(attrs).no_trans) ins.push_back(a.inputs[2]);
      return b.Call("_backward_DeformablePSROIPooling", ins, attrs.dict);
    });

WEFT_REGISTER_OP(_backward_DeformablePSROIPooling)
    .Describe(
        "Gradient of _contrib_DeformablePSROIPooling: each bin's gradient spread over its samples' pixels, and "
        "(unless no_trans) the bins' slopes summed into trans; zeros for the rois.")
    .SetNumInputs([](const NodeAttrs& attrs) { return NumInputs(attrs) + 1; })
    .SetNumOutputs(NumInputs)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the output")
    .AddArgument("data", "NDArray-or-Symbol", "The forward data")
    .AddArgument("rois", "NDArray-or-Symbol", "The forward rois")
    .AddArgument("trans", "NDArray-or-Symbol", "The forward trans")
    .SetParams<DeformablePSROIPoolingParam>()
    .SetAttr<FInferShape>("FInferShape", DPSROIBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", DPSROIBackward);

}  // namespace op
}  // namespace weft

// The SSD operators of MXNet's contrib namespace: _contrib_MultiBoxPrior (anchor boxes
// over a feature map), _contrib_MultiBoxTarget (training targets: anchors matched to
// ground truth, with optional hard negative mining) and _contrib_MultiBoxDetection
// (decoded, thresholded and suppressed detections). Boxes are corner-encoded and
// normalised to the image ([0, 1]); class 0 of the predictions is the background. The
// arithmetic is in float32 whatever the dtype, as MXNet's parameters are floats, so
// anchors and targets agree with MXNet's to the last bit where it matters for matching.
// None of them has a gradient: zeros, as in MXNet.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/op/detection/box_util.h"

namespace weft {
namespace op {

struct MultiBoxPriorParam {
  std::vector<double> sizes = {1.0};
  std::vector<double> ratios = {1.0};
  bool clip = false;
  std::vector<double> steps = {-1.0, -1.0};
  std::vector<double> offsets = {0.5, 0.5};
};

WEFT_PARAM_SCHEMA(MultiBoxPriorParam, s) {
  s.Field("sizes", &MultiBoxPriorParam::sizes)
      .Default({1.0})
      .Describe("The anchor sizes, as fractions of the image.");
  s.Field("ratios", &MultiBoxPriorParam::ratios)
      .Default({1.0})
      .Describe("The aspect ratios (width / height); the first is used with every size, the others with sizes[0].");
  s.Field("clip", &MultiBoxPriorParam::clip).Default(false).Describe("Clip the anchors to [0, 1].");
  s.Field("steps", &MultiBoxPriorParam::steps)
      .Default({-1.0, -1.0})
      .Describe("The distance between anchor centres (y, x); -1 for 1 / the feature map's size.");
  s.Field("offsets", &MultiBoxPriorParam::offsets)
      .Default({0.5, 0.5})
      .Describe("The offset (y, x) of the first anchor centre, in steps, each in [0, 1].");
}

struct MultiBoxTargetParam {
  double overlap_threshold = 0.5;
  double ignore_label = -1;
  double negative_mining_ratio = -1;
  double negative_mining_thresh = 0.5;
  int minimum_negative_samples = 0;
  std::vector<double> variances = {0.1, 0.1, 0.2, 0.2};
};

WEFT_PARAM_SCHEMA(MultiBoxTargetParam, s) {
  s.Field("overlap_threshold", &MultiBoxTargetParam::overlap_threshold)
      .Default(0.5)
      .Describe("An anchor overlapping a ground-truth box by more than this IoU is a positive match.");
  s.Field("ignore_label", &MultiBoxTargetParam::ignore_label)
      .Default(-1.0)
      .Describe("The class target of anchors that are neither positive nor negative.");
  s.Field("negative_mining_ratio", &MultiBoxTargetParam::negative_mining_ratio)
      .Default(-1.0)
      .Describe("Negatives kept per positive, the hardest first; -1: every non-positive anchor is negative.");
  s.Field("negative_mining_thresh", &MultiBoxTargetParam::negative_mining_thresh)
      .Default(0.5)
      .Describe("Only anchors overlapping every ground-truth box by less than this may be mined as negatives.");
  s.Field("minimum_negative_samples", &MultiBoxTargetParam::minimum_negative_samples)
      .Default(0)
      .Describe("Accepted for compatibility; MXNet's CPU operator does not use it either.");
  s.Field("variances", &MultiBoxTargetParam::variances)
      .Default({0.1, 0.1, 0.2, 0.2})
      .Describe("The regression targets are divided by these (x, y, w, h).");
}

struct MultiBoxDetectionParam {
  bool clip = true;
  double threshold = 0.01;
  int background_id = 0;
  double nms_threshold = 0.5;
  bool force_suppress = false;
  std::vector<double> variances = {0.1, 0.1, 0.2, 0.2};
  int nms_topk = -1;
};

WEFT_PARAM_SCHEMA(MultiBoxDetectionParam, s) {
  s.Field("clip", &MultiBoxDetectionParam::clip).Default(true).Describe("Clip the boxes to [0, 1].");
  s.Field("threshold", &MultiBoxDetectionParam::threshold)
      .Default(0.01)
      .Describe("Detections scoring below this become background (class -1).");
  s.Field("background_id", &MultiBoxDetectionParam::background_id)
      .Default(0)
      .Describe("Accepted for compatibility: class 0 is the background, as in MXNet's CPU operator.");
  s.Field("nms_threshold", &MultiBoxDetectionParam::nms_threshold)
      .Default(0.5)
      .Describe("Suppress detections overlapping a better one by this IoU or more; outside (0, 1] no suppression.");
  s.Field("force_suppress", &MultiBoxDetectionParam::force_suppress)
      .Default(false)
      .Describe("Suppress across classes; otherwise only detections of one class suppress each other.");
  s.Field("variances", &MultiBoxDetectionParam::variances)
      .Default({0.1, 0.1, 0.2, 0.2})
      .Describe("The regression outputs are multiplied by these (x, y, w, h).");
  s.Field("nms_topk", &MultiBoxDetectionParam::nms_topk)
      .Default(-1)
      .Describe("Keep the nms_topk best detections before suppression; -1: all.");
}

namespace {

void CheckLength(const NodeAttrs& attrs, const char* name, const std::vector<double>& v, size_t n) {
  if (v.size() != n)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected ", n, " values for ", name, ", got ",
          v.size());
}

// ---------------------------------------------------------------- MultiBoxPrior
int64_t AnchorsPerCell(const NodeAttrs& attrs) {
  const auto& p = attrs.Params<MultiBoxPriorParam>();
  if (p.sizes.empty() || p.ratios.empty())
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': expected at least one size and one ratio");
  CheckLength(attrs, "steps (y, x)", p.steps, 2);
  CheckLength(attrs, "offsets (y, x)", p.offsets, 2);
  for (double o : p.offsets)
    if (!(o >= 0 && o <= 1))
      Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': offsets must lie in [0, 1], got ", o);
  if (p.steps[0] * p.steps[1] < 0)
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': give both steps (y, x) or neither, got (", p.steps[0],
          ", ", p.steps[1], ")");
  for (double r : p.ratios)
    if (!(r > 0)) Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': ratios must be positive, got ", r);
  return static_cast<int64_t>(p.sizes.size() + p.ratios.size() - 1);
}

bool MultiBoxPriorShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.is_known()) return false;
  if (d.ndim() < 4 || d[2] < 1 || d[3] < 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected data (batch, channel, height, width) with height, width >= 1, got shape ", d.ToString());
  AssignShape(attrs, out, 0, Shape{1, d[2] * d[3] * AnchorsPerCell(attrs), 4}, "output");
  return true;
}

void MultiBoxPriorCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                          const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<MultiBoxPriorParam>();
  const int64_t H = in[0].shape[2], W = in[0].shape[3];
  float step_y = static_cast<float>(p.steps[0]), step_x = static_cast<float>(p.steps[1]);
  if (step_y <= 0 || step_x <= 0) step_y = 1.f / H, step_x = 1.f / W;
  const float aspect = static_cast<float>(H) / static_cast<float>(W);
  WEFT_FLOAT_TYPE_SWITCH(out[0].dtype, T, "_contrib_MultiBoxPrior", {
    T* y = out[0].ptr<T>();
    int64_t k = 0;
    auto put = [&](float cx, float cy, float size, float ratio) {
      const float sr = std::sqrt(ratio), w = size * aspect * sr / 2, h = size / sr / 2;
      const float v[4] = {cx - w, cy - h, cx + w, cy + h};
      for (float x : v) Store(y + k++, req[0], p.clip ? std::min(1.f, std::max(0.f, x)) : x);
    };
    for (int64_t r = 0; r < H; ++r) {
      const float cy = (static_cast<float>(r) + static_cast<float>(p.offsets[0])) * step_y;
      for (int64_t c = 0; c < W; ++c) {
        const float cx = (static_cast<float>(c) + static_cast<float>(p.offsets[1])) * step_x;
        for (double s : p.sizes) put(cx, cy, static_cast<float>(s), static_cast<float>(p.ratios[0]));
        for (size_t j = 1; j < p.ratios.size(); ++j)
          put(cx, cy, static_cast<float>(p.sizes[0]), static_cast<float>(p.ratios[j]));
      }
    }
  });
}

// ---------------------------------------------------------------- MultiBoxTarget
// MXNet's overlap of anchors and labels: corners as given (no clipping of swapped boxes),
// 0 where the union is 0.
inline float TargetIou(const float* a, const float* g) {
  float iw = std::max(0.f, std::min(a[2], g[2]) - std::max(a[0], g[0]));
  float ih = std::max(0.f, std::min(a[3], g[3]) - std::max(a[1], g[1]));
  float inter = iw * ih;
  float uni = (a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter;
  return uni == 0 ? 0.f : inter / uni;
}

bool MultiBoxTargetShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &a = (*in)[0], &l = (*in)[1], &c = (*in)[2];
  if (!a.is_known() || !l.is_known() || !c.is_known()) return false;
  if (a.ndim() != 3 || a[0] != 1 || a[1] < 1 || a[2] != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected anchors (1, num_anchors, 4), got shape ",
          a.ToString());
  if (l.ndim() != 3 || l[1] < 1 || l[2] < 5)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected labels (batch, num_labels, >= 5) of [class, xmin, ymin, xmax, ymax, ...], got shape ",
          l.ToString());
  if (c.ndim() != 3 || c[0] != l[0] || c[2] != a[1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected cls_pred (", l[0], ", num_classes, ", a[1],
          "), got shape ", c.ToString());
  CheckLength(attrs, "variances", attrs.Params<MultiBoxTargetParam>().variances, 4);
  AssignShape(attrs, out, 0, Shape{l[0], a[1] * 4}, "output");
  AssignShape(attrs, out, 1, Shape{l[0], a[1] * 4}, "output");
  AssignShape(attrs, out, 2, Shape{l[0], a[1]}, "output");
  return true;
}

void MultiBoxTargetCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                           const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<MultiBoxTargetParam>();
  const int64_t A = in[0].shape[1], B = in[1].shape[0], L = in[1].shape[1], LW = in[1].shape[2];
  const int64_t C = in[2].shape[1];
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_MultiBoxTarget", {
    std::vector<float> anchors(static_cast<size_t>(A * 4));
    for (int64_t i = 0; i < A * 4; ++i) anchors[static_cast<size_t>(i)] = static_cast<float>(in[0].ptr<T>()[i]);
    const T* labels = in[1].ptr<T>();
    const T* preds = in[2].ptr<T>();
    std::vector<float> loc(static_cast<size_t>(B * A * 4), 0.f), mask(loc.size(), 0.f);
    std::vector<float> cls(static_cast<size_t>(B * A), static_cast<float>(p.ignore_label));
    ParallelFor(B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const T* lab = labels + b * L * LW;
        // Ground truth ends at the first row of class -1.
        int64_t G = 0;
        while (G < L && static_cast<float>(lab[G * LW]) != -1.f) ++G;
        if (G == 0) continue;
        std::vector<float> gt(static_cast<size_t>(G * 4));
        for (int64_t g = 0; g < G; ++g)
          for (int k = 0; k < 4; ++k) gt[static_cast<size_t>(g * 4 + k)] = static_cast<float>(lab[g * LW + 1 + k]);
        std::vector<float> iou(static_cast<size_t>(A * G));
        for (int64_t j = 0; j < A; ++j)
          for (int64_t g = 0; g < G; ++g)
            iou[static_cast<size_t>(j * G + g)] = TargetIou(&anchors[static_cast<size_t>(j * 4)], &gt[static_cast<size_t>(g * 4)]);
        auto IOU = [&](int64_t j, int64_t g) { return iou[static_cast<size_t>(j * G + g)]; };
        // flag: 1 positive, 0 negative, -1 neither; match: (best IoU, gt) once computed.
        std::vector<int> flag(static_cast<size_t>(A), -1);
        std::vector<std::pair<float, int64_t>> match(static_cast<size_t>(A), {-1.f, -1});
        std::vector<bool> gt_done(static_cast<size_t>(G), false);
        int64_t positives = 0;
        // Every ground-truth box first takes its best free anchor, best pairs first.
        for (int64_t round = 0; round < G; ++round) {
          int64_t bj = -1, bg = -1;
          float best = 1e-6f;
          for (int64_t j = 0; j < A; ++j) {
            if (flag[static_cast<size_t>(j)] == 1) continue;
            for (int64_t g = 0; g < G; ++g)
              if (!gt_done[static_cast<size_t>(g)] && IOU(j, g) > best) bj = j, bg = g, best = IOU(j, g);
          }
          if (bj < 0) break;
          match[static_cast<size_t>(bj)] = {best, bg};
          gt_done[static_cast<size_t>(bg)] = true;
          flag[static_cast<size_t>(bj)] = 1;
          ++positives;
        }
        auto best_gt = [&](int64_t j) {
          std::pair<float, int64_t> m{-1.f, -1};
          for (int64_t g = 0; g < G; ++g)
            if (IOU(j, g) > m.first) m = {IOU(j, g), g};
          return m;
        };
        if (p.overlap_threshold > 0) {
          for (int64_t j = 0; j < A; ++j) {
            if (flag[static_cast<size_t>(j)] == 1) continue;
            match[static_cast<size_t>(j)] = best_gt(j);
            if (match[static_cast<size_t>(j)].first > static_cast<float>(p.overlap_threshold)) {
              flag[static_cast<size_t>(j)] = 1;
              ++positives;
            }
          }
        }
        if (p.negative_mining_ratio > 0) {
          int64_t want = static_cast<int64_t>(static_cast<float>(positives) * static_cast<float>(p.negative_mining_ratio));
          want = std::min(want, A - positives);
          // Candidates: anchors overlapping little, hardest (least background-like) first.
          std::vector<std::pair<float, int64_t>> cand;
          for (int64_t j = 0; j < A && want > 0; ++j) {
            if (flag[static_cast<size_t>(j)] == 1) continue;
            if (match[static_cast<size_t>(j)].first < 0) match[static_cast<size_t>(j)] = best_gt(j);
            if (!(match[static_cast<size_t>(j)].first < static_cast<float>(p.negative_mining_thresh))) continue;
            const T* pr = preds + b * C * A + j;
            double m = static_cast<double>(pr[0]);
            for (int64_t k = 1; k < C; ++k) m = std::max(m, static_cast<double>(pr[k * A]));
            double z = 0;
            for (int64_t k = 0; k < C; ++k) z += std::exp(static_cast<double>(pr[k * A]) - m);
            cand.push_back({static_cast<float>(std::exp(static_cast<double>(pr[0]) - m) / z), j});
          }
          std::stable_sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
          for (int64_t i = 0; i < std::min<int64_t>(want, static_cast<int64_t>(cand.size())); ++i)
            flag[static_cast<size_t>(cand[static_cast<size_t>(i)].second)] = 0;
        } else {
          for (int& f : flag)
            if (f != 1) f = 0;
        }
        const float var[4] = {static_cast<float>(p.variances[0]), static_cast<float>(p.variances[1]),
                              static_cast<float>(p.variances[2]), static_cast<float>(p.variances[3])};
        for (int64_t j = 0; j < A; ++j) {
          const int f = flag[static_cast<size_t>(j)];
          if (f == 0) cls[static_cast<size_t>(b * A + j)] = 0.f;
          if (f != 1) continue;
          const int64_t g = match[static_cast<size_t>(j)].second;
          cls[static_cast<size_t>(b * A + j)] = static_cast<float>(lab[g * LW]) + 1.f;
          const float* a = &anchors[static_cast<size_t>(j * 4)];
          const float* t = &gt[static_cast<size_t>(g * 4)];
          const float aw = a[2] - a[0], ah = a[3] - a[1], ax = (a[0] + a[2]) * 0.5f, ay = (a[1] + a[3]) * 0.5f;
          const float gw = t[2] - t[0], gh = t[3] - t[1], gx = (t[0] + t[2]) * 0.5f, gy = (t[1] + t[3]) * 0.5f;
          float* o = &loc[static_cast<size_t>((b * A + j) * 4)];
          o[0] = (gx - ax) / aw / var[0];
          o[1] = (gy - ay) / ah / var[1];
          o[2] = std::log(gw / aw) / var[2];
          o[3] = std::log(gh / ah) / var[3];
          for (int k = 0; k < 4; ++k) mask[static_cast<size_t>((b * A + j) * 4 + k)] = 1.f;
        }
      }
    });
    const std::vector<float>* res[3] = {&loc, &mask, &cls};
    for (int o = 0; o < 3; ++o) {
      if (req[o] == OpReq::kNullOp) continue;
      T* y = out[o].ptr<T>();
      for (size_t i = 0; i < res[o]->size(); ++i) Store(y + i, req[o], (*res[o])[i]);
    }
  });
}

// ---------------------------------------------------------------- MultiBoxDetection
bool MultiBoxDetectionShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &c = (*in)[0], &l = (*in)[1], &a = (*in)[2];
  if (!c.is_known() || !l.is_known() || !a.is_known()) return false;
  if (a.ndim() != 3 || a[0] != 1 || a[1] < 1 || a[2] != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected anchors (1, num_anchors, 4), got shape ",
          a.ToString());
  if (c.ndim() != 3 || c[2] != a[1])
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected cls_prob (batch, num_classes, ", a[1],
          "), got shape ", c.ToString());
  if (l.ndim() != 2 || l[0] != c[0] || l[1] != a[1] * 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected loc_pred (", c[0], ", ", a[1] * 4,
          "), got shape ", l.ToString());
  CheckLength(attrs, "variances", attrs.Params<MultiBoxDetectionParam>().variances, 4);
  AssignShape(attrs, out, 0, Shape{c[0], a[1], 6}, "output");
  return true;
}

inline float DetIou(const float* a, const float* b) {
  float w = std::max(0.f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  float h = std::max(0.f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  float i = w * h;
  float u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i;
  return u <= 0.f ? 0.f : i / u;
}

void MultiBoxDetectionCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                              const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<MultiBoxDetectionParam>();
  const int64_t B = in[0].shape[0], C = in[0].shape[1], A = in[0].shape[2];
  const float var[4] = {static_cast<float>(p.variances[0]), static_cast<float>(p.variances[1]),
                        static_cast<float>(p.variances[2]), static_cast<float>(p.variances[3])};
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_MultiBoxDetection", {
    const T* prob = in[0].ptr<T>();
    const T* locp = in[1].ptr<T>();
    const T* anc = in[2].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        // Rows [class, score, xmin, ymin, xmax, ymax] of the anchors with a foreground
        // class, in anchor order.
        std::vector<std::array<float, 6>> rows;
        for (int64_t i = 0; i < A; ++i) {
          float score = -1.f;
          int64_t id = 0;
          for (int64_t j = 1; j < C; ++j) {
            float v = static_cast<float>(prob[(b * C + j) * A + i]);
            if (v > score) score = v, id = j;
          }
          if (id > 0 && score < static_cast<float>(p.threshold)) id = 0;
          if (id == 0) continue;
          const T* a = anc + i * 4;
          const T* l = locp + (b * A + i) * 4;
          const float al = static_cast<float>(a[0]), at = static_cast<float>(a[1]), ar = static_cast<float>(a[2]),
                      ab = static_cast<float>(a[3]);
          const float aw = ar - al, ah = ab - at, ax = (al + ar) / 2.f, ay = (at + ab) / 2.f;
          const float ox = static_cast<float>(l[0]) * var[0] * aw + ax, oy = static_cast<float>(l[1]) * var[1] * ah + ay;
          const float ow = std::exp(static_cast<float>(l[2]) * var[2]) * aw / 2,
                      oh = std::exp(static_cast<float>(l[3]) * var[3]) * ah / 2;
          auto clip = [&](float v) { return p.clip ? std::max(0.f, std::min(1.f, v)) : v; };
          rows.push_back({static_cast<float>(id - 1), score, clip(ox - ow), clip(oy - oh), clip(ox + ow), clip(oy + oh)});
        }
        const bool nms = !rows.empty() && p.nms_threshold > 0 && p.nms_threshold <= 1;
        if (nms) {
          const std::vector<std::array<float, 6>> unsorted = rows;
          std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& z) { return x[1] > z[1]; });
          const size_t keep = p.nms_topk > 0 ? std::min(rows.size(), static_cast<size_t>(p.nms_topk)) : rows.size();
          // Rows past nms_topk keep their anchor order, marked as background, as in MXNet.
          for (size_t i = keep; i < rows.size(); ++i) {
            rows[i] = unsorted[i];
            rows[i][0] = -1.f;
          }
          for (size_t i = 0; i < keep; ++i) {
            if (rows[i][0] < 0) continue;
            for (size_t j = i + 1; j < keep; ++j) {
              if (rows[j][0] < 0) continue;
              if ((p.force_suppress || rows[i][0] == rows[j][0]) &&
                  DetIou(&rows[i][2], &rows[j][2]) >= static_cast<float>(p.nms_threshold))
                rows[j][0] = -1.f;
            }
          }
        }
        T* o = y + b * A * 6;
        for (int64_t i = 0; i < A; ++i)
          for (int k = 0; k < 6; ++k)
            Store(o + i * 6 + k, req[0], static_cast<size_t>(i) < rows.size() ? rows[static_cast<size_t>(i)][k] : -1.f);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_MultiBoxPrior)
    .Describe(
        "Anchor boxes (1, H * W * (len(sizes) + len(ratios) - 1), 4) for a feature map data (batch, channel, H, "
        "W): at every cell, one box per size with ratios[0], then one per further ratio with sizes[0], in "
        "normalised corner coordinates.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The feature map (batch, channel, height, width)")
    .SetParams<MultiBoxPriorParam>()
    .SetAttr<FInferShape>("FInferShape", MultiBoxPriorShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MultiBoxPriorCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_MultiBoxTarget)
    .Describe(
        "SSD training targets: anchors (1, A, 4) are matched to the ground truth of label (batch, L, >= 5) rows "
        "[class, xmin, ymin, xmax, ymax] (ending at the first class -1), each ground-truth box taking its best "
        "anchor and every anchor overlapping one by more than overlap_threshold; negatives are all other anchors "
        "or, with negative_mining_ratio, the hardest of them by cls_pred (batch, classes, A). Outputs: loc_target "
        "and loc_mask (batch, A * 4), cls_target (batch, A): class + 1, 0 for negatives, ignore_label otherwise.")
    .SetNumInputs(3)
    .SetNumOutputs(3)
    .AddArgument("anchor", "NDArray-or-Symbol", "The anchors (1, A, 4)")
    .AddArgument("label", "NDArray-or-Symbol", "The ground truth (batch, L, >= 5)")
    .AddArgument("cls_pred", "NDArray-or-Symbol", "The class predictions (batch, classes, A)")
    .SetParams<MultiBoxTargetParam>()
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) {
                           return std::vector<std::string>{"loc_target", "loc_mask", "cls_target"};
                         })
    .SetAttr<FInferShape>("FInferShape", MultiBoxTargetShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MultiBoxTargetCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_MultiBoxDetection)
    .Describe(
        "SSD detections (batch, A, 6) of rows [class, score, xmin, ymin, xmax, ymax]: each anchor takes its best "
        "foreground class of cls_prob (batch, classes, A) (background when below threshold), its box decoded "
        "from loc_pred (batch, A * 4); foreground rows come first, sorted by score and suppressed (class -1) by "
        "non-maximum suppression; the remaining rows are -1.")
    .SetNumInputs(3)
    .AddArgument("cls_prob", "NDArray-or-Symbol", "The class probabilities (batch, classes, A)")
    .AddArgument("loc_pred", "NDArray-or-Symbol", "The box regressions (batch, A * 4)")
    .AddArgument("anchor", "NDArray-or-Symbol", "The anchors (1, A, 4)")
    .SetParams<MultiBoxDetectionParam>()
    .SetAttr<FInferShape>("FInferShape", MultiBoxDetectionShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", MultiBoxDetectionCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

}  // namespace op
}  // namespace weft

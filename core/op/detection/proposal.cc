// The region proposal operators of Faster R-CNN's RPN: _contrib_Proposal (one image) and
// _contrib_MultiProposal (a batch). For each image:
//
// 1. Anchors: for every ratio and then every scale, a box of area about feature_stride^2
//    / ratio (width rounded, height = width * ratio rounded) times the scale, centred on
//    the cell [0, feature_stride - 1]; shifted by feature_stride per cell of the
//    (H, W) map. Proposal k = (h * W + w) * A + a, A = len(ratios) * len(scales).
// 2. Each anchor is decoded by bbox_pred channels 4a..4a+3 at its cell: centre shifts
//    (dx, dy) in anchor sizes and log-scales (dw, dh), or with iou_loss corner shifts
//    added to the anchor's corners; the box is clipped to the image im_info = (height,
//    width, scale). Its score is cls_prob channel A + a (the foreground half).
// 3. Cells beyond the image's real extent (im_info / feature_stride) and boxes narrower
//    or shorter than rpn_min_size * scale get score -1 (the latter also grow by
//    rpn_min_size * scale / 2 on every side, as in MXNet).
// 4. The rpn_pre_nms_top_n best (all when <= 0) are suppressed greedily: a box overlapping
//    a kept one by IoU > threshold (areas in pixels, (x2 - x1 + 1) * (y2 - y1 + 1)) goes.
// 5. The first rpn_post_nms_top_n kept boxes are output as [batch_index, x1, y1, x2, y2]
//    with their scores; when fewer were kept, the kept ones repeat in order.
//
// The arithmetic is float32 whatever the dtype, step for step as MXNet's, so the boxes
// and the suppression's decisions agree with MXNet's. Neither operator has a gradient:
// zeros, as in MXNet.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/op/detection/box_util.h"

namespace weft {
namespace op {

struct ProposalParam {
  int rpn_pre_nms_top_n = 6000;
  int rpn_post_nms_top_n = 300;
  double threshold = 0.7;
  int rpn_min_size = 16;
  std::vector<double> scales = {4, 8, 16, 32};
  std::vector<double> ratios = {0.5, 1, 2};
  int feature_stride = 16;
  bool output_score = false;
  bool iou_loss = false;
};

WEFT_PARAM_SCHEMA(ProposalParam, s) {
  s.Field("rpn_pre_nms_top_n", &ProposalParam::rpn_pre_nms_top_n)
      .Default(6000)
      .Describe("The best-scoring boxes kept before non-maximum suppression; <= 0 keeps all.");
  s.Field("rpn_post_nms_top_n", &ProposalParam::rpn_post_nms_top_n)
      .Default(300)
      .Min(1)
      .Describe("The boxes output per image after non-maximum suppression.");
  s.Field("threshold", &ProposalParam::threshold)
      .Default(0.7)
      .Describe("Non-maximum suppression removes boxes overlapping a kept one by more than this IoU.");
  s.Field("rpn_min_size", &ProposalParam::rpn_min_size)
      .Default(16)
      .Describe("Boxes narrower or shorter than this (times the image's scale) get score -1.");
  s.Field("scales", &ProposalParam::scales)
      .Default({4.0, 8.0, 16.0, 32.0})
      .Describe("The anchor scales, in units of feature_stride.");
  s.Field("ratios", &ProposalParam::ratios)
      .Default({0.5, 1.0, 2.0})
      .Describe("The anchor aspect ratios (height / width).");
  s.Field("feature_stride", &ProposalParam::feature_stride)
      .Default(16)
      .Min(1)
      .Describe("The image pixels per feature-map cell (the product of the strides before the RPN).");
  s.Field("output_score", &ProposalParam::output_score).Default(false).Describe("Also output the boxes' scores.");
  s.Field("iou_loss", &ProposalParam::iou_loss)
      .Default(false)
      .Describe("bbox_pred holds corner shifts (an IoU loss's) instead of centre shifts and log-scales.");
}

namespace {

// [x1, y1, x2, y2, score]
using Det = std::array<float, 5>;

// The A anchors of the cell at the origin, ratios outer and scales inner.
std::vector<Det> BaseAnchors(const ProposalParam& p) {
  const float side = static_cast<float>(p.feature_stride);
  const float ctr = static_cast<float>(0.5 * (side - 1.0f));
  std::vector<Det> out;
  for (double rd : p.ratios)
    for (double sd : p.scales) {
      const float ratio = static_cast<float>(rd), scale = static_cast<float>(sd);
      const float size_ratios = std::floor(side * side / ratio);
      const float w = std::floor(std::sqrt(size_ratios) + 0.5f) * scale;
      const float h = std::floor(w / scale * ratio + 0.5f) * scale;
      out.push_back({ctr - 0.5f * (w - 1.0f), ctr - 0.5f * (h - 1.0f), ctr + 0.5f * (w - 1.0f),
                     ctr + 0.5f * (h - 1.0f), 0.0f});
    }
  return out;
}

// cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W), im_info (N, 3).
bool ProposalShapeImpl(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out, bool multi) {
  const auto& p = attrs.Params<ProposalParam>();
  const Shape& c = (*in)[0];
  if (!c.known_ndim()) return false;
  const int64_t A = static_cast<int64_t>(p.ratios.size() * p.scales.size());
  if (c.ndim() != 4 || (c[1] >= 0 && c[1] != 2 * A))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected cls_prob (batch, 2 * ", A,
          " anchors (len(ratios) * len(scales)), height, width), got shape ", c.ToString());
  if ((c[2] >= 0 && c[2] < 1) || (c[3] >= 0 && c[3] < 1))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected a feature map of at least one cell, got cls_prob of shape ",
          c.ToString());
  if (!multi && c[0] >= 0 && c[0] != 1)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected one image (a batch of 1; _contrib_MultiProposal takes more), got cls_prob of shape ",
          c.ToString());
  AssignShape(attrs, in, 1, Shape{c[0], 4 * A, c[2], c[3]}, "input");
  AssignShape(attrs, in, 2, Shape{c[0], 3}, "input");
  const int64_t rows = multi ? (c[0] < 0 ? -1 : c[0] * p.rpn_post_nms_top_n) : p.rpn_post_nms_top_n;
  AssignShape(attrs, out, 0, Shape{rows, 5}, "output");
  AssignShape(attrs, out, 1, Shape{rows, 1}, "output");
  return c.is_known();
}

bool ProposalShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return ProposalShapeImpl(attrs, in, out, false);
}
bool MultiProposalShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  return ProposalShapeImpl(attrs, in, out, true);
}

// Decodes, filters, sorts and suppresses the proposals of image b; returns the kept
// boxes (indices into `dets`, best first) and leaves the sorted candidates in `dets`.
template <typename T>
std::vector<int64_t> ProposeImage(const ProposalParam& p, const std::vector<Det>& anchors, const T* scores,
                                  const T* deltas, const T* info, int64_t H, int64_t W, std::vector<Det>* dets) {
  const int64_t A = static_cast<int64_t>(anchors.size()), count = A * H * W, HW = H * W;
  const float im_h = static_cast<float>(info[0]), im_w = static_cast<float>(info[1]);
  const float im_scale = static_cast<float>(info[2]);
  const int64_t real_h = static_cast<int64_t>(im_h / static_cast<float>(p.feature_stride));
  const int64_t real_w = static_cast<int64_t>(im_w / static_cast<float>(p.feature_stride));
  std::vector<Det> all(static_cast<size_t>(count));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w)
      for (int64_t a = 0; a < A; ++a) {
        Det& d = all[static_cast<size_t>((h * W + w) * A + a)];
        const Det& an = anchors[static_cast<size_t>(a)];
        const float sx = static_cast<float>(w * p.feature_stride), sy = static_cast<float>(h * p.feature_stride);
        const float x1 = an[0] + sx, y1 = an[1] + sy, x2 = an[2] + sx, y2 = an[3] + sy;
        const int64_t cell = h * W + w;
        const float d0 = static_cast<float>(deltas[(a * 4 + 0) * HW + cell]);
        const float d1 = static_cast<float>(deltas[(a * 4 + 1) * HW + cell]);
        const float d2 = static_cast<float>(deltas[(a * 4 + 2) * HW + cell]);
        const float d3 = static_cast<float>(deltas[(a * 4 + 3) * HW + cell]);
        float px1, py1, px2, py2;
        if (p.iou_loss) {
          px1 = x1 + d0, py1 = y1 + d1, px2 = x2 + d2, py2 = y2 + d3;
        } else {
          // The mixed float and double steps are MXNet's, kept for bit-equal boxes.
          const float bw = static_cast<float>(x2 - x1 + 1.0), bh = static_cast<float>(y2 - y1 + 1.0);
          const float cx = static_cast<float>(x1 + 0.5 * (bw - 1.0)), cy = static_cast<float>(y1 + 0.5 * (bh - 1.0));
          const float pcx = d0 * bw + cx, pcy = d1 * bh + cy;
          const float pw = std::exp(d2) * bw, ph = std::exp(d3) * bh;
          px1 = static_cast<float>(pcx - 0.5 * (pw - 1.0)), py1 = static_cast<float>(pcy - 0.5 * (ph - 1.0));
          px2 = static_cast<float>(pcx + 0.5 * (pw - 1.0)), py2 = static_cast<float>(pcy + 0.5 * (ph - 1.0));
        }
        d[0] = std::max(std::min(px1, im_w - 1.0f), 0.0f);
        d[1] = std::max(std::min(py1, im_h - 1.0f), 0.0f);
        d[2] = std::max(std::min(px2, im_w - 1.0f), 0.0f);
        d[3] = std::max(std::min(py2, im_h - 1.0f), 0.0f);
        d[4] = h >= real_h || w >= real_w ? -1.0f : static_cast<float>(scores[(A + a) * HW + cell]);
      }
  const float min_size = static_cast<float>(p.rpn_min_size) * im_scale;
  for (Det& d : all) {
    if (d[2] - d[0] + 1.0f < min_size || d[3] - d[1] + 1.0f < min_size) {
      d[0] -= min_size / 2, d[1] -= min_size / 2, d[2] += min_size / 2, d[3] += min_size / 2;
      d[4] = -1.0f;
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t i, int64_t j) { return all[static_cast<size_t>(i)][4] > all[static_cast<size_t>(j)][4]; });
  const int64_t pre = p.rpn_pre_nms_top_n > 0 ? std::min<int64_t>(p.rpn_pre_nms_top_n, count) : count;
  const int64_t post = std::min<int64_t>(p.rpn_post_nms_top_n, pre);
  dets->resize(static_cast<size_t>(pre));
  for (int64_t i = 0; i < pre; ++i) (*dets)[static_cast<size_t>(i)] = all[static_cast<size_t>(order[static_cast<size_t>(i)])];
  std::vector<float> area(static_cast<size_t>(pre));
  for (int64_t i = 0; i < pre; ++i) {
    const Det& d = (*dets)[static_cast<size_t>(i)];
    area[static_cast<size_t>(i)] = (d[2] - d[0] + 1) * (d[3] - d[1] + 1);
  }
  const float thresh = static_cast<float>(p.threshold);
  std::vector<char> suppressed(static_cast<size_t>(pre), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < pre && static_cast<int64_t>(keep.size()) < post; ++i) {
    if (suppressed[static_cast<size_t>(i)]) continue;
    keep.push_back(i);
    const Det& a = (*dets)[static_cast<size_t>(i)];
    for (int64_t j = i + 1; j < pre; ++j) {
      if (suppressed[static_cast<size_t>(j)]) continue;
      const Det& b = (*dets)[static_cast<size_t>(j)];
      const float iw = std::max(0.0f, std::min(a[2], b[2]) - std::max(a[0], b[0]) + 1.0f);
      const float ih = std::max(0.0f, std::min(a[3], b[3]) - std::max(a[1], b[1]) + 1.0f);
      const float inter = iw * ih;
      if (inter / (area[static_cast<size_t>(i)] + area[static_cast<size_t>(j)] - inter) > thresh)
        suppressed[static_cast<size_t>(j)] = 1;
    }
  }
  return keep;
}

void ProposalCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                     const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<ProposalParam>();
  const Shape& c = in[0].shape;
  const int64_t N = c[0], H = c[2], W = c[3], post = p.rpn_post_nms_top_n;
  const std::vector<Det> anchors = BaseAnchors(p);
  const int64_t A = static_cast<int64_t>(anchors.size());
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, attrs.op->name.c_str(), {
    const T* info = in[2].ptr<T>();
    // Checked before the parallel loop, which must not throw.
    for (int64_t b = 0; b < N; ++b) {
      const float fs = static_cast<float>(p.feature_stride);
      const float rh = static_cast<float>(info[b * 3]) / fs, rw = static_cast<float>(info[b * 3 + 1]) / fs;
      if (!(rh < static_cast<float>(H + 1) && rw < static_cast<float>(W + 1)))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': im_info of image ", b, " gives an image of ",
              static_cast<double>(info[b * 3]), " x ", static_cast<double>(info[b * 3 + 1]),
              " pixels, more than the feature map's ", H, " x ", W, " cells of feature_stride ", p.feature_stride,
              " cover");
    }
    ParallelFor(N, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        std::vector<Det> dets;
        std::vector<int64_t> keep =
            ProposeImage(p, anchors, in[0].ptr<T>() + b * 2 * A * H * W, in[1].ptr<T>() + b * 4 * A * H * W,
                         info + b * 3, H, W, &dets);
        for (int64_t i = 0; i < post; ++i) {
          const Det& d = dets[static_cast<size_t>(keep[static_cast<size_t>(i) % keep.size()])];
          const int64_t row = b * post + i;
          if (req[0] != OpReq::kNullOp) {
            T* o = out[0].ptr<T>() + row * 5;
            Store(o, req[0], static_cast<double>(b));
            for (int k = 0; k < 4; ++k) Store(o + 1 + k, req[0], static_cast<double>(d[k]));
          }
          if (req[1] != OpReq::kNullOp) Store(out[1].ptr<T>() + row, req[1], static_cast<double>(d[4]));
        }
      }
    });
  });
}

int VisibleOutputs(const NodeAttrs& attrs) { return attrs.Params<ProposalParam>().output_score ? 2 : 1; }

std::vector<std::string> OutputNames(const NodeAttrs&) { return {"output", "score"}; }

}  // namespace

WEFT_REGISTER_OP(_contrib_Proposal)
    .Describe(
        "Region proposals of Faster R-CNN's RPN for one image: anchors of every scale and ratio at each cell of the "
        "(H, W) map, decoded by bbox_pred, clipped to the image of im_info = (height, width, scale), scored by the "
        "foreground half of cls_prob (cells beyond the image and boxes under rpn_min_size * scale score -1), the "
        "rpn_pre_nms_top_n best suppressed at IoU > threshold. Outputs the first rpn_post_nms_top_n kept boxes "
        "(rpn_post_nms_top_n, 5) as [0, x1, y1, x2, y2] (repeating the kept ones when fewer remain) and, shown "
        "with output_score, their scores (rpn_post_nms_top_n, 1).")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("cls_prob", "NDArray-or-Symbol", "Background then foreground scores of each anchor (1, 2A, H, W)")
    .AddArgument("bbox_pred", "NDArray-or-Symbol", "Box deltas from each anchor (1, 4A, H, W)")
    .AddArgument("im_info", "NDArray-or-Symbol", "The image's (height, width, scale) (1, 3)")
    .SetParams<ProposalParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", VisibleOutputs)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", ProposalShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ProposalCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_MultiProposal)
    .Describe(
        "_contrib_Proposal for a batch of N images: outputs (N * rpn_post_nms_top_n, 5) rows [image, x1, y1, x2, "
        "y2], image by image, and, shown with output_score, their scores (N * rpn_post_nms_top_n, 1).")
    .SetNumInputs(3)
    .SetNumOutputs(2)
    .AddArgument("cls_prob", "NDArray-or-Symbol", "Background then foreground scores of each anchor (N, 2A, H, W)")
    .AddArgument("bbox_pred", "NDArray-or-Symbol", "Box deltas from each anchor (N, 4A, H, W)")
    .AddArgument("im_info", "NDArray-or-Symbol", "Each image's (height, width, scale) (N, 3)")
    .SetParams<ProposalParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", VisibleOutputs)
    .SetAttr<FListNames>("FListOutputNames", OutputNames)
    .SetAttr<FInferShape>("FInferShape", MultiProposalShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", ProposalCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

}  // namespace op
}  // namespace weft

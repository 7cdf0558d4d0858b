// Bounding-box operators of MXNet's contrib namespace: _contrib_box_iou (pairwise
// intersection over union), _contrib_box_nms (greedy non-maximum suppression, alias
// _contrib_box_non_maximum_suppression), _contrib_bipartite_matching (greedy matching by
// score), _contrib_box_encode and _contrib_box_decode (center-offset regression targets).
// Boxes are 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].
//
// Only box_nms has a real gradient (each kept box's gradient goes back to the input row
// it came from); the others give zeros, as MXNet does.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/op/detection/box_util.h"

namespace weft {
namespace op {

struct BoxIouParam {
  std::string format = "corner";
};

WEFT_PARAM_SCHEMA(BoxIouParam, s) {
  s.Field("format", &BoxIouParam::format)
      .Default("corner")
      .Choices({"corner", "center"})
      .Describe("The box encoding: 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].");
}

struct BoxNmsParam {
  double overlap_thresh = 0.5;
  double valid_thresh = 0;
  int topk = -1;
  int coord_start = 2;
  int score_index = 1;
  int id_index = -1;
  int background_id = -1;
  bool force_suppress = false;
  std::string in_format = "corner";
  std::string out_format = "corner";
};

WEFT_PARAM_SCHEMA(BoxNmsParam, s) {
  s.Field("overlap_thresh", &BoxNmsParam::overlap_thresh)
      .Default(0.5)
      .Describe("A box overlapping a higher-scored one by more than this IoU is suppressed.");
  s.Field("valid_thresh", &BoxNmsParam::valid_thresh)
      .Default(0.0)
      .Describe("Only boxes scoring above this take part.");
  s.Field("topk", &BoxNmsParam::topk).Default(-1).Describe("Only the topk best-scored boxes take part; -1: all.");
  s.Field("coord_start", &BoxNmsParam::coord_start).Default(2).Describe("The index of the first of the 4 coordinates.");
  s.Field("score_index", &BoxNmsParam::score_index).Default(1).Describe("The index of the score.");
  s.Field("id_index", &BoxNmsParam::id_index).Default(-1).Describe("The index of the class id; -1: no class.");
  s.Field("background_id", &BoxNmsParam::background_id)
      .Default(-1)
      .Describe("The class id of the background, whose boxes are dropped (with id_index).");
  s.Field("force_suppress", &BoxNmsParam::force_suppress)
      .Default(false)
      .Describe("Suppress across classes; otherwise (with id_index) only boxes of one class suppress each other.");
  s.Field("in_format", &BoxNmsParam::in_format)
      .Default("corner")
      .Choices({"corner", "center"})
      .Describe("The input box encoding: 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height].");
  s.Field("out_format", &BoxNmsParam::out_format)
      .Default("corner")
      .Choices({"corner", "center"})
      .Describe("The output box encoding: 'corner' or 'center'.");
}

struct BipartiteMatchingParam {
  bool is_ascend = false;
  double threshold = 0;
  int topk = -1;
};

WEFT_PARAM_SCHEMA(BipartiteMatchingParam, s) {
  s.Field("is_ascend", &BipartiteMatchingParam::is_ascend)
      .Default(false)
      .Describe("Match the lowest scores first (then scores must be below threshold).");
  s.Field("threshold", &BipartiteMatchingParam::threshold)
      .Describe("Scores must be above it to match (below it with is_ascend).");
  s.Field("topk", &BipartiteMatchingParam::topk).Default(-1).Describe("Stop matching after topk matches; -1: no limit.");
}

struct BoxDecodeParam {
  double std0 = 1, std1 = 1, std2 = 1, std3 = 1;
  double clip = -1;
  std::string format = "center";
};

WEFT_PARAM_SCHEMA(BoxDecodeParam, s) {
  s.Field("std0", &BoxDecodeParam::std0).Default(1.0).Describe("Multiplies the first encoded value (x offset).");
  s.Field("std1", &BoxDecodeParam::std1).Default(1.0).Describe("Multiplies the second encoded value (y offset).");
  s.Field("std2", &BoxDecodeParam::std2).Default(1.0).Describe("Multiplies the third encoded value (log width).");
  s.Field("std3", &BoxDecodeParam::std3).Default(1.0).Describe("Multiplies the fourth encoded value (log height).");
  s.Field("clip", &BoxDecodeParam::clip)
      .Default(-1.0)
      .Describe("When positive, the log width and height offsets are clipped to it before exp.");
  s.Field("format", &BoxDecodeParam::format)
      .Default("center")
      .Choices({"corner", "center"})
      .Describe("The anchors' encoding: 'corner' or 'center'.");
}

namespace {

// ---------------------------------------------------------------- box_iou
bool BoxIouShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &l = (*in)[0], &r = (*in)[1];
  if (!l.is_known() || !r.is_known()) return false;
  for (const Shape* s : {&l, &r})
    if (s->ndim() < 1 || (*s)[s->ndim() - 1] != 4)
      Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected boxes (..., 4), got shape ", s->ToString());
  std::vector<int64_t> d(l.begin(), l.end() - 1);
  d.insert(d.end(), r.begin(), r.end() - 1);
  AssignShape(attrs, out, 0, Shape(d), "output");
  return true;
}

void BoxIouCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const bool center = attrs.Params<BoxIouParam>().format == "center";
  const int64_t nl = in[0].Size() / 4, nr = in[1].Size() / 4;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_box_iou", {
    const T* a = in[0].ptr<T>();
    const T* b = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(nl, std::max<int64_t>(1, kElemGrain / std::max<int64_t>(nr, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        Box bi = ReadBox(a + i * 4, center);
        for (int64_t j = 0; j < nr; ++j) Store(y + i * nr + j, req[0], Iou(bi, ReadBox(b + j * 4, center)));
      }
    });
  });
}

// ---------------------------------------------------------------- box_nms
struct NmsLayout {
  int64_t batch = 1, n = 0, width = 0;
};

NmsLayout NmsLayoutOf(const NodeAttrs& attrs, const Shape& s) {
  const auto& p = attrs.Params<BoxNmsParam>();
  if (s.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected boxes (..., num_boxes, box_width) with at least 2 dimensions, got shape ", s.ToString());
  NmsLayout l;
  l.batch = s.ProdRange(0, s.ndim() - 2);
  l.n = s[s.ndim() - 2];
  l.width = s[s.ndim() - 1];
  const int64_t need = p.id_index >= 0 ? 6 : 5;
  if (l.width < need)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected boxes of at least ", need,
          " values (score, 4 coordinates", p.id_index >= 0 ? ", class id" : "", "), got shape ", s.ToString());
  auto in_range = [&](int64_t i) { return i >= 0 && i < l.width; };
  auto in_coords = [&](int64_t i) { return i >= p.coord_start && i <= p.coord_start + 3; };
  if (!in_range(p.coord_start) || !in_range(p.coord_start + 3))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': coordinates [", p.coord_start, ", ",
          p.coord_start + 3, "] (coord_start) do not fit in boxes of width ", l.width);
  if (!in_range(p.score_index) || in_coords(p.score_index))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': score_index ", p.score_index,
          " must lie in [0, ", l.width, ") outside the coordinates [", p.coord_start, ", ", p.coord_start + 3, "]");
  if (p.id_index >= 0 && (!in_range(p.id_index) || in_coords(p.id_index) || p.id_index == p.score_index))
    Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': id_index ", p.id_index, " must lie in [0, ", l.width,
          ") apart from the coordinates [", p.coord_start, ", ", p.coord_start + 3, "] and score_index ",
          p.score_index);
  return l;
}

Shape RecordShape(const Shape& s) {
  Shape r = s;
  r[r.ndim() - 1] = 1;
  return r;
}

bool BoxNmsShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Shape s = (*in)[0].is_known() ? (*in)[0] : (*out)[0];
  if (!s.is_known()) return false;
  NmsLayoutOf(attrs, s);
  AssignShape(attrs, in, 0, s, "input");
  AssignShape(attrs, out, 0, s, "output");
  AssignShape(attrs, out, 1, RecordShape(s), "output");
  return true;
}

// Converts the 4 coordinates at p between encodings.
template <typename T>
void Reencode(T* p, bool to_center) {
  double a = static_cast<double>(p[0]), b = static_cast<double>(p[1]), c = static_cast<double>(p[2]),
         d = static_cast<double>(p[3]);
  if (to_center) {
    p[0] = static_cast<T>((a + c) / 2), p[1] = static_cast<T>((b + d) / 2), p[2] = static_cast<T>(c - a),
    p[3] = static_cast<T>(d - b);
  } else {
    p[0] = static_cast<T>(a - c / 2), p[1] = static_cast<T>(b - d / 2), p[2] = static_cast<T>(a + c / 2),
    p[3] = static_cast<T>(b + d / 2);
  }
}

void BoxNmsCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                   const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BoxNmsParam>();
  NmsLayout l = NmsLayoutOf(attrs, in[0].shape);
  const bool center = p.in_format == "center";
  const int64_t topk = p.topk < 0 ? l.n : std::min<int64_t>(l.n, p.topk);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_box_nms", {
    // The input is copied first: the output may share its memory.
    std::vector<T> src(in[0].ptr<T>(), in[0].ptr<T>() + in[0].Size());
    T* y = out[0].ptr<T>();
    T* rec = out[1].ptr<T>();
    const int64_t total = l.batch * l.n;
    if (topk < 1) {
      // As MXNet: nothing is suppressed or re-encoded, and each row records itself.
      std::copy(src.begin(), src.end(), y);
      for (int64_t i = 0; i < total; ++i) rec[i] = static_cast<T>(i);
      return;
    }
    std::fill(y, y + in[0].Size(), T(-1));
    std::fill(rec, rec + total, T(-1));
    ParallelFor(l.batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const T* rows = src.data() + b * l.n * l.width;
        auto score = [&](int64_t i) { return static_cast<double>(rows[i * l.width + p.score_index]); };
        auto cls = [&](int64_t i) { return static_cast<double>(rows[i * l.width + p.id_index]); };
        std::vector<int64_t> order;
        for (int64_t i = 0; i < l.n; ++i)
          if (score(i) > p.valid_thresh && (p.id_index < 0 || cls(i) != p.background_id)) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return score(i) > score(j); });
        if (static_cast<int64_t>(order.size()) > topk) order.resize(static_cast<size_t>(topk));
        std::vector<Box> boxes;
        for (int64_t i : order) boxes.push_back(ReadBox(rows + i * l.width + p.coord_start, center));
        std::vector<bool> gone(order.size(), false);
        for (size_t r = 0; r < order.size(); ++r) {
          if (gone[r]) continue;
          for (size_t q = r + 1; q < order.size(); ++q) {
            if (gone[q]) continue;
            if (!p.force_suppress && p.id_index >= 0 &&
                static_cast<int64_t>(cls(order[r])) != static_cast<int64_t>(cls(order[q])))
              continue;
            if (Iou(boxes[r], boxes[q]) > p.overlap_thresh) gone[q] = true;
          }
        }
        int64_t count = 0;
        for (size_t r = 0; r < order.size(); ++r) {
          if (gone[r]) continue;
          T* dst = y + (b * l.n + count) * l.width;
          std::copy(rows + order[r] * l.width, rows + (order[r] + 1) * l.width, dst);
          if (p.in_format != p.out_format) Reencode(dst + p.coord_start, p.out_format == "center");
          rec[b * l.n + count] = static_cast<T>(b * l.n + order[r]);
          ++count;
        }
      }
    });
  });
}

// Inputs: ograd (the boxes' gradient), record (which input row each output row came
// from); output: the gradient of the input boxes.
bool BoxNmsBackwardShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& g = (*in)[0];
  if (!g.is_known()) return false;
  NmsLayoutOf(attrs, g);
  AssignShape(attrs, in, 1, RecordShape(g), "input");
  AssignShape(attrs, out, 0, g, "output");
  return true;
}

void BoxNmsBackward(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                    const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  NmsLayout l = NmsLayoutOf(attrs, in[0].shape);
  const int64_t total = l.batch * l.n;
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_backward_contrib_box_nms", {
    const T* g = in[0].ptr<T>();
    const T* rec = in[1].ptr<T>();
    T* gd = out[0].ptr<T>();
    if (req[0] != OpReq::kAddTo) std::fill(gd, gd + out[0].Size(), T(0));
    for (int64_t i = 0; i < total; ++i) {
      double r = static_cast<double>(rec[i]);
      if (r < 0) continue;
      if (!(r < static_cast<double>(total)))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': record[", i, "] = ", r,
              " names no input box (there are ", total, ")");
      int64_t k = static_cast<int64_t>(r);
      for (int64_t j = 0; j < l.width; ++j)
        gd[k * l.width + j] = static_cast<T>(static_cast<double>(gd[k * l.width + j]) +
                                             static_cast<double>(g[i * l.width + j]));
    }
  });
}

// ---------------------------------------------------------------- bipartite_matching
bool BipartiteShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape& d = (*in)[0];
  if (!d.is_known()) return false;
  if (d.ndim() < 2)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name,
          "': expected scores (..., rows, cols) with at least 2 dimensions, got shape ", d.ToString());
  std::vector<int64_t> rows(d.begin(), d.end() - 1), cols(d.begin(), d.end() - 2);
  cols.push_back(d[d.ndim() - 1]);
  AssignShape(attrs, out, 0, Shape(rows), "output");
  AssignShape(attrs, out, 1, Shape(cols), "output");
  return true;
}

void BipartiteCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const auto& p = attrs.Params<BipartiteMatchingParam>();
  const Shape& d = in[0].shape;
  const int64_t R = d[d.ndim() - 2], C = d[d.ndim() - 1], B = d.ProdRange(0, d.ndim() - 2);
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_bipartite_matching", {
    const T* s = in[0].ptr<T>();
    T* rm = out[0].ptr<T>();
    T* cm = out[1].ptr<T>();
    ParallelFor(B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const T* sc = s + b * R * C;
        std::vector<int64_t> order(static_cast<size_t>(R * C));
        std::iota(order.begin(), order.end(), 0);
        auto v = [&](int64_t i) { return static_cast<double>(sc[i]); };
        if (p.is_ascend)
          std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return v(i) < v(j); });
        else
          std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return v(i) > v(j); });
        std::vector<double> row(static_cast<size_t>(R), -1), col(static_cast<size_t>(C), -1);
        int64_t count = 0;
        for (int64_t i : order) {
          int64_t r = i / C, c = i % C;
          if (row[static_cast<size_t>(r)] != -1 || col[static_cast<size_t>(c)] != -1) continue;
          if (p.is_ascend ? !(v(i) < p.threshold) : !(v(i) > p.threshold)) break;
          row[static_cast<size_t>(r)] = static_cast<double>(c);
          col[static_cast<size_t>(c)] = static_cast<double>(r);
          // MXNet stops once the count exceeds topk, so topk + 1 pairs are matched; kept so
          // that matchings agree with MXNet's.
          if (p.topk > 0 && ++count > p.topk) break;
        }
        for (int64_t r = 0; r < R; ++r)
          if (req[0] != OpReq::kNullOp) Store(rm + b * R + r, req[0], row[static_cast<size_t>(r)]);
        for (int64_t c = 0; c < C; ++c)
          if (req[1] != OpReq::kNullOp) Store(cm + b * C + c, req[1], col[static_cast<size_t>(c)]);
      }
    });
  });
}

// ---------------------------------------------------------------- box_encode
bool BoxEncodeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &anc = (*in)[2], &ref = (*in)[3];
  if (!anc.is_known()) return false;
  if (anc.ndim() != 3 || anc[2] != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected anchors (B, N, 4), got shape ", anc.ToString());
  const Shape bn{anc[0], anc[1]};
  AssignShape(attrs, in, 0, bn, "input");
  AssignShape(attrs, in, 1, bn, "input");
  if (ref.known_ndim() && (ref.ndim() != 3 || (ref[0] >= 0 && ref[0] != anc[0]) || (ref[2] >= 0 && ref[2] != 4)))
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected refs (", anc[0], ", M, 4), got shape ",
          ref.ToString());
  AssignShape(attrs, in, 4, Shape{4}, "input");
  AssignShape(attrs, in, 5, Shape{4}, "input");
  AssignShape(attrs, out, 0, anc, "output");
  AssignShape(attrs, out, 1, anc, "output");
  return (*in)[0].is_known() && (*in)[1].is_known() && ref.is_known();
}

void BoxEncodeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  const int64_t B = in[2].shape[0], N = in[2].shape[1], M = in[3].shape[1];
  WEFT_FLOAT_TYPE_SWITCH(in[2].dtype, T, "_contrib_box_encode", {
    const T *smp = in[0].ptr<T>(), *mat = in[1].ptr<T>(), *anc = in[2].ptr<T>(), *ref = in[3].ptr<T>();
    const T *mean = in[4].ptr<T>(), *std_ = in[5].ptr<T>();
    // Matches of positive samples index refs; they are checked before any is read.
    for (int64_t i = 0; i < B * N; ++i) {
      double m = static_cast<double>(mat[i]);
      if (static_cast<double>(smp[i]) > 0.5 && !(m >= 0 && m < static_cast<double>(M)))
        Throw(ErrorKind::kValue, "Operator '", attrs.op->name, "': matches[", i / N, ", ", i % N, "] = ", m,
              " names no reference box (there are ", M, ")");
    }
    T *tgt = out[0].ptr<T>(), *mask = out[1].ptr<T>();
    for (int64_t i = 0; i < B * N; ++i) {
      const bool valid = static_cast<double>(smp[i]) > 0.5;
      double t[4] = {0, 0, 0, 0};
      if (valid) {
        Box a = ReadBox(anc + i * 4, false);
        Box g = ReadBox(ref + ((i / N) * M + static_cast<int64_t>(static_cast<double>(mat[i]))) * 4, false);
        const double aw = a.x2 - a.x1, ah = a.y2 - a.y1, gw = g.x2 - g.x1, gh = g.y2 - g.y1;
        t[0] = ((g.x1 + gw / 2) - (a.x1 + aw / 2)) / aw;
        t[1] = ((g.y1 + gh / 2) - (a.y1 + ah / 2)) / ah;
        t[2] = std::log(gw / aw);
        t[3] = std::log(gh / ah);
        for (int k = 0; k < 4; ++k) t[k] = (t[k] - static_cast<double>(mean[k])) / static_cast<double>(std_[k]);
      }
      for (int k = 0; k < 4; ++k) {
        if (req[0] != OpReq::kNullOp) Store(tgt + i * 4 + k, req[0], t[k]);
        if (req[1] != OpReq::kNullOp) Store(mask + i * 4 + k, req[1], valid ? 1.0 : 0.0);
      }
    }
  });
}

// ---------------------------------------------------------------- box_decode
bool BoxDecodeShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const Shape &d = (*in)[0], &a = (*in)[1];
  if (!d.is_known() || !a.is_known()) return false;
  if (d.ndim() != 3 || d[2] != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected data (B, N, 4), got shape ", d.ToString());
  if (a.ndim() != 3 || a[0] != 1 || a[1] != d[1] || a[2] != 4)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected anchors (1, ", d[1],
          ", 4) for data of shape ", d.ToString(), ", got shape ", a.ToString());
  AssignShape(attrs, out, 0, d, "output");
  return true;
}

void BoxDecodeCompute(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>& in,
                      const std::vector<OpReq>& req, const std::vector<TBlob>& out) {
  if (req[0] == OpReq::kNullOp) return;
  const auto& p = attrs.Params<BoxDecodeParam>();
  const int64_t B = in[0].shape[0], N = in[0].shape[1];
  const double stds[4] = {p.std0, p.std1, p.std2, p.std3};
  WEFT_FLOAT_TYPE_SWITCH(in[0].dtype, T, "_contrib_box_decode", {
    const T* x = in[0].ptr<T>();
    const T* anc = in[1].ptr<T>();
    T* y = out[0].ptr<T>();
    ParallelFor(B * N, kElemGrain / 4, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        Box a = ReadBox(anc + (i % N) * 4, p.format == "center");
        const double aw = a.x2 - a.x1, ah = a.y2 - a.y1, ax = a.x1 + aw / 2, ay = a.y1 + ah / 2;
        double v[4];
        for (int k = 0; k < 4; ++k) v[k] = static_cast<double>(x[i * 4 + k]) * stds[k];
        if (p.clip > 0) v[2] = std::min(v[2], p.clip), v[3] = std::min(v[3], p.clip);
        const double ox = v[0] * aw + ax, oy = v[1] * ah + ay, hw = std::exp(v[2]) * aw / 2, hh = std::exp(v[3]) * ah / 2;
        Store(y + i * 4 + 0, req[0], ox - hw);
        Store(y + i * 4 + 1, req[0], oy - hh);
        Store(y + i * 4 + 2, req[0], ox + hw);
        Store(y + i * 4 + 3, req[0], oy + hh);
      }
    });
  });
}

}  // namespace

WEFT_REGISTER_OP(_contrib_box_iou)
    .Describe(
        "Intersection over union of every box of lhs (..., 4) with every box of rhs (..., 4): the output is "
        "lhs.shape[:-1] + rhs.shape[:-1].")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "The first boxes (..., 4)")
    .AddArgument("rhs", "NDArray-or-Symbol", "The second boxes (..., 4)")
    .SetParams<BoxIouParam>()
    .SetAttr<FInferShape>("FInferShape", BoxIouShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BoxIouCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_box_nms)
    .Describe(
        "Greedy non-maximum suppression of boxes (..., num_boxes, box_width), each row holding a score, 4 "
        "coordinates and optionally a class id: boxes scoring above valid_thresh (and not of background_id) are "
        "sorted by score, the topk best kept, and each suppresses later ones overlapping it by more than "
        "overlap_thresh (of its class only, unless force_suppress). The survivors come first in score order; the "
        "other rows are -1. The hidden second output records each output row's input row for the gradient.")
    .AddAlias("_contrib_box_non_maximum_suppression")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The boxes (..., num_boxes, box_width)")
    .SetParams<BoxNmsParam>()
    .SetAttr<FNumVisibleOutputs>("FNumVisibleOutputs", [](const NodeAttrs&) { return 1; })
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"output", "record"}; })
    .SetAttr<FInferShape>("FInferShape", BoxNmsShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BoxNmsCompute)
    .SetAttr<FGradient>("FGradient", [](GradBuilder& b, const NodeAttrs& attrs, const GradArgs& a) {
      return std::vector<GradValue>{b.Op("_backward_contrib_box_nms", {a.out_grads[0], a.outputs[1]}, attrs.dict)};
    });

WEFT_REGISTER_OP(_backward_contrib_box_nms)
    .Describe("Gradient of _contrib_box_nms: each kept row's gradient goes back to the input row it came from.")
    .SetNumInputs(2)
    .AddArgument("ograd", "NDArray-or-Symbol", "Gradient of the boxes")
    .AddArgument("record", "NDArray-or-Symbol", "The forward's hidden record (..., num_boxes, 1)")
    .SetParams<BoxNmsParam>()
    .SetAttr<FInferShape>("FInferShape", BoxNmsBackwardShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<FCompute>("FCompute<cpu>", BoxNmsBackward);

WEFT_REGISTER_OP(_contrib_bipartite_matching)
    .Describe(
        "Greedy bipartite matching of a score matrix (..., rows, cols): pairs are taken in order of score "
        "(descending, or ascending with is_ascend) while both ends are free and the score passes threshold. "
        "Outputs: the column matched to each row (..., rows) and the row matched to each column (..., cols), -1 "
        "where none.")
    .SetNumInputs(1)
    .SetNumOutputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "The scores (..., rows, cols)")
    .SetParams<BipartiteMatchingParam>()
    .SetAttr<FInferShape>("FInferShape", BipartiteShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BipartiteCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_box_encode)
    .Describe(
        "Regression targets of anchors (B, N, 4) towards their matched reference boxes refs (B, M, 4), both in "
        "corner encoding: ((dx / w, dy / h, log(w'/w), log(h'/h)) - means) / stds for samples above 0.5, zeros "
        "elsewhere. Outputs: the targets and their masks (B, N, 4).")
    .SetNumInputs(6)
    .SetNumOutputs(2)
    .AddArgument("samples", "NDArray-or-Symbol", "(B, N): positive (> 0.5), negative or ignored samples")
    .AddArgument("matches", "NDArray-or-Symbol", "(B, N): the reference box of each anchor, in [0, M)")
    .AddArgument("anchors", "NDArray-or-Symbol", "(B, N, 4) in corner encoding")
    .AddArgument("refs", "NDArray-or-Symbol", "(B, M, 4) in corner encoding")
    .AddArgument("means", "NDArray-or-Symbol", "(4,): subtracted from the encoded values")
    .AddArgument("stds", "NDArray-or-Symbol", "(4,): divide the encoded values")
    .SetAttr<FListNames>("FListOutputNames",
                         [](const NodeAttrs&) { return std::vector<std::string>{"targets", "masks"}; })
    .SetAttr<FInferShape>("FInferShape", BoxEncodeShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BoxEncodeCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

WEFT_REGISTER_OP(_contrib_box_decode)
    .Describe(
        "Boxes (B, N, 4) in corner encoding from regression outputs data (B, N, 4) and anchors (1, N, 4): the "
        "inverse of box_encode with the offsets scaled by std0..std3 (and the log sizes clipped to clip when it "
        "is positive).")
    .SetNumInputs(2)
    .AddArgument("data", "NDArray-or-Symbol", "(B, N, 4): the encoded offsets")
    .AddArgument("anchors", "NDArray-or-Symbol", "(1, N, 4) in the encoding `format` says")
    .SetParams<BoxDecodeParam>()
    .SetAttr<FInferShape>("FInferShape", BoxDecodeShape)
    .SetAttr<FInferType>("FInferType", SameFloatType)
    .SetAttr<TOpPattern>("TOpPattern", OpPattern::kOpaque)
    .SetAttr<FCompute>("FCompute<cpu>", BoxDecodeCompute)
    .SetAttr<FGradient>("FGradient", ZeroGrads);

}  // namespace op
}  // namespace weft

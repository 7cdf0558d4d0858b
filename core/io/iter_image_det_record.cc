// ImageDetRecordIter: batches of decoded images with detection labels from a RecordIO file
// (im2rec with a detection list), as MXNet's ImageDetRecordIter.
//
// A record's label is MXNet's detection layout: header_width, object_width, the rest of the
// header, then per object [class, xmin, ymin, xmax, ymax, extra...] in coordinates relative
// to the image. Each sample goes through MXNet's default detection augmenter, in its order:
// resize of the shorter edge, HSL hue/saturation/illumination and contrast jitter, mirror,
// padding (the image placed in a larger canvas of fill_value), a crop sampled until its box
// meets one sampler's overlap and coverage constraints, then the fit to data_shape
// (resize_mode). Object boxes follow every step; objects whose centre leaves a crop (or
// that overlap it too little) are dropped. Then the normaliser: (x - mean) / std * scale,
// a channel's std applying only when > 0, as MXNet's.
//
// The label row of a sample is [channels, height, width, n, label...] (height and width
// of the image after augmentation, n the length of its label), padded with label_pad_value
// to label_pad_width + 4 values; label_pad_width <= 0 takes the longest label in the file.
// Images that resize_mode leaves smaller than data_shape lie at the top left, the rest of
// the array holding normalised zeros.
//
// Random draws come from a stream per sample seeded by (seed, epoch, position), so a run is
// reproducible whatever the thread count; the draws differ from MXNet's.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <unordered_map>

#include "core/base/tblob.h"
#include "core/io/data_iter.h"
#include "core/io/image_codec.h"
#include "core/io/recordio.h"

namespace weft {
namespace io {

struct ImageDetRecParam {
  std::string path_imglist;
  std::string path_imgrec = "./data/imgrec.rec";
  std::string aug_seq = "det_aug_default";
  int label_width = -1;
  Shape data_shape;
  int preprocess_threads = 4;
  bool verbose = true;
  int num_parts = 1;
  int part_index = 0;
  int shuffle_chunk_size = 0;
  int shuffle_chunk_seed = 0;
  int label_pad_width = 0;
  float label_pad_value = -1.f;
  bool shuffle = false;
  int seed = 0;
  int batch_size = 1;
  bool round_batch = true;
  std::string data_name = "data";
  std::string label_name = "softmax_label";
};
WEFT_PARAM_SCHEMA(ImageDetRecParam, s) {
  s.Field("path_imglist", &ImageDetRecParam::path_imglist).Default("")
      .Describe("Dataset Param: an image list (index, labels, path per line) whose labels replace the records' "
                "own, matched by the records' image index; with label_width -1 every value between the index and the "
                "path is a label.");
  s.Field("path_imgrec", &ImageDetRecParam::path_imgrec).Default("./data/imgrec.rec")
      .Describe("Dataset Param: path to the image RecordIO (.rec) file.");
  s.Field("aug_seq", &ImageDetRecParam::aug_seq).Default("det_aug_default")
      .Describe("Augmentation Param: the augmenters, comma-separated (det_aug_default is the one there is).");
  s.Field("label_width", &ImageDetRecParam::label_width).Default(-1)
      .Describe("Dataset Param: how many labels each record holds, -1 for any number.");
  s.Field("data_shape", &ImageDetRecParam::data_shape)
      .Describe("Dataset Param: shape of one image, (channels, height, width); channels 1, 3 or 4.");
  s.Field("preprocess_threads", &ImageDetRecParam::preprocess_threads).Default(4).Range(1, 1024)
      .Describe("Backend Param: number of threads decoding and augmenting images.");
  s.Field("verbose", &ImageDetRecParam::verbose).Default(true).Describe("Auxiliary Param: whether to log (unused).");
  s.Field("num_parts", &ImageDetRecParam::num_parts).Default(1).Min(1)
      .Describe("Partition the data into this many parts (distributed training).");
  s.Field("part_index", &ImageDetRecParam::part_index).Default(0).Min(0).Describe("The part this iterator reads.");
  s.Field("shuffle_chunk_size", &ImageDetRecParam::shuffle_chunk_size).Default(0).Min(0)
      .Describe("The size (MB) of MXNet's shuffle chunks; accepted, Weft shuffles the whole part.");
  s.Field("shuffle_chunk_seed", &ImageDetRecParam::shuffle_chunk_seed).Default(0)
      .Describe("The seed of MXNet's chunk shuffling; accepted, seed drives Weft's shuffle.");
  s.Field("label_pad_width", &ImageDetRecParam::label_pad_width).Default(0)
      .Describe("Pad each label to this width (the 4 leading values not counted); <= 0 for the longest label in "
                "the file. A width smaller than a record's label is an error.");
  s.Field("label_pad_value", &ImageDetRecParam::label_pad_value).Default(-1.f).Describe("Label padding value.");
  s.Field("shuffle", &ImageDetRecParam::shuffle).Default(false)
      .Describe("Augmentation Param: whether to shuffle the samples (again at every reset).");
  s.Field("seed", &ImageDetRecParam::seed).Default(0).Describe("Augmentation Param: random seed.");
  s.Field("batch_size", &ImageDetRecParam::batch_size).Min(1).Describe("Batch Param: batch size.");
  s.Field("round_batch", &ImageDetRecParam::round_batch).Default(true)
      .Describe("Batch Param: fill the last batch with samples from the start of the epoch (pad counts them).");
  s.Field("data_name", &ImageDetRecParam::data_name).Default("data").Describe("Name of the data array.");
  s.Field("label_name", &ImageDetRecParam::label_name).Default("softmax_label").Describe("Name of the label array.");
}

struct DetAugParam {
  int resize = -1;
  float rand_crop_prob = 0.f;
  std::vector<double> min_crop_scales{0.0}, max_crop_scales{1.0};
  std::vector<double> min_crop_aspect_ratios{1.0}, max_crop_aspect_ratios{1.0};
  std::vector<double> min_crop_overlaps{0.0}, max_crop_overlaps{1.0};
  std::vector<double> min_crop_sample_coverages{0.0}, max_crop_sample_coverages{1.0};
  std::vector<double> min_crop_object_coverages{0.0}, max_crop_object_coverages{1.0};
  int num_crop_sampler = 1;
  std::string crop_emit_mode = "center";
  float emit_overlap_thresh = 0.3f;
  std::vector<double> max_crop_trials{25};
  float rand_pad_prob = 0.f;
  float max_pad_scale = 1.f;
  int max_random_hue = 0;
  float random_hue_prob = 0.f;
  int max_random_saturation = 0;
  float random_saturation_prob = 0.f;
  int max_random_illumination = 0;
  float random_illumination_prob = 0.f;
  float max_random_contrast = 0.f;
  float random_contrast_prob = 0.f;
  float rand_mirror_prob = 0.f;
  int fill_value = 127;
  int inter_method = 1;
  std::string resize_mode = "force";
  // the normaliser's
  std::string mean_img;
  float mean_r = 0, mean_g = 0, mean_b = 0, mean_a = 0;
  float std_r = 0, std_g = 0, std_b = 0, std_a = 0;
  float scale = 1.f;
};
WEFT_PARAM_SCHEMA(DetAugParam, s) {
  s.Field("resize", &DetAugParam::resize).Default(-1)
      .Describe("Augmentation Param: scale the shorter edge to this size before the other augmentations (-1: no).");
  s.Field("rand_crop_prob", &DetAugParam::rand_crop_prob).Default(0.f)
      .Describe("Augmentation Param: probability of a random crop, <= 0 to disable.");
  auto tuple = [&](const char* name, std::vector<double> DetAugParam::*m, double def, const char* doc) {
    s.Field(name, m).Default(std::vector<double>{def}).Describe(doc);
  };
  tuple("min_crop_scales", &DetAugParam::min_crop_scales, 0.0, "Augmentation Param: min crop scales (one per sampler, or one for all).");
  tuple("max_crop_scales", &DetAugParam::max_crop_scales, 1.0, "Augmentation Param: max crop scales.");
  tuple("min_crop_aspect_ratios", &DetAugParam::min_crop_aspect_ratios, 1.0, "Augmentation Param: min crop aspect ratios.");
  tuple("max_crop_aspect_ratios", &DetAugParam::max_crop_aspect_ratios, 1.0, "Augmentation Param: max crop aspect ratios.");
  tuple("min_crop_overlaps", &DetAugParam::min_crop_overlaps, 0.0,
        "Augmentation Param: minimum IoU between the crop box and a ground truth.");
  tuple("max_crop_overlaps", &DetAugParam::max_crop_overlaps, 1.0,
        "Augmentation Param: maximum IoU between the crop box and a ground truth.");
  tuple("min_crop_sample_coverages", &DetAugParam::min_crop_sample_coverages, 0.0,
        "Augmentation Param: minimum ratio of intersection / crop area.");
  tuple("max_crop_sample_coverages", &DetAugParam::max_crop_sample_coverages, 1.0,
        "Augmentation Param: maximum ratio of intersection / crop area.");
  tuple("min_crop_object_coverages", &DetAugParam::min_crop_object_coverages, 0.0,
        "Augmentation Param: minimum ratio of intersection / ground-truth area.");
  tuple("max_crop_object_coverages", &DetAugParam::max_crop_object_coverages, 1.0,
        "Augmentation Param: maximum ratio of intersection / ground-truth area.");
  s.Field("num_crop_sampler", &DetAugParam::num_crop_sampler).Default(1).Min(0)
      .Describe("Augmentation Param: number of crop samplers.");
  s.Field("crop_emit_mode", &DetAugParam::crop_emit_mode).Default("center").Choices({"center", "overlap"})
      .Describe("Augmentation Param: which ground truths a crop drops. center: those whose centre is outside it; "
                "overlap: those whose covered fraction is not above emit_overlap_thresh.");
  s.Field("emit_overlap_thresh", &DetAugParam::emit_overlap_thresh).Default(0.3f).Min(0)
      .Describe("Augmentation Param: the covered fraction of crop_emit_mode='overlap'.");
  tuple("max_crop_trials", &DetAugParam::max_crop_trials, 25,
        "Augmentation Param: crop boxes tried per sampler before it gives up.");
  s.Field("rand_pad_prob", &DetAugParam::rand_pad_prob).Default(0.f).Describe("Augmentation Param: probability of padding.");
  s.Field("max_pad_scale", &DetAugParam::max_pad_scale).Default(1.f).Describe("Augmentation Param: maximum padding scale.");
  s.Field("max_random_hue", &DetAugParam::max_random_hue).Default(0)
      .Describe("Augmentation Param: maximum change of H in HLS space (0..180).");
  s.Field("random_hue_prob", &DetAugParam::random_hue_prob).Default(0.f).Describe("Augmentation Param: probability of a hue change.");
  s.Field("max_random_saturation", &DetAugParam::max_random_saturation).Default(0)
      .Describe("Augmentation Param: maximum change of S in HLS space (0..255).");
  s.Field("random_saturation_prob", &DetAugParam::random_saturation_prob).Default(0.f)
      .Describe("Augmentation Param: probability of a saturation change.");
  s.Field("max_random_illumination", &DetAugParam::max_random_illumination).Default(0)
      .Describe("Augmentation Param: maximum change of L in HLS space (0..255).");
  s.Field("random_illumination_prob", &DetAugParam::random_illumination_prob).Default(0.f)
      .Describe("Augmentation Param: probability of an illumination change.");
  s.Field("max_random_contrast", &DetAugParam::max_random_contrast).Default(0.f)
      .Describe("Augmentation Param: maximum change of contrast (pixels scaled by 1 + c).");
  s.Field("random_contrast_prob", &DetAugParam::random_contrast_prob).Default(0.f)
      .Describe("Augmentation Param: probability of a contrast change.");
  s.Field("rand_mirror_prob", &DetAugParam::rand_mirror_prob).Default(0.f)
      .Describe("Augmentation Param: probability of a left-right flip.");
  s.Field("fill_value", &DetAugParam::fill_value).Default(127).Describe("Augmentation Param: colour value of padding.");
  s.Field("inter_method", &DetAugParam::inter_method).Default(1)
      .Describe("Augmentation Param: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto "
                "(bicubic to enlarge, area to shrink, else bilinear), 10 random.");
  s.Field("resize_mode", &DetAugParam::resize_mode).Default("force").Choices({"force", "shrink", "fit"})
      .Describe("Augmentation Param: how the image fits data_shape. force: resized to it; shrink: shrunk to fit "
                "inside it, keeping the aspect ratio; fit: scaled to fit inside it, keeping the aspect ratio.");
  s.Field("mean_img", &DetAugParam::mean_img).Default("")
      .Describe("Normalize Param: a mean image file (not supported; use mean_r/g/b/a).");
  s.Field("mean_r", &DetAugParam::mean_r).Default(0.f).Describe("Normalize Param: mean of the R channel.");
  s.Field("mean_g", &DetAugParam::mean_g).Default(0.f).Describe("Normalize Param: mean of the G channel.");
  s.Field("mean_b", &DetAugParam::mean_b).Default(0.f).Describe("Normalize Param: mean of the B channel.");
  s.Field("mean_a", &DetAugParam::mean_a).Default(0.f).Describe("Normalize Param: mean of the alpha channel.");
  s.Field("std_r", &DetAugParam::std_r).Default(0.f).Describe("Normalize Param: std of the R channel (used when > 0).");
  s.Field("std_g", &DetAugParam::std_g).Default(0.f).Describe("Normalize Param: std of the G channel (used when > 0).");
  s.Field("std_b", &DetAugParam::std_b).Default(0.f).Describe("Normalize Param: std of the B channel (used when > 0).");
  s.Field("std_a", &DetAugParam::std_a).Default(0.f).Describe("Normalize Param: std of the alpha channel (used when > 0).");
  s.Field("scale", &DetAugParam::scale).Default(1.f).Describe("Normalize Param: multiplier after normalisation.");
}

namespace {

constexpr const char* kIter = "ImageDetRecordIter";

uint64_t Mix64(uint64_t x) {
  // splitmix64's finaliser: neighbouring inputs give unrelated seeds.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A box in coordinates relative to the image: x, y of the top left, width, height.
struct Box {
  float x = 0, y = 0, w = 0, h = 0;
  float area() const { return w > 0 && h > 0 ? w * h : 0.f; }
  Box operator&(const Box& o) const {
    float x0 = std::max(x, o.x), y0 = std::max(y, o.y);
    float x1 = std::min(x + w, o.x + o.w), y1 = std::min(y + h, o.y + o.h);
    return x1 > x0 && y1 > y0 ? Box{x0, y0, x1 - x0, y1 - y0} : Box{};
  }
  bool contains(float px, float py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

// The detection label of one sample: its header and its objects.
class DetLabel {
 public:
  struct Object {
    float id, left, top, right, bottom;
    std::vector<float> extra;
    Box box() const { return Box{left, top, right - left, bottom - top}; }
    Object Project(const Box& b) const {
      Object o = *this;
      o.left = std::max(0.f, (left - b.x) / b.w);
      o.top = std::max(0.f, (top - b.y) / b.h);
      o.right = std::min(1.f, (right - b.x) / b.w);
      o.bottom = std::min(1.f, (bottom - b.y) / b.h);
      return o;
    }
  };

  DetLabel(const std::vector<float>& raw, const std::string& what) {
    WEFT_CHECK(raw.size() >= 7, kValue, kIter, ": ", what, ": expected a detection label of at least 7 values "
               "(header_width, object_width, then objects of at least 5), got ", raw.size());
    const int header = static_cast<int>(raw[0]);
    obj_width_ = static_cast<int>(raw[1]);
    WEFT_CHECK(header >= 2 && static_cast<size_t>(header) <= raw.size(), kValue, kIter, ": ", what,
               ": expected a header width of at least 2 within the label, got ", raw[0]);
    WEFT_CHECK(obj_width_ >= 5, kValue, kIter, ": ", what, ": expected an object width of at least 5, got ", raw[1]);
    WEFT_CHECK((raw.size() - header) % obj_width_ == 0, kValue, kIter, ": ", what, ": the label holds ",
               raw.size() - header, " object values, not a multiple of the object width ", obj_width_);
    header_.assign(raw.begin(), raw.begin() + header);
    for (size_t i = header; i < raw.size(); i += obj_width_) {
      Object o{raw[i], raw[i + 1], raw[i + 2], raw[i + 3], raw[i + 4],
               std::vector<float>(raw.begin() + i + 5, raw.begin() + i + obj_width_)};
      // As MXNet: an empty box is not an object.
      if (o.right > o.left && o.bottom > o.top) objects_.push_back(std::move(o));
    }
  }

  std::vector<float> ToArray() const {
    std::vector<float> out(header_);
    for (const auto& o : objects_) {
      out.insert(out.end(), {o.id, o.left, o.top, o.right, o.bottom});
      out.insert(out.end(), o.extra.begin(), o.extra.end());
    }
    return out;
  }

  void Mirror() {
    for (auto& o : objects_) {
      float l = o.left;
      o.left = 1.f - o.right;
      o.right = 1.f - l;
    }
  }

  void Pad(const Box& b) {
    for (auto& o : objects_) o = o.Project(b);
  }

  // Crops to `c` when some ground truth meets the sampler's constraints and some object is
  // kept; false (nothing changed) otherwise.
  bool TryCrop(const Box& c, const DetAugParam& p, int k) {
    if (objects_.empty()) return true;
    const float min_ov = p.min_crop_overlaps[k], max_ov = p.max_crop_overlaps[k];
    const float min_sc = p.min_crop_sample_coverages[k], max_sc = p.max_crop_sample_coverages[k];
    const float min_oc = p.min_crop_object_coverages[k], max_oc = p.max_crop_object_coverages[k];
    bool valid = false;
    for (const auto& o : objects_) {
      Box g = o.box();
      float inter = (c & g).area();
      if (min_ov > 0 || max_ov < 1) {
        float iou = inter <= 0 ? 0.f : inter / (c.area() + g.area() - inter);
        if (iou < min_ov || iou > max_ov) continue;
      }
      if (min_sc > 0 || max_sc < 1) {
        float r = inter / c.area();
        if (r < min_sc || r > max_sc) continue;
      }
      if (min_oc > 0 || max_oc < 1) {
        float r = inter / g.area();
        if (r < min_oc || r > max_oc) continue;
      }
      valid = true;
      break;
    }
    if (!valid) return false;
    std::vector<Object> kept;
    for (const auto& o : objects_) {
      bool keep = p.crop_emit_mode == "center"
                      ? c.contains((o.left + o.right) * 0.5f, (o.top + o.bottom) * 0.5f)
                      : (c & o.box()).area() / o.box().area() > p.emit_overlap_thresh;
      if (keep) kept.push_back(o.Project(c));
    }
    if (kept.empty()) return false;
    objects_ = std::move(kept);
    return true;
  }

 private:
  int obj_width_ = 5;
  std::vector<float> header_;
  std::vector<Object> objects_;
};

// One value per sampler: a single value serves them all.
void ExpandPerSampler(std::vector<double>* v, int n, const char* name) {
  if (n <= 0) return;
  if (v->size() == 1) {
    v->assign(n, (*v)[0]);
    return;
  }
  WEFT_CHECK(static_cast<int>(v->size()) == n, kValue, kIter, ": ", name, " has ", v->size(),
             " values for num_crop_sampler=", n, " samplers (give one, or one per sampler)");
}

DetAugParam CheckDetAug(DetAugParam p) {
  WEFT_CHECK(ValidInterMethod(p.inter_method), kValue,
             kIter, ": inter_method must be 0..4, 9 or 10, got ", p.inter_method);
  WEFT_CHECK(p.mean_img.empty(), kUnsupported, kIter, ": mean_img is not supported; give mean_r/mean_g/mean_b");
  const int n = p.num_crop_sampler;
  ExpandPerSampler(&p.min_crop_scales, n, "min_crop_scales");
  ExpandPerSampler(&p.max_crop_scales, n, "max_crop_scales");
  ExpandPerSampler(&p.min_crop_aspect_ratios, n, "min_crop_aspect_ratios");
  ExpandPerSampler(&p.max_crop_aspect_ratios, n, "max_crop_aspect_ratios");
  ExpandPerSampler(&p.min_crop_overlaps, n, "min_crop_overlaps");
  ExpandPerSampler(&p.max_crop_overlaps, n, "max_crop_overlaps");
  ExpandPerSampler(&p.min_crop_sample_coverages, n, "min_crop_sample_coverages");
  ExpandPerSampler(&p.max_crop_sample_coverages, n, "max_crop_sample_coverages");
  ExpandPerSampler(&p.min_crop_object_coverages, n, "min_crop_object_coverages");
  ExpandPerSampler(&p.max_crop_object_coverages, n, "max_crop_object_coverages");
  ExpandPerSampler(&p.max_crop_trials, n, "max_crop_trials");
  for (int i = 0; i < n; ++i) {
    WEFT_CHECK(p.min_crop_scales[i] >= 0 && p.max_crop_scales[i] <= 1 && p.max_crop_scales[i] > p.min_crop_scales[i],
               kValue, kIter, ": sampler ", i, ": expected 0 <= min_crop_scales < max_crop_scales <= 1, got ",
               p.min_crop_scales[i], " and ", p.max_crop_scales[i]);
    WEFT_CHECK(p.min_crop_aspect_ratios[i] >= 0 && p.max_crop_aspect_ratios[i] >= p.min_crop_aspect_ratios[i], kValue,
               kIter, ": sampler ", i, ": expected 0 <= min_crop_aspect_ratios <= max_crop_aspect_ratios");
    WEFT_CHECK(p.max_crop_overlaps[i] >= p.min_crop_overlaps[i] &&
                   p.max_crop_sample_coverages[i] >= p.min_crop_sample_coverages[i] &&
                   p.max_crop_object_coverages[i] >= p.min_crop_object_coverages[i],
               kValue, kIter, ": sampler ", i, ": a max_crop_* below its min_crop_*");
  }
  return p;
}

Image Resized(const Image& im, int w, int h, int method, std::mt19937* rng) {
  w = std::max(w, 1);
  h = std::max(h, 1);
  if (w == im.width && h == im.height) return im;
  return ResizeImage(ImageView::Of(im), w, h, ChooseInterMethod(method, im.width, im.height, w, h, rng));
}

// MXNet's default detection augmenter on one decoded image; updates `label`.
Image Augment(Image res, std::vector<float>* label, const DetAugParam& p, int out_h, int out_w, std::mt19937* rng,
              const std::string& what) {
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  if (p.resize != -1) {
    int h, w;
    if (res.height > res.width) {
      h = p.resize * res.height / res.width;
      w = p.resize;
    } else {
      h = p.resize;
      w = p.resize * res.width / res.height;
    }
    res = Resized(res, w, h, p.inter_method, rng);
  }
  DetLabel det(*label, what);
  if (p.random_hue_prob > 0 || p.random_saturation_prob > 0 || p.random_illumination_prob > 0 ||
      p.random_contrast_prob > 0) {
    std::uniform_real_distribution<float> sym(-1.f, 1.f);
    int dh = static_cast<int>(sym(*rng) * p.max_random_hue);
    int ds = static_cast<int>(sym(*rng) * p.max_random_saturation);
    int dl = static_cast<int>(sym(*rng) * p.max_random_illumination);
    float dc = sym(*rng) * p.max_random_contrast;
    dh = unit(*rng) < p.random_hue_prob ? dh : 0;
    ds = unit(*rng) < p.random_saturation_prob ? ds : 0;
    dl = unit(*rng) < p.random_illumination_prob ? dl : 0;
    dc = unit(*rng) < p.random_contrast_prob ? dc : 0;
    if ((dh != 0 || ds != 0 || dl != 0) && res.channels >= 3) {
      const int delta[3] = {dh, dl, ds}, limit[3] = {180, 255, 255};
      for (int y = 0; y < res.height; ++y) {
        uint8_t* row = res.row(y);
        for (int x = 0; x < res.width; ++x) {
          uint8_t* px = row + static_cast<size_t>(x) * res.channels;
          int hls[3];
          RgbToHls(px, hls);
          for (int k = 0; k < 3; ++k) hls[k] = std::clamp(hls[k] + delta[k], 0, limit[k]);
          hls[0] %= 180;
          HlsToRgb(hls, px);
        }
      }
    }
    if (std::fabs(dc) > 1e-3f)
      for (auto& v : res.data) v = static_cast<uint8_t>(std::clamp<long>(std::lround(v * (dc + 1.f)), 0, 255));
  }
  if (p.rand_mirror_prob > 0 && unit(*rng) < p.rand_mirror_prob) {
    det.Mirror();
    for (int y = 0; y < res.height; ++y) {
      uint8_t* row = res.row(y);
      for (int x = 0; x < res.width / 2; ++x)
        std::swap_ranges(row + static_cast<size_t>(x) * res.channels, row + static_cast<size_t>(x + 1) * res.channels,
                         row + static_cast<size_t>(res.width - 1 - x) * res.channels);
    }
  }
  if (p.rand_pad_prob > 0 && p.max_pad_scale > 1.f && unit(*rng) < p.rand_pad_prob) {
    float s = std::uniform_real_distribution<float>(1.f, p.max_pad_scale)(*rng);
    if (s >= 1.05f) {  // MXNet skips paddings too small to matter
      std::uniform_real_distribution<float> off(0.f, s - 1);
      Box pad{-off(*rng), -off(*rng), s, s};
      det.Pad(pad);
      const int left = static_cast<int>(-pad.x * res.width), top = static_cast<int>(-pad.y * res.height);
      const int right = static_cast<int>((pad.w + pad.x - 1) * res.width);
      const int bottom = static_cast<int>((pad.h + pad.y - 1) * res.height);
      res = PadImage(ImageView::Of(res), top, bottom, left, right,
                     static_cast<uint8_t>(std::clamp(p.fill_value, 0, 255)));
    }
  }
  if (p.rand_crop_prob > 0 && p.num_crop_sampler > 0 && unit(*rng) < p.rand_crop_prob) {
    std::vector<int> order(p.num_crop_sampler);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), *rng);
    const float img_ratio = static_cast<float>(res.width) / res.height;
    bool done = false;
    for (int k : order) {
      for (int t = 0; t < static_cast<int>(p.max_crop_trials[k]) && !done; ++t) {
        float scale = std::uniform_real_distribution<float>(p.min_crop_scales[k], p.max_crop_scales[k])(*rng) + 1e-12f;
        float lo = std::max<float>(p.min_crop_aspect_ratios[k] / img_ratio, scale * scale);
        float hi = std::min<float>(p.max_crop_aspect_ratios[k] / img_ratio, 1.f / (scale * scale));
        float ratio = std::sqrt(lo < hi ? std::uniform_real_distribution<float>(lo, hi)(*rng) : lo);
        float w = std::min(1.f, scale * ratio), h = std::min(1.f, scale / ratio);
        Box c{std::uniform_real_distribution<float>(0.f, 1.f - w)(*rng),
              std::uniform_real_distribution<float>(0.f, 1.f - h)(*rng), w, h};
        const int x0 = static_cast<int>(c.x * res.width), y0 = static_cast<int>(c.y * res.height);
        const int cw = static_cast<int>(c.w * res.width), ch = static_cast<int>(c.h * res.height);
        if (cw < 1 || ch < 1) continue;  // a box under a pixel cannot be cut out
        if (!det.TryCrop(c, p, k)) continue;
        res = CopyImage(ImageView::Of(res).Crop(x0, y0, cw, ch));
        done = true;
      }
      if (done) break;
    }
  }
  if (p.resize_mode == "force") {
    res = Resized(res, out_w, out_h, p.inter_method, rng);
  } else if (p.resize_mode == "fit" || res.height > out_h || res.width > out_w) {
    float ratio = std::min(static_cast<float>(out_h) / res.height, static_cast<float>(out_w) / res.width);
    res = Resized(res, static_cast<int>(ratio * res.width), static_cast<int>(ratio * res.height), p.inter_method, rng);
  }
  *label = det.ToArray();
  return res;
}

class ImageDetRecordIter : public DataIter {
 public:
  ImageDetRecordIter(const ImageDetRecParam& p, const DetAugParam& aug)
      : p_(p), aug_(CheckDetAug(aug)), reader_(p.path_imgrec) {
    if (!p.path_imglist.empty()) LoadImageList();
    WEFT_CHECK(p.aug_seq == "det_aug_default", kValue, kIter, ": unknown augmenter in aug_seq '", p.aug_seq,
               "' (det_aug_default is the one there is)");
    WEFT_CHECK(p.data_shape.ndim() == 3, kValue, kIter, ": data_shape must be (channels, height, width), got ",
               p.data_shape.ndim(), " dims");
    c_ = static_cast<int>(p.data_shape[0]);
    h_ = static_cast<int>(p.data_shape[1]);
    w_ = static_cast<int>(p.data_shape[2]);
    WEFT_CHECK(c_ == 1 || c_ == 3 || c_ == 4, kValue, kIter, ": data_shape must have 1, 3 or 4 channels, got ", c_);
    WEFT_CHECK(h_ > 0 && w_ > 0, kValue, kIter, ": data_shape height and width must be positive");
    WEFT_CHECK(p.part_index < p.num_parts, kValue, kIter, ": part_index (", p.part_index,
               ") must be below num_parts (", p.num_parts, ")");
    reader_.SetPart(p.part_index, p.num_parts);
    // One pass finds the records and the longest label (MXNet's estimate of the padding).
    int longest = 0;
    std::string rec;
    for (;;) {
      uint64_t off = reader_.Tell();
      if (!reader_.Next(&rec)) break;
      offsets_.push_back(off);
      ImageRecordView v = UnpackImageRecord(rec.data(), rec.size(), Where(off));
      const int n = list_labels_.empty() ? (v.header.flag == 0 ? 1 : static_cast<int>(v.labels.size()))
                                         : static_cast<int>(ListLabels(v.header.id, off).size());
      WEFT_CHECK(p.label_width <= 0 || n == p.label_width, kValue, kIter, ": ", Where(off), " holds ", n,
                 " labels but label_width is ", p.label_width);
      longest = std::max(longest, n);
    }
    WEFT_CHECK(!offsets_.empty(), kValue, kIter, ": part ", p.part_index, " of ", p.num_parts, " of '", p.path_imgrec,
               "' holds no records");
    pad_width_ = p.label_pad_width;
    if (longest > pad_width_) {
      WEFT_CHECK(p.label_pad_width <= 0, kValue, kIter, ": label_pad_width (", p.label_pad_width,
                 ") is smaller than the longest label in the file (", longest, ")");
      pad_width_ = longest;
    }
    data_shape_ = Shape{p.batch_size, c_, h_, w_};
    label_shape_ = Shape{p.batch_size, pad_width_ + 4};
    order_.resize(offsets_.size());
    epoch_ = -1;
    Reset();
  }

  void Reset() override {
    ++epoch_;
    std::iota(order_.begin(), order_.end(), size_t{0});
    if (p_.shuffle) {
      std::mt19937 rng(static_cast<uint32_t>(Mix64(static_cast<uint64_t>(p_.seed) * 1000003ull + epoch_)));
      std::shuffle(order_.begin(), order_.end(), rng);
    }
    cursor_ = 0;
  }

  bool Next() override {
    const size_t n = order_.size();
    if (cursor_ >= n) return false;
    const int batch = p_.batch_size;
    const size_t take = std::min<size_t>(batch, n - cursor_);
    const size_t filled = p_.round_batch ? static_cast<size_t>(batch) : take;
    records_.resize(filled);
    positions_.resize(filled);
    for (size_t i = 0; i < filled; ++i) {
      const size_t pos = (cursor_ + i) % n;  // past the end, round_batch reuses the epoch's start
      positions_[i] = pos;
      reader_.Seek(offsets_[order_[pos]]);
      WEFT_CHECK(reader_.Next(&records_[i]), kIO, kIter, ": no record at ", Where(offsets_[order_[pos]]));
    }
    NDArray data(data_shape_, Context::CPU(), DType::kFloat32);
    NDArray label(label_shape_, Context::CPU(), DType::kFloat32);
    float* dptr = data.data().ptr<float>();
    float* lptr = label.data().ptr<float>();
    const size_t sample = static_cast<size_t>(c_) * h_ * w_, lwidth = static_cast<size_t>(pad_width_) + 4;
    std::fill(dptr + filled * sample, dptr + batch * sample, 0.f);
    std::fill(lptr, lptr + batch * lwidth, p_.label_pad_value);
    std::vector<uint64_t> index(batch, 0);
    std::exception_ptr error;
    std::atomic<bool> failed{false};
    const uint64_t epoch_seed = Mix64(static_cast<uint64_t>(p_.seed) ^ (static_cast<uint64_t>(epoch_) << 32));
#pragma omp parallel for num_threads(p_.preprocess_threads) schedule(dynamic, 1)
    for (long i = 0; i < static_cast<long>(filled); ++i) {
      if (failed.load(std::memory_order_relaxed)) continue;
      try {
        const uint64_t off = offsets_[order_[positions_[i]]];
        index[i] = Sample(records_[i], off, Mix64(epoch_seed + positions_[i]), dptr + i * sample, lptr + i * lwidth);
      } catch (...) {
#pragma omp critical(weft_image_det_record_error)
        {
          if (!error) error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
    if (error) std::rethrow_exception(error);
    cursor_ += take;
    out_.data = {data};
    out_.label = {label};
    out_.pad = batch - static_cast<int>(take);
    out_.index = std::move(index);
    return true;
  }

  const DataBatch& Value() const override { return out_; }
  std::vector<DataDesc> ProvideData() const override { return {DataDesc{p_.data_name, data_shape_, DType::kFloat32}}; }
  std::vector<DataDesc> ProvideLabel() const override {
    return {DataDesc{p_.label_name, label_shape_, DType::kFloat32}};
  }

 private:
  // path_imglist: "index label... path" per line (blank lines skipped); label_width > 0
  // labels each, or with -1 every value between the index and the last field.
  void LoadImageList() {
    std::ifstream in(p_.path_imglist);
    WEFT_CHECK(in.good(), kIO, kIter, ": cannot open path_imglist '", p_.path_imglist, "'");
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      std::istringstream is(line);
      std::vector<std::string> fields;
      for (std::string f; is >> f;) fields.push_back(f);
      if (fields.empty()) continue;
      const size_t want = p_.label_width > 0 ? static_cast<size_t>(p_.label_width) + 1 : 2;
      WEFT_CHECK(fields.size() >= want, kValue, kIter, ": line ", lineno, " of path_imglist '", p_.path_imglist,
                 "' holds ", fields.size(), " fields; expected the index, ",
                 p_.label_width > 0 ? std::to_string(p_.label_width) + " labels" : std::string("labels"),
                 " and the path");
      const size_t nlab = p_.label_width > 0 ? static_cast<size_t>(p_.label_width) : fields.size() - 2;
      std::vector<float> labels(nlab);
      char* end = nullptr;
      const double index = std::strtod(fields[0].c_str(), &end);
      WEFT_CHECK(*end == '\0' && index >= 0 && index == std::floor(index), kValue, kIter, ": line ", lineno,
                 " of path_imglist '", p_.path_imglist, "' starts with '", fields[0], "', not an image index");
      for (size_t k = 0; k < nlab; ++k) {
        labels[k] = std::strtof(fields[k + 1].c_str(), &end);
        WEFT_CHECK(*end == '\0', kValue, kIter, ": line ", lineno, " of path_imglist '", p_.path_imglist, "': '",
                   fields[k + 1], "' is not a number");
      }
      list_labels_[static_cast<uint64_t>(index)] = std::move(labels);
    }
    WEFT_CHECK(!list_labels_.empty(), kValue, kIter, ": path_imglist '", p_.path_imglist, "' lists no image");
  }

  const std::vector<float>& ListLabels(uint64_t id, uint64_t off) const {
    auto found = list_labels_.find(id);
    WEFT_CHECK(found != list_labels_.end(), kValue, kIter, ": ", Where(off), " is image ", id, ", which path_imglist '",
               p_.path_imglist, "' does not list");
    return found->second;
  }

  std::string Where(uint64_t off) const {
    return "the record at offset " + std::to_string(off) + " of '" + p_.path_imgrec + "'";
  }

  // Decodes, augments and normalises one record into dst (c, h, w) and its label row;
  // returns the record's id.
  uint64_t Sample(const std::string& rec, uint64_t off, uint64_t seed, float* dst, float* lab) const {
    const std::string what = Where(off);
    ImageRecordView v = UnpackImageRecord(rec.data(), rec.size(), what);
    std::vector<float> raw = !list_labels_.empty() ? ListLabels(v.header.id, off)
                             : v.header.flag == 0  ? std::vector<float>{v.header.label}
                                                   : v.labels;
    Image im;
    try {
      im = DecodeImage(v.data, v.size, c_ == 1 ? 0 : c_ == 3 ? 1 : -1, true);
    } catch (const Error& e) {
      Throw(e.kind(), kIter, ": ", what, ": ", e.what());
    }
    WEFT_CHECK(im.channels == c_, kValue, kIter, ": ", what, " holds an image of ", im.channels,
               " channels, but data_shape asks for ", c_);
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    std::mt19937 rng(seq);
    im = Augment(std::move(im), &raw, aug_, h_, w_, &rng, what);
    const float mean[4] = {aug_.mean_r, aug_.mean_g, aug_.mean_b, aug_.mean_a};
    const float stdv[4] = {aug_.std_r, aug_.std_g, aug_.std_b, aug_.std_a};
    const size_t plane = static_cast<size_t>(h_) * w_;
    for (int c = 0; c < c_; ++c) {
      const float mul = (stdv[c] > 0 ? 1.f / stdv[c] : 1.f) * aug_.scale;
      float* out = dst + c * plane;
      std::fill(out, out + plane, (0.f - mean[c]) * mul);
      for (int y = 0; y < std::min(im.height, h_); ++y) {
        const uint8_t* row = im.row(y);
        for (int x = 0; x < std::min(im.width, w_); ++x)
          out[static_cast<size_t>(y) * w_ + x] = (row[static_cast<size_t>(x) * c_ + c] - mean[c]) * mul;
      }
    }
    lab[0] = static_cast<float>(im.channels);
    lab[1] = static_cast<float>(im.height);
    lab[2] = static_cast<float>(im.width);
    lab[3] = static_cast<float>(raw.size());
    std::copy(raw.begin(), raw.end(), lab + 4);
    return v.header.id;
  }

  ImageDetRecParam p_;
  DetAugParam aug_;
  RecordIOReader reader_;
  int c_ = 3, h_ = 0, w_ = 0, pad_width_ = 0;
  Shape data_shape_, label_shape_;
  std::vector<uint64_t> offsets_;  // record starts of this part, in file order
  std::unordered_map<uint64_t, std::vector<float>> list_labels_;  // path_imglist's, by image index
  std::vector<size_t> order_;      // this epoch's order of offsets_
  size_t cursor_ = 0;
  int64_t epoch_ = 0;
  std::vector<std::string> records_;
  std::vector<size_t> positions_;
  DataBatch out_;
};

std::unique_ptr<DataIter> MakeImageDetRecordIter(const KwArgs& kwargs) {
  KwArgs rest = kwargs;
  auto p = ParseIterParams<ImageDetRecParam>(kIter, &rest);
  auto aug = ParseIterParams<DetAugParam>(kIter, &rest);
  auto pf = ParseIterParams<PrefetchParam>(kIter, &rest);
  WarnUnknownParams(kIter, rest);
  return MakePrefetcher(std::make_unique<ImageDetRecordIter>(*p, *aug), *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(ImageDetRecordIter)
    .Describe("Iterates on image RecordIO files with detection labels (made by im2rec from a detection list).\n\n"
              "Each record's label is [header_width, object_width, header..., (class, xmin, ymin, xmax, ymax, "
              "extra...) per object] in coordinates relative to the image. Returns data of shape (batch_size,) + "
              "data_shape (RGB, CHW, float32) and labels of shape (batch_size, label_pad_width + 4): per sample "
              "[channels, height, width, label length, the label after augmentation], padded with "
              "label_pad_value. Augments as MXNet's det_aug_default: shorter-edge resize, HLS and contrast "
              "jitter, mirror, padding, constrained random crops (objects follow; those left out are dropped), "
              "then the fit to data_shape (resize_mode), and normalises (x - mean) / std * scale.")
    .AddParams<ImageDetRecParam>()
    .AddParams<DetAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeImageDetRecordIter);

}  // namespace io
}  // namespace weft

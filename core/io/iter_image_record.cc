// ImageRecordIter: batches of decoded, augmented images from a RecordIO file of image
// records (what im2rec writes), as MXNet's ImageRecordIter.
//
// The record offsets of this part of the file are found once (from the .idx when given,
// else by one pass over the records). Each batch reads its records in the loader's thread,
// then decodes and augments them on `preprocess_threads` OpenMP threads straight into the
// batch array; the prefetcher runs all of this ahead of the consumer. Every sample draws
// its random augmentation from a stream seeded by (seed, epoch, position), so a run is
// reproducible whatever the thread count.
//
// mean_img (MXNet's mean image): loaded from its NDArray file, or, when the file does not
// exist, computed once on creation as the mean of every image of this part after
// augmentation and normalisation (the mean_r/g/b, std and scale of the parameters, as MXNet
// computes it), saved there under the key "mean_img", and from then on subtracted from
// each image instead of mean_r/g/b.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <unordered_map>

#include "core/io/data_iter.h"
#include "core/io/image_aug.h"
#include "core/io/recordio.h"
#include "core/base/tblob.h"
#include "core/ndarray/serialize.h"

namespace weft {
namespace io {

struct ImageRecParam {
  std::string path_imglist;
  std::string path_imgrec;
  std::string path_imgidx;
  Shape data_shape;
  int label_width = 1;
  int batch_size = 1;
  bool shuffle = false;
  int seed = 0;
  bool round_batch = true;
  int num_parts = 1;
  int part_index = 0;
  int preprocess_threads = 4;
  bool verbose = true;
  int shuffle_chunk_size = 0;
  int shuffle_chunk_seed = 0;
  std::string data_name = "data";
  std::string label_name = "softmax_label";
  std::string aug_seq = "aug_default";
  std::optional<int> seed_aug;
  std::string dtype = "float32";
};
WEFT_PARAM_SCHEMA(ImageRecParam, s) {
  s.Field("path_imglist", &ImageRecParam::path_imglist).Default("")
      .Describe("Dataset Param: a list file (index, label_width labels and the path per line, as im2rec writes it) "
                "whose labels replace the records' own, matched by the records' image index.");
  s.Field("path_imgrec", &ImageRecParam::path_imgrec).Describe("Dataset Param: path to the image RecordIO (.rec) file.");
  s.Field("path_imgidx", &ImageRecParam::path_imgidx).Default("")
      .Describe("Dataset Param: path to its .idx file (optional; saves a pass over the file).");
  s.Field("data_shape", &ImageRecParam::data_shape).Describe("Dataset Param: shape of one image, (channels, height, width).");
  s.Field("label_width", &ImageRecParam::label_width).Default(1).Min(1)
      .Describe("Dataset Param: number of labels per image.");
  s.Field("batch_size", &ImageRecParam::batch_size).Min(1).Describe("Batch Param: batch size.");
  s.Field("shuffle", &ImageRecParam::shuffle).Default(false)
      .Describe("Augmentation Param: whether to shuffle the samples (again at every reset).");
  s.Field("seed", &ImageRecParam::seed).Default(0).Describe("Augmentation Param: random seed (shuffling and augmentation).");
  s.Field("round_batch", &ImageRecParam::round_batch).Default(true)
      .Describe("Batch Param: fill the last batch with samples from the start of the epoch (pad counts them) "
                "instead of zeros.");
  s.Field("num_parts", &ImageRecParam::num_parts).Default(1).Min(1)
      .Describe("Partition the data into this many parts (distributed training).");
  s.Field("part_index", &ImageRecParam::part_index).Default(0).Min(0).Describe("The part this iterator reads.");
  s.Field("preprocess_threads", &ImageRecParam::preprocess_threads).Default(4).Range(1, 1024)
      .Describe("Backend Param: number of threads decoding and augmenting images.");
  s.Field("verbose", &ImageRecParam::verbose).Default(true).Describe("Auxiliary Param: whether to log (unused).");
  s.Field("shuffle_chunk_size", &ImageRecParam::shuffle_chunk_size).Default(0).Min(0)
      .Describe("The size (MB) of MXNet's shuffle chunks; accepted, Weft shuffles the whole part.");
  s.Field("shuffle_chunk_seed", &ImageRecParam::shuffle_chunk_seed).Default(0)
      .Describe("The seed of MXNet's chunk shuffling; accepted, seed drives Weft's shuffle.");
  s.Field("data_name", &ImageRecParam::data_name).Default("data").Describe("Name of the data array.");
  s.Field("label_name", &ImageRecParam::label_name).Default("softmax_label").Describe("Name of the label array.");
  s.Field("aug_seq", &ImageRecParam::aug_seq).Default("aug_default").Choices({"aug_default"})
      .Describe("Augmentation Param: the augmenter (MXNet's default one, the only one).");
  s.Field("seed_aug", &ImageRecParam::seed_aug).Default(std::nullopt)
      .Describe("Augmentation Param: random seed of the augmentations alone (default: seed).");
  s.Field("dtype", &ImageRecParam::dtype).Default("float32").Choices({"float32", "uint8", "int8"})
      .Describe("Output data type: float32 (normalised), uint8 (the augmented pixels, no normalisation) or int8 "
                "(pixel minus the rounded mean, saturated; no std or scale), as MXNet's.");
}

namespace {

uint64_t Mix64(uint64_t x) {
  // splitmix64's finaliser: neighbouring inputs give unrelated seeds.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class ImageRecordIter : public DataIter {
 public:
  ImageRecordIter(const ImageRecParam& p, const ImageAugParam& aug) : p_(p), aug_(aug), reader_(p.path_imgrec) {
    WEFT_CHECK(p.data_shape.ndim() == 3, kValue, "ImageRecordIter: data_shape must be (channels, height, width), got ",
               p.data_shape.ndim(), " dims");
    c_ = static_cast<int>(p.data_shape[0]);
    h_ = static_cast<int>(p.data_shape[1]);
    w_ = static_cast<int>(p.data_shape[2]);
    WEFT_CHECK(c_ == 1 || c_ == 3, kValue, "ImageRecordIter: data_shape must have 1 or 3 channels, got ", c_);
    WEFT_CHECK(h_ > 0 && w_ > 0, kValue, "ImageRecordIter: data_shape height and width must be positive");
    WEFT_CHECK(p.part_index < p.num_parts, kValue, "ImageRecordIter: part_index (", p.part_index,
               ") must be below num_parts (", p.num_parts, ")");
    CheckImageAugParam(aug);
    out_dtype_ = p.dtype == "uint8" ? DType::kUint8 : p.dtype == "int8" ? DType::kInt8 : DType::kFloat32;
    if (out_dtype_ != DType::kFloat32) {
      // Integer outputs hold pixels: uint8 as they are, int8 less the rounded mean, as MXNet's.
      const bool int8 = out_dtype_ == DType::kInt8;
      aug_.mean_r = int8 ? std::round(aug.mean_r) : 0.f;
      aug_.mean_g = int8 ? std::round(aug.mean_g) : 0.f;
      aug_.mean_b = int8 ? std::round(aug.mean_b) : 0.f;
      aug_.std_r = aug_.std_g = aug_.std_b = aug_.scale = 1.f;
      aug_.max_random_contrast = aug_.max_random_illumination = 0.f;
      if (!int8) aug_.mean_img.clear();
    }
    reader_.SetPart(p.part_index, p.num_parts);
    const uint64_t begin = reader_.Tell(), end = reader_.RangeEnd();
    if (!p.path_imgidx.empty()) {
      for (const auto& e : ReadRecordIndex(p.path_imgidx))
        if (e.second >= begin && e.second < end) offsets_.push_back(e.second);
      std::sort(offsets_.begin(), offsets_.end());
      for (uint64_t off : offsets_)
        WEFT_CHECK(off < reader_.FileSize(), kIO, "ImageRecordIter: index '", p.path_imgidx, "' has offset ", off,
                   " beyond the end of '", p.path_imgrec, "' (", reader_.FileSize(), " bytes)");
    } else {
      std::string rec;
      for (;;) {
        uint64_t off = reader_.Tell();
        if (!reader_.Next(&rec)) break;
        offsets_.push_back(off);
      }
    }
    WEFT_CHECK(!offsets_.empty(), kValue, "ImageRecordIter: part ", p.part_index, " of ", p.num_parts, " of '",
               p.path_imgrec, "' holds no records");
    data_shape_ = Shape{p.batch_size, c_, h_, w_};
    label_shape_ = p.label_width == 1 ? Shape{p.batch_size} : Shape{p.batch_size, p.label_width};
    order_.resize(offsets_.size());
    if (!p.path_imglist.empty()) LoadImageList();
    if (!aug_.mean_img.empty()) PrepareMeanImage();
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
    const int pad = batch - static_cast<int>(take);
    const size_t filled = p_.round_batch ? static_cast<size_t>(batch) : take;
    records_.resize(filled);
    positions_.resize(filled);
    for (size_t i = 0; i < filled; ++i) {
      // Past the end of the epoch, round_batch reuses samples from its start.
      const size_t pos = (cursor_ + i) % n;
      positions_[i] = pos;
      reader_.Seek(offsets_[order_[pos]]);
      WEFT_CHECK(reader_.Next(&records_[i]), kIO, "ImageRecordIter: no record at offset ", offsets_[order_[pos]], " of '",
                 p_.path_imgrec, "'");
    }
    NDArray data(data_shape_, Context::CPU(), out_dtype_);
    NDArray label(label_shape_, Context::CPU(), DType::kFloat32);
    // Integer outputs are computed in float first, then converted.
    if (out_dtype_ != DType::kFloat32) scratch_.resize(static_cast<size_t>(data_shape_.Size()));
    float* dptr = out_dtype_ == DType::kFloat32 ? data.data().ptr<float>() : scratch_.data();
    float* lptr = label.data().ptr<float>();
    const size_t sample = static_cast<size_t>(c_) * h_ * w_;
    std::fill(dptr + filled * sample, dptr + batch * sample, 0.f);
    std::fill(lptr + filled * p_.label_width, lptr + static_cast<size_t>(batch) * p_.label_width, 0.f);
    std::vector<uint64_t> index(batch, 0);
    std::exception_ptr error;
    std::atomic<bool> failed{false};
    const uint64_t aug_seed = static_cast<uint64_t>(p_.seed_aug ? *p_.seed_aug : p_.seed);
    const uint64_t epoch_seed = Mix64(aug_seed ^ (static_cast<uint64_t>(epoch_) << 32));
#pragma omp parallel for num_threads(p_.preprocess_threads) schedule(dynamic, 1)
    for (long i = 0; i < static_cast<long>(filled); ++i) {
      if (failed.load(std::memory_order_relaxed)) continue;
      try {
        const uint64_t off = offsets_[order_[positions_[i]]];
        ImageRecordView v = UnpackImageRecord(records_[i].data(), records_[i].size(),
                                              "'" + p_.path_imgrec + "' at offset " + std::to_string(off));
        float* lab = lptr + static_cast<size_t>(i) * p_.label_width;
        if (!list_labels_.empty()) {
          auto found = list_labels_.find(v.header.id);
          WEFT_CHECK(found != list_labels_.end(), kValue, "ImageRecordIter: the record at offset ", off, " of '",
                     p_.path_imgrec, "' is image ", v.header.id, ", which path_imglist '", p_.path_imglist,
                     "' does not list");
          std::copy(found->second.begin(), found->second.end(), lab);
        } else if (v.header.flag == 0) {
          WEFT_CHECK(p_.label_width == 1, kValue, "ImageRecordIter: the record at offset ", off, " of '", p_.path_imgrec,
                     "' has one label but label_width is ", p_.label_width);
          lab[0] = v.header.label;
        } else {
          WEFT_CHECK(v.labels.size() >= static_cast<size_t>(p_.label_width), kValue, "ImageRecordIter: the record at offset ",
                     off, " of '", p_.path_imgrec, "' has ", v.labels.size(), " labels but label_width is ", p_.label_width);
          std::copy(v.labels.begin(), v.labels.begin() + p_.label_width, lab);
        }
        index[i] = v.header.id;
        try {
          DecodeAugment(aug_, v.data, v.size, c_, h_, w_, Mix64(epoch_seed + positions_[i]), dptr + i * sample,
                        mean_img_.empty() ? nullptr : mean_img_.data());
        } catch (const Error& e) {
          Throw(e.kind(), "ImageRecordIter: record at offset ", off, " of '", p_.path_imgrec, "': ", e.what());
        }
      } catch (...) {
#pragma omp critical(weft_image_record_error)
        {
          if (!error) error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
    if (error) std::rethrow_exception(error);
    if (out_dtype_ == DType::kUint8) {
      uint8_t* q = data.data().ptr<uint8_t>();
      for (size_t k = 0; k < scratch_.size(); ++k) q[k] = static_cast<uint8_t>(std::lrint(std::clamp(scratch_[k], 0.f, 255.f)));
    } else if (out_dtype_ == DType::kInt8) {
      int8_t* q = data.data().ptr<int8_t>();
      for (size_t k = 0; k < scratch_.size(); ++k)
        q[k] = static_cast<int8_t>(std::lrint(std::clamp(scratch_[k], -128.f, 127.f)));
    }
    cursor_ += take;
    out_.data = {data};
    out_.label = {label};
    out_.pad = pad;
    out_.index = std::move(index);
    return true;
  }

  const DataBatch& Value() const override { return out_; }
  std::vector<DataDesc> ProvideData() const override { return {DataDesc{p_.data_name, data_shape_, out_dtype_}}; }
  std::vector<DataDesc> ProvideLabel() const override {
    return {DataDesc{p_.label_name, label_shape_, DType::kFloat32}};
  }

 private:
  // path_imglist: each line "index label... path"; blank lines are skipped.
  void LoadImageList() {
    std::ifstream in(p_.path_imglist);
    WEFT_CHECK(in.good(), kIO, "ImageRecordIter: cannot open path_imglist '", p_.path_imglist, "'");
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      std::istringstream is(line);
      double index = 0;
      if (!(is >> index)) continue;
      std::vector<float> labels(p_.label_width);
      for (float& l : labels)
        WEFT_CHECK(static_cast<bool>(is >> l), kValue, "ImageRecordIter: line ", lineno, " of path_imglist '",
                   p_.path_imglist, "' has fewer than label_width = ", p_.label_width, " labels");
      WEFT_CHECK(index >= 0 && index == std::floor(index), kValue, "ImageRecordIter: line ", lineno,
                 " of path_imglist '", p_.path_imglist, "' starts with ", index, ", not an image index");
      list_labels_[static_cast<uint64_t>(index)] = std::move(labels);
    }
    WEFT_CHECK(!list_labels_.empty(), kValue, "ImageRecordIter: path_imglist '", p_.path_imglist, "' lists no image");
  }

  void PrepareMeanImage() {
    const std::string& path = aug_.mean_img;
    const Shape want{c_, h_, w_};
    if (std::ifstream(path, std::ios::binary).good()) {
      NDArrayFile f = LoadNDArrayListFile(path);
      WEFT_CHECK(f.arrays.size() == 1, kValue, "ImageRecordIter: mean_img '", path,
                 "' must hold one array (the mean image), got ", f.arrays.size());
      const NDArray& m = f.arrays[0];
      WEFT_CHECK(!m.is_none() && !m.is_sparse() && m.dtype() == DType::kFloat32 && m.shape() == want, kValue,
                 "ImageRecordIter: mean_img '", path, "' must hold a dense float32 array of shape data_shape ",
                 want.ToString(), ", got ", m.is_none() ? std::string("an uninitialised array")
                                                        : m.shape().ToString() + " " + DTypeName(m.dtype()));
      mean_img_.resize(static_cast<size_t>(m.Size()));
      m.SyncCopyToCPU(mean_img_.data(), mean_img_.size() * sizeof(float));
      RoundMeanForInt8();
      return;
    }
    // The file does not exist: the mean of every image of this part, in file order.
    const size_t sample = static_cast<size_t>(c_) * h_ * w_;
    const size_t n = offsets_.size();
    std::vector<std::string> records(n);
    for (size_t i = 0; i < n; ++i) {
      reader_.Seek(offsets_[i]);
      WEFT_CHECK(reader_.Next(&records[i]), kIO, "ImageRecordIter: no record at offset ", offsets_[i], " of '",
                 p_.path_imgrec, "'");
    }
    std::vector<double> sum(sample, 0.0);
    std::exception_ptr error;
    const uint64_t seed = Mix64(static_cast<uint64_t>(p_.seed) ^ 0x6d65616e5f696d67ull);  // its own random stream
    // int8 outputs subtract a mean image of the pixels themselves (aug_ holds their rounded mean_r/g/b).
    ImageAugParam mean_aug = aug_;
    if (out_dtype_ == DType::kInt8) mean_aug.mean_r = mean_aug.mean_g = mean_aug.mean_b = 0.f;
#pragma omp parallel num_threads(p_.preprocess_threads)
    {
      std::vector<double> local(sample, 0.0);
      std::vector<float> img(sample);
#pragma omp for schedule(dynamic, 1)
      for (long i = 0; i < static_cast<long>(n); ++i) {
        try {
          ImageRecordView v = UnpackImageRecord(records[i].data(), records[i].size(),
                                                "'" + p_.path_imgrec + "' at offset " + std::to_string(offsets_[i]));
          DecodeAugment(mean_aug, v.data, v.size, c_, h_, w_, Mix64(seed + i), img.data());
          for (size_t k = 0; k < sample; ++k) local[k] += img[k];
        } catch (...) {
#pragma omp critical(weft_image_record_mean_error)
          {
            if (!error) error = std::current_exception();
          }
        }
      }
#pragma omp critical(weft_image_record_mean_sum)
      for (size_t k = 0; k < sample; ++k) sum[k] += local[k];
    }
    if (error) std::rethrow_exception(error);
    mean_img_.resize(sample);
    for (size_t k = 0; k < sample; ++k) mean_img_[k] = static_cast<float>(sum[k] / static_cast<double>(n));
    NDArray m(want, Context::CPU(), DType::kFloat32);
    m.SyncCopyFromCPU(mean_img_.data(), sample * sizeof(float));
    SaveNDArrayListFile(path, {m}, {"mean_img"});
    RoundMeanForInt8();
  }

  // int8 outputs subtract the mean image rounded to whole values, as MXNet's.
  void RoundMeanForInt8() {
    if (out_dtype_ == DType::kInt8)
      for (float& v : mean_img_) v = std::round(v);
  }

  ImageRecParam p_;
  ImageAugParam aug_;
  RecordIOReader reader_;
  int c_ = 3, h_ = 0, w_ = 0;
  Shape data_shape_, label_shape_;
  std::vector<uint64_t> offsets_;  // record starts of this part, in file order
  std::vector<size_t> order_;      // this epoch's order of offsets_
  size_t cursor_ = 0;
  int64_t epoch_ = 0;
  std::vector<std::string> records_;
  std::vector<size_t> positions_;
  std::vector<float> mean_img_;  // c x h x w, empty without mean_img
  std::unordered_map<uint64_t, std::vector<float>> list_labels_;  // path_imglist's, by image index
  DType out_dtype_ = DType::kFloat32;
  std::vector<float> scratch_;  // one batch in float, for the integer outputs
  DataBatch out_;
};

// `name`: the registered name errors and warnings give; `dtype`, when not null, the output
// type the name stands for (MXNet's ImageRecordUInt8Iter and ImageRecordInt8Iter).
std::unique_ptr<DataIter> MakeImageRecordIterAs(const char* name, const char* dtype, const KwArgs& kwargs) {
  KwArgs rest = kwargs;
  if (dtype != nullptr) {
    auto given = std::find_if(rest.begin(), rest.end(), [](const auto& kv) { return kv.first == "dtype"; });
    WEFT_CHECK(given == rest.end() || given->second == dtype, kValue, name, ": gives ", dtype,
               " data; dtype=", given == rest.end() ? "" : given->second, " contradicts it");
    if (given == rest.end()) rest.emplace_back("dtype", dtype);
  }
  auto p = ParseIterParams<ImageRecParam>(name, &rest);
  auto aug = ParseIterParams<ImageAugParam>(name, &rest);
  auto pf = ParseIterParams<PrefetchParam>(name, &rest);
  WarnUnknownParams(name, rest);
  return MakePrefetcher(std::make_unique<ImageRecordIter>(*p, *aug), *pf);
}

std::unique_ptr<DataIter> MakeImageRecordIter(const KwArgs& kwargs) {
  return MakeImageRecordIterAs("ImageRecordIter", nullptr, kwargs);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(ImageRecordIter)
    .Describe("Iterates on image RecordIO files (made by im2rec).\n\n"
              "Reads JPEG/PNG image records, decodes and augments them on preprocess_threads threads and "
              "returns data of shape (batch_size,) + data_shape (RGB, CHW, float32) and labels of shape "
              "(batch_size,) or (batch_size, label_width). Augmentations run in the order of MXNet's default "
              "augmenter: resize of the shorter edge, the affine warp (max_rotate_angle or rotate, "
              "max_shear_ratio, min/max_random_scale, the aspect ratio without random_resized_crop, "
              "min/max_img_size; fill_value outside), pad, crop (random_resized_crop, a square of "
              "min/max_crop_size, or data_shape at a random or the centre place), brightness/contrast/saturation "
              "jitter, random_h/s/l in HSL space, pca_noise, mirror, then (x - mean) / std * scale, where mean "
              "is mean_r/g/b or the mean image "
              "(mean_img, computed over the data set and saved when its file does not exist). num_parts/part_index "
              "read a share of the file.")
    .AddParams<ImageRecParam>()
    .AddParams<ImageAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeImageRecordIter);

// MXNet's names for the integer outputs and for its first implementation, which give the same
// batches as ImageRecordIter with that dtype.
WEFT_REGISTER_DATA_ITER(ImageRecordUInt8Iter)
    .Describe("ImageRecordIter with dtype='uint8': the augmented pixels, not normalised (MXNet's name).")
    .AddParams<ImageRecParam>()
    .AddParams<ImageAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory([](const KwArgs& kw) { return MakeImageRecordIterAs("ImageRecordUInt8Iter", "uint8", kw); });

WEFT_REGISTER_DATA_ITER(ImageRecordInt8Iter)
    .Describe("ImageRecordIter with dtype='int8': pixels less the rounded mean, saturated (MXNet's name).")
    .AddParams<ImageRecParam>()
    .AddParams<ImageAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory([](const KwArgs& kw) { return MakeImageRecordIterAs("ImageRecordInt8Iter", "int8", kw); });

WEFT_REGISTER_DATA_ITER(ImageRecordIter_v1)
    .Describe("ImageRecordIter under the name of MXNet's first implementation.")
    .AddParams<ImageRecParam>()
    .AddParams<ImageAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory([](const KwArgs& kw) { return MakeImageRecordIterAs("ImageRecordIter_v1", nullptr, kw); });

WEFT_REGISTER_DATA_ITER(ImageRecordUInt8Iter_v1)
    .Describe("ImageRecordUInt8Iter under the name of MXNet's first implementation.")
    .AddParams<ImageRecParam>()
    .AddParams<ImageAugParam>()
    .AddParams<PrefetchParam>()
    .SetFactory([](const KwArgs& kw) { return MakeImageRecordIterAs("ImageRecordUInt8Iter_v1", "uint8", kw); });

}  // namespace io
}  // namespace weft

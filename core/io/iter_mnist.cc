// MNISTIter: the IDX image and label files of MNIST (or Fashion-MNIST), plain or gzip, as
// MXNet reads them: pixels scaled by 1/256, one shuffle at load, a trailing partial batch
// dropped, and num_parts/part_index selecting a contiguous share of the samples.
#include <algorithm>
#include <numeric>
#include <random>

#include "core/base/checked_size.h"
#include "core/base/logging.h"
#include "core/io/dense_batch_iter.h"

namespace weft {
namespace io {

struct MNISTParam {
  std::string image, label;
  int batch_size = 128;
  bool shuffle = true;
  bool flat = false;
  int seed = 0;
  bool silent = false;
  int num_parts = 1;
  int part_index = 0;
};
WEFT_PARAM_SCHEMA(MNISTParam, s) {
  s.Field("image", &MNISTParam::image).Default("./train-images-idx3-ubyte")
      .Describe("Dataset Param: MNIST image file (IDX, ubyte, 3 dims; plain or gzip).");
  s.Field("label", &MNISTParam::label).Default("./train-labels-idx1-ubyte")
      .Describe("Dataset Param: MNIST label file (IDX, ubyte, 1 dim; plain or gzip).");
  s.Field("batch_size", &MNISTParam::batch_size).Default(128).Min(1).Describe("Batch Param: Batch Size.");
  s.Field("shuffle", &MNISTParam::shuffle).Default(true)
      .Describe("Augmentation Param: Whether to shuffle data (once, when the files are loaded).");
  s.Field("flat", &MNISTParam::flat).Default(false)
      .Describe("Augmentation Param: Whether to flatten each image to 1D: data (batch, rows*cols) "
                "instead of (batch, 1, rows, cols).");
  s.Field("seed", &MNISTParam::seed).Default(0).Describe("Augmentation Param: Random Seed.");
  s.Field("silent", &MNISTParam::silent).Default(false)
      .Describe("Auxiliary Param: Whether to not log data info (logged at info level).");
  s.Field("num_parts", &MNISTParam::num_parts).Default(1).Min(1).Describe("partition the data into multiple parts");
  s.Field("part_index", &MNISTParam::part_index).Default(0).Min(0).Describe("the index of the part will read");
}

namespace {

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// The dims of an IDX file of unsigned bytes with `ndim` dims, checking the header and that
// the payload holds exactly the samples the header announces.
std::vector<uint32_t> ParseIdxHeader(const std::string& bytes, int ndim, const std::string& path, const char* what) {
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (bytes.size() < header)
    Throw(ErrorKind::kIO, "MNISTIter: ", what, " file '", path, "' is too short for an IDX header: expected ",
          header, " bytes, the file holds ", bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint32_t magic = BigEndian32(p);
  const uint32_t want = 0x00000800u | static_cast<uint32_t>(ndim);
  if (magic != want) {
    char got[11], exp[11];
    std::snprintf(got, sizeof(got), "0x%08X", magic);
    std::snprintf(exp, sizeof(exp), "0x%08X", want);
    Throw(ErrorKind::kIO, "MNISTIter: ", what, " file '", path, "' has IDX magic ", got, ", expected ", exp,
          " (unsigned bytes, ", ndim, " dims)");
  }
  std::vector<uint32_t> dims(ndim);
  int64_t payload = 1;
  for (int i = 0; i < ndim; ++i) {
    dims[i] = BigEndian32(p + 4 + 4 * i);
    payload = CheckedMul(payload, dims[i], std::string("MNISTIter: the header of ") + what + " file '" + path + "'");
  }
  if (bytes.size() - header != static_cast<uint64_t>(payload))
    Throw(ErrorKind::kIO, "MNISTIter: ", what, " file '", path, "' is ",
          bytes.size() - header < static_cast<uint64_t>(payload) ? "truncated" : "longer than its header says",
          ": expected ", payload,
          " bytes of data after the header, the file holds ", bytes.size() - header);
  return dims;
}

std::unique_ptr<DataIter> MakeMNISTIter(const KwArgs& kwargs) {
  KwArgs rest = kwargs;
  auto p = ParseIterParams<MNISTParam>("MNISTIter", &rest);
  auto pf = ParseIterParams<PrefetchParam>("MNISTIter", &rest);
  WarnUnknownParams("MNISTIter", rest);
  WEFT_CHECK(p->part_index < p->num_parts, kValue, "Iterator 'MNISTIter': part_index must be less than num_parts (",
             p->num_parts, "), got ", p->part_index);

  DenseSamples s;
  s.bytes = ReadFileMaybeGzip(p->image, "MNISTIter image file");
  const std::string lab = ReadFileMaybeGzip(p->label, "MNISTIter label file");
  const auto idims = ParseIdxHeader(s.bytes, 3, p->image, "image");
  const auto ldims = ParseIdxHeader(lab, 1, p->label, "label");
  WEFT_CHECK(idims[0] == ldims[0], kValue, "MNISTIter: image file '", p->image, "' holds ", idims[0],
             " images but label file '", p->label, "' holds ", ldims[0], " labels");

  const int64_t count = idims[0], rows = idims[1], cols = idims[2];
  // The share of this part, computed in double as MXNet does so parts agree with it.
  const int64_t start = static_cast<int64_t>(static_cast<double>(count) / p->num_parts * p->part_index);
  const int64_t end = static_cast<int64_t>(static_cast<double>(count) / p->num_parts * (p->part_index + 1));
  const int64_t n = end - start, px = rows * cols;

  // The pixels stay the file's bytes (scaled by 1/256 as batches are made); the shuffle is
  // an order over them.
  s.data_shape = p->flat ? Shape{px} : Shape{1, rows, cols};
  s.label_shape = Shape{1};
  s.bytes_offset = 16 + static_cast<size_t>(start * px);
  s.bytes_scale = 1.0f / 256.0f;
  s.row.resize(static_cast<size_t>(n));
  std::iota(s.row.begin(), s.row.end(), 0u);
  if (p->shuffle) std::shuffle(s.row.begin(), s.row.end(), std::mt19937(p->seed));
  const auto* labels = reinterpret_cast<const unsigned char*>(lab.data()) + 8 + start;
  s.label.assign(labels, labels + n);
  s.index.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s.index[i] = static_cast<uint64_t>(start + s.row[i]);
  if (!p->silent) {
    WEFT_LOG(Info) << "MNISTIter: load " << n << " images, shuffle=" << p->shuffle << ", shape="
                   << (p->flat ? Shape{p->batch_size, px} : Shape{p->batch_size, 1, rows, cols}).ToString();
  }
  return MakePrefetcher(std::make_unique<DenseBatchIter>("MNISTIter", std::move(s), p->batch_size, LastBatch::kDiscard),
                        *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(MNISTIter)
    .Describe("Iterating on the MNIST dataset (or Fashion-MNIST: the same IDX files).\n\n"
              "Data is (batch_size, 1, rows, cols), or (batch_size, rows*cols) with flat=True, pixel values "
              "scaled by 1/256; labels are (batch_size,). A trailing partial batch is dropped.")
    .AddParams<MNISTParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeMNISTIter);

}  // namespace io
}  // namespace weft

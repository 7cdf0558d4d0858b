// Batching over samples held in host memory, shared by the iterators that load a whole
// data set at construction (MNIST, CSV, LibSVM), and the file helpers they read through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/io/data_iter.h"

namespace weft {
namespace io {

// n samples, each of data_shape and label_shape, row after row. The data is float32 rows,
// or unsigned bytes scaled to float32 as batches are made (MNIST keeps its file's pixels:
// a quarter of the memory, and nothing to convert at load time).
struct DenseSamples {
  Shape data_shape;
  Shape label_shape;
  std::vector<float> data;          // float rows; empty when `bytes` holds the data
  std::string bytes;                // unsigned byte rows from bytes_offset on
  size_t bytes_offset = 0;
  float bytes_scale = 1.0f;
  std::vector<float> label;
  // int32/int64 samples (CSVIter's dtype) are held as int64 in these instead of data/label.
  DType dtype = DType::kFloat32;
  std::vector<int64_t> int_data, int_label;
  std::vector<uint64_t> index;      // dataset index of the sample at each position
  std::vector<uint32_t> row;        // the stored row of each position; empty: row i at position i
  size_t Count() const { return index.size(); }
};

// What happens to the samples left over when the set does not divide into batches.
enum class LastBatch {
  kDiscard,  // dropped (MNISTIter)
  kWrap,     // filled from the start of the next epoch, which then starts after them
             // (MXNet's round_batch=1); pad counts the wrapped samples
  kPad,      // filled with zeros (round_batch=0); pad counts the zero rows
};

struct BatchParam {
  int batch_size = 128;
  bool round_batch = true;
};
WEFT_PARAM_SCHEMA(BatchParam, s) {
  s.Field("batch_size", &BatchParam::batch_size).Min(1).Describe("Batch size.");
  s.Field("round_batch", &BatchParam::round_batch)
      .Default(true)
      .Describe("Whether to fill the last batch from the start of the data (the next epoch then starts after "
                "the samples used; pad counts them) instead of with zeros.");
}

// Batches of `data` (named "data") and `label` ("softmax_label"). A per-sample label of
// shape (1,) gives labels of shape (batch,), as MXNet's iterators return them.
class DenseBatchIter : public DataIter {
 public:
  DenseBatchIter(std::string iter_name, DenseSamples samples, int batch_size, LastBatch last);
  void Reset() override;
  void Rewind() override {
    overflow_ = 0;
    Reset();
  }
  bool Next() override;
  const DataBatch& Value() const override { return out_; }
  std::vector<DataDesc> ProvideData() const override;
  std::vector<DataDesc> ProvideLabel() const override;

 private:
  // Writes the sample at position `pos` of the epoch into row `row` of the batch buffers.
  void CopySample(size_t pos, int64_t row, void* data, void* label) const;

  std::string name_;
  DenseSamples s_;
  int batch_size_;
  LastBatch last_;
  Shape batch_data_shape_, batch_label_shape_;
  size_t pos_ = 0;       // next sample of this epoch
  int overflow_ = 0;     // samples the last batch took from the next epoch (kWrap)
  DataBatch out_;
};

// The bytes of a file, decompressed when it is gzip (read through zlib, which passes plain
// files through). `what` says what the file was for ("image file of MNISTIter") in errors.
std::string ReadFileMaybeGzip(const std::string& path, const std::string& what);

// Throws kNotFound naming `what` and the path when the file cannot be opened for reading.
void CheckReadable(const std::string& path, const std::string& what);

}  // namespace io
}  // namespace weft

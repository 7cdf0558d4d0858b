// LibSVMIter: "label index:value index:value ..." lines (0-based feature indices, as MXNet
// reads them), returned as csr batches of (batch, data_shape[0]), as MXNet's: the rows stay
// sparse from the file to the batch, so a data set of a million features costs what its
// stored values do. Labels come from each line's first field (a dense (batch,) array), or
// from a second LibSVM file whose features form csr labels of (batch, label_shape[0]).
// The files are read as the batches are asked for (core/io/line_reader.h), so memory
// follows the batch size and not the file's.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/io/dense_batch_iter.h"
#include "core/io/line_reader.h"
#include "core/ndarray/sparse.h"

namespace weft {
namespace io {

struct LibSVMIterParam {
  std::string data_libsvm;
  Shape data_shape;
  std::string label_libsvm;
  Shape label_shape;
  int num_parts = 1;
  int part_index = 0;
};
WEFT_PARAM_SCHEMA(LibSVMIterParam, s) {
  s.Field("data_libsvm", &LibSVMIterParam::data_libsvm).Describe("The input zero-base indexed LibSVM data file or a directory path.");
  s.Field("data_shape", &LibSVMIterParam::data_shape).Describe("The shape of one example: (number of features,).");
  s.Field("label_libsvm", &LibSVMIterParam::label_libsvm).Default("NULL")
      .Describe("The input LibSVM label file or a directory path. If NULL, the labels are the first field of "
                "each line of data_libsvm.");
  s.Field("label_shape", &LibSVMIterParam::label_shape).Default(Shape{1}).Describe("The shape of one label.");
  s.Field("num_parts", &LibSVMIterParam::num_parts).Default(1).Min(1).Describe("The number of data parts.");
  s.Field("part_index", &LibSVMIterParam::part_index).Default(0).Min(0).Describe("The data part index.");
}

namespace {

// Csr rows: row r holds indices/values [indptr[r], indptr[r + 1]), its column indices
// strictly increasing; `first` holds each line's leading label field.
struct CsrRows {
  std::vector<float> first;
  std::vector<int64_t> indptr{0};
  std::vector<int64_t> indices;
  std::vector<float> values;
  size_t Count() const { return first.size(); }
  void Clear() {
    first.clear();
    indptr.assign(1, 0);
    indices.clear();
    values.clear();
  }
  void Append(const CsrRows& src, size_t r) {
    first.push_back(src.first[r]);
    const int64_t b = src.indptr[r], e = src.indptr[r + 1];
    indices.insert(indices.end(), src.indices.begin() + b, src.indices.begin() + e);
    values.insert(values.end(), src.values.begin() + b, src.values.begin() + e);
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  void AppendEmpty() {
    first.push_back(0.0f);
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
};

bool Blank(const char* line) { return line[std::strspn(line, " \t")] == '\0'; }

// Appends the row of one non-blank line ("label index:value ...") to `out`.
void ParseLine(const char* c, const std::string& what, const LineReader& in, int64_t width,
               std::vector<std::pair<int64_t, float>>* row, CsrRows* out) {
  auto where = [&] { return detail::Concat("LibSVMIter: ", what, " '", in.path(), "' line ", in.line_no()); };
  char* stop = nullptr;
  float label = std::strtof(c, &stop);
  if (stop == c) Throw(ErrorKind::kValue, where(), ": expected a label first, got '", std::string(c).substr(0, 20), "'");
  row->clear();
  c = stop;
  for (;;) {
    while (*c == ' ' || *c == '\t') ++c;
    if (*c == '\0') break;
    char* after = nullptr;
    long long idx = std::strtoll(c, &after, 10);
    if (after == c || *after != ':')
      Throw(ErrorKind::kValue, where(), ": expected 'index:value', got '", std::string(c).substr(0, 20), "'");
    const char* v = after + 1;
    float value = std::strtof(v, &after);
    if (after == v) Throw(ErrorKind::kValue, where(), ": expected a value after '", idx, ":'");
    if (idx < 0 || idx >= width)
      Throw(ErrorKind::kIndex, where(), ": feature index ", idx, " is outside data_shape: expected 0 <= index < ",
            width);
    row->emplace_back(static_cast<int64_t>(idx), value);
    c = after;
  }
  // csr wants increasing columns; a feature given twice keeps its last value.
  std::stable_sort(row->begin(), row->end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  out->first.push_back(label);
  for (size_t k = 0; k < row->size(); ++k) {
    if (k + 1 < row->size() && (*row)[k + 1].first == (*row)[k].first) continue;
    out->indices.push_back((*row)[k].first);
    out->values.push_back((*row)[k].second);
  }
  out->indptr.push_back(static_cast<int64_t>(out->indices.size()));
}

// The rows (non-blank lines) of a file, counted without parsing them.
size_t CountRows(const std::string& path, const std::string& what) {
  LineReader in(path, "LibSVMIter " + what);
  size_t n = 0;
  while (const char* line = in.Next()) n += Blank(line) ? 0 : 1;
  return n;
}

constexpr size_t kAll = static_cast<size_t>(-1);

// The rows of one file that belong to a part, `count` rows (kAll: to the end) from row
// `start` on, parsed one at a time as they are asked for.
class RowStream {
 public:
  RowStream(const std::string& path, const std::string& what, int64_t width, size_t start, size_t count)
      : in_(path, "LibSVMIter " + what), what_(what), width_(width), start_(start), count_(count) {
    SkipRows(start_);
  }

  // Appends the part's next row to `out`; false at the end of the part.
  bool Next(CsrRows* out) {
    if (count_ != kAll && pos_ >= count_) return false;
    while (const char* line = in_.Next()) {
      if (Blank(line)) continue;
      ParseLine(line, what_, in_, width_, &scratch_, out);
      ++pos_;
      return true;
    }
    return false;
  }

  // Back to row `row` of the part; the rows before it are skipped unparsed.
  void Restart(size_t row) {
    in_.Rewind();
    SkipRows(start_ + row);
    pos_ = row;
  }

  size_t pos() const { return pos_; }  // rows of the part read so far
  const std::string& path() const { return in_.path(); }
  const std::string& what() const { return what_; }

 private:
  void SkipRows(size_t n) {
    while (n > 0) {
      const char* line = in_.Next();
      if (line == nullptr) return;
      n -= Blank(line) ? 0 : 1;
    }
  }

  LineReader in_;
  std::string what_;
  int64_t width_;
  size_t start_, count_;
  size_t pos_ = 0;
  std::vector<std::pair<int64_t, float>> scratch_;
};

NDArray HostArray(const void* src, size_t n, DType dtype) {
  NDArray a(Shape{static_cast<int64_t>(n)}, Context::CPU(), dtype);
  if (n > 0) std::memcpy(a.data().dptr, src, n * DTypeSize(dtype));
  return a;
}

// A csr (rows, width) array of every row of `src`.
NDArray CsrBatch(const CsrRows& src, int64_t width) {
  const Shape shape{static_cast<int64_t>(src.Count()), width};
  if (src.values.empty()) return SparseZeros(StorageType::kCSR, shape, DType::kFloat32, Context::CPU());
  return MakeSparse(StorageType::kCSR, shape, HostArray(src.values.data(), src.values.size(), DType::kFloat32),
                    {HostArray(src.indptr.data(), src.indptr.size(), DType::kInt64),
                     HostArray(src.indices.data(), src.indices.size(), DType::kInt64)});
}

// Batches of the rows of a part of the file, read as they are needed: csr data, and dense
// (batch,) labels from the lines' first fields or csr labels from a label file read in
// step. What is held is the rows of one batch and those of the part's first batch, which
// a wrapped last batch (round_batch) takes again; the last batch is wrapped or padded
// (empty rows, label 0) as DenseBatchIter does.
class LibSVMBatchIter : public DataIter {
 public:
  LibSVMBatchIter(std::unique_ptr<RowStream> data, std::unique_ptr<RowStream> label, int64_t width, int64_t lwidth,
                  size_t start, int batch_size, LastBatch last)
      : data_(std::move(data)), label_(std::move(label)), width_(width), lwidth_(lwidth), start_(start),
        batch_size_(batch_size), last_(last) {
    // Read now: errors in the first rows show at creation, as with a small file before.
    for (int r = 0; r < batch_size_ && ReadRow(&head_, &head_label_); ++r) {
    }
  }

  std::vector<DataDesc> ProvideData() const override {
    return {{"data", Shape{batch_size_, width_}, DType::kFloat32}};
  }
  std::vector<DataDesc> ProvideLabel() const override {
    return {{"softmax_label", label_ ? Shape{batch_size_, lwidth_} : Shape{batch_size_}, DType::kFloat32}};
  }

  void Reset() override {
    // After a wrapped last batch the next epoch has already begun: it goes on from there
    // (within the first batch's rows, which are held).
    pos_ = overflow_ > 0 ? skip_ : 0;
    overflow_ = 0;
    // The files go on from the row after the held ones.
    if (data_->pos() != head_.Count()) {
      data_->Restart(head_.Count());
      if (label_) label_->Restart(head_.Count());
    }
    out_ = DataBatch();
  }
  void Rewind() override {
    overflow_ = 0;
    Reset();
  }

  bool Next() override {
    if (overflow_ > 0) return false;
    batch_.Clear();
    batch_label_.Clear();
    std::vector<uint64_t> index;
    int take = 0;
    for (; take < batch_size_; ++take, ++pos_) {
      if (pos_ < head_.Count()) {
        batch_.Append(head_, pos_);
        if (label_) batch_label_.Append(head_label_, pos_);
      } else if (!ReadRow(&batch_, &batch_label_)) {
        break;
      }
      index.push_back(start_ + pos_);
    }
    if (take == 0) return false;
    const int rest = batch_size_ - take;
    if (rest > 0) {
      const size_t n = pos_;  // the end of the part is reached: its row count
      for (int r = 0; r < rest; ++r) {
        if (last_ == LastBatch::kWrap) {
          // Taken cyclically, so a set smaller than half a batch still fills it.
          const size_t from = static_cast<size_t>(r) % n;
          batch_.Append(head_, from);
          if (label_) batch_label_.Append(head_label_, from);
          index.push_back(start_ + from);
        } else {
          batch_.AppendEmpty();
          if (label_) batch_label_.AppendEmpty();
          index.push_back(0);
        }
      }
      if (last_ == LastBatch::kWrap) {
        overflow_ = rest;
        skip_ = static_cast<size_t>(rest) % n;
      }
    }
    DataBatch b;
    b.data.push_back(CsrBatch(batch_, width_));
    if (label_) {
      b.label.push_back(CsrBatch(batch_label_, lwidth_));
    } else {
      b.label.push_back(HostArray(batch_.first.data(), batch_.first.size(), DType::kFloat32));
    }
    b.index = std::move(index);
    b.pad = rest;
    out_ = std::move(b);
    return true;
  }
  const DataBatch& Value() const override { return out_; }

 private:
  // Appends the next row of the data file (and of the label file) to d (and l); false at
  // the end of the part. The two files must end together.
  bool ReadRow(CsrRows* d, CsrRows* l) {
    const bool got = data_->Next(d);
    if (!label_) return got;
    if (got && !label_->Next(l))
      Throw(ErrorKind::kShape, "LibSVMIter: ", label_->what(), " '", label_->path(), "' has ", label_->pos(),
            " rows, fewer than ", data_->what(), " '", data_->path(), "'");
    if (!got && label_->Next(&spare_))
      Throw(ErrorKind::kShape, "LibSVMIter: ", label_->what(), " '", label_->path(), "' has more rows than the ",
            data_->pos(), " of ", data_->what(), " '", data_->path(), "'");
    return got;
  }

  std::unique_ptr<RowStream> data_, label_;
  int64_t width_, lwidth_;
  size_t start_;  // the file's row number of the part's first row
  int batch_size_;
  LastBatch last_;
  CsrRows head_, head_label_;    // the part's first batch_size rows
  CsrRows batch_, batch_label_;  // the batch being made
  CsrRows spare_;
  size_t pos_ = 0;    // the part's row the next batch starts at
  int overflow_ = 0;  // rows the wrapped last batch took from the next epoch
  size_t skip_ = 0;   // where that epoch then starts
  DataBatch out_;
};

std::unique_ptr<DataIter> MakeLibSVMIter(const KwArgs& kwargs) {
  KwArgs rest = kwargs;
  auto p = ParseIterParams<LibSVMIterParam>("LibSVMIter", &rest);
  auto bp = ParseIterParams<BatchParam>("LibSVMIter", &rest);
  auto pf = ParseIterParams<PrefetchParam>("LibSVMIter", &rest);
  WarnUnknownParams("LibSVMIter", rest);
  WEFT_CHECK(p->data_shape.is_known() && p->data_shape.ndim() == 1 && p->data_shape[0] > 0, kValue,
             "Iterator 'LibSVMIter': data_shape must be (number of features,), got ", p->data_shape.ToString());
  WEFT_CHECK(p->label_shape.is_known() && p->label_shape.ndim() == 1 && p->label_shape[0] > 0, kValue,
             "Iterator 'LibSVMIter': label_shape must be (label width,), got ", p->label_shape.ToString());
  WEFT_CHECK(p->part_index < p->num_parts, kValue, "Iterator 'LibSVMIter': part_index must be less than num_parts (",
             p->num_parts, "), got ", p->part_index);
  WEFT_CHECK(bp->batch_size >= 1, kValue, "Iterator 'LibSVMIter': batch_size must be at least 1, got ", bp->batch_size);
  const int64_t width = p->data_shape[0], lwidth = p->label_shape[0];

  WEFT_CHECK(p->label_libsvm != "NULL" || lwidth == 1, kValue, "LibSVMIter: label_shape ",
             p->label_shape.ToString(), " needs label_libsvm; the labels of data_libsvm are one number per line");
  const std::string what = "data_libsvm", lwhat = "label_libsvm";
  // Parts are contiguous shares of the rows, so their bounds need the row count: one
  // pass over the files that only counts lines. A single part needs none.
  size_t start = 0, count = kAll;
  if (p->num_parts > 1) {
    const size_t total = CountRows(p->data_libsvm, what);
    if (p->label_libsvm != "NULL") {
      const size_t labels = CountRows(p->label_libsvm, lwhat);
      WEFT_CHECK(labels == total, kShape, "LibSVMIter: label_libsvm '", p->label_libsvm, "' has ", labels,
                 " rows, expected ", total, " (the rows of data_libsvm '", p->data_libsvm, "')");
    }
    start = static_cast<size_t>(static_cast<double>(total) / p->num_parts * p->part_index);
    const size_t end = static_cast<size_t>(static_cast<double>(total) / p->num_parts * (p->part_index + 1));
    count = end - start;
  }
  auto data = std::make_unique<RowStream>(p->data_libsvm, what, width, start, count);
  std::unique_ptr<RowStream> label;
  if (p->label_libsvm != "NULL") label = std::make_unique<RowStream>(p->label_libsvm, lwhat, lwidth, start, count);
  return MakePrefetcher(std::make_unique<LibSVMBatchIter>(std::move(data), std::move(label), width, lwidth, start,
                                                          bp->batch_size,
                                                          bp->round_batch ? LastBatch::kWrap : LastBatch::kPad),
                        *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(LibSVMIter)
    .Describe("Returns the LibSVM iterator, with csr data (and csr labels when they come from label_libsvm).\n\n"
              "Each line of data_libsvm is 'label index:value ...' with zero-based feature indices below "
              "data_shape[0]; missing features are not stored. num_parts/part_index read a contiguous share of "
              "the lines. data_libsvm and label_libsvm each take a file, a directory (its non-empty files, in "
              "name order), a regular expression over the file paths of one directory, or several of these "
              "separated by ';' (as MXNet's dmlc InputSplit); the files are read one after another.")
    .AddParams<LibSVMIterParam>()
    .AddParams<BatchParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeLibSVMIter);

}  // namespace io
}  // namespace weft

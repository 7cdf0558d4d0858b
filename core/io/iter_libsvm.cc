// LibSVMIter: "label index:value index:value ..." lines (0-based feature indices, as MXNet
// reads them), returned as csr batches of (batch, data_shape[0]), as MXNet's: the rows stay
// sparse from the file to the batch, so a data set of a million features costs what its
// stored values do. Labels come from each line's first field (a dense (batch,) array), or
// from a second LibSVM file whose features form csr labels of (batch, label_shape[0]).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/io/dense_batch_iter.h"
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

// The lines of a file as csr rows: row r holds indices/values [indptr[r], indptr[r + 1]),
// its column indices strictly increasing.
struct CsrRows {
  std::vector<float> first;  // the leading label field of every line
  std::vector<int64_t> indptr{0};
  std::vector<int64_t> indices;
  std::vector<float> values;
  size_t Count() const { return first.size(); }
};

CsrRows ReadLibSVM(const std::string& path, const char* what, int64_t width) {
  const std::string text = ReadFileMaybeGzip(path, std::string("LibSVMIter ") + what);
  CsrRows r;
  std::vector<std::pair<int64_t, float>> row;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    auto where = [&] { return detail::Concat("LibSVMIter: ", what, " '", path, "' line ", line_no); };
    const char* c = line.c_str();
    char* stop = nullptr;
    float label = std::strtof(c, &stop);
    if (stop == c) Throw(ErrorKind::kValue, where(), ": expected a label first, got '", std::string(c).substr(0, 20), "'");
    r.first.push_back(label);
    row.clear();
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
      row.emplace_back(static_cast<int64_t>(idx), value);
      c = after;
    }
    // csr wants increasing columns; a feature given twice keeps its last value.
    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t k = 0; k < row.size(); ++k) {
      if (k + 1 < row.size() && row[k + 1].first == row[k].first) continue;
      r.indices.push_back(row[k].first);
      r.values.push_back(row[k].second);
    }
    r.indptr.push_back(static_cast<int64_t>(r.indices.size()));
  }
  return r;
}

NDArray HostArray(const void* src, size_t n, DType dtype) {
  NDArray a(Shape{static_cast<int64_t>(n)}, Context::CPU(), dtype);
  if (n > 0) std::memcpy(a.data().dptr, src, n * DTypeSize(dtype));
  return a;
}

// A csr (len(rows), width) array of the given rows of `src`; a row of -1 is empty (padding).
NDArray CsrBatch(const CsrRows& src, const std::vector<int64_t>& rows, int64_t width) {
  std::vector<int64_t> indptr{0}, indices;
  std::vector<float> values;
  for (int64_t r : rows) {
    if (r >= 0) {
      const int64_t b = src.indptr[r], e = src.indptr[r + 1];
      indices.insert(indices.end(), src.indices.begin() + b, src.indices.begin() + e);
      values.insert(values.end(), src.values.begin() + b, src.values.begin() + e);
    }
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  const Shape shape{static_cast<int64_t>(rows.size()), width};
  if (values.empty()) return SparseZeros(StorageType::kCSR, shape, DType::kFloat32, Context::CPU());
  return MakeSparse(StorageType::kCSR, shape, HostArray(values.data(), values.size(), DType::kFloat32),
                    {HostArray(indptr.data(), indptr.size(), DType::kInt64),
                     HostArray(indices.data(), indices.size(), DType::kInt64)});
}

// Batches of samples [start, end) of the file: csr data, and dense (batch,) labels from the
// lines' first fields or csr labels from a label file. The last batch is wrapped or padded
// (empty rows, label 0) as DenseBatchIter does.
class LibSVMBatchIter : public DataIter {
 public:
  LibSVMBatchIter(CsrRows data, std::unique_ptr<CsrRows> label, int64_t width, int64_t lwidth, size_t start,
                  size_t end, int batch_size, LastBatch last)
      : data_(std::move(data)), label_(std::move(label)), width_(width), lwidth_(lwidth), start_(start),
        n_(end - start), batch_size_(batch_size), last_(last) {}

  std::vector<DataDesc> ProvideData() const override {
    return {{"data", Shape{batch_size_, width_}, DType::kFloat32}};
  }
  std::vector<DataDesc> ProvideLabel() const override {
    return {{"softmax_label", label_ ? Shape{batch_size_, lwidth_} : Shape{batch_size_}, DType::kFloat32}};
  }

  void Reset() override {
    // After a wrapped last batch the next epoch has already begun: it goes on from there.
    if (overflow_ > 0) {
      overflow_ = 0;
    } else {
      pos_ = 0;
    }
    out_ = DataBatch();
  }

  bool Next() override {
    if (overflow_ > 0 || pos_ >= n_) return false;
    const size_t take = std::min<size_t>(batch_size_, n_ - pos_);
    std::vector<int64_t> rows;
    for (size_t r = 0; r < take; ++r) rows.push_back(static_cast<int64_t>(start_ + pos_ + r));
    pos_ += take;
    const int rest = batch_size_ - static_cast<int>(take);
    if (rest > 0) {
      if (last_ == LastBatch::kWrap) {
        // Taken cyclically, so a set smaller than half a batch still fills it.
        for (int r = 0; r < rest; ++r) rows.push_back(static_cast<int64_t>(start_ + r % n_));
        overflow_ = rest;
        pos_ = static_cast<size_t>(rest) % n_;
      } else {
        rows.insert(rows.end(), rest, -1);
      }
    }
    DataBatch b;
    b.data.push_back(CsrBatch(data_, rows, width_));
    if (label_) {
      b.label.push_back(CsrBatch(*label_, rows, lwidth_));
    } else {
      NDArray lab(Shape{batch_size_}, Context::CPU(), DType::kFloat32);
      float* l = static_cast<float*>(lab.data().dptr);
      for (int r = 0; r < batch_size_; ++r) l[r] = rows[r] >= 0 ? data_.first[rows[r]] : 0.0f;
      b.label.push_back(lab);
    }
    for (int64_t r : rows) b.index.push_back(r >= 0 ? static_cast<uint64_t>(r) : 0);
    b.pad = rest;
    out_ = std::move(b);
    return true;
  }
  const DataBatch& Value() const override { return out_; }

 private:
  CsrRows data_;
  std::unique_ptr<CsrRows> label_;
  int64_t width_, lwidth_;
  size_t start_, n_;
  int batch_size_;
  LastBatch last_;
  size_t pos_ = 0;
  int overflow_ = 0;
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

  CsrRows data = ReadLibSVM(p->data_libsvm, "data_libsvm", width);
  const size_t total = data.Count();
  std::unique_ptr<CsrRows> label;
  if (p->label_libsvm != "NULL") {
    label = std::make_unique<CsrRows>(ReadLibSVM(p->label_libsvm, "label_libsvm", lwidth));
    WEFT_CHECK(label->Count() == total, kShape, "LibSVMIter: label_libsvm '", p->label_libsvm, "' has ",
               label->Count(), " rows, expected ", total, " (the rows of data_libsvm '", p->data_libsvm, "')");
  } else {
    WEFT_CHECK(lwidth == 1, kValue, "LibSVMIter: label_shape ", p->label_shape.ToString(),
               " needs label_libsvm; the labels of data_libsvm are one number per line");
  }
  const size_t start = static_cast<size_t>(static_cast<double>(total) / p->num_parts * p->part_index);
  const size_t end = static_cast<size_t>(static_cast<double>(total) / p->num_parts * (p->part_index + 1));
  return MakePrefetcher(std::make_unique<LibSVMBatchIter>(std::move(data), std::move(label), width, lwidth, start, end,
                                                          bp->batch_size,
                                                          bp->round_batch ? LastBatch::kWrap : LastBatch::kPad),
                        *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(LibSVMIter)
    .Describe("Returns the LibSVM iterator, with csr data (and csr labels when they come from label_libsvm).\n\n"
              "Each line of data_libsvm is 'label index:value ...' with zero-based feature indices below "
              "data_shape[0]; missing features are not stored. num_parts/part_index read a contiguous share of "
              "the lines.")
    .AddParams<LibSVMIterParam>()
    .AddParams<BatchParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeLibSVMIter);

}  // namespace io
}  // namespace weft

// LibSVMIter: "label index:value index:value ..." lines (0-based feature indices, as MXNet
// reads them), returned as dense rows of data_shape. Labels come from each line's first
// field, or from a second LibSVM file whose features form labels of label_shape.
#include <cstdlib>
#include <cstring>

#include "core/io/dense_batch_iter.h"

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

struct SparseRows {
  std::vector<float> first;  // the leading label field of every line
  std::vector<float> dense;  // the features, densified to `width` per row
};

SparseRows ReadLibSVM(const std::string& path, const char* what, int64_t width) {
  const std::string text = ReadFileMaybeGzip(path, std::string("LibSVMIter ") + what);
  SparseRows r;
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
    const size_t row = r.dense.size();
    r.dense.resize(row + static_cast<size_t>(width), 0.0f);
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
      r.dense[row + static_cast<size_t>(idx)] = value;
      c = after;
    }
  }
  return r;
}

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
  const int64_t width = p->data_shape[0], lwidth = p->label_shape[0];

  SparseRows data = ReadLibSVM(p->data_libsvm, "data_libsvm", width);
  const size_t total = data.first.size();
  std::vector<float> labels;
  if (p->label_libsvm != "NULL") {
    SparseRows lab = ReadLibSVM(p->label_libsvm, "label_libsvm", lwidth);
    WEFT_CHECK(lab.first.size() == total, kShape, "LibSVMIter: label_libsvm '", p->label_libsvm, "' has ",
               lab.first.size(), " rows, expected ", total, " (the rows of data_libsvm '", p->data_libsvm, "')");
    labels = std::move(lab.dense);
  } else {
    WEFT_CHECK(lwidth == 1, kValue, "LibSVMIter: label_shape ", p->label_shape.ToString(),
               " needs label_libsvm; the labels of data_libsvm are one number per line");
    labels = std::move(data.first);
  }

  const size_t start = static_cast<size_t>(static_cast<double>(total) / p->num_parts * p->part_index);
  const size_t end = static_cast<size_t>(static_cast<double>(total) / p->num_parts * (p->part_index + 1));
  DenseSamples s;
  s.data_shape = p->data_shape;
  s.label_shape = p->label_shape;
  s.data.assign(data.dense.begin() + start * width, data.dense.begin() + end * width);
  s.label.assign(labels.begin() + start * lwidth, labels.begin() + end * lwidth);
  for (size_t i = start; i < end; ++i) s.index.push_back(i);
  return MakePrefetcher(std::make_unique<DenseBatchIter>("LibSVMIter", std::move(s), bp->batch_size,
                                                         bp->round_batch ? LastBatch::kWrap : LastBatch::kPad),
                        *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(LibSVMIter)
    .Describe("Returns the LibSVM iterator, with dense output.\n\n"
              "Each line of data_libsvm is 'label index:value ...' with zero-based feature indices below "
              "data_shape[0]; missing features are 0. num_parts/part_index read a contiguous share of the lines.")
    .AddParams<LibSVMIterParam>()
    .AddParams<BatchParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeLibSVMIter);

}  // namespace io
}  // namespace weft

// CSVIter: rows of comma-separated numbers, one sample per line, reshaped to data_shape;
// labels from a second CSV file or zeros. Batching follows MXNet's BatchLoader (round_batch).
#include <cerrno>
#include <cstdlib>
#include <type_traits>

#include "core/io/dense_batch_iter.h"
#include "core/io/line_reader.h"

namespace weft {
namespace io {

struct CSVIterParam {
  std::string data_csv;
  Shape data_shape;
  std::string label_csv;
  Shape label_shape;
  std::string dtype;
};
WEFT_PARAM_SCHEMA(CSVIterParam, s) {
  s.Field("data_csv", &CSVIterParam::data_csv).Describe("Dataset Param: Data csv path.");
  s.Field("data_shape", &CSVIterParam::data_shape).Describe("Dataset Param: Shape of the data.");
  s.Field("label_csv", &CSVIterParam::label_csv).Default("NULL")
      .Describe("Dataset Param: Label csv path. If is NULL, all labels will be returned as 0");
  s.Field("label_shape", &CSVIterParam::label_shape).Default(Shape{1})
      .Describe("Dataset Param: Shape of the label.");
  s.Field("dtype", &CSVIterParam::dtype).Default("float32").Choices({"float32", "int32", "int64"})
      .Describe("Dtype of the data and label batches; int32 and int64 read every entry as an integer, exactly.");
}

namespace {

// Appends the values of every non-blank line of the files `path` names (dmlc's path forms,
// as MXNet's CSVIter takes them: ExpandInputPaths), checking each line holds `width`.
// Returns the number of rows.
template <typename T>
size_t ReadCSV(const std::string& uri, const char* what, const Shape& shape, std::vector<T>* out) {
  LineReader reader(uri, std::string(what) + " of CSVIter");
  const int64_t width = shape.Size();
  size_t rows = 0;
  while (const char* text = reader.Next()) {
    const std::string line(text);
    const size_t line_no = reader.line_no();
    const std::string& path = reader.path();  // the file this line came from
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    int64_t got = 0;
    const char* c = line.c_str();
    for (;;) {
      while (*c == ' ' || *c == '\t') ++c;
      char* stop = nullptr;
      errno = 0;
      T v;
      if constexpr (std::is_same_v<T, float>) v = std::strtof(c, &stop);
      else v = std::strtoll(c, &stop, 10);
      if (!std::is_same_v<T, float> && errno == ERANGE)
        Throw(ErrorKind::kValue, "CSVIter: ", what, " '", path, "' line ", line_no, ": column ", got + 1,
              " is out of the int64 range");
      if (stop == c)
        Throw(ErrorKind::kValue, "CSVIter: ", what, " '", path, "' line ", line_no, ": expected a number in column ",
              got + 1, ", got '", std::string(c, c + std::min<size_t>(std::strlen(c), 20)), "'");
      out->push_back(v);
      ++got;
      c = stop;
      while (*c == ' ' || *c == '\t') ++c;
      if (*c == '\0') break;
      if (*c != ',')
        Throw(ErrorKind::kValue, "CSVIter: ", what, " '", path, "' line ", line_no, ": expected ',' after column ",
              got, ", got '", std::string(1, *c), "'");
      ++c;
    }
    if (got != width)
      Throw(ErrorKind::kShape, "CSVIter: ", what, " '", path, "' line ", line_no, " has ", got,
            " values, expected ", width, " (shape ", shape.ToString(), ")");
    ++rows;
  }
  return rows;
}

std::unique_ptr<DataIter> MakeCSVIter(const KwArgs& kwargs) {
  KwArgs rest = kwargs;
  auto p = ParseIterParams<CSVIterParam>("CSVIter", &rest);
  auto bp = ParseIterParams<BatchParam>("CSVIter", &rest);
  auto pf = ParseIterParams<PrefetchParam>("CSVIter", &rest);
  WarnUnknownParams("CSVIter", rest);
  WEFT_CHECK(p->data_shape.is_known() && p->data_shape.ndim() >= 1 && p->data_shape.Size() > 0, kValue,
             "Iterator 'CSVIter': data_shape must be a non-empty shape, got ", p->data_shape.ToString());
  WEFT_CHECK(p->label_shape.is_known() && p->label_shape.ndim() >= 1 && p->label_shape.Size() > 0, kValue,
             "Iterator 'CSVIter': label_shape must be a non-empty shape, got ", p->label_shape.ToString());

  DenseSamples s;
  s.data_shape = p->data_shape;
  s.label_shape = p->label_shape;
  s.dtype = p->dtype == "float32" ? DType::kFloat32 : (p->dtype == "int32" ? DType::kInt32 : DType::kInt64);
  const bool ints = s.dtype != DType::kFloat32;
  const size_t n = ints ? ReadCSV(p->data_csv, "data_csv", p->data_shape, &s.int_data)
                        : ReadCSV(p->data_csv, "data_csv", p->data_shape, &s.data);
  if (p->label_csv != "NULL") {
    const size_t nl = ints ? ReadCSV(p->label_csv, "label_csv", p->label_shape, &s.int_label)
                           : ReadCSV(p->label_csv, "label_csv", p->label_shape, &s.label);
    WEFT_CHECK(nl == n, kShape, "CSVIter: label_csv '", p->label_csv, "' has ", nl, " rows, expected ", n,
               " (the rows of data_csv '", p->data_csv, "')");
  } else if (ints) {
    s.int_label.assign(n * static_cast<size_t>(p->label_shape.Size()), 0);
  } else {
    s.label.assign(n * static_cast<size_t>(p->label_shape.Size()), 0.0f);
  }
  s.index.resize(n);
  for (size_t i = 0; i < n; ++i) s.index[i] = i;
  return MakePrefetcher(std::make_unique<DenseBatchIter>("CSVIter", std::move(s), bp->batch_size,
                                                         bp->round_batch ? LastBatch::kWrap : LastBatch::kPad),
                        *pf);
}

}  // namespace

WEFT_REGISTER_DATA_ITER(CSVIter)
    .Describe("Returns the CSV file iterator.\n\n"
              "Each non-blank line of data_csv is one sample of data_shape (its values in row-major order); "
              "label_csv, when given, holds one label of label_shape per line. With round_batch=True the last "
              "batch is completed from the start of the data and getpad() says how many samples were reused; "
              "otherwise it is completed with zeros.")
    .AddParams<CSVIterParam>()
    .AddParams<BatchParam>()
    .AddParams<PrefetchParam>()
    .SetFactory(MakeCSVIter);

}  // namespace io
}  // namespace weft

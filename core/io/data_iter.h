// Data iterators: the interface every C++ iterator implements, the registry the C API and
// the front ends enumerate (like operators), and the prefetcher that overlaps loading with
// compute by producing batches on a background thread.
//
// An iterator is created by name from string key/value pairs:
//
//   struct MyParam { std::string path; int batch_size; };
//   WEFT_PARAM_SCHEMA(MyParam, s) { s.Field("path", &MyParam::path).Describe("Input file"); ... }
//
//   WEFT_REGISTER_DATA_ITER(MyIter)
//       .Describe("Reads my format.")
//       .AddParams<MyParam>()
//       .AddParams<PrefetchParam>()
//       .SetFactory([](const KwArgs& kwargs) -> std::unique_ptr<DataIter> {
//         KwArgs rest = kwargs;
//         auto p = ParseIterParams<MyParam>("MyIter", &rest);
//         auto pf = ParseIterParams<PrefetchParam>("MyIter", &rest);
//         WarnUnknownParams("MyIter", rest);
//         return MakePrefetcher(std::make_unique<MyIterImpl>(*p), *pf);
//       });
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/param.h"
#include "core/base/shape.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace io {

// One batch: the data and label arrays (batch size first), how many trailing samples are
// padding (round_batch wrapped around or filler), and the dataset index of every sample.
struct DataBatch {
  std::vector<NDArray> data;
  std::vector<NDArray> label;
  int pad = 0;
  std::vector<uint64_t> index;
};

// One sample before batching, for iterators that build batches from single instances: the
// arrays of the sample (data first, then labels, per the iterator's convention) and its
// dataset index.
struct DataInst {
  uint64_t index = 0;
  std::vector<NDArray> data;
};

// What one array of a batch looks like (name, full batch shape, dtype), as MXNet's DataDesc.
struct DataDesc {
  std::string name;
  Shape shape;
  DType dtype = DType::kFloat32;
};

class DataIter {
 public:
  virtual ~DataIter();
  // Goes back to the start of the data (a new epoch; reshuffles where asked to). After a
  // last batch that wrapped around (round_batch) the new epoch goes on after the samples
  // that batch took from its start, as MXNet's iterators do.
  virtual void Reset() = 0;
  // Reset as it would be had the last batch returned not been taken: since only an epoch's
  // last batch wraps, that is a start from the first sample. A prefetcher calls it when the
  // iterator behind it has made batches its consumer never took, so that a reset in the
  // middle of an epoch gives the consumer the batches it would get without the prefetcher.
  // Iterators whose Reset does not depend on where the epoch stopped keep this default.
  virtual void Rewind() { Reset(); }
  // Moves to the next batch; false at the end of the epoch.
  virtual bool Next() = 0;
  // The current batch, valid after Next() returned true and until the next Next()/Reset().
  // The arrays are fresh for every batch, so a caller may keep them past that point.
  virtual const DataBatch& Value() const = 0;
  // The arrays every batch holds, in order (known from construction, before any Next()).
  virtual std::vector<DataDesc> ProvideData() const = 0;
  virtual std::vector<DataDesc> ProvideLabel() const = 0;
};

// ---------------------------------------------------------------- parameters
// Parses the fields of P out of `kwargs`, erasing the keys it used, so an iterator made of
// several parts (reader, batcher, prefetcher) parses each part's parameters from one list.
// Errors name the iterator and the parameter.
template <typename P>
std::shared_ptr<const P> ParseIterParams(const std::string& iter, KwArgs* kwargs) {
  const ParamSchema<P>& schema = SchemaOf<P>();
  auto obj = std::make_shared<P>();
  std::vector<bool> seen(schema.fields().size(), false);
  for (const auto& f : schema.fields()) f->SetDefault(obj.get());
  KwArgs rest;
  for (const auto& kv : *kwargs) {
    size_t i = 0;
    for (; i < schema.fields().size(); ++i)
      if (schema.fields()[i]->name() == kv.first) break;
    if (i == schema.fields().size()) {
      rest.push_back(kv);
      continue;
    }
    schema.fields()[i]->ParseInto(obj.get(), kv.second, "Iterator '" + iter + "': parameter '" + kv.first + "'");
    seen[i] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (schema.fields()[i]->required() && !seen[i])
      Throw(ErrorKind::kValue, "Iterator '", iter, "': required parameter '", schema.fields()[i]->name(), "' is missing");
  *kwargs = std::move(rest);
  return obj;
}

// Logs a warning for each key no part of the iterator took, with the keys it knows, and
// goes on: MXNet's iterators ignore unknown keys (dmlc's InitAllowUnknown), and scripts
// pass some, such as MNISTIter(data_shape=...).
void WarnUnknownParams(const std::string& iter, const KwArgs& rest);

// The prefetcher's parameters, shared by every iterator that runs behind one.
struct PrefetchParam {
  int prefetch_buffer = 4;
  std::string ctx = "gpu";
};
WEFT_PARAM_SCHEMA(PrefetchParam, s) {
  s.Field("prefetch_buffer", &PrefetchParam::prefetch_buffer)
      .Default(4)
      .Range(0, 1024)
      .Describe("Batches prepared ahead on a background thread (0 loads in the caller's thread)");
  s.Field("ctx", &PrefetchParam::ctx)
      .Default("gpu")
      .Describe("The device the batches are meant for (cpu or gpu, MXNet's hint to its loader); batches are made "
                "in host memory either way");
}

// ---------------------------------------------------------------- prefetcher
// Runs `base` on a background thread that keeps up to `capacity` batches ready. Next()
// takes the oldest ready batch; an exception thrown by the base iterator is re-raised by the
// Next() that would have returned its batch. Reset() discards what was prepared, resets the
// base on the worker and starts the epoch again: the base is reset when the consumer took
// every batch it made, else rewound (DataIter::Rewind), so the batches after a reset never
// depend on how far ahead the worker was. The destructor stops and joins the worker.
class PrefetchIter : public DataIter {
 public:
  PrefetchIter(std::unique_ptr<DataIter> base, int capacity);
  ~PrefetchIter() override;
  void Reset() override;
  void Rewind() override;
  bool Next() override;
  const DataBatch& Value() const override { return current_; }
  std::vector<DataDesc> ProvideData() const override { return data_desc_; }
  std::vector<DataDesc> ProvideLabel() const override { return label_desc_; }

 private:
  void Worker();

  std::unique_ptr<DataIter> base_;
  const size_t capacity_;
  std::vector<DataDesc> data_desc_, label_desc_;
  DataBatch current_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<DataBatch> queue_;
  std::exception_ptr error_;     // raised by the base; handed to the consumer once
  bool epoch_done_ = false;      // the base returned false (or threw) in this epoch
  bool reset_requested_ = false; // the consumer asked for a reset the worker has not done
  bool rewind_requested_ = false; // ... and that reset is a Rewind
  // Batches the base made and the consumer took in this epoch: while the base is ahead, a
  // Reset of the base would depend on how far the worker got, so the base is rewound.
  size_t made_ = 0, taken_ = 0;
  void Request(bool rewind);
  bool stop_ = false;
  std::thread worker_;
};

// Wraps `base` in a PrefetchIter unless prefetch_buffer is 0.
std::unique_ptr<DataIter> MakePrefetcher(std::unique_ptr<DataIter> base, const PrefetchParam& param);

// ---------------------------------------------------------------- registry
using DataIterFactory = std::function<std::unique_ptr<DataIter>(const KwArgs& kwargs)>;

struct DataIterReg {
  std::string name;
  std::string description;
  std::vector<ParamFieldInfo> params;  // in the order they were added
  DataIterFactory factory;

  DataIterReg& Describe(const std::string& doc) { description = doc; return *this; }
  template <typename P>
  DataIterReg& AddParams() {
    for (auto& f : SchemaOf<P>().Info()) params.push_back(std::move(f));
    return *this;
  }
  DataIterReg& SetFactory(DataIterFactory f) { factory = std::move(f); return *this; }
};

class DataIterRegistry {
 public:
  static DataIterRegistry* Get();
  // Registering a name twice is a programming error (kInternal).
  DataIterReg& Register(const std::string& name);
  const DataIterReg* Find(const std::string& name);
  std::vector<std::string> ListNames();  // sorted

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<DataIterReg>> regs_;
};

// Creates the iterator `name` from string parameters; kNotFound for an unknown name (the
// message lists the registered ones), kValue for bad or unknown parameters.
std::unique_ptr<DataIter> CreateDataIter(const std::string& name, const KwArgs& kwargs);

}  // namespace io
}  // namespace weft

#define WEFT_DATA_ITER_CONCAT_(a, b) a##b
#define WEFT_DATA_ITER_CONCAT(a, b) WEFT_DATA_ITER_CONCAT_(a, b)
#define WEFT_REGISTER_DATA_ITER(Name)                                                                 \
  static ::weft::io::DataIterReg& WEFT_DATA_ITER_CONCAT(__weft_data_iter_, WEFT_DATA_ITER_CONCAT(Name, __COUNTER__)) \
      __attribute__((unused)) = ::weft::io::DataIterRegistry::Get()->Register(#Name)

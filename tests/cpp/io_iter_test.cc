// Data iterators: the prefetcher (order, reset, exceptions, bounded look-ahead, shutdown),
// the registry, batching (round_batch wrap and zero pad), and MNIST/CSV/LibSVM with their
// error paths.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/io/data_iter.h"
#include "core/io/dense_batch_iter.h"
#include "core/ndarray/sparse.h"
#include "op_test_util.h"
#include "weft/c_api.h"

using namespace weft;      // NOLINT
using namespace weft::io;  // NOLINT
using weft::test::ExpectError;

namespace {

std::string TempPath(const std::string& name) {
  return "/tmp/weft_io_iter_test_" + std::to_string(getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<float> ToVector(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.Size()));
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

// Batches of one (1,) array holding 0, 1, 2, ...; throws at batch `fail_at` when set, and
// counts how many batches it has produced so tests can see how far ahead a prefetcher runs.
class CountingIter : public DataIter {
 public:
  CountingIter(int n, int fail_at = -1, int delay_ms = 0) : n_(n), fail_at_(fail_at), delay_ms_(delay_ms) {}
  void Reset() override { pos_ = 0; ++resets; }
  bool Next() override {
    if (delay_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    if (pos_ == fail_at_) {
      ++pos_;
      Throw(ErrorKind::kIO, "counting iterator: batch ", fail_at_, " is corrupt");
    }
    if (pos_ >= n_) return false;
    DataBatch b;
    b.data.emplace_back(Shape{1}, Context::CPU());
    b.data[0].data().ptr<float>()[0] = static_cast<float>(pos_);
    b.index = {static_cast<uint64_t>(pos_)};
    out_ = b;
    ++pos_;
    ++produced;
    return true;
  }
  const DataBatch& Value() const override { return out_; }
  std::vector<DataDesc> ProvideData() const override { return {{"data", Shape{1}, DType::kFloat32}}; }
  std::vector<DataDesc> ProvideLabel() const override { return {}; }

  std::atomic<int> produced{0};
  std::atomic<int> resets{0};

 private:
  int n_, fail_at_, delay_ms_;
  int pos_ = 0;
  DataBatch out_;
};

std::vector<int> Drain(DataIter* it) {
  std::vector<int> got;
  while (it->Next()) got.push_back(static_cast<int>(ToVector(it->Value().data[0])[0]));
  return got;
}

std::vector<int> Range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i < b; ++i) v.push_back(i);
  return v;
}

std::string Fixture(const std::string& name) { return std::string(WEFT_COMPAT_DIR) + "/synthetic/" + name; }

}  // namespace

TEST(PrefetchIter, SameBatchesAsBaseAcrossEpochsAndResets) {
  PrefetchIter it(std::make_unique<CountingIter>(7), 3);
  ASSERT_EQ(it.ProvideData().size(), 1u);
  EXPECT_EQ(it.ProvideData()[0].name, "data");
  EXPECT_EQ(Drain(&it), Range(0, 7));
  EXPECT_FALSE(it.Next());  // stays at the end until Reset
  it.Reset();
  EXPECT_EQ(Drain(&it), Range(0, 7));
  // A reset in the middle of an epoch drops what was prefetched and starts over.
  it.Reset();
  ASSERT_TRUE(it.Next());
  ASSERT_TRUE(it.Next());
  EXPECT_EQ(it.Value().index, std::vector<uint64_t>{1});
  it.Reset();
  EXPECT_EQ(Drain(&it), Range(0, 7));
}

TEST(PrefetchIter, ProducerErrorIsRaisedByNextAfterEarlierBatches) {
  PrefetchIter it(std::make_unique<CountingIter>(6, /*fail_at=*/3), 2);
  std::vector<int> got;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(it.Next());
    got.push_back(static_cast<int>(ToVector(it.Value().data[0])[0]));
  }
  EXPECT_EQ(got, Range(0, 3));
  ExpectError([&] { it.Next(); }, ErrorKind::kIO, {"batch 3 is corrupt"});
  EXPECT_FALSE(it.Next());  // raised once; the epoch is over
  it.Reset();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(it.Next());  // fails again at the same batch
  ExpectError([&] { it.Next(); }, ErrorKind::kIO, {"corrupt"});
}

TEST(PrefetchIter, RunsAheadBoundedByTheBuffer) {
  auto base = std::make_unique<CountingIter>(100);
  CountingIter* raw = base.get();
  PrefetchIter it(std::move(base), 4);
  // Without any Next() the worker fills the queue (4) and stops; wait for it.
  for (int i = 0; i < 200 && raw->produced.load() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(raw->produced.load(), 4);
  ASSERT_TRUE(it.Next());
  for (int i = 0; i < 200 && raw->produced.load() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(raw->produced.load(), 5);
}

TEST(PrefetchIter, OverlapsLoadingWithTheConsumer) {
  // 8 batches of 30 ms loading and 30 ms "compute": serial is 480 ms, overlapped ~270 ms.
  PrefetchIter it(std::make_unique<CountingIter>(8, -1, 30), 2);
  auto t0 = std::chrono::steady_clock::now();
  int n = 0;
  while (it.Next()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ++n;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(n, 8);
  EXPECT_LT(ms, 420.0);
}

TEST(PrefetchIter, DestroysCleanlyWhileTheWorkerIsBusyOrBlocked) {
  for (int round = 0; round < 20; ++round) {
    PrefetchIter blocked(std::make_unique<CountingIter>(1000), 1);  // queue full, worker waiting
    PrefetchIter busy(std::make_unique<CountingIter>(1000, -1, 2), 8);
    ASSERT_TRUE(busy.Next());
  }
}

TEST(DataIterRegistry, ListsIteratorsWithDocumentedParameters) {
  auto names = DataIterRegistry::Get()->ListNames();
  for (const char* want : {"CSVIter", "LibSVMIter", "MNISTIter"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  const DataIterReg* reg = DataIterRegistry::Get()->Find("MNISTIter");
  ASSERT_NE(reg, nullptr);
  EXPECT_NE(reg->description.find("MNIST"), std::string::npos);
  std::map<std::string, ParamFieldInfo> params;
  for (const auto& p : reg->params) params[p.name] = p;
  for (const char* want : {"image", "label", "batch_size", "shuffle", "flat", "seed", "silent", "num_parts",
                           "part_index", "prefetch_buffer"})
    EXPECT_EQ(params.count(want), 1u) << want;
  EXPECT_EQ(params["batch_size"].default_value, "128");
  EXPECT_EQ(params["shuffle"].type, "boolean");
  EXPECT_FALSE(params["image"].doc.empty());
  const DataIterReg* csv = DataIterRegistry::Get()->Find("CSVIter");
  ASSERT_NE(csv, nullptr);
  bool data_csv_required = false;
  for (const auto& p : csv->params) if (p.name == "data_csv") data_csv_required = p.required;
  EXPECT_TRUE(data_csv_required);
}

TEST(DataIterRegistry, CreateErrorsNameTheProblem) {
  ExpectError([] { CreateDataIter("NoSuchIter", {}); }, ErrorKind::kNotFound, {"NoSuchIter", "MNISTIter"});
  // An unknown parameter is ignored, as in MXNet (a bad value of a known one is an error).
  EXPECT_NE(CreateDataIter("MNISTIter", {{"image", Fixture("tiny-images-idx3-ubyte")},
                                         {"label", Fixture("tiny-labels-idx1-ubyte")}, {"bogus", "1"}}),
            nullptr);
  ExpectError([] { CreateDataIter("MNISTIter", {{"batch_size", "zero"}}); }, ErrorKind::kValue,
              {"MNISTIter", "batch_size"});
  ExpectError([] { CreateDataIter("CSVIter", {{"data_shape", "(3,)"}, {"batch_size", "2"}}); }, ErrorKind::kValue,
              {"CSVIter", "required parameter 'data_csv'"});
  ExpectError([] { CreateDataIter("MNISTIter", {{"num_parts", "2"}, {"part_index", "2"}}); }, ErrorKind::kValue,
              {"part_index must be less than num_parts"});
}

TEST(DenseBatchIter, RoundBatchWrapsIntoTheNextEpochAsMXNet) {
  DenseSamples s;
  s.data_shape = Shape{2};
  s.label_shape = Shape{1};
  for (int i = 0; i < 10; ++i) {
    s.data.push_back(static_cast<float>(i));
    s.data.push_back(static_cast<float>(100 + i));
    s.label.push_back(static_cast<float>(i));
    s.index.push_back(i);
  }
  DenseBatchIter it("test", s, 4, LastBatch::kWrap);
  EXPECT_EQ(it.ProvideData()[0].shape, (Shape{4, 2}));
  EXPECT_EQ(it.ProvideLabel()[0].shape, (Shape{4}));
  std::vector<std::vector<uint64_t>> idx;
  std::vector<int> pads;
  while (it.Next()) {
    idx.push_back(it.Value().index);
    pads.push_back(it.Value().pad);
  }
  EXPECT_EQ(idx, (std::vector<std::vector<uint64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}}));
  EXPECT_EQ(pads, (std::vector<int>{0, 0, 2}));
  EXPECT_EQ(ToVector(it.Value().data[0]), (std::vector<float>{8, 108, 9, 109, 0, 100, 1, 101}));
  // The next epoch begins after the two samples the last batch borrowed.
  it.Reset();
  idx.clear();
  while (it.Next()) idx.push_back(it.Value().index);
  EXPECT_EQ(idx, (std::vector<std::vector<uint64_t>>{{2, 3, 4, 5}, {6, 7, 8, 9}}));

  DenseBatchIter pad("test", s, 4, LastBatch::kPad);
  int batches = 0;
  while (pad.Next()) ++batches;
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(pad.Value().pad, 2);
  EXPECT_EQ(ToVector(pad.Value().data[0]), (std::vector<float>{8, 108, 9, 109, 0, 0, 0, 0}));
  EXPECT_EQ(ToVector(pad.Value().label[0]), (std::vector<float>{8, 9, 0, 0}));

  DenseBatchIter drop("test", s, 4, LastBatch::kDiscard);
  batches = 0;
  while (drop.Next()) ++batches;
  EXPECT_EQ(batches, 2);
}

// A reset in the middle of an epoch, with round_batch: the batches that follow are those of
// the iterator without a prefetcher, however far the worker had run ahead (before, a worker
// that had made the wrapped last batch made the base go on after its borrowed samples).
TEST(PrefetchIter, ResetMidEpochGivesTheBatchesOfTheUnprefetchedIterator) {
  DenseSamples s;
  s.data_shape = Shape{1};
  s.label_shape = Shape{1};
  for (int i = 0; i < 10; ++i) {
    s.data.push_back(static_cast<float>(i));
    s.label.push_back(static_cast<float>(i));
    s.index.push_back(i);
  }
  // Takes `first` batches, resets, then two whole epochs; the indices of every batch taken.
  auto run = [](DataIter* it, int first, bool let_worker_run) {
    std::vector<std::vector<uint64_t>> got;
    for (int i = 0; i < first && it->Next(); ++i) got.push_back(it->Value().index);
    if (let_worker_run) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    it->Reset();
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (it->Next()) got.push_back(it->Value().index);
      it->Reset();
    }
    return got;
  };
  for (int first = 0; first <= 4; ++first) {
    DenseBatchIter plain("test", s, 4, LastBatch::kWrap);
    const auto want = run(&plain, first, false);
    for (int capacity : {1, 2, 4}) {
      PrefetchIter it(std::make_unique<DenseBatchIter>("test", s, 4, LastBatch::kWrap), capacity);
      EXPECT_EQ(run(&it, first, true), want) << "reset after " << first << " batches, buffer " << capacity;
    }
  }
  // Rewind starts from the first sample even after the wrapped batch was taken.
  PrefetchIter it(std::make_unique<DenseBatchIter>("test", s, 4, LastBatch::kWrap), 2);
  while (it.Next()) {
  }
  it.Rewind();
  ASSERT_TRUE(it.Next());
  EXPECT_EQ(it.Value().index, (std::vector<uint64_t>{0, 1, 2, 3}));
}

// MXNet's iterators ignore keys they do not know (scripts pass MNISTIter a data_shape):
// Weft warns, naming the key and the known ones, and builds the same iterator.
TEST(DataIterRegistry, UnknownParametersAreIgnoredWithAWarning) {
  testing::internal::CaptureStderr();
  auto it = CreateDataIter("MNISTIter", {{"image", Fixture("tiny-images-idx3-ubyte")},
                                         {"label", Fixture("tiny-labels-idx1-ubyte")},
                                         {"batch_size", "5"}, {"shuffle", "0"}, {"silent", "1"},
                                         {"data_shape", "(784,)"}});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Iterator 'MNISTIter': ignoring unknown parameter 'data_shape'"), std::string::npos) << err;
  EXPECT_NE(err.find("batch_size"), std::string::npos) << err;
  EXPECT_EQ(it->ProvideData()[0].shape, (Shape{5, 1, 28, 28}));
  ASSERT_TRUE(it->Next());
  auto label = ToVector(it->Value().label[0]);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(label[r], static_cast<float>(r % 10));
}

TEST(MNISTIter, ReadsTheFixtureAsMXNet) {
  auto it = CreateDataIter("MNISTIter", {{"image", Fixture("tiny-images-idx3-ubyte")},
                                         {"label", Fixture("tiny-labels-idx1-ubyte")},
                                         {"batch_size", "6"}, {"shuffle", "0"}, {"silent", "1"}});
  EXPECT_EQ(it->ProvideData()[0].shape, (Shape{6, 1, 28, 28}));
  EXPECT_EQ(it->ProvideLabel()[0].shape, (Shape{6}));
  int batches = 0;
  while (it->Next()) {
    const DataBatch& b = it->Value();
    auto data = ToVector(b.data[0]);
    auto label = ToVector(b.label[0]);
    for (int r = 0; r < 6; ++r) {
      int i = batches * 6 + r;
      EXPECT_EQ(b.index[r], static_cast<uint64_t>(i));
      EXPECT_EQ(label[r], static_cast<float>(i % 10));
      for (int y = 0; y < 28; y += 9)
        for (int x = 0; x < 28; x += 7)
          ASSERT_EQ(data[r * 784 + y * 28 + x], static_cast<float>((3 * y + 5 * x + 11 * i) % 256) / 256.0f);
    }
    EXPECT_EQ(b.pad, 0);
    ++batches;
  }
  EXPECT_EQ(batches, 3);  // 20 samples: the partial fourth batch is dropped
}

TEST(MNISTIter, ShuffleIsAPermutationAndPartsCoverTheSet) {
  std::multiset<uint64_t> seen;
  for (int part = 0; part < 3; ++part) {
    auto it = CreateDataIter("MNISTIter", {{"image", Fixture("tiny-images-idx3-ubyte")},
                                           {"label", Fixture("tiny-labels-idx1-ubyte")},
                                           {"batch_size", "1"}, {"shuffle", "1"}, {"seed", "3"}, {"flat", "1"},
                                           {"num_parts", "3"}, {"part_index", std::to_string(part)},
                                           {"silent", "1"}});
    EXPECT_EQ(it->ProvideData()[0].shape, (Shape{1, 784}));
    while (it->Next()) {
      uint64_t i = it->Value().index[0];
      seen.insert(i);
      EXPECT_EQ(ToVector(it->Value().label[0])[0], static_cast<float>(i % 10));
      EXPECT_EQ(ToVector(it->Value().data[0])[5], static_cast<float>((5 * 5 + 11 * i) % 256) / 256.0f);
    }
  }
  std::multiset<uint64_t> all;
  for (uint64_t i = 0; i < 20; ++i) all.insert(i);
  EXPECT_EQ(seen, all);
}

TEST(MNISTIter, BadFilesGiveErrorsNamingFileAndExpectation) {
  const std::string img = Fixture("tiny-images-idx3-ubyte"), lab = Fixture("tiny-labels-idx1-ubyte");
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", "/nonexistent/x-idx3-ubyte"}, {"label", lab}}); },
              ErrorKind::kNotFound, {"/nonexistent/x-idx3-ubyte", "image file"});
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", lab}, {"label", lab}}); }, ErrorKind::kIO,
              {lab, "magic 0x00000801", "expected 0x00000803"});
  const std::string cut = TempPath("cut-idx3-ubyte");
  std::string bytes = ReadFile(img);
  WriteFile(cut, bytes.substr(0, bytes.size() - 100));
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", cut}, {"label", lab}}); }, ErrorKind::kIO,
              {cut, "truncated", "expected 15680 bytes"});
  WriteFile(cut, bytes.substr(0, 10));
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", cut}, {"label", lab}}); }, ErrorKind::kIO,
              {cut, "too short for an IDX header"});
  // A gzip file cut in the middle of its stream.
  const std::string gz = TempPath("img.gz");
  gzFile g = gzopen(gz.c_str(), "wb");
  gzwrite(g, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(g);
  std::string zipped = ReadFile(gz);
  WriteFile(gz, zipped.substr(0, zipped.size() / 2));
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", gz}, {"label", lab}}); }, ErrorKind::kIO, {gz});
  // A whole gzip file reads like the plain one.
  WriteFile(gz, zipped);
  auto a = CreateDataIter("MNISTIter", {{"image", gz}, {"label", lab}, {"shuffle", "0"}, {"batch_size", "20"},
                                        {"silent", "1"}});
  auto b = CreateDataIter("MNISTIter", {{"image", img}, {"label", lab}, {"shuffle", "0"}, {"batch_size", "20"},
                                        {"silent", "1"}});
  ASSERT_TRUE(a->Next());
  ASSERT_TRUE(b->Next());
  EXPECT_EQ(ToVector(a->Value().data[0]), ToVector(b->Value().data[0]));
  const std::string short_lab = TempPath("short-labels");
  std::string lb = ReadFile(lab);
  lb[7] = 19;  // the header announces 19 labels...
  WriteFile(short_lab, lb.substr(0, lb.size() - 1));  // ...and the file holds 19
  ExpectError([&] { CreateDataIter("MNISTIter", {{"image", img}, {"label", short_lab}}); }, ErrorKind::kValue,
              {"20 images", "19 labels"});
  std::remove(cut.c_str());
  std::remove(gz.c_str());
  std::remove(short_lab.c_str());
}

TEST(CSVIter, ReadsRowsAndReportsRaggedLines) {
  const std::string data = TempPath("data.csv"), label = TempPath("label.csv");
  WriteFile(data, "1,2,3\n4, 5 ,6\r\n\n7,8,9\n10,11,12\n13,14,15\n");
  WriteFile(label, "0\n1\n2\n3\n4\n");
  auto it = CreateDataIter("CSVIter", {{"data_csv", data}, {"data_shape", "(3,)"}, {"label_csv", label},
                                       {"batch_size", "2"}, {"round_batch", "0"}});
  std::vector<float> all, labels;
  std::vector<int> pads;
  while (it->Next()) {
    auto d = ToVector(it->Value().data[0]);
    auto l = ToVector(it->Value().label[0]);
    all.insert(all.end(), d.begin(), d.end());
    labels.insert(labels.end(), l.begin(), l.end());
    pads.push_back(it->Value().pad);
  }
  EXPECT_EQ(all, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0}));
  EXPECT_EQ(labels, (std::vector<float>{0, 1, 2, 3, 4, 0}));
  EXPECT_EQ(pads, (std::vector<int>{0, 0, 1}));

  WriteFile(data, "1,2,3\n4,5\n");
  ExpectError([&] { CreateDataIter("CSVIter", {{"data_csv", data}, {"data_shape", "(3,)"}, {"batch_size", "1"}}); },
              ErrorKind::kShape, {data, "line 2 has 2 values, expected 3"});
  WriteFile(data, "1,2,x\n");
  ExpectError([&] { CreateDataIter("CSVIter", {{"data_csv", data}, {"data_shape", "(3,)"}, {"batch_size", "1"}}); },
              ErrorKind::kValue, {data, "line 1", "expected a number in column 3"});
  WriteFile(data, "1,2,3\n");
  ExpectError([&] { CreateDataIter("CSVIter", {{"data_csv", data}, {"data_shape", "(3,)"}, {"label_csv", label},
                                               {"batch_size", "1"}}); },
              ErrorKind::kShape, {label, "has 5 rows, expected 1"});
  ExpectError([&] { CreateDataIter("CSVIter", {{"data_csv", "/nonexistent.csv"}, {"data_shape", "(3,)"},
                                               {"batch_size", "1"}}); },
              ErrorKind::kNotFound, {"/nonexistent.csv", "data_csv"});
  std::remove(data.c_str());
  std::remove(label.c_str());
}

TEST(LibSVMIter, GivesCsrRowsAndChecksIndices) {
  const std::string data = TempPath("data.libsvm");
  WriteFile(data, "1 0:1.5 3:2\n0 2:-1\n2\n1 4:5 1:4\n");
  auto it = CreateDataIter("LibSVMIter", {{"data_libsvm", data}, {"data_shape", "(5,)"}, {"batch_size", "3"},
                                          {"round_batch", "0"}, {"prefetch_buffer", "0"}});
  ASSERT_TRUE(it->Next());
  const NDArray& d = it->Value().data[0];
  ASSERT_EQ(d.stype(), StorageType::kCSR);
  EXPECT_EQ(d.shape(), (Shape{3, 5}));
  EXPECT_EQ(d.sparse_values().shape(), (Shape{3}));
  EXPECT_EQ(ToVector(CastStorage(d, StorageType::kDefault)),
            (std::vector<float>{1.5, 0, 0, 2, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ToVector(it->Value().label[0]), (std::vector<float>{1, 0, 2}));
  ASSERT_TRUE(it->Next());
  EXPECT_EQ(it->Value().pad, 2);
  // The unsorted line "4:5 1:4" is stored with increasing columns.
  EXPECT_EQ(ToVector(CastStorage(it->Value().data[0], StorageType::kDefault)),
            (std::vector<float>{0, 4, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_FALSE(it->Next());
  // Line 4 is read, and refused, when the batch that holds it is made.
  auto narrow = CreateDataIter("LibSVMIter", {{"data_libsvm", data}, {"data_shape", "(4,)"}, {"batch_size", "1"},
                                              {"prefetch_buffer", "0"}});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(narrow->Next());
  ExpectError([&] { narrow->Next(); }, ErrorKind::kIndex, {data, "line 4", "feature index 4", "index < 4"});
  ExpectError([&] { CreateDataIter("LibSVMIter", {{"data_libsvm", data}, {"data_shape", "(4,)"}, {"batch_size", "4"}}); },
              ErrorKind::kIndex, {data, "line 4", "feature index 4", "index < 4"});
  WriteFile(data, "1 0:1 2\n");
  ExpectError([&] { CreateDataIter("LibSVMIter", {{"data_libsvm", data}, {"data_shape", "(4,)"}, {"batch_size", "1"}}); },
              ErrorKind::kValue, {data, "line 1", "expected 'index:value'"});
  std::remove(data.c_str());
}

TEST(DataIterCApi, EnumeratesCreatesAndIterates) {
  int count = 0;
  ASSERT_EQ(weft_dataiter_type_count(&count), WEFT_OK);
  bool found = false;
  for (int i = 0; i < count; ++i) {
    const char* name = nullptr;
    ASSERT_EQ(weft_dataiter_type_name(i, &name), WEFT_OK);
    found = found || std::string(name) == "CSVIter";
  }
  EXPECT_TRUE(found);
  int np = 0;
  ASSERT_EQ(weft_dataiter_type_num_params("CSVIter", &np), WEFT_OK);
  bool saw_shape = false;
  for (int i = 0; i < np; ++i) {
    const char *name, *type, *def, *doc;
    int required = -1;
    ASSERT_EQ(weft_dataiter_type_param("CSVIter", i, &name, &type, &def, &doc, &required), WEFT_OK);
    if (std::string(name) == "data_shape") {
      saw_shape = true;
      EXPECT_EQ(required, 1);
      EXPECT_EQ(std::string(type), "Shape(tuple)");
    }
  }
  EXPECT_TRUE(saw_shape);
  const char* doc = nullptr;
  EXPECT_EQ(weft_dataiter_type_doc("NoSuch", &doc), WEFT_ERR_NOT_FOUND);
  EXPECT_NE(std::string(weft_get_last_error()).find("NoSuch"), std::string::npos);

  const std::string data = TempPath("capi.csv");
  WriteFile(data, "1,2\n3,4\n5,6\n");
  const char* keys[] = {"data_csv", "data_shape", "batch_size"};
  const char* vals[] = {data.c_str(), "(2,)", "2"};
  weft_dataiter_t* it = nullptr;
  ASSERT_EQ(weft_dataiter_create("CSVIter", 3, keys, vals, &it), WEFT_OK) << weft_get_last_error();
  int n = 0;
  ASSERT_EQ(weft_dataiter_get_num_descs(it, 0, &n), WEFT_OK);
  ASSERT_EQ(n, 1);
  const char* dname = nullptr;
  int64_t dims[4];
  int ndim = 0, dtype = -1;
  ASSERT_EQ(weft_dataiter_get_desc(it, 0, 0, &dname, dims, 4, &ndim, &dtype), WEFT_OK);
  EXPECT_EQ(std::string(dname), "data");
  EXPECT_EQ(ndim, 2);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 2);
  EXPECT_EQ(dtype, WEFT_DTYPE_FLOAT32);
  EXPECT_EQ(weft_dataiter_get_pad(it, &n), WEFT_ERR_VALUE);  // before the first next
  int more = 0;
  std::vector<float> seen;
  std::vector<int> pads;
  for (;;) {
    ASSERT_EQ(weft_dataiter_next(it, &more), WEFT_OK);
    if (!more) break;
    weft_ndarray_t* arr = nullptr;
    ASSERT_EQ(weft_dataiter_get_data(it, 0, &arr), WEFT_OK);
    float buf[4];
    ASSERT_EQ(weft_ndarray_copy_to_host(arr, buf, sizeof(buf)), WEFT_OK);
    seen.insert(seen.end(), buf, buf + 4);
    ASSERT_EQ(weft_ndarray_free(arr), WEFT_OK);
    int pad = -1;
    ASSERT_EQ(weft_dataiter_get_pad(it, &pad), WEFT_OK);
    pads.push_back(pad);
    int isize = 0;
    ASSERT_EQ(weft_dataiter_get_index_size(it, &isize), WEFT_OK);
    ASSERT_EQ(isize, 2);
    uint64_t idx[2];
    EXPECT_EQ(weft_dataiter_get_index(it, idx, 8), WEFT_ERR_VALUE);
    ASSERT_EQ(weft_dataiter_get_index(it, idx, sizeof(idx)), WEFT_OK);
    EXPECT_EQ(idx[0], pads.size() == 1 ? 0u : 2u);
    weft_ndarray_t* bad = nullptr;
    EXPECT_EQ(weft_dataiter_get_label(it, 1, &bad), WEFT_ERR_INDEX);
  }
  EXPECT_EQ(seen, (std::vector<float>{1, 2, 3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(pads, (std::vector<int>{0, 1}));
  ASSERT_EQ(weft_dataiter_reset(it), WEFT_OK);
  ASSERT_EQ(weft_dataiter_free(it), WEFT_OK);
  EXPECT_EQ(weft_dataiter_next(it, &more), WEFT_ERR_HANDLE);  // freed
  EXPECT_EQ(weft_dataiter_free(nullptr), WEFT_OK);

  const char* bad_vals[] = {"/nonexistent.csv", "(2,)", "2"};
  weft_dataiter_t* none = nullptr;
  EXPECT_EQ(weft_dataiter_create("CSVIter", 3, keys, bad_vals, &none), WEFT_ERR_NOT_FOUND);
  EXPECT_NE(std::string(weft_get_last_error()).find("/nonexistent.csv"), std::string::npos);
  EXPECT_EQ(weft_dataiter_create("CSVIter", 3, nullptr, vals, &none), WEFT_ERR_VALUE);
  std::remove(data.c_str());
}

// NDArray in C++: views share memory, copies convert dtypes, waits report errors, and the
// MXNet list format loads the fixtures bit-exactly and round-trips what Weft writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/ndarray/serialize.h"

namespace weft {
namespace {

template <typename T>
NDArray Make(const Shape& s, std::vector<T> v, DType t) {
  NDArray a(s, Context::CPU(), t);
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(T));
  return a;
}

template <typename T>
std::vector<T> Read(const NDArray& a) {
  std::vector<T> v(a.Size());
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(T));
  return v;
}

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(NDArray, SliceAtAndReshapeAreViews) {
  NDArray a = Make(Shape{4, 3}, Iota(12), DType::kFloat32);
  NDArray rows = a.Slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_TRUE(rows.SameChunk(a));
  EXPECT_EQ(Read<float>(rows), (std::vector<float>{3, 4, 5, 6, 7, 8}));
  NDArray row = a.At(-1);
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(Read<float>(row), (std::vector<float>{9, 10, 11}));
  NDArray flat = a.Reshape(Shape{12});
  EXPECT_TRUE(flat.SameChunk(a));
  // A write through a view reaches the parent.
  std::vector<float> minus(6, -1.0f);
  rows.SyncCopyFromCPU(minus.data(), minus.size() * sizeof(float));
  std::vector<float> want = Iota(12);
  for (int i = 3; i < 9; ++i) want[i] = -1;
  EXPECT_EQ(Read<float>(a), want);
  EXPECT_EQ(Read<float>(flat), want);
}

TEST(NDArray, ViewErrorsNameTheShapes) {
  NDArray a(Shape{4, 3}, Context::CPU());
  EXPECT_THROW(a.Slice(3, 5), Error);
  EXPECT_THROW(a.At(4), Error);
  try {
    a.Reshape(Shape{5, 2});
    FAIL() << "reshape to a different size must fail";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("(4,3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(5,2)"), std::string::npos) << m;
  }
}

TEST(NDArray, CopiesConvertDTypes) {
  NDArray a = Make(Shape{4}, std::vector<float>{1.5f, -2.5f, 300.0f, 0.0f}, DType::kFloat32);
  NDArray i(Shape{4}, Context::CPU(), DType::kInt32);
  CopyFromTo(a, i);
  EXPECT_EQ(Read<int32_t>(i), (std::vector<int32_t>{1, -2, 300, 0}));
  // AsType is a reinterpreting view of the same bytes, not a conversion.
  NDArray bits = a.AsType(DType::kInt32);
  EXPECT_TRUE(bits.SameChunk(a));
  EXPECT_EQ(Read<int32_t>(bits).at(0), 0x3FC00000);
  EXPECT_THROW(a.AsType(DType::kFloat64), Error);
  NDArray d(Shape{4}, Context::CPU(), DType::kFloat64);
  CopyFromTo(a, d);
  EXPECT_EQ(Read<double>(d), (std::vector<double>{1.5, -2.5, 300.0, 0.0}));
  NDArray c = a.Copy(Context::CPU());
  EXPECT_FALSE(c.SameChunk(a));
  EXPECT_EQ(Read<float>(c), Read<float>(a));
  EXPECT_THROW(a.SyncCopyToCPU(nullptr, 3), Error);
}

TEST(NDArray, ZeroSizeArrays) {
  NDArray a(Shape{2, 0, 3}, Context::CPU());
  EXPECT_EQ(a.Size(), 0);
  EXPECT_TRUE(Read<float>(a).empty());
  std::string bytes = SaveNDArrayList({a}, {"empty"});
  NDArrayFile f = LoadNDArrayList(bytes.data(), bytes.size(), "memory");
  EXPECT_EQ(f.arrays.at(0).shape(), (Shape{2, 0, 3}));
}

TEST(NDArraySerialize, RoundTripIsBitExactForEveryDType) {
  std::vector<NDArray> arrays = {
      Make(Shape{2, 3}, Iota(6), DType::kFloat32),
      Make(Shape{2}, std::vector<double>{1e300, -0.0}, DType::kFloat64),
      Make(Shape{3}, std::vector<uint16_t>{0x3C00, 0xC000, 0x7E00}, DType::kFloat16),
      Make(Shape{2}, std::vector<uint8_t>{0, 255}, DType::kUint8),
      Make(Shape{2}, std::vector<int8_t>{-128, 127}, DType::kInt8),
      Make(Shape{2}, std::vector<int32_t>{INT32_MIN, INT32_MAX}, DType::kInt32),
      Make(Shape{2}, std::vector<int64_t>{INT64_MIN, int64_t{1} << 40}, DType::kInt64),
      Make(Shape{3}, std::vector<uint8_t>{1, 0, 1}, DType::kBool),
  };
  std::vector<std::string> names = {"f32", "f64", "f16", "u8", "i8", "i32", "i64", "b"};
  std::string bytes = SaveNDArrayList(arrays, names);
  NDArrayFile back = LoadNDArrayList(bytes.data(), bytes.size(), "memory");
  ASSERT_EQ(back.names, names);
  for (size_t i = 0; i < arrays.size(); ++i) {
    ASSERT_EQ(back.arrays[i].dtype(), arrays[i].dtype()) << names[i];
    ASSERT_EQ(back.arrays[i].shape(), arrays[i].shape()) << names[i];
    size_t n = arrays[i].Size() * DTypeSize(arrays[i].dtype());
    std::vector<char> x(n), y(n);
    arrays[i].SyncCopyToCPU(x.data(), n);
    back.arrays[i].SyncCopyToCPU(y.data(), n);
    EXPECT_EQ(x, y) << names[i];
  }
  // Saving what was loaded gives the same bytes.
  EXPECT_EQ(SaveNDArrayList(back.arrays, back.names), bytes);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing fixture " << path;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(NDArraySerialize, MXNetFixturesLoad) {
  const std::string dir = WEFT_COMPAT_DIR;
  NDArrayFile legacy = LoadNDArrayListFile(dir + "/upstream/legacy_ndarray.v0");
  ASSERT_EQ(legacy.arrays.size(), 6u);
  for (const auto& a : legacy.arrays) EXPECT_EQ(Read<float>(a), Iota(128));
  NDArrayFile list = LoadNDArrayListFile(dir + "/synthetic/dense_list_v2.params");
  ASSERT_EQ(list.arrays.size(), 2u);
  EXPECT_TRUE(list.names.empty());
  EXPECT_EQ(Read<float>(list.arrays[0]), Iota(12));
  EXPECT_EQ(Read<int32_t>(list.arrays[1]), (std::vector<int32_t>{7}));
  // Re-saving the V2 fixture reproduces MXNet's bytes exactly.
  std::string raw = ReadFile(dir + "/synthetic/dense_list_v2.params");
  EXPECT_EQ(SaveNDArrayList(list.arrays, list.names), raw);
  NDArray single = LoadNDArrayRaw(ReadFile(dir + "/synthetic/raw_single_v2.nd").data(),
                                  ReadFile(dir + "/synthetic/raw_single_v2.nd").size(), "raw_single_v2.nd");
  EXPECT_EQ(Read<float>(single), (std::vector<float>{1, 2, 3}));
  // numpy-shape (V3) files need np-shape mode.
  std::string v3 = ReadFile(dir + "/synthetic/np_shape_v3.params");
  EXPECT_THROW(LoadNDArrayList(v3.data(), v3.size(), "np_shape_v3.params"), Error);
  NDArrayLoadOptions np;
  np.np_shape = true;
  NDArrayFile f3 = LoadNDArrayList(v3.data(), v3.size(), "np_shape_v3.params", np);
  ASSERT_EQ(f3.arrays.size(), 2u);
  EXPECT_EQ(f3.arrays[0].shape().ndim(), 0);
  EXPECT_EQ(Read<float>(f3.arrays[0]), (std::vector<float>{3.5f}));
  // Saved in numpy-shape mode, the V3 fixture's bytes come back exactly; without it the
  // 0-d array cannot be saved, and classic records are refused in numpy-shape mode.
  NDArraySaveOptions np_save;
  np_save.np_shape = true;
  EXPECT_EQ(SaveNDArrayList(f3.arrays, f3.names, np_save), v3);
  EXPECT_THROW(SaveNDArrayList(f3.arrays, f3.names), Error);
  EXPECT_THROW(LoadNDArrayList(raw.data(), raw.size(), "dense_list_v2.params", np), Error);
  NDArrayLoadOptions global = np;
  global.np_shape_global = true;
  EXPECT_EQ(LoadNDArrayList(raw.data(), raw.size(), "dense_list_v2.params", global).arrays.size(), 2u);
}

TEST(NDArraySerialize, TruncatedAndCorruptInputsNameTheSourceAndOffset) {
  std::string good = SaveNDArrayList({Make(Shape{2, 2}, Iota(4), DType::kFloat32)}, {"w"});
  for (size_t cut : {size_t{0}, size_t{4}, size_t{12}, good.size() / 2, good.size() - 1}) {
    try {
      LoadNDArrayList(good.data(), cut, "cut.params");
      FAIL() << "a file cut at " << cut << " bytes must not load";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("cut.params"), std::string::npos) << m;
      EXPECT_NE(m.find("offset"), std::string::npos) << m;
    }
  }
  std::string bad = good;
  bad[0] ^= 0x55;
  EXPECT_THROW(LoadNDArrayList(bad.data(), bad.size(), "bad.params"), Error);
  EXPECT_THROW(LoadNDArrayListFile("/nonexistent/weft.params"), Error);
}

}  // namespace
}  // namespace weft

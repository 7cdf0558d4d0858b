// Checked sizes, input limits, atomic file writes and the iterative release of long graphs
// (core/base/checked_size.h, limits.h, atomic_file.h; graph and autograd Nodes).
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/checked_size.h"
#include "core/base/convert.h"
#include "core/base/limits.h"
#include "core/graph/node.h"
#include "core/imperative/autograd.h"
#include "op_test_util.h"

namespace weft {
namespace {

TEST(CheckedSize, ProductsThatFitAreExact) {
  EXPECT_EQ(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, "t"), int64_t{1} << 62);
  EXPECT_EQ(CheckedAdd(INT64_MAX - 1, 1, "t"), INT64_MAX);
  EXPECT_EQ(CheckedNumElements(Shape({3, 0, 5}), "t"), 0);
  EXPECT_EQ(CheckedBytes(Shape({1 << 20, 3}), DType::kFloat64, "t"), size_t{24} << 20);
}

TEST(CheckedSize, OverflowIsAnErrorNamingWhatWasSized) {
  test::ExpectError([] { CheckedMul(int64_t{1} << 32, int64_t{1} << 31, "the header"); }, ErrorKind::kValue,
                    {"the header: 4294967296 x 2147483648 overflows a 64-bit size"});
  test::ExpectError([] { CheckedAdd(INT64_MAX, 1, "offsets"); }, ErrorKind::kValue, {"offsets:", "overflows"});
  test::ExpectError([] { CheckedNumElements(Shape({int64_t{1} << 62, 4}), "NDArray"); }, ErrorKind::kValue,
                    {"NDArray: shape (4611686018427387904,4) has more elements than a 64-bit size can count"});
  // 2^61 elements fit in int64 but their 8-byte float64s do not fit in 64 bits of bytes.
  test::ExpectError([] { CheckedBytes(Shape({int64_t{1} << 61}), DType::kFloat64, "NDArray"); }, ErrorKind::kValue,
                    {"needs more bytes than a 64-bit size can count"});
  test::ExpectError([] { CheckedNumElements(Shape({2, -1}), "NDArray"); }, ErrorKind::kShape,
                    {"expected a fully known shape"});
}

TEST(CheckedSize, ArraysWithOverflowingShapesAreRefused) {
  test::ExpectError([] { NDArray a(Shape({int64_t{1} << 62, 4}), Context::CPU(), DType::kFloat32); },
                    ErrorKind::kValue, {"more elements than a 64-bit size can count"});
  NDArray empty(Shape({0}), Context::CPU(), DType::kFloat32);
  test::ExpectError([&] { empty.Reshape(Shape({int64_t{1} << 62, 8})); }, ErrorKind::kValue, {"NDArray::Reshape"});
}

TEST(ConvertValue, OutOfRangeAndNaNFloatsSaturateInsteadOfBeingUndefined) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ConvertValue<int8_t>(nan), 0);
  EXPECT_EQ(ConvertValue<int8_t>(1e10), 127);
  EXPECT_EQ(ConvertValue<int8_t>(-6.2e32), -128);
  EXPECT_EQ(ConvertValue<uint8_t>(-3.5), 0);
  EXPECT_EQ(ConvertValue<int32_t>(static_cast<float>(INT32_MAX)), INT32_MAX);
  EXPECT_EQ(ConvertValue<int64_t>(inf), INT64_MAX);
  EXPECT_EQ(ConvertValue<int64_t>(-inf), INT64_MIN);
  EXPECT_EQ(ConvertValue<int32_t>(-7.9f), -7);
  EXPECT_EQ(ConvertValue<int8_t>(bfloat16(300.0f)), 127);
  EXPECT_EQ(ConvertValue<bool>(nan), true);
  EXPECT_EQ(ConvertValue<float>(int64_t{3}), 3.0f);
}

TEST(ConvertValue, CopiesAndCastsBetweenDTypesSaturate) {
  NDArray x = test::MakeArray(Shape({4}), {std::nan(""), 1e10, -1e10, 3.7}, DType::kFloat32);
  NDArray y(Shape({4}), Context::CPU(), DType::kInt8);
  CopyFromTo(x, y);
  test::ExpectAllNear(test::ToVector(y), {0, 127, -128, 3});
  test::ExpectAllNear(test::ToVector(test::Run1("Cast", {x}, {{"dtype", "int32"}})), {0, INT32_MAX, INT32_MIN, 3});
}

TEST(ConvertValue, BoolBytesFromOutsideBecomeZeroOrOne) {
  NDArray b(Shape({4}), Context::CPU(), DType::kBool);
  const uint8_t raw[4] = {0, 1, 190, 255};
  b.SyncCopyFromCPU(raw, sizeof(raw));
  uint8_t back[4];
  b.SyncCopyToCPU(back, sizeof(back));
  EXPECT_EQ(std::vector<int>(back, back + 4), (std::vector<int>{0, 1, 1, 1}));
}

TEST(Limits, ClaimsOverTheLimitNameItAndItsVariable) {
  EXPECT_EQ(LimitValue(Limit::kImagePixels), int64_t{1} << 28);
  EXPECT_STREQ(LimitEnvName(Limit::kJsonDepth), "WEFT_LIMIT_JSON_DEPTH");
  CheckLimit(Limit::kImagePixels, int64_t{1} << 28, "exactly at the limit");
  test::ExpectError([] { CheckLimit(Limit::kImagePixels, (int64_t{1} << 28) + 1, "image 'x.jpg'"); },
                    ErrorKind::kValue,
                    {"image 'x.jpg': claims 268435457 pixels, over the limit of 268435456 (set "
                     "WEFT_LIMIT_IMAGE_PIXELS to allow more)"});
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/weft_atomic_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& n : ListDir(dir_)) std::remove((dir_ + "/" + n).c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(AtomicFile, WritesAndReplacesLeavingNoTemporary) {
  std::string path = dir_ + "/a.params";
  WriteFileAtomically(path, "first", 5);
  EXPECT_EQ(ReadAll(path), "first");
  WriteFileAtomically(path, "second!", 7);
  EXPECT_EQ(ReadAll(path), "second!");
  EXPECT_EQ(ListDir(dir_), std::vector<std::string>{"a.params"});
}

TEST_F(AtomicFile, AMissingFolderIsNotFoundAndLeavesNothing) {
  test::ExpectError([&] { WriteFileAtomically(dir_ + "/no/such/b.params", "x", 1); }, ErrorKind::kNotFound,
                    {"cannot write file '", "/no/such/b.params'", "No such file or directory"});
  EXPECT_TRUE(ListDir(dir_).empty());
}

TEST_F(AtomicFile, AFolderIsNotReplacedAndNothingIsLeftBehind) {
  std::string target = dir_ + "/taken";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  test::ExpectError([&] { WriteFileAtomically(target, "data", 4); }, ErrorKind::kIO,
                    {"cannot write file '", "/taken'", "Is a directory"});
  EXPECT_EQ(ListDir(dir_), std::vector<std::string>{"taken"});
  rmdir(target.c_str());
}

TEST_F(AtomicFile, ALinkStaysALinkAndAPipeIsWrittenInPlace) {
  std::string real = dir_ + "/real.params", link = dir_ + "/link.params";
  WriteFileAtomically(real, "old", 3);
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  WriteFileAtomically(link, "new!", 4);
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(ReadAll(real), "new!");

  std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = ReadAll(fifo); });
  WriteFileAtomically(fifo, "through the pipe", 16);
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::vector<std::string> names = ListDir(dir_);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"link.params", "pipe", "real.params"}));
}

TEST(LongGraphs, AMillionChainedGraphNodesAreFreedWithoutRecursion) {
  graph::NodePtr tail = graph::Node::Create();
  graph::Node* first = tail.get();
  for (int i = 0; i < 1000000; ++i) {
    graph::NodePtr n = graph::Node::Create();
    n->inputs.push_back({tail, 0, 0});
    if (i % 2 == 0) n->control_deps.push_back(tail);
    tail = std::move(n);
  }
  EXPECT_NE(first, nullptr);
  tail.reset();  // recursive destructors would need about a million frames here
  SUCCEED();
}

TEST(LongGraphs, ASharedNodeKeepsItsInputsWhenAnotherOwnerDies) {
  graph::NodePtr leaf = graph::Node::Create();
  leaf->attrs.name = "leaf";
  graph::NodePtr mid = graph::Node::Create();
  mid->inputs.push_back({leaf, 0, 0});
  leaf.reset();
  {
    graph::NodePtr top = graph::Node::Create();
    top->inputs.push_back({mid, 0, 0});
  }
  ASSERT_EQ(mid->inputs.size(), 1u);
  EXPECT_EQ(mid->inputs[0].node->attrs.name, "leaf");
}

TEST(LongGraphs, ALongRecordedHistoryIsFreedWithoutRecursion) {
  NDArray x = test::MakeArray(Shape({1}), {1.0});
  NDArray g(Shape({1}), Context::CPU(), DType::kFloat64);
  autograd::MarkVariables({&x}, {g}, {OpReq::kWriteTo});
  bool prev = autograd::SetIsRecording(true);
  NDArray y = x;
  for (int i = 0; i < 300000; ++i) y = test::Run1("_mul_scalar", {y}, {{"scalar", "1.0"}});
  autograd::SetIsRecording(prev);
  y = NDArray();
  x = NDArray();
  SUCCEED();
}

}  // namespace
}  // namespace weft

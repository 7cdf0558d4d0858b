// imperative::Invoke with sparse arrays: the operator's sparse kernel (FComputeSparse) and
// its output storage type, delivery into given outputs, and the dense fallback for
// combinations no kernel serves.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/base/error.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/ndarray.h"
#include "core/ndarray/sparse.h"
#include "core/op/registry.h"

namespace weft {
namespace {

NDArray Dense(const Shape& s, const std::vector<float>& v) {
  NDArray a(s, Context::CPU(), DType::kFloat32);
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> Values(const NDArray& a) {
  NDArray d = DenseOf(a);
  std::vector<float> v(d.Size());
  d.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

std::vector<NDArray> Call(const std::string& op, const std::vector<NDArray>& in, std::vector<NDArray> out = {},
                          KwArgs params = {}) {
  imperative::Invoke(MakeAttrs(Op::Get(op), params), in, &out);
  return out;
}

const std::vector<float> kA = {0, 1, 0, 0, 0, 0, 2, 0, 3};
const std::vector<float> kB = {4, 0, 0, 0, 0, 0, 0, 5, 6};

TEST(SparseDispatch, KernelKeepsMxnetStorageTypes) {
  NDArray a = CastStorage(Dense(Shape{3, 3}, kA), StorageType::kCSR);
  NDArray b = CastStorage(Dense(Shape{3, 3}, kB), StorageType::kCSR);
  NDArray sum = Call("elemwise_add", {a, b})[0];
  EXPECT_EQ(sum.stype(), StorageType::kCSR);
  EXPECT_EQ(Values(sum), (std::vector<float>{4, 1, 0, 0, 0, 0, 2, 5, 9}));
  // The union of the stored positions, not a dense image.
  EXPECT_EQ(sum.sparse_values().Size(), 5);
  NDArray prod = Call("elemwise_mul", {a, Dense(Shape{3, 3}, kB)})[0];
  EXPECT_EQ(prod.stype(), StorageType::kCSR);
  EXPECT_EQ(Values(prod), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 18}));
  NDArray rsp = Call("cast_storage", {Dense(Shape{3, 3}, kA)}, {}, {{"stype", "row_sparse"}})[0];
  EXPECT_EQ(rsp.stype(), StorageType::kRowSparse);
  EXPECT_EQ(rsp.sparse_values().shape(), (Shape{2, 3}));
}

TEST(SparseDispatch, UnservedCombinationsFallBackToDense) {
  NDArray a = CastStorage(Dense(Shape{3, 3}, kA), StorageType::kCSR);
  NDArray r = CastStorage(Dense(Shape{3, 3}, kB), StorageType::kRowSparse);
  NDArray sum = Call("elemwise_add", {a, r})[0];
  EXPECT_EQ(sum.stype(), StorageType::kDefault);
  EXPECT_EQ(Values(sum), (std::vector<float>{4, 1, 0, 0, 0, 0, 2, 5, 9}));
  NDArray e = Call("exp", {a})[0];
  EXPECT_EQ(e.stype(), StorageType::kDefault);
}

TEST(SparseDispatch, GivenOutputsReceiveTheResult) {
  NDArray a = CastStorage(Dense(Shape{3, 3}, kA), StorageType::kCSR);
  NDArray dense_out(Shape{3, 3}, Context::CPU(), DType::kFloat32);
  std::vector<NDArray> out = Call("elemwise_add", {a, a}, {dense_out});
  EXPECT_TRUE(out[0].SameChunk(dense_out));  // written in place, densely
  EXPECT_EQ(Values(dense_out), (std::vector<float>{0, 2, 0, 0, 0, 0, 4, 0, 6}));
  NDArray rsp_out = SparseZeros(StorageType::kRowSparse, Shape{3, 3}, DType::kFloat32, Context::CPU());
  out = Call("elemwise_add", {a, a}, {rsp_out});
  EXPECT_EQ(out[0].stype(), StorageType::kRowSparse);  // the given output's storage type
  EXPECT_EQ(Values(out[0]), (std::vector<float>{0, 2, 0, 0, 0, 0, 4, 0, 6}));
}

TEST(SparseDispatch, CallsAreCheckedBeforeTheKernel) {
  NDArray a = CastStorage(Dense(Shape{3, 3}, kA), StorageType::kCSR);
  NDArray b = SparseZeros(StorageType::kCSR, Shape{3, 4}, DType::kFloat32, Context::CPU());
  EXPECT_THROW(Call("elemwise_add", {a, b}), Error);
  EXPECT_THROW(Call("elemwise_add", {a}), Error);
  EXPECT_THROW(Call("dot", {a, Dense(Shape{2, 2}, {1, 2, 3, 4})}), Error);
}

}  // namespace
}  // namespace weft

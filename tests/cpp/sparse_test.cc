// Sparse NDArrays in the core: checked construction, conversions against a dense image,
// refusal of dense-only uses, and the MXNet record format round trip.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/ndarray/serialize.h"
#include "core/ndarray/sparse.h"

namespace weft {
namespace {

template <typename T>
NDArray MakeArr(const Shape& s, std::vector<T> v, DType t) {
  NDArray a(s, Context::CPU(), t);
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(T));
  return a;
}

template <typename T>
std::vector<T> ReadArr(const NDArray& a) {
  std::vector<T> v(a.Size());
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(T));
  return v;
}

// [[0 1 0 0], [0 0 0 0], [2 0 3 0]]
const std::vector<float> kDense = {0, 1, 0, 0, 0, 0, 0, 0, 2, 0, 3, 0};

TEST(Sparse, DenseToCsrAndBack) {
  NDArray d = MakeArr(Shape{3, 4}, kDense, DType::kFloat32);
  NDArray c = CastStorage(d, StorageType::kCSR);
  EXPECT_EQ(c.stype(), StorageType::kCSR);
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  EXPECT_EQ(ReadArr<float>(c.sparse_values()), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ReadArr<int64_t>(c.aux(0)), (std::vector<int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(ReadArr<int64_t>(c.aux(1)), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(ReadArr<float>(CastStorage(c, StorageType::kDefault)), kDense);
}

TEST(Sparse, DenseToRowSparseAndCsrToRowSparse) {
  NDArray d = MakeArr(Shape{3, 4}, kDense, DType::kFloat32);
  NDArray r = CastStorage(CastStorage(d, StorageType::kCSR), StorageType::kRowSparse);
  EXPECT_EQ(r.stype(), StorageType::kRowSparse);
  EXPECT_EQ(ReadArr<int64_t>(r.aux(0)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(r.sparse_values().shape(), (Shape{2, 4}));
  EXPECT_EQ(ReadArr<float>(DenseOf(r)), kDense);
}

TEST(Sparse, MakeSparseChecksParts) {
  NDArray vals = MakeArr(Shape{2}, std::vector<float>{1, 2}, DType::kFloat32);
  NDArray idx = MakeArr(Shape{2}, std::vector<int64_t>{2, 1}, DType::kInt64);
  NDArray indptr = MakeArr(Shape{2}, std::vector<int64_t>{0, 2}, DType::kInt64);
  EXPECT_THROW(MakeSparse(StorageType::kCSR, Shape{1, 3}, vals, {indptr, idx}), Error);  // unsorted
  NDArray idx32 = MakeArr(Shape{2}, std::vector<int32_t>{0, 1}, DType::kInt32);
  EXPECT_THROW(MakeSparse(StorageType::kCSR, Shape{1, 3}, vals, {indptr, idx32}), Error);  // not int64
  NDArray ok_idx = MakeArr(Shape{2}, std::vector<int64_t>{0, 2}, DType::kInt64);
  NDArray c = MakeSparse(StorageType::kCSR, Shape{1, 3}, vals, {indptr, ok_idx});
  EXPECT_EQ(ReadArr<float>(DenseOf(c)), (std::vector<float>{1, 0, 2}));
  EXPECT_THROW(MakeSparse(StorageType::kRowSparse, Shape{2, 1}, vals, {ok_idx}), Error);  // index 2 >= 2
}

// The first row's indptr entry lies past nnz: a check that walked rows before checking all of
// indptr would read the indices out of bounds (ASan builds catch it).
TEST(Sparse, UncheckedPartsAreKeptAndEveryReadRefusesThem) {
  NDArray vals = MakeArr(Shape{3}, std::vector<float>{7, 8, 9}, DType::kFloat32);
  NDArray idx = MakeArr(Shape{3}, std::vector<int64_t>{0, 2, 1}, DType::kInt64);
  NDArray indptr = MakeArr(Shape{4}, std::vector<int64_t>{0, 5, 2, 3}, DType::kInt64);
  EXPECT_THROW(MakeSparse(StorageType::kCSR, Shape{3, 4}, vals, {indptr, idx}), Error);
  NDArray bad = MakeSparseUnchecked(StorageType::kCSR, Shape{3, 4}, vals, {indptr, idx});
  EXPECT_EQ(bad.sparse_fault().level, SparseFault::kContent);
  EXPECT_NE(bad.sparse_fault().message.find("indptr must not decrease"), std::string::npos);
  CheckSparseFormat(bad, false);  // the O(1) check sees only lengths
  EXPECT_THROW(CheckSparseFormat(bad, true), Error);
  EXPECT_THROW(bad.sparse_values(), Error);
  EXPECT_THROW(bad.aux(0), Error);
  EXPECT_THROW(bad.aux(1), Error);
  EXPECT_THROW(bad.Copy(Context::CPU()), Error);
  EXPECT_THROW(CastStorage(bad, StorageType::kDefault), Error);
  EXPECT_THROW(CastStorage(bad, StorageType::kRowSparse), Error);
  EXPECT_THROW(CastStorage(bad, StorageType::kCSR), Error);
  EXPECT_THROW(SaveNDArrayList({bad}, {}), Error);
  EXPECT_EQ(ReadArr<int64_t>(bad.sparse_part_unchecked(0)), (std::vector<int64_t>{0, 5, 2, 3}));
  EXPECT_EQ(ReadArr<float>(bad.sparse_part_unchecked(-1)), (std::vector<float>{7, 8, 9}));

  // A length fault is found by both check levels.
  NDArray short_indptr = MakeArr(Shape{2}, std::vector<int64_t>{0, 3}, DType::kInt64);
  NDArray lens = MakeSparseUnchecked(StorageType::kCSR, Shape{3, 4}, vals, {short_indptr, idx});
  EXPECT_EQ(lens.sparse_fault().level, SparseFault::kShape);
  EXPECT_THROW(CheckSparseFormat(lens, false), Error);
  EXPECT_THROW(DenseOf(lens), Error);

  NDArray rows = MakeArr(Shape{2}, std::vector<int64_t>{1, 4}, DType::kInt64);
  NDArray rvals = MakeArr(Shape{2, 1}, std::vector<float>{1, 2}, DType::kFloat32);
  NDArray rsp = MakeSparseUnchecked(StorageType::kRowSparse, Shape{3, 1}, rvals, {rows});
  EXPECT_EQ(rsp.sparse_fault().level, SparseFault::kContent);
  CheckSparseFormat(rsp, false);
  EXPECT_THROW(CheckSparseFormat(rsp, true), Error);
  EXPECT_THROW(DenseOf(rsp), Error);
  EXPECT_THROW(CastStorage(rsp, StorageType::kCSR), Error);

  // Valid parts made either way carry no fault.
  NDArray ok = MakeSparseUnchecked(StorageType::kCSR, Shape{3, 4}, vals,
                                   {MakeArr(Shape{4}, std::vector<int64_t>{0, 2, 2, 3}, DType::kInt64), idx});
  EXPECT_EQ(ok.sparse_fault().level, SparseFault::kNone);
  CheckSparseFormat(ok, true);
  EXPECT_EQ(ReadArr<float>(DenseOf(ok)), (std::vector<float>{7, 0, 8, 0, 0, 0, 0, 0, 0, 9, 0, 0}));
}

TEST(Sparse, DenseOnlyUsesAreRefused) {
  NDArray z = SparseZeros(StorageType::kRowSparse, Shape{4, 2}, DType::kFloat32, Context::CPU());
  EXPECT_THROW(z.data(), Error);
  EXPECT_THROW(z.Reshape(Shape{8}), Error);
  EXPECT_THROW(z.Slice(0, 1), Error);
  std::vector<float> host(8);
  EXPECT_THROW(z.SyncCopyToCPU(host.data(), host.size() * sizeof(float)), Error);
  EXPECT_EQ(ReadArr<float>(DenseOf(z)), std::vector<float>(8, 0.0f));
}

TEST(Sparse, RecordRoundTrip) {
  NDArray d = MakeArr(Shape{3, 4}, kDense, DType::kFloat32);
  std::vector<NDArray> arrays = {CastStorage(d, StorageType::kCSR), CastStorage(d, StorageType::kRowSparse), d};
  std::string bytes = SaveNDArrayList(arrays, {});
  NDArrayFile f = LoadNDArrayList(bytes.data(), bytes.size(), "buffer");
  ASSERT_EQ(f.arrays.size(), 3u);
  EXPECT_EQ(f.arrays[0].stype(), StorageType::kCSR);
  EXPECT_EQ(f.arrays[1].stype(), StorageType::kRowSparse);
  for (const auto& a : f.arrays) EXPECT_EQ(ReadArr<float>(DenseOf(a)), kDense);
  EXPECT_EQ(SaveNDArrayList(f.arrays, {}), bytes);
  EXPECT_THROW(LoadNDArrayList(bytes.data(), bytes.size() - 9, "buffer"), Error);
}

}  // namespace
}  // namespace weft

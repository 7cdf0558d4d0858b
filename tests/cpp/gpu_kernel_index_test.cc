// The index arithmetic behind the GPU kernels (core/op/elemwise/broadcast_index.h,
// core/op/reduce/reduce_axis_set.h), checked on the CPU against plain numpy-style indexing
// so that it is tested without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/op/elemwise/broadcast_index.h"
#include "core/op/reduce/reduce_axis_set.h"

namespace weft {
namespace cuda {
namespace {

std::vector<int64_t> Unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> c(static_cast<size_t>(s.ndim()));
  for (int d = s.ndim() - 1; d >= 0; --d) {
    c[d] = i % s[d];
    i /= s[d];
  }
  return c;
}

// The flat index in `in` (right-aligned with the output) of output coordinates `oc`.
int64_t BroadcastSource(const std::vector<int64_t>& oc, const Shape& in) {
  int64_t off = 0;
  int shift = static_cast<int>(oc.size()) - in.ndim();
  for (int d = 0; d < in.ndim(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : oc[d + shift]);
  return off;
}

void ExpectBroadcastMatches(const Shape& l, const Shape& r, const Shape& o, int expected_axes) {
  BroadcastIndex idx = MakeBroadcastIndex(l, r, o, "test");
  std::string what = l.ToString() + " with " + r.ToString();
  if (expected_axes >= 0) EXPECT_EQ(idx.ndim, expected_axes) << what;
  for (int64_t i = 0; i < o.Size(); ++i) {
    int64_t lo = -1, ro = -1;
    idx.Offsets(i, &lo, &ro);
    std::vector<int64_t> oc = Unravel(i, o);
    ASSERT_EQ(lo, BroadcastSource(oc, l)) << what << " element " << i;
    ASSERT_EQ(ro, BroadcastSource(oc, r)) << what << " element " << i;
  }
}

TEST(GpuBroadcastIndex, MatchesNumpyBroadcasting) {
  ExpectBroadcastMatches({2, 3, 4}, {2, 3, 4}, {2, 3, 4}, 1);  // same shapes: one flat axis
  ExpectBroadcastMatches({5, 4}, {4}, {5, 4}, 2);              // a row against a matrix
  ExpectBroadcastMatches({5, 4}, {5, 1}, {5, 4}, 2);           // a column against a matrix
  ExpectBroadcastMatches({2, 3, 4}, {3, 1}, {2, 3, 4}, 3);
  ExpectBroadcastMatches({4, 1, 5}, {1, 3, 1}, {4, 3, 5}, 3);
  ExpectBroadcastMatches({1}, {6, 7}, {6, 7}, 1);
  ExpectBroadcastMatches(Shape::Scalar(), {3, 2}, {3, 2}, 1);
  ExpectBroadcastMatches({2, 1, 1, 3}, {1, 5, 1, 3}, {2, 5, 1, 3}, 3);
  ExpectBroadcastMatches({1, 1}, {1, 1}, {1, 1}, 0);
  ExpectBroadcastMatches({2, 3, 1, 2, 2}, {3, 4, 1, 1}, {2, 3, 4, 2, 2}, -1);
}

TEST(GpuBroadcastIndex, IncompatibleShapesAreShapeErrors) {
  try {
    MakeBroadcastIndex({3, 4}, {5, 4}, {5, 4}, "broadcast_add");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_NE(std::string(e.what()).find("broadcast_add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3,4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MakeBroadcastIndex({2, 3, 4}, {4}, {3, 4}, "x"), Error);
}

// Every input element is visited once, for the output element its kept coordinates name.
void ExpectReductionCovers(const Shape& in, const std::vector<bool>& reduce, int kept_axes, int reduced_axes) {
  op::ReduceAxisSet kept_set, reduced_set;
  op::SplitReduceAxes(in, reduce, &kept_set, &reduced_set);
  AxisSet kept = ToAxisSet(kept_set, in, "test"), reduced = ToAxisSet(reduced_set, in, "test");
  std::string what = in.ToString();
  if (kept_axes >= 0) EXPECT_EQ(kept.ndim, kept_axes) << what;
  if (reduced_axes >= 0) EXPECT_EQ(reduced.ndim, reduced_axes) << what;
  int64_t m = kept_set.Size(), k = reduced_set.Size();
  ASSERT_EQ(m * k, in.Size()) << what;
  std::vector<int64_t> owner(static_cast<size_t>(in.Size()), -1);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t r = 0; r < k; ++r) {
      int64_t off = kept.Offset(j) + reduced.Offset(r);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, in.Size());
      ASSERT_EQ(owner[off], -1) << what << ": offset " << off << " visited twice";
      owner[off] = j;
    }
  for (int64_t i = 0; i < in.Size(); ++i) {
    std::vector<int64_t> c = Unravel(i, in);
    int64_t j = 0;
    for (int d = 0; d < in.ndim(); ++d)
      if (!reduce[d]) j = j * in[d] + c[d];
    EXPECT_EQ(owner[i], j) << what << " element " << i;
  }
}

TEST(GpuReduceAxes, SplitsAndMergesAxes) {
  ExpectReductionCovers({4, 5}, {false, true}, 1, 1);  // rows: contiguous reduction
  ExpectReductionCovers({4, 5}, {true, false}, 1, 1);  // columns
  ExpectReductionCovers({2, 3, 4}, {true, true, true}, 0, 1);
  ExpectReductionCovers({2, 3, 4}, {false, true, false}, 2, 1);
  ExpectReductionCovers({2, 3, 4, 5}, {true, false, true, false}, 2, 2);
  ExpectReductionCovers({2, 3, 4, 5}, {false, true, true, false}, 2, 1);
  ExpectReductionCovers({3, 1, 4}, {false, true, false}, 1, 0);  // reducing a size-1 axis is a copy
  ExpectReductionCovers({3, 1, 4}, {true, false, true}, 0, 1);  // contiguous once the 1 is gone
  ExpectReductionCovers(Shape::Scalar(), {}, 0, 0);
}

TEST(GpuReduceAxes, TooManyAxesIsAClearError) {
  // 22 axes of size 2, alternately kept and reduced: 11 axes in each set.
  std::vector<int64_t> dims(22, 2);
  std::vector<bool> flags(22);
  for (size_t d = 0; d < flags.size(); ++d) flags[d] = d % 2 == 1;
  Shape in(dims);
  op::ReduceAxisSet kept, reduced;
  op::SplitReduceAxes(in, flags, &kept, &reduced);
  try {
    ToAxisSet(kept, in, "sum");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("'sum'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cuda
}  // namespace weft

// Offsets for blocks with lifetimes (core/base/place_by_size.h): PlaceBest keeps the order
// that ends lowest, where greedy by size lets a short-lived large block push long-lived
// ones above the peak of the bytes live at once.
#include <gtest/gtest.h>

#include <vector>

#include "core/base/place_by_size.h"

namespace weft {
namespace {

struct Block {
  size_t bytes;
  int start, end;
  size_t offset = 0;
};

size_t EndOf(const std::vector<Block>& st) {
  size_t end = 0;
  for (const Block& b : st) end = std::max(end, b.offset + b.bytes);
  return end;
}

void ExpectNoOverlap(const std::vector<Block>& st) {
  for (size_t i = 0; i < st.size(); ++i)
    for (size_t j = i + 1; j < st.size(); ++j) {
      const Block &a = st[i], &b = st[j];
      bool live_together = a.start <= b.end && b.start <= a.end;
      bool apart = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
      EXPECT_TRUE(!live_together || apart) << "blocks " << i << " and " << j;
    }
}

// A value live through the whole step (0-6), a large temporary of one pass (2-3), and two
// values of the backward's last step (6). At most 144 bytes are live at once (step 6).
std::vector<Block> NestedWithATemporary() {
  return {{32, 0, 6}, {96, 2, 3}, {80, 6, 6}, {32, 6, 6}};
}

TEST(PlaceBySize, LargestFirstCanEndAboveThePeak) {
  std::vector<Block> st = NestedWithATemporary();
  PlaceBySize(&st, {0, 1, 2, 3});
  ExpectNoOverlap(st);
  // The temporary goes first, at 0; the long-lived value above it (96); the 80 bytes of
  // step 6 at 0; the last 32 find no gap below 128.
  EXPECT_EQ(st[1].offset, 0u);
  EXPECT_EQ(st[0].offset, 96u);
  EXPECT_EQ(EndOf(st), 160u);
}

TEST(PlaceBySize, BestOfThreeOrdersReachesThePeak) {
  std::vector<Block> st = NestedWithATemporary();
  EXPECT_EQ(PlaceBest(&st, {0, 1, 2, 3}), 144u);
  ExpectNoOverlap(st);
  EXPECT_EQ(EndOf(st), 144u);
  EXPECT_EQ(st[0].offset, 0u);  // the longest-lived at the bottom
}

TEST(PlaceBySize, BestKeepsLargestFirstWhenItIsLowest) {
  // Two short large blocks at different times and a small long one: by size they share
  // offset 0 and the small one sits above (96 + 16); longest first puts the small one
  // under both, to the same end. Ties keep the greedy order's offsets.
  std::vector<Block> st = {{96, 0, 1}, {96, 3, 4}, {16, 0, 4}};
  EXPECT_EQ(PlaceBest(&st, {0, 1, 2}), 112u);
  ExpectNoOverlap(st);
  EXPECT_EQ(st[0].offset, 0u);
  EXPECT_EQ(st[1].offset, 0u);
  EXPECT_EQ(st[2].offset, 96u);
}

TEST(PlaceBySize, LimitLeavesOutWhatDoesNotFit) {
  // A space of 100 bytes that a block lives in until step 2: of three blocks from step 3
  // on, the two that fit share it by lifetime and the third, live with both, is returned.
  std::vector<Block> st = {{100, 0, 2}, {60, 3, 4}, {40, 3, 6}, {50, 4, 5}};
  std::vector<int> left = PlaceBySize(&st, {1, 2, 3}, {0}, 100);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], 3);
  EXPECT_EQ(st[1].offset, 0u);
  EXPECT_EQ(st[2].offset, 60u);
}

}  // namespace
}  // namespace weft

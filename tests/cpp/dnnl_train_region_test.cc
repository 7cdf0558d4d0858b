// The oneDNN training region's own memory plan: "saved" holds exactly the blocks that live
// from the forward into the backward, and recomputing BatchNorm and residual-add results in
// the backward (WEFT_EXEC_DNNL_TRAIN_RECOMPUTE) takes their bytes out of it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/op/dnnl/dnnl_train_region.h"

namespace weft {
namespace op {
namespace {

TrainRegionSpec::Unit Conv1x1(int src, int dst, int weight) {
  TrainRegionSpec::Unit u;
  u.kind = TrainRegionSpec::Kind::kConv;
  u.name = "conv" + std::to_string(src);
  u.src = src;
  u.dst = dst;
  u.weight = weight;
  u.conv.kernel = Shape{1, 1};
  u.conv.stride = Shape{1, 1};
  u.conv.dilate = Shape{1, 1};
  u.conv.pad = Shape{0, 0};
  u.conv.num_filter = 16;
  u.conv.no_bias = true;
  return u;
}

TrainRegionSpec::Unit Bn(int src, int dst, int first_input, bool relu) {
  TrainRegionSpec::Unit u;
  u.kind = TrainRegionSpec::Kind::kBatchNorm;
  u.name = "bn" + std::to_string(src);
  u.src = src;
  u.dst = dst;
  u.gamma = first_input;
  u.beta = first_input + 1;
  u.moving_mean = first_input + 2;
  u.moving_var = first_input + 3;
  u.fix_gamma = false;
  u.relu = relu;
  return u;
}

// conv 1x1 -> BatchNorm+relu -> conv 1x1 -> BatchNorm+relu, 16 channels of 8x8 at batch 4
// (the blocked layout, where the region's own BatchNorm loops run): values of 16 KiB.
TrainRegionSpec TwoConvBnRelu() {
  const Shape s{4, 16, 8, 8};
  TrainRegionSpec spec;
  spec.values = {{s, 0, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, 0}};
  spec.num_inputs = 11;
  spec.outputs = {4};
  spec.units = {Conv1x1(0, 1, 1), Bn(1, 2, 2, true), Conv1x1(2, 3, 6), Bn(3, 4, 7, true)};
  return spec;
}

// conv -> BatchNorm+relu -> conv -> BatchNorm, plus the region's input, relu, then a
// convolution of that: a residual block whose output the region reads again.
TrainRegionSpec Residual() {
  const Shape s{4, 16, 8, 8};
  TrainRegionSpec spec;
  spec.values = {{s, 0, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, -1}, {s, -1, 0}};
  spec.num_inputs = 12;
  spec.outputs = {6};
  TrainRegionSpec::Unit add;
  add.kind = TrainRegionSpec::Kind::kAdd;
  add.name = "add";
  add.src = 4;
  add.src2 = 0;
  add.dst = 5;
  add.relu = true;
  spec.units = {Conv1x1(0, 1, 1), Bn(1, 2, 2, true), Conv1x1(2, 3, 6), Bn(3, 4, 7, false), add, Conv1x1(5, 6, 11)};
  return spec;
}

int64_t SavedBytes(const char* recompute, TrainRegionSpec spec = TwoConvBnRelu()) {
  if (recompute) setenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE", recompute, 1);
  DnnlTrainRegion region(std::move(spec));
  unsetenv("WEFT_EXEC_DNNL_TRAIN_RECOMPUTE");
  return region.saved_floats() * static_cast<int64_t>(sizeof(float));
}

TEST(DnnlTrainRegion, SavedHoldsExactlyWhatTheBackwardReads) {
  if (!DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  constexpr int64_t kValue = 4 * 16 * 8 * 8 * 4, kStats = 4 * 64;  // mean and var of two BatchNorms
  // Both BatchNorms' sources and their statistics. The first relu's result (the second
  // convolution's source) is recomputed from its source in the backward; the second's is
  // the region's output, which the backward reads from there; temporaries, the weights in
  // oneDNN's layout, scratchpads and gradients fit in the place of values not yet made
  // or already read for the last time, or go to the work space.
  EXPECT_EQ(SavedBytes(nullptr), 2 * kValue + kStats);
  EXPECT_EQ(SavedBytes("1"), 2 * kValue + kStats);
  // Without recomputing, the first relu's result is kept from the forward.
  EXPECT_EQ(SavedBytes("0"), 3 * kValue + kStats);
  // The residual block: both BatchNorms' sources always; the first relu's result below
  // level 1; the block's output (the last convolution's source) below level 2, the
  // default, which recomputes it from the second BatchNorm's source and the input.
  EXPECT_EQ(SavedBytes("0", Residual()), 4 * kValue + kStats);
  EXPECT_EQ(SavedBytes("1", Residual()), 3 * kValue + kStats);
  EXPECT_EQ(SavedBytes(nullptr, Residual()), 2 * kValue + kStats);
}

TEST(DnnlTrainRegion, SavedHoldsNoCopyOfTheInputsOrTheOutputs) {
  if (!DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  // conv -> relu, reading a node input and read outside: the backward takes the
  // convolution's source from the input and the relu's result from the output, so saved
  // keeps nothing (one cache line, the least an output has); the relu runs in place of the
  // convolution's result, and the reordered copies are temporaries of the work space.
  const Shape s{4, 16, 8, 8};
  TrainRegionSpec spec;
  spec.values = {{s, 0, -1}, {s, -1, -1}, {s, -1, 0}};
  spec.num_inputs = 2;
  spec.outputs = {2};
  TrainRegionSpec::Unit relu;
  relu.kind = TrainRegionSpec::Kind::kRelu;
  relu.name = "relu";
  relu.src = 1;
  relu.dst = 2;
  spec.units = {Conv1x1(0, 1, 1), relu};
  DnnlTrainRegion region(spec);
  EXPECT_EQ(region.saved_floats() * static_cast<int64_t>(sizeof(float)), 64);
  // The forward's work: the input reordered into the blocked layout, the convolution's
  // result (with the relu's in place) and the weights in oneDNN's layout.
  EXPECT_GE(region.work_floats(false) * static_cast<int64_t>(sizeof(float)), 2 * 4 * 16 * 8 * 8 * 4);
}

TEST(DnnlTrainRegion, BackwardTakesTheMemoryOfInputsItHasReadForTheLastTime) {
  if (!DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  // conv -> relu as above: the backward node reads the incoming gradient (input 0), saved
  // (1), the region's input and the weights (2, 3) and the relu's result read back (4);
  // it writes the input's and the weights' gradients (outputs 0, 1), work (2), then spares.
  const Shape s{4, 16, 8, 8};
  constexpr int64_t kValue = 4 * 16 * 8 * 8 * 4;
  TrainRegionSpec spec;
  spec.values = {{s, 0, -1}, {s, -1, -1}, {s, -1, 0}};
  spec.num_inputs = 2;
  spec.outputs = {2};
  TrainRegionSpec::Unit relu;
  relu.kind = TrainRegionSpec::Kind::kRelu;
  relu.name = "relu";
  relu.src = 1;
  relu.dst = 2;
  spec.units = {Conv1x1(0, 1, 1), relu};
  DnnlTrainRegion region(spec);
  // The incoming gradient, of the input's shape, is read once (taken through the relu into
  // the blocked layout) before the input's gradient is written: that gradient may take its
  // memory. The relu's result, read in that same step, gives its memory to a spare output
  // of its shape, where the gradient taken in is written in place of it.
  std::vector<std::pair<int, int>> inplace = {{0, 0}, {4, 3}};
  EXPECT_EQ(region.backward_inplace(), inplace);
  ASSERT_EQ(region.spare_shapes().size(), 1u);
  EXPECT_EQ(region.spare_shapes()[0], s);
  // Work holds one blocked value at a time (the input reordered for the weights' gradient,
  // then the input's gradient before it is stored) and the weights in oneDNN's layouts:
  // no copy of the relu's result, nor of the incoming gradient.
  const int64_t work = region.work_floats(true) * static_cast<int64_t>(sizeof(float));
  EXPECT_GE(work, kValue);
  EXPECT_LT(work, 2 * kValue);
}

}  // namespace
}  // namespace op
}  // namespace weft

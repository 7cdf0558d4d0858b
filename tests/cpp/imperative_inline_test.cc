// Which thread runs an eager call whose inputs are ready: the calling thread when the
// operator's estimate of its time (FEstimateNs) is within WEFT_ENGINE_INLINE_NS (40 us by
// default) whatever its bytes, a worker when the estimate is larger however few its bytes;
// an operator without an estimate goes by its bytes (WEFT_ENGINE_INLINE_BYTES, 64 KiB), and
// so does every executor step. Either way the call waits for pending writes to its inputs,
// and an error it throws is raised at the next wait.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"
#include "core/op/work_estimate.h"
#include "core/profiler/profiler.h"
#include "op_test_util.h"

namespace weft {
namespace {

std::thread::id g_ran_on;
double g_estimate_ns = 0.0;

// Copies its input, noting the thread it ran on.
void CopyNotingThread(const NodeAttrs&, const OpContext&, const std::vector<TBlob>& in, const std::vector<OpReq>&,
                      const std::vector<TBlob>& out) {
  g_ran_on = std::this_thread::get_id();
  std::memcpy(out[0].dptr, in[0].dptr, in[0].Bytes());
}

bool SameShapes(const NodeAttrs&, std::vector<Shape>* in, std::vector<Shape>* out) {
  (*out)[0] = (*in)[0];
  return true;
}

WEFT_REGISTER_OP(_test_inline_estimated)
    .Describe("Copies its input; estimates its time as the test says.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "input")
    .SetAttr<FInferShape>("FInferShape", SameShapes)
    .SetAttr<FCompute>("FCompute<cpu>", CopyNotingThread)
    .SetAttr<FEstimateNs>("FEstimateNs", [](const NodeAttrs&, const std::vector<TBlob>&,
                                            const std::vector<TBlob>&) { return g_estimate_ns; });

WEFT_REGISTER_OP(_test_inline_unestimated)
    .Describe("Copies its input, with no estimate of its time.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "input")
    .SetAttr<FInferShape>("FInferShape", SameShapes)
    .SetAttr<FCompute>("FCompute<cpu>", CopyNotingThread);

WEFT_REGISTER_OP(_test_inline_throws)
    .Describe("Fails when it runs, estimated cheap.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "input")
    .SetAttr<FInferShape>("FInferShape", SameShapes)
    .SetAttr<FCompute>("FCompute<cpu>",
                       [](const NodeAttrs&, const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>&,
                          const std::vector<TBlob>&) {
                         g_ran_on = std::this_thread::get_id();
                         Throw(ErrorKind::kValue, "_test_inline_throws: failing as asked");
                       })
    .SetAttr<FEstimateNs>("FEstimateNs",
                          [](const NodeAttrs&, const std::vector<TBlob>&, const std::vector<TBlob>&) { return 1.0; });

class ImperativeInline : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* engine = std::getenv("WEFT_ENGINE_TYPE");
    if (engine != nullptr && std::string(engine).find("Naive") != std::string::npos)
      GTEST_SKIP() << "the naive engine runs every call on the calling thread";
    for (const char* knob : {"WEFT_ENGINE_INLINE_BYTES", "WEFT_ENGINE_INLINE_NS"})
      if (std::getenv(knob) != nullptr) GTEST_SKIP() << knob << " is set: the defaults are what is tested";
  }

  // Runs `op` on `in` (ready) and returns its output, read back; *ran_here says whether it
  // ran on this thread.
  static std::vector<double> RunOnReady(const std::string& op, const NDArray& in, bool* ran_here) {
    in.WaitToRead();
    g_ran_on = std::thread::id();
    NDArray out = test::Run1(op, {in});
    out.WaitToRead();
    *ran_here = g_ran_on == std::this_thread::get_id();
    return test::ToVector(out);
  }
};

// 65536 floats in and out: 512 KiB, eight times the byte limit.
const Shape kLarge{65536};
const Shape kSmall{16};

TEST_F(ImperativeInline, CheapEstimateRunsOnTheCallerWhateverItsBytes) {
  g_estimate_ns = 5000.0;
  std::vector<double> values = test::RandomValues(kLarge.Size(), -1, 1, 3);
  NDArray in = test::MakeArray(kLarge, values, DType::kFloat32);
  bool here = false;
  std::vector<double> out = RunOnReady("_test_inline_estimated", in, &here);
  EXPECT_TRUE(here);
  test::ExpectAllNear(out, test::ToVector(in), 0, 0);
}

TEST_F(ImperativeInline, CostlyEstimateGoesToAWorkerHoweverFewItsBytes) {
  g_estimate_ns = 1e6;
  NDArray in = test::MakeArray(kSmall, test::RandomValues(kSmall.Size(), -1, 1, 4), DType::kFloat32);
  bool here = true;
  std::vector<double> out = RunOnReady("_test_inline_estimated", in, &here);
  EXPECT_FALSE(here);
  test::ExpectAllNear(out, test::ToVector(in), 0, 0);
}

TEST_F(ImperativeInline, WithoutAnEstimateTheBytesDecide) {
  NDArray small = test::MakeArray(kSmall, test::RandomValues(kSmall.Size(), -1, 1, 5), DType::kFloat32);
  NDArray large = test::MakeArray(kLarge, test::RandomValues(kLarge.Size(), -1, 1, 6), DType::kFloat32);
  bool here = false;
  test::ExpectAllNear(RunOnReady("_test_inline_unestimated", small, &here), test::ToVector(small), 0, 0);
  EXPECT_TRUE(here);
  test::ExpectAllNear(RunOnReady("_test_inline_unestimated", large, &here), test::ToVector(large), 0, 0);
  EXPECT_FALSE(here);
}

TEST_F(ImperativeInline, ExecutorStepsGoByTheirBytes) {
  g_estimate_ns = 5000.0;
  NDArray in = test::MakeArray(kLarge, test::RandomValues(kLarge.Size(), -1, 1, 7), DType::kFloat32);
  bool here = true;
  std::vector<double> out;
  {
    profiler::SymbolicScope as_executor;
    out = RunOnReady("_test_inline_estimated", in, &here);
  }
  EXPECT_FALSE(here);
  test::ExpectAllNear(out, test::ToVector(in), 0, 0);
}

TEST_F(ImperativeInline, CheapCallWaitsForAPendingWriteOfItsInput) {
  g_estimate_ns = 5000.0;
  NDArray in = test::MakeArray(kLarge, std::vector<double>(kLarge.Size(), 1.0), DType::kFloat32);
  in.WaitToRead();
  // A slow write of 7s into the input, still running when the call is made.
  std::atomic<bool> started{false};
  engine::Engine::Get()->PushSync(
      [&, blob = in.data()](engine::RunContext) {
        started = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        float* p = static_cast<float*>(blob.dptr);
        for (int64_t i = 0; i < blob.Size(); ++i) p[i] = 7.0f;
      },
      Context::CPU(), {}, {in.var()});
  while (!started) std::this_thread::yield();
  g_ran_on = std::thread::id();
  NDArray out = test::Run1("_test_inline_estimated", {in});
  test::ExpectAllNear(test::ToVector(out), std::vector<double>(kLarge.Size(), 7.0), 0, 0);
  // It could not run at the call: it ran on the worker that finished the write.
  EXPECT_NE(g_ran_on, std::this_thread::get_id());
}

TEST_F(ImperativeInline, ErrorOfACallRunOnTheCallerIsRaisedAtTheNextWait) {
  NDArray in = test::MakeArray(kLarge, std::vector<double>(kLarge.Size(), 1.0), DType::kFloat32);
  in.WaitToRead();
  g_ran_on = std::thread::id();
  NDArray out = test::Run1("_test_inline_throws", {in});
  EXPECT_EQ(g_ran_on, std::this_thread::get_id());
  try {
    out.WaitToRead();
    FAIL() << "the failure of _test_inline_throws was lost";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failing as asked"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft

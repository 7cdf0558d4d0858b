// The GPU kernels of pointwise fusion (CUDA builds only). NVRTC needs no GPU, so the
// generated sources are compiled here for sm_90 on any machine; the tests that launch
// kernels compare fused against unfused and CPU results and skip when no GPU is visible.
#ifdef WEFT_USE_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/executor/executor.h"
#include "core/graph/symbol.h"
#include "core/op/fused/fused_codegen.h"
#include "core/op/fused/fused_nvrtc.h"
#include "fused_test_util.h"
#include "op_test_util.h"

namespace weft {
namespace {

using op::FusedProgram;
using test::Contains;
using test::FusedChain;
using test::FusedStep;
using test::In;
using test::Val;

#define REQUIRE_GPU() \
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible"

enum class Kind { kUnary, kBinary, kScalar };

Kind KindOf(const std::string& name) {
  const Op* o = Op::Get(name);
  if (Op::GetAttr<PointwiseFn>("FPointwise")[o].scalar) return Kind::kScalar;
  return o->NumInputs(NodeAttrs()) == 2 ? Kind::kBinary : Kind::kUnary;
}

// Every pointwise operator (the test-only one aside), by name.
std::vector<std::string> PointwiseOps() {
  std::vector<std::string> names;
  for (const std::string& name : Op::ListNames())
    if (Op::GetAttr<PointwiseFn>("FPointwise").Contains(Op::Get(name)) && name.rfind("_test", 0) != 0)
      names.push_back(name);
  return names;
}

// One step of `name` on the inputs (unary and scalar read input 0, binary inputs 0 and 1),
// or, when `prev` >= 0, on the value of step `prev` (and input 1).
FusedProgram::Step StepOf(const std::string& name, int prev) {
  FusedProgram::Ref a = prev < 0 ? In(0) : Val(prev), b = In(1);
  switch (KindOf(name)) {
    case Kind::kUnary: return FusedStep(name, a);
    case Kind::kBinary: return FusedStep(name, a, &b);
    default: return FusedStep(name, a, nullptr, 0.75);
  }
}

// All pointwise operators in one chain: the largest kernel the generator makes from them.
FusedProgram EveryOperator() {
  FusedProgram p;
  p.num_inputs = 2;
  for (const std::string& name : PointwiseOps()) p.steps.push_back(StepOf(name, static_cast<int>(p.steps.size()) - 1));
  return p;
}

struct Named {
  std::string name;
  FusedProgram program;
};

std::vector<Named> Programs() {
  std::vector<Named> out;
  FusedProgram unary;
  unary.num_inputs = 1;
  unary.steps = {FusedStep("sin", In(0)), FusedStep("exp", Val(0)), FusedStep("tanh", Val(1)),
                 FusedStep("relu", Val(2))};
  out.push_back({"fused_unary", unary});
  FusedProgram binary;
  binary.num_inputs = 2;
  FusedProgram::Ref x = In(0), y = In(1);
  binary.steps = {FusedStep("elemwise_add", In(0), &y), FusedStep("elemwise_mul", Val(0), &x),
                  FusedStep("_maximum", Val(1), &y), FusedStep("_mod", Val(2), &y)};
  out.push_back({"fused_binary", binary});
  FusedProgram scalar;
  scalar.num_inputs = 1;
  scalar.steps = {FusedStep("_mul_scalar", In(0), nullptr, 2), FusedStep("_rminus_scalar", Val(0), nullptr, 1),
                  FusedStep("_rpower_scalar", Val(1), nullptr, 3), FusedStep("_rmod_scalar", Val(2), nullptr, 5),
                  FusedStep("_greater_scalar", Val(3), nullptr, 0.5)};
  out.push_back({"fused_scalar", scalar});
  out.push_back({"fused_mixed", FusedChain()});
  out.push_back({"fused_every_operator", EveryOperator()});
  return out;
}

TEST(FusedNvrtc, KnowsTheBuildArchitecture) {
  std::vector<int> archs = op::NvrtcArchitectures();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

// Unary, binary, scalar and mixed programs, float and double, writing and adding: each
// compiles to PTX for sm_90 with the one kernel entry. (The CPU kernel takes inputs of the
// output's shape only, broadcast operators are never fused, so neither is the GPU one.)
TEST(FusedNvrtc, GeneratedSourcesCompileToPtxForSm90) {
  for (const Named& n : Programs())
    for (DType t : {DType::kFloat32, DType::kFloat64})
      for (bool add_to : {false, true}) {
        std::string what = n.name + " " + DTypeName(t) + (add_to ? " add" : " write");
        std::string src = op::FusedCudaSource(n.program, t, add_to, n.name);
        size_t before = op::NvrtcCompileCount();
        std::string ptx;
        try {
          ptx = op::NvrtcCompile(src, n.name, 90, false);
        } catch (const Error& e) {
          ADD_FAILURE() << what << ": " << e.what() << "\n" << src;
          continue;
        }
        EXPECT_EQ(op::NvrtcCompileCount(), before + 1);
        EXPECT_TRUE(Contains(ptx, ".target sm_90")) << what;
        EXPECT_TRUE(Contains(ptx, ".entry weft_fused_pointwise")) << what;
        EXPECT_TRUE(Contains(ptx, t == DType::kFloat32 ? "ld.global.f32" : "ld.global.f64")) << what;
        EXPECT_EQ(ptx.back(), '\0') << what << ": PTX is loaded as a null-terminated string";
      }
}

TEST(FusedNvrtc, CompilesCubinsForSm90) {
  std::string src = op::FusedCudaSource(FusedChain(), DType::kFloat32, false, "fused_mixed");
  std::string cubin = op::NvrtcCompile(src, "fused_mixed", 90, true);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
}

TEST(FusedNvrtc, CompileErrorsNameTheNodeAndGiveTheLog) {
  FusedProgram p = FusedChain();
  p.steps[3].cuda = "return undefined_function(a);";
  std::string src = op::FusedCudaSource(p, DType::kFloat32, false, "fused_broken");
  for (int via_cache = 0; via_cache < 2; ++via_cache) {
    Error e = test::CaughtError([&] {
      if (via_cache) op::FusedKernel(src, "fused_broken", 90);  // fails before touching a device
      else op::NvrtcCompile(src, "fused_broken", 90, false);
    });
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_TRUE(Contains(e.what(), "_fused_pointwise 'fused_broken': NVRTC could not compile")) << e.what();
    EXPECT_TRUE(Contains(e.what(), via_cache ? "sm_90" : "compute_90")) << e.what();
    EXPECT_TRUE(Contains(e.what(), "undefined_function")) << e.what();  // NVRTC's log
  }
  Error e = test::CaughtError([&] { op::NvrtcCompile(op::FusedCudaSource(FusedChain(), DType::kFloat32, false, "f"), "f", 11, false); });
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_TRUE(Contains(e.what(), "cannot compile for compute capability 11")) << e.what();
}

// ---------------------------------------------------------------- on a GPU
// Equal within rtol/atol, NaN only where the other is NaN.
void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (!ok) {
      ++reported;
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
    }
  }
}

TEST(FusedGpu, EveryOperatorMatchesTheCpu) {
  REQUIRE_GPU();
  const int64_t n = 1000;
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    NDArray x = test::MakeArray({n}, test::RandomValues(n, 0.1, 0.9, 1), t);
    NDArray y = test::MakeArray({n}, test::RandomValues(n, 0.5, 1.5, 2), t);
    double rtol = t == DType::kFloat32 ? 2e-5 : 1e-10;
    for (const std::string& name : PointwiseOps()) {
      FusedProgram p;
      p.num_inputs = 2;
      p.steps = {StepOf(name, -1)};
      std::string what = name + " " + DTypeName(t);
      NDArray cpu = test::RunFused(p, "fused_" + name, {x, y}, Context::CPU());
      NDArray gpu = test::RunFused(p, "fused_" + name, {x, y}, Context::GPU(0));
      EXPECT_EQ(gpu.ctx(), Context::GPU(0));
      ExpectClose(test::ToVector(gpu), test::ToVector(cpu), rtol, rtol, what);
    }
  }
}

graph::Symbol Call(const std::string& name, const std::vector<graph::Symbol>& args, const std::string& node,
                   KwArgs params = {}) {
  graph::Symbol s = graph::Symbol::CreateFunctor(Op::Get(name), std::move(params));
  s.Compose(args, {}, node);
  return s;
}

// tanh(exp(sin(x) * scalar - y) + z).
graph::Symbol Pointwise(const std::string& scalar) {
  graph::Symbol x = graph::Symbol::Variable("x"), y = graph::Symbol::Variable("y"), z = graph::Symbol::Variable("z");
  graph::Symbol h = Call("_mul_scalar", {Call("sin", {x}, "s")}, "twice", {{"scalar", scalar}});
  h = Call("exp", {Call("elemwise_sub", {h, y}, "minus")}, "e");
  return Call("tanh", {Call("elemwise_add", {h, z}, "plus")}, "t");
}

struct GpuRun {
  std::vector<double> out, gx;
  size_t chains, nodes;
};

// Forward (and, when training, backward adding into a gradient of ones) on `ctx`.
GpuRun RunGraph(Context ctx, bool fuse, bool train, DType t, const std::string& scalar = "2", int repeats = 1) {
  if (!fuse) setenv("WEFT_EXEC_FUSE", "0", 1);
  const int64_t n = 100003;
  std::vector<double> xv(n), yv(n), zv(n);
  for (int64_t i = 0; i < n; ++i) {
    xv[i] = std::sin(0.001 * i);
    yv[i] = std::cos(0.002 * i);
    zv[i] = 0.5 - 0.00001 * i;
  }
  NDArray gx = test::MakeArray({n}, std::vector<double>(n, 1.0), t).Copy(ctx);
  std::vector<NDArray> args{test::MakeArray({n}, xv, t).Copy(ctx), test::MakeArray({n}, yv, t).Copy(ctx),
                            test::MakeArray({n}, zv, t).Copy(ctx)};
  std::vector<OpReq> req{train ? OpReq::kAddTo : OpReq::kNullOp, OpReq::kNullOp, OpReq::kNullOp};
  executor::Executor ex(Pointwise(scalar), ctx, args, {gx, NDArray(), NDArray()}, req, {});
  unsetenv("WEFT_EXEC_FUSE");
  for (int r = 0; r < repeats; ++r) {
    ex.Forward(train);
    if (train) ex.Backward({});
  }
  return {test::ToVector(ex.outputs()[0]), test::ToVector(gx), ex.num_fused_chains(), ex.num_forward_nodes()};
}

TEST(FusedGpu, ExecutorChainMatchesUnfusedAndCpu) {
  REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    double tol = t == DType::kFloat32 ? 1e-5 : 1e-12;
    GpuRun fused = RunGraph(Context::GPU(0), true, false, t), plain = RunGraph(Context::GPU(0), false, false, t);
    GpuRun cpu = RunGraph(Context::CPU(), true, false, t);
    EXPECT_EQ(fused.chains, 1u);
    EXPECT_EQ(fused.nodes, 1u);
    EXPECT_EQ(plain.chains, 0u);
    ExpectClose(fused.out, plain.out, tol, tol, std::string("fused vs unfused on the GPU, ") + DTypeName(t));
    ExpectClose(fused.out, cpu.out, tol, tol, std::string("GPU vs CPU, ") + DTypeName(t));
  }
}

TEST(FusedGpu, TrainingAccumulatesLikeTheUnfusedGraph) {
  REQUIRE_GPU();
  GpuRun fused = RunGraph(Context::GPU(0), true, true, DType::kFloat32);
  GpuRun plain = RunGraph(Context::GPU(0), false, true, DType::kFloat32);
  EXPECT_GE(fused.chains, 1u);
  ExpectClose(fused.out, plain.out, 1e-5, 1e-5, "forward");
  ExpectClose(fused.gx, plain.gx, 1e-5, 1e-5, "accumulated gradient");
}

TEST(FusedGpu, SteadyStateCompilesNothing) {
  REQUIRE_GPU();
  // Work an earlier test left in the engine must not compile inside the window below.
  engine::Engine::Get()->WaitForAll();
  RunGraph(Context::GPU(0), true, false, DType::kFloat32);
  size_t compiled = op::NvrtcCompileCount();
  // The same graph again, run many times, and one differing only in its scalar: the
  // kernels are the cached ones.
  GpuRun again = RunGraph(Context::GPU(0), true, false, DType::kFloat32, "2", 10);
  GpuRun other = RunGraph(Context::GPU(0), true, false, DType::kFloat32, "-3", 3);
  EXPECT_EQ(op::NvrtcCompileCount(), compiled);
  GpuRun other_cpu = RunGraph(Context::CPU(), true, false, DType::kFloat32, "-3");
  ExpectClose(other.out, other_cpu.out, 1e-5, 1e-5, "scalar -3");
  EXPECT_EQ(again.chains, 1u);
}

}  // namespace
}  // namespace weft

#endif  // WEFT_USE_CUDA

// The GPU side of pointwise fusion that needs no GPU: the CUDA source generated from a
// fused program (core/op/fused/fused_codegen.h), the CUDA code every pointwise operator
// carries, and the fusion pass's choice of chains per device. Runs in every build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/executor/passes.h"
#include "core/graph/symbol.h"
#include "core/op/elemwise/compute.h"
#include "core/op/fused/fused_codegen.h"
#include "core/op/fused/fused_pointwise.h"
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

// Pointwise on the CPU but without CUDA code: keeps GPU chains apart in the tests below.
WEFT_REGISTER_OP(_test_fused_no_cuda)
    .Describe("An identity that exists only in the fusion tests.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "The input")
    .SetAttr<PointwiseFn>("FPointwise", op::PointwiseTile<op::identity_op, op::PointwiseKind::kUnary>::Fn());

TEST(FusedCodegen, EveryPointwiseOperatorHasCudaCode) {
  const auto& pointwise = Op::GetAttr<PointwiseFn>("FPointwise");
  const auto& cuda = Op::GetAttr<std::string>("FPointwiseCuda");
  size_t count = 0;
  for (const std::string& name : Op::ListNames()) {
    const Op* o = Op::Get(name);
    if (!pointwise.Contains(o) || name.rfind("_test", 0) == 0) continue;
    ++count;
    const std::string body = cuda.Get(o, std::string());
    EXPECT_FALSE(body.empty()) << name << " is pointwise but has no CUDA code";
    EXPECT_TRUE(Contains(body, "return")) << name << ": " << body;
  }
  // The unary, binary, scalar and comparison families (unary.cc, binary.cc, scalar.cc, logic.cc).
  EXPECT_GE(count, 60u);
}

TEST(FusedCodegen, CudaBodiesComeFromTheFunctors) {
  const auto& cuda = Op::GetAttr<std::string>("FPointwiseCuda");
  EXPECT_EQ(cuda[Op::Get("elemwise_add")], "return a + b;");
  EXPECT_EQ(cuda[Op::Get("sigmoid")], "typedef T M; M x = a; return M(1) / (M(1) + math::exp(-x));");
  EXPECT_EQ(cuda[Op::Get("floor")], "return math::floor(a);");
  EXPECT_EQ(cuda[Op::Get("_greater")], "return T(a > b);");
  // The `_r` forms swap the arguments: s - x.
  EXPECT_EQ(cuda[Op::Get("_rminus_scalar")], "T swapped_ = a; a = b; b = swapped_; return a - b;");
  EXPECT_EQ(cuda[Op::Get("_minus_scalar")], "return a - b;");
}

TEST(FusedCodegen, KernelFollowsTheProgram) {
  FusedProgram p = FusedChain();
  std::string src = op::FusedCudaSource(p, DType::kFloat32, false, "fused_s_twice_minus_e_plus_t");
  EXPECT_TRUE(Contains(src, "#define WEFT_FUSED_T float\n")) << src;
  EXPECT_TRUE(Contains(src, "extern \"C\" __global__ void weft_fused_pointwise(long long n, weft_fused::T* out, "
                            "const weft_fused::T* in0, const weft_fused::T* in1, const weft_fused::T* in2, "
                            "double s1)"))
      << src;
  // Each step reads its inputs, the previous value or its scalar, converted to T.
  EXPECT_TRUE(Contains(src, "const T v0 = weft_fused::step0(in0[i], T(0));")) << src;
  EXPECT_TRUE(Contains(src, "const T v1 = weft_fused::step1(v0, T(s1));")) << src;
  EXPECT_TRUE(Contains(src, "const T v2 = weft_fused::step2(v1, in1[i]);")) << src;
  EXPECT_TRUE(Contains(src, "const T v4 = weft_fused::step4(v3, in2[i]);")) << src;
  EXPECT_TRUE(Contains(src, "out[i] = v5;")) << src;
  EXPECT_TRUE(Contains(src, "__device__ __forceinline__ T step5(T a, T b) { typedef T M; M x = a; return math::tanh(x); }"))
      << src;
  EXPECT_TRUE(Contains(src, "i += stride")) << src;  // a grid-stride loop
  // Its main part: four elements a stride apart, every load before the first step.
  EXPECT_TRUE(Contains(src, "for (; i + 3 * stride < n; i += 4 * stride) {")) << src;
  size_t last_load = src.find("const T x2_3 = in2[i + 3 * stride];"), first_step = src.find("const T v0_0 = ");
  ASSERT_NE(last_load, std::string::npos) << src;
  ASSERT_NE(first_step, std::string::npos) << src;
  EXPECT_LT(last_load, first_step) << src;
  EXPECT_TRUE(Contains(src, "const T v0_0 = weft_fused::step0(x0_0, T(0));")) << src;
  EXPECT_TRUE(Contains(src, "const T v2_1 = weft_fused::step2(v1_1, x1_1);")) << src;
  EXPECT_TRUE(Contains(src, "out[i + 2 * stride] = v5_2;")) << src;
  EXPECT_EQ(op::FusedScalars(p), std::vector<double>{2.0});

  std::string dbl = op::FusedCudaSource(p, DType::kFloat64, true, "n");
  EXPECT_TRUE(Contains(dbl, "#define WEFT_FUSED_T double\n"));
  EXPECT_TRUE(Contains(dbl, "out[i] += v5;"));
  EXPECT_TRUE(Contains(dbl, "out[i + 3 * stride] += v5_3;"));
  EXPECT_FALSE(Contains(dbl, "out[i] = v5;"));
}

TEST(FusedCodegen, SourceIgnoresScalarValuesAndNodeNames) {
  FusedProgram a = FusedChain(), b = FusedChain();
  b.steps[1].scalar = -7.5;
  EXPECT_EQ(op::FusedCudaSource(a, DType::kFloat32, false, "f"), op::FusedCudaSource(b, DType::kFloat32, false, "g"));
  EXPECT_EQ(op::FusedScalars(b), std::vector<double>{-7.5});
  // A binary step has no scalar even though its operator might (none of the chain's).
  FusedProgram two;
  two.num_inputs = 2;
  FusedProgram::Ref x = In(0);
  two.steps = {FusedStep("_rpower_scalar", In(1), nullptr, 3.0), FusedStep("_plus_scalar", Val(0), nullptr, 1.0),
               FusedStep("elemwise_mul", Val(1), &x)};
  std::string src = op::FusedCudaSource(two, DType::kFloat64, false, "f");
  EXPECT_TRUE(Contains(src, "double s0, double s1)")) << src;
  EXPECT_TRUE(Contains(src, "weft_fused::step0(in1[i], T(s0))")) << src;
  EXPECT_TRUE(Contains(src, "weft_fused::step2(v1, in0[i])")) << src;
  EXPECT_EQ(op::FusedScalars(two), (std::vector<double>{3.0, 1.0}));
}

TEST(FusedCodegen, ErrorsNameTheNodeAndTheProblem) {
  FusedProgram p = FusedChain();
  Error e = test::CaughtError([&] { op::FusedCudaSource(p, DType::kInt32, false, "fused_a_b"); });
  EXPECT_EQ(e.kind(), ErrorKind::kType);
  EXPECT_TRUE(Contains(e.what(), "fused_a_b")) << e.what();
  EXPECT_TRUE(Contains(e.what(), "float32 and float64, got int32")) << e.what();

  p.steps[3] = FusedStep("_test_fused_no_cuda", Val(2));
  e = test::CaughtError([&] { op::FusedCudaSource(p, DType::kFloat32, false, "fused_a_b"); });
  EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  EXPECT_TRUE(Contains(e.what(), "'fused_a_b': step 3 (operator _test_fused_no_cuda) has no CUDA code")) << e.what();

  FusedProgram bad = FusedChain();
  bad.steps[2].b = In(5);
  e = test::CaughtError([&] { op::FusedCudaSource(bad, DType::kFloat32, false, "f"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInternal);
  EXPECT_TRUE(Contains(e.what(), "step 2 reads input 5 of 3")) << e.what();
  bad = FusedChain();
  bad.steps[1].a = Val(4);
  e = test::CaughtError([&] { op::FusedCudaSource(bad, DType::kFloat32, false, "f"); });
  EXPECT_TRUE(Contains(e.what(), "step 1 reads the result of step 4")) << e.what();
}

// The harness the GPU tests use (fused_cuda_test.cc), checked here against the operators
// run one by one: a hand-made program through the operator's CPU kernel.
TEST(FusedCodegen, HandMadeProgramRunsLikeItsOperators) {
  const int64_t n = 2000;
  NDArray x = test::RandomArray({n}, DType::kFloat32, -1, 1, 3), y = test::RandomArray({n}, DType::kFloat32, -1, 1, 4),
          z = test::RandomArray({n}, DType::kFloat32, -1, 1, 5);
  NDArray fused = test::RunFused(FusedChain(), "fused_chain", {x, y, z}, Context::CPU());
  NDArray h = test::Run1("_mul_scalar", {test::Run1("sin", {x})}, {{"scalar", "2"}});
  h = test::Run1("exp", {test::Run1("elemwise_sub", {h, y})});
  NDArray want = test::Run1("tanh", {test::Run1("elemwise_add", {h, z})});
  EXPECT_EQ(fused.dtype(), DType::kFloat32);
  EXPECT_EQ(test::ToVector(fused), test::ToVector(want));  // the same functors: bit for bit
}

// ---------------------------------------------------------------- chains per device
graph::Symbol Call(const std::string& name, const std::vector<graph::Symbol>& args, const std::string& node,
                   KwArgs params = {}) {
  graph::Symbol s = graph::Symbol::CreateFunctor(Op::Get(name), std::move(params));
  s.Compose(args, {}, node);
  return s;
}

// The chains PointwiseChains finds in `sym` (an inference graph of float32 values), as node
// names, with `device` giving each node's device by name.
std::vector<std::vector<std::string>> Chains(const graph::Symbol& sym,
                                             const std::function<Context(const std::string&)>& device) {
  graph::IndexedGraph g(sym.outputs);
  std::vector<uint32_t> order;
  std::vector<int> uses(g.num_entries(), 0);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!g[id].source->is_variable()) order.push_back(id);
    for (const auto& in : g[id].inputs) ++uses[g.entry_id(in.node_id, in.index)];
  }
  std::vector<bool> persistent(g.num_entries(), false);
  for (const auto& e : sym.outputs) persistent[g.entry_id(e)] = true;
  std::vector<DType> types(g.num_entries(), DType::kFloat32);
  auto chains = executor::PointwiseChains(g, order, types, uses, persistent, {}, {},
                                          [&](uint32_t id) { return device(g[id].source->attrs.name); });
  std::vector<std::vector<std::string>> named;
  for (const auto& c : chains) {
    named.emplace_back();
    for (uint32_t id : c) named.back().push_back(g[id].source->attrs.name);
  }
  return named;
}

using Names = std::vector<std::vector<std::string>>;

// a -> b -> c -> d -> e, where c has no CUDA code.
graph::Symbol FiveSteps() {
  graph::Symbol x = graph::Symbol::Variable("x");
  graph::Symbol h = Call("sin", {x}, "a");
  h = Call("exp", {h}, "b");
  h = Call("_test_fused_no_cuda", {h}, "c");
  h = Call("_mul_scalar", {h}, "d", {{"scalar", "3"}});
  return Call("tanh", {h}, "e");
}

TEST(FusedChains, OnTheCpuEveryPointwiseOperatorJoins) {
  Names chains = Chains(FiveSteps(), [](const std::string&) { return Context::CPU(); });
  EXPECT_EQ(chains, (Names{{"a", "b", "c", "d", "e"}}));
}

TEST(FusedChains, OnAGpuOnlyOperatorsWithCudaCodeJoin) {
  Names chains = Chains(FiveSteps(), [](const std::string&) { return Context::GPU(0); });
#ifdef WEFT_USE_CUDA
  EXPECT_EQ(chains, (Names{{"a", "b"}, {"d", "e"}}));
#else
  EXPECT_TRUE(chains.empty()) << "a build without CUDA has no GPU kernel for fused chains";
#endif
}

TEST(FusedChains, ChainsStayOnOneDevice) {
  // c, d and e on another device: the chain breaks between b and c.
  Names chains = Chains(FiveSteps(), [](const std::string& node) {
    return node == "a" || node == "b" ? Context::CPU(0) : Context::CPU(1);
  });
  EXPECT_EQ(chains, (Names{{"a", "b"}, {"c", "d", "e"}}));
}

}  // namespace
}  // namespace weft

// The gradient pass and the executor: forward and backward results equal the imperative
// path's, gradients are summed over paths, grad_req write/add/null behave, bad binds are
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/executor/executor.h"
#include "core/executor/train_fuse.h"
#include "core/graph/gradient.h"
#include "core/graph/symbol.h"
#include "core/op/dnnl/dnnl_train_region.h"

namespace weft {
namespace executor {
namespace {

using graph::Symbol;

Symbol Call(const std::string& op, const std::vector<Symbol>& args, const std::string& name, KwArgs params = {}) {
  Symbol s = Symbol::CreateFunctor(Op::Get(op), std::move(params));
  s.Compose(args, {}, name);
  return s;
}

NDArray Array(const Shape& shape, const std::vector<float>& v) {
  NDArray a(shape, Context::CPU(), DType::kFloat32);
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> Read(const NDArray& a) {
  std::vector<float> v(a.Size());
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

// y = sum(exp(a) * b + a, axis=1): a used along two paths.
Symbol Net() {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b");
  Symbol e = Call("exp", {a}, "e");
  Symbol m = Call("elemwise_mul", {e, b}, "m");
  Symbol s = Call("elemwise_add", {m, a}, "s");
  return Call("sum", {s}, "y", {{"axis", "1"}});
}

TEST(Executor, ForwardAndBackwardMatchTheFormulas) {
  std::vector<float> av = {0.1f, -0.2f, 0.3f, 0.5f, 1.0f, -1.0f}, bv = {1, 2, 3, -1, 0.5f, 2};
  NDArray a = Array({2, 3}, av), b = Array({2, 3}, bv);
  NDArray ga({2, 3}, Context::CPU()), gb({2, 3}, Context::CPU());
  Executor ex(Net(), Context::CPU(), {a, b}, {ga, gb}, {OpReq::kWriteTo, OpReq::kWriteTo}, {});
  ex.Forward(true);
  std::vector<float> want_y(2, 0.f), want_ga(6), want_gb(6);
  for (int i = 0; i < 6; ++i) {
    want_y[i / 3] += std::exp(av[i]) * bv[i] + av[i];
    want_ga[i] = std::exp(av[i]) * bv[i] + 1;  // both paths
    want_gb[i] = std::exp(av[i]);
  }
  ExpectNear(Read(ex.outputs()[0]), want_y);
  ex.Backward({});  // ones: the gradient of the sum itself
  ExpectNear(Read(ga), want_ga);
  ExpectNear(Read(gb), want_gb);
  // A head gradient scales everything; running again overwrites (kWriteTo).
  ex.Forward(true);
  ex.Backward({Array({2}, {2.f, 3.f})});
  std::vector<float> scaled(6);
  for (int i = 0; i < 6; ++i) scaled[i] = want_ga[i] * (i < 3 ? 2.f : 3.f);
  ExpectNear(Read(ga), scaled);
}

TEST(Executor, GradReqAddAccumulatesAndNullSkips) {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6}), b = Array({2, 3}, {0, 0, 0, 0, 0, 0});
  NDArray ga = Array({2, 3}, {10, 10, 10, 10, 10, 10});
  Executor ex(Net(), Context::CPU(), {a, b}, {ga, NDArray()}, {OpReq::kAddTo, OpReq::kNullOp}, {});
  for (int step = 0; step < 2; ++step) {
    ex.Forward(true);
    ex.Backward({});
  }
  // b = 0: d/da = 1, accumulated twice onto 10.
  ExpectNear(Read(ga), std::vector<float>(6, 12.f));
}

TEST(Executor, GradientOfAVariableOutputIsCopied) {
  // y = a: the gradient entry is the head gradient itself.
  Symbol a = Symbol::Variable("a");
  NDArray av = Array({3}, {1, 2, 3}), g({3}, Context::CPU());
  Executor ex(Symbol::Group({a, Call("exp", {a}, "e")}), Context::CPU(), {av}, {g}, {OpReq::kWriteTo}, {});
  ex.Forward(true);
  ex.Backward({Array({3}, {1, 1, 1}), Array({3}, {0, 0, 0})});
  ExpectNear(Read(g), {1, 1, 1});
}

TEST(Executor, BindErrorsNameWhatIsWrong) {
  NDArray a = Array({2, 3}, {1, 2, 3, 4, 5, 6});
  auto msg = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg([&] { Executor(Net(), Context::CPU(), {a}, {}, {}, {}); }).find("expected 2 arguments (a, b), got 1"),
            std::string::npos);
  EXPECT_NE(msg([&] { Executor(Net(), Context::CPU(), {a, Array({3, 2}, {1, 2, 3, 4, 5, 6})}, {}, {}, {}); })
                .find("Node 'm'"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              Executor(Net(), Context::CPU(), {a, a}, {NDArray(), NDArray()}, {OpReq::kWriteTo, OpReq::kNullOp}, {});
            }).find("'a' asks for a gradient but has no gradient array"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              Executor(Net(), Context::CPU(), {a, a}, {NDArray({3}, Context::CPU()), NDArray()},
                       {OpReq::kWriteTo, OpReq::kNullOp}, {});
            }).find("gradient array of 'a' has shape (3"),
            std::string::npos);
}

TEST(GradientPass, UndifferentiableNodeOnThePathIsAnError) {
  Symbol a = Symbol::Variable("a");
  Symbol y = Call("elemwise_add", {Call("_shuffle", {a}, "shuf"), Call("exp", {a}, "e")}, "y");
  Symbol head = Symbol::Variable("head");
  try {
    graph::Gradient(y.outputs, a.outputs, head.outputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Node 'shuf' (operator '_shuffle') is not differentiable"), std::string::npos)
        << e.what();
  }
  // Off the path it does not matter: the gradient with respect to the exp alone works.
  Symbol z = Symbol::Variable("z");
  Symbol w = Call("elemwise_add", {Call("_shuffle", {z}, "shuf2"), Call("exp", {a}, "e2")}, "w");
  EXPECT_EQ(graph::Gradient(w.outputs, a.outputs, head.outputs).size(), 1u);
}

}  // namespace
}  // namespace executor
}  // namespace weft

namespace weft {
namespace executor {
namespace {

// A chain of 12 unary ops on a (64, 64) array, with gradients: planning shares blocks.
Symbol Chain() {
  Symbol x = graph::Symbol::Variable("x");
  Symbol h = x;
  for (int i = 0; i < 12; ++i) h = Call(i % 2 ? "tanh" : "sin", {h}, "h" + std::to_string(i));
  return Call("sum", {h}, "loss");
}

std::vector<float> RunChain(bool plan, size_t* planned, size_t* naive, const NDArray& x) {
  if (plan) unsetenv("WEFT_EXEC_PLAN_MEMORY");
  else setenv("WEFT_EXEC_PLAN_MEMORY", "0", 1);
  NDArray g(x.shape(), Context::CPU());
  Executor ex(Chain(), Context::CPU(), {x}, {g}, {OpReq::kWriteTo}, {});
  unsetenv("WEFT_EXEC_PLAN_MEMORY");
  ex.Forward(true);
  ex.Backward({});
  *planned = ex.planned_bytes();
  *naive = ex.naive_bytes();
  std::vector<float> r = Read(g);
  std::vector<float> y = Read(ex.outputs()[0]);
  r.insert(r.end(), y.begin(), y.end());
  EXPECT_NE(ex.DebugString().find("MB allocated"), std::string::npos);
  return r;
}

TEST(ExecutorMemory, PlanningSharesBlocksAndChangesNoBit) {
  std::vector<float> xv(64 * 64);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.01f * static_cast<float>(i));
  NDArray x = Array({64, 64}, xv);
  size_t planned = 0, naive = 0, planned_off = 0, naive_off = 0;
  std::vector<float> with = RunChain(true, &planned, &naive, x);
  std::vector<float> without = RunChain(false, &planned_off, &naive_off, x);
  EXPECT_EQ(with, without);  // bit for bit
  EXPECT_EQ(naive, naive_off);
  EXPECT_EQ(planned_off, naive_off);
  // Forward values the backward needs stay alive; the backward's temporaries share.
  EXPECT_LT(planned * 2, naive) << "planned " << planned << " of " << naive;
}

}  // namespace
}  // namespace executor
}  // namespace weft

namespace weft {
namespace executor {
namespace {

// y = x * (ones(3) * 2 + 1) + uniform(0, 1e-30): the constant branch folds, the sampler
// (whose draws vanish next to the values) does not.
Symbol Foldable() {
  Symbol c = Call("_ones", {}, "ones", {{"shape", "(3,)"}});
  c = Call("_plus_scalar", {Call("_mul_scalar", {c}, "twice", {{"scalar", "2"}})}, "plus1", {{"scalar", "1"}});
  Symbol noise = Call("_random_uniform", {}, "noise", {{"shape", "(3,)"}, {"low", "0"}, {"high", "1e-30"}});
  return Call("elemwise_add", {Call("elemwise_mul", {graph::Symbol::Variable("x"), c}, "scaled"), noise}, "y");
}

TEST(ExecutorFolding, ConstantBranchesRunOnceAtBind) {
  NDArray x = Array({3}, {1, 2, 3});
  setenv("WEFT_EXEC_FUSE", "0", 1);  // node counts without fusion
  setenv("WEFT_EXEC_FOLD_CONSTANTS", "0", 1);
  Executor plain(Foldable(), Context::CPU(), {x}, {}, {}, {});
  unsetenv("WEFT_EXEC_FOLD_CONSTANTS");
  Executor folded(Foldable(), Context::CPU(), {x}, {}, {}, {});
  unsetenv("WEFT_EXEC_FUSE");
  EXPECT_EQ(plain.num_folded_nodes(), 0u);
  EXPECT_EQ(folded.num_folded_nodes(), 3u);  // ones, twice, plus1
  EXPECT_EQ(folded.num_forward_nodes() + 3, plain.num_forward_nodes());
  for (int run = 0; run < 2; ++run) {
    plain.Forward(false);
    folded.Forward(false);
    EXPECT_EQ(Read(plain.outputs()[0]), Read(folded.outputs()[0]));
    ExpectNear(Read(folded.outputs()[0]), {3, 6, 9});
  }
}

}  // namespace
}  // namespace executor
}  // namespace weft

namespace weft {
namespace executor {
namespace {

// tanh(exp(sin(x) * 2 - y) + z) over a large array (several tiles, several threads).
Symbol Pointwise() {
  Symbol x = graph::Symbol::Variable("x"), y = graph::Symbol::Variable("y"), z = graph::Symbol::Variable("z");
  Symbol h = Call("_mul_scalar", {Call("sin", {x}, "s")}, "twice", {{"scalar", "2"}});
  h = Call("exp", {Call("elemwise_sub", {h, y}, "minus")}, "e");
  return Call("tanh", {Call("elemwise_add", {h, z}, "plus")}, "t");
}

struct FusionRun {
  std::vector<float> out, gx;
  size_t chains, nodes;
};

FusionRun RunPointwise(bool fuse, bool train) {
  if (!fuse) setenv("WEFT_EXEC_FUSE", "0", 1);
  const int64_t n = 100003;
  std::vector<float> xv(n), yv(n), zv(n);
  for (int64_t i = 0; i < n; ++i) {
    xv[i] = std::sin(0.001f * i);
    yv[i] = std::cos(0.002f * i);
    zv[i] = 0.5f - 0.00001f * i;
  }
  NDArray gx = Array({n}, std::vector<float>(n, 1.f));
  std::vector<NDArray> grads{gx, NDArray(), NDArray()};
  std::vector<OpReq> req{train ? OpReq::kAddTo : OpReq::kNullOp, OpReq::kNullOp, OpReq::kNullOp};
  Executor ex(Pointwise(), Context::CPU(), {Array({n}, xv), Array({n}, yv), Array({n}, zv)}, grads, req, {});
  unsetenv("WEFT_EXEC_FUSE");
  ex.Forward(train);
  if (train) ex.Backward({});
  return {Read(ex.outputs()[0]), Read(gx), ex.num_fused_chains(), ex.num_forward_nodes()};
}

TEST(ExecutorFusion, PointwiseChainRunsAsOneNodeWithTheSameResults) {
  FusionRun fused = RunPointwise(true, false), plain = RunPointwise(false, false);
  EXPECT_EQ(plain.chains, 0u);
  EXPECT_EQ(fused.chains, 1u);
  EXPECT_EQ(plain.nodes, 6u);
  EXPECT_EQ(fused.nodes, 1u);
  EXPECT_EQ(fused.out, plain.out);  // the same functors in the same order: bit for bit
}

TEST(ExecutorFusion, TrainingKeepsWhatTheBackwardNeedsAndAccumulates) {
  FusionRun fused = RunPointwise(true, true), plain = RunPointwise(false, true);
  EXPECT_EQ(fused.out, plain.out);
  ASSERT_EQ(fused.gx.size(), plain.gx.size());
  for (size_t i = 0; i < fused.gx.size(); i += 997) EXPECT_FLOAT_EQ(fused.gx[i], plain.gx[i]) << i;
  // The forward values the gradients read are materialised, so fewer chains fuse.
  EXPECT_LT(fused.nodes + fused.chains, plain.nodes + 1);
}

}  // namespace
}  // namespace executor
}  // namespace weft

namespace weft {
namespace executor {
namespace {

// Every node of the graph computing `heads`, by name.
std::map<std::string, graph::NodePtr> NodesByName(const std::vector<graph::NodeEntry>& heads) {
  std::map<std::string, graph::NodePtr> r;
  graph::DFSVisit(heads, [&](const graph::NodePtr& n) { r[n->attrs.name] = n; });
  return r;
}

TEST(GradientMirror, RecomputesCheapNodesUpToTheDepthAndNeverDropout) {
  // x -> BatchNorm -> relu -> Dropout -> exp -> exp -> exp -> sum.
  Symbol x = Symbol::Variable("x");
  Symbol bn = Call("BatchNorm", {x, Symbol::Variable("g"), Symbol::Variable("b"), Symbol::Variable("mm"),
                                 Symbol::Variable("mv")},
                   "bn");
  Symbol h = Call("Dropout", {Call("Activation", {bn}, "relu", {{"act_type", "relu"}})}, "drop", {{"p", "0.5"}});
  for (int i = 0; i < 3; ++i) h = Call("exp", {h}, "e" + std::to_string(i));
  Symbol y = Call("sum", {h}, "y");
  Symbol head = Symbol::Variable("head");

  auto off = NodesByName(graph::Gradient(y.outputs, x.outputs, head.outputs));
  for (const auto& kv : off) EXPECT_EQ(kv.first.find("_mirror"), std::string::npos) << kv.first;

  graph::MirrorOptions opt;
  opt.enabled = true;
  opt.max_depth = 2;
  std::unordered_map<const graph::Node*, const graph::Node*> made_for;
  auto on = NodesByName(graph::Gradient(y.outputs, x.outputs, head.outputs, &made_for, opt));
  // The exp chain restarts after Dropout (never recomputed: a new mask): e0 and e1 are
  // within depth 2, e2 is kept.
  EXPECT_EQ(on.count("drop_mirror"), 0u);
  EXPECT_EQ(on.count("e0_mirror"), 1u);
  EXPECT_EQ(on.count("e1_mirror"), 1u);
  EXPECT_EQ(on.count("e2_mirror"), 0u);
  EXPECT_EQ(on.at("e1_mirror")->inputs[0].node, on.at("e0_mirror"));
  EXPECT_EQ(on.at("e0_mirror")->inputs[0].node, on.at("drop"));
  // Each mirror runs after the gradient flowing into the node that first reads it.
  EXPECT_FALSE(on.at("e1_mirror")->control_deps.empty());
  EXPECT_EQ(made_for.at(on.at("e1_mirror").get()), on.at("e1").get());
  // BatchNorm's backward reads the data and the saved statistics, not the output: the
  // BatchNorm is recomputed only for the relu's gradient, by _BatchNorm_replay from the mean
  // and inverse std the forward saved, which leaves the moving statistics alone.
  ASSERT_EQ(on.count("bn_mirror"), 1u);
  const graph::NodePtr& m = on.at("bn_mirror");
  EXPECT_EQ(m->op()->name, "_BatchNorm_replay");
  EXPECT_EQ(m->inputs[3].node, on.at("bn"));
  EXPECT_EQ(m->inputs[3].index, 1u);
  EXPECT_EQ(m->inputs[4].index, 2u);
  EXPECT_EQ(on.at("relu_backward")->inputs[1].node, on.at("relu_mirror"));
  EXPECT_EQ(on.at("bn_backward")->inputs[1].node, x.outputs[0].node);
}

TEST(GradientMirror, SegmentsKeepEveryKthCutAndRecomputeTheRestConvolutionsIncluded) {
  // x -> c0 -> s0 -> c1 -> r = c1 + s0 -> s1 -> Dropout -> c2 -> s2 -> sum: conv c1 is no
  // cut (s0 is read after it), the other operators are.
  Symbol x = Symbol::Variable("x");
  KwArgs conv{{"kernel", "(1,1)"}, {"num_filter", "2"}, {"no_bias", "True"}};
  Symbol c0 = Call("Convolution", {x, Symbol::Variable("w0")}, "c0", conv);
  Symbol s0 = Call("sin", {c0}, "s0");
  Symbol c1 = Call("Convolution", {s0, Symbol::Variable("w1")}, "c1", conv);
  Symbol r = Call("elemwise_add", {c1, s0}, "r");
  Symbol s1 = Call("sin", {r}, "s1");
  Symbol drop = Call("Dropout", {s1}, "drop", {{"p", "0.5"}});
  Symbol c2 = Call("Convolution", {drop, Symbol::Variable("w2")}, "c2", conv);
  Symbol s2 = Call("sin", {c2}, "s2");
  Symbol y = Call("sum", {s2}, "y");
  Symbol head = Symbol::Variable("head");
  auto reads = [](const graph::NodePtr& n, const graph::NodePtr& value) {
    for (const auto& in : n->inputs)
      if (in.node == value) return true;
    return false;
  };

  // The cuts, in order: c0, s0, r, s1, drop, c2, s2. Every second is kept (s0, s1, c2),
  // Dropout as well (never recomputed: a new mask); the others are recomputed where a
  // gradient reads them, c1 included.
  graph::MirrorOptions opt;
  opt.enabled = true;
  opt.segment = 2;
  auto on = NodesByName(graph::Gradient(y.outputs, x.outputs, head.outputs, nullptr, opt));
  for (const char* name : {"c0_mirror", "c1_mirror", "r_mirror"}) EXPECT_EQ(on.count(name), 1u) << name;
  for (const char* name : {"s0_mirror", "s1_mirror", "drop_mirror", "c2_mirror", "y_mirror"})
    EXPECT_EQ(on.count(name), 0u) << name;
  // sin's gradient reads its input: s1's the sum recomputed from the recomputed c1 and
  // the kept s0, s0's the recomputed c0, s2's the kept c2.
  EXPECT_TRUE(reads(on.at("s1_backward"), on.at("r_mirror")));
  EXPECT_TRUE(reads(on.at("r_mirror"), on.at("c1_mirror")));
  EXPECT_TRUE(reads(on.at("r_mirror"), on.at("s0")));
  EXPECT_TRUE(reads(on.at("c1_mirror"), on.at("s0")));
  EXPECT_TRUE(reads(on.at("s0_backward"), on.at("c0_mirror")));
  EXPECT_TRUE(reads(on.at("c0_mirror"), on.at("x")));
  EXPECT_TRUE(reads(on.at("s2_backward"), on.at("c2")));
  EXPECT_TRUE(reads(on.at("c2_backward"), on.at("drop")));

  // Every cut kept: c1, the one operator left, is read by no gradient: nothing recomputed.
  opt.segment = 1;
  auto all = NodesByName(graph::Gradient(y.outputs, x.outputs, head.outputs, nullptr, opt));
  for (const auto& kv : all) EXPECT_EQ(kv.first.find("_mirror"), std::string::npos) << kv.first;
}

// ------------------------------------------------------------------ the training pass
// data -> c1 -> bn1 -> r1 -> c2 -> bn2 -> (+ data) -> out -> sum: one region of seven nodes
// (train_fuse.cc); the sum, the symbol's output, stays outside.
struct TrainNet {
  Symbol y, bn2;
  explicit TrainNet(int64_t channels) {
    KwArgs conv{{"kernel", "(3,3)"}, {"pad", "(1,1)"}, {"num_filter", std::to_string(channels)}, {"no_bias", "True"}};
    auto bn = [](const Symbol& x, const std::string& name) {
      return Call("BatchNorm",
                  {x, Symbol::Variable(name + "_gamma"), Symbol::Variable(name + "_beta"),
                   Symbol::Variable(name + "_moving_mean"), Symbol::Variable(name + "_moving_var")},
                  name, {{"fix_gamma", "False"}});
    };
    Symbol data = Symbol::Variable("data");
    Symbol c1 = Call("Convolution", {data, Symbol::Variable("c1_weight")}, "c1", conv);
    Symbol r1 = Call("Activation", {bn(c1, "bn1")}, "r1", {{"act_type", "relu"}});
    Symbol c2 = Call("Convolution", {r1, Symbol::Variable("c2_weight")}, "c2", conv);
    bn2 = bn(c2, "bn2");
    Symbol out = Call("Activation", {Call("elemwise_add", {bn2, data}, "add")}, "out", {{"act_type", "relu"}});
    y = Call("sum", {out}, "y");
  }
};

// Arrays of the right shapes (the pass reads only shapes and types) in list order.
struct TrainArrays {
  std::vector<NDArray> args, aux;
  std::vector<OpReq> req;
  TrainArrays(const Symbol& sym, int64_t channels, OpReq r = OpReq::kWriteTo) {
    for (const std::string& name : sym.ListArguments()) {
      Shape s = name == "data" ? Shape{4, channels, 6, 6}
                : name.find("weight") != std::string::npos ? Shape{channels, channels, 3, 3}
                                                           : Shape{channels};
      args.emplace_back(s, Context::CPU(), DType::kFloat32);
      req.push_back(r);
    }
    for (size_t i = 0; i < sym.ListAuxiliaryStates().size(); ++i)
      aux.emplace_back(Shape{channels}, Context::CPU(), DType::kFloat32);
  }
};

TEST(TrainFuse, ARegionReplacesItsNodesAndKeepsTheArgumentOrder) {
  if (!op::DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  TrainNet net(16);
  Symbol sym = net.y.Copy();
  TrainArrays a(sym, 16);
  auto args = sym.ListArguments(), aux = sym.ListAuxiliaryStates();
  ASSERT_EQ(FuseTrainRegions(&sym, Context::CPU(), {}, a.args, a.req, a.aux), 1u);
  EXPECT_EQ(sym.ListArguments(), args);
  EXPECT_EQ(sym.ListAuxiliaryStates(), aux);
  auto nodes = NodesByName(sym.outputs);
  for (const char* name : {"c1", "bn1", "r1", "c2", "bn2", "add", "out"}) EXPECT_EQ(nodes.count(name), 0u) << name;
  ASSERT_EQ(nodes.count("dnnl_train_region_c1"), 1u);
  const graph::NodePtr& region = nodes.at("dnnl_train_region_c1");
  EXPECT_EQ(region->op()->name, "_dnnl_train_region");
  // The sum reads the region's one visible output; the region reads the data, both weights
  // and each BatchNorm's gamma, beta and moving statistics.
  EXPECT_EQ(nodes.at("y")->inputs.at(0).node, region);
  EXPECT_EQ(region->inputs.size(), 1u + 2u + 8u);
  // The caller's symbol is untouched.
  EXPECT_EQ(NodesByName(net.y.outputs).count("c1"), 1u);
}

TEST(TrainFuse, NothingChangesWithoutGradientsWhenOffOrPlaced) {
  if (!op::DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  TrainNet net(16);
  auto unchanged = [](const Symbol& sym) { return NodesByName(sym.outputs).count("c1") == 1; };
  {
    Symbol sym = net.y.Copy();
    TrainArrays a(sym, 16, OpReq::kNullOp);
    EXPECT_EQ(FuseTrainRegions(&sym, Context::CPU(), {}, a.args, a.req, a.aux), 0u);
    EXPECT_TRUE(unchanged(sym));
  }
  {
    Symbol sym = net.y.Copy();
    TrainArrays a(sym, 16);
    EXPECT_EQ(FuseTrainRegions(&sym, Context::CPU(), {{"group1", Context::CPU(1)}}, a.args, a.req, a.aux), 0u);
    EXPECT_TRUE(unchanged(sym));
  }
  for (auto var : {std::make_pair("WEFT_EXEC_DNNL_TRAIN_FUSE", "0"), std::make_pair("WEFT_BACKWARD_DO_MIRROR", "1")}) {
    Symbol sym = net.y.Copy();
    TrainArrays a(sym, 16);
    setenv(var.first, var.second, 1);
    size_t made = FuseTrainRegions(&sym, Context::CPU(), {}, a.args, a.req, a.aux);
    unsetenv(var.first);
    EXPECT_EQ(made, 0u) << var.first;
    EXPECT_TRUE(unchanged(sym)) << var.first;
  }
}

TEST(TrainFuse, FewChannelsAndSymbolOutputsStayOutside) {
  if (!op::DnnlTrainRegionsAvailable()) GTEST_SKIP() << "built without oneDNN";
  // 4 channels: neither convolution reads 8 or more, so no region starts.
  {
    TrainNet net(4);
    Symbol sym = net.y.Copy();
    TrainArrays a(sym, 4);
    EXPECT_EQ(FuseTrainRegions(&sym, Context::CPU(), {}, a.args, a.req, a.aux), 0u);
  }
  // bn2 is also an output of the symbol: it stays, and the region ends before it.
  TrainNet net(16);
  Symbol sym = Symbol::Group({net.y, net.bn2}).Copy();
  TrainArrays a(sym, 16);
  ASSERT_EQ(FuseTrainRegions(&sym, Context::CPU(), {}, a.args, a.req, a.aux), 1u);
  auto nodes = NodesByName(sym.outputs);
  for (const char* name : {"bn2", "add", "out"}) EXPECT_EQ(nodes.count(name), 1u) << name;
  for (const char* name : {"c1", "bn1", "r1", "c2"}) EXPECT_EQ(nodes.count(name), 0u) << name;
  EXPECT_EQ(nodes.at("bn2")->inputs.at(0).node, nodes.at("dnnl_train_region_c1"));
}
}  // namespace
}  // namespace executor
}  // namespace weft

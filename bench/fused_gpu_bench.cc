// Pointwise fusion on a GPU, Weft's side of bench/fused_gpu_bench.py: the chain
// tanh(exp(sin(x) * 2 - y) + z) over N float32 elements, run by the executor with fusion on
// (one kernel NVRTC compiled from the chain) and off (one kernel per operator, six in all).
//
// Usage: weft_fused_gpu_bench [N] [REPEATS]
// Prints "fused MS" and "unfused MS": milliseconds per forward, the mean over REPEATS
// forwards pushed back to back and waited for once (the engine's per-operator cost
// included, as a training loop pays it), after a warm-up that compiles the kernel.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/executor/executor.h"
#include "core/graph/symbol.h"

namespace {

using namespace weft;

graph::Symbol Apply(const char* op, const std::vector<graph::Symbol>& args, const char* name, KwArgs params = {}) {
  graph::Symbol s = graph::Symbol::CreateFunctor(Op::Get(op), std::move(params));
  s.Compose(args, {}, name);
  return s;
}

double MsPerForward(int64_t n, int repeats, bool fuse) {
  setenv("WEFT_EXEC_FUSE", fuse ? "1" : "0", 1);
  graph::Symbol x = graph::Symbol::Variable("x"), y = graph::Symbol::Variable("y"), z = graph::Symbol::Variable("z");
  graph::Symbol h = Apply("_mul_scalar", {Apply("sin", {x}, "s")}, "twice", {{"scalar", "2"}});
  h = Apply("exp", {Apply("elemwise_sub", {h, y}, "minus")}, "e");
  graph::Symbol out = Apply("tanh", {Apply("elemwise_add", {h, z}, "plus")}, "t");

  const Context gpu = Context::GPU(0);
  std::vector<NDArray> args;
  std::vector<float> host(n);
  for (int k = 0; k < 3; ++k) {
    for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(std::sin(0.001 * i + k));
    NDArray a(Shape{n}, gpu, DType::kFloat32);
    a.SyncCopyFromCPU(host.data(), n * sizeof(float));
    args.push_back(a);
  }
  std::vector<OpReq> req(3, OpReq::kNullOp);
  executor::Executor ex(out, gpu, args, {NDArray(), NDArray(), NDArray()}, req, {});
  unsetenv("WEFT_EXEC_FUSE");
  for (int r = 0; r < 3; ++r) ex.Forward(false);
  engine::Engine::Get()->WaitForAll();
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) ex.Forward(false);
  engine::Engine::Get()->WaitForAll();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (fuse != (ex.num_fused_chains() == 1)) {
    std::fprintf(stderr, "weft_fused_gpu_bench: expected %s chain, the executor made %zu\n", fuse ? "one" : "no",
                 ex.num_fused_chains());
    std::exit(1);
  }
  return 1e3 * s / repeats;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : (int64_t{1} << 26);
  int repeats = argc > 2 ? std::atoi(argv[2]) : 200;
  if (n <= 0 || repeats <= 0) {
    std::fprintf(stderr, "usage: weft_fused_gpu_bench [N > 0] [REPEATS > 0], got N=%lld REPEATS=%d\n",
                 static_cast<long long>(n), repeats);
    return 2;
  }
  if (NumGPUs() == 0) {
    std::fprintf(stderr, "weft_fused_gpu_bench: no GPU is visible\n");
    return 2;
  }
  std::printf("fused %.4f\n", MsPerForward(n, repeats, true));
  std::printf("unfused %.4f\n", MsPerForward(n, repeats, false));
  return 0;
}

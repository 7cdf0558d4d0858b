// Engine throughput: how many empty operations per second the naive and threaded engines
// get through, pushed from one thread.
//
//   chain:       every operation writes the same variable, so they run one after another
//                and each completion has to grant the next;
//   independent: every operation writes its own variable (created before timing), so
//                nothing waits on anything and the cost is push + dispatch + completion.
//
// The time runs from the first push to the return of WaitForAll. "push" is the time until
// the last push returned, which for the threaded engine is what the pushing thread pays.
// Each pattern runs with FnProperty::kNormal and again with kCPUInline, which lets the
// threaded engine run an operation that is ready at push time on the pushing thread.
//
// Usage: weft_engine_bench [num_ops] [engine...]   (default 1000000, both engines)
// The threaded engine's pool sizes come from WEFT_CPU_WORKER_NTHREADS as usual.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/engine/engine.h"

namespace {

using weft::Context;
using weft::engine::Engine;
using weft::engine::FnProperty;
using weft::engine::RunContext;
using weft::engine::VarHandle;
using Clock = std::chrono::steady_clock;

struct Timing {
  double push_s = 0;
  double total_s = 0;
};

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

Timing RunChain(Engine* eng, long n, FnProperty prop) {
  VarHandle v = eng->NewVariable();
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < n; ++i) eng->PushSync([](RunContext) {}, Context::CPU(), {}, {v}, prop);
  Clock::time_point t1 = Clock::now();
  eng->WaitForAll();
  Clock::time_point t2 = Clock::now();
  eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->WaitForAll();
  return {Seconds(t0, t1), Seconds(t0, t2)};
}

Timing RunIndependent(Engine* eng, long n, FnProperty prop) {
  std::vector<VarHandle> vars(static_cast<size_t>(n));
  for (auto& v : vars) v = eng->NewVariable();
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < n; ++i) eng->PushSync([](RunContext) {}, Context::CPU(), {}, {vars[i]}, prop);
  Clock::time_point t1 = Clock::now();
  eng->WaitForAll();
  Clock::time_point t2 = Clock::now();
  for (VarHandle v : vars) eng->DeleteVariable(nullptr, Context::CPU(), v);
  eng->WaitForAll();
  return {Seconds(t0, t1), Seconds(t0, t2)};
}

void Report(const std::string& engine, const std::string& pattern, long n, Timing t) {
  std::printf("%-16s %-20s %9ld ops  %8.3f s  %12.0f ops/s  (pushes done after %.3f s)\n", engine.c_str(),
              pattern.c_str(), n,
              t.total_s, n / t.total_s, t.push_s);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  long n = 1000000;
  std::vector<std::string> engines;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) {
      n = std::strtol(a.c_str(), nullptr, 10);
    } else {
      engines.push_back(a);
    }
  }
  if (n <= 0) {
    std::fprintf(stderr, "weft_engine_bench: expected a positive number of operations, got %ld\n", n);
    return 2;
  }
  if (engines.empty()) engines = {"NaiveEngine", "ThreadedEngine"};
  const char* workers = std::getenv("WEFT_CPU_WORKER_NTHREADS");
  std::printf("empty operations pushed from one thread (WEFT_CPU_WORKER_NTHREADS=%s)\n", workers ? workers : "default 1");
  try {
    for (const std::string& name : engines) {
      std::unique_ptr<Engine> eng = Engine::Create(name);
      // A short warm-up starts the worker threads and fills the allocator's caches.
      RunChain(eng.get(), 10000, FnProperty::kNormal);
      for (FnProperty prop : {FnProperty::kNormal, FnProperty::kCPUInline}) {
        std::string suffix = prop == FnProperty::kNormal ? "" : " (inline)";
        Report(name, "chain" + suffix, n, RunChain(eng.get(), n, prop));
        Report(name, "independent" + suffix, n, RunIndependent(eng.get(), n, prop));
      }
      eng->Shutdown();
    }
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft_engine_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

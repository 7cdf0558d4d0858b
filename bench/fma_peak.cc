// The FP32 multiply-add throughput every core sustains, measured: the yardstick for the
// benches' "% of peak" where the clock /proc/cpuinfo shows is not the one the cores run at
// (on an AVX2 EPYC that reported 2445 MHz, the cores sustained 175 GFLOP/s, not the 157 the
// nominal clock gives). Each OpenMP thread runs 12 independent chains of vector FMAs, enough
// to keep both FMA units busy through their latency; the best of 5 runs is printed.
//
// Usage: weft_fma_peak [seconds per run]   (threads from OMP_NUM_THREADS, default all cores)
// Prints one line: "<GFLOP/s> GFLOP/s on <threads> threads, <lanes> lanes".
// bench/nets_bench.py --peak and bench/conv_direct_bench.py take the figure as their peak.
#include <omp.h>

#include <cstdio>
#include <cstdlib>

namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Vec __attribute__((vector_size(4 * kLanes)));
constexpr int kChains = 12;

// FLOP of `iters` rounds on every thread, and the seconds they took.
double Run(long iters, double* seconds) {
  float sink = 0;
  double start = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
  {
    Vec acc[kChains], mul, add;
    for (int l = 0; l < kLanes; ++l) {
      mul[l] = 1.0000001f;
      add[l] = 1e-7f;
    }
    for (int c = 0; c < kChains; ++c) acc[c] = mul * static_cast<float>(c + omp_get_thread_num());
    for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
    }
    Vec total = acc[0];
    for (int c = 1; c < kChains; ++c) total += acc[c];
    sink += total[0];
  }
  *seconds = omp_get_wtime() - start;
  if (sink == 0.12345f) std::printf(" ");  // keeps the chains from being optimised away
  return 2.0 * kLanes * kChains * static_cast<double>(iters) * omp_get_max_threads();
}

}  // namespace

int main(int argc, char** argv) {
  double want = argc > 1 ? std::atof(argv[1]) : 1.0;
  if (!(want > 0)) {
    std::fprintf(stderr, "weft_fma_peak: expected a positive number of seconds per run, got '%s'\n", argv[1]);
    return 2;
  }
  double seconds = 0;
  long iters = 1 << 20;
  Run(iters, &seconds);  // warm-up, and a first estimate of the rate
  iters = static_cast<long>(iters * want / (seconds > 1e-6 ? seconds : 1e-6));
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    double flop = Run(iters, &seconds);
    if (flop / seconds > best) best = flop / seconds;
  }
  std::printf("%.1f GFLOP/s on %d threads, %d lanes\n", best / 1e9, omp_get_max_threads(), kLanes);
  return 0;
}

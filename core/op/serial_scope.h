// SerialScope: keeps small work on the calling thread, for operators whose kernels (their
// own ParallelFor loops or oneDNN's) would otherwise split it across OpenMP threads.
#pragma once

#include <omp.h>

namespace weft {
namespace op {

// While alive and `serial`, keeps the calling thread's OpenMP regions (ParallelFor's, and
// those of oneDNN, which asks OpenMP for its thread count) on that thread alone. For work
// of a few microseconds a parallel region costs more than it saves: the pool's threads
// must be woken, and where they sleep between regions (OMP_WAIT_POLICY=PASSIVE, as
// PyTorch is commonly run, or a loaded machine) each wake takes tens of microseconds.
class SerialScope {
 public:
  explicit SerialScope(bool serial) : saved_(serial && !omp_in_parallel() ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SerialScope() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int saved_;
};

}  // namespace op
}  // namespace weft

// A chain of pointwise operators fused into one node by the executor: the program says, for
// each step, which operator function runs on which values; the kernel runs the whole chain
// tile by tile, so intermediate values live in cache-sized buffers instead of memory. On a
// GPU (CUDA builds) the program becomes one generated kernel (fused_codegen.h,
// fused_pointwise_gpu.cc) where intermediate values live in registers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/base/context.h"
#include "core/op/registry.h"

namespace weft {
namespace op {

struct FusedProgram {
  // A value of the program: one of the node's inputs, or the result of an earlier step.
  struct Ref {
    bool input = true;
    int index = 0;
  };
  struct Step {
    PointwiseFn fn;
    Ref a, b;
    bool binary = false;
    double scalar = 0;
    // The operator's FPointwiseCuda body for the GPU kernel (empty when it has none) and its
    // name, for messages.
    std::string cuda, op;
  };
  int num_inputs = 0;
  std::vector<Step> steps;  // the last step's result is the output

  // The GPU kernels made from this program, by (dtype, add-to, compute capability), so that
  // a steady-state call neither generates source nor looks it up (fused_pointwise_gpu.cc).
  // A copy starts empty: it may be changed into another program.
  struct KernelCache {
    KernelCache() = default;
    KernelCache(const KernelCache&) {}
    KernelCache& operator=(const KernelCache&) {
      std::lock_guard<std::mutex> lock(mu);
      kernels.clear();
      return *this;
    }
    std::mutex mu;
    std::vector<std::pair<int64_t, const void*>> kernels;
  };
  mutable KernelCache gpu_kernels;
};

// The attributes of a "_fused_pointwise" node running `program`; `name` names the node.
NodeAttrs MakeFusedAttrs(std::shared_ptr<const FusedProgram> program, const std::string& name);

// Whether a pointwise operator can join a fused chain on `ctx`: on the CPU every operator
// with FPointwise can; on a GPU only in CUDA builds and when `cuda_body` (its FPointwiseCuda)
// is not empty.
bool FusibleOn(const Context& ctx, const std::string& cuda_body);

}  // namespace op
}  // namespace weft

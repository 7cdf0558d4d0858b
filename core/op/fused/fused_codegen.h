// CUDA C++ for a fused pointwise program: the GPU counterpart of the tile loop in
// fused_pointwise.cc, compiled at run time with NVRTC (fused_nvrtc.h). Plain C++, built in
// every configuration, so that the generator is tested without CUDA too.
#pragma once

#include <string>

#include "core/base/dtype.h"
#include "core/op/fused/fused_pointwise.h"

namespace weft {
namespace op {

// The one kernel every generated source defines (extern "C", so the name is not mangled).
constexpr const char* kFusedKernelName = "weft_fused_pointwise";

// Elements each thread of a generated kernel takes per pass of its main loop; a launch
// wants about n / kFusedUnroll threads.
constexpr int kFusedUnroll = 4;

// The source of a kernel computing `program` over n elements of `dtype` (float32 or
// float64) in a grid-stride loop that takes kFusedUnroll elements a stride apart per pass
// (all their loads first), then the remaining ones one per pass:
//
//   extern "C" __global__ void weft_fused_pointwise(long long n, T* out, const T* in0, ...,
//                                                   const T* in<num_inputs-1>, double s0, ...)
//
// with one double per step that has a scalar, in step order (FusedScalars gives them), so
// that programs differing only in their scalars share one compiled kernel. Each step
// converts its scalar to T as the CPU kernel does. The result is written to out[i], or
// added to it when `add_to`. Inputs and the output have the output's shape and may alias
// (in-place), as on the CPU. Throws kUnsupported naming the node `name` and the operator
// when a step has no CUDA body, kType for another dtype. The source does not depend on
// `name` nor on the scalars' values.
std::string FusedCudaSource(const FusedProgram& program, DType dtype, bool add_to, const std::string& name);

// The scalar kernel arguments of `program`, in the order of the kernel's parameters.
std::vector<double> FusedScalars(const FusedProgram& program);

}  // namespace op
}  // namespace weft

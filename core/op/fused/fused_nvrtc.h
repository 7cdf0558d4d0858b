// Runtime compilation of the generated fusion kernels (CUDA builds only): NVRTC turns a
// source from FusedCudaSource into a cubin or PTX, the CUDA runtime's library API loads it
// (cudaLibraryLoadData, so nothing links the driver API), and each (source, arch) is
// compiled once per process.
#pragma once

#ifndef WEFT_USE_CUDA
#error "core/op/fused/fused_nvrtc.h is only for builds with WEFT_USE_CUDA"
#endif

#include <cstddef>
#include <string>
#include <vector>

namespace weft {
namespace op {

// Compiles `source` for compute capability `arch` (90 for sm_90): a cubin when `cubin`, PTX
// otherwise. A source that does not compile throws kRuntime naming the node `name`, the
// architecture and NVRTC's log; an architecture NVRTC does not know throws kUnsupported.
std::string NvrtcCompile(const std::string& source, const std::string& name, int arch, bool cubin);

// The compute capabilities this NVRTC can compile for (ascending, e.g. 75 ... 120).
std::vector<int> NvrtcArchitectures();

// The kernel kFusedKernelName of `source` for a device of capability `arch`, as a
// cudaKernel_t usable with cudaLaunchKernel on every device of that capability. Compiled
// and loaded on the first call for a (source, arch), looked up afterwards. Capabilities
// NVRTC knows get a cubin; newer ones get PTX of the newest it knows, which the driver
// compiles when loading.
const void* FusedKernel(const std::string& source, const std::string& name, int arch);

// How many sources NVRTC has compiled in this process (for tests: a steady state compiles
// nothing).
size_t NvrtcCompileCount();

}  // namespace op
}  // namespace weft

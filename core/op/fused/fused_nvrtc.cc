// Built in every configuration (sources are globbed) but only meaningful with CUDA.
#ifdef WEFT_USE_CUDA

#include "core/op/fused/fused_nvrtc.h"

#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/base/cuda_utils.h"
#include "core/base/error.h"
#include "core/op/fused/fused_codegen.h"

namespace weft {
namespace op {
namespace {

std::atomic<size_t> g_compiles{0};

void CheckNvrtc(nvrtcResult r, const char* call, const std::string& name) {
  if (r != NVRTC_SUCCESS)
    Throw(ErrorKind::kRuntime, "_fused_pointwise '", name, "': NVRTC call ", call, " failed: ", nvrtcGetErrorString(r));
}

// Destroys the NVRTC program however compilation ends.
struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
};

}  // namespace

std::vector<int> NvrtcArchitectures() {
  int count = 0;
  CheckNvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs", "-");
  std::vector<int> archs(count);
  if (count > 0) CheckNvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs", "-");
  std::sort(archs.begin(), archs.end());
  return archs;
}

std::string NvrtcCompile(const std::string& source, const std::string& name, int arch, bool cubin) {
  std::vector<int> known = NvrtcArchitectures();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    std::string list;
    for (int a : known) list += (list.empty() ? "" : ", ") + std::to_string(a);
    Throw(ErrorKind::kUnsupported, "_fused_pointwise '", name, "': NVRTC cannot compile for compute capability ",
          arch, " (it knows ", list, ")");
  }
  ProgramGuard guard;
  std::string file = name + ".cu";
  CheckNvrtc(nvrtcCreateProgram(&guard.prog, source.c_str(), file.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram",
             name);
  std::string arch_option = std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(arch);
  // Warning 177 is an unreferenced declaration: the prelude's constants in kernels not
  // using them.
  const char* options[] = {arch_option.c_str(), "--std=c++17", "--diag-suppress=177"};
  nvrtcResult compiled = nvrtcCompileProgram(guard.prog, 3, options);
  g_compiles.fetch_add(1);
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(guard.prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (nvrtcGetProgramLog(guard.prog, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    Throw(ErrorKind::kRuntime, "_fused_pointwise '", name, "': NVRTC could not compile the generated kernel for ",
          cubin ? "sm_" : "compute_", arch, " (", nvrtcGetErrorString(compiled), "):\n", log);
  }
  size_t size = 0;
  std::string image;
  if (cubin) {
    CheckNvrtc(nvrtcGetCUBINSize(guard.prog, &size), "nvrtcGetCUBINSize", name);
    image.resize(size);
    CheckNvrtc(nvrtcGetCUBIN(guard.prog, image.data()), "nvrtcGetCUBIN", name);
  } else {
    // The PTX size counts its terminating null, which cudaLibraryLoadData needs.
    CheckNvrtc(nvrtcGetPTXSize(guard.prog, &size), "nvrtcGetPTXSize", name);
    image.resize(size);
    CheckNvrtc(nvrtcGetPTX(guard.prog, image.data()), "nvrtcGetPTX", name);
  }
  return image;
}

const void* FusedKernel(const std::string& source, const std::string& name, int arch) {
  // Loaded libraries stay for the life of the process: kernels are small, and unloading
  // them from a static destructor could run after the CUDA runtime has shut down.
  static std::mutex mu;
  static auto* cache = new std::map<std::pair<std::string, int>, Loaded>();
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(source, arch);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second.kernel;

  std::vector<int> known = NvrtcArchitectures();
  WEFT_CHECK(!known.empty() && known.front() <= arch, kUnsupported, "_fused_pointwise '", name,
             "': NVRTC cannot compile for compute capability ", arch);
  bool exact = std::find(known.begin(), known.end(), arch) != known.end();
  int target = arch;
  if (!exact) target = *std::prev(std::upper_bound(known.begin(), known.end(), arch));
  std::string image = NvrtcCompile(source, name, target, exact);
  Loaded loaded;
  WEFT_CUDA_CALL(cudaLibraryLoadData(&loaded.library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaError_t err = cudaLibraryGetKernel(&loaded.kernel, loaded.library, kFusedKernelName);
  if (err != cudaSuccess) {
    cudaLibraryUnload(loaded.library);
    cuda::ThrowCudaError(err, "CUDA call cudaLibraryGetKernel for '" + name + "'", nullptr);
  }
  cache->emplace(std::move(key), loaded);
  return loaded.kernel;
}

size_t NvrtcCompileCount() { return g_compiles.load(); }

}  // namespace op
}  // namespace weft

#endif  // WEFT_USE_CUDA

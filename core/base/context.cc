#include "core/base/context.h"

namespace weft {

std::string Context::ToString() const {
  const char* name = "cpu";
  switch (dev_type) {
    case DeviceType::kCPU: break;
    case DeviceType::kGPU: name = "gpu"; break;
    case DeviceType::kCPUPinned: name = "cpu_pinned"; break;
    case DeviceType::kCPUShared: name = "cpu_shared"; break;
  }
  return std::string(name) + "(" + std::to_string(dev_id) + ")";
}

}  // namespace weft

#ifdef WEFT_USE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft {

int NumGPUs() {
#ifdef WEFT_USE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls start clean
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

}  // namespace weft

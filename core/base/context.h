// Where an array lives. Device type codes match MXNet's (1 cpu, 2 gpu, 3 cpu_pinned,
// 5 cpu_shared: host memory another process can map, which DataLoader workers fill).
#pragma once

#include <string>

namespace weft {

enum class DeviceType : int { kCPU = 1, kGPU = 2, kCPUPinned = 3, kCPUShared = 5 };

struct Context {
  DeviceType dev_type = DeviceType::kCPU;
  int dev_id = 0;

  static Context CPU(int id = 0) { return {DeviceType::kCPU, id}; }
  static Context GPU(int id = 0) { return {DeviceType::kGPU, id}; }
  static Context CPUPinned(int id = 0) { return {DeviceType::kCPUPinned, id}; }
  static Context CPUShared(int id = 0) { return {DeviceType::kCPUShared, id}; }

  bool is_gpu() const { return dev_type == DeviceType::kGPU; }
  // Pinned and shared host memory are ordinary host memory for kernels.
  bool is_host() const { return dev_type != DeviceType::kGPU; }
  bool operator==(const Context& o) const { return dev_type == o.dev_type && dev_id == o.dev_id; }
  bool operator!=(const Context& o) const { return !(*this == o); }
  bool operator<(const Context& o) const {
    return dev_type != o.dev_type ? dev_type < o.dev_type : dev_id < o.dev_id;
  }
  std::string ToString() const;  // "cpu(0)", "gpu(1)", "cpu_pinned(0)", "cpu_shared(0)"
};

// Number of visible GPUs: 0 in a build without CUDA or on a machine without a GPU.
int NumGPUs();

}  // namespace weft

// The single-machine stores: "local" and "device" (also "nccl", "local_allreduce_device").
//
// local: values pushed for a key are summed on the CPU in one parallel engine operation
// (values on a GPU are copied to the host first), the sum goes to the updater or replaces
// the stored array, and pulls copy the stored array to every destination.
//
// device: values that all live on the host are summed as local does. When a value lives
// on a GPU, the key's values are summed on one GPU, chosen per key among the values' GPUs
// so that the keys' sums spread evenly over them (the first push decides): with NCCL
// (WEFT_USE_NCCL) and one value per distinct GPU, one ncclReduce per GPU in a group; else
// values elsewhere are copied there (peer copies between GPUs) and one kernel sums them.
// The stored array then moves to that GPU, so the updater runs there and a pull is a copy
// from it to each destination, or, with NCCL and one destination per distinct GPU
// (the stored array's GPU among them), one ncclBroadcast per GPU in a group. 2-bit
// gradient compression (device only, as MXNet) quantizes each value on the CPU with error
// feedback before the sum.
#pragma once

#include <map>
#include <unordered_map>

#include "core/kvstore/kvstore.h"

namespace weft {
namespace kvstore {

class LocalStore : public KVStore {
 public:
  LocalStore(const std::string& type, bool device_mode) : KVStore(type), device_mode_(device_mode) {}

  void Init(const std::vector<std::string>& keys, const std::vector<NDArray>& values) override;
  void Push(const std::vector<std::string>& keys, const std::vector<NDArray>& values, int priority) override;
  void Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) override;
  void PullRows(const std::string& key, const NDArray& row_ids, const NDArray& out, int priority) override;

 private:
  struct Entry {
    NDArray stored;
    NDArray merge_buf;                // the sum of several values on the CPU
    std::vector<NDArray> residuals;   // compression error feedback, per pushed value
    std::vector<NDArray> decompressed;
    int merge_gpu = -1;               // device mode: the GPU the key is summed on
    NDArray gpu_merge;                // the sum there
    std::vector<NDArray> gpu_copies;  // values from elsewhere, copied there
  };
  // The values as the servers of compression would see them: quantized with error feedback.
  std::vector<NDArray> Compress(Entry* e, const std::vector<NDArray>& values, int priority);
  // Device mode, some value on a GPU: the sum of vals on the key's GPU.
  NDArray SumOnKeyGPU(Entry* e, const std::vector<NDArray>& vals, int priority);
  // Copies the stored array into every out (a grouped NCCL broadcast where it applies).
  void Broadcast(const Entry& e, const std::vector<NDArray>& outs, int priority);

  bool device_mode_;
  std::unordered_map<int, Entry> store_;
  std::map<int, int64_t> gpu_bytes_;  // bytes of the keys summed on each GPU
};

}  // namespace kvstore
}  // namespace weft

// The single-machine stores: "local" and "device".
//
// Values pushed for a key are summed on the CPU in one parallel engine operation (values
// on a GPU are copied to the host first), the sum goes to the updater or replaces the
// stored array, and pulls copy the stored array back to every destination. The "device"
// type also accepts 2-bit gradient compression, applied to each pushed value before the
// sum as MXNet's device store does. There is no GPU reduce kernel yet: "device" (and
// "nccl") copy values that live on a GPU to the host and sum them there, like "local".
#pragma once

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

 private:
  struct Entry {
    NDArray stored;
    NDArray merge_buf;                // the sum of several values
    std::vector<NDArray> residuals;   // compression error feedback, per pushed value
    std::vector<NDArray> decompressed;
  };
  // The values as the servers of compression would see them: quantized with error feedback.
  std::vector<NDArray> Compress(Entry* e, const std::vector<NDArray>& values, int priority);

  bool device_mode_;
  std::unordered_map<int, Entry> store_;
};

}  // namespace kvstore
}  // namespace weft

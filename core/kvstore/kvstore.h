// KVStore: parameter synchronisation by key, MXNet's model.
//
// A store holds one array per key. push(key, values) sums the values given for the key
// (one per device) and then either hands the sum to the updater, which changes the stored
// array (update(key, merged, &stored)), or, without an updater, replaces the stored array
// by the sum. pull(key, outs) copies the stored array into every out. Push and pull are
// engine operations: they return at once and reading the results waits.
//
// Keys are strings at this level: a key whose text is a non-negative decimal integer is
// that integer key; any other text is a string key, given an id of its own on first init
// (so every worker must init string keys in the same order, as in MXNet).
//
// Types: "local" (reduce on the CPU), "device" (values on GPUs are reduced on a GPU, with
// NCCL where built in; host values as "local": core/kvstore/local.h), "dist_sync",
// "dist_async", "dist_device_sync" and "dist"
// (= dist_sync) over ZeroMQ (core/kvstore/dist), built when WEFT_USE_DIST is on.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/param.h"
#include "core/kvstore/gradient_compression.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace kvstore {

// update(key id, key text, merged, stored): changes *stored (in place, through engine
// operations) from the merged value.
using Updater = std::function<void(int key, const std::string& key_text, const NDArray& merged, NDArray* stored)>;

// A server's handler of commands sent by workers (SendCommandToServers): head and body.
using Controller = std::function<void(int head, const std::string& body)>;

class KVStore {
 public:
  // The store of the named type; errors name the accepted types. A dist type in a process
  // whose DMLC_ROLE is "worker" (or unset) registers with the scheduler before returning.
  static std::unique_ptr<KVStore> Create(const std::string& type);
  virtual ~KVStore() = default;

  const std::string& type() const { return type_; }

  // Stores the initial value of each key (keys must be new; one value per key).
  virtual void Init(const std::vector<std::string>& keys, const std::vector<NDArray>& values) = 0;
  // Keys may repeat: the values of one key are summed (one value per device).
  virtual void Push(const std::vector<std::string>& keys, const std::vector<NDArray>& values, int priority) = 0;
  // Keys may repeat: the stored value is copied into each out.
  virtual void Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) = 0;
  virtual void PushPull(const std::vector<std::string>& push_keys, const std::vector<NDArray>& values,
                        const std::vector<std::string>& pull_keys, const std::vector<NDArray>& outs, int priority) {
    Push(push_keys, values, priority);
    Pull(pull_keys, outs, priority);
  }

  // Copies the rows `row_ids` (an int64 1-D array, strictly increasing, each in [0, rows of
  // the stored value)) of key's stored value into `out` (dense, shape (row_ids' length,
  // stored shape[1:]), the stored dtype): only those rows are read, or sent over the network
  // (kv.row_sparse_pull). Ordered after the key's earlier pushes, like Pull.
  virtual void PullRows(const std::string& key, const NDArray& row_ids, const NDArray& out, int priority);

  // Replaces the updater (empty: stored = merged). In a dist worker the update runs on the
  // servers, so this is an error there (set it through a command to the servers).
  virtual void SetUpdater(Updater updater) { updater_ = std::move(updater); }
  bool has_updater() const { return static_cast<bool>(updater_); }

  // {"type": "2bit", "threshold": "0.5"} or {"type": "none"}; MXNet accepts it for device
  // and dist stores only.
  virtual void SetGradientCompression(const KwArgs& params);

  virtual int Rank() const { return 0; }
  virtual int NumWorkers() const { return 1; }
  virtual void Barrier() {}
  // Worker side of the command channel to the servers (dist only).
  virtual void SendCommandToServers(int head, const std::string& body);
  // Server side: runs the server's loop until the job ends (dist stores in a server
  // process only).
  virtual void RunServer(Controller controller);

 protected:
  explicit KVStore(std::string type) : type_(std::move(type)) {}

  // The id of a key's text; `create` assigns ids to new string keys, otherwise an unknown
  // key is an error naming it.
  int KeyId(const std::string& key, bool create);
  const std::string& KeyText(int id) const;
  // Groups (key, value) pairs by key, in order of first appearance.
  struct Group {
    int key;
    std::vector<NDArray> arrays;
  };
  // Checks a PullRows call against the stored value's shape and dtype and returns the row
  // ids (kIndex for one out of range, kValue for an unsorted or repeated one).
  std::vector<int64_t> CheckRowPull(int key, const Shape& shape, DType dtype, const NDArray& row_ids,
                                    const NDArray& out) const;
  std::vector<Group> GroupByKey(const std::vector<std::string>& keys, const std::vector<NDArray>& arrays,
                                const char* what, bool create);

  std::string type_;
  Updater updater_;
  GradientCompression compression_;

 private:
  std::unordered_map<std::string, int> str_ids_;
  std::unordered_map<int, std::string> texts_;
  int next_str_id_ = 1 << 30;
};

// Sums `srcs` (same shape and dtype; any contexts) into `dst` (on the CPU) as one engine
// operation, in parallel over the elements; non-CPU sources are copied to the CPU first.
void ReduceSum(const std::vector<NDArray>& srcs, const NDArray& dst, int priority);

// dst[i] += src[i] (or = when `assign`) over n elements of dtype: the kernel that ReduceSum
// and the servers share. `parallel` spreads it over OpenMP threads; a server sums on its
// own thread, since several servers and workers often share a machine's cores and the
// sum is memory-bound anyway.
void AddInto(void* dst, const void* src, int64_t n, DType dtype, bool assign, bool parallel = true);

// dst[i] = a[i] + b[i] over n elements of dtype, in one pass (a server adds the first two
// pushes of a round so, instead of copying the first and adding the second).
void SumInto(void* dst, const void* a, const void* b, int64_t n, DType dtype, bool parallel = true);

// True when `text` is a non-negative decimal integer that fits an int below 2^30.
bool ParseIntKey(const std::string& text, int* out);

}  // namespace kvstore
}  // namespace weft

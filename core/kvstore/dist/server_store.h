// The store object of a server process: only RunServer works there.
#pragma once

#include "core/kvstore/kvstore.h"

namespace weft {
namespace kvstore {
namespace dist {

class ServerStore : public KVStore {
 public:
  explicit ServerStore(const std::string& type);
  void Init(const std::vector<std::string>& keys, const std::vector<NDArray>& values) override;
  void Push(const std::vector<std::string>& keys, const std::vector<NDArray>& values, int priority) override;
  void Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) override;
  void RunServer(Controller controller) override;

 private:
  [[noreturn]] void NotWorker() const;
};

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

// The distributed stores over ZeroMQ: entry points used by the factory and the C API.
#pragma once

#include <memory>
#include <string>

#include "core/kvstore/kvstore.h"

namespace weft {
namespace kvstore {
namespace dist {

// The role of this process from DMLC_ROLE: "worker" (also when unset), "server" or
// "scheduler"; anything else is an error naming the accepted roles.
std::string RoleFromEnv();

// A worker store (registers with the scheduler and waits for the address book), or in a
// server process the server store whose RunServer runs the server loop.
std::unique_ptr<KVStore> CreateDistStore(const std::string& type);

// The scheduler's loop: registration, address book, barriers, heartbeats and shutdown.
// Returns when every worker has finished; throws naming the lost node when one dies.
void RunScheduler();

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

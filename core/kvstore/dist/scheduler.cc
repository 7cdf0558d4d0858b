// The scheduler: registers every node, hands out ranks and the servers' addresses, runs
// barriers, watches heartbeats, and ends the job (cleanly, or naming the lost node).
#include <unistd.h>

#include <map>
#include <sstream>

#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/kvstore/dist/dist.h"
#include "core/kvstore/dist/protocol.h"

namespace weft {
namespace kvstore {
namespace dist {

namespace {

struct NodeRecord {
  std::string identity;
  std::string role, endpoint, host, pid;
  int rank = -1;
  Clock::time_point last_seen;
  bool exited = false;
  std::string Name() const {
    return role + (rank >= 0 ? " " + std::to_string(rank) : std::string(" (not yet ranked)")) + " (host " + host +
           ", pid " + pid + ")";
  }
};

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string line;
  while (std::getline(is, line)) out.push_back(line);
  return out;
}

}  // namespace

void RunScheduler() {
  Config cfg = Config::FromEnv();
  Curve curve = Curve::FromEnv();
  void* ctx = zmq_ctx_new();
  ZapHandler zap(ctx, curve, "scheduler");
  void* sock = NewSocket(ctx, ZMQ_ROUTER);
  CurveListen(sock, curve);
  std::string endpoint = cfg.SchedulerEndpoint();
  if (zmq_bind(sock, endpoint.c_str()) != 0) {
    std::string err = zmq_strerror(zmq_errno());
    CloseSocket(sock, 0);
    zmq_ctx_term(ctx);
    zap.Join();
    Throw(ErrorKind::kRuntime, "kvstore scheduler: cannot bind ", endpoint, ": ", err);
  }
  const int expected = cfg.num_servers + cfg.num_workers;
  std::map<std::string, NodeRecord> nodes;  // by ZeroMQ identity
  std::vector<std::string> order;           // identities in registration order
  bool book_sent = false;
  int barrier_count = 0, exited_workers = 0;
  std::string lost;

  auto send = [&](const std::string& id, MsgType type, const std::string& payload = "", int head = 0) {
    Header h;
    h.type = static_cast<uint16_t>(type);
    h.head = head;
    SendMessage(sock, &id, h, payload.data(), payload.size());
  };
  auto broadcast = [&](const char* role, MsgType type, const std::string& payload = "") {
    for (auto& [id, n] : nodes)
      if (role == nullptr || n.role == role) send(id, type, payload);
  };

  while (true) {
    zmq_pollitem_t item{sock, 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, static_cast<long>(cfg.heartbeat_interval * 1000));
    while (true) {
      Frames f;
      if (!f.Recv(sock)) break;
      Header h;
      const void* payload = nullptr;
      size_t nbytes = 0;
      std::string why;
      if (f.size() < 2 || !ParseMessage(f, 1, &h, &payload, &nbytes, &why)) {
        WEFT_LOG(Warning) << "kvstore scheduler: dropped a malformed message: " << (why.empty() ? "no header" : why);
        continue;
      }
      std::string id = f.str(0);
      auto it = nodes.find(id);
      auto type = static_cast<MsgType>(h.type);
      if (type == MsgType::kRegister) {
        auto lines = SplitLines(std::string(static_cast<const char*>(payload), nbytes));
        if (it != nodes.end() || book_sent || lines.size() != 4 || (lines[0] != "worker" && lines[0] != "server") ||
            (lines[0] == "server" && lines[1].empty())) {
          WEFT_LOG(Warning) << "kvstore scheduler: dropped an unexpected or malformed registration";
          continue;
        }
        NodeRecord n;
        n.identity = id;
        n.role = lines[0];
        n.endpoint = lines[1];
        n.host = lines[2];
        n.pid = lines[3];
        n.last_seen = Clock::now();
        nodes.emplace(id, n);
        order.push_back(id);
        send(id, MsgType::kHeartbeatAck);
        continue;
      }
      if (it == nodes.end()) {
        WEFT_LOG(Warning) << "kvstore scheduler: dropped a " << MsgTypeName(h.type) << " from an unregistered node";
        continue;
      }
      NodeRecord& node = it->second;
      node.last_seen = Clock::now();
      switch (type) {
        case MsgType::kHeartbeat:
          send(id, MsgType::kHeartbeatAck);
          break;
        case MsgType::kBarrier:
          if (node.role != "worker") break;
          if (++barrier_count == cfg.num_workers) {
            barrier_count = 0;
            broadcast("worker", MsgType::kBarrierDone);
          }
          break;
        case MsgType::kExit:
          if (node.role != "worker" || node.exited) break;
          node.exited = true;
          ++exited_workers;
          break;
        default:
          WEFT_LOG(Warning) << "kvstore scheduler: dropped an unexpected " << MsgTypeName(h.type) << " from "
                            << node.Name();
      }
    }
    if (!book_sent && static_cast<int>(nodes.size()) == expected) {
      int servers = 0, workers = 0;
      std::string book;
      for (const std::string& id : order) {
        NodeRecord& n = nodes[id];
        n.rank = n.role == "server" ? servers++ : workers++;
        if (n.role == "server") book += n.endpoint + "\n";
      }
      if (servers != cfg.num_servers || workers != cfg.num_workers) {
        lost = "the job expected " + std::to_string(cfg.num_servers) + " servers and " +
               std::to_string(cfg.num_workers) + " workers, but " + std::to_string(servers) + " servers and " +
               std::to_string(workers) + " workers registered";
        broadcast(nullptr, MsgType::kNodeLost, lost);
        break;
      }
      for (const std::string& id : order) send(id, MsgType::kAddressBook, book, nodes[id].rank);
      book_sent = true;
    }
    if (book_sent && exited_workers == cfg.num_workers) {
      broadcast("server", MsgType::kTerminate);
      broadcast("worker", MsgType::kBye);
      break;
    }
    for (auto& [id, n] : nodes) {
      if (n.exited || SecondsSince(n.last_seen) <= cfg.heartbeat_timeout) continue;
      lost = n.Name();
      break;
    }
    if (!lost.empty()) {
      std::string msg = "lost " + lost + ": no heartbeat for " + SecondsText(cfg.heartbeat_timeout);
      for (auto& [id, n] : nodes)
        if (n.Name() != lost) send(id, MsgType::kNodeLost, msg);
      lost = msg;
      break;
    }
  }
  // Linger so that the last messages reach the nodes before the process goes.
  CloseSocket(sock, 2000);
  zmq_ctx_term(ctx);
  zap.Join();
  WEFT_CHECK(lost.empty(), kRuntime, "kvstore scheduler: ", lost);
}

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

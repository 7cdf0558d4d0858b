// The scheduler: registers every node, hands out ranks and the servers' addresses, runs
// barriers, watches heartbeats, and ends the job (cleanly, or naming the lost node).
#include <unistd.h>

#include <cctype>
#include <map>
#include <set>
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
  std::string token;  // a worker's secret towards the servers
  int rank = -1;
  Clock::time_point last_seen;
  int fd = -1;                          // its connection's descriptor
  bool closed = false;                  // its connection closed at closed_at
  Clock::time_point closed_at;
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

// Why a registration payload (role, endpoint, host, pid) is malformed, or "".
std::string CheckRegistration(const std::vector<std::string>& lines) {
  if (lines.size() != 4) return "expected 4 lines (role, endpoint, host, pid), got " + std::to_string(lines.size());
  const std::string& role = lines[0];
  if (role != "worker" && role != "server") return "the role '" + role.substr(0, 20) + "' is not worker or server";
  if (role == "server" && (lines[1].rfind("tcp://", 0) != 0 || lines[1].size() > 64))
    return "a server's endpoint must be tcp://ADDRESS:PORT, got '" + lines[1].substr(0, 64) + "'";
  if (role == "worker" && !lines[1].empty()) return "a worker has no endpoint";
  if (lines[2].empty() || lines[2].size() > 255) return "a host name of " + std::to_string(lines[2].size()) + " bytes";
  for (char c : lines[1] + lines[2])
    if (!std::isprint(static_cast<unsigned char>(c)) || c == ' ') return "unprintable characters in the endpoint or host";
  if (lines[3].empty() || lines[3].size() > 10 ||
      !std::all_of(lines[3].begin(), lines[3].end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return "the pid '" + lines[3].substr(0, 12) + "' is not a number";
  return "";
}

}  // namespace

void RunScheduler() {
  Config cfg = Config::FromEnv();
  Curve curve = Curve::FromEnv();
  CheckTransport(cfg, curve.on, {cfg.root_uri}, "scheduler");
  void* ctx = zmq_ctx_new();
  ZapHandler zap(ctx, curve, "scheduler");
  void* sock = NewSocket(ctx, ZMQ_ROUTER);
  AuthListen(sock, curve, cfg.root_uri, /*bulk=*/false);
  LimitInbound(sock, kMaxSchedulerMessageBytes, cfg.queue_limit);
  ConnectionWatch watch(ctx, sock);
  LogLimit limit;
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
  std::map<std::string, int> registered = {{"server", 0}, {"worker", 0}};
  const std::map<std::string, int> wanted = {{"server", cfg.num_servers}, {"worker", cfg.num_workers}};
  bool book_sent = false;
  int exited_workers = 0;
  std::set<std::string> in_barrier;  // workers waiting at the current barrier
  std::string lost;
  const auto started = Clock::now();

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
    zmq_pollitem_t items[2] = {{sock, 0, ZMQ_POLLIN, 0}, {watch.events(), 0, ZMQ_POLLIN, 0}};
    zmq_poll(items, 2, static_cast<long>(cfg.heartbeat_interval * 1000));
    while (true) {
      Frames f;
      if (!f.Recv(sock)) break;
      Header h;
      const void* payload = nullptr;
      size_t nbytes = 0;
      std::string why;
      if (f.size() < 2 || !ParseMessage(f, 1, &h, &payload, &nbytes, &why)) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore scheduler: dropped a malformed message: " << (why.empty() ? "no header" : why);
        }
        continue;
      }
      std::string id = f.str(0);
      auto it = nodes.find(id);
      auto type = static_cast<MsgType>(h.type);
      if (type == MsgType::kRegister) {
        auto lines = SplitLines(std::string(static_cast<const char*>(payload ? payload : ""), nbytes));
        // Each role is taken only up to the number the job expects, each node once, and
        // only until the address book is out: a late or extra node is told so and
        // dropped, the job goes on with the nodes it has.
        std::string refused = CheckRegistration(lines);
        if (refused.empty() && it != nodes.end()) refused = "this connection has registered already";
        if (refused.empty() && book_sent) refused = "every node has registered already";
        if (refused.empty() && registered[lines[0]] >= wanted.at(lines[0]))
          refused = "all " + std::to_string(wanted.at(lines[0])) + " " + lines[0] + "s of the job have registered";
        if (!refused.empty()) {
          if (limit.Allow()) {
            WEFT_LOG(Warning) << "kvstore scheduler: refused a registration from " << f.PeerAddress(1) << ": "
                              << refused;
          }
          send(id, MsgType::kNodeLost, "the scheduler refused this node's registration: " + refused);
          continue;
        }
        NodeRecord n;
        n.identity = id;
        n.role = lines[0];
        n.endpoint = lines[1];
        n.host = lines[2];
        n.pid = lines[3];
        if (n.role == "worker") n.token = RandomHex(16);
        n.last_seen = Clock::now();
        n.fd = f.SourceFd(1);
        ++registered[n.role];
        nodes.emplace(id, n);
        order.push_back(id);
        send(id, MsgType::kHeartbeatAck);
        continue;
      }
      if (it == nodes.end()) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore scheduler: dropped a " << MsgTypeName(h.type) << " from an unregistered node";
        }
        continue;
      }
      NodeRecord& node = it->second;
      node.last_seen = Clock::now();
      node.fd = f.SourceFd(1);
      switch (type) {
        case MsgType::kHeartbeat:
          send(id, MsgType::kHeartbeatAck);
          break;
        case MsgType::kBarrier:
          // One entry per worker and barrier: a repeated one would release the others early.
          if (node.role != "worker" || !book_sent || !in_barrier.insert(id).second) {
            if (limit.Allow()) {
              WEFT_LOG(Warning) << "kvstore scheduler: dropped an unexpected barrier from " << node.Name();
            }
            break;
          }
          if (static_cast<int>(in_barrier.size()) == cfg.num_workers) {
            in_barrier.clear();
            broadcast("worker", MsgType::kBarrierDone);
          }
          break;
        case MsgType::kExit:
          if (node.role != "worker" || node.exited) break;
          node.exited = true;
          ++exited_workers;
          break;
        default:
          if (limit.Allow()) {
            WEFT_LOG(Warning) << "kvstore scheduler: dropped an unexpected " << MsgTypeName(h.type) << " from "
                              << node.Name();
          }
      }
    }
    if (!book_sent && static_cast<int>(nodes.size()) == expected) {
      int servers = 0, workers = 0;
      AddressBook all;
      for (const std::string& id : order) {
        NodeRecord& n = nodes[id];
        n.rank = n.role == "server" ? servers++ : workers++;
        if (n.role == "server") all.servers.push_back(n.endpoint);
        if (n.role == "worker") all.workers.emplace_back(n.rank, n.token);
      }
      // Servers learn every worker's token; a worker only its own.
      for (const std::string& id : order) {
        const NodeRecord& n = nodes[id];
        AddressBook book = all;
        if (n.role == "worker") book.workers = {{n.rank, n.token}};
        send(id, MsgType::kAddressBook, book.Text(), n.rank);
      }
      book_sent = true;
    }
    if (!book_sent && SecondsSince(started) > cfg.register_timeout) {
      lost = "registration timeout: after " + SecondsText(cfg.register_timeout) + " (WEFT_KVSTORE_REGISTER_TIMEOUT) " +
             std::to_string(registered["server"]) + " of " + std::to_string(cfg.num_servers) + " servers and " +
             std::to_string(registered["worker"]) + " of " + std::to_string(cfg.num_workers) +
             " workers had registered";
      broadcast(nullptr, MsgType::kNodeLost, lost);
      break;
    }
    if (book_sent && exited_workers == cfg.num_workers) {
      broadcast("server", MsgType::kTerminate);
      broadcast("worker", MsgType::kBye);
      break;
    }
    for (int fd : watch.Closed())
      for (auto& [id, n] : nodes)
        if (n.fd == fd && !n.closed) {
          n.closed = true;
          n.closed_at = Clock::now();
        }
    std::string why;
    // When several nodes are gone by now (a server died and the workers it served then
    // exited), the one that went first is named: the earliest close, else the longest silence.
    const NodeRecord* first = nullptr;
    bool first_closed = false;
    for (auto& [id, n] : nodes) {
      if (n.exited) continue;
      // A closed connection counts once the node has stayed silent past the grace: a
      // descriptor can be reused by a later connection, and a living node keeps talking.
      const bool closed = n.closed && SecondsSince(n.closed_at) > CloseGrace(cfg) && n.last_seen <= n.closed_at;
      const bool silent = SecondsSince(n.last_seen) > cfg.heartbeat_timeout;
      if (!closed && !silent) continue;
      const Clock::time_point when = closed ? n.closed_at : n.last_seen;
      const Clock::time_point first_when = first == nullptr ? when : (first_closed ? first->closed_at : first->last_seen);
      if (first == nullptr || when < first_when) {
        first = &n;
        first_closed = closed;
      }
    }
    if (first != nullptr) {
      why = first_closed ? "its connection closed" : "no heartbeat for " + SecondsText(cfg.heartbeat_timeout);
      lost = first->Name();
    }
    if (!lost.empty()) {
      std::string msg = "lost " + lost + ": " + why;
      for (auto& [id, n] : nodes)
        if (n.Name() != lost) send(id, MsgType::kNodeLost, msg);
      lost = msg;
      break;
    }
  }
  // Linger so that the last messages reach the nodes before the process goes.
  watch.Close();
  CloseSocket(sock, 2000);
  zmq_ctx_term(ctx);
  zap.Join();
  WEFT_CHECK(lost.empty(), kRuntime, "kvstore scheduler: ", lost);
}

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

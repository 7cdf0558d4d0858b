// The worker side: a network thread (the van) owns every socket; engine operations hand it
// requests and complete when the servers have answered.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/kvstore/dist/dist.h"
#include "core/kvstore/dist/protocol.h"
#include "core/kvstore/dist/server_store.h"
#include "core/kvstore/device_comm.h"
#include "core/ndarray/sparse.h"

namespace weft {
namespace kvstore {
namespace dist {

namespace {

// One message to one server: the range of a key it carries, what to send, where the reply
// goes.
struct Piece {
  int server = 0;
  uint64_t offset = 0, count = 0;
  const void* send = nullptr;
  size_t send_bytes = 0;
  void* recv = nullptr;
  size_t recv_bytes = 0;
};

struct Request {
  MsgType type = MsgType::kPush;
  int64_t key = 0;
  uint32_t flags = 0;
  int32_t dtype = 0;
  uint64_t total = 0;
  int head = 0;
  float threshold = 0;
  std::vector<Piece> pieces;
  std::shared_ptr<void> keep;  // memory the pieces send from
  std::function<void(const std::string& error)> done;
  // Run, when every piece is answered without error, before done (a row pull gathers its
  // pieces into the destination).
  std::function<void()> scatter;
  // Kept by the van.
  int outstanding = 0;
  std::string error;
  Clock::time_point issued;
};

// The lost node or the failure that ended the job, as the process reports it on its way out.
[[noreturn]] void DieAfterLoss(const std::string& msg) {
  std::fprintf(stderr, "weft kvstore worker: %s; exiting\n", msg.c_str());
  std::fflush(stderr);
  _exit(1);
}

class Van {
 public:
  explicit Van(Config cfg) : cfg_(std::move(cfg)) {}
  ~Van() { Stop(false); }

  // Registers with the scheduler and waits for the address book (or for the failure).
  void Start() {
    curve_ = Curve::FromEnv();
    CheckTransport(cfg_, curve_.on, {cfg_.root_uri, cfg_.host}, "worker");
    ctx_ = zmq_ctx_new();
    wake_send_ = NewSocket(ctx_, ZMQ_PAIR);
    wake_recv_ = NewSocket(ctx_, ZMQ_PAIR);
    std::string inproc = "inproc://weft-kv-wake-" + std::to_string(reinterpret_cast<uintptr_t>(this));
    WEFT_CHECK(zmq_bind(wake_recv_, inproc.c_str()) == 0 && zmq_connect(wake_send_, inproc.c_str()) == 0, kRuntime,
               "kvstore worker: cannot create the wake-up channel: ", zmq_strerror(zmq_errno()));
    auto ready = ready_.get_future();
    thread_ = std::thread([this] { Loop(); });
    std::string err = ready.get();
    if (!err.empty()) {
      Stop(false);
      Throw(ErrorKind::kRuntime, "kvstore worker: ", err);
    }
  }

  int rank() const { return rank_; }
  bool dead() {
    std::lock_guard<std::mutex> lock(mu_);
    return !dead_.empty();
  }
  int num_servers() const { return static_cast<int>(servers_.size()); }

  // Hands a request to the network thread; its done callback runs there.
  void Submit(std::shared_ptr<Request> r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!dead_.empty()) {
        std::string e = dead_;
        r->done(e);
        return;
      }
      queue_.push_back(std::move(r));
    }
    std::lock_guard<std::mutex> lock(wake_mu_);
    char b = 0;
    zmq_send(wake_send_, &b, 1, ZMQ_DONTWAIT);
  }

  // Blocks until the request is done; throws its error.
  void Call(std::shared_ptr<Request> r) {
    auto p = std::make_shared<std::promise<std::string>>();
    auto f = p->get_future();
    r->done = [p](const std::string& e) { p->set_value(e); };
    Submit(std::move(r));
    std::string e = f.get();
    WEFT_CHECK(e.empty(), kRuntime, "kvstore worker: ", e);
  }

  // Tells the scheduler this worker is done (when `clean`) and waits for the end of the job,
  // then stops the network thread.
  void Stop(bool clean) {
    if (!thread_.joinable()) {
      if (ctx_ != nullptr) CloseAll();
      return;
    }
    if (clean) {
      auto r = std::make_shared<Request>();
      r->type = MsgType::kExit;
      try {
        Call(r);
      } catch (const std::exception& e) {
        WEFT_LOG(Warning) << e.what();
      }
    }
    stop_ = true;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      char b = 0;
      zmq_send(wake_send_, &b, 1, ZMQ_DONTWAIT);
    }
    thread_.join();
    CloseAll();
  }

 private:
  void CloseAll() {
    CloseSocket(wake_send_, 0);
    wake_send_ = nullptr;
    zmq_ctx_term(ctx_);
    ctx_ = nullptr;
  }

  void SendToScheduler(MsgType type, const std::string& payload = "") {
    Header h;
    h.type = static_cast<uint16_t>(type);
    h.sender = rank_;
    SendMessage(sched_, nullptr, h, payload.data(), payload.size());
  }

  void Fail(const std::string& msg) {
    std::vector<std::shared_ptr<Request>> failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dead_.empty()) dead_ = msg;
      for (auto& r : queue_) failed.push_back(r);
      queue_.clear();
    }
    for (auto& [id, p] : pending_) failed.push_back(p.first);
    pending_.clear();
    for (auto& r : scheduler_waits_) failed.push_back(r);
    scheduler_waits_.clear();
    std::vector<Request*> seen;
    for (auto& r : failed) {
      if (std::find(seen.begin(), seen.end(), r.get()) != seen.end()) continue;
      seen.push_back(r.get());
      r->done(msg);
    }
    if (!started_) ready_.set_value(msg);
    started_ = true;
  }

  void Issue(const std::shared_ptr<Request>& r) {
    r->issued = Clock::now();
    if (r->type == MsgType::kBarrier || r->type == MsgType::kExit) {
      // Once this worker leaves, the servers may end (and close) before the goodbye comes.
      if (r->type == MsgType::kExit) leaving_ = true;
      scheduler_waits_.push_back(r);
      SendToScheduler(r->type);
      return;
    }
    r->outstanding = static_cast<int>(r->pieces.size());
    if (r->outstanding == 0) {
      r->done("");
      return;
    }
    for (const Piece& p : r->pieces) {
      uint64_t id = next_request_++;
      pending_.emplace(id, std::make_pair(r, static_cast<int>(&p - r->pieces.data())));
      Header h;
      h.type = static_cast<uint16_t>(r->type);
      h.sender = rank_;
      h.flags = r->flags;
      h.request = id;
      h.key = r->key;
      h.offset = p.offset;
      h.count = p.count;
      h.total = r->total;
      h.dtype = r->dtype;
      h.head = r->head;
      h.threshold = r->threshold;
      if (!SendMessage(servers_[p.server], nullptr, h, p.send, p.send_bytes, p.send_bytes ? r->keep : nullptr)) {
        // The only refusal: the connection is gone (workers never reconnect to a server).
        // The loss is reported after the grace, like a closure seen by the watch, so that a
        // server ending because it lost the scheduler does not hide the scheduler's loss: the
        // peer that closed first is named, and Fail then ends this request.
        PeerWatch& w = watches_[p.server + 1];
        if (!w.closed) {
          w.closed = true;
          w.closed_at = Clock::now();
        }
        return;
      }
    }
  }

  void OnServerReply(int server, Frames& f) {
    Header h;
    const void* payload = nullptr;
    size_t nbytes = 0;
    std::string why;
    if (!ParseMessage(f, 0, &h, &payload, &nbytes, &why)) {
      WEFT_LOG(Warning) << "kvstore worker: dropped a malformed message from server " << server << ": " << why;
      return;
    }
    auto it = pending_.find(h.request);
    if (it == pending_.end()) {
      WEFT_LOG(Warning) << "kvstore worker: dropped a " << MsgTypeName(h.type) << " from server " << server
                        << " answering no pending request";
      return;
    }
    auto [r, index] = it->second;
    pending_.erase(it);
    const Piece& p = r->pieces[index];
    auto type = static_cast<MsgType>(h.type);
    if (type == MsgType::kError) {
      r->error = std::string(static_cast<const char*>(payload), nbytes);
    } else if (type == MsgType::kPullReply) {
      if (nbytes != p.recv_bytes)
        r->error = "server " + std::to_string(server) + " answered a pull of key " + std::to_string(r->key) +
                   " with " + std::to_string(nbytes) + " bytes, expected " + std::to_string(p.recv_bytes);
      else if (nbytes)
        std::memcpy(p.recv, payload, nbytes);
    } else if (type != MsgType::kAck) {
      r->error = std::string("unexpected ") + MsgTypeName(h.type) + " from server " + std::to_string(server);
    }
    if (--r->outstanding == 0) {
      if (r->error.empty() && r->scatter) r->scatter();
      r->done(r->error);
    }
  }

  void OnScheduler(Frames& f) {
    Header h;
    const void* payload = nullptr;
    size_t nbytes = 0;
    std::string why;
    if (!ParseMessage(f, 0, &h, &payload, &nbytes, &why)) {
      WEFT_LOG(Warning) << "kvstore worker: dropped a malformed message from the scheduler: " << why;
      return;
    }
    last_heard_ = Clock::now();
    std::string text(static_cast<const char*>(payload ? payload : ""), nbytes);
    switch (static_cast<MsgType>(h.type)) {
      case MsgType::kAddressBook: {
        if (started_) break;
        rank_ = h.head;
        AddressBook book;
        std::string err;
        if (!AddressBook::Parse(text, &book, &err)) {
          err = "the scheduler's address book is malformed: " + err;
        } else if (book.workers.size() != 1 || book.workers[0].first != rank_) {
          err = "the scheduler's address book does not give this worker its token";
        } else {
          try {
            CheckTransport(cfg_, curve_.on, book.servers, "worker");
          } catch (const std::exception& e) {
            err = e.what();
          }
        }
        // The servers hear this worker under its rank and secret token only.
        std::string routing_id = err.empty() ? WorkerRoutingId(rank_, book.workers[0].second) : "";
        for (size_t i = 0; err.empty() && i < book.servers.size(); ++i) {
          void* s = NewSocket(ctx_, ZMQ_DEALER);
          zmq_setsockopt(s, ZMQ_ROUTING_ID, routing_id.data(), routing_id.size());
          // No reconnection: a server's port, once its server is gone, may belong to
          // anyone, who must not receive the password (and a lost server ends the job).
          int never = -1;
          zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &never, sizeof(never));
          AuthConnect(s, curve_, book.servers[i], /*bulk=*/true);
          Watch(s, "server " + std::to_string(i) + " at " + book.servers[i]);
          if (zmq_connect(s, book.servers[i].c_str()) != 0) err = "cannot connect to server at " + book.servers[i];
          servers_.push_back(s);
        }
        started_ = true;
        ready_.set_value(err);
        break;
      }
      case MsgType::kBarrierDone:
      case MsgType::kBye: {
        MsgType want = static_cast<MsgType>(h.type) == MsgType::kBye ? MsgType::kExit : MsgType::kBarrier;
        for (auto it = scheduler_waits_.begin(); it != scheduler_waits_.end(); ++it) {
          if ((*it)->type != want) continue;
          auto r = *it;
          scheduler_waits_.erase(it);
          r->done("");
          break;
        }
        break;
      }
      case MsgType::kNodeLost:
        OnLost(text);
        break;
      default:
        break;
    }
  }

  // What has waited past its deadline ("" when nothing): the address book, a request to a
  // server, a barrier. Leaving the job (exit) has none: the other workers may still train
  // for long, and the heartbeats tell whether they live.
  std::string Overdue(Clock::time_point started_at) const {
    if (!started_ && SecondsSince(started_at) > cfg_.register_timeout + cfg_.heartbeat_timeout)
      return "no address book from the scheduler at " + cfg_.SchedulerEndpoint() + " within " +
             SecondsText(cfg_.register_timeout + cfg_.heartbeat_timeout) + " (WEFT_KVSTORE_REGISTER_TIMEOUT)";
    // The first one sent is named: those behind it (a pull behind its push) wait for it.
    uint64_t first = 0;
    for (const auto& [id, p] : pending_)
      if (SecondsSince(p.first->issued) > cfg_.request_timeout && (first == 0 || id < first)) first = id;
    if (first != 0) {
      const auto& [r, piece] = pending_.at(first);
      return std::string("request timeout: server ") + std::to_string(r->pieces[piece].server) + " did not answer the " +
             MsgTypeName(static_cast<uint16_t>(r->type)) + " of key " + std::to_string(r->key) + " within " +
             SecondsText(cfg_.request_timeout) + " (WEFT_KVSTORE_REQUEST_TIMEOUT)";
    }
    for (const auto& r : scheduler_waits_)
      if (r->type == MsgType::kBarrier && SecondsSince(r->issued) > cfg_.request_timeout)
        return "barrier timeout: the other workers did not reach the barrier within " +
               SecondsText(cfg_.request_timeout) + " (WEFT_KVSTORE_REQUEST_TIMEOUT)";
    return "";
  }

  void OnLost(const std::string& msg) {
    if (!lost_.empty()) return;
    lost_ = msg;
    Fail(msg);
    // Give the program a moment to fail on its own (a waiting pull raises the error); a
    // process busy elsewhere is ended so that the job never hangs.
    lost_at_ = Clock::now();
  }

  // Follows the connections of `socket` to the peer `who` (see ConnectionWatch).
  void Watch(void* socket, const std::string& who) {
    watches_.push_back({std::make_unique<ConnectionWatch>(ctx_, socket), who, false, {}});
  }

  // The peer whose connection closed first, once it has stayed closed past the grace (""
  // when none). The first is the cause: the others end because they lost it. The scheduler
  // (watches_[0]) closes its connections only after its goodbye, the servers only after
  // every worker has left.
  std::string ClosedPeer() {
    const PeerWatch* first = nullptr;
    for (size_t i = 0; i < watches_.size(); ++i) {
      PeerWatch& w = watches_[i];
      if (!w.watch->Closed().empty() && !w.closed) {
        w.closed = true;
        w.closed_at = Clock::now();
      }
      if (w.closed && (i == 0 || !leaving_) && (!first || w.closed_at < first->closed_at)) first = &w;
    }
    if (!first || SecondsSince(first->closed_at) <= CloseGrace(cfg_)) return "";
    return "lost " + first->who + ": its connection closed";
  }

  void Loop() {
    sched_ = NewSocket(ctx_, ZMQ_DEALER);
    AuthConnect(sched_, curve_, cfg_.root_uri, /*bulk=*/false);
    Watch(sched_, "the scheduler at " + cfg_.SchedulerEndpoint());
    if (zmq_connect(sched_, cfg_.SchedulerEndpoint().c_str()) != 0) {
      Fail("cannot connect to the scheduler at " + cfg_.SchedulerEndpoint());
    } else {
      char hostname[256] = {0};
      gethostname(hostname, sizeof(hostname) - 1);
      SendToScheduler(MsgType::kRegister,
                      std::string("worker\n\n") + hostname + "\n" + std::to_string(getpid()) + "\n");
    }
    last_heard_ = Clock::now();
    const auto started_at = Clock::now();
    auto last_heartbeat = Clock::now(), last_deadline_check = Clock::now();
    while (!stop_) {
      std::vector<zmq_pollitem_t> items = {{wake_recv_, 0, ZMQ_POLLIN, 0}, {sched_, 0, ZMQ_POLLIN, 0}};
      for (void* s : servers_) items.push_back({s, 0, ZMQ_POLLIN, 0});
      for (const PeerWatch& w : watches_) items.push_back({w.watch->events(), 0, ZMQ_POLLIN, 0});
      zmq_poll(items.data(), static_cast<int>(items.size()), static_cast<long>(cfg_.heartbeat_interval * 1000));
      for (Frames f; f.Recv(wake_recv_);) {
      }
      std::deque<std::shared_ptr<Request>> work;
      {
        std::lock_guard<std::mutex> lock(mu_);
        work.swap(queue_);
      }
      for (auto& r : work) Issue(r);
      for (Frames f; f.Recv(sched_);) OnScheduler(f);
      for (size_t i = 0; i < servers_.size(); ++i)
        for (Frames f; f.Recv(servers_[i]);) OnServerReply(static_cast<int>(i), f);
      if (SecondsSince(last_heartbeat) >= cfg_.heartbeat_interval && lost_.empty()) {
        SendToScheduler(MsgType::kHeartbeat);
        last_heartbeat = Clock::now();
      }
      if (lost_.empty() && SecondsSince(last_heard_) > cfg_.heartbeat_timeout)
        OnLost("lost the scheduler at " + cfg_.SchedulerEndpoint() + ": no answer for " +
               SecondsText(cfg_.heartbeat_timeout));
      if (lost_.empty()) {
        std::string closed = ClosedPeer();
        if (!closed.empty()) OnLost(closed);
      }
      if (lost_.empty() && SecondsSince(last_deadline_check) >= cfg_.heartbeat_interval) {
        last_deadline_check = Clock::now();
        std::string late = Overdue(started_at);
        if (!late.empty()) OnLost(late);
      }
      if (!lost_.empty() && SecondsSince(lost_at_) > 2.0) DieAfterLoss(lost_);
    }
    watches_.clear();
    for (void* s : servers_) CloseSocket(s, 0);
    servers_.clear();
    CloseSocket(sched_, 500);
    CloseSocket(wake_recv_, 0);
    if (!started_) ready_.set_value("stopped before registration");
  }

  Config cfg_;
  Curve curve_;
  void* ctx_ = nullptr;
  void* wake_send_ = nullptr;  // other threads' end, under wake_mu_
  void* wake_recv_ = nullptr;
  void* sched_ = nullptr;
  std::vector<void*> servers_;
  struct PeerWatch {
    std::unique_ptr<ConnectionWatch> watch;
    std::string who;
    bool closed;
    Clock::time_point closed_at;
  };
  std::vector<PeerWatch> watches_;  // the scheduler's first, then the servers'
  bool leaving_ = false;
  std::mutex mu_, wake_mu_;
  std::deque<std::shared_ptr<Request>> queue_;
  std::string dead_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::promise<std::string> ready_;
  bool started_ = false;
  int rank_ = -1;
  uint64_t next_request_ = 1;
  std::unordered_map<uint64_t, std::pair<std::shared_ptr<Request>, int>> pending_;
  std::vector<std::shared_ptr<Request>> scheduler_waits_;
  Clock::time_point last_heard_, lost_at_;
  std::string lost_;
};

// Pushes and pulls only hand a request to the network thread (or register for its
// answer) and complete later through the callback: the pushing thread runs them at once
// when nothing is in their way, which spares a wake-up of an engine worker per request.
constexpr engine::FnProperty kHandOff = engine::FnProperty::kCPUInline;

// The worker's store.
class WorkerStore : public KVStore {
 public:
  WorkerStore(const std::string& type, Config cfg)
      : KVStore(type),
        cfg_(cfg),
        sync_(type.find("async") == std::string::npos),
        device_(type.find("device") != std::string::npos),
        van_(std::move(cfg)) {
    van_.Start();
  }

  ~WorkerStore() override {
    // Every push and pull must be answered before the sockets go. After a lost node they
    // have all failed already, and the error was reported where they were waited for.
    try {
      engine::Engine::Get()->WaitForAll();
    } catch (const std::exception& e) {
      if (!van_.dead()) {
        WEFT_LOG(Warning) << e.what();
      }
    }
    van_.Stop(!van_.dead());
    for (auto& [k, info] : keys_) {
      engine::Engine::Get()->DeleteVariable({}, Context::CPU(), info.var);
      engine::Engine::Get()->DeleteVariable({}, Context::CPU(), info.ack_var);
    }
  }

  int Rank() const override { return van_.rank(); }
  int NumWorkers() const override { return cfg_.num_workers; }

  void Barrier() override {
    auto r = std::make_shared<Request>();
    r->type = MsgType::kBarrier;
    van_.Call(r);
  }

  void SetUpdater(Updater) override {
    Throw(ErrorKind::kUnsupported, "kvstore '", type_, "': the update runs on the servers; send the optimizer "
          "to them (set_optimizer) instead of setting an updater on a worker");
  }

  void SendCommandToServers(int head, const std::string& body) override {
    auto r = std::make_shared<Request>();
    r->type = MsgType::kCommand;
    r->head = head;
    auto text = std::make_shared<std::string>(body);
    r->keep = text;
    for (int s = 0; s < van_.num_servers(); ++s) {
      Piece p;
      p.server = s;
      p.send = text->data();
      p.send_bytes = text->size();
      r->pieces.push_back(p);
    }
    van_.Call(r);
  }

  void Init(const std::vector<std::string>& keys, const std::vector<NDArray>& values) override {
    WEFT_CHECK(keys.size() == values.size(), kValue, "kvstore init: expected one array per key, got ", keys.size(),
               " keys and ", values.size(), " arrays");
    for (size_t i = 0; i < keys.size(); ++i) {
      WEFT_CHECK(!values[i].is_none(), kValue, "kvstore init: the array for key '", keys[i], "' is none");
      int id = KeyId(keys[i], /*create=*/true);
      WEFT_CHECK(keys_.find(id) == keys_.end(), kValue, "kvstore init: key '", keys[i], "' is already initialised");
      KeyInfo info;
      info.shape = values[i].shape();
      info.dtype = values[i].dtype();
      info.size = values[i].Size();
      info.ranges = Split(id, info.size);
      info.var = engine::Engine::Get()->NewVariable();
      info.ack_var = engine::Engine::Get()->NewVariable();
      auto& stored = keys_.emplace(id, std::move(info)).first->second;
      if (Rank() != 0) continue;
      // Rank 0's value is the initial value on the servers (as MXNet).
      NDArray host(values[i].shape(), Context::CPU(), values[i].dtype());
      CopyFromTo(values[i], host);
      host.WaitToRead();
      auto r = MakeRequest(MsgType::kInit, id, stored, host.data().dptr, nullptr, host.chunk());
      r->flags = 0;
      van_.Call(r);
    }
    Barrier();
  }

  void Push(const std::vector<std::string>& keys, const std::vector<NDArray>& values, int priority) override {
    PushGroups(GroupByKey(keys, values, "push", /*create=*/false), {}, priority);
  }

  // When every pushed key is pulled once, in the same order, into a host array of its
  // dtype, the servers answer each push with the updated value: one round trip, not two.
  void PushPull(const std::vector<std::string>& push_keys, const std::vector<NDArray>& values,
                const std::vector<std::string>& pull_keys, const std::vector<NDArray>& outs, int priority) override {
    auto groups = GroupByKey(push_keys, values, "pushpull", /*create=*/false);
    bool fused = pull_keys.size() == groups.size() && outs.size() == groups.size();
    for (size_t i = 0; fused && i < groups.size(); ++i) {
      const KeyInfo& info = Info(groups[i].key, "pushpull");
      fused = KeyId(pull_keys[i], /*create=*/false) == groups[i].key && !outs[i].is_none() &&
              outs[i].ctx().is_host() && outs[i].dtype() == info.dtype && outs[i].shape() == info.shape;
    }
    if (!fused) {
      KVStore::PushPull(push_keys, values, pull_keys, outs, priority);
      return;
    }
    PushGroups(std::move(groups), outs, priority);
  }

  // Sends the sum of each group's values; with `outs` (one per group) the answer to each
  // push carries the updated value, written into that out.
  void PushGroups(std::vector<Group> groups, const std::vector<NDArray>& outs, int priority) {
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      Group& g = groups[gi];
      KeyInfo& info = Info(g.key, "push");
      for (const NDArray& v : g.arrays)
        WEFT_CHECK(v.shape() == info.shape && v.dtype() == info.dtype, kShape, "kvstore push: key '", KeyText(g.key),
                   "' holds ", info.shape.ToString(), " ", DTypeName(info.dtype), ", got a value of ",
                   v.shape().ToString(), " ", DTypeName(v.dtype()));
      // A key's one row_sparse value (a gradient) travels as its rows; any other sparse
      // value is summed densely.
      if (g.arrays.size() == 1 && g.arrays[0].stype() == StorageType::kRowSparse && g.arrays[0].ctx().is_host() &&
          outs.empty() && !compression_.active() && info.shape.ndim() >= 1 && info.shape[0] > 0) {
        PushRows(g.key, g.arrays[0], priority);
        continue;
      }
      for (NDArray& v : g.arrays)
        if (v.is_sparse()) v = CastStorage(v, StorageType::kDefault);
      NDArray src;
      if (g.arrays.size() == 1 && g.arrays[0].ctx().is_host()) {
        src = g.arrays[0];
      } else {
        if (info.merge_buf.is_none()) info.merge_buf = NDArray(info.shape, Context::CPU(), info.dtype);
        bool summed = false;
#if WEFT_USE_CUDA
        auto gpu = std::find_if(g.arrays.begin(), g.arrays.end(), [](const NDArray& v) { return v.ctx().is_gpu(); });
        if (device_ && gpu != g.arrays.end()) {
          // dist_device_sync: the values are summed on a GPU, only the sum crosses to the host.
          if (info.gpu_merge.is_none()) info.gpu_merge = NDArray(info.shape, gpu->ctx(), info.dtype);
          CopyFromTo(ReduceOnGPU(g.arrays, info.gpu_merge, &info.gpu_copies, priority), info.merge_buf, priority);
          summed = true;
        }
#endif
        if (!summed) ReduceSum(g.arrays, info.merge_buf, priority);
        src = info.merge_buf;
      }
      const bool compressed = compression_.active();
      if (compressed) src = Compress(info, src, priority);
      NDArray dst = outs.empty() ? NDArray() : outs[gi];
      int key = g.key;
      KeyInfo* ip = &info;
      uint32_t flags = (sync_ ? uint32_t{kFlagSync} : 0u) | (compressed ? uint32_t{kFlagCompressed} : 0u) |
                       (dst.is_none() ? 0u : uint32_t{kFlagPullBack});
      float threshold = compression_.threshold();
      Van* van = &van_;
      if (!dst.is_none()) {
        // pushpull: one operation, complete when the answer (the new value) is in dst.
        std::vector<engine::VarHandle> reads, writes = {info.var, info.ack_var, dst.var()};
        // Pushing an array and pulling into it (pushpull without out) reads and writes one
        // variable: the write covers both.
        if (!src.SameChunk(dst)) reads.push_back(src.var());
        engine::Engine::Get()->PushAsync(
            [van, key, ip, src, dst, flags, threshold, this](engine::RunContext, engine::CallbackOnComplete cb) {
              auto r = MakeRequest(MsgType::kPush, key, *ip, src.data().dptr, dst.data().dptr, src.chunk());
              r->flags = flags;
              r->threshold = threshold;
              r->done = [cb](const std::string& e) { Complete(cb, e); };
              van->Submit(r);
            },
            Context::CPU(), reads, writes, kHandOff, priority, "KVStoreDistPushPull");
        continue;
      }
      // A push is two operations so that a pull behind it need not wait for its answer:
      // "send" hands the request to the network thread and is over at once (a pull, which
      // also writes info.var, goes out right behind it on the same ordered connections and
      // the servers hold its answer until the round it follows is summed); "ack" holds
      // the read of src (sent without a copy) until the servers have answered. The next
      // send writes ack_var, so it waits for that answer (a server counts one push per
      // worker and round), and info.var, so it waits for the pulls before it: the
      // servers' stored range may change only after every pull of the round has its
      // answer (they answer without copying).
      auto state = std::make_shared<PushState>();
      std::vector<engine::VarHandle> reads = {src.var()};
      engine::Engine::Get()->PushAsync(
          [van, key, ip, src, flags, threshold, state, this](engine::RunContext, engine::CallbackOnComplete cb) {
            try {
              auto r = MakeRequest(MsgType::kPush, key, *ip, src.data().dptr, nullptr, src.chunk());
              r->flags = flags;
              r->threshold = threshold;
              r->done = [state](const std::string& e) { state->Finish(e); };
              van->Submit(r);
            } catch (const std::exception& e) {
              state->Finish(e.what());
              throw;
            }
            cb();
          },
          Context::CPU(), reads, {info.var, info.ack_var}, kHandOff, priority, "KVStoreDistPush");
      engine::Engine::Get()->PushAsync(
          [state](engine::RunContext, engine::CallbackOnComplete cb) { state->Wait(cb); },
          Context::CPU(), reads, {info.ack_var}, kHandOff, priority, "KVStoreDistPushAck");
    }
  }

  // Sends a row_sparse value's rows: each server of the key gets the rows that meet its
  // range (none, for some: each still counts the push in its round). The value's rows are
  // copied into the messages now, so the push is ordered like a dense one (send, then the
  // wait for the answer) without holding the array.
  void PushRows(int key, const NDArray& value, int priority) {
    auto& info = Info(key, "push");
    value.WaitToRead();
    const NDArray& idx = value.aux(0);
    std::vector<int64_t> rows(static_cast<size_t>(idx.Size()));
    if (!rows.empty()) idx.SyncCopyToCPU(rows.data(), rows.size() * sizeof(int64_t));
    const int64_t row_len = info.size / info.shape[0];
    const size_t elem = DTypeSize(info.dtype);
    const char* vals = static_cast<const char*>(value.sparse_values().data().dptr);
    auto mem = std::make_shared<std::vector<std::vector<char>>>();
    auto r = std::make_shared<Request>();
    r->type = MsgType::kPushRows;
    r->key = key;
    r->dtype = static_cast<int32_t>(info.dtype);
    r->total = static_cast<uint64_t>(info.size);
    r->flags = sync_ ? uint32_t{kFlagSync} : 0u;
    for (const Range& rg : info.ranges) {
      const int64_t lo = static_cast<int64_t>(rg.offset), hi = lo + static_cast<int64_t>(rg.count);
      // Rows meeting [lo, hi): from the one holding element lo to the last starting before hi.
      auto first = std::lower_bound(rows.begin(), rows.end(), lo / row_len);
      auto last = std::lower_bound(first, rows.end(), (hi + row_len - 1) / row_len);
      const int64_t k = last - first;
      std::vector<char> payload(16 + 8 * static_cast<size_t>(k));
      std::memcpy(payload.data(), &row_len, 8);
      std::memcpy(payload.data() + 8, &k, 8);
      if (k) std::memcpy(payload.data() + 16, &*first, 8 * static_cast<size_t>(k));
      for (auto it = first; it != last; ++it) {
        const int64_t row = *it, j = it - rows.begin();
        const int64_t b = std::max(row * row_len, lo), e = std::min((row + 1) * row_len, hi);
        const char* from = vals + (j * row_len + (b - row * row_len)) * static_cast<int64_t>(elem);
        payload.insert(payload.end(), from, from + (e - b) * static_cast<int64_t>(elem));
      }
      mem->push_back(std::move(payload));
      Piece p;
      p.server = rg.server;
      p.offset = rg.offset;
      p.count = rg.count;
      r->pieces.push_back(p);
    }
    for (size_t i = 0; i < r->pieces.size(); ++i) {
      r->pieces[i].send = (*mem)[i].data();
      r->pieces[i].send_bytes = (*mem)[i].size();
    }
    r->keep = mem;
    auto state = std::make_shared<PushState>();
    Van* van = &van_;
    engine::Engine::Get()->PushAsync(
        [van, r, state](engine::RunContext, engine::CallbackOnComplete cb) {
          r->done = [state](const std::string& e) { state->Finish(e); };
          van->Submit(r);
          cb();
        },
        Context::CPU(), {}, {info.var, info.ack_var}, kHandOff, priority, "KVStoreDistRowPush");
    engine::Engine::Get()->PushAsync(
        [state](engine::RunContext, engine::CallbackOnComplete cb) { state->Wait(cb); },
        Context::CPU(), {}, {info.ack_var}, kHandOff, priority, "KVStoreDistPushAck");
  }

  // Each server is asked for the requested rows that meet its range of the key, and
  // answers with their elements there; only those travel.
  void PullRows(const std::string& key, const NDArray& row_ids, const NDArray& out, int priority) override {
    const int id = KeyId(key, /*create=*/false);
    KeyInfo& info = Info(id, "row_sparse_pull");
    std::vector<int64_t> rows = CheckRowPull(id, info.shape, info.dtype, row_ids, out);
    const bool direct = out.ctx().is_host();
    NDArray dst = direct ? out : NDArray(out.shape(), Context::CPU(), out.dtype());
    KeyInfo* ip = &info;
    Van* van = &van_;
    // After the key's earlier pushes are answered (ack_var): their round is summed.
    engine::Engine::Get()->PushAsync(
        [van, id, ip, dst, rows](engine::RunContext, engine::CallbackOnComplete cb) {
          auto r = MakeRowRequest(id, *ip, rows, dst);
          r->done = [cb](const std::string& e) { Complete(cb, e); };
          van->Submit(r);
        },
        Context::CPU(), {}, {info.var, info.ack_var, dst.var()}, kHandOff, priority, "KVStoreDistRowPull");
    if (!direct) CopyFromTo(dst, out, priority);
  }

  void Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) override {
    for (Group& g : GroupByKey(keys, outs, "pull", /*create=*/false)) {
      KeyInfo& info = Info(g.key, "pull");
      for (const NDArray& o : g.arrays)
        WEFT_CHECK(o.shape() == info.shape, kShape, "kvstore pull: key '", KeyText(g.key), "' holds ",
                   info.shape.ToString(), ", the destination has shape ", o.shape().ToString());
      // A single host destination of the same dtype receives the data directly.
      bool direct = g.arrays.size() == 1 && g.arrays[0].ctx().is_host() && g.arrays[0].dtype() == info.dtype;
      NDArray dst = direct ? g.arrays[0] : NDArray();
      if (!direct) {
        if (info.merge_buf.is_none()) info.merge_buf = NDArray(info.shape, Context::CPU(), info.dtype);
        dst = info.merge_buf;
      }
      int key = g.key;
      KeyInfo* ip = &info;
      uint32_t flags = sync_ ? uint32_t{kFlagSync} : 0u;
      Van* van = &van_;
      engine::Engine::Get()->PushAsync(
          [van, key, ip, dst, flags, this](engine::RunContext, engine::CallbackOnComplete cb) {
            auto r = MakeRequest(MsgType::kPull, key, *ip, nullptr, dst.data().dptr, dst.chunk());
            r->flags = flags;
            r->done = [cb](const std::string& e) { Complete(cb, e); };
            van->Submit(r);
          },
          Context::CPU(), {}, {info.var, dst.var()}, kHandOff, priority, "KVStoreDistPull");
      if (!direct)
        for (const NDArray& o : g.arrays) CopyFromTo(dst, o, priority);
    }
  }

 private:
  struct Range {
    int server;
    uint64_t offset, count;
  };
  struct KeyInfo {
    Shape shape;
    DType dtype;
    int64_t size = 0;
    std::vector<Range> ranges;
    // var orders what goes to the servers for the key (pushes are sent, pulls answered,
    // in the order they were called); ack_var is written by the wait for a push's answer.
    engine::VarHandle var = nullptr, ack_var = nullptr;
    NDArray merge_buf, residual, packed;
    NDArray gpu_merge;                // dist_device_sync: the sum on a GPU
    std::vector<NDArray> gpu_copies;  // and the values copied there
  };

  // Hands the servers' answer to a push to the operation that waits for it, whichever
  // of the two comes first.
  class PushState {
   public:
    void Finish(const std::string& error) {
      engine::CallbackOnComplete cb;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (done_) return;
        done_ = true;
        error_ = error;
        if (!waiting_) return;
        cb = cb_;
      }
      Complete(cb, error);
    }
    void Wait(const engine::CallbackOnComplete& cb) {
      std::string error;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!done_) {
          waiting_ = true;
          cb_ = cb;
          return;
        }
        error = error_;
      }
      Complete(cb, error);
    }

   private:
    std::mutex mu_;
    bool done_ = false, waiting_ = false;
    std::string error_;
    engine::CallbackOnComplete cb_;
  };

  static void Complete(const engine::CallbackOnComplete& cb, const std::string& e) {
    if (e.empty()) {
      cb();
    } else {
      cb(std::make_exception_ptr(Error(ErrorKind::kRuntime, "kvstore worker: " + e)));
    }
  }

  KeyInfo& Info(int key, const char* what) {
    auto it = keys_.find(key);
    WEFT_CHECK(it != keys_.end(), kNotFound, "kvstore ", what, ": key '", KeyText(key), "' was never initialised");
    return it->second;
  }

  // A small key lives on one server; a big one is cut into one range per server, at
  // multiples of 4 elements so that compressed ranges split on byte boundaries.
  std::vector<Range> Split(int key, int64_t size) const {
    const int s = van_.num_servers();
    if (size < cfg_.bigarray_bound || s == 1) return {{static_cast<int>((key * 2654435761u) % s), 0,
                                                       static_cast<uint64_t>(size)}};
    std::vector<Range> out;
    int64_t begin = 0;
    for (int i = 0; i < s; ++i) {
      int64_t end = i == s - 1 ? size : ((size * (i + 1) / s) / 4) * 4;
      out.push_back({i, static_cast<uint64_t>(begin), static_cast<uint64_t>(end - begin)});
      begin = end;
    }
    return out;
  }

  std::shared_ptr<Request> MakeRequest(MsgType type, int key, const KeyInfo& info, const void* send, void* recv,
                                       std::shared_ptr<void> keep) const {
    auto r = std::make_shared<Request>();
    r->type = type;
    r->key = key;
    r->dtype = static_cast<int32_t>(info.dtype);
    r->total = static_cast<uint64_t>(info.size);
    r->keep = std::move(keep);
    const size_t elem = DTypeSize(info.dtype);
    const bool compressed = type == MsgType::kPush && compression_.active();
    for (const Range& rg : info.ranges) {
      Piece p;
      p.server = rg.server;
      p.offset = rg.offset;
      p.count = rg.count;
      if (send != nullptr) {
        p.send = static_cast<const uint8_t*>(send) + (compressed ? rg.offset / 4 : rg.offset * elem);
        p.send_bytes = compressed ? GradientCompression::CompressedBytes(rg.count) : rg.count * elem;
      }
      if (recv != nullptr) {
        p.recv = static_cast<uint8_t*>(recv) + rg.offset * elem;
        p.recv_bytes = rg.count * elem;
      }
      r->pieces.push_back(p);
    }
    return r;
  }

  // A row pull of `rows` (sorted) into the host array dst (rows.size() rows): one piece per
  // server whose range meets a requested row, its answers gathered into dst when all came.
  static std::shared_ptr<Request> MakeRowRequest(int key, const KeyInfo& info, const std::vector<int64_t>& rows,
                                                 const NDArray& dst) {
    struct Buffers {
      std::vector<std::vector<int64_t>> sends;  // per piece: row length, then its row ids
      std::vector<char> recv;                   // the pieces' answers, one after the other
    };
    auto mem = std::make_shared<Buffers>();
    auto r = std::make_shared<Request>();
    r->type = MsgType::kPullRows;
    r->key = key;
    r->dtype = static_cast<int32_t>(info.dtype);
    r->total = static_cast<uint64_t>(info.size);
    const int64_t row_len = info.shape[0] == 0 ? 0 : info.size / info.shape[0];
    const size_t elem = DTypeSize(info.dtype);
    std::vector<size_t> recv_at;
    size_t recv_bytes = 0;
    for (const Range& rg : info.ranges) {
      const int64_t lo = static_cast<int64_t>(rg.offset), hi = lo + static_cast<int64_t>(rg.count);
      std::vector<int64_t> payload{row_len};
      size_t bytes = 0;
      for (int64_t row : rows) {
        const int64_t b = std::max(row * row_len, lo), e = std::min((row + 1) * row_len, hi);
        if (b >= e) continue;
        payload.push_back(row);
        bytes += static_cast<size_t>(e - b) * elem;
      }
      if (payload.size() == 1) continue;
      Piece p;
      p.server = rg.server;
      p.offset = rg.offset;
      p.count = rg.count;
      p.send_bytes = payload.size() * sizeof(int64_t);
      p.recv_bytes = bytes;
      recv_at.push_back(recv_bytes);
      recv_bytes += bytes;
      mem->sends.push_back(std::move(payload));
      r->pieces.push_back(p);
    }
    mem->recv.resize(recv_bytes);
    for (size_t i = 0; i < r->pieces.size(); ++i) {
      r->pieces[i].send = mem->sends[i].data();
      r->pieces[i].recv = mem->recv.data() + recv_at[i];
    }
    r->keep = mem;
    // Scatters the answers into dst's rows before the operation completes.
    Request* raw = r.get();
    auto scatter = [mem, raw, rows, row_len, elem, dst]() {
      char* out = static_cast<char*>(dst.data().dptr);
      for (size_t i = 0; i < raw->pieces.size(); ++i) {
        const Piece& p = raw->pieces[i];
        const char* in = static_cast<const char*>(p.recv);
        const int64_t lo = static_cast<int64_t>(p.offset), hi = lo + static_cast<int64_t>(p.count);
        for (size_t k = 1; k < mem->sends[i].size(); ++k) {
          const int64_t row = mem->sends[i][k];
          const int64_t b = std::max(row * row_len, lo), e = std::min((row + 1) * row_len, hi);
          const size_t at = static_cast<size_t>(std::lower_bound(rows.begin(), rows.end(), row) - rows.begin());
          std::memcpy(out + (at * row_len + (b - row * row_len)) * elem, in, static_cast<size_t>(e - b) * elem);
          in += static_cast<size_t>(e - b) * elem;
        }
      }
    };
    r->scatter = scatter;
    return r;
  }

  // The packed 2-bit form of src, with this worker's residual (error feedback).
  NDArray Compress(KeyInfo& info, const NDArray& src, int priority) {
    WEFT_CHECK(info.dtype == DType::kFloat32, kType, "kvstore: 2-bit gradient compression needs float32 values, got ",
               DTypeName(info.dtype));
    if (info.residual.is_none()) {
      info.residual = NDArray(info.shape, Context::CPU(), DType::kFloat32);
      NDArray r = info.residual;
      engine::Engine::Get()->PushSync([r](engine::RunContext) {
        std::memset(r.data().dptr, 0, r.data().Bytes());
      }, Context::CPU(), {}, {r.var()});
      info.packed = NDArray(Shape{static_cast<int64_t>(GradientCompression::CompressedBytes(info.size))},
                            Context::CPU(), DType::kUint8);
    }
    NDArray res = info.residual, packed = info.packed;
    float threshold = compression_.threshold();
    engine::Engine::Get()->PushSync(
        [src, res, packed, threshold](engine::RunContext) {
          GradientCompression::Quantize(src.data().ptr<float>(), res.data().ptr<float>(),
                                        packed.data().ptr<uint8_t>(), src.Size(), threshold);
        },
        Context::CPU(), {src.var()}, {res.var(), packed.var()}, engine::FnProperty::kNormal, priority,
        "KVStoreCompress");
    return packed;
  }

  Config cfg_;
  bool sync_;
  bool device_;  // dist_device_sync: values on GPUs are summed on a GPU before sending
  Van van_;
  std::unordered_map<int, KeyInfo> keys_;
};

}  // namespace

std::unique_ptr<KVStore> CreateDistStore(const std::string& type) {
  std::string role = RoleFromEnv();
  if (role == "server") return std::make_unique<ServerStore>(type);
  WEFT_CHECK(role == "worker", kValue, "kvstore: a scheduler process (DMLC_ROLE=scheduler) runs the scheduler "
             "loop, not a store");
  return std::make_unique<WorkerStore>(type, Config::FromEnv());
}

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

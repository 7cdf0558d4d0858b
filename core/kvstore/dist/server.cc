// The server: holds a range of each key it is given, sums the workers' pushes (dist_sync)
// or applies each as it comes (dist_async), runs the updater, answers pulls.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/kvstore/dist/dist.h"
#include "core/kvstore/dist/protocol.h"
#include "core/kvstore/dist/server_store.h"

namespace weft {
namespace kvstore {
namespace dist {

namespace {

// A request answered once every worker has pushed in the round: a push (answered with an
// ack, or with the new value when pull_back) or a pull that came behind its sender's push.
struct Waiting {
  std::string identity;
  uint64_t request;
  bool pull_back;
  bool push;  // the sender's push of the round (else a pull held behind it)
};

// Requests held per key while a sync round fills, per worker: a worker has at most its
// push and a pull or two behind it waiting, so more is a broken or hostile peer.
constexpr size_t kMaxHeldPerWorker = 64;

struct KeyState {
  NDArray stored, merged;  // 1-D over this server's range
  uint64_t offset = 0, count = 0, total = 0;
  int pushes = 0;
  std::shared_ptr<zmq_msg_t> held;  // the round's first push, until the second comes
  std::vector<Waiting> waiting;
};

// A checked row push: per row, the span [b, e) of the server's range (relative to its
// start) that it carries, and where the values begin in the payload.
struct RowPush {
  std::vector<std::pair<int64_t, int64_t>> spans;
  const char* values = nullptr;
};

// Checks a row push against the key's range before anything is read from the values:
// the row length divides the key, the row count fits the payload, each id lies in
// [0, rows), the ids strictly increase, each row meets the range, and the payload holds
// exactly those rows' elements in the range. Throws (the worker gets the reason) otherwise.
RowPush CheckRowPush(const Header& h, const KeyState& ks, const void* payload, size_t nbytes) {
  const char* bytes = static_cast<const char*>(payload);
  int64_t row_len = 0, k = 0;
  std::memcpy(&row_len, bytes, 8);
  std::memcpy(&k, bytes + 8, 8);
  const int64_t total = static_cast<int64_t>(ks.total), lo = static_cast<int64_t>(ks.offset),
                hi = lo + static_cast<int64_t>(ks.count);
  WEFT_CHECK(row_len > 0 && total % row_len == 0, kValue, "row push of key ", h.key, ": a row length of ", row_len,
             " does not divide the key's ", total, " elements");
  WEFT_CHECK(k >= 0 && static_cast<uint64_t>(k) <= (nbytes - 16) / 8, kValue, "row push of key ", h.key,
             ": a row count of ", k, " does not fit a payload of ", nbytes, " bytes");
  const int64_t rows = total / row_len;
  const size_t elem = DTypeSize(static_cast<DType>(h.dtype));
  RowPush out;
  size_t value_bytes = 0;
  int64_t prev = -1;
  for (int64_t i = 0; i < k; ++i) {
    int64_t r = 0;
    std::memcpy(&r, bytes + 16 + 8 * i, 8);
    WEFT_CHECK(r >= 0 && r < rows, kIndex, "row push of key ", h.key, ": row id ", r, " at position ", i,
               " is out of range [0, ", rows, ")");
    WEFT_CHECK(r > prev, kValue, "row push of key ", h.key, ": row ids must be strictly increasing, got ", prev,
               " then ", r);
    prev = r;
    const int64_t b = std::max(r * row_len, lo), e = std::min((r + 1) * row_len, hi);
    WEFT_CHECK(b < e, kValue, "row push of key ", h.key, ": row ", r, " has no element in this server's range [", lo,
               ", ", hi, ")");
    out.spans.emplace_back(b - lo, e - lo);
    value_bytes += static_cast<size_t>(e - b) * elem;
  }
  const size_t want = 16 + 8 * static_cast<size_t>(k) + value_bytes;
  WEFT_CHECK(nbytes == want, kValue, "row push of key ", h.key, ": expected ", want, " payload bytes for ", k,
             " rows, got ", nbytes);
  out.values = bytes + 16 + 8 * k;
  return out;
}

}  // namespace

ServerStore::ServerStore(const std::string& type) : KVStore(type) {}

void ServerStore::Init(const std::vector<std::string>&, const std::vector<NDArray>&) { NotWorker(); }
void ServerStore::Push(const std::vector<std::string>&, const std::vector<NDArray>&, int) { NotWorker(); }
void ServerStore::Pull(const std::vector<std::string>&, const std::vector<NDArray>&, int) { NotWorker(); }

void ServerStore::NotWorker() const {
  Throw(ErrorKind::kUnsupported, "kvstore: this process is a server (DMLC_ROLE=server); push, pull and init are "
        "for workers, a server only runs its loop");
}

void ServerStore::RunServer(Controller controller) {
  Config cfg = Config::FromEnv();
  Curve curve = Curve::FromEnv();
  CheckTransport(cfg, curve.on, {cfg.root_uri, cfg.host}, "server");
  void* ctx = zmq_ctx_new();
  ZapHandler zap(ctx, curve, "server");
  void* router = NewSocket(ctx, ZMQ_ROUTER);
  void* sched = NewSocket(ctx, ZMQ_DEALER);
  AuthListen(router, curve, cfg.host, /*bulk=*/true);
  LimitInbound(router, cfg.max_message_bytes, cfg.queue_limit);
  AuthConnect(sched, curve, cfg.root_uri, /*bulk=*/false);
  ConnectionWatch sched_watch(ctx, sched);
  LogLimit limit;
  std::string bind = "tcp://" + cfg.host + ":*";
  std::string failure;
  char endpoint[256] = {0};
  size_t len = sizeof(endpoint);
  if (zmq_bind(router, bind.c_str()) != 0 || zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len) != 0 ||
      zmq_connect(sched, cfg.SchedulerEndpoint().c_str()) != 0) {
    failure = std::string("cannot bind ") + bind + " or reach the scheduler: " + zmq_strerror(zmq_errno());
  }
  char hostname[256] = {0};
  gethostname(hostname, sizeof(hostname) - 1);
  Header reg;
  reg.type = static_cast<uint16_t>(MsgType::kRegister);
  std::string info = std::string("server\n") + endpoint + "\n" + hostname + "\n" + std::to_string(getpid()) + "\n";
  if (failure.empty()) SendMessage(sched, nullptr, reg, info.data(), info.size());

  std::unordered_map<int64_t, KeyState> keys;
  std::unordered_map<std::string, int> workers;  // routing id -> rank, from the address book
  int rank = -1;
  const auto started = Clock::now();
  auto last_heartbeat = Clock::now(), last_heard = Clock::now();
  bool sched_closed = false;
  Clock::time_point sched_closed_at;

  auto reply = [&](const std::string& id, const Header& req, MsgType type, const void* data = nullptr, size_t n = 0,
                   std::shared_ptr<void> keep = nullptr) {
    Header h;
    h.type = static_cast<uint16_t>(type);
    h.request = req.request;
    h.key = req.key;
    h.offset = req.offset;
    h.count = req.count;
    h.total = req.total;
    h.dtype = req.dtype;
    SendMessage(router, &id, h, data, n, std::move(keep));
  };
  auto reply_error = [&](const std::string& id, const Header& req, const std::string& msg) {
    std::string text = "server " + std::to_string(rank) + ": " + msg;
    reply(id, req, MsgType::kError, text.data(), text.size());
  };
  auto apply = [&](int64_t key, KeyState& ks) {
    if (updater_) {
      updater_(static_cast<int>(key), std::to_string(key), ks.merged, &ks.stored);
    } else {
      // The sum becomes the stored value by trading buffers, not by copying. The old stored
      // buffer is written again only by the first push of the next round; in sync mode
      // every answer that went out from it without a copy (the previous round's) has
      // arrived by then, since each worker pushes only after its pulls are answered.
      ks.stored.WaitToWrite();
      std::swap(ks.stored, ks.merged);
    }
  };

  // Handles one request from a worker; errors go back to the worker as error replies.
  // The request has passed CheckDataRequest: its sizes are consistent and within limits.
  auto handle = [&](const std::string& id, int sender, const Header& h, const void* payload, size_t nbytes,
                    Frames& frames, size_t payload_part) {
    auto type = static_cast<MsgType>(h.type);
    if (type == MsgType::kCommand) {
      controller(h.head, std::string(static_cast<const char*>(payload ? payload : ""), nbytes));
      reply(id, h, MsgType::kAck);
      return;
    }
    DType dtype = static_cast<DType>(h.dtype);
    if (type == MsgType::kInit) {
      // Rank 0 alone sets the initial values, once per key (as every worker's store does).
      WEFT_CHECK(sender == 0, kValue, "init of key ", h.key, " from worker ", sender, ": only worker 0 initialises");
      WEFT_CHECK(keys.find(h.key) == keys.end(), kValue, "init of key ", h.key, ": the key is initialised already");
      KeyState ks;
      ks.offset = h.offset;
      ks.count = h.count;
      ks.total = h.total;
      ks.stored = NDArray(Shape{static_cast<int64_t>(h.count)}, Context::CPU(), dtype);
      ks.merged = NDArray(Shape{static_cast<int64_t>(h.count)}, Context::CPU(), dtype);
      if (nbytes) std::memcpy(ks.stored.data().dptr, payload, nbytes);
      keys[h.key] = std::move(ks);
      reply(id, h, MsgType::kAck);
      return;
    }
    auto it = keys.find(h.key);
    WEFT_CHECK(it != keys.end(), kNotFound, "key ", h.key, " was never initialised");
    KeyState& ks = it->second;
    WEFT_CHECK(ks.offset == h.offset && ks.count == h.count && ks.total == h.total &&
                   ks.stored.dtype() == dtype, kValue, "key ", h.key, ": the request's range or dtype [",
               h.offset, ", +", h.count, ") of ", h.total, " ", DTypeName(dtype), " differs from the stored [",
               ks.offset, ", +", ks.count, ") of ", ks.total, " ", DTypeName(ks.stored.dtype()));
    if (type == MsgType::kPullRows) {
      // The worker sends a row pull only once its pushes of the key are answered, so the
      // round is summed: the rows are read now. Every claim is checked before any read.
      std::vector<int64_t> ids(nbytes / 8);
      std::memcpy(ids.data(), payload, nbytes);
      const int64_t row_len = ids[0];
      const int64_t total = static_cast<int64_t>(ks.total), lo = static_cast<int64_t>(ks.offset),
                    hi = lo + static_cast<int64_t>(ks.count);
      WEFT_CHECK(row_len > 0 && total % row_len == 0, kValue, "row pull of key ", h.key, ": a row length of ",
                 row_len, " does not divide the key's ", total, " elements");
      const int64_t rows = total / row_len;
      const size_t elem = DTypeSize(dtype);
      size_t bytes = 0;
      for (size_t i = 1; i < ids.size(); ++i) {
        const int64_t r = ids[i];
        WEFT_CHECK(r >= 0 && r < rows, kIndex, "row pull of key ", h.key, ": row id ", r, " at position ", i - 1,
                   " is out of range [0, ", rows, ")");
        WEFT_CHECK(i == 1 || r > ids[i - 1], kValue, "row pull of key ", h.key,
                   ": row ids must be strictly increasing, got ", ids[i - 1], " then ", r);
        const int64_t b = std::max(r * row_len, lo), e = std::min((r + 1) * row_len, hi);
        WEFT_CHECK(b < e, kValue, "row pull of key ", h.key, ": row ", r, " has no element in this server's range [",
                   lo, ", ", hi, ")");
        bytes += static_cast<size_t>(e - b) * elem;
      }
      auto out = std::make_shared<std::vector<char>>(bytes);
      ks.stored.WaitToRead();
      const char* src = static_cast<const char*>(ks.stored.data().dptr);
      size_t at = 0;
      for (size_t i = 1; i < ids.size(); ++i) {
        const int64_t b = std::max(ids[i] * row_len, lo), e = std::min((ids[i] + 1) * row_len, hi);
        std::memcpy(out->data() + at, src + (b - lo) * elem, static_cast<size_t>(e - b) * elem);
        at += static_cast<size_t>(e - b) * elem;
      }
      reply(id, h, MsgType::kPullReply, out->data(), out->size(), out);
      return;
    }
    if (type == MsgType::kPull) {
      // A worker sends its pull right behind its push, without waiting for the answer to
      // the push: while that push waits for the other workers', the pull waits with it
      // and is answered with the summed value.
      if ((h.flags & kFlagSync) &&
          std::any_of(ks.waiting.begin(), ks.waiting.end(), [&](const Waiting& w) { return w.identity == id; })) {
        WEFT_CHECK(std::count_if(ks.waiting.begin(), ks.waiting.end(),
                                 [&](const Waiting& w) { return w.identity == id; }) < int(kMaxHeldPerWorker),
                   kValue, "pull of key ", h.key, " from worker ", sender, ": over ", kMaxHeldPerWorker,
                   " requests of this worker are held already");
        ks.waiting.push_back({id, h.request, /*pull_back=*/true, /*push=*/false});
        return;
      }
      ks.stored.WaitToRead();
      TBlob b = ks.stored.data();
      // In sync mode the stored buffer changes only once every worker has pushed again,
      // which each does only after its pulls are complete: it can go out without a copy.
      std::shared_ptr<void> keep;
      if (h.flags & kFlagSync) keep = ks.stored.chunk();
      reply(id, h, MsgType::kPullReply, b.dptr, b.Bytes(), std::move(keep));
      return;
    }
    const bool compressed = h.flags & kFlagCompressed;
    const bool sync = h.flags & kFlagSync;
    // A row push: every claim is checked before anything is written (RowPush).
    RowPush rows;
    if (type == MsgType::kPushRows) rows = CheckRowPush(h, ks, payload, nbytes);
    if (sync) {
      // One push per worker and round: a second one would be counted as another worker's.
      WEFT_CHECK(std::none_of(ks.waiting.begin(), ks.waiting.end(),
                              [&](const Waiting& w) { return w.identity == id && w.push; }),
                 kValue, "push of key ", h.key, " from worker ", sender,
                 ": this worker's push of the current round is still waiting for the others'");
    }
    const bool first = !sync || ks.pushes == 0;
    const int64_t n = static_cast<int64_t>(h.count);
    if (type == MsgType::kPushRows) {
      // The round's sum gets the rows; the rest of the range is as if zeros were pushed.
      ks.merged.WaitToWrite();
      char* dst = static_cast<char*>(ks.merged.data().dptr);
      const size_t elem = DTypeSize(dtype);
      if (ks.held) {
        std::memcpy(dst, zmq_msg_data(ks.held.get()), static_cast<size_t>(n) * elem);
        ks.held.reset();
      } else if (first) {
        std::memset(dst, 0, static_cast<size_t>(n) * elem);
      }
      const char* src = rows.values;
      for (const auto& [b, e] : rows.spans) {
        AddInto(dst + b * elem, src, e - b, dtype, /*assign=*/false, false);
        src += static_cast<size_t>(e - b) * elem;
      }
    } else if (sync && first && !compressed && nbytes > 0 && cfg.num_workers > 1) {
      // The first push of a round stays in its message and the second is added to it in
      // one pass (merged = first + second) instead of copying the first into merged and
      // adding the second: three passes over the range instead of five for two workers.
      ks.held = frames.Take(payload_part);
    } else if (ks.held && !compressed) {
      ks.merged.WaitToWrite();
      SumInto(ks.merged.data().dptr, zmq_msg_data(ks.held.get()), payload, n, dtype, false);
      ks.held.reset();
    } else {
      bool assign = first;
      if (first || ks.held) ks.merged.WaitToWrite();
      void* dst = ks.merged.data().dptr;
      if (ks.held) {
        // A compressed push after a plain one (compression switched on mid-round).
        AddInto(dst, zmq_msg_data(ks.held.get()), n, dtype, /*assign=*/true, false);
        ks.held.reset();
        assign = false;
      }
      if (compressed) {
        GradientCompression::Dequantize(static_cast<const uint8_t*>(payload), static_cast<float*>(dst), n,
                                        h.threshold, assign);
      } else {
        AddInto(dst, payload, n, dtype, assign, false);
      }
    }
    const bool pull_back = h.flags & kFlagPullBack;
    if (!sync) {
      apply(h.key, ks);
      if (pull_back) {
        ks.stored.WaitToRead();
        TBlob b = ks.stored.data();
        reply(id, h, MsgType::kPullReply, b.dptr, b.Bytes());
      } else {
        reply(id, h, MsgType::kAck);
      }
      return;
    }
    ks.waiting.push_back({id, h.request, pull_back, /*push=*/true});
    if (++ks.pushes < cfg.num_workers) return;
    apply(h.key, ks);
    ks.pushes = 0;
    Header ack = h;
    for (const Waiting& w : ks.waiting) {
      ack.request = w.request;
      if (w.pull_back) {
        // As for pulls in sync mode: the stored range stays as it is until every worker,
        // this one included, has pushed again, so it goes out without a copy.
        ks.stored.WaitToRead();
        TBlob b = ks.stored.data();
        reply(w.identity, ack, MsgType::kPullReply, b.dptr, b.Bytes(), ks.stored.chunk());
      } else {
        reply(w.identity, ack, MsgType::kAck);
      }
    }
    ks.waiting.clear();
  };

  while (failure.empty()) {
    // Workers' requests wait in the socket until the address book says who the workers are.
    zmq_pollitem_t items[3] = {{sched, 0, ZMQ_POLLIN, 0}, {sched_watch.events(), 0, ZMQ_POLLIN, 0},
                               {router, 0, ZMQ_POLLIN, 0}};
    zmq_poll(items, rank >= 0 ? 3 : 2, static_cast<long>(cfg.heartbeat_interval * 1000));
    bool stop = false;
    for (Frames f; f.Recv(sched);) {
      Header h;
      const void* payload = nullptr;
      size_t nbytes = 0;
      std::string why;
      if (!ParseMessage(f, 0, &h, &payload, &nbytes, &why)) {
        WEFT_LOG(Warning) << "kvstore server: dropped a malformed message from the scheduler: " << why;
        continue;
      }
      last_heard = Clock::now();
      auto type = static_cast<MsgType>(h.type);
      if (type == MsgType::kAddressBook && rank < 0) {
        AddressBook book;
        if (!AddressBook::Parse(std::string(static_cast<const char*>(payload ? payload : ""), nbytes), &book, &why)) {
          failure = "the scheduler's address book is malformed: " + why;
          break;
        }
        rank = h.head;
        for (const auto& [r, token] : book.workers) workers[WorkerRoutingId(r, token)] = r;
      }
      if (type == MsgType::kTerminate) stop = true;
      if (type == MsgType::kNodeLost) failure = std::string(static_cast<const char*>(payload), nbytes);
    }
    if (stop || !failure.empty()) break;
    for (Frames f; rank >= 0 && f.Recv(router);) {
      Header h;
      const void* payload = nullptr;
      size_t nbytes = 0;
      std::string why;
      if (f.size() < 2 || !ParseMessage(f, 1, &h, &payload, &nbytes, &why)) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore server " << rank << ": dropped a malformed message from " << f.PeerAddress(1)
                            << ": " << (why.empty() ? "no header" : why);
        }
        continue;
      }
      std::string id = f.str(0);
      auto w = workers.find(id);
      if (w == workers.end()) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore server " << rank << ": dropped a " << MsgTypeName(h.type) << " from "
                            << f.PeerAddress(1) << ", which is no registered worker";
        }
        continue;
      }
      if (h.sender != w->second) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore server " << rank << ": dropped a " << MsgTypeName(h.type) << " from worker "
                            << w->second << " that claims to come from worker " << h.sender;
        }
        continue;
      }
      if (!CheckDataRequest(h, nbytes, cfg, &why)) {
        if (limit.Allow()) {
          WEFT_LOG(Warning) << "kvstore server " << rank << ": refused " << MsgTypeName(h.type) << " from worker "
                            << w->second << ": " << why;
        }
        reply_error(id, h, "refused " + std::string(MsgTypeName(h.type)) + ": " + why);
        continue;
      }
      try {
        handle(id, w->second, h, payload, nbytes, f, 2);
      } catch (const std::exception& e) {
        reply_error(id, h, e.what());
      }
    }
    if (SecondsSince(last_heartbeat) >= cfg.heartbeat_interval) {
      Header hb;
      hb.type = static_cast<uint16_t>(MsgType::kHeartbeat);
      SendMessage(sched, nullptr, hb);
      last_heartbeat = Clock::now();
    }
    if (!sched_watch.Closed().empty() && !sched_closed) {
      sched_closed = true;
      sched_closed_at = Clock::now();
    }
    // The scheduler closes its connections when the job ends, right after the terminate
    // message: that message is read within the grace.
    if (sched_closed && SecondsSince(sched_closed_at) > CloseGrace(cfg))
      failure = "lost the scheduler at " + cfg.SchedulerEndpoint() + ": its connection closed";
    if (SecondsSince(last_heard) > cfg.heartbeat_timeout)
      failure = "lost the scheduler at " + cfg.SchedulerEndpoint() + ": no answer for " +
                SecondsText(cfg.heartbeat_timeout);
    if (rank < 0 && SecondsSince(started) > cfg.register_timeout + cfg.heartbeat_timeout)
      failure = "no address book from the scheduler at " + cfg.SchedulerEndpoint() + " within " +
                SecondsText(cfg.register_timeout + cfg.heartbeat_timeout) + " (WEFT_KVSTORE_REGISTER_TIMEOUT)";
  }
  // Pending updates read the stored arrays: let them finish before the memory goes.
  for (auto& [k, ks] : keys) ks.stored.WaitToRead();
  sched_watch.Close();
  CloseSocket(router, 0);
  CloseSocket(sched, 0);
  zmq_ctx_term(ctx);
  zap.Join();
  WEFT_CHECK(failure.empty(), kRuntime, "kvstore server: ", failure);
}

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

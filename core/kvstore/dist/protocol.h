// The wire format and the process environment of the distributed store.
//
// Every message is a ZeroMQ multipart message: one fixed-size, versioned binary header and,
// for messages that carry data, one payload frame sent without copying. A message whose
// header or sizes do not check out is dropped and logged, never trusted.
#pragma once

#include <zmq.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace weft {
namespace kvstore {
namespace dist {

constexpr uint32_t kMagic = 0x4B564657;  // "WFVK" read as little-endian bytes
// Version 2: the address book is a list of records ("server RANK ENDPOINT", "worker RANK
// TOKEN") and workers speak to servers under the routing id their token makes.
constexpr uint16_t kVersion = 2;

enum class MsgType : uint16_t {
  // node <-> scheduler
  kRegister = 1,      // payload: role \n endpoint \n host \n pid
  kAddressBook = 2,   // head = rank; payload: AddressBook records, one a line
  kHeartbeat = 3,
  kHeartbeatAck = 4,
  kBarrier = 5,
  kBarrierDone = 6,
  kExit = 7,          // a worker is done
  kBye = 8,           // to workers: the job is over
  kTerminate = 9,     // to servers: stop serving
  kNodeLost = 10,     // payload: which node was lost (or why the job failed)
  // worker -> server
  kInit = 20,
  kPush = 21,
  kPull = 22,
  kCommand = 23,      // head = command; payload = body
  // kv.row_sparse_pull: payload = int64 row length, then int64 row ids (strictly increasing,
  // each row meeting the server's range); answered by a kPullReply with, row after row,
  // each row's elements that lie in the server's range.
  kPullRows = 24,
  // A push of a row_sparse value: payload = int64 row length, int64 row count k, k int64
  // row ids (strictly increasing, each meeting the server's range), then, row after row,
  // each row's elements that lie in the server's range. Counted in its round as a push
  // (zeros elsewhere); every server of the key gets one, with k = 0 where no row meets it.
  kPushRows = 25,
  // server -> worker
  kAck = 40,
  kPullReply = 41,
  kError = 42,        // payload: the message
};

enum MsgFlags : uint32_t {
  kFlagSync = 1,        // dist_sync: sum every worker's push before updating
  kFlagCompressed = 2,  // payload is 2-bit compressed (GradientCompression)
  kFlagPullBack = 4,    // push+pull: answer the push with the updated value (a pull reply)
  kKnownFlags = kFlagSync | kFlagCompressed | kFlagPullBack,
};

// Keys on the wire are the store's integer key ids: 0 <= key < 2^31.
constexpr int64_t kMaxKey = int64_t{1} << 31;
// The scheduler's messages are small (registrations, barriers, heartbeats): anything
// larger is refused by ZeroMQ before it is read.
constexpr int64_t kMaxSchedulerMessageBytes = 64 * 1024;

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t type = 0;
  int32_t sender = -1;        // rank of the sending worker (-1 for others)
  uint32_t flags = 0;
  uint64_t request = 0;       // the request a reply answers
  int64_t key = 0;
  uint64_t offset = 0;        // first element of the range of the key this message is about
  uint64_t count = 0;         // elements in the range
  uint64_t total = 0;         // elements of the whole key
  int32_t dtype = 0;
  int32_t head = 0;
  float threshold = 0.f;      // compression threshold
  uint32_t reserved = 0;
  uint64_t payload_bytes = 0; // size of the payload frame (0: none)
};
static_assert(sizeof(Header) == 80, "the header layout is part of the wire format");

const char* MsgTypeName(uint16_t type);

// What the launcher's environment says about the job.
struct Config {
  std::string role;           // worker, server, scheduler
  std::string root_uri;       // the scheduler's address (an IPv4 address or a host name)
  int root_port = 0;
  int num_servers = 0;
  int num_workers = 0;
  std::string host;           // the address this node binds (loopback unless configured)
  // Seconds without news after which a node is lost (WEFT_KVSTORE_HEARTBEAT_TIMEOUT, or
  // ps-lite's PS_HEARTBEAT_TIMEOUT): 20 by default, so that a dead node ends the job within
  // 30 s (detection, the notice, and each process's 2 s to fail on its own).
  double heartbeat_timeout = 20;
  double heartbeat_interval = 1;
  // Seconds the scheduler waits for every node to register (WEFT_KVSTORE_REGISTER_TIMEOUT).
  double register_timeout = 60;
  // Seconds a worker waits for the answer to one request or barrier
  // (WEFT_KVSTORE_REQUEST_TIMEOUT). Long by default: in dist_sync a push is answered only
  // when every worker has pushed, and one worker may legitimately be busy (evaluating,
  // saving a checkpoint) for minutes while the others wait.
  double request_timeout = 600;
  // The largest payload a server accepts in one message, and so the largest range of a key
  // it allocates (WEFT_KVSTORE_MAX_MESSAGE_BYTES, default 2 GiB; big keys are split over
  // the servers first).
  int64_t max_message_bytes = int64_t{1} << 31;
  // Messages a listening socket queues per peer before it stops reading from that peer
  // (WEFT_KVSTORE_QUEUE_LIMIT): a flooding peer is slowed down, never buffered without end.
  int queue_limit = 10000;
  // WEFT_KVSTORE_ALLOW_PLAINTEXT=1: run without CURVE on addresses other than loopback.
  bool allow_plaintext = false;
  int64_t bigarray_bound = 1000000;  // keys with at least this many elements are split

  static Config FromEnv();
  std::string SchedulerEndpoint() const;
};

// A received multipart message.
class Frames {
 public:
  Frames() = default;
  Frames(const Frames&) = delete;
  Frames& operator=(const Frames&) = delete;
  ~Frames();
  // Receives every part of the next message; false when none is waiting (non-blocking) or
  // on an error.
  bool Recv(void* socket);
  size_t size() const { return parts_.size(); }
  const void* data(size_t i) { return zmq_msg_data(&parts_[i]); }
  size_t bytes(size_t i) { return zmq_msg_size(&parts_[i]); }
  std::string str(size_t i) { return std::string(static_cast<const char*>(data(i)), bytes(i)); }
  // The IP address the message came from, for logs.
  std::string PeerAddress(size_t i);
  // The descriptor of the connection part i came through (-1 when unknown), to match
  // the connection to ConnectionWatch's closes.
  int SourceFd(size_t i);
  // Moves part i out (it is left empty): the message lives, and its data stays where it
  // is, until the last copy of the result goes.
  std::shared_ptr<zmq_msg_t> Take(size_t i);

 private:
  std::vector<zmq_msg_t> parts_;
};

// Checks what a worker's request to a server claims before anything is allocated or
// touched: the type, the flags, the key, the dtype, the range (sizes in bytes computed
// without overflow and within cfg.max_message_bytes), the payload's size for the type and
// the compression threshold. False with the reason in *why.
bool CheckDataRequest(const Header& h, size_t payload_bytes, const Config& cfg, std::string* why);

// The address book the scheduler sends each node once every node has registered.
struct AddressBook {
  std::vector<std::string> servers;                   // endpoints, by server rank
  std::vector<std::pair<int, std::string>> workers;   // (rank, token) of the workers the reader may hear
  std::string Text() const;
  // Parses Text()'s form; false with the reason in *why.
  static bool Parse(const std::string& text, AddressBook* out, std::string* why);
};
// The routing id a worker uses towards the servers: its rank and the secret token the
// scheduler gave it, so that a server hears only registered workers, each under its rank.
std::string WorkerRoutingId(int rank, const std::string& token);

// Refuses (throws) to run without CURVE unless every address is loopback, or
// WEFT_KVSTORE_ALLOW_PLAINTEXT=1 is set (then warns loudly). `addresses` are IPv4 numbers
// or tcp:// endpoints.
void CheckTransport(const Config& cfg, bool curve_on, const std::vector<std::string>& addresses, const char* who);

// Checks frames [first, first+1(+1)) as header + optional payload; on success fills *h and
// *payload/*payload_bytes, else says why in *why.
bool ParseMessage(Frames& f, size_t first, Header* h, const void** payload, size_t* payload_bytes, std::string* why);

// Sends [identity?] header [payload]. The payload is sent without copying when `keep` is
// given (it holds the memory alive until ZeroMQ is done), else copied. Never blocks:
// returns false when the socket refused the message (a DEALER with no peer left).
bool SendMessage(void* socket, const std::string* identity, const Header& h, const void* payload = nullptr,
                 size_t payload_bytes = 0, std::shared_ptr<void> keep = nullptr);

// Authentication with the job's key pair: WEFT_KVSTORE_CURVE_PUBLIC_KEY and
// WEFT_KVSTORE_CURVE_SECRET_KEY (Z85 text as zmq_curve_keypair makes; tools/launch.py
// makes one per job). A listening node admits only peers that prove they hold the secret
// key; others are refused and logged. Connections use CURVE (encrypted, the key never
// sent, and the listener proves it holds the key too), except the bulk ones, between
// workers and servers, on loopback: those send the secret key as a PLAIN password,
// unencrypted, since CURVE would cost a single-host job about 3/4 of its throughput and
// only the local root, which can read the processes' environment anyway, can read
// loopback traffic. A server binds its port before the (CURVE-authenticated) scheduler
// publishes it, so no one else can be listening there when a worker sends the password.
// WEFT_KVSTORE_LOOPBACK_CURVE=1 uses CURVE for those too. Both ends of a connection choose
// by the same address. Without keys, CheckTransport allows loopback addresses only.
struct Curve {
  bool on = false;
  bool loopback_curve = false;
  std::string public_key, secret_key;  // Z85, 40 characters each
  static Curve FromEnv();
  // Whether a connection to `address` (IPv4 number or tcp:// endpoint) uses PLAIN; `bulk`:
  // between a worker and a server.
  bool Plain(const std::string& address, bool bulk) const;
};
// Makes `socket` authenticate what connects to it (bound at `address`), or prove the job's
// key to what it connects to at `address`. Nothing without keys.
void AuthListen(void* socket, const Curve& curve, const std::string& address, bool bulk);
void AuthConnect(void* socket, const Curve& curve, const std::string& address, bool bulk);

// Answers ZeroMQ's authentication requests (ZAP) for the sockets of `ctx`: only the job's
// public key passes. Bound before the call returns; the thread ends when the context is
// terminated (join it after zmq_ctx_term).
class ZapHandler {
 public:
  ZapHandler(void* ctx, const Curve& curve, std::string who);
  void Join();
  ~ZapHandler() { Join(); }

 private:
  void* socket_ = nullptr;
  std::thread thread_;
};

// Tells when the connections of a socket close. A killed process's connections close at
// once (the kernel closes its sockets), while the heartbeats take their whole timeout to
// notice it: this is how a dead peer is found within seconds. A host that vanishes without
// closing them is still found by the heartbeats.
class ConnectionWatch {
 public:
  ConnectionWatch(void* ctx, void* socket);
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;
  ~ConnectionWatch() { Close(); }
  // Closes the watch's socket: before zmq_ctx_term, which waits for every socket.
  void Close();
  // The socket to poll for events.
  void* events() const { return pair_; }
  // The descriptors of the connections that closed since the last call.
  std::vector<int> Closed();

 private:
  void* pair_ = nullptr;
};
// How long a node waits after a peer's connection closed before it calls the peer lost:
// the messages the peer sent before it left (the end of the job) are read first.
double CloseGrace(const Config& cfg);

void* NewSocket(void* ctx, int type);
// Bounds what a listening socket takes from each peer: messages larger than max_bytes
// end that peer's connection before they are read, and at most queue_limit messages wait.
void LimitInbound(void* socket, int64_t max_bytes, int queue_limit);
// Random bytes as hex (tokens), from the system's random source.
std::string RandomHex(size_t bytes);
void CloseSocket(void* socket, int linger_ms);

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point t);

// Bounds the warnings a node logs about what peers send: a stranger reconnecting in a loop
// or a member sending bad messages must not fill the disk with logs. Up to 20 a second
// are logged; the rest are counted and the count logged with the first warning after.
class LogLimit {
 public:
  // True when a warning may be logged now.
  bool Allow();

 private:
  Clock::time_point window_;
  int count_ = 0;
  int64_t suppressed_ = 0;
};
// "2.5 s": seconds as messages show them.
std::string SecondsText(double s);

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

#include "core/kvstore/dist/protocol.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/logging.h"
#include "core/kvstore/dist/dist.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_KV_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WEFT_KV_TSAN 1
#endif
#ifdef WEFT_KV_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace weft {
namespace kvstore {
namespace dist {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

int EnvInt(const char* name, int min_value) {
  const char* v = Env(name);
  WEFT_CHECK(v != nullptr, kValue, "kvstore dist: the environment variable ", name,
             " is not set (tools/launch.py sets it)");
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  WEFT_CHECK(*end == '\0' && x >= min_value && x < (1 << 20), kValue, "kvstore dist: expected ", name,
             " to be an integer >= ", min_value, ", got '", v, "'");
  return static_cast<int>(x);
}

double EnvSeconds(const char* name, double fallback) {
  const char* v = Env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  WEFT_CHECK(*end == '\0' && x > 0, kValue, "kvstore dist: expected ", name, " to be a number of seconds > 0, got '",
             v, "'");
  return x;
}

int64_t EnvInt64(const char* name, int64_t fallback, int64_t min_value, int64_t max_value) {
  const char* v = Env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  WEFT_CHECK(*end == '\0' && errno == 0 && x >= min_value && x <= max_value, kValue, "kvstore dist: expected ", name,
             " to be an integer in [", min_value, ", ", max_value, "], got '", v, "'");
  return x;
}

// a * b, or false when it does not fit in 64 bits.
bool MulFits(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

bool IsLoopback(const std::string& address) {
  std::string host = address;
  if (host.rfind("tcp://", 0) == 0) {
    host = host.substr(6);
    host = host.substr(0, host.rfind(':'));
  }
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// The IPv4 address of a network interface, by name.
std::string InterfaceAddress(const std::string& name) {
  ifaddrs* list = nullptr;
  WEFT_CHECK(getifaddrs(&list) == 0, kRuntime, "kvstore dist: cannot list the network interfaces");
  std::string found;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || name != a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
    found = buf;
    break;
  }
  freeifaddrs(list);
  WEFT_CHECK(!found.empty(), kValue, "kvstore dist: DMLC_INTERFACE='", name,
             "' names no network interface with an IPv4 address");
  return found;
}

// ZeroMQ binds numeric addresses only: host names are resolved here.
std::string Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  WEFT_CHECK(getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0 && res != nullptr, kValue,
             "kvstore dist: cannot resolve the host '", host, "'");
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  freeaddrinfo(res);
  return buf;
}

}  // namespace

std::string RoleFromEnv() {
  const char* r = Env("DMLC_ROLE");
  std::string role = r ? r : "worker";
  WEFT_CHECK(role == "worker" || role == "server" || role == "scheduler", kValue,
             "kvstore dist: expected DMLC_ROLE to be worker, server or scheduler, got '", role, "'");
  return role;
}

Config Config::FromEnv() {
  Config c;
  c.role = RoleFromEnv();
  const char* uri = Env("DMLC_PS_ROOT_URI");
  WEFT_CHECK(uri != nullptr, kValue, "kvstore dist: the environment variable DMLC_PS_ROOT_URI is not set "
             "(tools/launch.py sets it)");
  c.root_uri = Resolve(uri);
  c.root_port = EnvInt("DMLC_PS_ROOT_PORT", 1);
  c.num_servers = EnvInt("DMLC_NUM_SERVER", 1);
  c.num_workers = EnvInt("DMLC_NUM_WORKER", 1);
  // Nodes listen on loopback unless told where: an explicit host, or an interface.
  if (const char* h = Env("DMLC_NODE_HOST")) {
    c.host = Resolve(h);
  } else if (const char* i = Env("DMLC_INTERFACE")) {
    c.host = InterfaceAddress(i);
  } else {
    c.host = "127.0.0.1";
  }
  c.heartbeat_timeout = EnvSeconds("WEFT_KVSTORE_HEARTBEAT_TIMEOUT", EnvSeconds("PS_HEARTBEAT_TIMEOUT", 20));
  c.heartbeat_interval = std::clamp(c.heartbeat_timeout / 5, 0.05, 1.0);
  c.register_timeout = EnvSeconds("WEFT_KVSTORE_REGISTER_TIMEOUT", 60);
  c.request_timeout = EnvSeconds("WEFT_KVSTORE_REQUEST_TIMEOUT", 600);
  c.max_message_bytes = EnvInt64("WEFT_KVSTORE_MAX_MESSAGE_BYTES", c.max_message_bytes, 1024, int64_t{1} << 40);
  c.queue_limit = static_cast<int>(EnvInt64("WEFT_KVSTORE_QUEUE_LIMIT", c.queue_limit, 16, 1 << 24));
  const char* plain = Env("WEFT_KVSTORE_ALLOW_PLAINTEXT");
  c.allow_plaintext = plain != nullptr && std::string(plain) == "1";
  const char* bound = Env("MXNET_KVSTORE_BIGARRAY_BOUND");
  if (const char* b = Env("WEFT_KVSTORE_BIGARRAY_BOUND")) bound = b;
  if (bound != nullptr) {
    char* end = nullptr;
    long long x = std::strtoll(bound, &end, 10);
    WEFT_CHECK(*end == '\0' && x > 0, kValue, "kvstore dist: expected the big-array bound to be an integer > 0, got '",
               bound, "'");
    c.bigarray_bound = x;
  }
  return c;
}

std::string Config::SchedulerEndpoint() const { return "tcp://" + root_uri + ":" + std::to_string(root_port); }

const char* MsgTypeName(uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kRegister: return "register";
    case MsgType::kAddressBook: return "address book";
    case MsgType::kHeartbeat: return "heartbeat";
    case MsgType::kHeartbeatAck: return "heartbeat ack";
    case MsgType::kBarrier: return "barrier";
    case MsgType::kBarrierDone: return "barrier done";
    case MsgType::kExit: return "exit";
    case MsgType::kBye: return "bye";
    case MsgType::kTerminate: return "terminate";
    case MsgType::kNodeLost: return "node lost";
    case MsgType::kInit: return "init";
    case MsgType::kPush: return "push";
    case MsgType::kPull: return "pull";
    case MsgType::kCommand: return "command";
    case MsgType::kPullRows: return "row pull";
    case MsgType::kPushRows: return "row push";
    case MsgType::kAck: return "ack";
    case MsgType::kPullReply: return "pull reply";
    case MsgType::kError: return "error";
  }
  return nullptr;
}

std::string Frames::PeerAddress(size_t i) {
  const char* a = i < parts_.size() ? zmq_msg_gets(&parts_[i], "Peer-Address") : nullptr;
  return a != nullptr ? a : "an unknown address";
}

int Frames::SourceFd(size_t i) { return i < parts_.size() ? zmq_msg_get(&parts_[i], ZMQ_SRCFD) : -1; }

Frames::~Frames() {
  for (auto& m : parts_) zmq_msg_close(&m);
}

std::shared_ptr<zmq_msg_t> Frames::Take(size_t i) {
  std::shared_ptr<zmq_msg_t> m(new zmq_msg_t, [](zmq_msg_t* p) {
    zmq_msg_close(p);
    delete p;
  });
  zmq_msg_init(m.get());
  zmq_msg_move(m.get(), &parts_[i]);
  return m;
}

bool Frames::Recv(void* socket) {
  for (auto& m : parts_) zmq_msg_close(&m);
  parts_.clear();
  while (true) {
    parts_.emplace_back();
    zmq_msg_init(&parts_.back());
    if (zmq_msg_recv(&parts_.back(), socket, parts_.size() == 1 ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&parts_.back());
      parts_.pop_back();
      return false;
    }
    if (!zmq_msg_more(&parts_.back())) return true;
    // A sender may pile up frames; a message of more than a handful is malformed, but its
    // parts must still be read so that the next message starts clean.
  }
}

bool CheckDataRequest(const Header& h, size_t payload_bytes, const Config& cfg, std::string* why) {
  auto type = static_cast<MsgType>(h.type);
  if (type != MsgType::kInit && type != MsgType::kPush && type != MsgType::kPull && type != MsgType::kCommand &&
      type != MsgType::kPullRows && type != MsgType::kPushRows) {
    *why = std::string("a ") + MsgTypeName(h.type) + " message is not a request to a server";
    return false;
  }
  if (payload_bytes > static_cast<uint64_t>(cfg.max_message_bytes)) {
    *why = "a payload of " + std::to_string(payload_bytes) + " bytes, over the limit of " +
           std::to_string(cfg.max_message_bytes) + " (WEFT_KVSTORE_MAX_MESSAGE_BYTES)";
    return false;
  }
  if (type == MsgType::kCommand) return true;
  if (h.flags & ~uint32_t{kKnownFlags}) {
    *why = "unknown flags " + std::to_string(h.flags & ~uint32_t{kKnownFlags});
    return false;
  }
  if (h.key < 0 || h.key >= kMaxKey) {
    *why = "key " + std::to_string(h.key) + " outside [0, 2^31)";
    return false;
  }
  if (!IsValidDType(h.dtype)) {
    *why = "unknown dtype code " + std::to_string(h.dtype);
    return false;
  }
  const uint64_t elem = DTypeSize(static_cast<DType>(h.dtype));
  uint64_t range_bytes = 0, total_bytes = 0;
  if (!MulFits(h.count, elem, &range_bytes) || range_bytes > static_cast<uint64_t>(cfg.max_message_bytes)) {
    *why = "key " + std::to_string(h.key) + ": a range of " + std::to_string(h.count) + " elements of " +
           std::to_string(elem) + " bytes is over the limit of " + std::to_string(cfg.max_message_bytes) +
           " bytes (WEFT_KVSTORE_MAX_MESSAGE_BYTES)";
    return false;
  }
  if (!MulFits(h.total, elem, &total_bytes) || total_bytes >= (uint64_t{1} << 62)) {
    *why = "key " + std::to_string(h.key) + ": a key of " + std::to_string(h.total) + " elements has no byte size";
    return false;
  }
  if (type == MsgType::kPullRows) {
    // The row length and at least one row id, and no more ids than the range has elements:
    // the answer (disjoint rows' parts of the range) is then never larger than the range.
    uint64_t most = 0;
    if (payload_bytes % 8 != 0 || payload_bytes < 16 || !MulFits(h.count + 1, 8, &most) || payload_bytes > most) {
      *why = "row pull of key " + std::to_string(h.key) + " [" + std::to_string(h.offset) + ", +" +
             std::to_string(h.count) + "): expected a payload of 8-byte integers, a row length and 1 to " +
             std::to_string(h.count) + " row ids, got " + std::to_string(payload_bytes) + " bytes";
      return false;
    }
    return true;
  }
  if (type == MsgType::kPushRows) {
    // The row length, the row count, then at most `count` rows (disjoint rows meeting the
    // range) of an id and at most the range's elements in all. The server checks the
    // exact size against the ids.
    uint64_t per_row = 0, most = 0;
    bool fits = MulFits(h.count, 8, &per_row) && per_row <= (uint64_t{1} << 62) && range_bytes <= (uint64_t{1} << 62);
    most = fits ? 16 + per_row + range_bytes : 0;
    if ((h.flags & kFlagCompressed) || payload_bytes < 16 || payload_bytes > most) {
      *why = "row push of key " + std::to_string(h.key) + " [" + std::to_string(h.offset) + ", +" +
             std::to_string(h.count) + "): expected an uncompressed payload of 16 to " + std::to_string(most) +
             " bytes (row length, row count, row ids, values), got " + std::to_string(payload_bytes) + " bytes";
      return false;
    }
    return true;
  }
  uint64_t expected = type == MsgType::kPull ? 0 : range_bytes;
  if (type == MsgType::kPush && (h.flags & kFlagCompressed)) {
    if (static_cast<DType>(h.dtype) != DType::kFloat32 || !std::isfinite(h.threshold) || h.threshold <= 0) {
      *why = "key " + std::to_string(h.key) + ": a compressed push needs float32 values and a finite threshold > 0";
      return false;
    }
    expected = (h.count + 3) / 4;  // 2 bits an element (GradientCompression::CompressedBytes)
  }
  if (payload_bytes != expected) {
    *why = std::string(MsgTypeName(h.type)) + " of key " + std::to_string(h.key) + " [" + std::to_string(h.offset) +
           ", +" + std::to_string(h.count) + ") of " + DTypeName(static_cast<DType>(h.dtype)) + ": expected " +
           std::to_string(expected) + " payload bytes, got " + std::to_string(payload_bytes);
    return false;
  }
  return true;
}

std::string AddressBook::Text() const {
  std::string out;
  for (size_t i = 0; i < servers.size(); ++i) out += "server " + std::to_string(i) + " " + servers[i] + "\n";
  for (const auto& [rank, token] : workers) out += "worker " + std::to_string(rank) + " " + token + "\n";
  return out;
}

bool AddressBook::Parse(const std::string& text, AddressBook* out, std::string* why) {
  std::istringstream is(text);
  std::string line;
  *out = AddressBook();
  while (std::getline(is, line)) {
    std::istringstream ls(line);
    std::string kind, value, extra;
    int rank = -1;
    if (!(ls >> kind >> rank >> value) || (ls >> extra) || rank < 0 || value.empty()) {
      *why = "malformed address book line '" + line.substr(0, 80) + "'";
      return false;
    }
    if (kind == "server" && rank == static_cast<int>(out->servers.size())) {
      out->servers.push_back(value);
    } else if (kind == "worker") {
      out->workers.emplace_back(rank, value);
    } else {
      *why = "unexpected address book line '" + line.substr(0, 80) + "'";
      return false;
    }
  }
  if (out->servers.empty()) {
    *why = "the address book lists no server";
    return false;
  }
  return true;
}

std::string WorkerRoutingId(int rank, const std::string& token) { return "W" + std::to_string(rank) + "." + token; }

void CheckTransport(const Config& cfg, bool curve_on, const std::vector<std::string>& addresses, const char* who) {
  if (curve_on) return;
  for (const std::string& a : addresses) {
    if (IsLoopback(a)) continue;
    WEFT_CHECK(cfg.allow_plaintext, kValue, "kvstore ", who, ": refusing to talk in plaintext over ", a,
               ", which is not a loopback address: anyone who reaches it could join the job and send it data. "
               "Set the job's CURVE keys (WEFT_KVSTORE_CURVE_PUBLIC_KEY and WEFT_KVSTORE_CURVE_SECRET_KEY; "
               "tools/launch.py makes them), or WEFT_KVSTORE_ALLOW_PLAINTEXT=1 on a network you trust");
    WEFT_LOG(Warning) << "kvstore " << who << ": WARNING: talking in plaintext over " << a
                      << " (WEFT_KVSTORE_ALLOW_PLAINTEXT=1): any host that reaches it can join the job and send it data";
    return;
  }
}

bool ParseMessage(Frames& f, size_t first, Header* h, const void** payload, size_t* payload_bytes, std::string* why) {
  if (f.size() < first + 1 || f.size() > first + 2) {
    *why = "expected a header and at most one payload frame, got " + std::to_string(f.size() - std::min(f.size(), first)) +
           " frames";
    return false;
  }
  if (f.bytes(first) != sizeof(Header)) {
    *why = "header of " + std::to_string(f.bytes(first)) + " bytes, expected " + std::to_string(sizeof(Header));
    return false;
  }
  std::memcpy(h, f.data(first), sizeof(Header));
  if (h->magic != kMagic) {
    *why = "bad magic number";
    return false;
  }
  if (h->version != kVersion) {
    *why = "protocol version " + std::to_string(h->version) + ", expected " + std::to_string(kVersion);
    return false;
  }
  if (MsgTypeName(h->type) == nullptr) {
    *why = "unknown message type " + std::to_string(h->type);
    return false;
  }
  size_t got = f.size() == first + 2 ? f.bytes(first + 1) : 0;
  if (got != h->payload_bytes) {
    *why = "the header announces " + std::to_string(h->payload_bytes) + " payload bytes, the message has " +
           std::to_string(got);
    return false;
  }
  if (h->offset > h->total || h->count > h->total - h->offset) {
    *why = "range [" + std::to_string(h->offset) + ", +" + std::to_string(h->count) + ") outside a key of " +
           std::to_string(h->total) + " elements";
    return false;
  }
  *payload = got ? f.data(first + 1) : nullptr;
  *payload_bytes = got;
  return true;
}

namespace {
// Runs on whichever thread drops ZeroMQ's last reference to the message: often one of its
// I/O threads, which got the message from the sender through lock-free pipes in libzmq.
// ThreadSanitizer cannot see that hand-off (libzmq is not instrumented), so it is
// announced: what the sender did before zmq_msg_send happens before the release here.
void ReleaseKeep(void*, void* hint) {
#ifdef WEFT_KV_TSAN
  __tsan_acquire(hint);
#endif
  delete static_cast<std::shared_ptr<void>*>(hint);
}
}  // namespace

bool SendMessage(void* socket, const std::string* identity, const Header& h, const void* payload,
                 size_t payload_bytes, std::shared_ptr<void> keep) {
  Header hh = h;
  hh.magic = kMagic;
  hh.version = kVersion;
  hh.payload_bytes = payload_bytes;
  // Never blocking: a DEALER whose peer is gone for good (no reconnection) would wait
  // forever; the caller learns of the refusal instead. Nothing else refuses a message,
  // since no socket here has a high-water mark for sending.
  if (identity != nullptr && zmq_send(socket, identity->data(), identity->size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
    return false;
  if (zmq_send(socket, &hh, sizeof(hh), (payload_bytes ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0) return false;
  if (payload_bytes == 0) return true;
  zmq_msg_t m;
  if (keep) {
    auto* hint = new std::shared_ptr<void>(std::move(keep));
    if (zmq_msg_init_data(&m, const_cast<void*>(payload), payload_bytes, ReleaseKeep, hint) != 0) {
      delete hint;
      return false;
    }
#ifdef WEFT_KV_TSAN
    __tsan_release(hint);
#endif
  } else {
    if (zmq_msg_init_size(&m, payload_bytes) != 0) return false;
    std::memcpy(zmq_msg_data(&m), payload, payload_bytes);
  }
  if (zmq_msg_send(&m, socket, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&m);
    return false;
  }
  return true;
}

Curve Curve::FromEnv() {
  Curve c;
  const char* pub = Env("WEFT_KVSTORE_CURVE_PUBLIC_KEY");
  const char* sec = Env("WEFT_KVSTORE_CURVE_SECRET_KEY");
  if (pub == nullptr && sec == nullptr) return c;
  WEFT_CHECK(pub != nullptr && sec != nullptr, kValue, "kvstore dist: CURVE needs both WEFT_KVSTORE_CURVE_PUBLIC_KEY "
             "and WEFT_KVSTORE_CURVE_SECRET_KEY, got only ", pub ? "the public key" : "the secret key");
  WEFT_CHECK(zmq_has("curve"), kUnsupported, "kvstore dist: CURVE keys are set but this libzmq has no CURVE support");
  uint8_t raw[32];
  WEFT_CHECK(std::strlen(pub) == 40 && std::strlen(sec) == 40 && zmq_z85_decode(raw, pub) != nullptr &&
                 zmq_z85_decode(raw, sec) != nullptr, kValue,
             "kvstore dist: expected the CURVE keys as 40 characters of Z85 text each (zmq_curve_keypair)");
  char derived[41];
  WEFT_CHECK(zmq_curve_public(derived, sec) == 0 && std::string(derived) == pub, kValue,
             "kvstore dist: WEFT_KVSTORE_CURVE_PUBLIC_KEY is not the public key of WEFT_KVSTORE_CURVE_SECRET_KEY");
  c.on = true;
  c.public_key = pub;
  c.secret_key = sec;
  const char* lc = Env("WEFT_KVSTORE_LOOPBACK_CURVE");
  c.loopback_curve = lc != nullptr && std::string(lc) == "1";
  return c;
}

bool Curve::Plain(const std::string& address, bool bulk) const {
  return bulk && !loopback_curve && IsLoopback(address);
}

void AuthListen(void* socket, const Curve& curve, const std::string& address, bool bulk) {
  if (!curve.on) return;
  int one = 1;
  if (curve.Plain(address, bulk)) {
    zmq_setsockopt(socket, ZMQ_PLAIN_SERVER, &one, sizeof(one));
  } else {
    zmq_setsockopt(socket, ZMQ_CURVE_SERVER, &one, sizeof(one));
    zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, curve.secret_key.c_str(), 40);
  }
  // The domain turns authentication on for this socket.
  zmq_setsockopt(socket, ZMQ_ZAP_DOMAIN, "weft", 4);
}

void AuthConnect(void* socket, const Curve& curve, const std::string& address, bool bulk) {
  if (!curve.on) return;
  if (curve.Plain(address, bulk)) {
    zmq_setsockopt(socket, ZMQ_PLAIN_USERNAME, "weft", 4);
    zmq_setsockopt(socket, ZMQ_PLAIN_PASSWORD, curve.secret_key.c_str(), curve.secret_key.size());
    return;
  }
  zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, curve.public_key.c_str(), 40);
  zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, curve.public_key.c_str(), 40);
  zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, curve.secret_key.c_str(), 40);
}

namespace {
// Compares without stopping at the first difference, so that the time taken says nothing
// about how much of a guessed secret was right.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}
}  // namespace

ZapHandler::ZapHandler(void* ctx, const Curve& curve, std::string who) {
  if (!curve.on) return;
  socket_ = zmq_socket(ctx, ZMQ_REP);
  WEFT_CHECK(socket_ != nullptr && zmq_bind(socket_, "inproc://zeromq.zap.01") == 0, kRuntime,
             "kvstore dist: cannot start the CURVE authenticator: ", zmq_strerror(zmq_errno()));
  uint8_t job_key[32];
  zmq_z85_decode(job_key, curve.public_key.c_str());
  std::string expected(reinterpret_cast<char*>(job_key), 32);
  std::string password = curve.secret_key;
  thread_ = std::thread([this, expected, password, who] {
    LogLimit limit;
    while (true) {
      Frames f;
      zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, -1) < 0 && zmq_errno() == ETERM) break;
      if (!f.Recv(socket_)) {
        if (zmq_errno() == ETERM) break;
        continue;
      }
      // ZAP 1.0 request: version, request id, domain, address, identity, mechanism, then
      // the client's public key (CURVE) or its user name and password (PLAIN).
      if (f.size() < 6) continue;
      std::string request_id = f.str(1);
      bool ok = (f.size() == 7 && f.str(5) == "CURVE" && SameSecret(f.str(6), expected)) ||
                (f.size() == 8 && f.str(5) == "PLAIN" && SameSecret(f.str(7), password));
      if (!ok && limit.Allow()) {
        WEFT_LOG(Warning) << "kvstore " << who << ": refused a connection from " << f.str(3)
                          << " (without the job's key)";
      }
      const std::string reply[] = {"1.0", request_id, ok ? "200" : "400", ok ? "OK" : "unknown key", "", ""};
      for (int i = 0; i < 6; ++i) zmq_send(socket_, reply[i].data(), reply[i].size(), i < 5 ? ZMQ_SNDMORE : 0);
    }
    int zero = 0;
    zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_close(socket_);
  });
}

void ZapHandler::Join() {
  if (thread_.joinable()) thread_.join();
}

ConnectionWatch::ConnectionWatch(void* ctx, void* socket) {
  std::string endpoint = "inproc://weft-kv-watch-" + std::to_string(reinterpret_cast<uintptr_t>(socket));
  WEFT_CHECK(zmq_socket_monitor(socket, endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) == 0, kRuntime,
             "kvstore dist: cannot watch a socket's connections: ", zmq_strerror(zmq_errno()));
  pair_ = NewSocket(ctx, ZMQ_PAIR);
  WEFT_CHECK(zmq_connect(pair_, endpoint.c_str()) == 0, kRuntime,
             "kvstore dist: cannot watch a socket's connections: ", zmq_strerror(zmq_errno()));
}

void ConnectionWatch::Close() {
  CloseSocket(pair_, 0);
  pair_ = nullptr;
}

std::vector<int> ConnectionWatch::Closed() {
  std::vector<int> fds;
  // An event is two parts: 2 bytes of event id and 4 of value (the descriptor), then the
  // endpoint.
  for (Frames f; f.Recv(pair_);) {
    if (f.size() != 2 || f.bytes(0) != 6) continue;
    uint16_t event;
    int32_t fd;
    std::memcpy(&event, f.data(0), 2);
    std::memcpy(&fd, static_cast<const char*>(f.data(0)) + 2, 4);
    if (event == ZMQ_EVENT_DISCONNECTED) fds.push_back(fd);
  }
  return fds;
}

double CloseGrace(const Config& cfg) { return std::max(2 * cfg.heartbeat_interval, 0.5); }

void* NewSocket(void* ctx, int type) {
  void* s = zmq_socket(ctx, type);
  WEFT_CHECK(s != nullptr, kRuntime, "kvstore dist: cannot create a ZeroMQ socket: ", zmq_strerror(zmq_errno()));
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
  // No high-water marks: a ROUTER drops what goes over one, and every request here is
  // answered, so the number in flight is bounded by the program, not by the socket.
  zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof(zero));
  zmq_setsockopt(s, ZMQ_RCVHWM, &zero, sizeof(zero));
  return s;
}

void LimitInbound(void* socket, int64_t max_bytes, int queue_limit) {
  // ZMQ_MAXMSGSIZE bounds each part: a larger one ends the peer's connection unread.
  zmq_setsockopt(socket, ZMQ_MAXMSGSIZE, &max_bytes, sizeof(max_bytes));
  zmq_setsockopt(socket, ZMQ_RCVHWM, &queue_limit, sizeof(queue_limit));
}

std::string RandomHex(size_t bytes) {
  std::random_device rd;  // /dev/urandom on Linux
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned b = rd() & 0xff;
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

void CloseSocket(void* socket, int linger_ms) {
  if (socket == nullptr) return;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
  zmq_close(socket);
}

bool LogLimit::Allow() {
  constexpr int kBurst = 20;
  if (SecondsSince(window_) >= 1.0) {
    if (suppressed_ > 0) {
      WEFT_LOG(Warning) << "kvstore: " << suppressed_ << " more warnings about peers were not logged (over " << kBurst
                        << " a second)";
    }
    window_ = Clock::now();
    count_ = 0;
    suppressed_ = 0;
  }
  if (count_ < kBurst) {
    ++count_;
    return true;
  }
  ++suppressed_;
  return false;
}

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string SecondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

}  // namespace dist
}  // namespace kvstore
}  // namespace weft

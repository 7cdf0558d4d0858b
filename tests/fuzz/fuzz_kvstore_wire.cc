// The distributed store's wire protocol, as a server or a worker reads it: the input is a
// multipart ZeroMQ message (its first byte says how the rest splits into frames), received
// through a real socket pair and parsed (ParseMessage), its request checked
// (CheckDataRequest), and read as an address book (AddressBook::Parse).
#include <zmq.h>

#include <cstring>
#include <string>

#include "core/kvstore/dist/protocol.h"
#include "fuzz_util.h"

namespace {

namespace dist = weft::kvstore::dist;

// One in-process socket pair for the whole run.
struct Pipe {
  void* ctx = zmq_ctx_new();
  void* out = zmq_socket(ctx, ZMQ_PAIR);
  void* in = zmq_socket(ctx, ZMQ_PAIR);
  Pipe() {
    if (zmq_bind(in, "inproc://fuzz") != 0 || zmq_connect(out, "inproc://fuzz") != 0) std::abort();
  }
};

Pipe& pipe() {
  static Pipe* p = new Pipe();
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Frames: a header of up to 80 bytes (shorter ones must be refused), then the payload,
  // or a second payload frame when the first byte asks for three.
  size_t head = std::min<size_t>(size - 1, 72 + data[0] % 16);
  const uint8_t* p = data + 1;
  size_t rest = size - 1 - head;
  int parts = 1 + (rest > 0) + (data[0] >= 128 && rest > 1);
  size_t first_payload = parts == 3 ? rest / 2 : rest;
  zmq_send(pipe().out, p, head, parts > 1 ? ZMQ_SNDMORE : 0);
  if (parts > 1) zmq_send(pipe().out, p + head, first_payload, parts > 2 ? ZMQ_SNDMORE : 0);
  if (parts > 2) zmq_send(pipe().out, p + head + first_payload, rest - first_payload, 0);
  dist::Frames frames;
  if (!frames.Recv(pipe().in)) return 0;
  dist::Header h;
  const void* payload = nullptr;
  size_t payload_bytes = 0;
  std::string why;
  if (dist::ParseMessage(frames, 0, &h, &payload, &payload_bytes, &why)) {
    dist::Config cfg;
    dist::CheckDataRequest(h, payload_bytes, cfg, &why);
  }
  dist::AddressBook book;
  dist::AddressBook::Parse(std::string(reinterpret_cast<const char*>(data), size), &book, &why);
  return 0;
}

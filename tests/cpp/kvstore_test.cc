// The local key-value store (sums, broadcast, updater semantics, string keys, errors), 2-bit
// gradient compression, the same through the C API with a C updater callback, and the
// distributed store's message parsing (the processes themselves are tested from Python:
// tests/python/test_kvstore_dist.py).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/kvstore/kvstore.h"
#include "weft/c_api.h"
#if WEFT_USE_DIST
#include "core/kvstore/dist/protocol.h"
#endif

namespace weft {
namespace {

NDArray Filled(const std::vector<float>& v) {
  NDArray a(Shape{static_cast<int64_t>(v.size())}, Context::CPU());
  a.SyncCopyFromCPU(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> Host(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.Size()));
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(KVStoreLocal, PushSumsEveryDeviceValueAndPullBroadcasts) {
  auto kv = kvstore::KVStore::Create("local");
  kv->Init({"3"}, {Filled({1, 2, 3})});
  kv->Push({"3", "3", "3"}, {Filled({1, 1, 1}), Filled({10, 20, 30}), Filled({100, 200, 300})}, 0);
  NDArray o1 = Filled({0, 0, 0}), o2 = Filled({0, 0, 0});
  kv->Pull({"3", "3"}, {o1, o2}, 0);
  // Without an updater the sum replaces the stored value.
  EXPECT_EQ(Host(o1), (std::vector<float>{111, 221, 331}));
  EXPECT_EQ(Host(o2), Host(o1));
}

TEST(KVStoreLocal, LargeParallelSumIsExact) {
  auto kv = kvstore::KVStore::Create("device");
  const int n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97);
    b[i] = static_cast<float>(i % 13) * 2;
    c[i] = -1;
  }
  kv->Init({"w"}, {Filled(a)});
  kv->Push({"w", "w", "w"}, {Filled(a), Filled(b), Filled(c)}, 0);
  NDArray out(Shape{n}, Context::CPU());
  kv->Pull({"w"}, {out}, 0);
  auto got = Host(out);
  for (int i = 0; i < n; i += 4099) ASSERT_EQ(got[i], a[i] + b[i] + c[i]) << i;
}

TEST(KVStoreLocal, UpdaterGetsMergedAndChangesStored) {
  auto kv = kvstore::KVStore::Create("local");
  kv->Init({"0", "bias"}, {Filled({1, 1}), Filled({5, 5})});
  std::vector<std::string> seen;
  // stored -= 0.5 * merged, run on the engine like a real update.
  kv->SetUpdater([&](int, const std::string& key, const NDArray& merged, NDArray* stored) {
    seen.push_back(key);
    NDArray s = *stored;
    engine::Engine::Get()->PushSync([merged, s](engine::RunContext) {
      float* w = s.data().ptr<float>();
      const float* g = merged.data().ptr<float>();
      for (int64_t i = 0; i < s.Size(); ++i) w[i] -= 0.5f * g[i];
    }, Context::CPU(), {merged.var()}, {s.var()});
  });
  kv->Push({"0", "0", "bias"}, {Filled({2, 4}), Filled({2, 0}), Filled({2, 2})}, 0);
  NDArray o = Filled({0, 0}), ob = Filled({0, 0});
  kv->Pull({"0", "bias"}, {o, ob}, 0);
  EXPECT_EQ(Host(o), (std::vector<float>{-1, -1}));
  EXPECT_EQ(Host(ob), (std::vector<float>{4, 4}));
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "bias"}));
}

TEST(KVStoreLocal, ErrorsNameTheKeyAndWhatCame) {
  auto kv = kvstore::KVStore::Create("local");
  kv->Init({"1"}, {Filled({1, 2})});
  try {
    kv->Push({"1"}, {Filled({1, 2, 3})}, 0);
    FAIL() << "a push of the wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShape);
    EXPECT_NE(std::string(e.what()).find("(2,)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3,)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kv->Pull({"nope"}, {Filled({0, 0})}, 0), Error);
  EXPECT_THROW(kv->Init({"1"}, {Filled({1, 2})}), Error);
  EXPECT_THROW(kvstore::KVStore::Create("cloud"), Error);
  // MXNet refuses compression on the plain local store.
  EXPECT_THROW(kv->SetGradientCompression({{"type", "2bit"}}), Error);
}

TEST(KVStoreCompression, TwoBitWithErrorFeedbackLosesNothingOverSteps) {
  const float t = 0.5f;
  std::vector<float> grad = {0.3f, -0.7f, 1.2f, 0.0f, -0.2f};
  std::vector<float> residual(5, 0.f), sent(5, 0.f);
  std::vector<uint8_t> packed(kvstore::GradientCompression::CompressedBytes(5));
  kvstore::GradientCompression::Quantize(grad.data(), residual.data(), packed.data(), 5, t);
  kvstore::GradientCompression::Dequantize(packed.data(), sent.data(), 5, t, true);
  EXPECT_EQ(sent, (std::vector<float>{0, -0.5f, 0.5f, 0, 0}));
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(sent[i] + residual[i], grad[i]);
  // The device store applies it to each pushed value before the sum.
  auto kv = kvstore::KVStore::Create("device");
  kv->SetGradientCompression({{"type", "2bit"}, {"threshold", "0.5"}});
  kv->Init({"g"}, {Filled({0, 0, 0})});
  kv->Push({"g", "g"}, {Filled({0.6f, 0.2f, -1.f}), Filled({0.6f, 0.2f, 0.f})}, 0);
  NDArray o = Filled({9, 9, 9});
  kv->Pull({"g"}, {o}, 0);
  EXPECT_EQ(Host(o), (std::vector<float>{1.0f, 0.f, -0.5f}));
  EXPECT_THROW(kv->SetGradientCompression({{"type", "1bit"}}), Error);
}

// The servers' kernels: a + b in one pass (first two pushes of a round) and the running sum.
TEST(KVStoreKernels, SumIntoAndAddIntoAreExactPerDtype) {
  std::vector<float> a = {1.5f, -2.f, 3.25f}, b = {0.5f, 2.f, -0.25f}, out(3, 99.f);
  kvstore::SumInto(out.data(), a.data(), b.data(), 3, DType::kFloat32, false);
  EXPECT_EQ(out, (std::vector<float>{2.f, 0.f, 3.f}));
  kvstore::AddInto(out.data(), a.data(), 3, DType::kFloat32, /*assign=*/false, false);
  EXPECT_EQ(out, (std::vector<float>{3.5f, -2.f, 6.25f}));
  const int64_t n = 100003;  // over the parallel bound, odd
  std::vector<int32_t> ia(n), ib(n), io(n);
  for (int64_t i = 0; i < n; ++i) {
    ia[i] = static_cast<int32_t>(i);
    ib[i] = static_cast<int32_t>(-2 * i + 7);
  }
  kvstore::SumInto(io.data(), ia.data(), ib.data(), n, DType::kInt32);
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(io[i], 7 - i) << i;
  bool flags[2] = {true, false};
  EXPECT_THROW(kvstore::SumInto(flags, flags, flags, 2, DType::kBool), Error);
}

// The device store with host values reduces as local does: several keys at once, the
// updater, pushpull.
TEST(KVStoreDevice, HostValuesSumUpdateAndPushPullOverSeveralKeys) {
  auto kv = kvstore::KVStore::Create("device");
  kv->Init({"a", "4"}, {Filled({1, 2, 3}), Filled({10, 20})});
  kv->Push({"a", "4", "a", "4", "a"},
           {Filled({1, 1, 1}), Filled({1, 2}), Filled({2, 3, 4}), Filled({3, 4}), Filled({-1, 0, 1})}, 0);
  NDArray oa1 = Filled({0, 0, 0}), oa2 = Filled({0, 0, 0}), o4 = Filled({0, 0});
  kv->Pull({"a", "4", "a"}, {oa1, o4, oa2}, 0);
  EXPECT_EQ(Host(oa1), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(Host(oa2), Host(oa1));
  EXPECT_EQ(Host(o4), (std::vector<float>{4, 6}));
  // stored += merged, on the engine.
  kv->SetUpdater([](int, const std::string&, const NDArray& merged, NDArray* stored) {
    NDArray s = *stored;
    engine::Engine::Get()->PushSync([merged, s](engine::RunContext) {
      float* w = s.data().ptr<float>();
      const float* g = merged.data().ptr<float>();
      for (int64_t i = 0; i < s.Size(); ++i) w[i] += g[i];
    }, Context::CPU(), {merged.var()}, {s.var()});
  });
  NDArray p1 = Filled({0, 0}), p2 = Filled({0, 0});
  kv->PushPull({"4", "4"}, {Filled({1, 1}), Filled({2, 2})}, {"4", "4"}, {p1, p2}, 0);
  EXPECT_EQ(Host(p1), (std::vector<float>{7, 9}));
  EXPECT_EQ(Host(p2), (std::vector<float>{7, 9}));
  EXPECT_THROW(kv->Push({"a"}, {Filled({1, 1})}, 0), Error);
}

// Values on GPUs: summed on a GPU, the stored array moves there, pulls reach GPU and host
// destinations. Skips where no GPU is visible.
TEST(KVStoreDevice, GpuValuesAreSummedOnAGpu) {
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible";
  const int n = NumGPUs();
  auto kv = kvstore::KVStore::Create("device");
  const int64_t len = 100000;
  std::vector<float> init(len, 1.f);
  kv->Init({"w"}, {Filled(init)});
  std::vector<NDArray> vals;
  std::vector<float> expect(len, 0.f);
  // Two values on gpu(0), one on every other GPU and one on the host.
  std::vector<Context> ctxs = {Context::GPU(0), Context::GPU(0), Context::CPU()};
  for (int d = 1; d < n; ++d) ctxs.push_back(Context::GPU(d));
  for (size_t k = 0; k < ctxs.size(); ++k) {
    std::vector<float> v(len);
    for (int64_t i = 0; i < len; ++i) v[i] = static_cast<float>((i * (k + 3)) % 11) - 5.f;
    for (int64_t i = 0; i < len; ++i) expect[i] += v[i];
    NDArray a(Shape{len}, ctxs[k]);
    a.SyncCopyFromCPU(v.data(), v.size() * sizeof(float));
    vals.push_back(a);
  }
  kv->Push(std::vector<std::string>(vals.size(), "w"), vals, 0);
  std::vector<NDArray> outs = {NDArray(Shape{len}, Context::CPU())};
  for (int d = 0; d < n; ++d) outs.emplace_back(Shape{len}, Context::GPU(d));
  kv->Pull(std::vector<std::string>(outs.size(), "w"), outs, 0);
  for (const NDArray& o : outs) EXPECT_EQ(Host(o), expect) << o.ctx().ToString();
}

// The C API: a C updater with a user pointer.
int CountingUpdater(const char* key, weft_ndarray_t* merged, weft_ndarray_t* stored, void* user) {
  ++*static_cast<int*>(user);
  // stored = 2 * merged, through host copies (the updater runs on the pushing thread, so
  // it may wait).
  float buf[2];
  if (weft_ndarray_copy_to_host(merged, buf, sizeof(buf)) != WEFT_OK) return 1;
  buf[0] *= 2;
  buf[1] *= 2;
  int rc = weft_ndarray_copy_from_host(stored, buf, sizeof(buf)) == WEFT_OK ? 0 : 1;
  weft_ndarray_free(merged);
  weft_ndarray_free(stored);
  return std::string(key) == "7" ? rc : 1;
}

TEST(KVStoreCApi, CreatePushPullWithACUpdater) {
  weft_kvstore_t* kv = nullptr;
  ASSERT_EQ(weft_kvstore_create("local", &kv), WEFT_OK) << weft_get_last_error();
  const char* type = nullptr;
  ASSERT_EQ(weft_kvstore_get_type(kv, &type), WEFT_OK);
  EXPECT_STREQ(type, "local");
  int calls = 0;
  ASSERT_EQ(weft_kvstore_set_updater(kv, CountingUpdater, &calls), WEFT_OK);
  int64_t shape[1] = {2};
  weft_context_t cpu = {WEFT_DEVICE_CPU, 0};
  weft_ndarray_t *a = nullptr, *out = nullptr;
  ASSERT_EQ(weft_ndarray_create(shape, 1, WEFT_DTYPE_FLOAT32, cpu, &a), WEFT_OK);
  ASSERT_EQ(weft_ndarray_create(shape, 1, WEFT_DTYPE_FLOAT32, cpu, &out), WEFT_OK);
  float v[2] = {1.5f, -2.f};
  ASSERT_EQ(weft_ndarray_copy_from_host(a, v, sizeof(v)), WEFT_OK);
  const char* keys[] = {"7", "7"};
  weft_ndarray_t* vals[] = {a, a};
  ASSERT_EQ(weft_kvstore_init(kv, 1, keys, vals), WEFT_OK) << weft_get_last_error();
  ASSERT_EQ(weft_kvstore_push(kv, 2, keys, vals, 0), WEFT_OK) << weft_get_last_error();
  ASSERT_EQ(weft_kvstore_pull(kv, 1, keys, &out, 0), WEFT_OK) << weft_get_last_error();
  float got[2];
  ASSERT_EQ(weft_ndarray_copy_to_host(out, got, sizeof(got)), WEFT_OK);
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(got[0], 6.f);
  EXPECT_FLOAT_EQ(got[1], -8.f);
  int rank = -1, n = -1;
  ASSERT_EQ(weft_kvstore_get_rank(kv, &rank), WEFT_OK);
  ASSERT_EQ(weft_kvstore_get_num_workers(kv, &n), WEFT_OK);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(n, 1);
  // Errors: a count without keys, a freed handle, a dist-only call.
  EXPECT_EQ(weft_kvstore_push(kv, 1, nullptr, vals, 0), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_kvstore_send_command_to_servers(kv, 0, "x", 1), WEFT_ERR_UNSUPPORTED);
  EXPECT_EQ(weft_kvstore_create("nope", nullptr), WEFT_ERR_VALUE);
  ASSERT_EQ(weft_kvstore_free(kv), WEFT_OK);
  EXPECT_EQ(weft_kvstore_barrier(kv), WEFT_ERR_HANDLE);
  weft_ndarray_free(a);
  weft_ndarray_free(out);
}

}  // namespace
}  // namespace weft

#if WEFT_USE_DIST
namespace weft {
namespace {

// Messages through an inproc pair, parsed as a node parses what it receives.
class KVStoreProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = zmq_ctx_new();
    a_ = kvstore::dist::NewSocket(ctx_, ZMQ_PAIR);
    b_ = kvstore::dist::NewSocket(ctx_, ZMQ_PAIR);
    ASSERT_EQ(zmq_bind(a_, "inproc://kv-protocol-test"), 0);
    ASSERT_EQ(zmq_connect(b_, "inproc://kv-protocol-test"), 0);
  }
  void TearDown() override {
    kvstore::dist::CloseSocket(a_, 0);
    kvstore::dist::CloseSocket(b_, 0);
    zmq_ctx_term(ctx_);
  }
  // Sends raw frames and returns why parsing refused them ("" when accepted).
  std::string Refusal(const std::vector<std::string>& frames, kvstore::dist::Header* h = nullptr) {
    for (size_t i = 0; i < frames.size(); ++i)
      zmq_send(a_, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    zmq_pollitem_t item{b_, 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, 1000);
    kvstore::dist::Frames f;
    EXPECT_TRUE(f.Recv(b_));
    kvstore::dist::Header parsed;
    const void* payload = nullptr;
    size_t n = 0;
    std::string why;
    bool ok = kvstore::dist::ParseMessage(f, 0, &parsed, &payload, &n, &why);
    if (h != nullptr) *h = parsed;
    return ok ? "" : why;
  }
  static std::string Bytes(const kvstore::dist::Header& h) {
    return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
  }
  void* ctx_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
};

TEST_F(KVStoreProtocol, WellFormedMessagesParseAndMalformedOnesSayWhy) {
  kvstore::dist::Header h;
  h.type = static_cast<uint16_t>(kvstore::dist::MsgType::kPush);
  h.key = 4;
  h.total = 10;
  h.offset = 2;
  h.count = 2;
  h.payload_bytes = 8;
  kvstore::dist::Header got;
  EXPECT_EQ(Refusal({Bytes(h), std::string(8, 'x')}, &got), "");
  EXPECT_EQ(got.key, 4);
  EXPECT_EQ(got.count, 2u);
  EXPECT_EQ(Refusal({"abc"}), "header of 3 bytes, expected 80");
  kvstore::dist::Header bad = h;
  bad.magic = 1;
  EXPECT_EQ(Refusal({Bytes(bad), std::string(8, 'x')}), "bad magic number");
  bad = h;
  bad.version = 9;
  EXPECT_EQ(Refusal({Bytes(bad), std::string(8, 'x')}), "protocol version 9, expected 2");
  bad = h;
  bad.type = 999;
  EXPECT_EQ(Refusal({Bytes(bad), std::string(8, 'x')}), "unknown message type 999");
  EXPECT_EQ(Refusal({Bytes(h), std::string(5, 'x')}), "the header announces 8 payload bytes, the message has 5");
  bad = h;
  bad.count = 9;
  EXPECT_EQ(Refusal({Bytes(bad), std::string(8, 'x')}), "range [2, +9) outside a key of 10 elements");
  EXPECT_EQ(Refusal({Bytes(h), "a", "b"}), "expected a header and at most one payload frame, got 3 frames");
}

// What a server checks before it allocates or touches anything for a worker's request.
TEST_F(KVStoreProtocol, DataRequestsAreCheckedBeforeAnythingIsAllocated) {
  using kvstore::dist::MsgType;
  kvstore::dist::Config cfg;
  cfg.max_message_bytes = 1 << 20;
  kvstore::dist::Header h;
  h.type = static_cast<uint16_t>(MsgType::kInit);
  h.key = 7;
  h.count = h.total = 1000;
  h.dtype = 0;  // float32
  std::string why;
  EXPECT_TRUE(kvstore::dist::CheckDataRequest(h, 4000, cfg, &why)) << why;
  // The forged init of issue 22: 2^62 elements of 4 bytes wrap to 0 bytes, "matching" an
  // empty payload.
  kvstore::dist::Header bad = h;
  bad.count = bad.total = uint64_t{1} << 62;
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 0, cfg, &why));
  EXPECT_EQ(why, "key 7: a range of 4611686018427387904 elements of 4 bytes is over the limit of 1048576 bytes "
                 "(WEFT_KVSTORE_MAX_MESSAGE_BYTES)");
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(h, 0, cfg, &why));
  EXPECT_EQ(why, "init of key 7 [0, +1000) of float32: expected 4000 payload bytes, got 0");
  bad = h;
  bad.dtype = 99;
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 4000, cfg, &why));
  EXPECT_EQ(why, "unknown dtype code 99");
  bad = h;
  bad.key = -1;
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 4000, cfg, &why));
  EXPECT_EQ(why, "key -1 outside [0, 2^31)");
  bad = h;
  bad.flags = 64;
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 4000, cfg, &why));
  EXPECT_EQ(why, "unknown flags 64");
  bad = h;
  bad.type = static_cast<uint16_t>(MsgType::kPush);
  bad.flags = kvstore::dist::kFlagCompressed;
  bad.threshold = std::nanf("");
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 250, cfg, &why));
  EXPECT_EQ(why, "key 7: a compressed push needs float32 values and a finite threshold > 0");
  bad.threshold = 0.5f;
  EXPECT_TRUE(kvstore::dist::CheckDataRequest(bad, 250, cfg, &why)) << why;
  bad = h;
  bad.type = static_cast<uint16_t>(MsgType::kPull);
  EXPECT_TRUE(kvstore::dist::CheckDataRequest(bad, 0, cfg, &why)) << why;
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 4, cfg, &why));
  bad.type = static_cast<uint16_t>(MsgType::kHeartbeat);
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, 0, cfg, &why));
  EXPECT_EQ(why, "a heartbeat message is not a request to a server");
  bad.type = static_cast<uint16_t>(MsgType::kCommand);
  EXPECT_FALSE(kvstore::dist::CheckDataRequest(bad, (1 << 20) + 1, cfg, &why));
  EXPECT_EQ(why, "a payload of 1048577 bytes, over the limit of 1048576 (WEFT_KVSTORE_MAX_MESSAGE_BYTES)");
}

// A flood of bad messages must not become a flood of log lines.
TEST(KVStoreLogLimit, LetsTwentyWarningsASecondThrough) {
  kvstore::dist::LogLimit limit;
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += limit.Allow();
  EXPECT_EQ(allowed, 20);
}

TEST(KVStoreAddressBook, RoundTripsAndRefusesMalformedLines) {
  kvstore::dist::AddressBook book;
  book.servers = {"tcp://127.0.0.1:5000", "tcp://127.0.0.1:5001"};
  book.workers = {{0, "ab12"}, {1, "cd34"}};
  kvstore::dist::AddressBook back;
  std::string why;
  ASSERT_TRUE(kvstore::dist::AddressBook::Parse(book.Text(), &back, &why)) << why;
  EXPECT_EQ(back.servers, book.servers);
  EXPECT_EQ(back.workers, book.workers);
  EXPECT_FALSE(kvstore::dist::AddressBook::Parse("server 1 tcp://x:1\n", &back, &why));
  EXPECT_EQ(why, "unexpected address book line 'server 1 tcp://x:1'");
  EXPECT_FALSE(kvstore::dist::AddressBook::Parse("worker 0 a b\n", &back, &why));
  EXPECT_EQ(why, "malformed address book line 'worker 0 a b'");
  EXPECT_FALSE(kvstore::dist::AddressBook::Parse("", &back, &why));
  EXPECT_EQ(why, "the address book lists no server");
  EXPECT_EQ(kvstore::dist::WorkerRoutingId(3, "ab"), "W3.ab");
}

}  // namespace
}  // namespace weft
#endif

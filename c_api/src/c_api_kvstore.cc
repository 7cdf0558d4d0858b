// The key-value store functions of the C API (c_api.h, "key-value stores").
#include <memory>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/kvstore/kvstore.h"
#if WEFT_USE_DIST
#include "core/kvstore/dist/dist.h"
#endif

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT
using weft::kvstore::KVStore;

namespace {

using KVStoreTable = HandleTable<std::unique_ptr<KVStore>, HandleKind::kKVStore>;

KVStore& Store(const weft_kvstore_t* h, const char* arg, const char* fn) { return *KVStoreTable::Get().Ref(h, arg, fn); }
#define WEFT_KV(h) Store((h), #h, __func__)

}  // namespace

extern "C" {

weft_status_t weft_kvstore_create(const char* type, weft_kvstore_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(type != nullptr, kValue, __func__, ": 'type' is NULL");
  auto kv = KVStore::Create(type);
  *out = reinterpret_cast<weft_kvstore_t*>(KVStoreTable::Get().Create(std::move(kv)));
  WEFT_API_END
}

weft_status_t weft_kvstore_free(weft_kvstore_t* kv) {
  WEFT_API_BEGIN
  KVStoreTable::Get().Free(kv, "kv", __func__);
  WEFT_API_END
}

weft_status_t weft_kvstore_get_type(const weft_kvstore_t* kv, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = WEFT_KV(kv).type().c_str();
  WEFT_API_END
}

weft_status_t weft_kvstore_init(weft_kvstore_t* kv, int num, const char* const* key_names,
                                weft_ndarray_t* const* values) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  s.Init(ReadStrings(num, key_names, "key_names", "num", __func__),
         ReadArrayList(num, "num", values, false, "values", __func__));
  WEFT_API_END
}

weft_status_t weft_kvstore_push(weft_kvstore_t* kv, int num, const char* const* key_names,
                                weft_ndarray_t* const* values, int priority) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  s.Push(ReadStrings(num, key_names, "key_names", "num", __func__),
         ReadArrayList(num, "num", values, false, "values", __func__), priority);
  WEFT_API_END
}

weft_status_t weft_kvstore_pull(weft_kvstore_t* kv, int num, const char* const* key_names,
                                weft_ndarray_t* const* outs, int priority) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  s.Pull(ReadStrings(num, key_names, "key_names", "num", __func__),
         ReadArrayList(num, "num", outs, false, "outs", __func__), priority);
  WEFT_API_END
}

weft_status_t weft_kvstore_pull_rows(weft_kvstore_t* kv, const char* key_name, const weft_ndarray_t* row_ids,
                                     weft_ndarray_t* out, int priority) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  WEFT_CHECK(key_name != nullptr, kValue, __func__, ": 'key_name' is NULL");
  s.PullRows(key_name, Arr(row_ids, "row_ids", __func__), Arr(out, "out", __func__), priority);
  WEFT_API_END
}

weft_status_t weft_kvstore_pushpull(weft_kvstore_t* kv, int num, const char* const* key_names,
                                    weft_ndarray_t* const* values, int num_pull, const char* const* pull_key_names,
                                    weft_ndarray_t* const* pull_outs, int priority) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  s.PushPull(ReadStrings(num, key_names, "key_names", "num", __func__),
             ReadArrayList(num, "num", values, false, "values", __func__),
             ReadStrings(num_pull, pull_key_names, "pull_key_names", "num_pull", __func__),
             ReadArrayList(num_pull, "num_pull", pull_outs, false, "pull_outs", __func__), priority);
  WEFT_API_END
}

weft_status_t weft_kvstore_set_updater(weft_kvstore_t* kv, weft_kvstore_updater_t updater, void* user) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  if (updater == nullptr) {
    s.SetUpdater(nullptr);
  } else {
    s.SetUpdater([updater, user](int, const std::string& key, const NDArray& merged, NDArray* stored) {
      weft_ndarray_t* m = NewArrHandle(merged);
      weft_ndarray_t* st = NewArrHandle(*stored);
      int rc = updater(key.c_str(), m, st, user);
      WEFT_CHECK(rc == 0, kRuntime, "kvstore: the updater failed on key '", key, "' (it returned ", rc, ")");
    });
  }
  WEFT_API_END
}

weft_status_t weft_kvstore_set_gradient_compression(weft_kvstore_t* kv, int num_params, const char* const* keys,
                                                    const char* const* vals) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  auto k = ReadStrings(num_params, keys, "keys", "num_params", __func__);
  auto v = ReadStrings(num_params, vals, "vals", "num_params", __func__);
  KwArgs params;
  for (int i = 0; i < num_params; ++i) params.emplace_back(k[i], v[i]);
  s.SetGradientCompression(params);
  WEFT_API_END
}

weft_status_t weft_kvstore_get_rank(const weft_kvstore_t* kv, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = WEFT_KV(kv).Rank();
  WEFT_API_END
}

weft_status_t weft_kvstore_get_num_workers(const weft_kvstore_t* kv, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = WEFT_KV(kv).NumWorkers();
  WEFT_API_END
}

weft_status_t weft_kvstore_barrier(weft_kvstore_t* kv) {
  WEFT_API_BEGIN
  WEFT_KV(kv).Barrier();
  WEFT_API_END
}

weft_status_t weft_kvstore_send_command_to_servers(weft_kvstore_t* kv, int head, const void* data, size_t size) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  CheckBuffer(data, size, "data", "size", __func__);
  s.SendCommandToServers(head, std::string(static_cast<const char*>(data ? data : ""), size));
  WEFT_API_END
}

weft_status_t weft_kvstore_run_server(weft_kvstore_t* kv, weft_kvstore_controller_t controller, void* user) {
  WEFT_API_BEGIN
  KVStore& s = WEFT_KV(kv);
  s.RunServer([controller, user](int head, const std::string& body) {
    if (controller == nullptr) return;
    int rc = controller(head, body.data(), body.size(), user);
    WEFT_CHECK(rc == 0, kRuntime, "kvstore: the server's command handler failed on command ", head,
               " (it returned ", rc, ")");
  });
  WEFT_API_END
}

weft_status_t weft_kvstore_run_scheduler(void) {
  WEFT_API_BEGIN
#if WEFT_USE_DIST
  kvstore::dist::RunScheduler();
#else
  Throw(ErrorKind::kUnsupported, "weft_kvstore_run_scheduler: this build has no distributed store (WEFT_USE_DIST=OFF)");
#endif
  WEFT_API_END
}

weft_status_t weft_kvstore_get_role(const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
#if WEFT_USE_DIST
  std::string role = kvstore::dist::RoleFromEnv();
  *out = role == "server" ? "server" : role == "scheduler" ? "scheduler" : "worker";
#else
  *out = "worker";
#endif
  WEFT_API_END
}

}  // extern "C"

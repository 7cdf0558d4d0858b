#include "core/kvstore/kvstore.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/kvstore/local.h"
#if WEFT_USE_DIST
#include "core/kvstore/dist/dist.h"
#endif

namespace weft {
namespace kvstore {

bool ParseIntKey(const std::string& text, int* out) {
  if (text.empty() || text.size() > 10) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v >= (int64_t{1} << 30)) return false;
  *out = static_cast<int>(v);
  return true;
}

std::unique_ptr<KVStore> KVStore::Create(const std::string& type) {
  // MXNet's local variants all reduce on the CPU here; "device" and "nccl" reduce where
  // the values live.
  static const char* kLocal[] = {"local", "local_update_cpu", "local_allreduce_cpu"};
  static const char* kDevice[] = {"device", "local_allreduce_device", "nccl"};
  for (const char* t : kLocal)
    if (type == t) return std::make_unique<LocalStore>(type, /*device_mode=*/false);
  for (const char* t : kDevice)
    if (type == t) return std::make_unique<LocalStore>(type, /*device_mode=*/true);
  if (type.rfind("dist", 0) == 0) {
    WEFT_CHECK(type == "dist" || type == "dist_sync" || type == "dist_async" || type == "dist_device_sync" ||
                   type == "dist_sync_device",
               kValue, "kvstore: unknown dist type '", type,
               "' (expected dist, dist_sync, dist_async or dist_device_sync)");
#if WEFT_USE_DIST
    return dist::CreateDistStore(type);
#else
    Throw(ErrorKind::kUnsupported, "kvstore: type '", type, "' needs a build with WEFT_USE_DIST=ON (ZeroMQ)");
#endif
  }
  Throw(ErrorKind::kValue, "kvstore: unknown type '", type,
        "' (expected local, device, nccl, dist, dist_sync, dist_async or dist_device_sync)");
}

void KVStore::SetGradientCompression(const KwArgs& params) {
  WEFT_CHECK(type_.find("device") != std::string::npos || type_.find("dist") != std::string::npos ||
                 type_ == "nccl",
             kUnsupported, "kvstore: gradient compression is not supported for type '", type_,
             "' (use a device or dist store)");
  compression_.SetParams(params);
}

void KVStore::SendCommandToServers(int head, const std::string& body) {
  Throw(ErrorKind::kUnsupported, "kvstore: commands to servers need a dist store (this one is '", type_, "')");
}

void KVStore::PullRows(const std::string& key, const NDArray&, const NDArray&, int) {
  Throw(ErrorKind::kUnsupported, "kvstore: row_sparse_pull of key '", key, "' is not supported by a '", type_,
        "' store");
}

std::vector<int64_t> KVStore::CheckRowPull(int key, const Shape& shape, DType dtype, const NDArray& row_ids,
                                           const NDArray& out) const {
  const std::string& name = KeyText(key);
  WEFT_CHECK(shape.ndim() >= 1, kShape, "kvstore row_sparse_pull: key '", name, "' holds a scalar, which has no rows");
  WEFT_CHECK(!row_ids.is_none() && !row_ids.is_sparse() && row_ids.shape().ndim() == 1 &&
                 row_ids.dtype() == DType::kInt64, kType,
             "kvstore row_sparse_pull: expected the row ids as a dense 1-D int64 array, got ",
             row_ids.is_none() ? std::string("none") : row_ids.shape().ToString() + " " + DTypeName(row_ids.dtype()));
  std::vector<int64_t> rows(static_cast<size_t>(row_ids.Size()));
  if (!rows.empty()) row_ids.SyncCopyToCPU(rows.data(), rows.size() * sizeof(int64_t));
  for (size_t i = 0; i < rows.size(); ++i) {
    WEFT_CHECK(rows[i] >= 0 && rows[i] < shape[0], kIndex, "kvstore row_sparse_pull: row id ", rows[i],
               " at position ", i, " is out of range [0, ", shape[0], ") for key '", name, "'");
    WEFT_CHECK(i == 0 || rows[i] > rows[i - 1], kValue,
               "kvstore row_sparse_pull: row ids must be strictly increasing, got ", rows[i - 1], " then ", rows[i]);
  }
  Shape want = shape;
  want[0] = static_cast<int64_t>(rows.size());
  WEFT_CHECK(!out.is_none() && !out.is_sparse() && out.shape() == want && out.dtype() == dtype, kShape,
             "kvstore row_sparse_pull: key '", name, "': expected a dense destination of shape ", want.ToString(),
             " ", DTypeName(dtype), ", got ",
             out.is_none() ? std::string("none") : out.shape().ToString() + " " + DTypeName(out.dtype()));
  return rows;
}

void KVStore::RunServer(Controller controller) {
  Throw(ErrorKind::kUnsupported, "kvstore: only a dist store in a server process runs a server (this one is '",
        type_, "')");
}

int KVStore::KeyId(const std::string& key, bool create) {
  int id = 0;
  if (ParseIntKey(key, &id)) return id;
  WEFT_CHECK(!key.empty(), kValue, "kvstore: a key must not be empty");
  auto it = str_ids_.find(key);
  if (it != str_ids_.end()) return it->second;
  WEFT_CHECK(create, kNotFound, "kvstore: key '", key, "' was never initialised");
  id = next_str_id_++;
  str_ids_.emplace(key, id);
  texts_.emplace(id, key);
  return id;
}

const std::string& KVStore::KeyText(int id) const {
  auto it = texts_.find(id);
  if (it != texts_.end()) return it->second;
  thread_local std::string text;
  text = std::to_string(id);
  return text;
}

std::vector<KVStore::Group> KVStore::GroupByKey(const std::vector<std::string>& keys,
                                                const std::vector<NDArray>& arrays, const char* what,
                                                bool create) {
  WEFT_CHECK(keys.size() == arrays.size(), kValue, "kvstore ", what, ": expected one array per key, got ",
             keys.size(), " keys and ", arrays.size(), " arrays");
  std::vector<Group> groups;
  std::unordered_map<int, size_t> at;
  for (size_t i = 0; i < keys.size(); ++i) {
    WEFT_CHECK(!arrays[i].is_none(), kValue, "kvstore ", what, ": the array for key '", keys[i], "' is none");
    int id = KeyId(keys[i], create);
    auto it = at.find(id);
    if (it == at.end()) {
      at.emplace(id, groups.size());
      groups.push_back({id, {arrays[i]}});
    } else {
      groups[it->second].arrays.push_back(arrays[i]);
    }
  }
  return groups;
}

namespace {
template <typename T>
void AddKernel(T* dst, const T* src, int64_t n, bool assign, bool parallel) {
  using A = typename AccType<T>::type;
#pragma omp parallel for schedule(static) if (parallel && n > 32768)
  for (int64_t i = 0; i < n; ++i)
    dst[i] = assign ? src[i] : static_cast<T>(static_cast<A>(dst[i]) + static_cast<A>(src[i]));
}

template <typename T>
void SumKernel(T* dst, const T* a, const T* b, int64_t n, bool parallel) {
  using A = typename AccType<T>::type;
#pragma omp parallel for schedule(static) if (parallel && n > 32768)
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<A>(a[i]) + static_cast<A>(b[i]));
}
}  // namespace

void SumInto(void* dst, const void* a, const void* b, int64_t n, DType dtype, bool parallel) {
  WEFT_CHECK(dtype != DType::kBool, kType, "kvstore: cannot sum bool arrays");
  WEFT_TYPE_SWITCH(dtype, T, {
    SumKernel(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n, parallel);
  });
}

void AddInto(void* dst, const void* src, int64_t n, DType dtype, bool assign, bool parallel) {
  WEFT_CHECK(dtype != DType::kBool, kType, "kvstore: cannot sum bool arrays");
  WEFT_TYPE_SWITCH(dtype, T, { AddKernel(static_cast<T*>(dst), static_cast<const T*>(src), n, assign, parallel); });
}

void ReduceSum(const std::vector<NDArray>& srcs, const NDArray& dst, int priority) {
  WEFT_CHECK(!srcs.empty(), kInternal, "kvstore: nothing to reduce");
  WEFT_CHECK(dst.ctx().is_host(), kInternal, "kvstore: the reduce buffer must be on the CPU");
  std::vector<NDArray> host;
  host.reserve(srcs.size());
  for (const NDArray& s : srcs) {
    WEFT_CHECK(s.shape() == dst.shape() && s.dtype() == dst.dtype(), kShape, "kvstore: expected values of shape ",
               dst.shape().ToString(), " and dtype ", DTypeName(dst.dtype()), ", got ", s.shape().ToString(), " ", DTypeName(s.dtype()));
    if (s.ctx().is_host()) {
      host.push_back(s);
    } else {
      NDArray tmp(s.shape(), Context::CPU(), s.dtype());
      CopyFromTo(s, tmp, priority);
      host.push_back(tmp);
    }
  }
  std::vector<engine::VarHandle> reads;
  for (const NDArray& h : host)
    if (!h.SameChunk(dst)) reads.push_back(h.var());
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  engine::Engine::Get()->PushSync(
      [host, dst](engine::RunContext) {
        TBlob out = dst.data();
        const int64_t n = out.Size();
        for (size_t i = 0; i < host.size(); ++i) {
          TBlob in = host[i].data();
          if (i == 0 && in.dptr == out.dptr) continue;
          AddInto(out.dptr, in.dptr, n, out.dtype, /*assign=*/i == 0);
        }
      },
      Context::CPU(), reads, {dst.var()}, engine::FnProperty::kNormal, priority, "KVStoreReduce");
}

}  // namespace kvstore
}  // namespace weft

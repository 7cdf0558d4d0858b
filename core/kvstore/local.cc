#include "core/kvstore/local.h"

#include <algorithm>
#include <cstring>

#include "core/base/error.h"
#include "core/kvstore/device_comm.h"

namespace weft {
namespace kvstore {

void LocalStore::Init(const std::vector<std::string>& keys, const std::vector<NDArray>& values) {
  WEFT_CHECK(keys.size() == values.size(), kValue, "kvstore init: expected one array per key, got ", keys.size(),
             " keys and ", values.size(), " arrays");
  for (size_t i = 0; i < keys.size(); ++i) {
    WEFT_CHECK(!values[i].is_none(), kValue, "kvstore init: the array for key '", keys[i], "' is none");
    int id = KeyId(keys[i], /*create=*/true);
    WEFT_CHECK(store_.find(id) == store_.end(), kValue, "kvstore init: key '", keys[i], "' is already initialised");
    Entry e;
    e.stored = NDArray(values[i].shape(), Context::CPU(), values[i].dtype());
    CopyFromTo(values[i], e.stored);
    store_.emplace(id, std::move(e));
  }
}

std::vector<NDArray> LocalStore::Compress(Entry* e, const std::vector<NDArray>& values, int priority) {
  const NDArray& ref = e->stored;
  WEFT_CHECK(ref.dtype() == DType::kFloat32, kType, "kvstore: 2-bit gradient compression needs float32 values, got ",
             DTypeName(ref.dtype()));
  while (e->residuals.size() < values.size()) {
    NDArray r(ref.shape(), Context::CPU(), DType::kFloat32);
    engine::Engine::Get()->PushSync([r](engine::RunContext) {
      TBlob b = r.data();
      std::fill(b.ptr<float>(), b.ptr<float>() + b.Size(), 0.f);
    }, Context::CPU(), {}, {r.var()});
    e->residuals.push_back(r);
    e->decompressed.emplace_back(ref.shape(), Context::CPU(), DType::kFloat32);
  }
  std::vector<NDArray> out;
  const float threshold = compression_.threshold();
  for (size_t i = 0; i < values.size(); ++i) {
    NDArray src = values[i];
    if (!src.ctx().is_host()) {
      NDArray tmp(src.shape(), Context::CPU(), src.dtype());
      CopyFromTo(src, tmp, priority);
      src = tmp;
    }
    NDArray res = e->residuals[i], dq = e->decompressed[i];
    engine::Engine::Get()->PushSync(
        [src, res, dq, threshold](engine::RunContext) {
          const int64_t n = src.Size();
          std::vector<uint8_t> packed(GradientCompression::CompressedBytes(n));
          GradientCompression::Quantize(src.data().ptr<float>(), res.data().ptr<float>(), packed.data(), n, threshold);
          GradientCompression::Dequantize(packed.data(), dq.data().ptr<float>(), n, threshold, /*assign=*/true);
        },
        Context::CPU(), {src.var()}, {res.var(), dq.var()}, engine::FnProperty::kNormal, priority, "KVStoreCompress");
    out.push_back(dq);
  }
  return out;
}

void LocalStore::Push(const std::vector<std::string>& keys, const std::vector<NDArray>& values, int priority) {
  for (Group& g : GroupByKey(keys, values, "push", /*create=*/false)) {
    auto it = store_.find(g.key);
    WEFT_CHECK(it != store_.end(), kNotFound, "kvstore push: key '", KeyText(g.key), "' was never initialised");
    Entry& e = it->second;
    for (const NDArray& v : g.arrays)
      WEFT_CHECK(v.shape() == e.stored.shape() && v.dtype() == e.stored.dtype(), kShape, "kvstore push: key '",
                 KeyText(g.key), "' holds ", e.stored.shape().ToString(), " ", DTypeName(e.stored.dtype()),
                 ", got a value of ", v.shape().ToString(), " ", DTypeName(v.dtype()));
    std::vector<NDArray> vals = compression_.active() ? Compress(&e, g.arrays, priority) : g.arrays;
    // Once a key is summed on a GPU, later pushes are too, host values included.
    const bool on_gpu = device_mode_ && (e.stored.ctx().is_gpu() || std::any_of(vals.begin(), vals.end(),
                                                                                  [](const NDArray& v) {
                                                                                    return v.ctx().is_gpu();
                                                                                  }));
    NDArray merged;
    if (on_gpu) {
      merged = SumOnKeyGPU(&e, vals, priority);
      // The stored array follows the sum to its GPU once, so that the updater's operators
      // see both on one device (as MXNet's device store) and pulls copy from there.
      if (e.stored.ctx() != merged.ctx()) {
        NDArray moved(e.stored.shape(), merged.ctx(), e.stored.dtype());
        CopyFromTo(e.stored, moved, priority);
        e.stored = moved;
      }
    } else if (vals.size() == 1) {
      merged = vals[0];
    } else {
      if (e.merge_buf.is_none()) e.merge_buf = NDArray(e.stored.shape(), Context::CPU(), e.stored.dtype());
      ReduceSum(vals, e.merge_buf, priority);
      merged = e.merge_buf;
    }
    if (updater_) {
      updater_(g.key, KeyText(g.key), merged, &e.stored);
    } else {
      CopyFromTo(merged, e.stored, priority);
    }
  }
}

NDArray LocalStore::SumOnKeyGPU(Entry* e, const std::vector<NDArray>& vals, int priority) {
#if WEFT_USE_CUDA
  const NDArray& ref = e->stored;
  if (e->merge_gpu < 0) {
    // The values' GPU that sums the fewest bytes so far, so that the keys spread evenly.
    int best = -1;
    for (const NDArray& v : vals) {
      if (!v.ctx().is_gpu()) continue;
      const int d = v.ctx().dev_id;
      if (best < 0 || gpu_bytes_[d] < gpu_bytes_[best]) best = d;
    }
    e->merge_gpu = best;
    gpu_bytes_[best] += static_cast<int64_t>(ref.Size() * DTypeSize(ref.dtype()));
    e->gpu_merge = NDArray(ref.shape(), Context::GPU(best), ref.dtype());
  }
#if WEFT_USE_NCCL
  std::vector<int> devs;
  // The "nccl" store reduces through NCCL also with one GPU (a one-rank communicator), as
  // MXNet's does: the same path then runs on a one-GPU machine as on several.
  bool distinct = (vals.size() > 1 || type_ == "nccl") && NcclSupports(ref.dtype());
  for (const NDArray& v : vals) {
    distinct = distinct && v.ctx().is_gpu() && std::find(devs.begin(), devs.end(), v.ctx().dev_id) == devs.end();
    devs.push_back(v.ctx().dev_id);
  }
  if (distinct && std::find(devs.begin(), devs.end(), e->merge_gpu) != devs.end()) {
    NcclReduce(vals, e->gpu_merge, priority);
    return e->gpu_merge;
  }
#endif
  return kvstore::ReduceOnGPU(vals, e->gpu_merge, &e->gpu_copies, priority);
#else
  Throw(ErrorKind::kUnsupported, "kvstore '", type_, "': values on a GPU need a build with WEFT_USE_CUDA");
#endif
}

void LocalStore::Broadcast(const Entry& e, const std::vector<NDArray>& outs, int priority) {
#if WEFT_USE_NCCL
  if (device_mode_ && (outs.size() > 1 || type_ == "nccl") && e.stored.ctx().is_gpu() &&
      NcclSupports(e.stored.dtype())) {
    std::vector<int> devs;
    bool distinct = true;
    for (const NDArray& o : outs) {
      distinct = distinct && o.ctx().is_gpu() && o.dtype() == e.stored.dtype() &&
                 std::find(devs.begin(), devs.end(), o.ctx().dev_id) == devs.end();
      devs.push_back(o.ctx().dev_id);
    }
    if (distinct && std::find(devs.begin(), devs.end(), e.stored.ctx().dev_id) != devs.end()) {
      NcclBroadcast(e.stored, outs, priority);
      return;
    }
  }
#endif
  for (const NDArray& o : outs) CopyFromTo(e.stored, o, priority);
}

void LocalStore::Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) {
  for (Group& g : GroupByKey(keys, outs, "pull", /*create=*/false)) {
    auto it = store_.find(g.key);
    WEFT_CHECK(it != store_.end(), kNotFound, "kvstore pull: key '", KeyText(g.key), "' was never initialised");
    for (const NDArray& o : g.arrays) {
      WEFT_CHECK(o.shape() == it->second.stored.shape(), kShape, "kvstore pull: key '", KeyText(g.key), "' holds ",
                 it->second.stored.shape().ToString(), ", the destination has shape ", o.shape().ToString());
    }
    Broadcast(it->second, g.arrays, priority);
  }
}

void LocalStore::PullRows(const std::string& key, const NDArray& row_ids, const NDArray& out, int priority) {
  int id = KeyId(key, /*create=*/false);
  auto it = store_.find(id);
  WEFT_CHECK(it != store_.end(), kNotFound, "kvstore row_sparse_pull: key '", key, "' was never initialised");
  NDArray src = it->second.stored;
  std::vector<int64_t> rows = CheckRowPull(id, src.shape(), src.dtype(), row_ids, out);
  if (!src.ctx().is_host()) {
    NDArray host(src.shape(), Context::CPU(), src.dtype());
    CopyFromTo(src, host, priority);
    src = host;
  }
  NDArray dst = out.ctx().is_host() ? out : NDArray(out.shape(), Context::CPU(), out.dtype());
  engine::Engine::Get()->PushSync(
      [src, dst, rows](engine::RunContext) {
        const size_t row_bytes = src.shape()[0] == 0 ? 0 : src.data().Bytes() / static_cast<size_t>(src.shape()[0]);
        const char* from = static_cast<const char*>(src.data().dptr);
        char* to = static_cast<char*>(dst.data().dptr);
        for (size_t k = 0; k < rows.size(); ++k) std::memcpy(to + k * row_bytes, from + rows[k] * row_bytes, row_bytes);
      },
      Context::CPU(), {src.var()}, {dst.var()}, engine::FnProperty::kNormal, priority, "KVStoreRowPull");
  if (!dst.SameChunk(out)) CopyFromTo(dst, out, priority);
}

}  // namespace kvstore
}  // namespace weft

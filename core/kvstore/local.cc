#include "core/kvstore/local.h"

#include <algorithm>

#include "core/base/error.h"

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
    NDArray merged;
    if (vals.size() == 1) {
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

void LocalStore::Pull(const std::vector<std::string>& keys, const std::vector<NDArray>& outs, int priority) {
  for (Group& g : GroupByKey(keys, outs, "pull", /*create=*/false)) {
    auto it = store_.find(g.key);
    WEFT_CHECK(it != store_.end(), kNotFound, "kvstore pull: key '", KeyText(g.key), "' was never initialised");
    for (const NDArray& o : g.arrays) {
      WEFT_CHECK(o.shape() == it->second.stored.shape(), kShape, "kvstore pull: key '", KeyText(g.key), "' holds ",
                 it->second.stored.shape().ToString(), ", the destination has shape ", o.shape().ToString());
      CopyFromTo(it->second.stored, o, priority);
    }
  }
}

}  // namespace kvstore
}  // namespace weft

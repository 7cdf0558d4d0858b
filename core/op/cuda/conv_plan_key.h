// The key of a cached cuDNN convolution plan, and the per-thread cache that holds them
// (core/op/cuda/cudnn_conv.cc). Kept free of CUDA headers so that the CPU build's tests
// check which calls share a plan.
//
// A plan is only valid for exactly the problem it was built for, so the key holds
// everything cuDNN saw: the pass, the whole geometry (tensors are packed NC... arrays, so
// shapes fix the strides), the dtype, each tensor's pointer alignment, the device, and the
// choices that change which engine is picked or what it computes (tuning mode and
// workspace limit, TF32, and whether the output is accumulated into: beta is baked into
// the operation).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "core/base/dtype.h"
#include "core/op/nn/conv_common.h"

namespace weft {
namespace cuda {

enum class ConvPass : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };
// MXNet's cudnn_tune: heuristics only ('off', or None with MXNET_CUDNN_AUTOTUNE_DEFAULT=0),
// timing the candidates within the workspace limit, or timing every candidate.
enum class ConvTune : int { kHeuristic = 0, kLimitedWorkspace = 1, kFastest = 2 };

// The largest power of two up to 16 that divides the address: what the tensor descriptor
// promises cuDNN (vector loads are at most 16 bytes, so more buys nothing and would only
// split the cache).
inline int64_t ByteAlignment(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

struct ConvPlanKey {
  std::array<int64_t, 33> v{};
  bool operator==(const ConvPlanKey& o) const { return v == o.v; }
  bool operator!=(const ConvPlanKey& o) const { return v != o.v; }
};

struct ConvPlanKeyHash {
  size_t operator()(const ConvPlanKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) {
      h ^= static_cast<uint64_t>(x);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

// x, w and y are the convolution's input, weight and output (whichever of them the pass
// writes); workspace_limit is in bytes (ignored, and so left out, for kFastest).
inline ConvPlanKey MakeConvPlanKey(ConvPass pass, const op::ConvGeom& g, DType dt, const void* x, const void* w,
                                   const void* y, int device, ConvTune tune, int64_t workspace_limit, bool allow_tf32,
                                   bool accumulate) {
  ConvPlanKey k;
  size_t i = 0;
  auto put = [&](int64_t x) { k.v[i++] = x; };
  put(static_cast<int64_t>(pass));
  put(g.nd);
  put(g.n);
  put(g.c);
  put(g.f);
  put(g.g);
  for (const int64_t* a : {g.in, g.out, g.k, g.s, g.d, g.pl})
    for (int j = 0; j < 3; ++j) put(a[j]);
  put(static_cast<int64_t>(dt));
  put(ByteAlignment(x));
  put(ByteAlignment(w));
  put(ByteAlignment(y));
  put(device);
  put(static_cast<int64_t>(tune));
  put(tune == ConvTune::kFastest ? -1 : workspace_limit);
  // TF32 only changes float32's engines; other dtypes share their plans either way.
  put(dt == DType::kFloat32 && allow_tf32);
  put(accumulate);
  return k;
}

// Plans by key, for one thread (plans are bound to that thread's cuDNN handle). Entries
// live as long as the thread: a model has a fixed, small set of geometries.
template <typename Plan>
class ConvPlanCache {
 public:
  Plan* Find(const ConvPlanKey& key) {
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : &it->second;
  }
  Plan& Insert(const ConvPlanKey& key, Plan plan) { return plans_.insert_or_assign(key, std::move(plan)).first->second; }
  size_t size() const { return plans_.size(); }

 private:
  std::unordered_map<ConvPlanKey, Plan, ConvPlanKeyHash> plans_;
};

}  // namespace cuda
}  // namespace weft

// Resources an operator may request from the registry: a random generator or a temporary
// workspace. Each resource owns an engine variable; an operator that uses one writes it,
// which serialises users and makes random draws reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/base/context.h"
#include "core/engine/engine.h"
#include "core/storage/storage.h"

namespace weft {

enum class ResourceType : int { kRandom = 0, kTempSpace = 1 };

struct ResourceRequest {
  ResourceType type;
};

// The per-context generator state: a seed and the position of the next unused counter.
struct RandomState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  // Reserves `n` counters and returns the first; called inside the operator (which holds
  // the resource's variable for writing, so no lock is needed).
  uint64_t Reserve(uint64_t n) { uint64_t o = offset; offset += n; return o; }
};

class TempSpace {
 public:
  explicit TempSpace(Context ctx) : ctx_(ctx) {}
  ~TempSpace();
  // A buffer of at least `bytes`, valid until the next call; grows and never shrinks.
  void* Get(size_t bytes);

 private:
  Context ctx_;
  StorageHandle handle_;
};

struct Resource {
  ResourceType type = ResourceType::kTempSpace;
  engine::VarHandle var = nullptr;
  RandomState* random = nullptr;  // for kRandom
  TempSpace* temp = nullptr;      // for kTempSpace
};

class ResourceManager {
 public:
  static ResourceManager* Get();
  virtual ~ResourceManager() = default;
  virtual Resource Request(Context ctx, const ResourceRequest& req) = 0;
  // Re-seeds the generators of every context (seeding waits for pending random draws) —
  // or only `ctx`'s when given.
  virtual void SeedRandom(uint64_t seed) = 0;
  virtual void SeedRandom(Context ctx, uint64_t seed) = 0;
};

}  // namespace weft

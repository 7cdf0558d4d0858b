// Shared machinery of the C API: the error boundary and the handle tables.
//
// Handles never point at memory. A handle's value packs a kind tag (top 8 bits), a
// generation (next 24 bits) and a slot index + 1 (low 32 bits). Slots live in chunks that
// are never returned to malloc, and a slot's generation moves on when its object is freed,
// so a NULL, forged, freed (even after the slot is reused) or wrong-kind handle is
// recognised by arithmetic and a table lookup, without ever dereferencing what the caller
// passed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/context.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"
#include "core/profiler/profiler.h"
#include "weft/c_api.h"

namespace weft {
class Op;
namespace capi {

static_assert(sizeof(void*) == 8, "handle values pack 64 bits");

// Raised for bad handles; turned into WEFT_ERR_HANDLE (the core has no such error kind).
class HandleError : public std::runtime_error {
 public:
  explicit HandleError(const std::string& msg) : std::runtime_error(msg) {}
};

// Records the message for weft_get_last_error and returns the status.
weft_status_t SetLastError(weft_status_t status, const char* message);
// This thread's last error message (a callback's, after it failed).
std::string LastErrorMessage();

// Kind tags: distinct non-zero bytes, so a handle of one kind is never accepted as another.
enum class HandleKind : uint8_t { kNDArray = 0xA1, kNDArrayList = 0xA2, kBytes = 0xA3, kOp = 0xA4, kSymbol = 0xA5,
                                 kExecutor = 0xA6, kRecordIO = 0xA7, kDataIter = 0xA8, kKVStore = 0xA9,
                                 kProfileDomain = 0xAA, kProfileDuration = 0xAB, kProfileCounter = 0xAC,
                                 kPredictor = 0xAD, kNDList = 0xAE };

const char* HandleKindName(HandleKind kind);

inline uint64_t PackHandle(HandleKind kind, uint32_t gen, uint32_t index) {
  return (static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(gen & 0xFFFFFFu) << 32) |
         (static_cast<uint64_t>(index) + 1);
}

// Explains why `value` is not a live handle of `kind`; `arg` and `fn` name the argument.
[[noreturn]] void ThrowBadHandle(uint64_t value, HandleKind kind, const char* arg, const char* fn, const char* why);

// The handles a C API call has looked up on this thread: each lookup pins its object, and
// the call's PinScope (opened by WEFT_API_BEGIN) unpins them all when the call returns, so
// that another thread freeing one of them meanwhile only marks it freed (later lookups
// fail) and leaves its destruction to the last call still using it.
class PinScope {
 public:
  using UnpinFn = void (*)(void* table, uint32_t index);
  PinScope() : prev_(current_) { current_ = this; }
  ~PinScope();
  PinScope(const PinScope&) = delete;
  PinScope& operator=(const PinScope&) = delete;

  // Records a pin in the innermost scope of this thread before it is taken (so that
  // recording cannot fail after it is), and drops the record when taking it fails.
  static void Push(void* table, UnpinFn fn, uint32_t index) {
    PinScope* s = current_;
    if (s == nullptr) ThrowNoScope();
    if (s->n_ < kInline) {
      s->inline_[s->n_++] = {table, fn, index};
    } else {
      s->more_.push_back({table, fn, index});
      ++s->n_;
    }
  }
  static void PopUntaken() {
    PinScope* s = current_;
    if (--s->n_ >= kInline) s->more_.pop_back();
  }

 private:
  struct Pin {
    void* table;
    UnpinFn fn;
    uint32_t index;
  };
  // Most calls look up a few handles: their pins stay in the caller's frame.
  static constexpr int kInline = 8;
  [[noreturn]] static void ThrowNoScope();

  Pin inline_[kInline];
  int n_ = 0;
  std::vector<Pin> more_;
  PinScope* prev_;
  // The innermost scope of this thread (a callback may make calls inside a call). Not
  // initial-exec TLS: one such variable marks the library's whole TLS block static, and
  // glibc 2.39 has too little static TLS left for it when Python 3.12 dlopens libweft.
  static inline thread_local PinScope* current_ = nullptr;
};

// A table of objects of one kind. Lookups and frees take no lock; creating and reclaiming a
// slot take one for the free list only when the thread's own cache of free slots is empty
// or full.
template <typename T, HandleKind Kind>
class HandleTable {
 public:
  static HandleTable& Get() {
    // Leaked on purpose: handles may be freed from static destructors of the caller.
    static HandleTable* table = new HandleTable();
    return *table;
  }

  template <typename... Args>
  uint64_t Create(Args&&... args) {
    uint32_t index = TakeIndex();
    Slot& s = SlotAt(index);
    s.value.emplace(std::forward<Args>(args)...);
    uint32_t gen = StampOf(s.state.load(std::memory_order_relaxed)) >> 1;
    s.state.store(static_cast<uint64_t>((gen << 1) | 1u) << 32, std::memory_order_release);
    return PackHandle(Kind, gen, index);
  }

  // The object of a live handle, pinned until the current C API call returns; throws
  // HandleError otherwise.
  T& Ref(const void* handle, const char* arg, const char* fn) {
    uint64_t v = reinterpret_cast<uint64_t>(handle);
    Slot* s = Locate(v, arg, fn);
    const uint32_t want = WantedStamp(v);
    PinScope::Push(this, &UnpinThunk, IndexOf(v));
    uint64_t cur = s->state.load(std::memory_order_acquire);
    do {
      if (StampOf(cur) != want) {
        PinScope::PopUntaken();
        ThrowBadHandle(v, Kind, arg, fn, "was already freed");
      }
    } while (!s->state.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    return *s->value;
  }

  // Frees a live handle (NULL is accepted): later lookups fail at once. The object is
  // destroyed here, or, while calls on other threads still use it, by the last of them as
  // it returns; never under the lock, since destroying an array may run engine work.
  void Free(const void* handle, const char* arg, const char* fn) {
    if (handle == nullptr) return;
    uint64_t v = reinterpret_cast<uint64_t>(handle);
    Slot* s = Locate(v, arg, fn);
    const uint32_t want = WantedStamp(v);
    const uint64_t freed = static_cast<uint64_t>((((want >> 1) + 1) & 0xFFFFFFu) << 1) << 32;
    uint64_t cur = s->state.load(std::memory_order_acquire);
    do {
      if (StampOf(cur) != want) ThrowBadHandle(v, Kind, arg, fn, "was already freed");
    } while (!s->state.compare_exchange_weak(cur, freed | PinsOf(cur), std::memory_order_acq_rel,
                                             std::memory_order_acquire));
    if (PinsOf(cur) == 0) Reclaim(s, IndexOf(v));
  }

 private:
  static constexpr uint32_t kChunkSize = 4096;
  static constexpr uint32_t kMaxChunks = 1u << 16;
  // Free slots a thread keeps for itself (see LocalFree), in the array table only: the
  // library's thread-local block is small, and only arrays are made on every call.
  static constexpr uint32_t kLocalFree = 64;
  static constexpr bool kLocalCache = Kind == HandleKind::kNDArray;

  // The free slots this thread keeps: an operator call from Python creates a handle and
  // frees one, and with them here neither takes the table's lock (a contended mutex costs
  // more than the rest of a lookup). The cache refills from and spills to the shared free
  // list in halves, under the lock. It lives on the heap (the library's thread-local block
  // is small) behind a plain pointer, so that a handle freed after the thread's exit hook
  // ran (from a static destructor, say) finds no cache and `closed` set, and goes to the
  // shared list.
  struct LocalFree {
    uint32_t n = 0;
    uint32_t index[kLocalFree];
  };
  struct LocalState {
    LocalFree* cache = nullptr;
    bool closed = false;
  };
  static LocalState& Local() {
    static thread_local LocalState state;
    return state;
  }
  // Gives the cache back to the shared list when its thread ends.
  struct LocalFreeHook {
    ~LocalFreeHook() {
      LocalState& local = Local();
      HandleTable& table = Get();
      {
        std::lock_guard<std::mutex> lock(table.mu_);
        table.free_.insert(table.free_.end(), local.cache->index, local.cache->index + local.cache->n);
      }
      delete local.cache;
      local.cache = nullptr;
      local.closed = true;
    }
  };

  struct Slot {
    // The stamp (generation << 1 | live) in the high half, the pins of calls using the
    // object in the low half: one word, so that a free and a lookup cannot both win.
    std::atomic<uint64_t> state{0};
    std::optional<T> value;
  };

  static uint32_t StampOf(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
  static uint32_t PinsOf(uint64_t state) { return static_cast<uint32_t>(state); }
  static uint32_t IndexOf(uint64_t v) { return static_cast<uint32_t>((v & 0xFFFFFFFFu) - 1); }
  static uint32_t WantedStamp(uint64_t v) { return (static_cast<uint32_t>((v >> 32) & 0xFFFFFFu) << 1) | 1u; }

  HandleTable() {
    for (auto& c : chunks_) c.store(nullptr, std::memory_order_relaxed);
  }

  Slot& SlotAt(uint32_t index) { return chunks_[index / kChunkSize].load(std::memory_order_acquire)[index % kChunkSize]; }

  // The slot a handle's bits name; whether it is live is the caller's check.
  Slot* Locate(uint64_t v, const char* arg, const char* fn) {
    if (v == 0) ThrowBadHandle(v, Kind, arg, fn, "is NULL");
    if ((v >> 56) != static_cast<uint64_t>(Kind)) ThrowBadHandle(v, Kind, arg, fn, "is not a handle of this kind");
    uint64_t low = v & 0xFFFFFFFFu;
    if (low == 0 || low > static_cast<uint64_t>(kMaxChunks) * kChunkSize)
      ThrowBadHandle(v, Kind, arg, fn, "is not a valid handle");
    uint32_t index = static_cast<uint32_t>(low - 1);
    Slot* chunk = chunks_[index / kChunkSize].load(std::memory_order_acquire);
    if (chunk == nullptr) ThrowBadHandle(v, Kind, arg, fn, "is not a valid handle");
    return &chunk[index % kChunkSize];
  }

  static void UnpinThunk(void* table, uint32_t index) { static_cast<HandleTable*>(table)->Unpin(index); }

  void Unpin(uint32_t index) {
    Slot& s = SlotAt(index);
    uint64_t before = s.state.fetch_sub(1, std::memory_order_acq_rel);
    // The last pin of a freed object: its free was deferred to here.
    if (PinsOf(before) == 1 && (StampOf(before) & 1u) == 0) Reclaim(&s, index);
  }

  // A slot for a new object: from this thread's cache, else from the shared free list
  // (taking half a cache's worth along), else a slot never used.
  uint32_t TakeIndex() {
    LocalFree* cache = nullptr;
    if constexpr (kLocalCache) {
      LocalState& local = Local();
      if (local.cache != nullptr && local.cache->n > 0) return local.cache->index[--local.cache->n];
      if (local.cache == nullptr && !local.closed) {
        static thread_local LocalFreeHook hook;
        local.cache = new LocalFree();
      }
      cache = local.cache;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      uint32_t index = free_.back();
      free_.pop_back();
      if (cache != nullptr) {
        while (cache->n < kLocalFree / 2 && !free_.empty()) {
          cache->index[cache->n++] = free_.back();
          free_.pop_back();
        }
      }
      return index;
    }
    WEFT_CHECK(size_ < kMaxChunks * kChunkSize, kRuntime, "too many live ", HandleKindName(Kind), " handles");
    uint32_t index = size_++;
    if (!chunks_[index / kChunkSize].load(std::memory_order_relaxed))
      chunks_[index / kChunkSize].store(new Slot[kChunkSize], std::memory_order_release);
    return index;
  }

  // Destroys a freed, unpinned object and gives its slot back: to this thread's cache, or,
  // when that is full, half of the cache to the shared list.
  void Reclaim(Slot* s, uint32_t index) {
    [[maybe_unused]] std::optional<T> dead = std::move(s->value);
    s->value.reset();
    LocalFree* cache = nullptr;
    if constexpr (kLocalCache) cache = Local().cache;
    if (cache != nullptr) {
      if (cache->n == kLocalFree) {
        std::lock_guard<std::mutex> lock(mu_);
        free_.insert(free_.end(), cache->index + kLocalFree / 2, cache->index + kLocalFree);
        cache->n = kLocalFree / 2;
      }
      cache->index[cache->n++] = index;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(index);
    // `dead` is destroyed after the lock is released: its destructor is declared first.
  }

  std::mutex mu_;
  std::atomic<Slot*> chunks_[kMaxChunks];
  uint32_t size_ = 0;
  std::vector<uint32_t> free_;
};

// What a list handle holds: arrays and, for a dict, their names.
struct NDArrayListObj {
  std::vector<NDArray> arrays;
  std::vector<std::string> names;
  bool has_names = false;
};

using NDArrayTable = HandleTable<NDArray, HandleKind::kNDArray>;
using ListTable = HandleTable<NDArrayListObj, HandleKind::kNDArrayList>;
using BytesTable = HandleTable<std::string, HandleKind::kBytes>;

inline NDArray& Arr(const weft_ndarray_t* h, const char* arg, const char* fn) {
  return NDArrayTable::Get().Ref(h, arg, fn);
}
inline weft_ndarray_t* NewArrHandle(NDArray a) {
  return reinterpret_cast<weft_ndarray_t*>(NDArrayTable::Get().Create(std::move(a)));
}

// Checks what the caller says about an array it passes before anything of it is read: the
// count is in [0, WEFT_MAX_COUNT] (c_api.h) and the array is not NULL unless the count is 0.
// `what` names the array, `count` its count parameter.
void CheckCount(int n, const void* array, const char* what, const char* count, const char* fn);

// The same for a buffer of `size` bytes: at most WEFT_MAX_BUFFER_BYTES, NULL only when empty.
void CheckBuffer(const void* data, size_t size, const char* what, const char* size_name, const char* fn);

// The n strings of `strs` (none NULL), checked as above; errors name what[i].
std::vector<std::string> ReadStrings(int n, const char* const* strs, const char* what, const char* count,
                                     const char* fn);

// The n arrays behind `handles` (n checked by CheckCount; `count` names its parameter); with
// allow_null, NULL entries give none arrays. Errors name the function, the argument and the
// element.
std::vector<NDArray> ReadArrayList(int n, const char* count, weft_ndarray_t* const* handles, bool allow_null,
                                   const char* what, const char* fn);

// A gradient request as the C API spells it ("null", "write" or "inplace", "add");
// errors name what[i].
OpReq ParseGradReq(const char* req, const char* what, int i, const char* fn);

// The operator behind a handle; errors name the argument and the function.
const Op* OpRef(const weft_op_t* h, const char* arg, const char* fn);

// Throws kValue when an out-pointer the caller must provide is NULL.
inline void CheckOut(const void* p, const char* arg, const char* fn) {
  if (p == nullptr) Throw(ErrorKind::kValue, fn, ": out-pointer '", arg, "' is NULL");
}

// Converts and validates a C context (device type, id, GPU presence).
Context ToContext(weft_context_t c, const char* fn);
weft_context_t FromContext(Context c);
DType ToDType(int code, const char* fn);

}  // namespace capi
}  // namespace weft

// Every exported function body sits between these; nothing but a status leaves.
// The PinScope sits outside the try: it unpins the handles the call looked up once every
// path (a status or an error) has left the body. Every call is timed by the profiler when it
// records the C API (profile_api).
#define WEFT_API_BEGIN \
  ::weft::capi::PinScope weft_pin_scope_; \
  try {                                   \
    ::weft::profiler::ApiScope weft_api_scope_(__func__);
#define WEFT_API_END                                                                                  \
  }                                                                                                   \
  catch (const ::weft::capi::HandleError& e) {                                                        \
    return ::weft::capi::SetLastError(WEFT_ERR_HANDLE, e.what());                                     \
  }                                                                                                   \
  catch (const ::weft::Error& e) {                                                                    \
    return ::weft::capi::SetLastError(static_cast<weft_status_t>(e.kind()), e.what());                \
  }                                                                                                   \
  catch (const std::bad_alloc&) {                                                                     \
    return ::weft::capi::SetLastError(WEFT_ERR_RUNTIME, (std::string(__func__) + ": out of memory").c_str()); \
  }                                                                                                   \
  catch (const std::exception& e) {                                                                   \
    return ::weft::capi::SetLastError(WEFT_ERR_INTERNAL, (std::string(__func__) + ": " + e.what()).c_str()); \
  }                                                                                                   \
  catch (...) {                                                                                       \
    return ::weft::capi::SetLastError(WEFT_ERR_INTERNAL, (std::string(__func__) + ": unknown exception").c_str()); \
  }                                                                                                   \
  return WEFT_OK;

// Handle and out-pointer helpers that name the argument and the function in errors.
#define WEFT_ARR(h) ::weft::capi::Arr((h), #h, __func__)
#define WEFT_OUT(p) ::weft::capi::CheckOut((p), #p, __func__)
#define WEFT_OP(h) ::weft::capi::OpRef((h), #h, __func__)

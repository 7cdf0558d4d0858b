// Errors, versions, contexts and dtypes, engine-wide waits, random seeds and storage
// statistics.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/engine/blocking.h"
#include "core/engine/engine.h"
#include "core/engine/fork.h"
#include "core/resource/resource.h"
#include "core/storage/storage.h"

#ifdef WEFT_USE_CUDA
#include "core/base/cuda_utils.h"
#endif

namespace weft {
namespace capi {

namespace {
std::string& LastError() {
  thread_local std::string message;
  return message;
}
}  // namespace

std::string LastErrorMessage() { return LastError(); }

weft_status_t SetLastError(weft_status_t status, const char* message) {
  LastError() = message ? message : "";
  return status;
}

PinScope::~PinScope() {
  // Unpinning may destroy an object whose destructor calls back into the C API (opening
  // scopes of its own above this one), so each pin is dropped from the count before it is
  // released.
  while (n_ > 0) {
    --n_;
    Pin p = n_ >= kInline ? more_[n_ - kInline] : inline_[n_];
    if (n_ >= kInline) more_.pop_back();
    p.fn(p.table, p.index);
  }
  current_ = prev_;
}

void PinScope::ThrowNoScope() {
  Throw(ErrorKind::kInternal, "a C API handle was looked up outside a C API call (no PinScope)");
}

const char* HandleKindName(HandleKind kind) {
  switch (kind) {
    case HandleKind::kNDArray: return "weft_ndarray_t";
    case HandleKind::kNDArrayList: return "weft_ndarray_list_t";
    case HandleKind::kBytes: return "weft_bytes_t";
    case HandleKind::kOp: return "weft_op_t";
    case HandleKind::kSymbol: return "weft_symbol_t";
    case HandleKind::kExecutor: return "weft_executor_t";
    case HandleKind::kRecordIO: return "weft_recordio_t";
    case HandleKind::kDataIter: return "weft_dataiter_t";
    case HandleKind::kKVStore: return "weft_kvstore_t";
    case HandleKind::kProfileDomain: return "weft_profile_domain_t";
    case HandleKind::kProfileDuration: return "weft_profile_duration_t";
    case HandleKind::kProfileCounter: return "weft_profile_counter_t";
    case HandleKind::kPredictor: return "weft_predictor_t";
    case HandleKind::kNDList: return "weft_ndlist_t";
  }
  return "handle";
}

void ThrowBadHandle(uint64_t value, HandleKind kind, const char* arg, const char* fn, const char* why) {
  std::string got;
  uint8_t tag = static_cast<uint8_t>(value >> 56);
  for (HandleKind k : {HandleKind::kNDArray, HandleKind::kNDArrayList, HandleKind::kBytes, HandleKind::kOp,
                       HandleKind::kSymbol, HandleKind::kExecutor, HandleKind::kRecordIO, HandleKind::kDataIter,
                       HandleKind::kKVStore, HandleKind::kProfileDomain, HandleKind::kProfileDuration,
                       HandleKind::kProfileCounter, HandleKind::kPredictor, HandleKind::kNDList})
    if (tag == static_cast<uint8_t>(k) && k != kind) got = std::string(" (got a ") + HandleKindName(k) + ")";
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%016" PRIx64, value);
  throw HandleError(std::string(fn) + ": argument '" + arg + "' " + why + ": expected a live " + HandleKindName(kind) +
                    got + ", got handle " + hex);
}

Context ToContext(weft_context_t c, const char* fn) {
  Context ctx;
  switch (c.device_type) {
    case WEFT_DEVICE_CPU: ctx = Context::CPU(c.device_id); break;
    case WEFT_DEVICE_GPU: ctx = Context::GPU(c.device_id); break;
    case WEFT_DEVICE_CPU_PINNED: ctx = Context::CPUPinned(c.device_id); break;
    case WEFT_DEVICE_CPU_SHARED: ctx = Context::CPUShared(c.device_id); break;
    default:
      Throw(ErrorKind::kValue, fn, ": expected a device type 1 (cpu), 2 (gpu), 3 (cpu_pinned) or 5 (cpu_shared), got ",
            c.device_type);
  }
  WEFT_CHECK(c.device_id >= 0, kValue, fn, ": expected a device id >= 0, got ", c.device_id);
  if (ctx.is_gpu()) {
    int n = NumGPUs();
    WEFT_CHECK(c.device_id < n, kUnsupported, fn, ": context ", ctx.ToString(), " is not available (",
               n == 0 ? std::string("this build or machine has no GPU") : std::to_string(n) + " GPU(s) visible", ")");
  }
  return ctx;
}

weft_context_t FromContext(Context c) {
  return weft_context_t{static_cast<int32_t>(c.dev_type), static_cast<int32_t>(c.dev_id)};
}

void CheckCount(int n, const void* array, const char* what, const char* count, const char* fn) {
  WEFT_CHECK(n >= 0 && n <= WEFT_MAX_COUNT, kValue, fn, ": expected ", count, " in [0, ", WEFT_MAX_COUNT,
             "] (the length of '", what, "'), got ", n);
  WEFT_CHECK(n == 0 || array != nullptr, kValue, fn, ": '", what, "' is NULL but ", count, " is ", n);
}

void CheckBuffer(const void* data, size_t size, const char* what, const char* size_name, const char* fn) {
  WEFT_CHECK(size <= WEFT_MAX_BUFFER_BYTES, kValue, fn, ": expected ", size_name, " <= ", WEFT_MAX_BUFFER_BYTES,
             " bytes (the size of '", what, "'), got ", size);
  WEFT_CHECK(size == 0 || data != nullptr, kValue, fn, ": '", what, "' is NULL but ", size_name, " is ", size);
}

std::vector<std::string> ReadStrings(int n, const char* const* strs, const char* what, const char* count,
                                     const char* fn) {
  CheckCount(n, strs, what, count, fn);
  std::vector<std::string> r;
  r.reserve(n);
  for (int i = 0; i < n; ++i) {
    WEFT_CHECK(strs[i] != nullptr, kValue, fn, ": ", what, "[", i, "] is NULL");
    r.emplace_back(strs[i]);
  }
  return r;
}

DType ToDType(int code, const char* fn) {
  WEFT_CHECK(IsValidDType(code), kType, fn, ": expected a dtype code (0-7 or 12), got ", code);
  return static_cast<DType>(code);
}

}  // namespace capi
}  // namespace weft

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

extern "C" {

const char* weft_get_last_error(void) { return LastError().c_str(); }

weft_status_t weft_get_version(int* major, int* minor, int* patch, int* abi) {
  WEFT_API_BEGIN
  if (major) *major = WEFT_VERSION_MAJOR;
  if (minor) *minor = WEFT_VERSION_MINOR;
  if (patch) *patch = WEFT_VERSION_PATCH;
  if (abi) *abi = WEFT_ABI_VERSION;
  WEFT_API_END
}

weft_status_t weft_get_gpu_count(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NumGPUs();
  WEFT_API_END
}

weft_status_t weft_get_gpu_memory_info(int dev, int64_t* free_bytes, int64_t* total_bytes) {
  WEFT_API_BEGIN
  WEFT_OUT(free_bytes);
  WEFT_OUT(total_bytes);
  int n = NumGPUs();
  WEFT_CHECK(dev >= 0 && dev < n, kValue, "gpu_memory_info: expected a GPU id in [0, ", n, "), got ", dev,
             n == 0 ? " (no GPU is visible)" : "");
#ifdef WEFT_USE_CUDA
  cuda::DeviceGuard guard(dev);
  size_t free_b = 0, total_b = 0;
  Context ctx = Context::GPU(dev);
  cuda::Check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", &ctx);
  *free_bytes = static_cast<int64_t>(free_b);
  *total_bytes = static_cast<int64_t>(total_b);
#endif
  WEFT_API_END
}

weft_status_t weft_dtype_size(int dtype, size_t* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = DTypeSize(ToDType(dtype, __func__));
  WEFT_API_END
}

weft_status_t weft_dtype_name(int dtype, const char** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = DTypeName(ToDType(dtype, __func__));
  WEFT_API_END
}

weft_status_t weft_wait_all(void) {
  WEFT_API_BEGIN
  engine::Engine::Get()->WaitForAll();
  WEFT_API_END
}

weft_status_t weft_random_seed(int64_t seed) {
  WEFT_API_BEGIN
  ResourceManager::Get()->SeedRandom(static_cast<uint64_t>(seed));
  WEFT_API_END
}

weft_status_t weft_random_seed_context(int64_t seed, weft_context_t ctx) {
  WEFT_API_BEGIN
  ResourceManager::Get()->SeedRandom(ToContext(ctx, __func__), static_cast<uint64_t>(seed));
  WEFT_API_END
}

weft_status_t weft_storage_get_stat(weft_context_t ctx, int stat, int64_t* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  StorageStats s = Storage::Get()->Stats(ToContext(ctx, __func__));
  switch (stat) {
    case WEFT_STORAGE_BYTES_IN_USE: *out = s.bytes_in_use; break;
    case WEFT_STORAGE_PEAK_BYTES: *out = s.peak_bytes; break;
    case WEFT_STORAGE_BYTES_POOLED: *out = s.bytes_pooled; break;
    case WEFT_STORAGE_NUM_ALLOCS: *out = s.num_allocs; break;
    case WEFT_STORAGE_NUM_OS_ALLOCS: *out = s.num_os_allocs; break;
    default: Throw(ErrorKind::kValue, __func__, ": expected a weft_storage_stat_t in [0, 4], got ", stat);
  }
  WEFT_API_END
}

weft_status_t weft_storage_release_pooled(weft_context_t ctx) {
  WEFT_API_BEGIN
  Storage::Get()->ReleaseAll(ToContext(ctx, __func__));
  WEFT_API_END
}

weft_status_t weft_before_fork(void) {
  WEFT_API_BEGIN
  engine::PrepareFork();
  WEFT_API_END
}

weft_status_t weft_set_blocking_hooks(weft_block_enter_t enter, weft_block_leave_t leave) {
  WEFT_API_BEGIN
  WEFT_CHECK((enter == nullptr) == (leave == nullptr), kValue, __func__,
             ": expected both hooks or neither, got ", enter ? "an enter hook" : "no enter hook", " and ",
             leave ? "a leave hook" : "no leave hook");
  engine::SetBlockingHooks(enter, leave);
  WEFT_API_END
}

weft_status_t weft_engine_wait_for_room(void) {
  WEFT_API_BEGIN
  engine::Engine::Get()->WaitForRoomUnlocked();
  WEFT_API_END
}

weft_status_t weft_after_fork(int in_child) {
  WEFT_API_BEGIN
  engine::AfterFork(in_child != 0);
  WEFT_API_END
}

}  // extern "C"

// cuDNN handles, status checks and backend descriptors (core/op/cuda/cudnn.h).
#ifdef WEFT_USE_CUDNN

#include "core/op/cuda/cudnn.h"

#include <string>
#include <unordered_map>

#include "core/base/cuda_utils.h"
#include "core/base/error.h"

namespace weft {
namespace cuda {

void ThrowCudnnError(cudnnStatus_t st, const char* call, const char* op, const Context* ctx) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  // Every CUDNN_STATUS_NOT_SUPPORTED* code lies in 3000-3999.
  bool unsupported = static_cast<int>(st) / 1000 == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) / 1000;
  Throw(unsupported ? ErrorKind::kUnsupported : ErrorKind::kRuntime, "Operator '", op, "': cuDNN call ", call,
        " failed", ctx ? " on " + ctx->ToString() : std::string(), ": ", cudnnGetErrorString(st),
        detail[0] ? std::string(" (") + detail + ")" : std::string());
}

namespace {

// Creating a handle costs milliseconds and a handle must not be shared between threads
// that use different streams, so each engine worker thread keeps one per device and points
// it at the stream of the operation it runs.
class HandleCache {
 public:
  ~HandleCache() {
    // At process exit the driver may already be gone; nothing useful can be done then.
    for (auto& kv : handles_) cudnnDestroy(kv.second);
  }
  cudnnHandle_t Get(const engine::RunContext& rctx, const char* op) {
    Context ctx = rctx.ctx;
    auto it = handles_.find(ctx.dev_id);
    if (it == handles_.end()) {
      cudnnHandle_t h = nullptr;
      CheckCudnn(cudnnCreate(&h), "cudnnCreate", op, &ctx);
      it = handles_.emplace(ctx.dev_id, h).first;
    }
    CheckCudnn(cudnnSetStream(it->second, StreamOf(rctx.stream)), "cudnnSetStream", op, &ctx);
    return it->second;
  }

 private:
  std::unordered_map<int, cudnnHandle_t> handles_;
};

}  // namespace

cudnnHandle_t CudnnHandle(const engine::RunContext& rctx, const char* op) {
  static thread_local HandleCache cache;
  return cache.Get(rctx, op);
}

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type, const char* op) : op_(op) {
  CheckCudnn(cudnnBackendCreateDescriptor(type, &desc_), "cudnnBackendCreateDescriptor", op);
}

BackendDescriptor::~BackendDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);
}

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& o) noexcept {
  if (this != &o) {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
    desc_ = o.desc_;
    op_ = o.op_;
    o.desc_ = nullptr;
  }
  return *this;
}

void BackendDescriptor::Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* values, const char* attr_name) {
  cudnnStatus_t st = cudnnBackendSetAttribute(desc_, name, type, count, values);
  if (st != CUDNN_STATUS_SUCCESS) ThrowCudnnError(st, (std::string("cudnnBackendSetAttribute(") + attr_name + ")").c_str(), op_, nullptr);
}

void BackendDescriptor::Finalize(const char* what) {
  cudnnStatus_t st = cudnnBackendFinalize(desc_);
  if (st != CUDNN_STATUS_SUCCESS) ThrowCudnnError(st, (std::string("cudnnBackendFinalize(") + what + ")").c_str(), op_, nullptr);
}

}  // namespace cuda
}  // namespace weft

#endif  // WEFT_USE_CUDNN

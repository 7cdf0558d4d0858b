// cuDNN plumbing for code built with WEFT_USE_CUDNN: checked calls that name the call and
// the operator, one handle per (thread, device) pointed at the operation's stream, and an
// owning wrapper for the graph API's backend descriptors.
#pragma once

#ifndef WEFT_USE_CUDNN
#error "core/op/cuda/cudnn.h is only for builds with WEFT_USE_CUDNN"
#endif

#include <cudnn.h>

#include <cstdint>

#include "core/base/context.h"
#include "core/engine/engine.h"

namespace weft {
namespace cuda {

// Throws kRuntime: "Operator 'op': cuDNN call <call> failed on gpu(0): <status> (<cuDNN's
// last message>)". kUnsupported for CUDNN_STATUS_NOT_SUPPORTED*, so callers can tell
// "this engine cannot" from a real failure.
[[noreturn]] void ThrowCudnnError(cudnnStatus_t st, const char* call, const char* op, const Context* ctx);
inline void CheckCudnn(cudnnStatus_t st, const char* call, const char* op, const Context* ctx = nullptr) {
  if (st != CUDNN_STATUS_SUCCESS) ThrowCudnnError(st, call, op, ctx);
}

// The calling thread's handle for the run context's device, set to its stream. The device
// must be current (DeviceGuard).
cudnnHandle_t CudnnHandle(const engine::RunContext& rctx, const char* op);

// One backend descriptor, destroyed with its owner.
class BackendDescriptor {
 public:
  BackendDescriptor(cudnnBackendDescriptorType_t type, const char* op);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& o) noexcept : desc_(o.desc_), op_(o.op_) { o.desc_ = nullptr; }
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  // cudnnBackendSetAttribute, throwing with the attribute's name.
  void Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values,
           const char* attr_name);
  void SetDescriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& d, const char* attr_name) {
    cudnnBackendDescriptor_t raw = d.get();
    Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, attr_name);
  }
  // cudnnBackendFinalize, throwing naming what was finalized.
  void Finalize(const char* what);
  // cudnnBackendFinalize's status, for descriptors that may legitimately be refused (an
  // engine that cannot run a problem).
  cudnnStatus_t TryFinalize() { return cudnnBackendFinalize(desc_); }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
  const char* op_ = "";
};

}  // namespace cuda
}  // namespace weft

// Sets attribute ATTR of descriptor D, naming ATTR when it fails.
#define WEFT_CUDNN_SET(D, ATTR, TYPE, COUNT, VALUES) (D).Set((ATTR), (TYPE), (COUNT), (VALUES), #ATTR)

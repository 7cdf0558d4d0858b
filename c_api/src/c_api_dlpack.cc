// DLPack export and import: arrays shared with other frameworks without copying.
//
// Export hands out a DLManagedTensor that holds a reference on the array's chunk, so the
// memory stays allocated until the consumer calls the deleter, whatever happens to the
// Weft handle. Import wraps the producer's memory as an external chunk whose release calls
// the producer's deleter; the engine runs that release only once no view and no pending
// operation uses the memory.
#include <atomic>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "weft/dlpack.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// What an exported tensor owns: the array (a chunk reference) and the shape and strides
// the DLTensor points into.
struct ExportedTensor {
  DLManagedTensor managed{};
  NDArray array;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void DeleteExported(DLManagedTensor* self) {
  // Dropping the array may push the chunk's deletion on the engine; nothing may escape a
  // deleter, which is called from foreign code.
  try {
    delete static_cast<ExportedTensor*>(self->manager_ctx);
  } catch (...) {
  }
}

DLDataType ToDLDataType(DType t) {
  switch (t) {
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat64: return {kDLFloat, 64, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kBfloat16: return {kDLBfloat, 16, 1};
    case DType::kUint8: return {kDLUInt, 8, 1};
    case DType::kInt8: return {kDLInt, 8, 1};
    case DType::kInt32: return {kDLInt, 32, 1};
    case DType::kInt64: return {kDLInt, 64, 1};
    case DType::kBool: return {kDLBool, 8, 1};
    default: break;
  }
  Throw(ErrorKind::kType, "weft_ndarray_to_dlpack: dtype ", DTypeName(t), " has no DLPack equivalent");
}

const char* DLCodeName(uint8_t code) {
  switch (code) {
    case kDLInt: return "int";
    case kDLUInt: return "uint";
    case kDLFloat: return "float";
    case kDLOpaqueHandle: return "opaque";
    case kDLBfloat: return "bfloat";
    case kDLComplex: return "complex";
    case kDLBool: return "bool";
    default: return "unknown";
  }
}

DType FromDLDataType(DLDataType t, const char* fn) {
  WEFT_CHECK(t.lanes == 1, kType, fn, ": expected a scalar DLPack dtype (lanes = 1), got lanes = ", t.lanes);
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      if (t.bits == 16) return DType::kFloat16;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::kBfloat16;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::kInt8;
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::kUint8;
      break;
    case kDLBool:
      if (t.bits == 8) return DType::kBool;
      break;
    default: break;
  }
  Throw(ErrorKind::kType, fn,
        ": expected a DLPack dtype Weft supports (float16/32/64, bfloat16, int8/32/64, uint8, bool), got ",
        DLCodeName(t.code), static_cast<int>(t.bits), " (code ", static_cast<int>(t.code), ")");
}

DLDevice ToDLDevice(Context ctx) {
  switch (ctx.dev_type) {
    case DeviceType::kGPU: return {kDLCUDA, ctx.dev_id};
    case DeviceType::kCPUPinned: return {kDLCUDAHost, 0};
    // Shared memory is plain CPU memory to a consumer; DLPack has no device for it.
    case DeviceType::kCPUShared: return {kDLCPU, 0};
    default: return {kDLCPU, 0};
  }
}

Context FromDLDevice(DLDevice d, const char* fn) {
  switch (d.device_type) {
    case kDLCPU: return Context::CPU(0);
    case kDLCUDAHost: return Context::CPUPinned(0);
    case kDLCUDA: {
      int n = NumGPUs();
      WEFT_CHECK(d.device_id >= 0 && d.device_id < n, kUnsupported, fn, ": the tensor is on cuda:", d.device_id,
                 " but ", n == 0 ? std::string("this build or machine has no GPU") : std::to_string(n) + " GPU(s) are visible");
      return Context::GPU(d.device_id);
    }
    default: break;
  }
  Throw(ErrorKind::kUnsupported, fn, ": expected a tensor on cpu (1), cuda (2) or cuda_host (3), got DLPack device type ",
        static_cast<int>(d.device_type));
}

std::string Tuple(const int64_t* v, int n) {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < n; ++i) os << (i ? ", " : "") << v[i];
  os << (n == 1 ? ",)" : ")");
  return os.str();
}

}  // namespace

extern "C" {

weft_status_t weft_ndarray_to_dlpack(const weft_ndarray_t* arr, struct DLManagedTensor** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  DLDataType dtype = ToDLDataType(a.dtype());
  // The consumer reads at once, without knowing about Weft's engine.
  a.WaitToRead();
  auto t = std::make_unique<ExportedTensor>();
  t->array = a;
  int ndim = a.shape().ndim();
  t->shape.assign(a.shape().begin(), a.shape().end());
  t->strides.assign(ndim, 1);
  for (int i = ndim - 2; i >= 0; --i) t->strides[i] = t->strides[i + 1] * t->shape[i + 1];
  DLTensor& dl = t->managed.dl_tensor;
  // The offset goes into the pointer: some consumers ignore byte_offset.
  dl.data = a.Size() == 0 ? nullptr : a.data().dptr;
  dl.device = ToDLDevice(a.ctx());
  dl.ndim = ndim;
  dl.dtype = dtype;
  dl.shape = t->shape.data();
  dl.strides = t->strides.data();
  dl.byte_offset = 0;
  t->managed.manager_ctx = t.get();
  t->managed.deleter = &DeleteExported;
  *out = &t.release()->managed;
  WEFT_API_END
}

weft_status_t weft_ndarray_from_dlpack(struct DLManagedTensor* tensor, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const char* fn = __func__;
  WEFT_CHECK(tensor != nullptr, kValue, fn, ": 'tensor' is NULL");
  WEFT_OUT(out);
  const DLTensor& dl = tensor->dl_tensor;
  WEFT_CHECK(dl.ndim >= 0, kShape, fn, ": expected ndim >= 0, got ", dl.ndim);
  WEFT_CHECK(dl.ndim == 0 || dl.shape != nullptr, kValue, fn, ": the tensor's shape is NULL but ndim is ", dl.ndim);
  DType dtype = FromDLDataType(dl.dtype, fn);
  Context ctx = FromDLDevice(dl.device, fn);
  Shape shape(dl.ndim, static_cast<int64_t>(0));
  for (int i = 0; i < dl.ndim; ++i) {
    WEFT_CHECK(dl.shape[i] >= 0, kShape, fn, ": expected dimensions >= 0, got shape ", Tuple(dl.shape, dl.ndim));
    shape[i] = dl.shape[i];
  }
  int64_t size = shape.Size();
  if (dl.strides != nullptr && size > 0) {
    // Weft arrays are compact row-major; a stride only matters where the dim exceeds 1.
    int64_t expect = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dl.shape[i] != 1 && dl.strides[i] != expect) {
        std::vector<int64_t> compact(dl.ndim, 1);
        for (int k = dl.ndim - 2; k >= 0; --k) compact[k] = compact[k + 1] * dl.shape[k + 1];
        Throw(ErrorKind::kValue, fn, ": expected a contiguous tensor with row-major strides ",
              Tuple(compact.data(), dl.ndim), " (in elements) for shape ", Tuple(dl.shape, dl.ndim), ", got strides ",
              Tuple(dl.strides, dl.ndim), "; make it contiguous before exporting");
      }
      expect *= dl.shape[i];
    }
  }
  char* dptr = static_cast<char*>(dl.data) + dl.byte_offset;
  if (size > 0) {
    WEFT_CHECK(dl.data != nullptr, kValue, fn, ": the tensor's data pointer is NULL but it has ", size, " elements");
    WEFT_CHECK(reinterpret_cast<uintptr_t>(dptr) % DTypeSize(dtype) == 0, kValue, fn,
               ": expected data aligned to the element size (", DTypeSize(dtype), " bytes) for ", DTypeName(dtype),
               ", got address ", static_cast<const void*>(dptr));
  }
  // The producer's deleter runs only once the handle exists: if anything below fails, the
  // tensor is left to the caller as the header promises.
  auto armed = std::make_shared<std::atomic<bool>>(false);
  NDArray a = NDArray::FromExternal(size > 0 ? dptr : nullptr, shape, dtype, ctx, [tensor, armed]() {
    if (armed->load() && tensor->deleter != nullptr) tensor->deleter(tensor);
  });
  *out = NewArrHandle(std::move(a));
  armed->store(true);
  WEFT_API_END
}

}  // extern "C"

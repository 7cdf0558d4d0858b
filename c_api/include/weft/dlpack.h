/* The DLPack tensor-exchange structures (ABI v0.x, https://github.com/dmlc/dlpack), written
 * from the published layout so that Weft's C API can hand tensors to and take tensors from
 * other frameworks (PyTorch, numpy, CuPy) without copying. Only the layout matters: a
 * framework that includes its own dlpack.h sees the same structs. */
#ifndef WEFT_DLPACK_H_
#define WEFT_DLPACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_VERSION
#define DLPACK_VERSION 80

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* a DLDataTypeCode */
  uint8_t bits;   /* bits per lane: 8, 16, 32, 64 */
  uint16_t lanes; /* 1 for scalars */
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#endif /* DLPACK_VERSION */

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DLPACK_H_ */

// Portability macros shared by CPU and CUDA code.
#pragma once

#if defined(__CUDACC__)
#define WEFT_XINLINE __host__ __device__ __forceinline__
#define WEFT_HOST_DEVICE __host__ __device__
#define WEFT_DEVICE_CODE 1
#else
#define WEFT_XINLINE inline __attribute__((always_inline))
// Marks a function that the CPU and the CUDA kernels share (one formula for both devices).
#define WEFT_HOST_DEVICE
#endif

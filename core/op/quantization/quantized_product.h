// The int8 products (quantized convolution and fully connected): data int8 or uint8 times
// int8 weights, accumulated in int32, then an epilogue that writes the int32 sums as they
// are or requantizes them to 8 bits in the same pass (output scale, fused sum, fused relu).
//
// On the CPU they run as oneDNN 2.6 primitives (u8s8 / s8s8 convolution and inner
// product; oneDNN picks its VNNI kernels where the CPU has AVX512-VNNI), with the plain
// NCHW / row-major arrays reordered to the layouts it picks. Without oneDNN, or for a
// geometry it refuses, ReferenceConv / ReferenceFc compute the same integers in loops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "core/op/nn/conv_common.h"
#include "core/op/quantization/quantized_util.h"

namespace weft {
namespace op {
namespace quant {

// What happens to each int32 accumulator acc (bias already in it):
//   v = acc * scale (+ sum * sum_scale) ; v = max(v, 0) with relu ; rounded, saturated to `out`
// (int32, int8, uint8), or written as it is to a float32 `out` (the dequantized result).
// With out = int32, scale is 1 and without sum or relu the value is acc itself.
struct Epilogue {
  DType out = DType::kInt32;
  float scale = 1.0f;
  bool relu = false;
  bool sum = false;
  DType sum_type = DType::kInt8;
  float sum_scale = 1.0f;
};

// Applies the epilogue to one accumulator.
template <typename T>
inline T Finish(const Epilogue& e, int32_t acc, double sum) {
  if (!e.sum && !e.relu && e.out == DType::kInt32) return static_cast<T>(acc);
  double v = static_cast<double>(static_cast<float>(acc) * e.scale);
  if (e.sum) v += sum * e.sum_scale;
  if (e.relu) v = std::max(v, 0.0);
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
  else return Saturate<T>(v);
}

// Whether the output is 4 bytes wide (int32 or float32): an 8-bit sum is then converted
// into it before oneDNN's sum post-op reads it, instead of read through its bytes.
inline bool WideOutput(DType out) { return out == DType::kInt32 || out == DType::kFloat32; }

// The int32 bias of a product: an int8 bias b with step `bias_step`, moved to the
// accumulator's step `acc_step` (rounded, saturated); zeros when acc_step is 0 (an
// all-zero data or weight range, whose products are all 0).
void RescaleBias(const int8_t* b, int64_t n, double bias_step, double acc_step, int32_t* out);

// A oneDNN primitive with its reorders, cached by geometry and epilogue.
struct Int8Plan;

// temp bytes RunInt8 needs for `plan`.
size_t Int8TempBytes(const Int8Plan& plan);
// oneDNN's name of the kernel the plan runs ("brg:avx512_core_vnni", ...).
std::string Int8Impl(const Int8Plan& plan);

// The convolution of `g` (data type `src`, int8 weights (f, c/g, k...), int32 bias when
// `bias`), null where oneDNN is not built in or refuses it.
std::shared_ptr<const Int8Plan> Int8ConvPlan(const ConvGeom& g, DType src, bool bias, const Epilogue& e);
// The inner product (m, k) x (n, k)^T, likewise.
std::shared_ptr<const Int8Plan> Int8FcPlan(int64_t m, int64_t k, int64_t n, DType src, bool bias, const Epilogue& e);

// Runs the plan: x, w in the plain layouts, bias int32 (or null), sum of e.sum_type in the
// output's plain layout (or null), y of e.out. `temp` has Int8TempBytes(plan) bytes.
void RunInt8(const Int8Plan& plan, const void* x, const int8_t* w, const int32_t* bias, const void* sum, void* y,
             char* temp);

// The loops: the same integers without oneDNN.
void ReferenceConv(const ConvGeom& g, DType src, const void* x, const int8_t* w, const int32_t* bias,
                   const Epilogue& e, const void* sum, void* y);
void ReferenceFc(int64_t m, int64_t k, int64_t n, DType src, const void* x, const int8_t* w, const int32_t* bias,
                 const Epilogue& e, const void* sum, void* y);

}  // namespace quant
}  // namespace op
}  // namespace weft

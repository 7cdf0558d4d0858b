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
#include <vector>

#include "core/op/nn/conv_common.h"
#include "core/op/input_versions.h"
#include "core/op/quantization/quantized_util.h"

namespace weft {
namespace op {
namespace quant {

// What happens to each int32 accumulator acc (bias already in it):
//   v = acc * scale (+ sum * sum_scale) ; v = max(v, 0) with relu ; rounded, saturated to `out`
// (int32, int8, uint8), or written as it is to a float32 `out` (the dequantized result).
// With out = int32, scale is 1 and without sum or relu the value is acc itself.
// With channel-wise weight ranges, `scales` holds one scale per output channel instead.
struct Epilogue {
  DType out = DType::kInt32;
  float scale = 1.0f;
  std::vector<float> scales;
  bool relu = false;
  bool sum = false;
  DType sum_type = DType::kInt8;
  float sum_scale = 1.0f;
};

// Applies the epilogue to one accumulator of output channel `channel`.
template <typename T>
inline T Finish(const Epilogue& e, int32_t acc, double sum, int64_t channel) {
  const float scale = e.scales.empty() ? e.scale : e.scales[static_cast<size_t>(channel)];
  if (!e.sum && !e.relu && e.out == DType::kInt32 && e.scales.empty()) return static_cast<T>(acc);
  double v = static_cast<double>(static_cast<float>(acc) * scale);
  if (e.sum) v += sum * e.sum_scale;
  if (e.relu) v = std::max(v, 0.0);
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
  else return Saturate<T>(v);
}

// The steps of a product's int32 accumulators: one, or with channel-wise weight ranges one
// per output channel (`channels`; `acc` is then the largest, the step an int32 output is
// written in).
struct ProductSteps {
  double acc = 0;
  std::vector<double> channels;
};

// The steps for data of type `data` with range rd and the weight range inputs (min, max):
// scalars, or with `channel_wise` `n` values each (checked).
inline ProductSteps ReadProductSteps(const NodeAttrs& attrs, DType data, const Range& rd, const TBlob& min_w,
                                     const TBlob& max_w, int64_t n, bool channel_wise) {
  const double sd = Step(data, rd.lo, rd.hi);
  ProductSteps s;
  if (!channel_wise) {
    Range rw = ReadRange(attrs, min_w, max_w, DType::kInt8, "weight", true);
    s.acc = sd * Step(DType::kInt8, rw.lo, rw.hi);
    return s;
  }
  if (min_w.Size() != n || max_w.Size() != n)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': with channel_wise the weight's range inputs hold one ",
          "value per output channel, expected ", n, " each, got ", min_w.Size(), " and ", max_w.Size());
  for (int64_t c = 0; c < n; ++c) {
    s.channels.push_back(sd * Step(DType::kInt8, min_w.ptr<float>()[c], max_w.ptr<float>()[c]));
    s.acc = std::max(s.acc, s.channels.back());
  }
  return s;
}

// Sets the epilogue's scale(s) from the accumulator steps to the output's step `out_step`
// (a zero step writes zeros instead of dividing by it).
inline void SetScales(Epilogue* e, const ProductSteps& s, double out_step) {
  if (s.channels.empty()) {
    e->scale = out_step > 0 ? static_cast<float>(s.acc / out_step) : 0.0f;
    return;
  }
  for (double c : s.channels) e->scales.push_back(out_step > 0 ? static_cast<float>(c / out_step) : 0.0f);
}

// Whether the output is 4 bytes wide (int32 or float32): an 8-bit sum is then converted
// into it before oneDNN's sum post-op reads it, instead of read through its bytes.
inline bool WideOutput(DType out) { return out == DType::kInt32 || out == DType::kFloat32; }

// The int32 bias of a product: an int8 bias b with step `bias_step`, moved to the
// accumulator's step `acc_step` (rounded, saturated); zeros when acc_step is 0 (an
// all-zero data or weight range, whose products are all 0). With channel-wise weights
// `acc_steps` gives each channel's step (acc_step is then unused).
void RescaleBias(const int8_t* b, int64_t n, double bias_step, double acc_step, int32_t* out,
                 const std::vector<double>& acc_steps = {});

// Whether oneDNN's int8 kernels, under the ISA it actually runs (ONEDNN_MAX_CPU_ISA
// honoured), sum u8 x s8 products straight into int32 (AVX512-VNNI, AVX-VNNI). Without
// VNNI they add each pair of products in int16 first (vpmaddubsw), which saturates for u8
// data with weights beyond +-64 (and s8 data: oneDNN's s8 x s8 GEMM saturates, its s8
// convolutions halve the weights, losing their last bit); the plans then feed oneDNN u8
// data only (s8 shifted by 128, taken out again) and split the weights (Int8Plan::split),
// so the integers are exactly those of VNNI CPUs and of the reference loops.
bool VnniProducts();

// A oneDNN primitive with its reorders, cached by geometry and epilogue.
struct Int8Plan;

// temp bytes RunInt8 needs for `plan`.
size_t Int8TempBytes(const Int8Plan& plan);
// oneDNN's name of the kernel the plan runs ("brg:avx512_core_vnni", ...).
std::string Int8Impl(const Int8Plan& plan);

// The convolution of `g` (data type `src`, int8 weights (f, c/g, k...), int32 bias when
// `bias`), null where oneDNN is not built in or refuses it. With `channels_last` (2-D only)
// data, sum and output are (n, h, w, c) and the weights (f, kh, kw, c/g): the layouts
// oneDNN's int8 kernels use, so nothing is reordered but the weights. `src_last`,
// `dst_last`, `sum_last` (2-D, not with channels_last, null where the weights are split)
// take the data, the output, the sum as (n, h, w, c) with the weights plain (f, c/g, kh, kw).
std::shared_ptr<const Int8Plan> Int8ConvPlan(const ConvGeom& g, DType src, bool bias, const Epilogue& e,
                                             bool channels_last = false, bool src_last = false,
                                             bool dst_last = false, bool sum_last = false);
// The inner product (m, k) x (n, k)^T, likewise. `narrow_weights`: the caller promises
// weights within +-64, which u8 data cannot saturate with, so no split is needed.
std::shared_ptr<const Int8Plan> Int8FcPlan(int64_t m, int64_t k, int64_t n, DType src, bool bias, const Epilogue& e,
                                           bool narrow_weights = false);

// Runs the plan: x, w in the plain layouts, bias int32 (or null), sum of e.sum_type in the
// output's plain layout (or null), y of e.out. `temp` has Int8TempBytes(plan) bytes.
// Given the weight array's version (`w_version`, from CallInputVersions()), the
// weights in the primitive's layout are kept and reordered again only when the array was
// written since, or is another array; without it they are reordered at every call.
void RunInt8(const Int8Plan& plan, const void* x, const int8_t* w, const int32_t* bias, const void* sum, void* y,
             char* temp, const InputVersion* w_version = nullptr);

// Weight arrays reordered into a primitive's layout so far (for tests: a call with an
// unchanged weight array adds none).
size_t Int8WeightReorders();

// The loops: the same integers without oneDNN.
void ReferenceConv(const ConvGeom& g, DType src, const void* x, const int8_t* w, const int32_t* bias,
                   const Epilogue& e, const void* sum, void* y, bool channels_last = false);
void ReferenceFc(int64_t m, int64_t k, int64_t n, DType src, const void* x, const int8_t* w, const int32_t* bias,
                 const Epilogue& e, const void* sum, void* y);

}  // namespace quant
}  // namespace op
}  // namespace weft

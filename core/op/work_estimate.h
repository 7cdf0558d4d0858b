// What one call costs on one core, estimated from the shapes of its arrays, for the
// operators' FEstimateNs: the imperative path runs an eager call estimated below
// WEFT_ENGINE_INLINE_NS on the calling thread (docs/design/imperative.md). The rates
// are those of one Zen 5 core (AVX-512, oneDNN) on the calls near that limit; on a slower
// core the estimates are low by its factor, which only moves the limit.
#pragma once

#include <cstdint>
#include <vector>

#include <functional>

#include "core/base/tblob.h"
#include "core/op/registry.h"

namespace weft {

// The operator attribute "FEstimateNs": what one call costs on one core, in nanoseconds,
// estimated from its arrays with the rates below. An eager call whose estimate is within
// WEFT_ENGINE_INLINE_NS runs on the calling thread when its inputs are ready, since handing
// it to a worker would cost more than the work; an operator without an estimate goes by
// the bytes it touches. (Declared here rather than in registry.h, which every operator
// includes: only the operators that estimate and the dispatcher need it.)
using FEstimateNs = std::function<double(const NodeAttrs& attrs, const std::vector<TBlob>& inputs,
                                         const std::vector<TBlob>& outputs)>;

namespace op {

// Per byte read or written by a kernel that streams cached data (an elementwise add of
// 16384 floats, 192 KB: 1.6 us).
constexpr double kNsPerByte = 0.01;
// Per floating-point operation of oneDNN's sgemm on the skinny products of small
// FullyConnected layers (1024 -> 10 at batch 64: 1.3 MFLOP in 15 us, 2.6 backward in 24).
constexpr double kNsPerGemmFlop = 0.01;
// Per floating-point operation of a small convolution (LeNet's first at batch 8: 4.6 MFLOP
// in 65 us).
constexpr double kNsPerConvFlop = 0.014;

// Per floating-point operation of oneDNN's sgemm on the mid-sized products of dot and
// batch_dot near the limit (64x512x128 and 32x256x256: 4.2 and 2.1 MFLOP in 32 and 16 us on
// one core); skinny products run at about half that rate but stay far below the limit.
constexpr double kNsPerMatmulFlop = 0.0045;
// The same for the dtypes oneDNN's sgemm does not take (float64, integers, float16: the
// blocked kernel of linalg/gemm.cc; 32x128x64 in float64 took 83 us).
constexpr double kNsPerBlockedGemmFlop = 0.16;
// Per product of a batch_dot, beyond its arithmetic: a call of 8 products of 16x32x16 took
// 2.5 us.
constexpr double kNsPerBatchProduct = 300.0;
// Per floating-point operation of Deconvolution (the convolution's data gradient forward,
// its forward and weight gradient backward) on the few channels of small calls, about three
// times a convolution's: (4, 8, 14, 14) by (8, 4, 3, 3), 0.45 MFLOP, took 21 us; (8, 8, 14,
// 14) by (8, 8, 3, 3), 1.8 MFLOP, 75 us, its backward 132. Plus a call's fixed cost (a
// (1, 1, 4, 4) input took 2.5 us).
constexpr double kNsPerDeconvFlop = 0.04;
constexpr double kNsPerDeconvCall = 3000.0;
// Per element of a pooling window visited, max or average (oneDNN; LeNet's 2x2 pooling at
// batch 8, (8, 20, 24, 24), took 13-18 us); the backward visits each window again.
constexpr double kNsPerPoolTap = 0.15;
constexpr double kNsPerPoolBackwardTap = 0.2;
// lp pooling runs on plain loops with a power per element: 1.6 (p=1) to 6 (p=3) ns a tap.
constexpr double kNsPerLpPoolTap = 6.0;

inline int64_t TouchedBytes(const std::vector<TBlob>& inputs, const std::vector<TBlob>& outputs) {
  int64_t bytes = 0;
  for (const TBlob& b : inputs) bytes += static_cast<int64_t>(b.Bytes());
  for (const TBlob& b : outputs) bytes += static_cast<int64_t>(b.Bytes());
  return bytes;
}

// A kernel streaming its arrays once, `per_byte` times slower than an add.
inline double StreamNs(const std::vector<TBlob>& inputs, const std::vector<TBlob>& outputs, double per_byte = 1.0) {
  return static_cast<double>(TouchedBytes(inputs, outputs)) * kNsPerByte * per_byte;
}

// Multiply-adds of a layer whose every output element is a dot product over one row of the
// weight, (num_outputs, fan-in...) with num_outputs first (FullyConnected, Convolution):
// output elements times the weight's elements per output.
inline double LayerMacs(const TBlob& out, const TBlob& weight) {
  if (weight.ndim() == 0 || weight.shape[0] <= 0) return 0.0;
  return static_cast<double>(out.Size()) * static_cast<double>(weight.Size() / weight.shape[0]);
}

// Time of a matrix product of `macs` multiply-adds in `dtype`.
inline double MatmulNs(double macs, DType dtype) {
  return 2.0 * macs * (dtype == DType::kFloat32 ? kNsPerMatmulFlop : kNsPerBlockedGemmFlop);
}

}  // namespace op
}  // namespace weft

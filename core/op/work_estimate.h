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

}  // namespace op
}  // namespace weft

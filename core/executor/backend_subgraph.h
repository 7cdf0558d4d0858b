// MXNet's subgraph backends, as Symbol.get_backend_symbol / optimize_for apply them: a
// backend groups operators into fused nodes that hold them as a subgraph.
#pragma once

#include <string>
#include <vector>

#include "core/graph/symbol.h"

namespace weft {
namespace executor {

// The backends Weft has: "MKLDNN" (MXNet 1.9's oneDNN fusions for inference) and
// "MKLDNN_QUANTIZE" (what MXNet 1.9 applies to a quantized graph).
std::vector<std::string> SubgraphBackends();

// A copy of `sym` partitioned for `backend`. For "MKLDNN", as MXNet 1.9's conv and fully
// connected properties: each 2-D or 3-D Convolution, with the BatchNorm, the residual
// elemwise_add and the activation (Activation relu/sigmoid/softrelu/tanh, LeakyReLU
// leaky/gelu, clip from 0) that follow it alone, becomes one _sg_mkldnn_conv node; each
// FullyConnected, with the elementwise operator that follows it alone (those activations,
// LeakyReLU elu, square, sqrt, exp, abs), one _sg_mkldnn_fully_connected node. A value that
// something else also reads (or that is an output) ends the group before its reader. The
// fused nodes keep the names MXNet gives them (sg_mkldnn_conv_bn_act_0, ...) and compute
// what the grouped operators computed.
// "MKLDNN_QUANTIZE" does the same to the float layers left, then, as MXNet's properties of
// that backend: each _contrib_interleaved_matmul_selfatt_qk / _valatt becomes
// _sg_mkldnn_selfatt_qk / _valatt; each _copy, and Dropout in mode 'training', reading an
// operator's value is removed; each calibrated _contrib_requantize that alone reads a
// quantized convolution, fully connected layer, elemwise_add or elemwise_mul is folded
// into it (min_calib_range/max_calib_range: the product writes 8 bits itself); then each
// _contrib_dequantize that alone reads a quantized fully connected layer or elemwise_mul is
// folded into it (enable_float_output). kNotFound for any other backend.
graph::Symbol BuildBackendSubgraph(const graph::Symbol& sym, const std::string& backend);

}  // namespace executor
}  // namespace weft

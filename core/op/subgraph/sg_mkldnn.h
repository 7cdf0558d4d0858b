// What an executor needs to know of MXNet's oneDNN subgraph nodes (sg_mkldnn.cc) to pass the
// int8 convolutions' values to each other channels-last (core/executor, Int8ChannelsLast).
#pragma once

#include "core/op/registry.h"

namespace weft {
namespace op {

// For a quantized 2-D _sg_mkldnn_conv node: true, with the node inputs that are its data and
// its sum (-1 without one). False for any other node.
bool Int8ConvLayoutInputs(const NodeAttrs& attrs, int* data, int* sum);

// The node's attributes with its data, its output, its sum held as (n, h, w, c) (each as
// its flag says) in arrays of the plain (n, c, h, w) shape: what oneDNN's int8 kernels read
// and write, so that two such nodes in a row reorder nothing between them.
NodeAttrs Int8ConvChannelsLast(const NodeAttrs& attrs, bool data_last, bool out_last, bool sum_last);

}  // namespace op
}  // namespace weft

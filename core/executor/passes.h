// The executor's graph passes, each in its own file: shared by executor.cc only.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <memory>
#include <unordered_set>
#include <vector>

#include "core/base/context.h"
#include "core/base/dtype.h"
#include "core/base/shape.h"
#include "core/graph/node.h"
#include "core/graph/symbol.h"

namespace weft {
namespace op {
class DnnlRegion;
}
namespace executor {

// Replaces each float _sg_mkldnn_conv / _sg_mkldnn_fully_connected node by the operators
// of the subgraph it holds, wired to the node's inputs (inline_subgraphs.cc), so the
// inference passes fuse them as they fuse any graph. Returns whether anything changed.
// Off with WEFT_EXEC_INLINE_SUBGRAPHS=0.
bool InlineSubgraphNodes(graph::Symbol* sym);

// Merges the nodes that apply the same deterministic operator with the same attributes to
// the same inputs (eliminate_common_expr.cc); outputs that become one value are kept apart
// by a _copy node. Returns whether anything changed. On unless WEFT_ELIMINATE_COMMON_EXPR
// (or MXNet's MXNET_ELIMINATE_COMMON_EXPR) is "0".
bool EliminateCommonExpr(graph::Symbol* sym);

// An optimisation switch read at each bind (unset or anything but "0" means on), so that
// one process can compare executors built with and without it.
bool Enabled(const char* var);

// Longest chains first found in run order: a pointwise node (one output, float32 or
// float64, inputs of its dtype) extends the chain whose last node produced one of its
// inputs, when nothing else reads that value and it must not be kept. Chains never cross
// from the forward to the backward pass, nor include folded constants. `context_of` gives
// the device of a node: chains stay on one device, and on a GPU take only operators with
// CUDA code (FPointwiseCuda) in CUDA builds.
std::vector<std::vector<uint32_t>> PointwiseChains(const graph::IndexedGraph& g, const std::vector<uint32_t>& order,
                                                   const std::vector<DType>& types, const std::vector<int>& uses,
                                                   const std::vector<bool>& persistent,
                                                   const std::unordered_set<const graph::Node*>& constant,
                                                   const std::unordered_set<const graph::Node*>& in_forward,
                                                   const std::function<Context(uint32_t)>& context_of);

// Device placement (place_device.cc), for group2ctx. What the executor knows at bind:
struct PlacementInputs {
  std::map<std::string, Context> group2ctx;  // "__ctx_group__" value -> context
  Context default_ctx;                       // the bind context
  // Variables' contexts (their bound arrays').
  std::unordered_map<const graph::Node*, Context> variable_ctx;
  // The gradient pass's record of what each backward node was made for, plus each head
  // gradient variable -> the node of its output.
  std::unordered_map<const graph::Node*, const graph::Node*> made_for;
  std::unordered_set<const graph::Node*> forward;  // nodes of the forward pass
  std::vector<std::pair<size_t, Context>> output_ctx;  // outputs that must end on a context
};
struct Placement {
  std::unordered_map<const graph::Node*, Context> ctx;  // every node's, the copies' included
  std::vector<graph::NodePtr> copies;                    // in the order they were made
  std::unordered_set<const graph::Node*> forward_copies;  // copies that a forward node reads
};
// Gives every node of the graph of `outputs` a context: variables their arrays'; a node
// with a "__ctx_group__" attribute its group's (an unmapped group is an error, as in
// MXNet, when group2ctx is not empty); a gradient node the context of the node it was
// made for; any other node that of its first input, or of its first reader. Then every
// input read on another context than its producer's is replaced by a "_CrossDeviceCopy"
// node (one per value and destination) and the outputs listed in output_ctx are copied
// where they must end. An operator updating a state (an auxiliary array) on another
// context is an error. Nodes are changed in place: the graph must be the caller's own.
Placement PlaceDevices(std::vector<graph::NodeEntry>* outputs, const PlacementInputs& in);
bool IsCrossDeviceCopy(const graph::Node& n);

// A node's attribute as written (def when absent), and as a boolean ("True", "true", "1").
std::string NodeAttr(const NodeAttrs& attrs, const char* key, const std::string& def);
bool NodeAttrBool(const NodeAttrs& attrs, const char* key, bool def);

// A graph with its inferred shapes and types, as the oneDNN region passes (infer_fuse.cc,
// train_fuse.cc) read it when they classify its nodes.
struct RegionGraph {
  const graph::IndexedGraph& g;
  const std::vector<Shape>& shapes;
  const std::vector<DType>& types;
  const std::vector<int>& uses;         // readers of each entry, the symbol's outputs counted
  const std::vector<bool>& persistent;  // entries that are the symbol's outputs

  // Node id's input i, as an entry and as the node that makes it.
  uint32_t In(uint32_t id, size_t i) const { return g.entry_id(g[id].inputs[i].node_id, g[id].inputs[i].index); }
  uint32_t InNode(uint32_t id, size_t i) const { return g[id].inputs[i].node_id; }
  // A 4-D float32 entry (N, C, H, W), what the regions compute on.
  bool Image(uint32_t e) const { return shapes[e].ndim() == 4 && types[e] == DType::kFloat32; }
};

// A region of oneDNN operators run as one "_dnnl_region" node at inference
// (infer_fuse.cc).
struct InferRegion {
  NodeAttrs attrs;  // the region node's
  std::shared_ptr<op::DnnlRegion> region;
  std::vector<uint32_t> members;          // node ids, in run order
  std::vector<uint32_t> inputs, outputs;  // entries the node reads and writes
  std::vector<std::string> input_names, output_names;  // the values' names, for the monitor
  std::vector<std::string> member_names;
};
// "oneDNN region <name>: <n> nodes (a, b, ...)\n", for debug_str, then one indented line
// per primitive the region runs (DnnlRegion::primitives()).
std::string RegionLine(const InferRegion& r);

// The regions of float32 NCHW Convolution (2-D), BatchNorm (channel axis 1), Activation
// (relu, sigmoid, tanh, softrelu), elemwise_add, Pooling (max/avg, valid or global) and
// Concat (of channels) nodes, connected through their data inputs, with parameters that are variables; each
// is convex and has two or more nodes. Folded constants are left out. Empty without oneDNN.
std::vector<std::shared_ptr<InferRegion>> DnnlRegions(const graph::IndexedGraph& g, const std::vector<uint32_t>& order,
                                                      const std::vector<Shape>& shapes, const std::vector<DType>& types,
                                                      const std::vector<int>& uses, const std::vector<bool>& persistent,
                                                      const std::unordered_set<const graph::Node*>& constant);
// `order` changed so that each region's members run one after the other (still a valid
// run order); the regions' member lists follow it.
std::vector<uint32_t> GroupRegions(const graph::IndexedGraph& g, const std::vector<uint32_t>& order,
                                   const std::vector<std::shared_ptr<InferRegion>>& regions);

}  // namespace executor
}  // namespace weft

// The gradient pass: builds, as more graph, the gradients of some outputs with respect to
// some entries, from each operator's registered FGradient.
#pragma once

#include <vector>

#include "core/graph/node.h"

namespace weft {
namespace graph {

// Gradients of `ys` (seeded with `head_grads`, one per y) with respect to each of `xs`.
// Contributions reaching an entry along several paths are summed; an x that no y depends
// on gets zeros_like(x). Only the nodes on a path from an x to a y are differentiated; one
// without a registered gradient there is a kUnsupported error naming the node. Gradient
// nodes are named "<forward node>_backward" ("_sum<k>" for the sums).
std::vector<NodeEntry> Gradient(const std::vector<NodeEntry>& ys, const std::vector<NodeEntry>& xs,
                                const std::vector<NodeEntry>& head_grads);

}  // namespace graph
}  // namespace weft

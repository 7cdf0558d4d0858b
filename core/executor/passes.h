// The executor's graph passes, each in its own file: shared by executor.cc only.
#pragma once

#include <unordered_set>
#include <vector>

#include "core/base/dtype.h"
#include "core/graph/node.h"

namespace weft {
namespace executor {

// An optimisation switch read at each bind (unset or anything but "0" means on), so that
// one process can compare executors built with and without it.
bool Enabled(const char* var);

// Longest chains first found in run order: a pointwise node (one output, float32 or
// float64, inputs of its dtype) extends the chain whose last node produced one of its
// inputs, when nothing else reads that value and it must not be kept. Chains never cross
// from the forward to the backward pass, nor include folded constants.
std::vector<std::vector<uint32_t>> PointwiseChains(const graph::IndexedGraph& g, const std::vector<uint32_t>& order,
                                                   const std::vector<DType>& types, const std::vector<int>& uses,
                                                   const std::vector<bool>& persistent,
                                                   const std::unordered_set<const graph::Node*>& constant,
                                                   const std::unordered_set<const graph::Node*>& in_forward);

}  // namespace executor
}  // namespace weft

// The attribute of operators whose output shapes depend on input values (boolean_mask):
// "FInferShapeFromData" reads the inputs (CPU memory, already computed) and sets the output
// shapes. Only the imperative path calls it, before the usual shape inference; in a graph
// such an operator's output shapes stay unknown.
#pragma once

#include <functional>
#include <vector>

#include "core/op/registry.h"

namespace weft {

using FInferShapeFromData =
    std::function<void(const NodeAttrs& attrs, const std::vector<TBlob>& in, std::vector<Shape>* out)>;

}  // namespace weft

// Shape and type inference over a graph: every operator's FInferShape/FInferType run
// forward and backward until nothing changes, so an output's shape can fix an input's and
// the other way round. Partial results leave what cannot be known unknown.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph/symbol.h"

namespace weft {
namespace graph {

// Per entry of `g` (IndexedGraph::entry_id). `inputs` holds one value per variable node
// (g.input_nodes() order; unknown where not given); a variable's "__shape__" /
// "__dtype__" attribute fills it when not given. A conflict is a kShape / kType error
// naming the node, the input and both values. Returns how many entries stay unknown.
size_t InferShapes(const IndexedGraph& g, const std::vector<Shape>& inputs, std::vector<Shape>* entries);
size_t InferTypes(const IndexedGraph& g, const std::vector<DType>& inputs, std::vector<DType>* entries);

template <typename T>
struct SymbolInference {
  std::vector<T> arguments, outputs, auxiliary;  // in list_arguments / list_outputs / aux order
  bool complete = false;                         // nothing left unknown
};

// The symbol-level forms (infer_shape, infer_type): known values by argument or
// auxiliary-state name; an unknown name is a kValue error listing the arguments.
SymbolInference<Shape> InferShape(const Symbol& sym, const std::unordered_map<std::string, Shape>& known);
SymbolInference<DType> InferType(const Symbol& sym, const std::unordered_map<std::string, DType>& known);

}  // namespace graph
}  // namespace weft

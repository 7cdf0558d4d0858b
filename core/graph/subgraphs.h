// The graphs a control-flow node runs (MXNet's node "subgraphs": `_foreach`'s body,
// `_cond`'s branches). A node keeps them in the hidden attribute kSubgraphsAttr, as a JSON
// array of MXNet symbol objects, so that every copy of its attributes (graph passes,
// gradients, re-parsing) carries them; the operator's parameter parser turns them into
// Symbols once (core/executor/control_flow.cc). The JSON reader and writer move them
// between that attribute and the node's "subgraphs" field; Compose fills it from the
// operator's first TNumInputGraphs positional arguments.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/graph/symbol.h"

namespace weft {
namespace graph {

constexpr const char* kSubgraphsAttr = "__subgraphs__";

// How many leading positional arguments of `op` are graphs (0 for ordinary operators).
int NumInputGraphs(const Op* op);

// The attribute's text for `graphs`, and the graphs back from it (errors name `where`).
std::string SubgraphsToJSON(const std::vector<Symbol>& graphs);
std::vector<std::shared_ptr<Symbol>> SubgraphsFromJSON(const std::string& text, const std::string& where);

}  // namespace graph
}  // namespace weft

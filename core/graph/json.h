// MXNet's symbol JSON (compat/mxnet/FORMATS.md section 3): saving as MXNet 1.9 writes it,
// and loading every historical variant, upgrading files older than 1.9 as MXNet does.
#pragma once

#include <string>

#include "core/graph/symbol.h"

namespace weft {
namespace graph {

// The version written into "attrs.mxnet_version" (MXNet 1.9.1's).
constexpr int kMXNetJSONVersion = 10901;

std::string SaveJSON(const Symbol& sym);
// `where` names the source in errors (a file name, "string"). Malformed input (bad JSON,
// unknown fields or operators, bad input indices, forward references that could form a
// cycle, wrong types) is a kValue error naming the node and the problem.
Symbol LoadJSON(const std::string& text, const std::string& where = "string");

}  // namespace graph
}  // namespace weft

// Symbol: the declarative handle on a graph, a list of output entries. Built from
// variables and registered operators, composed like function calls, inspected
// (arguments, outputs, auxiliary states, internals, attributes) and saved as MXNet's JSON.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/node.h"

namespace weft {
namespace graph {

class Symbol {
 public:
  enum class InputKind { kAll, kReadOnly, kAuxiliary };

  std::vector<NodeEntry> outputs;

  static Symbol Variable(const std::string& name);
  // An operator with its parameters and no inputs yet (MXNet's "atomic symbol"); Compose
  // gives it inputs and a name. Parameters are checked here.
  static Symbol CreateFunctor(const Op* op, KwArgs params);
  // Several symbols' outputs as one symbol.
  static Symbol Group(const std::vector<Symbol>& symbols);

  // Fills the inputs of an atomic symbol: positional `args` in the operator's input order,
  // then `kwargs` by input name; inputs still missing become variables named
  // "<name>_<input>" (fc1_weight). On a composed symbol, replaces its free variables:
  // positional args in list_arguments order, kwargs by variable name, and a non-empty
  // `name` renames the head node (as nnvm's Compose does). Every symbol passed must have
  // one output. An atomic symbol composed without a name gets "<op in lower case><counter>".
  void Compose(const std::vector<Symbol>& args, const std::vector<std::pair<std::string, Symbol>>& kwargs,
               const std::string& name);

  // Output i alone.
  Symbol operator[](size_t i) const;
  std::vector<std::string> ListInputNames(InputKind kind) const;
  std::vector<std::string> ListArguments() const { return ListInputNames(InputKind::kReadOnly); }
  std::vector<std::string> ListAuxiliaryStates() const { return ListInputNames(InputKind::kAuxiliary); }
  std::vector<std::string> ListOutputs() const;
  // Every output of every node (hidden outputs excluded), variables included.
  Symbol GetInternals() const;
  // The inputs of the output nodes, as one symbol.
  Symbol GetChildren() const;
  // A copy sharing no node with this one.
  Symbol Copy() const;
  // True when `other` is the same graph: operators, parameters and attributes, node names,
  // wiring and outputs all equal (nodes may be different objects).
  bool SameGraph(const Symbol& other) const;

  // Attributes of the single output node (an error for a grouped symbol).
  bool GetAttr(const std::string& key, std::string* out) const;
  void SetAttr(const std::string& key, const std::string& value);
  // Attributes of every node reachable from the outputs, by node name (nodes without
  // attributes left out).
  std::map<std::string, std::map<std::string, std::string>> AttrDict() const;
  // The name of the single output node ("" for a group).
  std::string Name() const;
  // One line per node, as MXNet's debug_str.
  std::string DebugString() const;
  bool IsAtomic() const;
};

// The name of output `index` of `node`, as list_outputs gives it.
std::string OutputName(const Node& node, uint32_t index);
// The names of an operator node's inputs: the declared argument names, "arg<i>" for the
// elements of a variadic argument.
std::vector<std::string> InputNames(const Node& n);

}  // namespace graph
}  // namespace weft

#include "core/graph/symbol.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/graph/subgraphs.h"
#include "core/op/compose_attr.h"
#include "core/op/registry.h"

namespace weft {
namespace graph {
std::vector<std::string> InputNames(const Node& n) {
  static const auto& listed = Op::GetAttr<FListNames>("FListInputNames");
  if (listed.Contains(n.op())) return listed[n.op()](n.attrs);
  int count = n.op()->NumInputs(n.attrs);
  std::vector<std::string> names;
  const auto& args = n.op()->arguments;
  for (int i = 0; i < count; ++i) {
    bool named = static_cast<size_t>(i) < args.size() && args[i].type.find("[]") == std::string::npos;
    names.push_back(named ? args[i].name : "arg" + std::to_string(i));
  }
  return names;
}

namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Parses the node's parameters (after its dict changed); errors name the operator.
void Reparse(Node* n) {
  std::string name = n->attrs.name;
  n->attrs = MakeAttrs(n->op(), std::move(n->attrs.dict));
  n->attrs.name = std::move(name);
}

// A fresh name for a node composed without one: the operator's name in lower case and a
// process-wide counter, as MXNet's default name manager does.
std::string AutoName(const Op* op) {
  static std::atomic<int64_t> counter{0};
  std::string base;
  for (char c : op->name) base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return base + std::to_string(counter++);
}

const NodeEntry& SingleOutput(const Symbol& s, const std::string& what) {
  WEFT_CHECK(s.outputs.size() == 1, kValue, what, ": expected a symbol with one output, got ", s.outputs.size(),
             " outputs");
  return s.outputs[0];
}

}  // namespace

std::string OutputName(const Node& node, uint32_t index) {
  if (node.is_variable()) return node.attrs.name;
  static const auto& names = Op::GetAttr<FListNames>("FListOutputNames");
  if (names.Contains(node.op())) {
    std::vector<std::string> n = names[node.op()](node.attrs);
    if (index < n.size()) return node.attrs.name + "_" + n[index];
  }
  if (node.num_visible_outputs() == 1) return node.attrs.name + "_output";
  return node.attrs.name + "_output" + std::to_string(index);
}

Symbol Symbol::Variable(const std::string& name) {
  WEFT_CHECK(!name.empty(), kValue, "Variable: expected a name, got an empty string");
  NodePtr n = Node::Create();
  n->attrs.name = name;
  Symbol s;
  s.outputs.push_back({n, 0, 0});
  return s;
}

Symbol Symbol::CreateFunctor(const Op* op, KwArgs params) {
  WEFT_CHECK(op != nullptr, kValue, "CreateFunctor: expected an operator, got null");
  NodePtr n = Node::Create();
  n->attrs.op = op;
  n->attrs.dict = std::move(params);
  // A variadic operator's input count may come only with its inputs, at Compose.
  bool count_pending = !op->key_var_num_args.empty() && n->FindAttr(op->key_var_num_args) == nullptr;
  Symbol s;
  if (count_pending) {
    // Its outputs are known once Compose has parsed the parameters.
    s.outputs.push_back({n, 0, 0});
    return s;
  }
  Reparse(n.get());
  for (int i = 0; i < n->num_visible_outputs(); ++i) s.outputs.push_back({n, static_cast<uint32_t>(i), 0});
  return s;
}

Symbol Symbol::Group(const std::vector<Symbol>& symbols) {
  Symbol g;
  for (const auto& s : symbols) g.outputs.insert(g.outputs.end(), s.outputs.begin(), s.outputs.end());
  return g;
}

bool Symbol::IsAtomic() const {
  if (outputs.empty()) return false;
  const Node* n = outputs[0].node.get();
  for (const auto& e : outputs)
    if (e.node.get() != n) return false;
  return !n->is_variable() && n->inputs.empty();
}

void Symbol::Compose(const std::vector<Symbol>& args, const std::vector<std::pair<std::string, Symbol>>& kwargs,
                     const std::string& name) {
  WEFT_CHECK(!outputs.empty(), kValue, "Compose: the symbol is empty");
  if (IsAtomic()) {
    NodePtr node = outputs[0].node;
    const Op* op = node->op();
    node->attrs.name = name.empty() ? AutoName(op) : name;
    const std::string& who = node->attrs.name;
    if (!op->key_var_num_args.empty() && node->FindAttr(op->key_var_num_args) == nullptr) {
      WEFT_CHECK(kwargs.empty(), kValue, "Operator '", op->name, "' (", who,
                 "): a variable number of inputs must be given by position, got keyword inputs");
      node->SetAttr(op->key_var_num_args, std::to_string(args.size()));
    }
    // A control-flow operator's first positional arguments are the graphs it runs (as in
    // MXNet, counted in num_args); the node keeps them as an attribute (subgraphs.h).
    const size_t num_graphs = static_cast<size_t>(NumInputGraphs(op));
    if (num_graphs > 0) {
      WEFT_CHECK(args.size() >= num_graphs, kValue, "Operator '", op->name, "' (", who, "): expected its ", num_graphs,
                 " graph", num_graphs == 1 ? "" : "s", " as the first positional inputs, got ", args.size(),
                 " positional inputs");
      node->SetAttr(kSubgraphsAttr, SubgraphsToJSON(std::vector<Symbol>(args.begin(), args.begin() + num_graphs)));
    }
    Reparse(node.get());
    static const auto& set_var_attr = Op::GetAttr<FSetInputVarAttrOnCompose>("FSetInputVarAttrOnCompose");
    const std::vector<Symbol> inputs_given(args.begin() + num_graphs, args.end());
    std::vector<std::string> names = InputNames(*node);
    WEFT_CHECK(inputs_given.size() <= names.size(), kValue, "Operator '", op->name, "' (", who, "): expected at most ",
               names.size(), " inputs (", Join(names), "), got ", inputs_given.size());
    std::vector<NodeEntry> inputs(names.size());
    std::vector<bool> given(names.size(), false);
    for (size_t i = 0; i < inputs_given.size(); ++i) {
      inputs[i] = SingleOutput(inputs_given[i], "Operator '" + op->name + "' (" + who + "), input '" + names[i] + "'");
      given[i] = true;
    }
    for (const auto& kv : kwargs) {
      size_t i = 0;
      while (i < names.size() && names[i] != kv.first) ++i;
      WEFT_CHECK(i < names.size(), kValue, "Operator '", op->name, "' (", who, "): unknown input '", kv.first,
                 "'; its inputs are ", Join(names));
      WEFT_CHECK(!given[i], kValue, "Operator '", op->name, "' (", who, "): input '", kv.first,
                 "' is given twice");
      inputs[i] = SingleOutput(kv.second, "Operator '" + op->name + "' (" + who + "), input '" + kv.first + "'");
      given[i] = true;
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (given[i]) continue;
      // Implicit variables carry a copy of the operator's attributes, as MXNet's do.
      Symbol v = Variable(who + "_" + names[i]);
      for (const auto& kv : node->attrs.dict)
        if (kv.first != kSubgraphsAttr) v.outputs[0].node->attrs.dict.push_back(kv);
      if (set_var_attr.Contains(op)) set_var_attr[op](node->attrs, static_cast<int>(i), &v.outputs[0].node->attrs.dict);
      inputs[i] = v.outputs[0];
    }
    node->inputs = std::move(inputs);
    outputs.clear();
    for (int i = 0; i < node->num_visible_outputs(); ++i) outputs.push_back({node, static_cast<uint32_t>(i), 0});
    return;
  }

  // A composed graph: its free variables are replaced.
  IndexedGraph g(outputs);
  std::vector<const Node*> vars;
  for (uint32_t id : g.input_nodes())
    if (!g.is_mutable_input(id)) vars.push_back(g[id].source);
  WEFT_CHECK(args.size() <= vars.size(), kValue, "Compose: the symbol has ", vars.size(), " arguments, got ",
             args.size(), " positional inputs");
  std::unordered_map<const Node*, NodeEntry> replace;
  for (size_t i = 0; i < args.size(); ++i)
    replace[vars[i]] = SingleOutput(args[i], "Compose: argument '" + vars[i]->attrs.name + "'");
  for (const auto& kv : kwargs) {
    const Node* found = nullptr;
    for (uint32_t id : g.input_nodes())
      if (g[id].source->attrs.name == kv.first) found = g[id].source;
    WEFT_CHECK(found != nullptr, kValue, "Compose: the symbol has no variable named '", kv.first, "'");
    WEFT_CHECK(!replace.count(found), kValue, "Compose: variable '", kv.first, "' is given twice");
    replace[found] = SingleOutput(kv.second, "Compose: argument '" + kv.first + "'");
  }
  DFSVisit(outputs, [&](const NodePtr& n) {
    for (NodeEntry& e : n->inputs) {
      auto it = replace.find(e.node.get());
      if (it != replace.end()) e = it->second;
    }
  });
  for (NodeEntry& e : outputs) {
    auto it = replace.find(e.node.get());
    if (it != replace.end()) e = it->second;
  }
  // As in MXNet, a name given to the composition renames the head node
  // (net(data=x, name='composed') is <Symbol composed>).
  if (!name.empty() && !outputs[0].node->is_variable()) outputs[0].node->attrs.name = name;
}

Symbol Symbol::operator[](size_t i) const {
  WEFT_CHECK(i < outputs.size(), kValue, "Symbol: output index ", i, " is out of range for a symbol with ",
             outputs.size(), " outputs");
  Symbol s;
  s.outputs.push_back(outputs[i]);
  return s;
}

std::vector<std::string> Symbol::ListInputNames(InputKind kind) const {
  IndexedGraph g(outputs);
  std::vector<std::string> names;
  for (uint32_t id : g.input_nodes()) {
    bool aux = g.is_mutable_input(id);
    if (kind == InputKind::kAll || (kind == InputKind::kAuxiliary) == aux) names.push_back(g[id].source->attrs.name);
  }
  return names;
}

std::vector<std::string> Symbol::ListOutputs() const {
  std::vector<std::string> names;
  for (const auto& e : outputs) names.push_back(OutputName(*e.node, e.index));
  return names;
}

Symbol Symbol::GetInternals() const {
  Symbol s;
  DFSVisit(outputs, [&](const NodePtr& n) {
    for (int i = 0; i < n->num_visible_outputs(); ++i) s.outputs.push_back({n, static_cast<uint32_t>(i), 0});
  });
  return s;
}

Symbol Symbol::GetChildren() const {
  // Each node once: the outputs of a multi-output node (SliceChannel) have its inputs once.
  Symbol s;
  std::unordered_set<const Node*> seen;
  for (const auto& e : outputs)
    if (seen.insert(e.node.get()).second)
      s.outputs.insert(s.outputs.end(), e.node->inputs.begin(), e.node->inputs.end());
  return s;
}

namespace {

// Parameter lists compare as sets of pairs: the same call may list them in another order.
bool SameDict(const KwArgs& a, const KwArgs& b) {
  if (a == b) return true;
  if (a.size() != b.size()) return false;
  KwArgs x = a, y = b;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

}  // namespace

bool Symbol::SameGraph(const Symbol& other) const {
  if (outputs.size() != other.outputs.size()) return false;
  // Walks both graphs together, pairing node for node; a node paired twice must meet the
  // same partner both times, in both directions, so shared and duplicated nodes differ.
  std::unordered_map<const Node*, const Node*> forward, backward;
  std::vector<std::pair<const Node*, const Node*>> todo;
  auto pair = [&](const Node* x, const Node* y) {
    auto f = forward.emplace(x, y);
    auto b = backward.emplace(y, x);
    if (!f.second || !b.second) return f.first->second == y && b.first->second == x;
    todo.emplace_back(x, y);
    return true;
  };
  auto pair_entry = [&](const NodeEntry& x, const NodeEntry& y) {
    return x.index == y.index && x.version == y.version && pair(x.node.get(), y.node.get());
  };
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!pair_entry(outputs[i], other.outputs[i])) return false;
  while (!todo.empty()) {
    auto [x, y] = todo.back();
    todo.pop_back();
    if (x->attrs.op != y->attrs.op || x->attrs.name != y->attrs.name || x->inputs.size() != y->inputs.size() ||
        x->control_deps.size() != y->control_deps.size() || !SameDict(x->attrs.dict, y->attrs.dict))
      return false;
    for (size_t i = 0; i < x->inputs.size(); ++i)
      if (!pair_entry(x->inputs[i], y->inputs[i])) return false;
    for (size_t i = 0; i < x->control_deps.size(); ++i)
      if (!pair(x->control_deps[i].get(), y->control_deps[i].get())) return false;
  }
  return true;
}

Symbol Symbol::Copy() const {
  std::unordered_map<const Node*, NodePtr> copies;
  DFSVisit(outputs, [&](const NodePtr& n) {
    NodePtr c = Node::Create();
    c->attrs = n->attrs;
    for (const auto& e : n->inputs) c->inputs.push_back({copies.at(e.node.get()), e.index, e.version});
    for (const auto& d : n->control_deps) c->control_deps.push_back(copies.at(d.get()));
    copies[n.get()] = c;
  });
  Symbol s;
  for (const auto& e : outputs) s.outputs.push_back({copies.at(e.node.get()), e.index, e.version});
  return s;
}

bool Symbol::GetAttr(const std::string& key, std::string* out) const {
  const NodeEntry& e = SingleOutput(*this, "Symbol.attr");
  const std::string* v = e.node->FindAttr(key);
  if (v) *out = *v;
  return v != nullptr;
}

void Symbol::SetAttr(const std::string& key, const std::string& value) {
  const NodeEntry& e = SingleOutput(*this, "Symbol._set_attr");
  Node* n = e.node.get();
  n->SetAttr(key, value);
  bool user = key.size() > 4 && key.compare(0, 2, "__") == 0 && key.compare(key.size() - 2, 2, "__") == 0;
  // A parameter changes what the operator computes: check it now rather than at bind.
  if (!user && !n->is_variable()) Reparse(n);
}

std::map<std::string, std::map<std::string, std::string>> Symbol::AttrDict() const {
  std::map<std::string, std::map<std::string, std::string>> r;
  // The graph a oneDNN fusion node holds is its parameter "subgraph" here, but a subgraph
  // and not an attribute in MXNet: it is left out, so such a node without flags is listed
  // only when it has other attributes, as in MXNet.
  static const auto& holds_subgraph = Op::GetAttr<bool>("TSubgraphParam");
  DFSVisit(outputs, [&](const NodePtr& n) {
    const bool skip_subgraph = !n->is_variable() && holds_subgraph.Contains(n->op());
    for (const auto& kv : n->attrs.dict)
      if (!(skip_subgraph && kv.first == "subgraph")) r[n->attrs.name][kv.first] = kv.second;
  });
  return r;
}

std::string Symbol::Name() const {
  if (outputs.size() != 1) return "";
  return outputs[0].node->attrs.name;
}

std::string Symbol::DebugString() const {
  std::ostringstream os;
  os << "Symbol Outputs:\n";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << "\toutput[" << i << "]=" << outputs[i].node->attrs.name << "(" << outputs[i].index << ")\n";
  DFSVisit(outputs, [&](const NodePtr& n) {
    if (n->is_variable()) {
      os << "Variable:" << n->attrs.name << "\n";
      return;
    }
    os << "--------------------\n";
    os << "Op:" << n->op()->name << ", Name=" << n->attrs.name << "\n";
    os << "Inputs:\n";
    for (size_t i = 0; i < n->inputs.size(); ++i)
      os << "\targ[" << i << "]=" << n->inputs[i].node->attrs.name << "(" << n->inputs[i].index
         << ") version=" << n->inputs[i].version << "\n";
    if (!n->attrs.dict.empty()) {
      os << "Attrs:\n";
      std::map<std::string, std::string> sorted(n->attrs.dict.begin(), n->attrs.dict.end());
      for (const auto& kv : sorted) os << "\t" << kv.first << "=" << kv.second << "\n";
    }
    if (!n->control_deps.empty()) {
      os << "Control deps:\n";
      for (size_t i = 0; i < n->control_deps.size(); ++i)
        os << "\tcdep[" << i << "]=" << n->control_deps[i]->attrs.name << "\n";
    }
  });
  return os.str();
}

}  // namespace graph
}  // namespace weft

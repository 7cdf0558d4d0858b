#include "core/graph/json.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/base/error.h"
#include "core/base/json_parse.h"
#include "core/base/limits.h"
#include "core/base/logging.h"
#include "core/graph/subgraphs.h"
#include "core/op/registry.h"

namespace weft {
namespace graph {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

nlohmann::ordered_json Entry(uint32_t node, uint32_t index, uint32_t version) {
  return nlohmann::ordered_json::array({node, index, version});
}

// Errors while loading name the source and, once known, the node.
struct Reader {
  std::string where;

  template <typename... Args>
  [[noreturn]] void Fail(Args&&... parts) const {
    Throw(ErrorKind::kValue, "Symbol JSON (", where, "): ", std::forward<Args>(parts)...);
  }
  std::string NodeLabel(size_t i, const std::string& name) const {
    return "node " + std::to_string(i) + (name.empty() ? std::string() : " ('" + name + "')");
  }
};

// Legacy (pre-1.9) attribute keys that became user attributes "__key__".
const char* const kLegacyKeys[] = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage"};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The legacy key `key` ends with, or "".
std::string LegacySuffix(const std::string& key) {
  for (const char* k : kLegacyKeys)
    if (EndsWith(key, k)) return k;
  return "";
}

std::vector<std::string> InputNamesOf(const Node& n) {
  static const auto& listed = Op::GetAttr<FListNames>("FListInputNames");
  if (listed.Contains(n.op())) return listed[n.op()](n.attrs);
  std::vector<std::string> names;
  const auto& args = n.op()->arguments;
  int count = n.op()->NumInputs(n.attrs);
  for (int i = 0; i < count; ++i) {
    bool named = static_cast<size_t>(i) < args.size() && args[i].type.find("[]") == std::string::npos;
    names.push_back(named ? args[i].name : "arg" + std::to_string(i));
  }
  return names;
}

// Reads a node's string map ("attrs", legacy "attr" or "param") into its dict.
void ReadStringMap(const Reader& r, const json& m, const std::string& field, const std::string& label, KwArgs* dict) {
  if (!m.is_object()) r.Fail(label, ": '", field, "' must be an object of strings, got ", m.type_name());
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_string())
      r.Fail(label, ": attribute '", it.key(), "' must be a string, got ", it.value().type_name());
    CheckLimit(Limit::kAttrBytes, static_cast<int64_t>(it.value().get_ref<const std::string&>().size()),
               "Symbol JSON (" + r.where + "): " + label + " attribute '" + it.key() + "'");
    dict->emplace_back(it.key(), it.value().get<std::string>());
  }
}

uint32_t ReadIndex(const Reader& r, const json& v, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
    r.Fail(what, ": expected a non-negative integer, got ", JSONExcerpt(v));
  return static_cast<uint32_t>(v.get<int64_t>());
}

// An entry [node, index] or [node, index, version] referring to one of `nodes`; `limit` is
// the number of nodes it may refer to (those before the referring node).
NodeEntry ReadEntry(const Reader& r, const json& v, const std::vector<NodePtr>& nodes, size_t limit,
                    const std::string& what) {
  if (!v.is_array() || v.size() < 2 || v.size() > 3)
    r.Fail(what, ": expected [node, index] or [node, index, version], got ", JSONExcerpt(v));
  uint32_t id = ReadIndex(r, v[0], what + " node");
  uint32_t index = ReadIndex(r, v[1], what + " output index");
  uint32_t version = v.size() == 3 ? ReadIndex(r, v[2], what + " version") : 0;
  if (id >= limit)
    r.Fail(what, " refers to node ", id, ", which does not come before it (", limit,
           " nodes precede it): nodes must be in topological order, so this is a cycle or a forward reference");
  const Node& n = *nodes[id];
  if (static_cast<int>(index) >= n.num_outputs())
    r.Fail(what, " refers to output ", index, " of node ", id, " ('", n.attrs.name, "'), which has ", n.num_outputs(),
           " output", n.num_outputs() == 1 ? "" : "s");
  return {nodes[id], index, version};
}

void Parse(const Reader& r, Node* n, const std::string& label) {
  try {
    std::string name = n->attrs.name;
    n->attrs = MakeAttrs(n->op(), std::move(n->attrs.dict));
    n->attrs.name = std::move(name);
  } catch (const Error& e) {
    r.Fail(label, ": ", e.what());
  }
}

// `version`: the MXNet version assumed when the object carries none (a subgraph takes its
// enclosing graph's).
Symbol ReadSymbol(const Reader& r, const json& top, int version = 800);


// The graph as MXNet's JSON object; a control-flow node's subgraphs are nested objects of
// the same form in its "subgraphs" field.
ordered_json SymbolObject(const Symbol& sym) {
  IndexedGraph g(sym.outputs);
  ordered_json nodes = ordered_json::array();
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = *g[i].source;
    ordered_json node;
    node["op"] = n.is_variable() ? "null" : n.op()->name;
    node["name"] = n.attrs.name;
    // Control-flow operators keep their graphs in the hidden attribute kSubgraphsAttr
    // (subgraphs.h); MXNet's oneDNN fusions keep their one graph as the parameter
    // "subgraph". MXNet's JSON has either as the node's "subgraphs".
    static const auto& holds_subgraph = Op::GetAttr<bool>("TSubgraphParam");
    const bool subgraph_param = !n.is_variable() && holds_subgraph.Contains(n.op());
    const std::string* subgraphs = nullptr;
    std::map<std::string, std::string> sorted;
    for (const auto& kv : n.attrs.dict) {
      if (kv.first == kSubgraphsAttr) {
        subgraphs = &kv.second;
        continue;
      }
      if (subgraph_param && kv.first == "subgraph") {
        if (!kv.second.empty()) node["subgraphs"] = ordered_json::array({ordered_json::parse(kv.second)});
        continue;
      }
      sorted[kv.first] = kv.second;
    }
    if (!sorted.empty()) node["attrs"] = sorted;
    ordered_json inputs = ordered_json::array();
    for (size_t k = 0; k < g[i].inputs.size(); ++k)
      inputs.push_back(Entry(g[i].inputs[k].node_id, g[i].inputs[k].index, n.inputs[k].version));
    node["inputs"] = inputs;
    if (!g[i].control_deps.empty()) node["control_deps"] = g[i].control_deps;
    if (subgraphs) node["subgraphs"] = ordered_json::parse(*subgraphs);
    nodes.push_back(std::move(node));
  }
  ordered_json heads = ordered_json::array();
  for (const auto& e : sym.outputs) heads.push_back(Entry(g.node_id(e.node.get()), e.index, e.version));
  ordered_json top;
  top["nodes"] = std::move(nodes);
  top["arg_nodes"] = g.input_nodes();
  top["node_row_ptr"] = g.row_ptr();
  top["heads"] = std::move(heads);
  top["attrs"] = {{"mxnet_version", ordered_json::array({"int", kMXNetJSONVersion})}};
  return top;
}

Symbol ReadSymbol(const Reader& r, const json& top, int version) {
  const std::string& where = r.where;
  if (!top.is_object()) r.Fail("expected an object at the top level, got ", top.type_name());
  static const std::set<std::string> kTopKeys = {"nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"};
  for (auto it = top.begin(); it != top.end(); ++it)
    if (!kTopKeys.count(it.key())) r.Fail("unknown top-level field '", it.key(), "'");
  for (const char* key : {"nodes", "arg_nodes", "heads"}) {
    if (!top.contains(key)) r.Fail("missing the top-level field '", key, "'");
    if (!top[key].is_array()) r.Fail("'", key, "' must be an array, got ", top[key].type_name());
  }

  if (top.contains("attrs")) {
    const json& attrs = top["attrs"];
    if (!attrs.is_object()) r.Fail("'attrs' must be an object, got ", attrs.type_name());
    if (attrs.contains("mxnet_version")) {
      const json& v = attrs["mxnet_version"];
      if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
        r.Fail("attrs.mxnet_version must be [\"int\", version], got ", JSONExcerpt(v));
      version = v[1].get<int>();
    }
  }
  if (version > kMXNetJSONVersion) {
    WEFT_LOG(Warning) << "Symbol JSON (" << where << ") was saved by MXNet version " << version
                      << ", newer than the " << kMXNetJSONVersion << " this library reads; loading it anyway";
  }

  static const std::set<std::string> kNodeKeys = {"op",   "name",         "inputs",    "attrs",
                                                   "attr", "param",        "control_deps", "subgraphs",
                                                   "backward_source_id"};
  const json& jnodes = top["nodes"];
  CheckLimit(Limit::kGraphNodes, static_cast<int64_t>(jnodes.size()), "Symbol JSON (" + where + ")");
  std::vector<NodePtr> nodes;
  for (size_t i = 0; i < jnodes.size(); ++i) {
    const json& jn = jnodes[i];
    std::string label = r.NodeLabel(i, "");
    if (!jn.is_object()) r.Fail(label, ": expected an object, got ", jn.type_name());
    if (jn.contains("name") && jn["name"].is_string()) label = r.NodeLabel(i, jn["name"].get<std::string>());
    for (auto it = jn.begin(); it != jn.end(); ++it)
      if (!kNodeKeys.count(it.key())) r.Fail(label, ": unknown field '", it.key(), "'");
    for (const char* key : {"op", "name", "inputs"})
      if (!jn.contains(key)) r.Fail(label, ": missing the field '", key, "'");
    if (!jn["name"].is_string()) r.Fail(label, ": 'name' must be a string, got ", jn["name"].type_name());
    NodePtr n = Node::Create();
    n->attrs.name = jn["name"].get<std::string>();
    if (!jn["op"].is_string()) r.Fail(label, ": 'op' must be a string, got ", jn["op"].type_name());
    std::string op_name = jn["op"].get<std::string>();
    // Subgraphs are checked before the operator is looked up, so the message names what is
    // refused: MXNet's oneDNN fusions (one graph, kept as their parameter "subgraph") and the
    // control-flow operators (their TNumInputGraphs graphs, read below) have them.
    static const auto& holds_subgraph = Op::GetAttr<bool>("TSubgraphParam");
    const bool subgraph_param = holds_subgraph.Contains(Op::Find(op_name));
    if (jn.contains("subgraphs")) {
      if (!subgraph_param && NumInputGraphs(Op::Find(op_name)) == 0)
        r.Fail(label, ": subgraphs of operator '", op_name, "' are not supported (only MXNet's oneDNN fusions, "
               "_sg_mkldnn_*, and the control-flow operators _foreach, _while_loop and _cond have them)");
      const json& subs = jn["subgraphs"];
      if (subgraph_param && (!subs.is_array() || subs.size() != 1 || !subs[0].is_object()))
        r.Fail(label, ": expected 'subgraphs' to hold one graph, got ", JSONExcerpt(subs));
    }
    if (op_name != "null") {
      n->attrs.op = Op::Find(op_name);
      if (n->attrs.op == nullptr) r.Fail(label, ": unknown operator '", op_name, "'");
    }
    if (jn.contains("subgraphs") && !subgraph_param) {
      const json& subs = jn["subgraphs"];
      if (!subs.is_array()) r.Fail(label, ": 'subgraphs' must be an array, got ", subs.type_name());
      const int expected = n->op() ? NumInputGraphs(n->op()) : 0;
      if (static_cast<int>(subs.size()) != expected)
        r.Fail(label, ": operator '", op_name, "' takes ", expected, " subgraph", expected == 1 ? "" : "s", ", got ",
               subs.size());
      std::vector<Symbol> graphs;
      for (size_t k = 0; k < subs.size(); ++k)
        graphs.push_back(ReadSymbol(Reader{where + ", " + label + " subgraph " + std::to_string(k)}, subs[k], version));
      n->attrs.dict.emplace_back(kSubgraphsAttr, SubgraphsToJSON(graphs));
    } else if (n->op() && NumInputGraphs(n->op()) > 0) {
      r.Fail(label, ": operator '", op_name, "' needs its 'subgraphs' field");
    }
    for (const char* key : {"attrs", "attr", "param"})
      if (jn.contains(key)) ReadStringMap(r, jn[key], key, label, &n->attrs.dict);
    if (jn.contains("subgraphs") && subgraph_param) n->attrs.dict.emplace_back("subgraph", jn["subgraphs"][0].dump());

    // Before 1.9 some user attributes were plain keys: they are set aside before the
    // parameters are parsed and put back as "__key__" (on an input variable for
    // "<input>_<key>").
    KwArgs legacy;
    if (version < kMXNetJSONVersion) {
      KwArgs rest;
      for (auto& kv : n->attrs.dict) (LegacySuffix(kv.first).empty() ? rest : legacy).push_back(std::move(kv));
      n->attrs.dict = std::move(rest);
    }
    // Before 0.9.5 argmax/argmin wrote axis=-1 for "no axis".
    if (version < 905 && n->op() && (n->op()->name == "argmax" || n->op()->name == "argmin")) {
      KwArgs kept;
      for (auto& kv : n->attrs.dict)
        if (!(kv.first == "axis" && kv.second == "-1")) kept.push_back(std::move(kv));
      n->attrs.dict = std::move(kept);
    }
    if (n->op()) Parse(r, n.get(), label);

    const json& jin = jn["inputs"];
    if (!jin.is_array()) r.Fail(label, ": 'inputs' must be an array, got ", jin.type_name());
    for (size_t k = 0; k < jin.size(); ++k)
      n->inputs.push_back(ReadEntry(r, jin[k], nodes, i, label + " input " + std::to_string(k)));
    if (n->is_variable() && !n->inputs.empty()) r.Fail(label, ": a variable (op \"null\") has inputs");
    if (jn.contains("control_deps")) {
      const json& deps = jn["control_deps"];
      if (!deps.is_array()) r.Fail(label, ": 'control_deps' must be an array, got ", deps.type_name());
      for (const json& d : deps) {
        uint32_t id = ReadIndex(r, d, label + " control dependency");
        if (id >= i) r.Fail(label, " has control dependency ", id, ", which does not come before it");
        n->control_deps.push_back(nodes[id]);
      }
    }
    if (n->op()) {
      // The input count comes from a parameter (Concat's num_args, say): check the claim
      // before anything is sized by it.
      const int count = n->op()->NumInputs(n->attrs);
      CheckLimit(Limit::kVariadicInputs, count, "Symbol JSON (" + where + "): " + label);
      if (version >= 900 && n->inputs.size() != static_cast<size_t>(count))
        r.Fail(label, ": operator '", n->op()->name, "' takes ", count, " inputs, got ", n->inputs.size());
      std::vector<std::string> names = InputNamesOf(*n);
      // Before 0.9 auxiliary states were not saved: they become variables here, with a
      // copy of the node's attributes once its legacy keys are upgraded (below), as in
      // MXNet, where this step runs after the upgrade ("__ctx_group__" included).
      std::vector<NodePtr> made;
      if (version < 900) {
        for (size_t k = n->inputs.size(); k < names.size(); ++k) {
          made.push_back(Node::Create());
          made.back()->attrs.name = n->attrs.name + "_" + names[k];
          n->inputs.push_back({made.back(), 0, 0});
        }
      }
      if (n->inputs.size() != names.size())
        r.Fail(label, ": operator '", n->op()->name, "' takes ", names.size(), " inputs, got ", n->inputs.size());
      for (auto& kv : legacy) {
        std::string key = LegacySuffix(kv.first);
        if (kv.first == key) {
          n->SetAttr("__" + key + "__", kv.second);
          continue;
        }
        std::string arg = kv.first.substr(0, kv.first.size() - key.size() - 1);
        bool moved = false;
        for (size_t k = 0; k < names.size() && !moved; ++k) {
          if (names[k] == arg && EndsWith(kv.first, "_" + key) && n->inputs[k].node->is_variable()) {
            n->inputs[k].node->SetAttr("__" + key + "__", kv.second);
            moved = true;
          }
        }
        if (!moved) n->attrs.dict.push_back(std::move(kv));
      }
      if (!legacy.empty()) Parse(r, n.get(), label);
      for (const NodePtr& v : made) v->attrs.dict = n->attrs.dict;
    } else {
      for (auto& kv : legacy) {
        if (kv.first == LegacySuffix(kv.first)) n->SetAttr("__" + kv.first + "__", kv.second);
        else n->attrs.dict.push_back(std::move(kv));
      }
    }
    nodes.push_back(std::move(n));
  }

  for (const json& a : top["arg_nodes"]) {
    uint32_t id = ReadIndex(r, a, "arg_nodes entry");
    if (id >= nodes.size()) r.Fail("arg_nodes entry ", id, " is out of range (", nodes.size(), " nodes)");
    if (!nodes[id]->is_variable())
      r.Fail("arg_nodes entry ", id, " ('", nodes[id]->attrs.name, "') is not a variable");
  }
  Symbol s;
  const json& heads = top["heads"];
  if (heads.empty()) r.Fail("'heads' is empty: the symbol has no output");
  for (size_t k = 0; k < heads.size(); ++k)
    s.outputs.push_back(ReadEntry(r, heads[k], nodes, nodes.size(), "head " + std::to_string(k)));
  return s;
}

}  // namespace

std::string SaveJSON(const Symbol& sym) { return SymbolObject(sym).dump(2); }

int NumInputGraphs(const Op* op) {
  static const auto& count = Op::GetAttr<int>("TNumInputGraphs");
  return count.Get(op, 0);
}

std::string SubgraphsToJSON(const std::vector<Symbol>& graphs) {
  ordered_json all = ordered_json::array();
  for (const Symbol& g : graphs) all.push_back(SymbolObject(g));
  return all.dump();
}

std::vector<std::shared_ptr<Symbol>> SubgraphsFromJSON(const std::string& text, const std::string& where) {
  Reader r{where};
  json all;
  try {
    all = ParseJSONWithLimits(text, "Symbol JSON (" + where + ")");
  } catch (const json::exception& e) {
    r.Fail("not valid JSON: ", e.what());
  }
  if (!all.is_array()) r.Fail("subgraphs must be an array, got ", all.type_name());
  std::vector<std::shared_ptr<Symbol>> graphs;
  for (size_t k = 0; k < all.size(); ++k)
    graphs.push_back(std::make_shared<Symbol>(ReadSymbol(Reader{where + " subgraph " + std::to_string(k)}, all[k])));
  return graphs;
}

Symbol LoadJSON(const std::string& text, const std::string& where) {
  Reader r{where};
  json top;
  try {
    top = ParseJSONWithLimits(text, "Symbol JSON (" + where + ")");
  } catch (const json::exception& e) {
    r.Fail("not valid JSON: ", e.what());
  }
  return ReadSymbol(r, top);
}

}  // namespace graph
}  // namespace weft

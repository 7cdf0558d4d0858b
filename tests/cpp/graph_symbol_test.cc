// Symbols: composition and naming, inspection, copies, MXNet JSON (round trips, legacy
// upgrades, malformed files) and shape/type inference.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/graph/infer.h"
#include "core/graph/json.h"
#include "core/graph/symbol.h"

namespace weft {
namespace graph {
namespace {

using Names = std::vector<std::string>;

Symbol Call(const std::string& op, const std::vector<Symbol>& args, const std::string& name, KwArgs params = {},
            const std::vector<std::pair<std::string, Symbol>>& kwargs = {}) {
  Symbol s = Symbol::CreateFunctor(Op::Get(op), std::move(params));
  s.Compose(args, kwargs, name);
  return s;
}

// ((a + b) . w) summed: three variables, one implicit.
Symbol SmallNet() {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b");
  Symbol sum = Call("elemwise_add", {a, b}, "add0");
  Symbol dot = Call("dot", {sum}, "fc");  // rhs missing: becomes fc_rhs
  return Call("sum", {dot}, "total", {{"axis", "1"}});
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Symbol, CompositionNamesImplicitInputsAndOutputs) {
  Symbol net = SmallNet();
  EXPECT_EQ(net.ListArguments(), (Names{"a", "b", "fc_rhs"}));
  EXPECT_EQ(net.ListOutputs(), (Names{"total_output"}));
  EXPECT_TRUE(net.ListAuxiliaryStates().empty());
  EXPECT_EQ(net.Name(), "total");
  Symbol internals = net.GetInternals();
  EXPECT_EQ(internals.ListOutputs(), (Names{"a", "b", "add0_output", "fc_rhs", "fc_output", "total_output"}));
  EXPECT_EQ(internals[4].GetChildren().ListOutputs(), (Names{"add0_output", "fc_rhs"}));
  // Implicit variables carry the operator's attributes.
  std::string v;
  EXPECT_TRUE(net.GetInternals()[3].GetAttr("axis", &v) == false);
  Symbol total = Call("sum", {Symbol::Variable("x")}, "s", {{"axis", "0"}});
  EXPECT_TRUE(total.GetAttr("axis", &v));
  EXPECT_EQ(v, "0");
}

TEST(Symbol, KeywordInputsAndTheirErrors) {
  Symbol x = Symbol::Variable("x"), y = Symbol::Variable("y");
  Symbol d = Call("dot", {}, "d", {}, {{"rhs", y}, {"lhs", x}});
  EXPECT_EQ(d.ListArguments(), (Names{"x", "y"}));
  EXPECT_NE(ErrorOf([&] { Call("dot", {}, "d", {}, {{"rhz", y}}); }).find("unknown input 'rhz'; its inputs are lhs, rhs"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { Call("dot", {x}, "d", {}, {{"lhs", y}}); }).find("input 'lhs' is given twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { Call("dot", {x, y, x}, "d"); }).find("expected at most 2 inputs (lhs, rhs), got 3"),
            std::string::npos);
  Symbol pair = Symbol::Group({x, y});
  EXPECT_NE(ErrorOf([&] { Call("dot", {pair}, "d"); }).find("expected a symbol with one output, got 2"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { Symbol::CreateFunctor(Op::Get("sum"), {{"axiz", "1"}}); }).find("axiz"), std::string::npos);
}

TEST(Symbol, VariadicOperatorTakesItsCountFromThePositionalInputs) {
  Symbol c = Call("concat", {Symbol::Variable("p"), Symbol::Variable("q"), Symbol::Variable("r")}, "cat",
                  {{"dim", "0"}});
  EXPECT_EQ(c.ListArguments(), (Names{"p", "q", "r"}));
  std::string n;
  ASSERT_TRUE(c.GetAttr("num_args", &n));
  EXPECT_EQ(n, "3");
}

TEST(Symbol, AutomaticNamesAreUnique) {
  Symbol x = Symbol::Variable("x");
  Symbol a = Call("exp", {x}, ""), b = Call("exp", {x}, "");
  EXPECT_NE(a.Name(), b.Name());
  EXPECT_EQ(a.Name().rfind("exp", 0), 0u);
}

TEST(Symbol, CopyIsIndependentAndComposeReplacesVariables) {
  Symbol net = SmallNet();
  Symbol copy = net.Copy();
  copy.SetAttr("__lr_mult__", "2");
  std::string v;
  EXPECT_FALSE(net.GetAttr("__lr_mult__", &v));
  EXPECT_EQ(SaveJSON(net.Copy()), SaveJSON(net));
  // Replacing variable a of the copy by exp(z) leaves the original alone.
  Symbol z = Call("exp", {Symbol::Variable("z")}, "ez");
  copy.Compose({}, {{"a", z}}, "");
  EXPECT_EQ(copy.ListArguments(), (Names{"z", "b", "fc_rhs"}));
  EXPECT_EQ(net.ListArguments(), (Names{"a", "b", "fc_rhs"}));
  EXPECT_NE(ErrorOf([&] { net.Copy().Compose({}, {{"nope", z}}, ""); }).find("no variable named 'nope'"),
            std::string::npos);
}

TEST(Symbol, AttrDictAndDebugString) {
  Symbol x = Symbol::Variable("x");
  x.SetAttr("__shape__", "(2, 3)");
  Symbol s = Call("sum", {x}, "s", {{"axis", "1"}});
  auto d = s.AttrDict();
  EXPECT_EQ(d["x"]["__shape__"], "(2, 3)");
  EXPECT_EQ(d["s"]["axis"], "1");
  std::string dbg = s.DebugString();
  EXPECT_NE(dbg.find("Op:sum, Name=s"), std::string::npos);
  EXPECT_NE(dbg.find("arg[0]=x(0) version=0"), std::string::npos);
  EXPECT_NE(dbg.find("Variable:x"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { Symbol::Group({x, s}).SetAttr("k", "v"); }).find("one output"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { s.SetAttr("axis", "(oops"); }).find("axis"), std::string::npos);
}

TEST(SymbolJSON, SaveLoadSaveIsIdentical) {
  Symbol net = SmallNet();
  net.GetInternals()[0].SetAttr("__lr_mult__", "0.5");
  std::string first = SaveJSON(net);
  Symbol loaded = LoadJSON(first);
  EXPECT_EQ(SaveJSON(loaded), first);
  EXPECT_EQ(loaded.ListArguments(), net.ListArguments());
  EXPECT_EQ(loaded.ListOutputs(), net.ListOutputs());
  // The layout MXNet reads.
  nlohmann::json j = nlohmann::json::parse(first);
  EXPECT_EQ(j["attrs"]["mxnet_version"], nlohmann::json::array({"int", kMXNetJSONVersion}));
  EXPECT_EQ(j["arg_nodes"], nlohmann::json::array({0, 1, 3}));
  EXPECT_EQ(j["node_row_ptr"], nlohmann::json::array({0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(j["heads"], nlohmann::json::parse("[[5, 0, 0]]"));
  EXPECT_EQ(j["nodes"][2]["op"], "elemwise_add");
  EXPECT_EQ(j["nodes"][2]["inputs"], nlohmann::json::parse("[[0, 0, 0], [1, 0, 0]]"));
  EXPECT_EQ(j["nodes"][5]["attrs"]["axis"], "1");
  EXPECT_EQ(j["nodes"][0]["attrs"]["__lr_mult__"], "0.5");
  EXPECT_FALSE(j["nodes"][1].contains("attrs"));
}

TEST(SymbolJSON, LegacyFilesAreUpgradedAsMXNetDoes) {
  // A 0.8-era file: no version, "param"/"attr" maps, two-element entries, plain lr_mult keys.
  std::string legacy = R"({
    "nodes": [
      {"op": "null", "param": {}, "name": "x", "inputs": [], "backward_source_id": -1,
       "attr": {"ctx_group": "stage1", "lr_mult": "0.2"}},
      {"op": "null", "param": {}, "name": "w", "inputs": [], "backward_source_id": -1},
      {"op": "dot", "param": {"transpose_b": "True"}, "name": "fc", "inputs": [[0, 0], [1, 0]],
       "backward_source_id": -1, "attr": {"rhs_lr_mult": "1.5", "wd_mult": "0.3"}},
      {"op": "argmax", "param": {"axis": "-1"}, "name": "am", "inputs": [[2, 0]], "backward_source_id": -1}
    ],
    "arg_nodes": [0, 1],
    "heads": [[3, 0]]
  })";
  Symbol s = LoadJSON(legacy, "legacy.json");
  auto d = s.AttrDict();
  EXPECT_EQ(d["x"]["__ctx_group__"], "stage1");
  EXPECT_EQ(d["x"]["__lr_mult__"], "0.2");
  EXPECT_EQ(d["w"]["__lr_mult__"], "1.5");  // moved from fc's rhs_lr_mult
  EXPECT_EQ(d["fc"]["__wd_mult__"], "0.3");
  EXPECT_EQ(d["fc"].count("rhs_lr_mult"), 0u);
  EXPECT_EQ(d["fc"]["transpose_b"], "True");
  EXPECT_EQ(d.count("am"), 0u);  // axis=-1 meant "no axis" before 0.9.5: no attribute left
  EXPECT_EQ(LoadJSON(SaveJSON(s)).AttrDict(), d);
  // Before 0.9 a node's missing trailing inputs were not saved: they become variables.
  std::string old_add = R"({"nodes": [{"op": "null", "name": "x", "inputs": []},
    {"op": "elemwise_add", "name": "s", "inputs": [[0, 0]]}], "arg_nodes": [0], "heads": [[1, 0]]})";
  EXPECT_EQ(LoadJSON(old_add).ListArguments(), (Names{"x", "s_rhs"}));
}

TEST(SymbolJSON, MalformedFilesNameTheNodeAndTheProblem) {
  auto err = [](const std::string& text) { return ErrorOf([&] { LoadJSON(text, "bad.json"); }); };
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                               : ::testing::AssertionFailure() << "'" << msg << "' lacks '" << part
                                                                              << "'";
  };
  const std::string var = R"({"op": "null", "name": "x", "inputs": []})";
  auto doc = [&](const std::string& nodes, const std::string& heads = "[[0, 0, 0]]") {
    return R"({"nodes": [)" + nodes + R"(], "arg_nodes": [0], "heads": )" + heads +
           R"(, "attrs": {"mxnet_version": ["int", 10901]}})";
  };
  EXPECT_TRUE(has(err("{not json"), "bad.json"));
  EXPECT_TRUE(has(err("{not json"), "not valid JSON"));
  EXPECT_TRUE(has(err("[1, 2]"), "expected an object at the top level"));
  EXPECT_TRUE(has(err(R"({"nodes": [], "heads": []})"), "missing the top-level field 'arg_nodes'"));
  EXPECT_TRUE(has(err(R"({"nodes": [], "arg_nodes": [], "heads": [], "extra": 1})"), "unknown top-level field 'extra'"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "Frobnicate", "name": "f", "inputs": [[0, 0, 0]]})")),
                  "node 1 ('f'): unknown operator 'Frobnicate'"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "exp", "name": "e", "inputs": [[5, 0, 0]]})")),
                  "node 1 ('e') input 0 refers to node 5, which does not come before it"));
  EXPECT_TRUE(has(err(doc(R"({"op": "exp", "name": "e", "inputs": [[0, 0, 0]]})")), "cycle"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "exp", "name": "e", "inputs": [[0, 3, 0]]})")),
                  "refers to output 3 of node 0 ('x'), which has 1 output"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "exp", "name": "e", "inputs": [[0, "a", 0]]})")),
                  "expected a non-negative integer"));
  EXPECT_TRUE(has(err(doc(R"({"op": "null", "inputs": []})")), "node 0: missing the field 'name'"));
  EXPECT_TRUE(has(err(doc(R"({"op": 3, "name": "x", "inputs": []})")), "node 0 ('x'): 'op' must be a string"));
  EXPECT_TRUE(has(err(doc(R"({"op": "null", "name": "x", "inputs": [], "colour": "red"})")),
                  "node 0 ('x'): unknown field 'colour'"));
  EXPECT_TRUE(has(err(doc(R"({"op": "null", "name": "x", "inputs": [], "attrs": {"k": 1}})")),
                  "attribute 'k' must be a string"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "elemwise_add", "name": "s", "inputs": [[0, 0, 0]]})")),
                  "operator 'elemwise_add' takes 2 inputs, got 1"));
  EXPECT_TRUE(has(err(doc(var + R"(, {"op": "sum", "name": "s", "attrs": {"axis": "x"}, "inputs": [[0, 0, 0]]})")),
                  "node 1 ('s')"));
  EXPECT_TRUE(has(err(doc(var, "[]")), "'heads' is empty"));
  std::string wrong_args = doc(var + R"(, {"op": "exp", "name": "e", "inputs": [[0, 0, 0]]})", "[[1, 0, 0]]");
  wrong_args.replace(wrong_args.find("[0]"), 3, "[1]");
  EXPECT_TRUE(has(err(wrong_args), "arg_nodes entry 1 ('e') is not a variable"));
}

TEST(SymbolInfer, ShapesFlowBothWaysAndStayUnknownWhenTheyCannotBeKnown) {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b");
  Symbol s = Call("elemwise_add", {a, b}, "s");
  // b is fixed by a through the operator's rule.
  auto r = InferShape(s, {{"a", Shape{2, 3}}});
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.arguments, (std::vector<Shape>{Shape{2, 3}, Shape{2, 3}}));
  EXPECT_EQ(r.outputs, (std::vector<Shape>{Shape{2, 3}}));
  auto partial = InferShape(s, {});
  EXPECT_FALSE(partial.complete);
  EXPECT_FALSE(partial.arguments[0].known_ndim());
  // A declared __shape__ counts as given; 0 dims in it are unknown, as in MXNet 1.x.
  Symbol c = Symbol::Variable("c");
  c.SetAttr("__shape__", "(0, 3)");
  Symbol t = Call("elemwise_add", {c, Symbol::Variable("d")}, "t");
  auto rt = InferShape(t, {{"d", Shape{5, 3}}});
  EXPECT_EQ(rt.arguments[0], (Shape{5, 3}));
  // A fully given shape wins over the declared one (MXNet); a partial one must agree with it.
  auto given = InferShape(t, {{"c", Shape{5, 4}}});
  EXPECT_EQ(given.arguments[0], (Shape{5, 4}));
  EXPECT_EQ(given.arguments[1], (Shape{5, 4}));
  EXPECT_NE(ErrorOf([&] { InferShape(t, {{"c", Shape{-1, 4}}}); }).find("declared with (-1,3)"), std::string::npos);
}

TEST(SymbolInfer, MismatchNamesTheNodeAndBothShapes) {
  Symbol a = Symbol::Variable("a"), b = Symbol::Variable("b");
  Symbol net = Call("exp", {Call("elemwise_add", {a, b}, "plus")}, "e");
  std::string msg = ErrorOf([&] { InferShape(net, {{"a", Shape{2, 3}}, {"b", Shape{3, 2}}}); });
  EXPECT_NE(msg.find("Node 'plus' (operator 'elemwise_add')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3,2)"), std::string::npos) << msg;
  EXPECT_NE(ErrorOf([&] { InferShape(net, {{"q", Shape{1}}}); }).find("'q' is not an input of the symbol; its inputs are a, b"),
            std::string::npos);
}

TEST(SymbolInfer, TypesAndTheDotChain) {
  Symbol net = SmallNet();
  auto shapes = InferShape(net, {{"a", Shape{4, 5}}, {"b", Shape{4, 5}}, {"fc_rhs", Shape{5, 7}}});
  EXPECT_TRUE(shapes.complete);
  EXPECT_EQ(shapes.outputs[0], (Shape{4}));
  auto types = InferType(net, {{"a", DType::kFloat64}});
  EXPECT_TRUE(types.complete);
  EXPECT_EQ(types.arguments, (std::vector<DType>{DType::kFloat64, DType::kFloat64, DType::kFloat64}));
  EXPECT_EQ(types.outputs[0], DType::kFloat64);
  Symbol x = Symbol::Variable("x");
  x.SetAttr("__dtype__", "4");  // int32, as MXNet writes it
  auto ti = InferType(Call("exp", {x}, "e"), {});
  EXPECT_EQ(ti.outputs[0], DType::kInt32);
  std::string msg = ErrorOf([&] { InferType(Call("elemwise_add", {x, Symbol::Variable("y")}, "p"), {{"y", DType::kFloat32}}); });
  EXPECT_NE(msg.find("Node 'p'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace graph
}  // namespace weft

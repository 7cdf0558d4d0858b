// MXNet 1.9's control-flow nodes (_foreach, _while_loop, _cond with their "subgraphs")
// loaded from JSON written by hand in MXNet's format and run through the C API alone:
// forward against values computed here, foreach's backward against its closed form, the
// JSON written back with its subgraphs, and malformed nodes refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "weft/c_api.h"

namespace {

// out_t = x_t * w + s_{t-1}, s_t = out_t. The body's inputs in list_inputs (depth-first)
// order are x, w, s: data at 0, state at 2, the captured w at 1.
const char* kForeach = R"({
  "nodes": [
    {"op": "null", "name": "seq", "inputs": []},
    {"op": "null", "name": "s0", "inputs": []},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "_foreach", "name": "loop",
     "attrs": {"num_args": "4", "num_outputs": "2", "num_out_data": "1",
               "in_data_locs": "[0]", "in_state_locs": "[2]", "remain_locs": "[1]"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
     "subgraphs": [{
       "nodes": [
         {"op": "null", "name": "x", "inputs": []},
         {"op": "null", "name": "wv", "inputs": []},
         {"op": "elemwise_mul", "name": "mul", "inputs": [[0, 0, 0], [1, 0, 0]]},
         {"op": "null", "name": "s", "inputs": []},
         {"op": "elemwise_add", "name": "add", "inputs": [[2, 0, 0], [3, 0, 0]]}
       ],
       "arg_nodes": [0, 1, 3],
       "heads": [[4, 0, 0], [4, 0, 0]]
     }]}
  ],
  "arg_nodes": [0, 1, 2],
  "heads": [[3, 0, 0], [3, 1, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})";

// Loop variables (i, acc) and a captured limit: while i < limit: acc += i, i += 1; the step
// output is the new acc. cond reads (i, limit) = node inputs 0, 2; func reads (acc, i) =
// node inputs 1, 0, and its loop variables i, acc are its inputs 1, 0.
const char* kWhile = R"({
  "nodes": [
    {"op": "null", "name": "i", "inputs": []},
    {"op": "null", "name": "acc", "inputs": []},
    {"op": "null", "name": "limit", "inputs": []},
    {"op": "_while_loop", "name": "wl",
     "attrs": {"num_args": "5", "num_outputs": "3", "num_out_data": "1", "max_iterations": "5",
               "cond_input_locs": "[0, 2]", "func_input_locs": "[1, 0]", "func_var_locs": "[1, 0]"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
     "subgraphs": [
       {"nodes": [
          {"op": "null", "name": "ci", "inputs": []},
          {"op": "null", "name": "cl", "inputs": []},
          {"op": "broadcast_lesser", "name": "lt", "inputs": [[0, 0, 0], [1, 0, 0]]}
        ], "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
       {"nodes": [
          {"op": "null", "name": "facc", "inputs": []},
          {"op": "null", "name": "fi", "inputs": []},
          {"op": "elemwise_add", "name": "sum", "inputs": [[0, 0, 0], [1, 0, 0]]},
          {"op": "_plus_scalar", "name": "next", "attrs": {"scalar": "1"}, "inputs": [[1, 0, 0]]}
        ], "arg_nodes": [0, 1], "heads": [[2, 0, 0], [3, 0, 0], [2, 0, 0]]}
     ]}
  ],
  "arg_nodes": [0, 1, 2],
  "heads": [[3, 0, 0], [3, 1, 0], [3, 2, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})";

// a > b ? a * b : a - b (elementwise over one-element arrays).
const char* kCond = R"({
  "nodes": [
    {"op": "null", "name": "a", "inputs": []},
    {"op": "null", "name": "b", "inputs": []},
    {"op": "_cond", "name": "c",
     "attrs": {"num_args": "5", "num_outputs": "1",
               "cond_input_locs": "[0, 1]", "then_input_locs": "[0, 1]", "else_input_locs": "[0, 1]"},
     "inputs": [[0, 0, 0], [1, 0, 0]],
     "subgraphs": [
       {"nodes": [{"op": "null", "name": "p", "inputs": []}, {"op": "null", "name": "q", "inputs": []},
                  {"op": "broadcast_greater", "name": "gt", "inputs": [[0, 0, 0], [1, 0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
       {"nodes": [{"op": "null", "name": "p", "inputs": []}, {"op": "null", "name": "q", "inputs": []},
                  {"op": "elemwise_mul", "name": "m", "inputs": [[0, 0, 0], [1, 0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
       {"nodes": [{"op": "null", "name": "p", "inputs": []}, {"op": "null", "name": "q", "inputs": []},
                  {"op": "elemwise_sub", "name": "d", "inputs": [[0, 0, 0], [1, 0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0]]}
     ]}
  ],
  "arg_nodes": [0, 1],
  "heads": [[2, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})";

weft_symbol_t* Load(const char* text) {
  weft_symbol_t* sym = nullptr;
  EXPECT_EQ(weft_symbol_from_json(text, &sym), WEFT_OK) << weft_get_last_error();
  return sym;
}

std::vector<weft_ndarray_t*> Arrays(weft_executor_t* ex, int kind) {
  int n = 0;
  weft_ndarray_t* const* hs = nullptr;
  EXPECT_EQ(weft_executor_arrays(ex, kind, &n, &hs), WEFT_OK) << weft_get_last_error();
  return std::vector<weft_ndarray_t*>(hs, hs + n);
}

std::vector<weft_ndarray_t*> Outputs(weft_executor_t* ex) {
  int n = 0;
  weft_ndarray_t* const* hs = nullptr;
  EXPECT_EQ(weft_executor_outputs(ex, &n, &hs), WEFT_OK) << weft_get_last_error();
  return std::vector<weft_ndarray_t*>(hs, hs + n);
}

void FreeAll(const std::vector<weft_ndarray_t*>& hs) {
  for (auto* h : hs) weft_ndarray_free(h);
}

std::vector<int64_t> ShapeOf(weft_ndarray_t* a) {
  int64_t dims[8];
  int ndim = 0;
  EXPECT_EQ(weft_ndarray_get_shape(a, dims, 8, &ndim), WEFT_OK);
  return std::vector<int64_t>(dims, dims + ndim);
}

std::vector<float> Read(weft_ndarray_t* a) {
  size_t n = 1;
  for (int64_t d : ShapeOf(a)) n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  EXPECT_EQ(weft_ndarray_copy_to_host(a, v.data(), v.size() * sizeof(float)), WEFT_OK) << weft_get_last_error();
  return v;
}

void Write(weft_ndarray_t* a, const std::vector<float>& v) {
  EXPECT_EQ(weft_ndarray_copy_from_host(a, v.data(), v.size() * sizeof(float)), WEFT_OK) << weft_get_last_error();
}

weft_executor_t* Bind(weft_symbol_t* sym, const char* shapes, const char* grad_req) {
  weft_executor_t* ex = nullptr;
  EXPECT_EQ(weft_executor_simple_bind(sym, weft_context_t{WEFT_DEVICE_CPU, 0}, nullptr, shapes, nullptr, grad_req, &ex),
            WEFT_OK)
      << weft_get_last_error();
  return ex;
}

TEST(CApiControlFlow, ForeachForwardAndBackward) {
  weft_symbol_t* sym = Load(kForeach);
  ASSERT_NE(sym, nullptr);
  const int T = 4, N = 2;
  weft_executor_t* ex = Bind(sym, R"({"seq": [4, 2], "s0": [2], "w": [2]})", "write");
  ASSERT_NE(ex, nullptr);
  auto args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  ASSERT_EQ(args.size(), 3u);
  std::vector<float> seq = {0.5f, -1.f, 2.f, 0.25f, -0.75f, 1.5f, 1.f, -2.f}, s0 = {0.1f, -0.2f}, w = {1.5f, -0.5f};
  Write(args[0], seq);
  Write(args[1], s0);
  Write(args[2], w);
  ASSERT_EQ(weft_executor_forward(ex, 1), WEFT_OK) << weft_get_last_error();
  auto outs = Outputs(ex);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(ShapeOf(outs[0]), (std::vector<int64_t>{T, N}));
  EXPECT_EQ(ShapeOf(outs[1]), (std::vector<int64_t>{N}));
  std::vector<float> got = Read(outs[0]), state = Read(outs[1]);
  std::vector<float> s = s0;
  for (int t = 0; t < T; ++t) {
    for (int k = 0; k < N; ++k) {
      s[k] = seq[t * N + k] * w[k] + s[k];
      EXPECT_NEAR(got[t * N + k], s[k], 1e-5) << "step " << t << " element " << k;
    }
  }
  for (int k = 0; k < N; ++k) EXPECT_NEAR(state[k], s[k], 1e-5);

  // L = sum of every step's output: dL/dw = sum_t cumsum_t(x), dL/ds0 = T,
  // dL/dx_t = w (T - t); the final state's gradient is zero.
  weft_ndarray_t* heads[2] = {nullptr, nullptr};
  int64_t out_shape[2] = {T, N}, state_shape[1] = {N};
  ASSERT_EQ(weft_ndarray_create(out_shape, 2, 0, weft_context_t{WEFT_DEVICE_CPU, 0}, &heads[0]), WEFT_OK);
  ASSERT_EQ(weft_ndarray_create(state_shape, 1, 0, weft_context_t{WEFT_DEVICE_CPU, 0}, &heads[1]), WEFT_OK);
  Write(heads[0], std::vector<float>(T * N, 1.f));
  Write(heads[1], std::vector<float>(N, 0.f));
  ASSERT_EQ(weft_executor_backward(ex, 2, heads), WEFT_OK) << weft_get_last_error();
  auto grads = Arrays(ex, WEFT_EXECUTOR_GRADIENTS);
  std::vector<float> gseq = Read(grads[0]), gs0 = Read(grads[1]), gw = Read(grads[2]);
  for (int k = 0; k < N; ++k) {
    float cum = 0, sum_cum = 0;
    for (int t = 0; t < T; ++t) {
      cum += seq[t * N + k];
      sum_cum += cum;
      EXPECT_NEAR(gseq[t * N + k], w[k] * static_cast<float>(T - t), 1e-5) << "dx step " << t;
    }
    EXPECT_NEAR(gw[k], sum_cum, 1e-4);
    EXPECT_NEAR(gs0[k], static_cast<float>(T), 1e-5);
  }
  FreeAll(grads);
  FreeAll(outs);
  FreeAll(args);
  weft_ndarray_free(heads[0]);
  weft_ndarray_free(heads[1]);
  weft_executor_free(ex);

  // Written back as MXNet's JSON, with the body in the node's "subgraphs", and read again.
  const char* text = nullptr;
  ASSERT_EQ(weft_symbol_to_json(sym, &text), WEFT_OK);
  std::string saved = text;
  EXPECT_NE(saved.find("\"subgraphs\""), std::string::npos);
  EXPECT_NE(saved.find("\"in_state_locs\": \"[2]\""), std::string::npos) << saved;
  weft_symbol_t* again = Load(saved.c_str());
  ASSERT_NE(again, nullptr);
  int same = 0;
  ASSERT_EQ(weft_symbol_same_graph(sym, again, &same), WEFT_OK);
  EXPECT_EQ(same, 1);
  weft_symbol_free(again);
  weft_symbol_free(sym);
}

TEST(CApiControlFlow, WhileLoopPadsItsOutputsToMaxIterations) {
  weft_symbol_t* sym = Load(kWhile);
  ASSERT_NE(sym, nullptr);
  weft_executor_t* ex = Bind(sym, R"({"i": [1], "acc": [1], "limit": [1]})", "null");
  ASSERT_NE(ex, nullptr);
  auto args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  for (float limit : {3.f, 0.f, 9.f}) {
    Write(args[0], {0.f});
    Write(args[1], {0.f});
    Write(args[2], {limit});
    ASSERT_EQ(weft_executor_forward(ex, 0), WEFT_OK) << weft_get_last_error();
    auto outs = Outputs(ex);
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_EQ(ShapeOf(outs[0]), (std::vector<int64_t>{5, 1}));
    std::vector<float> steps = Read(outs[0]);
    float i = 0, acc = 0;
    for (int t = 0; t < 5; ++t) {
      if (i < limit) {
        acc += i;
        i += 1;
        EXPECT_EQ(steps[t], acc) << "limit " << limit << " step " << t;
      } else {
        EXPECT_EQ(steps[t], 0.f) << "limit " << limit << " padding row " << t;
      }
    }
    EXPECT_EQ(Read(outs[1])[0], i);
    EXPECT_EQ(Read(outs[2])[0], acc);
    FreeAll(outs);
  }
  FreeAll(args);
  weft_executor_free(ex);
  weft_symbol_free(sym);
}

TEST(CApiControlFlow, CondRunsTheBranchItsConditionPicks) {
  weft_symbol_t* sym = Load(kCond);
  ASSERT_NE(sym, nullptr);
  weft_executor_t* ex = Bind(sym, R"({"a": [1], "b": [1]})", "null");
  ASSERT_NE(ex, nullptr);
  auto args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  for (auto ab : std::vector<std::pair<float, float>>{{3.f, 2.f}, {1.f, 4.f}}) {
    Write(args[0], {ab.first});
    Write(args[1], {ab.second});
    ASSERT_EQ(weft_executor_forward(ex, 0), WEFT_OK) << weft_get_last_error();
    auto outs = Outputs(ex);
    float want = ab.first > ab.second ? ab.first * ab.second : ab.first - ab.second;
    EXPECT_EQ(Read(outs[0])[0], want);
    FreeAll(outs);
  }
  FreeAll(args);
  weft_executor_free(ex);
  weft_symbol_free(sym);
}

TEST(CApiControlFlow, MalformedControlFlowNodesAreRefused) {
  weft_symbol_t* sym = nullptr;
  // No subgraphs at all.
  std::string text = kForeach;
  std::string no_sub = text.substr(0, text.find(",\n     \"subgraphs\"")) + "}\n  ],\n" +
                       text.substr(text.find("  \"arg_nodes\": [0, 1, 2]"));
  EXPECT_EQ(weft_symbol_from_json(no_sub.c_str(), &sym), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("needs its 'subgraphs'"), std::string::npos)
      << weft_get_last_error();
  // Locations that do not fit the body: caught when shapes are inferred.
  std::string bad = text;
  bad.replace(bad.find("\"remain_locs\": \"[1]\""), 20, "\"remain_locs\": \"[7]\"");
  sym = Load(bad.c_str());
  ASSERT_NE(sym, nullptr);
  weft_executor_t* ex = nullptr;
  EXPECT_NE(weft_executor_simple_bind(sym, weft_context_t{WEFT_DEVICE_CPU, 0}, nullptr,
                                      R"({"seq": [4, 2], "s0": [2], "w": [2]})", nullptr, "null", &ex),
            WEFT_OK);
  EXPECT_NE(std::string(weft_get_last_error()).find("remain_locs"), std::string::npos) << weft_get_last_error();
  weft_symbol_free(sym);
  // A state whose shape does not match what the body makes of it.
  sym = Load(kForeach);
  EXPECT_NE(weft_executor_simple_bind(sym, weft_context_t{WEFT_DEVICE_CPU, 0}, nullptr,
                                      R"({"seq": [4, 2], "s0": [3], "w": [2]})", nullptr, "null", &ex),
            WEFT_OK);
  EXPECT_NE(std::string(weft_get_last_error()).find("_foreach"), std::string::npos) << weft_get_last_error();
  weft_symbol_free(sym);
}

}  // namespace

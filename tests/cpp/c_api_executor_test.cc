// The executor functions of the C API beyond bind: group2ctx placement (bind_ex and
// simple_bind on several CPU contexts, compared bit for bit with one context), simple_bind,
// reshape and the array lists, with their error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "weft/c_api.h"

namespace {

// data -> fc1 -> relu1 (group dev1) -> fc2 (group dev2) -> out = 2 * fc2 (no group: it runs
// where fc2 runs). The variables fc*_weight/bias carry their layer's group.
const char* kNet = R"({
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "fc1_weight", "attrs": {"__ctx_group__": "dev1"}, "inputs": []},
    {"op": "null", "name": "fc1_bias", "attrs": {"__ctx_group__": "dev1"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc1", "attrs": {"num_hidden": "4", "__ctx_group__": "dev1"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "Activation", "name": "relu1", "attrs": {"act_type": "relu", "__ctx_group__": "dev1"},
     "inputs": [[3, 0, 0]]},
    {"op": "null", "name": "fc2_weight", "attrs": {"__ctx_group__": "dev2"}, "inputs": []},
    {"op": "null", "name": "fc2_bias", "attrs": {"__ctx_group__": "dev2"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc2", "attrs": {"num_hidden": "3", "__ctx_group__": "dev2"},
     "inputs": [[4, 0, 0], [5, 0, 0], [6, 0, 0]]},
    {"op": "_mul_scalar", "name": "out", "attrs": {"scalar": "2"}, "inputs": [[7, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 2, 5, 6],
  "heads": [[8, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})";

const char* kTwoGroups = R"({"dev1": [1, 1], "dev2": [1, 2]})";

struct Net {
  weft_symbol_t* sym = nullptr;
  Net() { EXPECT_EQ(weft_symbol_from_json(kNet, &sym), WEFT_OK) << weft_get_last_error(); }
  ~Net() { weft_symbol_free(sym); }
};

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

size_t Size(weft_ndarray_t* a) {
  int64_t dims[8];
  int ndim = 0;
  EXPECT_EQ(weft_ndarray_get_shape(a, dims, 8, &ndim), WEFT_OK);
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= static_cast<size_t>(dims[i]);
  return n;
}

std::vector<int64_t> ShapeOf(weft_ndarray_t* a) {
  int64_t dims[8];
  int ndim = 0;
  EXPECT_EQ(weft_ndarray_get_shape(a, dims, 8, &ndim), WEFT_OK);
  return std::vector<int64_t>(dims, dims + ndim);
}

std::vector<float> Read(weft_ndarray_t* a) {
  std::vector<float> v(Size(a));
  EXPECT_EQ(weft_ndarray_copy_to_host(a, v.data(), v.size() * sizeof(float)), WEFT_OK) << weft_get_last_error();
  return v;
}

// Argument i gets values seed + k / 7 - 1 (k its element index): signs vary, so ReLU cuts.
void Fill(weft_executor_t* ex) {
  auto args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<float> v(Size(args[i]));
    for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>(i) + static_cast<float>(k % 7) / 7.f - 0.5f;
    EXPECT_EQ(weft_ndarray_copy_from_host(args[i], v.data(), v.size() * sizeof(float)), WEFT_OK);
  }
  FreeAll(args);
}

weft_context_t ContextOf(weft_ndarray_t* a) {
  weft_context_t c{};
  EXPECT_EQ(weft_ndarray_get_context(a, &c), WEFT_OK);
  return c;
}

// The monitor's record: each value's name and the device id of its array.
void Record(const char* name, weft_ndarray_t* value, void* user) {
  weft_context_t c{};
  weft_ndarray_get_context(value, &c);
  (*static_cast<std::vector<std::pair<std::string, int>>*>(user)).emplace_back(name, c.device_id);
  weft_ndarray_free(value);
}

weft_executor_t* SimpleBind(weft_symbol_t* sym, const char* group2ctx, const char* grad_req) {
  weft_executor_t* ex = nullptr;
  EXPECT_EQ(weft_executor_simple_bind(sym, weft_context_t{WEFT_DEVICE_CPU, 0}, group2ctx, R"({"data": [2, 5]})",
                                      nullptr, grad_req, &ex),
            WEFT_OK)
      << weft_get_last_error();
  return ex;
}

// Outputs then gradients after `steps` forward/backward rounds.
std::vector<std::vector<float>> RunSteps(weft_executor_t* ex, int steps) {
  for (int i = 0; i < steps; ++i) {
    EXPECT_EQ(weft_executor_forward(ex, 1), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_executor_backward(ex, 0, nullptr), WEFT_OK) << weft_get_last_error();
  }
  std::vector<std::vector<float>> r;
  auto outs = Outputs(ex);
  for (auto* o : outs) r.push_back(Read(o));
  FreeAll(outs);
  auto grads = Arrays(ex, WEFT_EXECUTOR_GRADIENTS);
  for (auto* g : grads) r.push_back(Read(g));
  FreeAll(grads);
  return r;
}

TEST(CApiExecutor, Group2CtxPlacesArraysAndMatchesOneContextBitForBit) {
  Net net;
  for (const char* req : {"write", "add"}) {
    weft_executor_t* one = SimpleBind(net.sym, nullptr, req);
    weft_executor_t* two = SimpleBind(net.sym, kTwoGroups, req);
    ASSERT_NE(two, nullptr);
    // Arrays sit on their variable's group context; data has no group: the bind context.
    const int want_dev[] = {0, 1, 1, 2, 2};
    auto args = Arrays(two, WEFT_EXECUTOR_ARGUMENTS);
    auto grads = Arrays(two, WEFT_EXECUTOR_GRADIENTS);
    ASSERT_EQ(args.size(), 5u);
    for (size_t i = 0; i < args.size(); ++i) {
      EXPECT_EQ(ContextOf(args[i]).device_id, want_dev[i]) << "argument " << i;
      EXPECT_EQ(ContextOf(grads[i]).device_id, want_dev[i]) << "gradient " << i;
    }
    FreeAll(args);
    FreeAll(grads);
    Fill(one);
    Fill(two);
    // Every internal value is planned on the context of the node making it.
    std::vector<std::pair<std::string, int>> seen;
    ASSERT_EQ(weft_executor_set_monitor_callback(two, Record, &seen, 0), WEFT_OK);
    // Two rounds: with "add" the gradients accumulate on their own contexts.
    auto a = RunSteps(one, 2), b = RunSteps(two, 2);
    ASSERT_EQ(weft_executor_set_monitor_callback(two, nullptr, nullptr, 0), WEFT_OK);
    std::vector<std::pair<std::string, int>> want = {
        {"data_copy_to_cpu(1)_output", 1}, {"fc1_output", 1}, {"relu1_output", 1},
        {"relu1_output_copy_to_cpu(2)_output", 2}, {"fc2_output", 2}, {"out_output", 2}};
    for (const auto& w : want) EXPECT_NE(std::find(seen.begin(), seen.end(), w), seen.end()) << w.first;
    int backward_on_1 = 0;
    for (const auto& v : seen) backward_on_1 += v.first.rfind("fc1_backward", 0) == 0 && v.second == 1;
    EXPECT_GT(backward_on_1, 0);  // fc1's gradient runs where fc1 ran
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].size(), b[i].size());
      EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0) << "value " << i << " " << req;
    }
    // Not all zero: the comparison is not vacuous (the data gradient crosses back to cpu(0)).
    float sum = 0;
    for (float v : b[1]) sum += v * v;
    EXPECT_GT(sum, 0.f);
    auto outs = Outputs(two);
    EXPECT_EQ(ContextOf(outs[0]).device_id, 2);  // "out" runs where fc2 does
    FreeAll(outs);

    const char* text = nullptr;
    ASSERT_EQ(weft_executor_debug_str(two, &text), WEFT_OK);
    std::string dbg = text;
    EXPECT_NE(dbg.find("Placement:\n\tcpu(0): fc1_backward_output0_copy_to_cpu(0)\n"), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("\tcpu(1): data_copy_to_cpu(1) fc1 relu1 "), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("\tcpu(2): relu1_output_copy_to_cpu(2) fc2 out "), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("Op:_CrossDeviceCopy, Name=data_copy_to_cpu(1)"), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("relu1_output_copy_to_cpu(2): relu1_output from cpu(1) to cpu(2) (forward)"),
              std::string::npos) << dbg;
    // Backward: fc2's gradient for relu1 goes back to cpu(1), data's gradient to cpu(0).
    EXPECT_NE(dbg.find("from cpu(2) to cpu(1) (backward)"), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("from cpu(1) to cpu(0) (backward)"), std::string::npos) << dbg;
    EXPECT_NE(dbg.find("Total "), std::string::npos);
    ASSERT_EQ(weft_executor_debug_str(one, &text), WEFT_OK);
    EXPECT_EQ(std::string(text).find("Placement:"), std::string::npos);
    EXPECT_EQ(std::string(text).find("_CrossDeviceCopy"), std::string::npos);
    weft_executor_free(one);
    weft_executor_free(two);
  }
}

TEST(CApiExecutor, BindExTakesArraysOnSeveralContexts) {
  Net net;
  weft_executor_t* ref = SimpleBind(net.sym, nullptr, "write");
  Fill(ref);
  auto ref_args = Arrays(ref, WEFT_EXECUTOR_ARGUMENTS);
  // The same values bound by hand: each array on its group's context, gradients too.
  const int dev[] = {0, 1, 1, 2, 2};
  std::vector<weft_ndarray_t*> args, grads;
  for (size_t i = 0; i < ref_args.size(); ++i) {
    auto shape = ShapeOf(ref_args[i]);
    weft_ndarray_t *a = nullptr, *g = nullptr;
    weft_context_t c{WEFT_DEVICE_CPU, dev[i]};
    ASSERT_EQ(weft_ndarray_create(shape.data(), static_cast<int>(shape.size()), WEFT_DTYPE_FLOAT32, c, &a), WEFT_OK);
    ASSERT_EQ(weft_ndarray_create(shape.data(), static_cast<int>(shape.size()), WEFT_DTYPE_FLOAT32, c, &g), WEFT_OK);
    auto v = Read(ref_args[i]);
    ASSERT_EQ(weft_ndarray_copy_from_host(a, v.data(), v.size() * sizeof(float)), WEFT_OK);
    args.push_back(a);
    grads.push_back(g);
  }
  weft_executor_t* ex = nullptr;
  ASSERT_EQ(weft_executor_bind_ex(net.sym, weft_context_t{WEFT_DEVICE_CPU, 0}, kTwoGroups, 5, args.data(),
                                  grads.data(), nullptr, 0, nullptr, &ex),
            WEFT_OK)
      << weft_get_last_error();
  auto a = RunSteps(ref, 1), b = RunSteps(ex, 1);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0) << "value " << i;
  // Without group2ctx the groups are ignored: every node runs where its first input is,
  // here everything on cpu(0) but the layers reading parameters on cpu(1)/cpu(2).
  weft_executor_t* plain = nullptr;
  ASSERT_EQ(weft_executor_bind(net.sym, weft_context_t{WEFT_DEVICE_CPU, 0}, 5, args.data(), grads.data(), nullptr, 0,
                               nullptr, &plain),
            WEFT_OK)
      << weft_get_last_error();
  auto c = RunSteps(plain, 1);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(a[i].data(), c[i].data(), a[i].size() * sizeof(float)), 0) << "value " << i;
  weft_executor_free(plain);
  weft_executor_free(ex);
  weft_executor_free(ref);
  FreeAll(ref_args);
  FreeAll(args);
  FreeAll(grads);
}

TEST(CApiExecutor, PlacementErrors) {
  Net net;
  weft_executor_t* ex = nullptr;
  weft_context_t cpu{WEFT_DEVICE_CPU, 0};
  const char* shapes = R"({"data": [2, 5]})";
  // A group that group2ctx does not map is an error (as in MXNet), naming node and group.
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, R"({"dev1": [1, 1]})", shapes, nullptr, nullptr, &ex),
            WEFT_ERR_VALUE);
  std::string msg = weft_get_last_error();
  EXPECT_NE(msg.find("node 'fc2' is in context group 'dev2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("maps dev1"), std::string::npos) << msg;
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, "{\"dev1\": \"cpu\"}", shapes, nullptr, nullptr, &ex),
            WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("[device_type, device_id]"), std::string::npos);
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, "{dev1", shapes, nullptr, nullptr, &ex), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("not valid JSON"), std::string::npos);
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, R"({"dev1": [7, 0]})", shapes, nullptr, nullptr, &ex),
            WEFT_ERR_VALUE);
  EXPECT_EQ(ex, nullptr);
}

TEST(CApiExecutor, SimpleBindAllocatesAndChecksItsInputs) {
  Net net;
  weft_context_t cpu{WEFT_DEVICE_CPU, 0};
  weft_executor_t* ex = nullptr;
  // Requests by name: the others get none and no gradient array.
  ASSERT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"data": [2, 5]})", R"({"data": 1})",
                                      R"({"fc1_weight": "add"})", &ex),
            WEFT_OK)
      << weft_get_last_error();
  auto args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  auto grads = Arrays(ex, WEFT_EXECUTOR_GRADIENTS);
  auto aux = Arrays(ex, WEFT_EXECUTOR_AUXILIARY);
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(ShapeOf(args[1]), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(ShapeOf(args[3]), (std::vector<int64_t>{3, 4}));
  int dtype = -1;
  ASSERT_EQ(weft_ndarray_get_dtype(args[0], &dtype), WEFT_OK);
  EXPECT_EQ(dtype, WEFT_DTYPE_FLOAT64);
  ASSERT_EQ(weft_ndarray_get_dtype(args[1], &dtype), WEFT_OK);
  EXPECT_EQ(dtype, WEFT_DTYPE_FLOAT64);  // inferred from data's
  EXPECT_EQ(grads[0], nullptr);
  ASSERT_NE(grads[1], nullptr);
  EXPECT_EQ(grads[2], nullptr);
  EXPECT_TRUE(aux.empty());
  std::vector<double> w(20, 1.0);
  ASSERT_EQ(weft_ndarray_copy_to_host(args[1], w.data(), w.size() * sizeof(double)), WEFT_OK);
  EXPECT_EQ(w, std::vector<double>(20, 0.0));  // zeroed
  FreeAll(args);
  FreeAll(grads);
  weft_executor_free(ex);
  int n = 0;
  weft_ndarray_t* const* hs = nullptr;
  EXPECT_EQ(weft_executor_arrays(ex, 0, &n, &hs), WEFT_ERR_HANDLE);

  // Empty strings (all a Go caller can pass for NULL): no groups, float32, "write".
  ASSERT_EQ(weft_executor_simple_bind(net.sym, cpu, "", R"({"data": [2, 5]})", "", "", &ex), WEFT_OK)
      << weft_get_last_error();
  grads = Arrays(ex, WEFT_EXECUTOR_GRADIENTS);
  for (auto* g : grads) EXPECT_NE(g, nullptr);
  FreeAll(grads);
  weft_executor_free(ex);

  ex = nullptr;
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"date": [2, 5]})", nullptr, nullptr, &ex),
            WEFT_ERR_VALUE);
  std::string msg = weft_get_last_error();
  EXPECT_NE(msg.find("'date'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("its inputs are data, fc1_weight"), std::string::npos) << msg;
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, "{}", nullptr, nullptr, &ex), WEFT_ERR_SHAPE);
  msg = weft_get_last_error();
  EXPECT_NE(msg.find("do not determine every shape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data None"), std::string::npos) << msg;
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"data": [2, -1]})", nullptr, nullptr, &ex),
            WEFT_ERR_VALUE);
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"data": [2, 5]})", nullptr, "often", &ex),
            WEFT_ERR_VALUE);
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"data": [2, 5]})", nullptr, R"({"fc9": "add"})",
                                      &ex),
            WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("'fc9'"), std::string::npos);
  EXPECT_EQ(weft_executor_simple_bind(net.sym, cpu, nullptr, R"({"data": [2, 5]})", R"({"data": 99})", nullptr, &ex),
            WEFT_ERR_TYPE);
  EXPECT_EQ(ex, nullptr);
}

TEST(CApiExecutor, ReshapeSharesShrinksAndGrowsOnlyWhenAllowed) {
  Net net;
  weft_executor_t* ex = SimpleBind(net.sym, kTwoGroups, "write");
  Fill(ex);
  weft_executor_t* small = nullptr;
  ASSERT_EQ(weft_executor_reshape(ex, R"({"data": [1, 5]})", 0, 0, &small), WEFT_OK) << weft_get_last_error();
  auto old_args = Arrays(ex, WEFT_EXECUTOR_ARGUMENTS);
  auto new_args = Arrays(small, WEFT_EXECUTOR_ARGUMENTS);
  EXPECT_EQ(ShapeOf(new_args[0]), (std::vector<int64_t>{1, 5}));
  // The smaller data is a view of the first elements of the old one, on the same context.
  auto big = Read(old_args[0]), view = Read(new_args[0]);
  EXPECT_EQ(std::vector<float>(big.begin(), big.begin() + 5), view);
  EXPECT_EQ(ContextOf(new_args[1]).device_id, 1);
  // Unchanged arrays are shared: a write through the old executor shows in the new one.
  std::vector<float> w(20, 0.125f);
  ASSERT_EQ(weft_ndarray_copy_from_host(old_args[1], w.data(), w.size() * sizeof(float)), WEFT_OK);
  EXPECT_EQ(Read(new_args[1]), w);
  // It runs, with the placement of the old one: row 0 of its output is row 0 of the old.
  ASSERT_EQ(weft_executor_forward(ex, 0), WEFT_OK);
  auto out_old = Outputs(ex);
  auto expect = Read(out_old[0]);
  ASSERT_EQ(weft_executor_forward(small, 0), WEFT_OK);
  auto out_new = Outputs(small);
  auto got = Read(out_new[0]);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(std::memcmp(got.data(), expect.data(), 3 * sizeof(float)), 0);
  EXPECT_EQ(ContextOf(out_new[0]).device_id, 2);
  FreeAll(out_old);
  FreeAll(out_new);

  weft_executor_t* other = nullptr;
  EXPECT_EQ(weft_executor_reshape(ex, R"({"data": [4, 5]})", 0, 0, &other), WEFT_ERR_SHAPE);
  std::string msg = weft_get_last_error();
  EXPECT_NE(msg.find("'data' grows from (2,5) to (4,5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("allow_up_sizing"), std::string::npos) << msg;
  ASSERT_EQ(weft_executor_reshape(ex, R"({"data": [4, 5]})", 0, 1, &other), WEFT_OK) << weft_get_last_error();
  auto grown = Arrays(other, WEFT_EXECUTOR_ARGUMENTS);
  EXPECT_EQ(ShapeOf(grown[0]), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(ContextOf(grown[0]).device_id, 0);
  FreeAll(grown);
  weft_executor_free(other);
  // fc1_weight follows data's second dimension: changing it needs partial_shaping.
  EXPECT_EQ(weft_executor_reshape(ex, R"({"data": [2, 3]})", 0, 0, &other), WEFT_ERR_SHAPE);
  msg = weft_get_last_error();
  EXPECT_NE(msg.find("'fc1_weight' would change shape from (4,5) to (4,3)"), std::string::npos) << msg;
  ASSERT_EQ(weft_executor_reshape(ex, R"({"data": [2, 3]})", 1, 0, &other), WEFT_OK) << weft_get_last_error();
  weft_executor_free(other);
  EXPECT_EQ(weft_executor_reshape(ex, R"({"label": [2]})", 1, 1, &other), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("'label'"), std::string::npos);
  EXPECT_EQ(weft_executor_reshape(ex, "[1]", 1, 1, &other), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_executor_reshape(nullptr, R"({"data": [1, 5]})", 1, 1, &other), WEFT_ERR_HANDLE);
  FreeAll(old_args);
  FreeAll(new_args);
  weft_executor_free(small);
  weft_executor_free(ex);
}

}  // namespace

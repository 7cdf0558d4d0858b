// The symbol functions of the C API: handles are checked, strings and JSON come back as
// documented, errors leave a message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "weft/c_api.h"

namespace {

weft_symbol_t* Var(const char* name) {
  weft_symbol_t* s = nullptr;
  EXPECT_EQ(weft_symbol_create_variable(name, &s), WEFT_OK);
  return s;
}

TEST(CApiSymbol, BuildListInferAndRoundTrip) {
  const weft_op_t* add = nullptr;
  ASSERT_EQ(weft_op_get("elemwise_add", &add), WEFT_OK);
  weft_symbol_t* a = Var("a");
  weft_symbol_t* b = Var("b");
  weft_symbol_t* sum = nullptr;
  ASSERT_EQ(weft_symbol_create_atomic(add, 0, nullptr, nullptr, &sum), WEFT_OK);
  weft_symbol_t* args[2] = {a, b};
  ASSERT_EQ(weft_symbol_compose(sum, "s", 2, nullptr, args), WEFT_OK);
  // The composed symbol keeps its inputs after the caller frees its handles.
  ASSERT_EQ(weft_symbol_free(a), WEFT_OK);
  ASSERT_EQ(weft_symbol_free(b), WEFT_OK);
  const char* text = nullptr;
  ASSERT_EQ(weft_symbol_list(sum, WEFT_SYMBOL_ARGUMENTS, &text), WEFT_OK);
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(R"(["a", "b"])"));
  ASSERT_EQ(weft_symbol_list(sum, WEFT_SYMBOL_OUTPUTS, &text), WEFT_OK);
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(R"(["s_output"])"));
  ASSERT_EQ(weft_symbol_infer_shape(sum, R"({"a": [2, 3]})", &text), WEFT_OK);
  auto r = nlohmann::json::parse(text);
  EXPECT_EQ(r["arguments"], nlohmann::json::parse("[[2, 3], [2, 3]]"));
  EXPECT_EQ(r["outputs"], nlohmann::json::parse("[[2, 3]]"));
  EXPECT_TRUE(r["complete"].get<bool>());
  ASSERT_EQ(weft_symbol_infer_shape(sum, "{}", &text), WEFT_OK);
  EXPECT_TRUE(nlohmann::json::parse(text)["arguments"][0].is_null());
  ASSERT_EQ(weft_symbol_infer_type(sum, R"({"b": 1})", &text), WEFT_OK);
  EXPECT_EQ(nlohmann::json::parse(text)["outputs"], nlohmann::json::parse("[1]"));

  ASSERT_EQ(weft_symbol_to_json(sum, &text), WEFT_OK);
  std::string json = text;
  weft_symbol_t* loaded = nullptr;
  ASSERT_EQ(weft_symbol_from_json(json.c_str(), &loaded), WEFT_OK);
  ASSERT_EQ(weft_symbol_to_json(loaded, &text), WEFT_OK);
  EXPECT_EQ(json, text);

  int found = -1;
  ASSERT_EQ(weft_symbol_set_attr(loaded, "__mark__", "7"), WEFT_OK);
  ASSERT_EQ(weft_symbol_get_attr(loaded, "__mark__", &text, &found), WEFT_OK);
  EXPECT_EQ(found, 1);
  EXPECT_STREQ(text, "7");
  ASSERT_EQ(weft_symbol_get_attr(sum, "__mark__", &text, &found), WEFT_OK);
  EXPECT_EQ(found, 0);
  ASSERT_EQ(weft_symbol_get_name(loaded, &text), WEFT_OK);
  EXPECT_STREQ(text, "s");
  EXPECT_EQ(weft_symbol_free(loaded), WEFT_OK);
  EXPECT_EQ(weft_symbol_free(sum), WEFT_OK);
}

TEST(CApiSymbol, BadHandlesAndInputsAreErrors) {
  weft_symbol_t* s = Var("x");
  ASSERT_EQ(weft_symbol_free(s), WEFT_OK);
  const char* text = nullptr;
  EXPECT_EQ(weft_symbol_list(s, WEFT_SYMBOL_ARGUMENTS, &text), WEFT_ERR_HANDLE);
  EXPECT_NE(std::string(weft_get_last_error()).find("weft_symbol_t"), std::string::npos);
  weft_ndarray_t* arr = nullptr;
  int64_t shape[1] = {1};
  ASSERT_EQ(weft_ndarray_create(shape, 1, 0, weft_context_t{WEFT_DEVICE_CPU, 0}, &arr), WEFT_OK);
  EXPECT_EQ(weft_symbol_list(reinterpret_cast<weft_symbol_t*>(arr), 0, &text), WEFT_ERR_HANDLE);
  weft_ndarray_free(arr);
  EXPECT_EQ(weft_symbol_free(nullptr), WEFT_OK);
  weft_symbol_t* v = Var("v");
  EXPECT_EQ(weft_symbol_list(v, 9, &text), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_symbol_infer_shape(v, "{oops", &text), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("not valid JSON"), std::string::npos);
  EXPECT_EQ(weft_symbol_infer_shape(v, R"({"v": "wide"})", &text), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_symbol_from_json("[]", &s), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_symbol_load_file("/nonexistent/x.json", &s), WEFT_ERR_IO);
  EXPECT_EQ(weft_symbol_create_variable(nullptr, &s), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_symbol_create_variable("", &s), WEFT_ERR_VALUE);
  weft_symbol_free(v);
}

}  // namespace

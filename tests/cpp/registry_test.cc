#include <gtest/gtest.h>

#include <algorithm>

#include "core/op/registry.h"

namespace weft {
namespace {

using FTestValue = int;

WEFT_REGISTER_OP(_test_registry_op)
    .Describe("An operator that exists only in this test.")
    .SetNumInputs(2)
    .AddArgument("lhs", "NDArray-or-Symbol", "first")
    .AddArgument("rhs", "NDArray-or-Symbol", "second")
    .AddAlias("_test_registry_alias")
    .Include("_TestGroup")
    .SetAttr<FTestValue>("FTestOwn", 7)
    .SetAttr<FTestValue>("FTestShared", 2);

// Registered after the operator that includes it, as can happen across files.
WEFT_REGISTER_OP_GROUP(_TestGroup)
    .SetAttr<FTestValue>("FTestShared", 1)
    .SetAttr<FTestValue>("FTestGroupOnly", 3);

TEST(Registry, LookupByNameAndAlias) {
  const Op* op = Op::Get("_test_registry_op");
  EXPECT_EQ(Op::Get("_test_registry_alias"), op);
  EXPECT_EQ(op->NumInputs(NodeAttrs()), 2);
  ASSERT_EQ(op->arguments.size(), 2u);
  EXPECT_EQ(op->arguments[1].name, "rhs");
  EXPECT_EQ(Op::Find("no_such_op"), nullptr);
  try {
    Op::Get("no_such_op");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("no_such_op"), std::string::npos);
  }
  auto names = Op::ListNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "_test_registry_op"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "_test_registry_alias"), names.end());
}

TEST(Registry, GroupsYieldToTheOperatorsOwnAttributes) {
  const Op* op = Op::Get("_test_registry_op");
  EXPECT_EQ(Op::GetAttr<FTestValue>("FTestOwn")[op], 7);
  EXPECT_EQ(Op::GetAttr<FTestValue>("FTestShared")[op], 2);
  EXPECT_EQ(Op::GetAttr<FTestValue>("FTestGroupOnly")[op], 3);
  EXPECT_FALSE(Op::GetAttr<FTestValue>("FTestMissing").Contains(op));
  EXPECT_EQ(Op::GetAttr<FTestValue>("FTestMissing").Get(op, 42), 42);
  EXPECT_THROW(Op::GetAttr<FTestValue>("FTestMissing")[op], Error);
}

}  // namespace
}  // namespace weft

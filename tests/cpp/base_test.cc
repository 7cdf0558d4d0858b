#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/base/context.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/param.h"
#include "core/base/shape.h"

namespace weft {
namespace {

TEST(Shape, ParseAndFormat) {
  EXPECT_EQ(Shape::Parse("(2, 3)"), Shape({2, 3}));
  EXPECT_EQ(Shape::Parse("[4,5,6]"), Shape({4, 5, 6}));
  EXPECT_EQ(Shape::Parse("7"), Shape({7}));
  EXPECT_EQ(Shape::Parse("(3L, 2L)"), Shape({3, 2}));
  EXPECT_EQ(Shape::Parse("()"), Shape::Scalar());
  EXPECT_EQ(Shape::Parse("(None, 3)"), Shape({-1, 3}));
  EXPECT_FALSE(Shape::Parse("None").known_ndim());
  EXPECT_EQ(Shape({2, 3}).ToString(), "(2,3)");
  EXPECT_EQ(Shape({5}).ToString(), "(5,)");
  EXPECT_EQ(Shape::Scalar().ToString(), "()");
  EXPECT_THROW(Shape::Parse("(2, x)"), Error);
  EXPECT_THROW(Shape::Parse("(2, 3"), Error);
}

TEST(Shape, ManyDimsAndSizes) {
  Shape big({1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(big.ndim(), 8);
  EXPECT_EQ(big.Size(), 40320);
  Shape copy = big;
  copy[7] = 1;
  EXPECT_EQ(copy.Size(), 5040);
  EXPECT_EQ(big[7], 8);
  EXPECT_EQ(Shape({2, 0, 3}).Size(), 0);
  EXPECT_FALSE(Shape({2, -1}).is_known());
  EXPECT_EQ(ContiguousStrides(Shape({2, 3, 4})), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(NormalizeAxis(-1, 3, "test"), 2);
  EXPECT_THROW(NormalizeAxis(3, 3, "test"), Error);
}

TEST(DType, CodesMatchMXNet) {
  EXPECT_EQ(static_cast<int>(DType::kFloat32), 0);
  EXPECT_EQ(static_cast<int>(DType::kFloat16), 2);
  EXPECT_EQ(static_cast<int>(DType::kBool), 7);
  EXPECT_EQ(static_cast<int>(DType::kBfloat16), 12);
  EXPECT_EQ(ParseDType("float16"), DType::kFloat16);
  EXPECT_EQ(ParseDType("6"), DType::kInt64);
  EXPECT_EQ(ParseDType("<class 'numpy.int8'>"), DType::kInt8);
  EXPECT_EQ(DTypeSize(DType::kBfloat16), 2u);
  try {
    ParseDType("complex64", "Operator 'cast': parameter 'dtype'");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos);
  }
}

TEST(Half, Float16RoundTripsAndRounds) {
  // Exactly representable values survive; the rest round to nearest even.
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(static_cast<float>(float16(f)), f) << f;
  }
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float16(1.0f + 1.0f / 2048).bits, 0x3c00);  // halfway, ties to even
  EXPECT_EQ(float16(1.0f + 3.0f / 2048).bits, 0x3c02);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(static_cast<float>(float16(1e9f))));
  // Every half bit pattern converts to float and back unchanged (NaNs stay NaN).
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = float16::ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float16::FromFloat(f), b);
  }
}

TEST(Half, BFloat16) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16(-3.5f)), -3.5f);
  EXPECT_EQ(bfloat16(1.00390625f).bits, 0x3f80);  // halfway, ties to even
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Context, Names) {
  EXPECT_EQ(Context::CPU().ToString(), "cpu(0)");
  EXPECT_EQ(Context::GPU(1).ToString(), "gpu(1)");
  EXPECT_EQ(Context::CPUPinned(0).ToString(), "cpu_pinned(0)");
  EXPECT_TRUE(Context::CPUPinned().is_host());
}

struct TestParam {
  int num;
  double scale;
  bool flag;
  std::string mode;
  Shape kernel;
  std::optional<int> axis;
  DType dtype;
};

WEFT_PARAM_SCHEMA(TestParam, s) {
  s.Field("num", &TestParam::num).Range(1, 100).Describe("A count");
  s.Field("scale", &TestParam::scale).Default(1.5).Describe("A factor");
  s.Field("flag", &TestParam::flag).Default(false);
  s.Field("mode", &TestParam::mode).Default("max").Choices({"max", "avg"});
  s.Field("kernel", &TestParam::kernel).Default(Shape::Scalar());
  s.Field("axis", &TestParam::axis).Default(std::nullopt);
  s.Field("dtype", &TestParam::dtype).Default(DType::kFloat32);
}

std::string ErrorOf(const KwArgs& kw) {
  try {
    SchemaOf<TestParam>().Parse("TestOp", kw);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Param, ParsesTypedValuesAndDefaults) {
  auto p = SchemaOf<TestParam>().Parse(
      "TestOp", {{"num", "3"}, {"flag", "True"}, {"kernel", "(3, 3)"}, {"axis", "-1"}, {"__lr_mult__", "2"}});
  EXPECT_EQ(p->num, 3);
  EXPECT_EQ(p->scale, 1.5);
  EXPECT_TRUE(p->flag);
  EXPECT_EQ(p->mode, "max");
  EXPECT_EQ(p->kernel, Shape({3, 3}));
  EXPECT_EQ(p->axis, -1);
  EXPECT_EQ(p->dtype, DType::kFloat32);
  auto q = SchemaOf<TestParam>().Parse("TestOp", {{"num", "1"}, {"axis", "None"}, {"dtype", "float16"}, {"flag", "0"}});
  EXPECT_FALSE(q->axis.has_value());
  EXPECT_EQ(q->dtype, DType::kFloat16);
  EXPECT_FALSE(q->flag);
}

TEST(Param, ErrorsNameOpKeyExpectedAndGot) {
  std::string e = ErrorOf({{"num", "3"}, {"bogus", "1"}});
  EXPECT_NE(e.find("TestOp"), std::string::npos) << e;
  EXPECT_NE(e.find("bogus"), std::string::npos) << e;
  EXPECT_NE(e.find("num, scale"), std::string::npos) << e;
  e = ErrorOf({{"num", "abc"}});
  EXPECT_NE(e.find("'num'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected an integer"), std::string::npos) << e;
  EXPECT_NE(e.find("abc"), std::string::npos) << e;
  e = ErrorOf({{"num", "500"}});
  EXPECT_NE(e.find("[1, 100]"), std::string::npos) << e;
  e = ErrorOf({{"num", "2"}, {"mode", "median"}});
  EXPECT_NE(e.find("'max', 'avg'"), std::string::npos) << e;
  EXPECT_NE(e.find("median"), std::string::npos) << e;
  e = ErrorOf({});
  EXPECT_NE(e.find("required parameter 'num'"), std::string::npos) << e;
  e = ErrorOf({{"num", "2"}, {"flag", "yes"}});
  EXPECT_NE(e.find("boolean"), std::string::npos) << e;
}

TEST(Param, DescribesFields) {
  auto info = SchemaOf<TestParam>().Info();
  ASSERT_EQ(info.size(), 7u);
  EXPECT_EQ(info[0].name, "num");
  EXPECT_TRUE(info[0].required);
  EXPECT_EQ(info[0].doc, "A count");
  EXPECT_NE(info[0].type.find("int"), std::string::npos);
  EXPECT_EQ(info[1].default_value, "1.5");
  EXPECT_EQ(info[3].type, "{'max', 'avg'}");
  EXPECT_EQ(info[5].default_value, "None");
}

}  // namespace
}  // namespace weft

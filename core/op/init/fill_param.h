// The parameters of `_full` (fill.cc), shared with its GPU version (fill_gpu.cu).
#pragma once

#include <string>

#include "core/base/param.h"

namespace weft {
namespace op {

struct FullParam {
  Shape shape = Shape::Unknown();  // MXNet's default: None, the shape is left to the graph
  std::string ctx;
  DType dtype = DType::kFloat32;
  double value = 0;
};

WEFT_PARAM_SCHEMA(FullParam, s) {
  s.Field("shape", &FullParam::shape).Default(Shape::Unknown()).Describe("The shape of the output.");
  s.Field("ctx", &FullParam::ctx).Default("").Describe("The context of the output (set by the front end).");
  s.Field("dtype", &FullParam::dtype).Default(DType::kFloat32).Describe("The dtype of the output.");
  s.Field("value", &FullParam::value).Describe("The value to fill with.");
}

}  // namespace op
}  // namespace weft

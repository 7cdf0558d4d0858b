// The parameters of the per-element samplers (_sample_uniform, _sample_normal, ...), shared
// by their CPU (multisample.cc) and GPU (multisample_gpu.cu) code.
#pragma once

#include <optional>

#include "core/base/dtype.h"
#include "core/base/shape.h"

namespace weft {
namespace op {

struct MultiSampleParam {
  Shape shape = Shape::Scalar();
  std::optional<DType> dtype;
};

}  // namespace op
}  // namespace weft

// Embedding's parameters, shared by its CPU (embedding.cc) and GPU (embedding_gpu.cu) code.
#pragma once

#include "core/base/dtype.h"

namespace weft {
namespace op {

struct EmbeddingParam {
  int input_dim = 0;
  int output_dim = 0;
  DType dtype = DType::kFloat32;
  bool sparse_grad = false;
};

}  // namespace op
}  // namespace weft

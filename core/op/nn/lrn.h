// The parameters of LRN and L2Normalization, shared by their CPU (lrn.cc) and GPU (lrn_gpu.cu) code.
#pragma once

#include <string>

namespace weft {
namespace op {

struct LRNParam {
  double alpha = 1e-4;
  double beta = 0.75;
  double knorm = 2;
  int nsize = 0;
};

struct L2NormalizationParam {
  double eps = 1e-10;
  std::string mode = "instance";
};

}  // namespace op
}  // namespace weft

// A chain of pointwise operators fused into one node by the executor: the program says, for
// each step, which operator function runs on which values; the kernel runs the whole chain
// tile by tile, so intermediate values live in cache-sized buffers instead of memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/op/registry.h"

namespace weft {
namespace op {

struct FusedProgram {
  // A value of the program: one of the node's inputs, or the result of an earlier step.
  struct Ref {
    bool input = true;
    int index = 0;
  };
  struct Step {
    PointwiseFn fn;
    Ref a, b;
    bool binary = false;
    double scalar = 0;
  };
  int num_inputs = 0;
  std::vector<Step> steps;  // the last step's result is the output
};

// The attributes of a "_fused_pointwise" node running `program`; `name` names the node.
NodeAttrs MakeFusedAttrs(std::shared_ptr<const FusedProgram> program, const std::string& name);

}  // namespace op
}  // namespace weft

// The ParallelFor grain of the loops over planes or rows in the MXNet 1.9 layer and image
// operators (core/op/nn, core/op/image).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/op/op_util.h"

namespace weft {
namespace op {

// Items (planes, rows) per thread chunk when each touches `work` elements: a loop under
// kElemGrain elements in all stays on one thread, as the elementwise ones do.
inline int64_t ItemGrain(int64_t work) { return std::max<int64_t>(1, kElemGrain / std::max<int64_t>(work, 1)); }

}  // namespace op
}  // namespace weft

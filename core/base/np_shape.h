// MXNet's numpy-shape mode (mx.util.np_shape): 0 off (the legacy mode, where a 0 in a shape
// means an unknown size), 1 on, 2 on for the whole process. Process-wide, as MXNet's front
// end keeps it (one program sets it for all its threads); the C API sets it
// (weft_set_np_shape), NDArray files and the operators whose legacy behaviour differs read it.
#pragma once

#include <atomic>

namespace weft {

inline std::atomic<int>& NpShapeMode() {
  static std::atomic<int> mode{0};
  return mode;
}

}  // namespace weft

#include "core/engine/opr_block.h"

#include <algorithm>

#include "core/base/error.h"

namespace weft {
namespace engine {

uint32_t BuildSlots(const VarHandle* reads, size_t num_reads, const VarHandle* writes, size_t num_writes,
                    VarSlot* out) {
  uint32_t n = 0;
  auto add = [&](VarHandle v, bool write, const char* list) {
    WEFT_CHECK(v != nullptr, kValue, "engine: expected a variable in the ", list, " list, got a null handle");
    out[n] = VarSlot();
    out[n].var = static_cast<ThreadedVar*>(v);
    out[n].write = write;
    out[n].read = !write;
    ++n;
  };
  for (size_t i = 0; i < num_reads; ++i) add(reads[i], false, "read");
  for (size_t i = 0; i < num_writes; ++i) add(writes[i], true, "write");
  auto by_var = [](const VarSlot& a, const VarSlot& b) { return a.var < b.var; };
  if (n <= 16) {
    for (uint32_t i = 1; i < n; ++i) {
      VarSlot s = out[i];
      uint32_t j = i;
      for (; j > 0 && by_var(s, out[j - 1]); --j) out[j] = out[j - 1];
      out[j] = s;
    }
  } else {
    std::sort(out, out + n, by_var);
  }
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (m > 0 && out[m - 1].var == out[i].var) {
      out[m - 1].write |= out[i].write;
      out[m - 1].read |= out[i].read;
    } else {
      out[m++] = out[i];
    }
  }
  return m;
}

}  // namespace engine
}  // namespace weft

// Symbol JSON (graph/json.h): loading, then saving and inferring shapes of what loaded.
#include "core/graph/infer.h"
#include "core/graph/json.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  weft::fuzz::Refusable([&] {
    weft::graph::Symbol s = weft::graph::LoadJSON(text, "fuzz");
    weft::graph::Symbol again = weft::graph::LoadJSON(weft::graph::SaveJSON(s), "fuzz round trip");
    (void)again;
  });
  return 0;
}

// MXNet's NDArray list format (`.params`, nd.save) and the single-array raw form.
#include "core/ndarray/serialize.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool np_shape : {false, true}) {
    weft::NDArrayLoadOptions opts;
    opts.np_shape = np_shape;
    weft::fuzz::Refusable([&] {
      weft::NDArrayFile f = weft::LoadNDArrayList(data, size, "fuzz", opts);
      // What loads saves and loads back (0-d arrays of V3 records are refused by the saver).
      std::string bytes = weft::SaveNDArrayList(f.arrays, f.names);
      weft::LoadNDArrayList(bytes.data(), bytes.size(), "round trip", opts);
    });
    weft::fuzz::Refusable([&] { weft::LoadNDArrayRaw(data, size, "fuzz", opts); });
  }
  return 0;
}

// CSVIter and LibSVMIter over a file of the input's bytes (the first byte picks which),
// read to the end of one epoch.
#include "core/io/data_iter.h"
#include "fuzz_util.h"

namespace {

void Drain(const std::string& name, const weft::KwArgs& kwargs) {
  weft::fuzz::Refusable([&] {
    std::unique_ptr<weft::io::DataIter> it = weft::io::CreateDataIter(name, kwargs);
    for (int i = 0; i < 1000 && it->Next(); ++i) {
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  weft::fuzz::TempFile file(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    Drain("CSVIter", {{"data_csv", file.path()}, {"data_shape", "(3,)"}, {"batch_size", "2"},
                      {"prefetch_buffer", "0"}});
  } else {
    Drain("LibSVMIter", {{"data_libsvm", file.path()}, {"data_shape", "(8,)"}, {"batch_size", "2"},
                         {"prefetch_buffer", "0"}});
  }
  return 0;
}

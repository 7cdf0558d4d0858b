// MNISTIter's IDX files, plain or gzip: the input is split into an image file and a label
// file at the offset its first two bytes give.
#include "core/io/data_iter.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t split = (size_t{data[0]} << 8 | data[1]) % (size - 1);
  const uint8_t* rest = data + 2;
  size_t left = size - 2;
  split = split > left ? left : split;
  weft::fuzz::TempFile images(rest, split), labels(rest + split, left - split);
  weft::fuzz::Refusable([&] {
    auto it = weft::io::CreateDataIter("MNISTIter", {{"image", images.path()}, {"label", labels.path()},
                                                    {"batch_size", "1"}, {"silent", "1"},
                                                    {"prefetch_buffer", "0"}});
    for (int i = 0; i < 100 && it->Next(); ++i) {
    }
  });
  return 0;
}

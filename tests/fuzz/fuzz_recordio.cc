// RecordIO files (every record, and each one unpacked as an image record) and `.idx` index
// files, from one input: the first byte picks which.
#include "core/io/recordio.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  weft::fuzz::TempFile file(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    weft::fuzz::Refusable([&] {
      weft::io::RecordIOReader reader(file.path());
      std::string record;
      for (int i = 0; i < 4096 && reader.Next(&record); ++i)
        weft::fuzz::Refusable([&] { weft::io::UnpackImageRecord(record.data(), record.size(), "fuzz"); });
    });
  } else {
    weft::fuzz::Refusable([&] { weft::io::ReadRecordIndex(file.path()); });
  }
  return 0;
}

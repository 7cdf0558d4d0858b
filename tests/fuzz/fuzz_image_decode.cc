// JPEG and PNG decoding in every mode (colour, grey, as stored; RGB and BGR), with and
// without the size hint that lets libjpeg scale down.
#include "core/io/image_codec.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (int flag : {-1, 0, 1}) {
    weft::fuzz::Refusable([&] { weft::io::DecodeImage(data, size, flag, flag != 0, 0, 0); });
  }
  weft::fuzz::Refusable([&] { weft::io::DecodeImage(data, size, 1, true, 8, 8); });
  weft::fuzz::Refusable([&] {
    int h = 0, w = 0, c = 0;
    weft::io::PeekImageSize(data, size, &h, &w, &c);
  });
  return 0;
}

// RecordIO files and image decoding/encoding/resizing (the weft_recordio_* and weft_image_*
// sections of c_api.h).
#include <memory>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/io/image_codec.h"
#include "core/io/recordio.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// One open file, either read or written.
struct RecordIOObj {
  std::unique_ptr<io::RecordIOReader> reader;
  std::unique_ptr<io::RecordIOWriter> writer;
};
using RecordIOTable = HandleTable<RecordIOObj, HandleKind::kRecordIO>;

RecordIOObj& RecRef(const weft_recordio_t* h, const char* arg, const char* fn) {
  return RecordIOTable::Get().Ref(h, arg, fn);
}
#define WEFT_REC(h) RecRef((h), #h, __func__)

weft_bytes_t* NewBytes(std::string bytes) {
  return reinterpret_cast<weft_bytes_t*>(BytesTable::Get().Create(std::move(bytes)));
}

void CheckPath(const char* path, const char* fn) {
  WEFT_CHECK(path != nullptr, kValue, fn, ": path is NULL");
  WEFT_CHECK(path[0] != '\0', kValue, fn, ": path is empty");
}

// The HWC (or HW) uint8 pixels of an array, copied to the host.
io::Image ImageOf(const NDArray& arr, const char* fn) {
  WEFT_CHECK(arr.dtype() == DType::kUint8, kType, fn, ": expected a uint8 image, got ", DTypeName(arr.dtype()));
  const Shape& s = arr.shape();
  WEFT_CHECK(s.ndim() == 2 || s.ndim() == 3, kShape, fn, ": expected an image of shape (H, W) or (H, W, C), got ",
             s.ndim(), " dimensions");
  io::Image im;
  im.height = static_cast<int>(s[0]);
  im.width = static_cast<int>(s[1]);
  im.channels = s.ndim() == 3 ? static_cast<int>(s[2]) : 1;
  WEFT_CHECK(im.height > 0 && im.width > 0, kShape, fn, ": image is empty (", im.height, "x", im.width, ")");
  WEFT_CHECK(im.channels >= 1 && im.channels <= 4, kShape, fn, ": expected 1 to 4 channels, got ", im.channels);
  im.data.resize(static_cast<size_t>(arr.Size()));
  arr.SyncCopyToCPU(im.data.data(), im.data.size());
  return im;
}

weft_ndarray_t* NewImageArray(const io::Image& im, bool drop_channel_axis) {
  Shape shape = drop_channel_axis ? Shape{im.height, im.width} : Shape{im.height, im.width, im.channels};
  NDArray arr(shape, Context::CPU(), DType::kUint8);
  arr.SyncCopyFromCPU(im.data.data(), im.data.size());
  return NewArrHandle(std::move(arr));
}

}  // namespace

extern "C" {

weft_status_t weft_recordio_writer_create(const char* path, weft_recordio_t** out) {
  WEFT_API_BEGIN
  CheckPath(path, __func__);
  WEFT_OUT(out);
  RecordIOObj obj;
  obj.writer = std::make_unique<io::RecordIOWriter>(path);
  *out = reinterpret_cast<weft_recordio_t*>(RecordIOTable::Get().Create(std::move(obj)));
  WEFT_API_END
}

weft_status_t weft_recordio_reader_create(const char* path, weft_recordio_t** out) {
  WEFT_API_BEGIN
  CheckPath(path, __func__);
  WEFT_OUT(out);
  RecordIOObj obj;
  obj.reader = std::make_unique<io::RecordIOReader>(path);
  *out = reinterpret_cast<weft_recordio_t*>(RecordIOTable::Get().Create(std::move(obj)));
  WEFT_API_END
}

weft_status_t weft_recordio_write(weft_recordio_t* rec, const void* data, size_t size) {
  WEFT_API_BEGIN
  RecordIOObj& r = WEFT_REC(rec);
  CheckBuffer(data, size, "data", "size", __func__);
  WEFT_CHECK(r.writer != nullptr, kValue, __func__, ": the file was opened for reading");
  r.writer->Write(data, size);
  WEFT_API_END
}

weft_status_t weft_recordio_read(weft_recordio_t* rec, weft_bytes_t** out) {
  WEFT_API_BEGIN
  RecordIOObj& r = WEFT_REC(rec);
  WEFT_OUT(out);
  WEFT_CHECK(r.reader != nullptr, kValue, __func__, ": the file was opened for writing");
  *out = nullptr;
  std::string buf;
  if (r.reader->Next(&buf)) *out = NewBytes(std::move(buf));
  WEFT_API_END
}

weft_status_t weft_recordio_tell(const weft_recordio_t* rec, int64_t* out) {
  WEFT_API_BEGIN
  RecordIOObj& r = WEFT_REC(rec);
  WEFT_OUT(out);
  *out = static_cast<int64_t>(r.reader ? r.reader->Tell() : r.writer->Tell());
  WEFT_API_END
}

weft_status_t weft_recordio_seek(weft_recordio_t* rec, int64_t pos) {
  WEFT_API_BEGIN
  RecordIOObj& r = WEFT_REC(rec);
  WEFT_CHECK(r.reader != nullptr, kValue, __func__, ": only a file opened for reading can seek");
  WEFT_CHECK(pos >= 0, kValue, __func__, ": expected an offset >= 0, got ", pos);
  r.reader->Seek(static_cast<uint64_t>(pos));
  WEFT_API_END
}

weft_status_t weft_recordio_free(weft_recordio_t* rec) {
  WEFT_API_BEGIN
  if (rec == nullptr) return WEFT_OK;
  // Close first so that a failed flush is reported; the handle is freed either way.
  std::string error;
  RecordIOObj& r = WEFT_REC(rec);
  try {
    if (r.writer) r.writer->Close();
  } catch (const Error& e) {
    error = e.what();
  }
  RecordIOTable::Get().Free(rec, "rec", __func__);
  if (!error.empty()) Throw(ErrorKind::kIO, error);
  WEFT_API_END
}

weft_status_t weft_image_decode(const void* data, size_t size, int flag, int to_rgb, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  CheckBuffer(data, size, "data", "size", __func__);
  io::Image im = io::DecodeImage(data, size, flag, to_rgb != 0);
  *out = NewImageArray(im, false);
  WEFT_API_END
}

weft_status_t weft_image_encode(const weft_ndarray_t* img, const char* format, int quality, int is_bgr,
                                weft_bytes_t** out) {
  WEFT_API_BEGIN
  const NDArray& arr = WEFT_ARR(img);
  WEFT_OUT(out);
  WEFT_CHECK(format != nullptr, kValue, __func__, ": format is NULL");
  io::Image im = ImageOf(arr, __func__);
  *out = NewBytes(io::EncodeImage(io::ImageView::Of(im), format, quality, is_bgr != 0));
  WEFT_API_END
}

weft_status_t weft_image_resize(const weft_ndarray_t* img, int width, int height, int interp, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& arr = WEFT_ARR(img);
  WEFT_OUT(out);
  io::Image im = ImageOf(arr, __func__);
  io::Image res = io::ResizeImage(io::ImageView::Of(im), width, height, interp);
  *out = NewImageArray(res, arr.shape().ndim() == 2);
  WEFT_API_END
}

}  // extern "C"

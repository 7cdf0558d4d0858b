// Array lists, `.params` files and byte buffers.
#include <atomic>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/base/np_shape.h"
#include "core/ndarray/serialize.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

NDArrayListObj& ListRef(const weft_ndarray_list_t* h, const char* arg, const char* fn) {
  return ListTable::Get().Ref(h, arg, fn);
}
const std::string& BytesRef(const weft_bytes_t* h, const char* arg, const char* fn) {
  return BytesTable::Get().Ref(h, arg, fn);
}
#define WEFT_LIST(h) ListRef((h), #h, __func__)
#define WEFT_BYTES(h) BytesRef((h), #h, __func__)

// The arrays and names of a save call, checked.
void ReadSaveArgs(int num, weft_ndarray_t* const* arrays, const char* const* names, const char* fn,
                  std::vector<NDArray>* out_arrays, std::vector<std::string>* out_names) {
  *out_arrays = ReadArrayList(num, "num", arrays, false, "arrays", fn);
  if (names != nullptr) *out_names = ReadStrings(num, names, "names", "num", fn);
}

weft_ndarray_list_t* NewListHandle(NDArrayFile file) {
  NDArrayListObj obj;
  obj.has_names = !file.names.empty();
  obj.arrays = std::move(file.arrays);
  obj.names = std::move(file.names);
  return reinterpret_cast<weft_ndarray_list_t*>(ListTable::Get().Create(std::move(obj)));
}

weft_bytes_t* NewBytesHandle(std::string bytes) {
  return reinterpret_cast<weft_bytes_t*>(BytesTable::Get().Create(std::move(bytes)));
}

NDArraySaveOptions SaveOptions() {
  NDArraySaveOptions o;
  o.np_shape = NpShapeMode().load() != 0;
  return o;
}

NDArrayLoadOptions LoadOptions() {
  NDArrayLoadOptions o;
  const int mode = NpShapeMode().load();
  o.np_shape = mode != 0;
  o.np_shape_global = mode == 2;
  return o;
}

}  // namespace

extern "C" {

weft_status_t weft_set_np_shape(int mode, int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(mode >= 0 && mode <= 2, kValue, __func__, ": expected 'mode' 0 (numpy-shape semantics off), 1 (on) or 2 "
             "(on for the whole process), got ", mode);
  *out = NpShapeMode().exchange(mode);
  WEFT_API_END
}

weft_status_t weft_get_np_shape(int* out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  *out = NpShapeMode().load();
  WEFT_API_END
}

weft_status_t weft_ndarray_list_free(weft_ndarray_list_t* list) {
  WEFT_API_BEGIN
  ListTable::Get().Free(list, "list", __func__);
  WEFT_API_END
}

weft_status_t weft_ndarray_list_size(const weft_ndarray_list_t* list, int* out) {
  WEFT_API_BEGIN
  const NDArrayListObj& l = WEFT_LIST(list);
  WEFT_OUT(out);
  *out = static_cast<int>(l.arrays.size());
  WEFT_API_END
}

weft_status_t weft_ndarray_list_has_names(const weft_ndarray_list_t* list, int* out) {
  WEFT_API_BEGIN
  const NDArrayListObj& l = WEFT_LIST(list);
  WEFT_OUT(out);
  *out = l.has_names ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_ndarray_list_get(const weft_ndarray_list_t* list, int i, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArrayListObj& l = WEFT_LIST(list);
  WEFT_OUT(out);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(l.arrays.size()), kIndex, __func__, ": the list has ", l.arrays.size(),
             " arrays, got index ", i);
  *out = NewArrHandle(l.arrays[i]);
  WEFT_API_END
}

weft_status_t weft_ndarray_list_name(const weft_ndarray_list_t* list, int i, const char** out) {
  WEFT_API_BEGIN
  const NDArrayListObj& l = WEFT_LIST(list);
  WEFT_OUT(out);
  WEFT_CHECK(i >= 0 && i < static_cast<int>(l.arrays.size()), kIndex, __func__, ": the list has ", l.arrays.size(),
             " arrays, got index ", i);
  *out = l.has_names ? l.names[i].c_str() : "";
  WEFT_API_END
}

weft_status_t weft_ndarray_save(const char* fname, int num, weft_ndarray_t* const* arrays, const char* const* names) {
  WEFT_API_BEGIN
  WEFT_CHECK(fname != nullptr, kValue, __func__, ": 'fname' is NULL");
  std::vector<NDArray> arrs;
  std::vector<std::string> nms;
  ReadSaveArgs(num, arrays, names, __func__, &arrs, &nms);
  SaveNDArrayListFile(fname, arrs, nms, SaveOptions());
  WEFT_API_END
}

weft_status_t weft_ndarray_save_to_bytes(int num, weft_ndarray_t* const* arrays, const char* const* names,
                                         weft_bytes_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  std::vector<NDArray> arrs;
  std::vector<std::string> nms;
  ReadSaveArgs(num, arrays, names, __func__, &arrs, &nms);
  *out = NewBytesHandle(SaveNDArrayList(arrs, nms, SaveOptions()));
  WEFT_API_END
}

weft_status_t weft_ndarray_load(const char* fname, weft_ndarray_list_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  WEFT_CHECK(fname != nullptr, kValue, __func__, ": 'fname' is NULL");
  *out = NewListHandle(LoadNDArrayListFile(fname, LoadOptions()));
  WEFT_API_END
}

weft_status_t weft_ndarray_load_from_bytes(const void* data, size_t size, weft_ndarray_list_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  CheckBuffer(data, size, "data", "size", __func__);
  *out = NewListHandle(LoadNDArrayList(data, size, "buffer", LoadOptions()));
  WEFT_API_END
}

weft_status_t weft_ndarray_save_raw_bytes(const weft_ndarray_t* arr, weft_bytes_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewBytesHandle(SaveNDArrayRaw(a, SaveOptions()));
  WEFT_API_END
}

weft_status_t weft_ndarray_load_raw_bytes(const void* data, size_t size, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  CheckBuffer(data, size, "data", "size", __func__);
  NDArray a = LoadNDArrayRaw(data, size, "buffer", LoadOptions());
  WEFT_CHECK(!a.is_none(), kValue, __func__, ": the bytes hold an uninitialised (none) array");
  *out = NewArrHandle(std::move(a));
  WEFT_API_END
}

weft_status_t weft_bytes_get(const weft_bytes_t* bytes, const void** data, size_t* size) {
  WEFT_API_BEGIN
  const std::string& b = WEFT_BYTES(bytes);
  WEFT_OUT(data);
  WEFT_OUT(size);
  *data = b.data();
  *size = b.size();
  WEFT_API_END
}

weft_status_t weft_bytes_free(weft_bytes_t* bytes) {
  WEFT_API_BEGIN
  BytesTable::Get().Free(bytes, "bytes", __func__);
  WEFT_API_END
}

}  // extern "C"

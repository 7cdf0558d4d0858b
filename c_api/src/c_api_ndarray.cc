// NDArray handles: creation, metadata, host copies, waits and views.
#include <algorithm>
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/base/checked_size.h"
#include "core/imperative/autograd.h"
#include "core/imperative/imperative.h"
#include "core/ndarray/shared_mem.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

// Reads a caller's shape, checking rank and dims; -1 is allowed once when `allow_infer`.
Shape ReadShape(const int64_t* dims, int ndim, bool allow_infer, const char* fn) {
  WEFT_CHECK(ndim >= 0 && ndim <= WEFT_MAX_NDIM, kShape, fn, ": expected ndim in [0, ", WEFT_MAX_NDIM, "], got ",
             ndim);
  WEFT_CHECK(ndim == 0 || dims != nullptr, kValue, fn, ": 'shape' is NULL but ndim is ", ndim);
  Shape s(ndim, static_cast<int64_t>(0));
  int inferred = 0;
  for (int i = 0; i < ndim; ++i) {
    s[i] = dims[i];
    if (allow_infer && dims[i] == -1) {
      ++inferred;
      continue;
    }
    WEFT_CHECK(dims[i] >= 0, kShape, fn, ": expected dimensions >= 0", allow_infer ? " (or one -1)" : "",
               ", got dim ", i, " = ", dims[i]);
  }
  WEFT_CHECK(inferred <= 1, kShape, fn, ": at most one dimension may be -1, got ", inferred);
  return s;
}

size_t NumBytes(const NDArray& a) { return static_cast<size_t>(a.Size()) * DTypeSize(a.dtype()); }

}  // namespace

extern "C" {

weft_status_t weft_ndarray_create(const int64_t* shape, int ndim, int dtype, weft_context_t ctx,
                                  weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  Shape s = ReadShape(shape, ndim, false, __func__);
  NDArray a(s, ToContext(ctx, __func__), ToDType(dtype, __func__));
  if (a.dtype() == DType::kBool && NumBytes(a) > 0) {
    // A bool array must hold only 0 and 1 (kernels read it as bool; other bytes would be
    // undefined there): a new one starts false rather than with whatever memory held.
    std::vector<uint8_t> zeros(NumBytes(a), 0);
    a.SyncCopyFromCPU(zeros.data(), zeros.size());
  }
  *out = NewArrHandle(std::move(a));
  WEFT_API_END
}

weft_status_t weft_ndarray_free(weft_ndarray_t* arr) {
  WEFT_API_BEGIN
  NDArrayTable::Get().Free(arr, "arr", __func__);
  WEFT_API_END
}

weft_status_t weft_ndarray_get_ndim(const weft_ndarray_t* arr, int* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = a.shape().ndim();
  WEFT_API_END
}

weft_status_t weft_ndarray_get_shape(const weft_ndarray_t* arr, int64_t* dims, int capacity, int* ndim) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(ndim);
  WEFT_CHECK(capacity >= 0, kValue, __func__, ": expected capacity >= 0, got ", capacity);
  WEFT_CHECK(capacity == 0 || dims != nullptr, kValue, __func__, ": 'dims' is NULL but capacity is ", capacity);
  int n = a.shape().ndim();
  for (int i = 0; i < std::min(n, capacity); ++i) dims[i] = a.shape()[i];
  *ndim = n;
  WEFT_API_END
}

weft_status_t weft_ndarray_get_size(const weft_ndarray_t* arr, int64_t* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = a.Size();
  WEFT_API_END
}

weft_status_t weft_ndarray_get_dtype(const weft_ndarray_t* arr, int* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = static_cast<int>(a.dtype());
  WEFT_API_END
}

weft_status_t weft_ndarray_get_context(const weft_ndarray_t* arr, weft_context_t* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = FromContext(a.ctx());
  WEFT_API_END
}

weft_status_t weft_ndarray_copy_from_host(weft_ndarray_t* arr, const void* data, size_t nbytes) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_CHECK(nbytes == NumBytes(a), kValue, __func__, ": expected nbytes = ", NumBytes(a), " for shape ",
             a.shape().ToString(), " ", DTypeName(a.dtype()), ", got ", nbytes);
  WEFT_CHECK(nbytes == 0 || data != nullptr, kValue, __func__, ": 'data' is NULL");
  if (a.dtype() == DType::kBool) {
    // A bool array holds only 0 and 1: every kernel reads it as bool, and any other byte
    // would be undefined there. Nonzero bytes are true, as numpy's astype(bool) gives.
    const auto* bytes = static_cast<const uint8_t*>(data);
    std::vector<uint8_t> norm(nbytes);
    for (size_t i = 0; i < nbytes; ++i) norm[i] = bytes[i] != 0 ? 1 : 0;
    a.SyncCopyFromCPU(norm.data(), nbytes);
  } else {
    a.SyncCopyFromCPU(data, nbytes);
  }
  WEFT_API_END
}

weft_status_t weft_ndarray_copy_to_host(const weft_ndarray_t* arr, void* data, size_t nbytes) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_CHECK(nbytes == NumBytes(a), kValue, __func__, ": expected nbytes = ", NumBytes(a), " for shape ",
             a.shape().ToString(), " ", DTypeName(a.dtype()), ", got ", nbytes);
  WEFT_CHECK(nbytes == 0 || data != nullptr, kValue, __func__, ": 'data' is NULL");
  a.SyncCopyToCPU(data, nbytes);
  WEFT_API_END
}

weft_status_t weft_ndarray_copy_to(const weft_ndarray_t* src, weft_ndarray_t* dst) {
  WEFT_API_BEGIN
  const NDArray& s = WEFT_ARR(src);
  const NDArray& d = WEFT_ARR(dst);
  WEFT_CHECK(s.Size() == d.Size(), kShape, __func__, ": expected arrays of equal size, got ", s.shape().ToString(),
             " and ", d.shape().ToString());
  CopyFromTo(s, d);
  if (autograd::IsRecording() && s.ag_node() && s.shape() == d.shape()) {
    std::vector<NDArray> outs{d};
    autograd::RecordOp(MakeAttrs(Op::Get("_copy"), {}), {s}, &outs, imperative::IsTraining());
    WEFT_ARR(dst).set_ag(outs[0].ag_node(), outs[0].ag_index());
  }
  WEFT_API_END
}

weft_status_t weft_ndarray_wait_to_read(const weft_ndarray_t* arr) {
  WEFT_API_BEGIN
  WEFT_ARR(arr).WaitToRead();
  WEFT_API_END
}

weft_status_t weft_ndarray_wait_to_write(const weft_ndarray_t* arr) {
  WEFT_API_BEGIN
  WEFT_ARR(arr).WaitToWrite();
  WEFT_API_END
}

weft_status_t weft_ndarray_slice(const weft_ndarray_t* arr, int64_t begin, int64_t end, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  NDArray view = a.Slice(begin, end);
  autograd::RecordView("slice_axis", {{"axis", "0"}, {"begin", std::to_string(begin)}, {"end", std::to_string(end)}}, a,
                       &view);
  *out = NewArrHandle(std::move(view));
  WEFT_API_END
}

weft_status_t weft_ndarray_at(const weft_ndarray_t* arr, int64_t index, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  NDArray view = a.At(index);
  if (autograd::IsRecording() && a.ag_node()) {
    int64_t i = index < 0 ? index + a.shape()[0] : index;
    NDArray row = a.Slice(i, i + 1);
    autograd::RecordView("slice_axis", {{"axis", "0"}, {"begin", std::to_string(i)}, {"end", std::to_string(i + 1)}},
                         a, &row);
    autograd::RecordView("reshape", {{"shape", view.shape().ToString()}}, row, &view);
  }
  *out = NewArrHandle(std::move(view));
  WEFT_API_END
}

weft_status_t weft_ndarray_reshape(const weft_ndarray_t* arr, const int64_t* shape, int ndim, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  Shape s = ReadShape(shape, ndim, true, __func__);
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < ndim; ++i) {
    if (s[i] == -1) unknown = i;
    else known = CheckedMul(known, s[i], std::string(__func__) + ": shape " + s.ToString());
  }
  if (unknown >= 0) {
    WEFT_CHECK(known != 0 && a.Size() % known == 0, kShape, __func__, ": cannot reshape an array of shape ",
               a.shape().ToString(), " (", a.Size(), " elements) into ", s.ToString());
    s[unknown] = a.Size() / known;
  }
  NDArray view = a.Reshape(s);
  autograd::RecordView("reshape", {{"shape", s.ToString()}}, a, &view);
  *out = NewArrHandle(std::move(view));
  WEFT_API_END
}

weft_status_t weft_ndarray_shares_memory(const weft_ndarray_t* a, const weft_ndarray_t* b, int* out) {
  WEFT_API_BEGIN
  const NDArray& x = WEFT_ARR(a);
  const NDArray& y = WEFT_ARR(b);
  WEFT_OUT(out);
  *out = x.SameChunk(y) ? 1 : 0;
  WEFT_API_END
}

weft_status_t weft_ndarray_get_shared_mem(const weft_ndarray_t* arr, int* shared_pid, int* shared_id,
                                          int64_t* byte_offset) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(shared_pid);
  WEFT_OUT(shared_id);
  WEFT_OUT(byte_offset);
  SharedMemHandle h = GetSharedMemHandle(a);
  *shared_pid = h.pid;
  *shared_id = h.id;
  *byte_offset = h.byte_offset;
  WEFT_API_END
}

weft_status_t weft_ndarray_create_from_shared_mem(int shared_pid, int shared_id, int64_t byte_offset,
                                                  const int64_t* shape, int ndim, int dtype, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  Shape s = ReadShape(shape, ndim, false, __func__);
  DType t = ToDType(dtype, __func__);
  try {
    *out = NewArrHandle(NDArrayFromSharedMem(shared_pid, shared_id, byte_offset, s, t));
  } catch (const Error& e) {
    // The core names the segment; the caller learns which call and arguments it came from.
    Throw(e.kind(), __func__, ": ", e.what());
  }
  WEFT_API_END
}

}  // extern "C"

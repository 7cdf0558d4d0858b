// Sparse NDArray handles: creation from parts, storage types, parts and conversion.
#include <string>
#include <vector>

#include "c_api/src/c_api_common.h"
#include "core/ndarray/sparse.h"

using namespace weft;        // NOLINT
using namespace weft::capi;  // NOLINT

namespace {

Shape ReadSparseShape(const int64_t* dims, int ndim, const char* fn) {
  WEFT_CHECK(ndim >= 0 && ndim <= WEFT_MAX_NDIM, kShape, fn, ": expected ndim in [0, ", WEFT_MAX_NDIM, "], got ",
             ndim);
  WEFT_CHECK(ndim == 0 || dims != nullptr, kValue, fn, ": 'shape' is NULL but ndim is ", ndim);
  Shape s(ndim, static_cast<int64_t>(0));
  for (int i = 0; i < ndim; ++i) {
    WEFT_CHECK(dims[i] >= 0, kShape, fn, ": expected dimensions >= 0, got dim ", i, " = ", dims[i]);
    s[i] = dims[i];
  }
  return s;
}

}  // namespace

extern "C" {

weft_status_t weft_ndarray_create_sparse(int stype, const int64_t* shape, int ndim, const weft_ndarray_t* values,
                                         int num_aux, weft_ndarray_t* const* aux, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  Shape s = ReadSparseShape(shape, ndim, __func__);
  const NDArray& v = WEFT_ARR(values);
  WEFT_CHECK(num_aux >= 0 && num_aux <= 2, kValue, __func__, ": expected num_aux 1 or 2, got ", num_aux);
  WEFT_CHECK(num_aux == 0 || aux != nullptr, kValue, __func__, ": 'aux' is NULL but num_aux is ", num_aux);
  std::vector<NDArray> parts;
  for (int i = 0; i < num_aux; ++i) parts.push_back(WEFT_ARR(aux[i]));
  *out = NewArrHandle(MakeSparse(ToStorageType(stype, __func__), s, v, parts));
  WEFT_API_END
}

weft_status_t weft_ndarray_create_sparse_zeros(int stype, const int64_t* shape, int ndim, int dtype,
                                               weft_context_t ctx, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  WEFT_OUT(out);
  Shape s = ReadSparseShape(shape, ndim, __func__);
  StorageType st = ToStorageType(stype, __func__);
  WEFT_CHECK(st != StorageType::kUndefined, kValue, __func__, ": expected storage type 0, 1 or 2, got -1");
  *out = NewArrHandle(SparseZeros(st, s, ToDType(dtype, __func__), ToContext(ctx, __func__)));
  WEFT_API_END
}

weft_status_t weft_ndarray_get_storage_type(const weft_ndarray_t* arr, int* out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = static_cast<int>(a.stype());
  WEFT_API_END
}

weft_status_t weft_ndarray_get_sparse_values(const weft_ndarray_t* arr, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewArrHandle(a.sparse_values());
  WEFT_API_END
}

weft_status_t weft_ndarray_get_aux(const weft_ndarray_t* arr, int i, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewArrHandle(a.aux(i));
  WEFT_API_END
}

weft_status_t weft_ndarray_cast_storage(const weft_ndarray_t* arr, int stype, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewArrHandle(CastStorage(a, ToStorageType(stype, __func__)));
  WEFT_API_END
}

weft_status_t weft_ndarray_sparse_assign(weft_ndarray_t* dst, const weft_ndarray_t* src) {
  WEFT_API_BEGIN
  NDArray& d = WEFT_ARR(dst);
  const NDArray& s = WEFT_ARR(src);
  WEFT_CHECK(d.is_sparse() && s.is_sparse(), kValue, __func__, ": expected sparse 'dst' and 'src', got ",
             StorageTypeName(d.stype()), " and ", StorageTypeName(s.stype()));
  WEFT_CHECK(d.stype() == s.stype() && d.shape() == s.shape() && d.dtype() == s.dtype(), kValue, __func__,
             ": expected 'src' of dst's storage type, shape and dtype (", StorageTypeName(d.stype()), " ",
             d.shape().ToString(), " ", DTypeName(d.dtype()), "), got ", StorageTypeName(s.stype()), " ",
             s.shape().ToString(), " ", DTypeName(s.dtype()));
  NDArray copy = s;
  copy.set_ag(d.ag_node(), d.ag_index());
  d = copy;
  WEFT_API_END
}

}  // extern "C"

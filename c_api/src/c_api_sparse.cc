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

void CreateSparse(int stype, const int64_t* shape, int ndim, const weft_ndarray_t* values, int num_aux,
                  weft_ndarray_t* const* aux, weft_ndarray_t** out, bool checked, const char* fn) {
  WEFT_OUT(out);
  Shape s = ReadSparseShape(shape, ndim, fn);
  const NDArray& v = WEFT_ARR(values);
  WEFT_CHECK(num_aux >= 0 && num_aux <= 2, kValue, fn, ": expected num_aux 1 or 2, got ", num_aux);
  WEFT_CHECK(num_aux == 0 || aux != nullptr, kValue, fn, ": 'aux' is NULL but num_aux is ", num_aux);
  std::vector<NDArray> parts;
  for (int i = 0; i < num_aux; ++i) parts.push_back(WEFT_ARR(aux[i]));
  *out = NewArrHandle(checked ? MakeSparse(ToStorageType(stype, fn), s, v, parts)
                              : MakeSparseUnchecked(ToStorageType(stype, fn), s, v, parts));
}

}  // namespace

extern "C" {

weft_status_t weft_ndarray_create_sparse(int stype, const int64_t* shape, int ndim, const weft_ndarray_t* values,
                                         int num_aux, weft_ndarray_t* const* aux, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  CreateSparse(stype, shape, ndim, values, num_aux, aux, out, true, __func__);
  WEFT_API_END
}

weft_status_t weft_ndarray_create_sparse_unchecked(int stype, const int64_t* shape, int ndim,
                                                   const weft_ndarray_t* values, int num_aux,
                                                   weft_ndarray_t* const* aux, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  CreateSparse(stype, shape, ndim, values, num_aux, aux, out, false, __func__);
  WEFT_API_END
}

weft_status_t weft_ndarray_check_format(const weft_ndarray_t* arr, int full_check) {
  WEFT_API_BEGIN
  CheckSparseFormat(WEFT_ARR(arr), full_check != 0);
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

weft_status_t weft_ndarray_get_sparse_part_unchecked(const weft_ndarray_t* arr, int part, weft_ndarray_t** out) {
  WEFT_API_BEGIN
  const NDArray& a = WEFT_ARR(arr);
  WEFT_OUT(out);
  *out = NewArrHandle(a.sparse_part_unchecked(part));
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
  s.sparse_values();  // refuses (naming the fault) an array whose parts break its format
  NDArray copy = s;
  copy.set_ag(d.ag_node(), d.ag_index());
  d = copy;
  WEFT_API_END
}

}  // extern "C"

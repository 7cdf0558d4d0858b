/* The hand-written part of the C glue: how R values become C arguments for the generated
 * routines (src/raw.c), how failures become R conditions, conversions between R vectors
 * and arrays of every dtype, and the C API functions that take callbacks (a KVStore
 * updater written in R, a server without a command handler). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "raw.h"

/* The R function that turns a status and a message into a condition of class
 * "weft_error" (set by .onLoad through weft_r_init). */
static SEXP error_handler = NULL;

SEXP weft_r_init(SEXP handler) {
  if (error_handler != NULL) R_ReleaseObject(error_handler);
  R_PreserveObject(handler);
  error_handler = handler;
  return R_NilValue;
}

void weft_r_raise(weft_status_t status, const char* function) {
  const char* message = weft_get_last_error();
  if (error_handler == NULL) Rf_error("%s: %s (status %d)", function, message, (int)status);
  SEXP s_status = PROTECT(Rf_ScalarInteger((int)status));
  SEXP s_message = PROTECT(Rf_mkString(message));
  SEXP s_function = PROTECT(Rf_mkString(function));
  SEXP call = PROTECT(Rf_lang4(error_handler, s_status, s_message, s_function));
  Rf_eval(call, R_GlobalEnv);
  UNPROTECT(4);
  Rf_error("%s: %s", function, message); /* the handler always signals; this is not reached */
}

int weft_r_int(SEXP x, const char* what) {
  if (Rf_length(x) != 1 || !(Rf_isNumeric(x) || Rf_isLogical(x))) Rf_error("%s: expected one integer", what);
  int v = Rf_asInteger(x);
  if (v == NA_INTEGER) Rf_error("%s: expected one integer, got NA", what);
  return v;
}

double weft_r_double(SEXP x, const char* what) {
  if (Rf_length(x) != 1 || !Rf_isNumeric(x)) Rf_error("%s: expected one number", what);
  double v = Rf_asReal(x);
  if (ISNAN(v)) Rf_error("%s: expected one number, got NA", what);
  return v;
}

weft_context_t weft_r_context(SEXP x) {
  weft_context_t ctx = {1, 0};
  if (Rf_length(x) != 2 || !Rf_isNumeric(x)) Rf_error("ctx: expected c(device_type, device_id)");
  if (TYPEOF(x) == INTSXP) {
    ctx.device_type = INTEGER(x)[0];
    ctx.device_id = INTEGER(x)[1];
  } else {
    ctx.device_type = (int32_t)REAL(x)[0];
    ctx.device_id = (int32_t)REAL(x)[1];
  }
  return ctx;
}

SEXP weft_r_context_value(weft_context_t ctx) {
  SEXP v = PROTECT(Rf_allocVector(INTSXP, 2));
  INTEGER(v)[0] = ctx.device_type;
  INTEGER(v)[1] = ctx.device_id;
  UNPROTECT(1);
  return v;
}

const char* weft_r_string_or_null(SEXP x, const char* what) {
  if (Rf_isNull(x)) return NULL;
  if (!Rf_isString(x) || Rf_length(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    Rf_error("%s: expected one string", what);
  return Rf_translateCharUTF8(STRING_ELT(x, 0));
}

const char* const* weft_r_strings(SEXP x, int* len, const char* what) {
  *len = 0;
  if (Rf_isNull(x)) return NULL;
  if (!Rf_isString(x)) Rf_error("%s: expected a character vector", what);
  R_xlen_t n = XLENGTH(x);
  const char** out = (const char**)R_alloc(n > 0 ? (size_t)n : 1, sizeof(char*));
  for (R_xlen_t i = 0; i < n; ++i) {
    if (STRING_ELT(x, i) == NA_STRING) Rf_error("%s: element %d is NA", what, (int)i + 1);
    out[i] = Rf_translateCharUTF8(STRING_ELT(x, i));
  }
  *len = (int)n;
  return out;
}

const int64_t* weft_r_int64s(SEXP x, int* len, const char* what) {
  *len = 0;
  if (Rf_isNull(x)) return NULL;
  if (!Rf_isNumeric(x)) Rf_error("%s: expected a numeric vector", what);
  R_xlen_t n = XLENGTH(x);
  int64_t* out = (int64_t*)R_alloc(n > 0 ? (size_t)n : 1, sizeof(int64_t));
  for (R_xlen_t i = 0; i < n; ++i) {
    double v = TYPEOF(x) == REALSXP ? REAL(x)[i] : (INTEGER(x)[i] == NA_INTEGER ? NAN : INTEGER(x)[i]);
    if (ISNAN(v)) Rf_error("%s: element %d is NA", what, (int)i + 1);
    out[i] = (int64_t)v;
  }
  *len = (int)n;
  return out;
}

const void* weft_r_raw(SEXP x, const char* what) {
  if (TYPEOF(x) != RAWSXP) Rf_error("%s: expected a raw vector", what);
  return RAW(x);
}

void* weft_r_handle(SEXP x, const char* type, const char* what) {
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != Rf_install(type))
    Rf_error("%s: expected a %s handle", what, type);
  return R_ExternalPtrAddr(x);
}

void* const* weft_r_handles(SEXP x, int* len, const char* type, const char* what) {
  *len = 0;
  if (Rf_isNull(x)) return NULL;
  if (TYPEOF(x) != VECSXP) Rf_error("%s: expected a list of %s handles", what, type);
  R_xlen_t n = XLENGTH(x);
  void** out = (void**)R_alloc(n > 0 ? (size_t)n : 1, sizeof(void*));
  for (R_xlen_t i = 0; i < n; ++i) out[i] = weft_r_handle(VECTOR_ELT(x, i), type, what);
  *len = (int)n;
  return out;
}

void weft_r_count(int* count, int len, int is_null, const char* count_name, const char* member) {
  if (is_null) return;
  if (*count < 0) {
    *count = len;
  } else if (*count != len) {
    Rf_error("%s: %s has %d elements where %d are expected", count_name, member, len, *count);
  }
}

SEXP weft_r_raw_value(const void* data, size_t size) {
  SEXP v = PROTECT(Rf_allocVector(RAWSXP, (R_xlen_t)size));
  if (size > 0) memcpy(RAW(v), data, size);
  UNPROTECT(1);
  return v;
}

SEXP weft_r_string_value(const char* s) { return Rf_mkString(s != NULL ? s : ""); }

SEXP weft_r_int64_value(const int64_t* v, int n) {
  SEXP out = PROTECT(Rf_allocVector(REALSXP, n));
  for (int i = 0; i < n; ++i) REAL(out)[i] = (double)v[i];
  UNPROTECT(1);
  return out;
}

SEXP weft_r_wrap(void* handle, const char* type, const char* r_class, R_CFinalizer_t finalizer) {
  if (handle == NULL) return R_NilValue;
  SEXP ptr = PROTECT(R_MakeExternalPtr(handle, Rf_install(type), R_NilValue));
  /* onexit: a dist worker leaves its job and iterators stop their threads at R's exit. */
  if (finalizer != NULL) R_RegisterCFinalizerEx(ptr, finalizer, TRUE);
  Rf_setAttrib(ptr, R_ClassSymbol, Rf_mkString(r_class));
  UNPROTECT(1);
  return ptr;
}

/* ------------------------------------------------------------------ dtype conversions */

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
  if (mag < 0x38800000u) {                                   /* subnormal or zero half */
    float a;
    memcpy(&a, &mag, 4);
    /* 2^-24 is the half subnormal step: round the multiple of it to nearest even. */
    float q = a * 16777216.0f;
    uint32_t r = (uint32_t)q;
    float frac = q - (float)r;
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) ++r;
    return (uint16_t)(sign | r);
  }
  uint32_t e = ((mag >> 23) - 112u) << 10;
  uint32_t m = (mag >> 13) & 0x3ffu;
  uint32_t rest = mag & 0x1fffu;
  uint32_t h = e | m;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    float v = (float)m / 16777216.0f;
    memcpy(&x, &v, 4);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bfloat16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static double r_value(SEXP x, R_xlen_t i) {
  switch (TYPEOF(x)) {
    case REALSXP: return REAL(x)[i];
    case INTSXP: return INTEGER(x)[i] == NA_INTEGER ? NAN : (double)INTEGER(x)[i];
    case LGLSXP: return LOGICAL(x)[i] == NA_LOGICAL ? NAN : (double)LOGICAL(x)[i];
    default: return NAN;
  }
}

/* Writes the R vector x as `n` elements of `dtype` into buf. */
static void r_to_buffer(SEXP x, R_xlen_t n, int dtype, void* buf) {
  for (R_xlen_t i = 0; i < n; ++i) {
    double v = r_value(x, i);
    switch (dtype) {
      case WEFT_DTYPE_FLOAT32: ((float*)buf)[i] = (float)v; break;
      case WEFT_DTYPE_FLOAT64: ((double*)buf)[i] = v; break;
      case WEFT_DTYPE_FLOAT16: ((uint16_t*)buf)[i] = float_to_half((float)v); break;
      case WEFT_DTYPE_BFLOAT16: ((uint16_t*)buf)[i] = float_to_bfloat16((float)v); break;
      case WEFT_DTYPE_UINT8: ((uint8_t*)buf)[i] = (uint8_t)(int64_t)v; break;
      case WEFT_DTYPE_INT8: ((int8_t*)buf)[i] = (int8_t)(int64_t)v; break;
      case WEFT_DTYPE_INT32: ((int32_t*)buf)[i] = (int32_t)v; break;
      case WEFT_DTYPE_INT64: ((int64_t*)buf)[i] = (int64_t)v; break;
      case WEFT_DTYPE_BOOL: ((uint8_t*)buf)[i] = v != 0; break;
      default: Rf_error("dtype %d has no conversion from R", dtype);
    }
  }
}

static void check_convertible(SEXP x, int dtype) {
  if (!(Rf_isReal(x) || Rf_isInteger(x) || Rf_isLogical(x)))
    Rf_error("expected a numeric, integer or logical vector or array");
  if (dtype != WEFT_DTYPE_FLOAT32 && dtype != WEFT_DTYPE_FLOAT64 && dtype != WEFT_DTYPE_FLOAT16 &&
      dtype != WEFT_DTYPE_BFLOAT16) {
    R_xlen_t n = XLENGTH(x);
    for (R_xlen_t i = 0; i < n; ++i) {
      if (ISNAN(r_value(x, i))) Rf_error("element %d is NA or NaN, which an integer dtype cannot hold", (int)i + 1);
    }
  }
}

static size_t dtype_size(int dtype) {
  size_t size = 0;
  weft_status_t status = weft_dtype_size(dtype, &size);
  if (status != WEFT_OK) weft_r_raise(status, "weft_dtype_size");
  return size;
}

/* Copies the values of R vector x into the array (sizes must match), converting them to
 * its dtype. */
SEXP weft_r_nd_copy_from_r(SEXP s_arr, SEXP x) {
  weft_ndarray_t* arr = (weft_ndarray_t*)weft_r_handle(s_arr, "weft_ndarray_t", "arr");
  int dtype = 0;
  int64_t size = 0;
  weft_status_t status = weft_ndarray_get_dtype(arr, &dtype);
  if (status == WEFT_OK) status = weft_ndarray_get_size(arr, &size);
  if (status != WEFT_OK) weft_r_raise(status, "weft_ndarray_get_dtype");
  check_convertible(x, dtype);
  if ((int64_t)XLENGTH(x) != size)
    Rf_error("copy into an array of %lld elements: got %lld values", (long long)size, (long long)XLENGTH(x));
  size_t nbytes = (size_t)size * dtype_size(dtype);
  void* buf = R_alloc(nbytes > 0 ? nbytes : 1, 1);
  r_to_buffer(x, XLENGTH(x), dtype, buf);
  status = weft_ndarray_copy_from_host(arr, buf, nbytes);
  if (status != WEFT_OK) weft_r_raise(status, "weft_ndarray_copy_from_host");
  return R_NilValue;
}

/* A new array holding R vector x: shape rev(dim(x)) (or its length), same bytes order. */
SEXP weft_r_nd_from_r(SEXP x, SEXP s_dtype, SEXP s_ctx) {
  int dtype = weft_r_int(s_dtype, "dtype");
  weft_context_t ctx = weft_r_context(s_ctx);
  check_convertible(x, dtype);
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  int ndim = Rf_isNull(dim) ? 1 : Rf_length(dim);
  int64_t* shape = (int64_t*)R_alloc((size_t)ndim, sizeof(int64_t));
  if (Rf_isNull(dim)) {
    shape[0] = (int64_t)XLENGTH(x);
  } else {
    for (int i = 0; i < ndim; ++i) shape[i] = INTEGER(dim)[ndim - 1 - i];
  }
  weft_ndarray_t* arr = NULL;
  weft_status_t status = weft_ndarray_create(shape, ndim, dtype, ctx, &arr);
  if (status != WEFT_OK) weft_r_raise(status, "weft_ndarray_create");
  SEXP result = PROTECT(weft_r_wrap_ndarray(arr));
  weft_r_nd_copy_from_r(result, x);
  UNPROTECT(1);
  return result;
}

/* The array's values as an R vector (double for floating types and int64, integer for
 * the other integer types, logical for bool) with dim rev(shape) when it has 2 or more
 * dimensions. */
SEXP weft_r_nd_to_r(SEXP s_arr) {
  weft_ndarray_t* arr = (weft_ndarray_t*)weft_r_handle(s_arr, "weft_ndarray_t", "arr");
  int dtype = 0, ndim = 0;
  int64_t size = 0;
  int64_t dims[32];
  weft_status_t status = weft_ndarray_get_dtype(arr, &dtype);
  if (status == WEFT_OK) status = weft_ndarray_get_size(arr, &size);
  if (status == WEFT_OK) status = weft_ndarray_get_shape(arr, dims, 32, &ndim);
  if (status != WEFT_OK) weft_r_raise(status, "weft_ndarray_get_shape");
  if (ndim > 32) Rf_error("arrays of more than 32 dimensions have no R form");
  size_t nbytes = (size_t)size * dtype_size(dtype);
  SEXPTYPE type = REALSXP;
  if (dtype == WEFT_DTYPE_INT32 || dtype == WEFT_DTYPE_INT8 || dtype == WEFT_DTYPE_UINT8) type = INTSXP;
  if (dtype == WEFT_DTYPE_BOOL) type = LGLSXP;
  SEXP out = PROTECT(Rf_allocVector(type, (R_xlen_t)size));
  void* buf = (dtype == WEFT_DTYPE_FLOAT64) ? (void*)REAL(out)
              : (dtype == WEFT_DTYPE_INT32) ? (void*)INTEGER(out)
                                            : R_alloc(nbytes > 0 ? nbytes : 1, 1);
  status = weft_ndarray_copy_to_host(arr, buf, nbytes);
  if (status != WEFT_OK) weft_r_raise(status, "weft_ndarray_copy_to_host");
  for (int64_t i = 0; i < size; ++i) {
    switch (dtype) {
      case WEFT_DTYPE_FLOAT32: REAL(out)[i] = ((float*)buf)[i]; break;
      case WEFT_DTYPE_FLOAT16: REAL(out)[i] = half_to_float(((uint16_t*)buf)[i]); break;
      case WEFT_DTYPE_BFLOAT16: REAL(out)[i] = bfloat16_to_float(((uint16_t*)buf)[i]); break;
      case WEFT_DTYPE_UINT8: INTEGER(out)[i] = ((uint8_t*)buf)[i]; break;
      case WEFT_DTYPE_INT8: INTEGER(out)[i] = ((int8_t*)buf)[i]; break;
      case WEFT_DTYPE_INT64: REAL(out)[i] = (double)((int64_t*)buf)[i]; break;
      case WEFT_DTYPE_BOOL: LOGICAL(out)[i] = ((uint8_t*)buf)[i] != 0; break;
      default: break; /* float64 and int32 were read in place */
    }
  }
  /* A 1-d array comes back as a plain vector (no dim), as in MXNet's R package, so that it
   * compares equal to c(...) and 1:n. */
  if (ndim >= 2) {
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, ndim));
    for (int i = 0; i < ndim; ++i) INTEGER(dim)[i] = (int)dims[ndim - 1 - i];
    Rf_setAttrib(out, R_DimSymbol, dim);
    UNPROTECT(1);
  }
  UNPROTECT(1);
  return out;
}

/* ------------------------------------------------------------------ callbacks */

/* The store's updater calls the R function kept in the store's external pointer as
 * fun(key, merged, stored); it runs on the pushing thread, which for a local store is R's. */
static int r_updater(const char* key, weft_ndarray_t* merged, weft_ndarray_t* stored, void* user) {
  SEXP fun = (SEXP)user;
  SEXP s_key = PROTECT(Rf_mkString(key));
  SEXP s_merged = PROTECT(weft_r_wrap_ndarray(merged));
  SEXP s_stored = PROTECT(weft_r_wrap_ndarray(stored));
  SEXP call = PROTECT(Rf_lang4(fun, s_key, s_merged, s_stored));
  int failed = 0;
  R_tryEval(call, R_GlobalEnv, &failed);
  UNPROTECT(4);
  return failed;
}

SEXP weft_r_kvstore_set_updater(SEXP s_kv, SEXP fun) {
  weft_kvstore_t* kv = (weft_kvstore_t*)weft_r_handle(s_kv, "weft_kvstore_t", "kv");
  if (!Rf_isNull(fun) && !Rf_isFunction(fun)) Rf_error("updater: expected a function or NULL");
  weft_status_t status = weft_kvstore_set_updater(kv, Rf_isNull(fun) ? NULL : r_updater,
                                                  Rf_isNull(fun) ? NULL : (void*)fun);
  if (status != WEFT_OK) weft_r_raise(status, "weft_kvstore_set_updater");
  /* The store may call the function as long as it lives: it keeps it alive. */
  R_SetExternalPtrProtected(s_kv, fun);
  return R_NilValue;
}

/* A dist server for R jobs: worker commands are acknowledged and ignored (the servers sum
 * the pushes; R workers run their optimizer themselves). */
SEXP weft_r_kvstore_run_server(SEXP s_kv) {
  weft_kvstore_t* kv = (weft_kvstore_t*)weft_r_handle(s_kv, "weft_kvstore_t", "kv");
  weft_status_t status = weft_kvstore_run_server(kv, NULL, NULL);
  if (status != WEFT_OK) weft_r_raise(status, "weft_kvstore_run_server");
  return R_NilValue;
}

/* Whether the handle was freed (explicitly or by its owner's free). */
SEXP weft_r_is_null_handle(SEXP x) {
  return Rf_ScalarLogical(TYPEOF(x) != EXTPTRSXP || R_ExternalPtrAddr(x) == NULL);
}

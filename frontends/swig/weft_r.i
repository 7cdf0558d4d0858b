/* R typemaps of weft.i.
 *
 * A wrapped function with out-parameters returns list(NULL, <out-parameters in order>),
 * one without returns NULL: the NULL stands for the status, which never reaches R as a
 * value because a failed call raises an R error carrying weft_get_last_error()'s message. Handles are SWIG external pointers (R
 * NULL is a NULL handle), lists of handles are R lists, string arrays character vectors,
 * host buffers raw vectors, 64-bit integers doubles (R has no 64-bit integer).
 *
 * Temporaries are R_alloc'ed, never malloc'ed: an R error long-jumps out of the wrapper
 * and skips its cleanup, while R_alloc memory is reclaimed by R on that jump too. For the
 * same reason every typemap here has an empty freearg: SWIG's default freearg for numeric
 * pointers would free() memory that was never malloc'ed.
 */

/* DLPack capsules are a Python protocol; R exchanges data through raw vectors. */
%ignore weft_ndarray_to_dlpack;
%ignore weft_ndarray_from_dlpack;

%{
static const char* weft_r_status_name(int status) {
  switch (status) {
    case WEFT_ERR_VALUE: return "value error";
    case WEFT_ERR_TYPE: return "type error";
    case WEFT_ERR_INDEX: return "index error";
    case WEFT_ERR_SHAPE: return "shape error";
    case WEFT_ERR_IO: return "I/O error";
    case WEFT_ERR_NOT_FOUND: return "not found";
    case WEFT_ERR_UNSUPPORTED: return "unsupported";
    case WEFT_ERR_RUNTIME: return "runtime error";
    case WEFT_ERR_INTERNAL: return "internal error";
    case WEFT_ERR_HANDLE: return "invalid handle";
    default: return "error";
  }
}

/* An element count given beside an R vector must not exceed the vector's length, or the
 * library would read past the array built from it. */
static void weft_r_check_count(SEXP vec, SEXP count, const char* vec_name, const char* count_name) {
  int n = Rf_asInteger(count);
  if (n != NA_INTEGER && n > Rf_length(vec)) {
    Rf_error("weft: %s = %d but %s has %d elements", count_name, n, vec_name, Rf_length(vec));
  }
}

/* A handle from an external pointer that SWIG_R_NewPointerObj made for `type` (whose tag
 * holds the type), or from NULL. Checked here because SWIG_R_ConvertPtr crashes on other
 * SEXPs and lets any pointer type through. */
static void* weft_r_as_handle(SEXP obj, swig_type_info* type, const char* what) {
  if (Rf_isNull(obj)) return NULL;
  SEXP tag = TYPEOF(obj) == EXTPTRSXP ? R_ExternalPtrTag(obj) : R_NilValue;
  if (TYPEOF(tag) != EXTPTRSXP || R_ExternalPtrAddr(tag) != (void*)type) {
    const char* got = TYPEOF(tag) == EXTPTRSXP && R_ExternalPtrAddr(tag) != NULL
                          ? ((swig_type_info*)R_ExternalPtrAddr(tag))->name
                          : Rf_type2char(TYPEOF(obj));
    Rf_error("weft: %s must be a %s, got %s", what, type->name, got);
  }
  return R_ExternalPtrAddr(obj);
}

/* A handle array from an R list of handles (NULL or an empty list gives NULL). */
static weft_ndarray_t** weft_r_handle_array(SEXP list, swig_type_info* type, const char* what) {
  if (Rf_isNull(list) || Rf_length(list) == 0) return NULL;
  if (!Rf_isNewList(list)) Rf_error("weft: %s must be a list of arrays", what);
  int n = Rf_length(list);
  weft_ndarray_t** arr = (weft_ndarray_t**)R_alloc((size_t)n, sizeof(weft_ndarray_t*));
  for (int i = 0; i < n; ++i) arr[i] = (weft_ndarray_t*)weft_r_as_handle(VECTOR_ELT(list, i), type, what);
  return arr;
}

static SEXP weft_r_handle_list(weft_ndarray_t* const* arr, int n, swig_type_info* type) {
  SEXP list = Rf_protect(Rf_allocVector(VECSXP, n));
  for (int i = 0; i < n; ++i) SET_VECTOR_ELT(list, i, SWIG_R_NewPointerObj(arr[i], type, 0));
  Rf_unprotect(1);
  return list;
}
%}

/* ---------------------------------------------------------------- status */
%typemap(out) weft_status_t {
  if ($1 != WEFT_OK) Rf_error("weft %s: %s", weft_r_status_name((int)$1), weft_get_last_error());
  $result = R_NilValue;
}
/* The status is not an R value (see above), so no enum conversion on the R side. */
%typemap(scoerceout) weft_status_t ""
%typemap(rtype) weft_status_t "NULL"

/* ---------------------------------------------------------------- handles */
%define WEFT_R_HANDLE(TYPE)
%typemap(in) TYPE*, const TYPE* { $1 = ($1_ltype)weft_r_as_handle($input, $descriptor(TYPE*), "$1_name"); }
%typemap(in, numinputs=0) TYPE** out (TYPE* temp = NULL), const TYPE** out (const TYPE* temp = NULL) { $1 = ($1_ltype)&temp; }
%typemap(argout) TYPE** out, const TYPE** out { %append_output(SWIG_R_NewPointerObj((void*)*$1, $descriptor(TYPE*), 0)); }
%typemap(freearg) TYPE** out, const TYPE** out ""
%enddef

WEFT_R_HANDLE(weft_ndarray_t)
WEFT_R_HANDLE(weft_ndarray_list_t)
WEFT_R_HANDLE(weft_bytes_t)
WEFT_R_HANDLE(weft_op_t)
WEFT_R_HANDLE(weft_symbol_t)
WEFT_R_HANDLE(weft_executor_t)
WEFT_R_HANDLE(weft_dataiter_t)
WEFT_R_HANDLE(weft_recordio_t)
WEFT_R_HANDLE(weft_kvstore_t)

/* Arrays beside their count; the count arguments are named as in c_api.h, which is also
 * the name of the wrapper's SEXP argument. */
%define WEFT_R_HANDLES(NAME, COUNT)
%typemap(in) weft_ndarray_t* const* NAME {
  weft_r_check_count($input, COUNT, "NAME", "COUNT");
  $1 = weft_r_handle_array($input, $descriptor(weft_ndarray_t*), "NAME");
}
%enddef
WEFT_R_HANDLES(inputs, num_inputs)
WEFT_R_HANDLES(outputs, num_outputs)
WEFT_R_HANDLES(out_grads, num_outputs)
WEFT_R_HANDLES(given, num_given)
WEFT_R_HANDLES(arrays, num)

%define WEFT_R_STRINGS(NAME, COUNT)
%typemap(in) const char* const* NAME {
  if (Rf_isNull($input)) {
    $1 = NULL;
  } else {
    if (!Rf_isString($input)) Rf_error("weft: NAME must be a character vector");
    weft_r_check_count($input, COUNT, "NAME", "COUNT");
    int n = Rf_length($input);
    const char** arr = (const char**)R_alloc((size_t)(n > 0 ? n : 1), sizeof(const char*));
    for (int i = 0; i < n; ++i) arr[i] = Rf_translateCharUTF8(STRING_ELT($input, i));
    $1 = ($1_ltype)arr;
  }
}
%enddef
WEFT_R_STRINGS(keys, num_params)
WEFT_R_STRINGS(vals, num_params)
WEFT_R_STRINGS(names, num)
WEFT_R_STRINGS(key_names, num)
WEFT_R_STRINGS(pull_key_names, num_pull)
WEFT_R_HANDLES(values, num)
WEFT_R_HANDLES(outs, num)
WEFT_R_HANDLES(pull_outs, num_pull)

/* weft_imperative_invoke's outputs: one list of handles. */
%typemap(in, numinputs=0) (int* num_outputs, weft_ndarray_t* const** outputs)
    (int n = 0, weft_ndarray_t* const* outs = NULL) {
  $1 = &n;
  $2 = ($2_ltype)&outs;
}
%typemap(argout) (int* num_outputs, weft_ndarray_t* const** outputs) {
  %append_output(weft_r_handle_list(*$2, *$1, $descriptor(weft_ndarray_t*)));
}
%typemap(freearg) (int* num_outputs, weft_ndarray_t* const** outputs) ""

/* weft_imperative_gradient's in_grads: a list with one entry per input (num_inputs, the
 * second argument), NULL where the operator gives no gradient. */
%typemap(in, numinputs=0) weft_ndarray_t** in_grads {
  $1 = (weft_ndarray_t**)R_alloc(arg2 > 0 ? (size_t)arg2 : 1, sizeof(weft_ndarray_t*));
  memset($1, 0, (arg2 > 0 ? (size_t)arg2 : 1) * sizeof(weft_ndarray_t*));
}
%typemap(argout) weft_ndarray_t** in_grads {
  %append_output(weft_r_handle_list($1, arg2, $descriptor(weft_ndarray_t*)));
}
%typemap(freearg) weft_ndarray_t** in_grads ""

/* ---------------------------------------------------------------- plain out-parameters */
%define WEFT_R_OUT(TYPE, NAME, MAKE)
%typemap(in, numinputs=0) TYPE* NAME (TYPE temp = 0) { $1 = ($1_ltype)&temp; }
%typemap(argout) TYPE* NAME { %append_output(MAKE(*$1)); }
%typemap(freearg) TYPE* NAME ""
%enddef

WEFT_R_OUT(int, out, Rf_ScalarInteger)
WEFT_R_OUT(int, major, Rf_ScalarInteger)
WEFT_R_OUT(int, minor, Rf_ScalarInteger)
WEFT_R_OUT(int, patch, Rf_ScalarInteger)
WEFT_R_OUT(int, abi, Rf_ScalarInteger)
WEFT_R_OUT(int, required, Rf_ScalarLogical)
WEFT_R_OUT(int64_t, out, Rf_ScalarReal)
WEFT_R_OUT(size_t, out, Rf_ScalarReal)

/* Strings in are read in place, not copied: SWIG's copy is freed by cleanup code that an
 * R error (a failed status) long-jumps past. */
%typemap(in) const char* {
  if (!Rf_isString($input) || Rf_length($input) != 1 || STRING_ELT($input, 0) == NA_STRING) {
    Rf_error("weft: $input must be one string");
  }
  $1 = ($1_ltype)Rf_translateCharUTF8(STRING_ELT($input, 0));
}
%typemap(freearg) const char* ""

%typemap(in, numinputs=0) const char** (const char* temp = NULL) { $1 = ($1_ltype)&temp; }
%typemap(argout) const char** { %append_output(*$1 == NULL ? R_NilValue : Rf_mkString(*$1)); }
%typemap(freearg) const char** ""

/* The shape: capacity in, the first min(capacity, ndim) dims out as one element (the
 * rank is weft_ndarray_get_ndim's; a list element per C pointer would split the triple). */
%typemap(in) (int64_t* dims, int capacity, int* ndim) (int rank = 0) {
  $2 = Rf_asInteger($input);
  if ($2 == NA_INTEGER || $2 < 0) Rf_error("weft: capacity must be a count >= 0");
  $1 = (int64_t*)R_alloc($2 > 0 ? (size_t)$2 : 1, sizeof(int64_t));
  $3 = &rank;
}
%typemap(argout) (int64_t* dims, int capacity, int* ndim) {
  int shown = *$3 < $2 ? *$3 : $2;
  SEXP v = Rf_protect(Rf_allocVector(REALSXP, shown));
  for (int i = 0; i < shown; ++i) REAL(v)[i] = (double)$1[i];
  %append_output(v);
  Rf_unprotect(1);
}
%typemap(freearg) (int64_t* dims, int capacity, int* ndim) ""

/* A shape in: a numeric vector, at least `ndim` (the next argument) long. Kept as doubles
 * on the R side (not SWIG's as.integer) so that dims past 2^31 and fractions reach the
 * check below instead of turning into NA or being truncated. */
%typemap(scoercein) const int64_t* shape %{ $input = as.numeric($input); %}
%typemap(in) const int64_t* shape {
  weft_r_check_count($input, ndim, "shape", "ndim");
  int n = Rf_length($input);
  int64_t* dims = (int64_t*)R_alloc(n > 0 ? (size_t)n : 1, sizeof(int64_t));
  for (int i = 0; i < n; ++i) {
    double d = Rf_isReal($input) ? REAL($input)[i]
               : INTEGER($input)[i] == NA_INTEGER ? NAN : (double)INTEGER($input)[i];
    if (ISNAN(d) || d != (double)(int64_t)d) Rf_error("weft: shape must hold whole numbers, got %g", d);
    dims[i] = (int64_t)d;
  }
  $1 = dims;
}
%typemap(freearg) const int64_t* shape ""

/* ---------------------------------------------------------------- contexts */
/* A context in: a weft_context_t object or c(device_type, device_id); out: the latter. */
%typemap(in) weft_context_t {
  if ((Rf_isInteger($input) || Rf_isReal($input)) && Rf_length($input) == 2) {
    $1.device_type = (int32_t)Rf_asInteger($input);
    $1.device_id = (int32_t)(Rf_isReal($input) ? REAL($input)[1] : INTEGER($input)[1]);
  } else {
    weft_context_t* p = (weft_context_t*)weft_r_as_handle($input, $descriptor(weft_context_t*), "ctx");
    if (p == NULL) Rf_error("weft: ctx must be a weft_context_t or c(device_type, device_id), got NULL");
    $1 = *p;
  }
}
%typemap(in, numinputs=0) weft_context_t* out (weft_context_t temp) { $1 = ($1_ltype)&temp; }
%typemap(argout) weft_context_t* out {
  SEXP ctx = Rf_protect(Rf_allocVector(INTSXP, 2));
  INTEGER(ctx)[0] = $1->device_type;
  INTEGER(ctx)[1] = $1->device_id;
  %append_output(ctx);
  Rf_unprotect(1);
}
%typemap(freearg) weft_context_t* out ""

/* ---------------------------------------------------------------- host memory: raw vectors */
%typemap(in) (const void* data, size_t nbytes), (const void* data, size_t size) {
  if (TYPEOF($input) != RAWSXP) Rf_error("weft: data must be a raw vector");
  $1 = RAW($input);
  $2 = (size_t)Rf_xlength($input);
}
/* Copies out of an array: nbytes in, a raw vector of that many bytes out. */
%typemap(in) (void* data, size_t nbytes) (SEXP buf = R_NilValue) {
  double n = Rf_asReal($input);
  if (ISNAN(n) || n < 0 || n != (double)(size_t)n) Rf_error("weft: nbytes must be a count >= 0");
  buf = Rf_protect(Rf_allocVector(RAWSXP, (R_xlen_t)n));
  r_nprotect++;
  $1 = RAW(buf);
  $2 = (size_t)n;
}
%typemap(argout) (void* data, size_t nbytes) { %append_output(buf$argnum); }

/* weft_bytes_get: the bytes, copied into a raw vector. */
%typemap(in, numinputs=0) (const void** data, size_t* size) (const void* p = NULL, size_t n = 0) {
  $1 = ($1_ltype)&p;
  $2 = &n;
}
%typemap(argout) (const void** data, size_t* size) {
  SEXP raw = Rf_protect(Rf_allocVector(RAWSXP, (R_xlen_t)*$2));
  if (*$2 > 0) memcpy(RAW(raw), *$1, *$2);
  %append_output(raw);
  Rf_unprotect(1);
}
%typemap(freearg) (const void** data, size_t* size) ""

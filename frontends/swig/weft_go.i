/* Go typemaps of weft.i.
 *
 * Every wrapped function returns `error`: nil for WEFT_OK, else an *Error holding the
 * status and weft_get_last_error()'s message. The message is read in the C wrapper, on
 * the thread that made the call; Go may move the goroutine to another thread before any
 * later cgo call could read it. Out-parameters are what the caller passes: pointers for
 * handles, 64-bit integers, strings and byte slices, one-element []int for C ints (Go's
 * int is wider than C's, so the value is converted, not aliased). Handles are the
 * Swigcptr* types SWIG declares (uintptr-sized), slices of them are C arrays of handles,
 * host buffers are []byte.
 */

/* DLPack capsules are a Python protocol; Go exchanges data through []byte. */
%ignore weft_ndarray_to_dlpack;
%ignore weft_ndarray_from_dlpack;

%fragment("CopyString");

%{
/* A failed status for Go: the status code in the first byte (codes are < 256), then the
 * message, in a malloc'ed string that swigCopyString moves into Go memory and frees. */
static _gostring_ weft_go_status_string(int status, const char* message) {
  size_t n = strlen(message);
  _gostring_ s;
  s.p = (char*)malloc(n + 1);
  if (s.p == NULL) _swig_gopanic("weft: out of memory reporting an error");
  s.p[0] = (char)status;
  memcpy(s.p + 1, message, n);
  s.n = (intgo)(n + 1);
  return s;
}

/* A Go string's bytes in malloc'ed memory, never NULL (swigCopyString reads through the
 * pointer even for 0 bytes); swigCopyString moves it into Go memory and frees it. */
static _gostring_ weft_go_string(const char* p, size_t n) {
  _gostring_ s;
  s.p = (char*)malloc(n > 0 ? n : 1);
  if (s.p == NULL) _swig_gopanic("weft: out of memory");
  if (n > 0) memcpy(s.p, p, n);
  s.n = (intgo)n;
  return s;
}

/* Arrays built from Go slices keep their length in a slot before the first element, so
 * that the check typemaps can compare it with the count passed beside the slice. */
static void** weft_go_array_new(intgo n) {
  void** a = (void**)malloc((size_t)(n + 1) * sizeof(void*));
  if (a == NULL) _swig_gopanic("weft: out of memory");
  a[0] = (void*)(uintptr_t)n;
  return a + 1;
}
static intgo weft_go_array_len(const void* arr) {
  return arr == NULL ? 0 : (intgo)(uintptr_t)((void* const*)arr)[-1];
}
static void weft_go_array_free(const void* arr) {
  if (arr != NULL) free((void**)arr - 1);
}
/* A count larger than its slice would make the library read past the array: a
 * programming error, which Go reports by panicking, as it does for an index out of range. */
static void weft_go_check_count(int count, const void* arr, const char* what) {
  if (count > weft_go_array_len(arr)) {
    char message[160];
    snprintf(message, sizeof message, "weft: count %d exceeds the %lld elements of %s", count,
             (long long)weft_go_array_len(arr), what);
    _swig_gopanic(message);
  }
}
%}

%insert(go_wrapper) %{
// Error is a failed Weft call: its status (WEFT_ERR_*) and the library's message.
type Error struct {
	Status  Enum_SS_weft_status
	Message string
}

func (e *Error) Error() string {
	return "weft: " + e.Message
}

// weftStatusError decodes the wrapper's status string (see weft_go_status_string).
func weftStatusError(s string) error {
	if len(s) == 0 {
		return nil
	}
	s = swigCopyString(s)
	return &Error{Status: Enum_SS_weft_status(s[0]), Message: s[1:]}
}

// weftJoinStrings lays strings out NUL-terminated in one buffer: Go memory that C may
// read during the call, unlike a []string, whose elements point to further Go memory.
func weftJoinStrings(strs []string) []byte {
	var b []byte
	for _, s := range strs {
		b = append(b, s...)
		b = append(b, 0)
	}
	return b
}
%}

/* ---------------------------------------------------------------- status */
%typemap(gotype) weft_status_t "error"
%typemap(imtype) weft_status_t "string"
%typemap(out) weft_status_t {
  if ($1 == WEFT_OK) {
    $result.p = NULL;
    $result.n = 0;
  } else {
    $result = weft_go_status_string((int)$1, weft_get_last_error());
  }
}
%typemap(goout) weft_status_t %{ $result = weftStatusError($1) %}

/* ---------------------------------------------------------------- handles */
%define WEFT_GO_HANDLE(TYPE, GOTYPE)
%typemap(gotype) TYPE** out, const TYPE** out "*GOTYPE"
%typemap(in) TYPE** out, const TYPE** out { $1 = ($1_ltype)$input; }
%enddef

WEFT_GO_HANDLE(weft_ndarray_t, SwigcptrStruct_SS_weft_ndarray)
WEFT_GO_HANDLE(weft_ndarray_list_t, SwigcptrStruct_SS_weft_ndarray_list)
WEFT_GO_HANDLE(weft_bytes_t, SwigcptrStruct_SS_weft_bytes)
WEFT_GO_HANDLE(weft_op_t, SwigcptrStruct_SS_weft_op)
WEFT_GO_HANDLE(weft_symbol_t, SwigcptrStruct_SS_weft_symbol)
WEFT_GO_HANDLE(weft_executor_t, SwigcptrStruct_SS_weft_executor)
WEFT_GO_HANDLE(weft_dataiter_t, SwigcptrStruct_SS_weft_dataiter)
WEFT_GO_HANDLE(weft_recordio_t, SwigcptrStruct_SS_weft_recordio)
WEFT_GO_HANDLE(weft_kvstore_t, SwigcptrStruct_SS_weft_kvstore)

/* A slice of handles in; nil is NULL. */
%typemap(gotype) weft_ndarray_t* const* "[]SwigcptrStruct_SS_weft_ndarray"
%typemap(in) weft_ndarray_t* const* {
  $1 = NULL;
  if ($input.len > 0) {
    void** arr = weft_go_array_new($input.len);
    memcpy(arr, $input.array, (size_t)$input.len * sizeof(void*));
    $1 = ($1_ltype)arr;
  }
}
%typemap(freearg) weft_ndarray_t* const* { weft_go_array_free($1); }

/* A slice of strings in; nil is NULL. */
%typemap(gotype) const char* const* "[]string"
%typemap(imtype) const char* const* "[]byte"
%typemap(goin) const char* const* %{ $result = weftJoinStrings($input) %}
%typemap(in) const char* const* {
  $1 = NULL;
  if ($input.len > 0) {
    const char* p = (const char*)$input.array;
    intgo n = 0;
    for (intgo i = 0; i < $input.len; ++i) n += p[i] == '\0';
    const char** arr = (const char**)weft_go_array_new(n);
    for (intgo i = 0; i < n; ++i) {
      arr[i] = p;
      p += strlen(p) + 1;
    }
    $1 = ($1_ltype)arr;
  }
}
%typemap(freearg) const char* const* { weft_go_array_free($1); }

/* Counts are checked against the slices after them (a NULL names list is allowed). */
%typemap(check) (int num_inputs, weft_ndarray_t* const* inputs), (int num_given, weft_ndarray_t* const* given) {
  weft_go_check_count($1, $2, "$2_name");
}
%typemap(check) (int num_params, const char* const* keys, const char* const* vals),
                (int num_outputs, weft_ndarray_t* const* outputs, weft_ndarray_t* const* out_grads) {
  weft_go_check_count($1, $2, "$2_name");
  weft_go_check_count($1, $3, "$3_name");
}
%typemap(check) (int num, weft_ndarray_t* const* arrays, const char* const* names) {
  weft_go_check_count($1, $2, "arrays");
  if ($3 != NULL) weft_go_check_count($1, $3, "names");
}

/* weft_imperative_invoke's outputs: a library-owned C array, read with Weft_go_handle_at. */
%typemap(gotype) weft_ndarray_t* const** outputs "*uintptr"
%typemap(in) weft_ndarray_t* const** outputs { $1 = ($1_ltype)$input; }

%typemap(gotype) uintptr_t outputs "uintptr"
%inline %{
/* Handle i of the array weft_imperative_invoke returned (Go cannot index a C array
 * without package unsafe); i must be below the count it returned. */
weft_ndarray_t* weft_go_handle_at(uintptr_t outputs, int i) {
  return ((weft_ndarray_t* const*)outputs)[i];
}
%}

/* weft_imperative_gradient's in_grads: the caller's slice of num_inputs (the second
 * argument) handles, which the call fills. */
%typemap(gotype) weft_ndarray_t** in_grads "[]SwigcptrStruct_SS_weft_ndarray"
%typemap(in) weft_ndarray_t** in_grads {
  if ($input.len < arg2) _swig_gopanic("weft: in_grads must have num_inputs elements");
  $1 = ($1_ltype)$input.array;
}

/* ---------------------------------------------------------------- plain out-parameters */
/* C ints out: the first element of a []int (a nil slice discards the value). */
%typemap(gotype) int* out, int* ndim, int* major, int* minor, int* patch, int* abi, int* required,
                int* num_outputs "[]int"
%typemap(in) int* out (int temp = 0), int* ndim (int temp = 0), int* major (int temp = 0),
             int* minor (int temp = 0), int* patch (int temp = 0), int* abi (int temp = 0),
             int* required (int temp = 0), int* num_outputs (int temp = 0) {
  $1 = &temp;
}
%typemap(argout) int* out, int* ndim, int* major, int* minor, int* patch, int* abi, int* required,
                  int* num_outputs {
  if ($input.len > 0) ((intgo*)$input.array)[0] = (intgo)temp$argnum;
}

/* Strings out: *string (nil discards the value); NULL gives "". */
%typemap(gotype) const char** "*string"
%typemap(in) const char** (const char* temp = NULL) { $1 = ($1_ltype)&temp; }
%typemap(argout) const char** {
  if ($input != NULL) *$input = weft_go_string(temp$argnum, temp$argnum ? strlen(temp$argnum) : 0);
}
%typemap(goargout) const char** %{
	if $input != nil {
		*$1 = swigCopyString(*$input)
	}
%}

/* ---------------------------------------------------------------- host memory: []byte */
%typemap(gotype) (const void* data, size_t nbytes), (const void* data, size_t size), (void* data, size_t nbytes) "[]byte"
%typemap(in) (const void* data, size_t nbytes), (const void* data, size_t size), (void* data, size_t nbytes) {
  $1 = ($1_ltype)$input.array;
  $2 = (size_t)$input.len;
}

/* weft_bytes_get: the bytes, copied into a Go []byte (nil discards them). */
%typemap(gotype) (const void** data, size_t* size) "*[]byte"
%typemap(imtype) (const void** data, size_t* size) "*string"
%typemap(goin) (const void** data, size_t* size) %{
	var bytesOut string
	$result = &bytesOut
%}
%typemap(in) (const void** data, size_t* size) (const void* p = NULL, size_t n = 0) {
  $1 = ($1_ltype)&p;
  $2 = &n;
}
%typemap(argout) (const void** data, size_t* size) {
  *$input = weft_go_string((const char*)p$argnum, n$argnum);
}
%typemap(goargout) (const void** data, size_t* size) %{
	if $1 != nil {
		*$1 = []byte(swigCopyString(*$input))
	} else {
		swigCopyString(*$input)
	}
%}

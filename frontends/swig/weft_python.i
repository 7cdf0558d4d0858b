/* Python typemaps of weft.i.
 *
 * Handles cross as Python ints (None or 0 is NULL); a sequence of handles may also hold
 * objects with a `handle` attribute (the package's NDArray). A failed call raises the
 * exception that the error factory (installed by weft.base through
 * weft_py_set_error_factory) builds from the status code and the core's message.
 * Calls that block on the engine release the GIL.
 */

%{
static PyObject* weft_py_error_factory = NULL;

static void weft_py_raise(int status) {
  const char* message = weft_get_last_error();
  if (weft_py_error_factory != NULL) {
    PyObject* exc = PyObject_CallFunction(weft_py_error_factory, "is", status, message);
    if (exc != NULL) {
      PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
      Py_DECREF(exc);
    }
    return;
  }
  PyErr_Format(PyExc_RuntimeError, "weft error %d: %s", status, message);
}

/* A handle from a Python int, None, or an object with an int `handle` attribute. */
static int weft_py_as_handle(PyObject* obj, void** out) {
  if (obj == Py_None) {
    *out = NULL;
    return 0;
  }
  if (PyLong_Check(obj)) {
    *out = PyLong_AsVoidPtr(obj);
    return PyErr_Occurred() ? -1 : 0;
  }
  PyObject* attr = PyObject_GetAttrString(obj, "handle");
  if (attr == NULL || !PyLong_Check(attr)) {
    Py_XDECREF(attr);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "expected a Weft handle (an int or an object with a handle), got %s",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  *out = PyLong_AsVoidPtr(attr);
  Py_DECREF(attr);
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject* weft_py_from_handle(const void* handle) {
  if (handle == NULL) Py_RETURN_NONE;
  return PyLong_FromVoidPtr((void*)handle);
}

/* A C array of handles from a Python sequence (None gives NULL); the caller frees it. */
static int weft_py_handle_array(PyObject* obj, weft_ndarray_t*** out) {
  *out = NULL;
  if (obj == Py_None) return 0;
  PyObject* seq = PySequence_Fast(obj, "expected a sequence of Weft arrays");
  if (seq == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  weft_ndarray_t** arr = (weft_ndarray_t**)malloc((n > 0 ? n : 1) * sizeof(weft_ndarray_t*));
  if (arr == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    void* h = NULL;
    if (weft_py_as_handle(PySequence_Fast_GET_ITEM(seq, i), &h) != 0) {
      free(arr);
      Py_DECREF(seq);
      return -1;
    }
    arr[i] = (weft_ndarray_t*)h;
  }
  Py_DECREF(seq);
  *out = arr;
  return 0;
}

/* A C array of UTF-8 strings from a Python sequence of str (None gives NULL). The strings
 * belong to the str objects, which `*keep` (a reference the caller releases) holds. */
static int weft_py_string_array(PyObject* obj, const char*** out, PyObject** keep) {
  *out = NULL;
  *keep = NULL;
  if (obj == Py_None) return 0;
  PyObject* seq = PySequence_Fast(obj, "expected a sequence of str");
  if (seq == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  const char** arr = (const char**)malloc((n > 0 ? n : 1) * sizeof(const char*));
  if (arr == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyUnicode_Check(item)) {
      PyErr_Format(PyExc_TypeError, "expected str at position %zd, got %s", i, Py_TYPE(item)->tp_name);
      free(arr);
      Py_DECREF(seq);
      return -1;
    }
    arr[i] = PyUnicode_AsUTF8(item);
    if (arr[i] == NULL) {
      free(arr);
      Py_DECREF(seq);
      return -1;
    }
  }
  *out = arr;
  *keep = seq;
  return 0;
}

/* The capsule protocol of DLPack: a "dltensor" capsule owns its tensor until a consumer
 * renames it "used_dltensor". */
static void weft_py_dltensor_capsule_free(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    DLManagedTensor* t = (DLManagedTensor*)PyCapsule_GetPointer(capsule, "dltensor");
    if (t != NULL && t->deleter != NULL) t->deleter(t);
  }
}
%}

/* ---------------------------------------------------------------- status */
%typemap(out) weft_status_t {
  if ($1 != WEFT_OK) {
    weft_py_raise((int)$1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}

%inline %{
/* Installs the callable (status code, message) -> exception instance used for failures. */
void weft_py_set_error_factory(PyObject* factory) {
  Py_XINCREF(factory);
  Py_XDECREF(weft_py_error_factory);
  weft_py_error_factory = factory;
}
%}

/* ---------------------------------------------------------------- handles */
%define WEFT_PY_HANDLE(TYPE)
%typemap(in) TYPE* (void* h = NULL), const TYPE* (void* h = NULL) {
  if (weft_py_as_handle($input, &h) != 0) SWIG_fail;
  $1 = ($1_ltype)h;
}
%typemap(in, numinputs=0) TYPE** out (TYPE* temp = NULL) { $1 = &temp; }
%typemap(argout) TYPE** out { $result = SWIG_Python_AppendOutput($result, weft_py_from_handle(*$1)); }
%typemap(in, numinputs=0) const TYPE** out (const TYPE* temp = NULL) { $1 = &temp; }
%typemap(argout) const TYPE** out { $result = SWIG_Python_AppendOutput($result, weft_py_from_handle(*$1)); }
%enddef

WEFT_PY_HANDLE(weft_ndarray_t)
WEFT_PY_HANDLE(weft_ndarray_list_t)
WEFT_PY_HANDLE(weft_bytes_t)
WEFT_PY_HANDLE(weft_op_t)
WEFT_PY_HANDLE(weft_symbol_t)
WEFT_PY_HANDLE(weft_executor_t)
WEFT_PY_HANDLE(weft_dataiter_t)
WEFT_PY_HANDLE(weft_recordio_t)
WEFT_PY_HANDLE(weft_kvstore_t)
WEFT_PY_HANDLE(weft_profile_domain_t)
WEFT_PY_HANDLE(weft_profile_duration_t)
WEFT_PY_HANDLE(weft_profile_counter_t)

%typemap(in) weft_ndarray_t* const* (weft_ndarray_t** arr = NULL) {
  if (weft_py_handle_array($input, &arr) != 0) SWIG_fail;
  $1 = arr;
}
%typemap(freearg) weft_ndarray_t* const* { free(arr$argnum); }

/* Sequences of symbol handles, converted like those of arrays. */
%typemap(in) weft_symbol_t* const* (weft_ndarray_t** arr = NULL) {
  if (weft_py_handle_array($input, &arr) != 0) SWIG_fail;
  $1 = (weft_symbol_t* const*)arr;
}
%typemap(freearg) weft_symbol_t* const* { free(arr$argnum); }

%typemap(in) const char* const* (const char** arr = NULL, PyObject* keep = NULL) {
  if (weft_py_string_array($input, &arr, &keep) != 0) SWIG_fail;
  $1 = ($1_ltype)arr;
}
%typemap(freearg) const char* const* {
  free((void*)arr$argnum);
  Py_XDECREF(keep$argnum);
}

/* weft_imperative_invoke's outputs: a list of handles. */
%typemap(in, numinputs=0) (int* num_outputs, weft_ndarray_t* const** outputs)
    (int n = 0, weft_ndarray_t* const* outs = NULL) {
  $1 = &n;
  $2 = &outs;
}
%typemap(argout) (int* num_outputs, weft_ndarray_t* const** outputs) {
  PyObject* list = PyList_New(*$1);
  if (list == NULL) SWIG_fail;
  for (int i = 0; i < *$1; ++i) PyList_SET_ITEM(list, i, weft_py_from_handle((*$2)[i]));
  $result = SWIG_Python_AppendOutput($result, list);
}

/* weft_imperative_gradient's in_grads: one entry per input (arg2, num_inputs), None where
 * the operator gives no gradient. */
%typemap(in, numinputs=0) weft_ndarray_t** in_grads (weft_ndarray_t** grads = NULL) { $1 = NULL; }
/* Allocated in a check typemap: those run after every argument is converted, so arg2 holds
 * num_inputs here (in the in typemap above it is still unset). */
%typemap(check) weft_ndarray_t** in_grads {
  grads$argnum = (weft_ndarray_t**)calloc(arg2 > 0 ? (size_t)arg2 : 1, sizeof(weft_ndarray_t*));
  if (grads$argnum == NULL) {
    PyErr_NoMemory();
    SWIG_fail;
  }
  $1 = grads$argnum;
}
%typemap(argout) weft_ndarray_t** in_grads {
  PyObject* list = PyList_New(arg2);
  if (list == NULL) SWIG_fail;
  for (int i = 0; i < arg2; ++i) PyList_SET_ITEM(list, i, weft_py_from_handle($1[i]));
  $result = SWIG_Python_AppendOutput($result, list);
}
%typemap(freearg) weft_ndarray_t** in_grads { free(grads$argnum); }

/* ---------------------------------------------------------------- plain out-parameters */
%define WEFT_PY_OUT(TYPE, NAME, MAKE)
%typemap(in, numinputs=0) TYPE* NAME (TYPE temp = 0) { $1 = &temp; }
%typemap(argout) TYPE* NAME { $result = SWIG_Python_AppendOutput($result, MAKE(*$1)); }
%enddef

WEFT_PY_OUT(int, out, PyLong_FromLong)
WEFT_PY_OUT(int, found, PyBool_FromLong)
WEFT_PY_OUT(int, major, PyLong_FromLong)
WEFT_PY_OUT(int, minor, PyLong_FromLong)
WEFT_PY_OUT(int, patch, PyLong_FromLong)
WEFT_PY_OUT(int, abi, PyLong_FromLong)
WEFT_PY_OUT(int, required, PyBool_FromLong)
WEFT_PY_OUT(int64_t, out, PyLong_FromLongLong)
WEFT_PY_OUT(int64_t, free_bytes, PyLong_FromLongLong)
WEFT_PY_OUT(int64_t, total_bytes, PyLong_FromLongLong)
WEFT_PY_OUT(size_t, out, PyLong_FromSize_t)
WEFT_PY_OUT(int, shared_pid, PyLong_FromLong)
WEFT_PY_OUT(int, shared_id, PyLong_FromLong)
WEFT_PY_OUT(int64_t, byte_offset, PyLong_FromLongLong)

%typemap(in, numinputs=0) const char** (const char* temp = NULL) { $1 = &temp; }
%typemap(argout) const char** {
  PyObject* s;
  if (*$1 == NULL) {
    s = SWIG_Py_Void();
  } else {
    s = PyUnicode_FromString(*$1);
    if (s == NULL) SWIG_fail;
  }
  $result = SWIG_Python_AppendOutput($result, s);
}

/* The shape, as a tuple. */
%typemap(in, numinputs=0) (int64_t* dims, int capacity, int* ndim) (int64_t buf[64], int n = 0) {
  $1 = buf;
  $2 = 64;
  $3 = &n;
}
%typemap(argout) (int64_t* dims, int capacity, int* ndim) {
  if (*$3 > $2) {
    PyErr_Format(PyExc_ValueError, "arrays of more than %d dimensions are not supported here (got %d)", $2, *$3);
    SWIG_fail;
  }
  PyObject* t = PyTuple_New(*$3);
  if (t == NULL) SWIG_fail;
  for (int i = 0; i < *$3; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong($1[i]));
  $result = SWIG_Python_AppendOutput($result, t);
}

/* A shape in: a sequence of ints; its length is the rank. */
%typemap(in) (const int64_t* shape, int ndim) (int64_t buf[64]) {
  PyObject* seq = PySequence_Fast($input, "expected a shape (a sequence of int)");
  if (seq == NULL) SWIG_fail;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > 64) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "arrays of more than 64 dimensions are not supported (got %zd)", n);
    SWIG_fail;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    buf[i] = (int64_t)PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (buf[i] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      SWIG_fail;
    }
  }
  Py_DECREF(seq);
  $1 = buf;
  $2 = (int)n;
}

/* ---------------------------------------------------------------- contexts: (type, id) */
%typemap(in) weft_context_t {
  int type = 0, id = 0;
  if (!PyArg_ParseTuple($input, "ii;expected a context as (device_type, device_id)", &type, &id)) SWIG_fail;
  $1.device_type = type;
  $1.device_id = id;
}
%typemap(in, numinputs=0) weft_context_t* out (weft_context_t temp) { $1 = &temp; }
%typemap(argout) weft_context_t* out {
  $result = SWIG_Python_AppendOutput($result, Py_BuildValue("(ii)", (int)$1->device_type, (int)$1->device_id));
}

/* ---------------------------------------------------------------- host memory: buffers */
%typemap(in) (const void* data, size_t nbytes) (Py_buffer view, int have_view = 0),
             (const void* data, size_t size) (Py_buffer view, int have_view = 0) {
  if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS) != 0) SWIG_fail;
  have_view = 1;
  $1 = view.buf;
  $2 = (size_t)view.len;
}
%typemap(freearg) (const void* data, size_t nbytes), (const void* data, size_t size) {
  if (have_view$argnum) PyBuffer_Release(&view$argnum);
}
%typemap(in) (void* data, size_t nbytes) (Py_buffer view, int have_view = 0) {
  if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) SWIG_fail;
  have_view = 1;
  $1 = view.buf;
  $2 = (size_t)view.len;
}
%typemap(freearg) (void* data, size_t nbytes) {
  if (have_view$argnum) PyBuffer_Release(&view$argnum);
}

/* weft_bytes_get: the bytes, copied into a Python bytes object. */
%typemap(in, numinputs=0) (const void** data, size_t* size) (const void* p = NULL, size_t n = 0) {
  $1 = &p;
  $2 = &n;
}
%typemap(argout) (const void** data, size_t* size) {
  PyObject* b = PyBytes_FromStringAndSize((const char*)*$1, (Py_ssize_t)*$2);
  if (b == NULL) SWIG_fail;
  $result = SWIG_Python_AppendOutput($result, b);
}

/* ---------------------------------------------------------------- DLPack capsules */
%typemap(in, numinputs=0) struct DLManagedTensor** out (struct DLManagedTensor* temp = NULL) { $1 = &temp; }
%typemap(argout) struct DLManagedTensor** out {
  PyObject* capsule = PyCapsule_New(*$1, "dltensor", weft_py_dltensor_capsule_free);
  if (capsule == NULL) {
    (*$1)->deleter(*$1);
    SWIG_fail;
  }
  $result = SWIG_Python_AppendOutput($result, capsule);
}
/* A consumed capsule is renamed so that neither its destructor nor a second consumer
 * touches the tensor that Weft now owns. */
%typemap(in) struct DLManagedTensor* tensor (PyObject* capsule = NULL) {
  if (!PyCapsule_IsValid($input, "dltensor")) {
    PyErr_SetString(PyExc_ValueError, "expected a DLPack capsule named 'dltensor' (an unused one)");
    SWIG_fail;
  }
  capsule = $input;
  $1 = (struct DLManagedTensor*)PyCapsule_GetPointer($input, "dltensor");
}
%typemap(argout) struct DLManagedTensor* tensor {
  PyCapsule_SetName(capsule$argnum, "used_dltensor");
  PyCapsule_SetDestructor(capsule$argnum, NULL);
}

/* ---------------------------------------------------------------- blocking calls */
%define WEFT_PY_RELEASE_GIL(NAME)
%exception NAME {
  Py_BEGIN_ALLOW_THREADS
  $action
  Py_END_ALLOW_THREADS
}
%enddef
WEFT_PY_RELEASE_GIL(weft_wait_all)
/* Waits for the engine to drain before a fork (custom operators may need the GIL). */
WEFT_PY_RELEASE_GIL(weft_before_fork)
WEFT_PY_RELEASE_GIL(weft_ndarray_wait_to_read)
WEFT_PY_RELEASE_GIL(weft_ndarray_wait_to_write)
WEFT_PY_RELEASE_GIL(weft_ndarray_copy_to_host)
WEFT_PY_RELEASE_GIL(weft_ndarray_copy_from_host)
WEFT_PY_RELEASE_GIL(weft_ndarray_save)
WEFT_PY_RELEASE_GIL(weft_ndarray_load)
WEFT_PY_RELEASE_GIL(weft_ndarray_to_dlpack)
/* Data iterators block while a batch is prepared or a worker thread stops. */
WEFT_PY_RELEASE_GIL(weft_dataiter_create)
WEFT_PY_RELEASE_GIL(weft_dataiter_next)
WEFT_PY_RELEASE_GIL(weft_dataiter_reset)
WEFT_PY_RELEASE_GIL(weft_dataiter_free)

/* ---------------------------------------------------------------- key-value store callbacks */
/* The updater and the server's command handler are Python callables (None for NULL), called
 * back with the GIL taken: updater(key: str, merged: int handle, stored: int handle) and
 * controller(head: int, body: bytes). The caller keeps the callable alive (weft.kvstore
 * holds it on the store). An exception is printed and reported to the library as a failure. */
%{
static int weft_py_kv_updater(const char* key, weft_ndarray_t* merged, weft_ndarray_t* stored, void* user) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* r = PyObject_CallFunction((PyObject*)user, "sNN", key, weft_py_from_handle(merged),
                                      weft_py_from_handle(stored));
  int rc = 0;
  if (r == NULL) {
    PyErr_Print();
    rc = -1;
  }
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}
static int weft_py_kv_controller(int head, const void* body, size_t size, void* user) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject* r = PyObject_CallFunction((PyObject*)user, "iN", head,
                                      PyBytes_FromStringAndSize((const char*)body, (Py_ssize_t)size));
  int rc = 0;
  if (r == NULL) {
    PyErr_Print();
    rc = -1;
  }
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}
%}
%typemap(in) (weft_kvstore_updater_t updater, void* user) {
  if ($input != Py_None && !PyCallable_Check($input)) {
    PyErr_SetString(PyExc_TypeError, "expected the updater to be callable or None");
    SWIG_fail;
  }
  $1 = $input == Py_None ? NULL : weft_py_kv_updater;
  $2 = (void*)$input;
}
%typemap(in) (weft_kvstore_controller_t controller, void* user) {
  if ($input != Py_None && !PyCallable_Check($input)) {
    PyErr_SetString(PyExc_TypeError, "expected the command handler to be callable or None");
    SWIG_fail;
  }
  $1 = $input == Py_None ? NULL : weft_py_kv_controller;
  $2 = (void*)$input;
}
WEFT_PY_RELEASE_GIL(weft_kvstore_create)
WEFT_PY_RELEASE_GIL(weft_kvstore_free)
WEFT_PY_RELEASE_GIL(weft_kvstore_init)
WEFT_PY_RELEASE_GIL(weft_kvstore_barrier)
WEFT_PY_RELEASE_GIL(weft_kvstore_send_command_to_servers)
WEFT_PY_RELEASE_GIL(weft_kvstore_run_server)
WEFT_PY_RELEASE_GIL(weft_kvstore_run_scheduler)
WEFT_PY_RELEASE_GIL(weft_image_decode)
WEFT_PY_RELEASE_GIL(weft_image_encode)
WEFT_PY_RELEASE_GIL(weft_image_resize)

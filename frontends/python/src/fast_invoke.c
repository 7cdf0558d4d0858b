/* weft._fast: the hot path of the Python front end.
 *
 * `c = a + b` on tiny arrays costs what the binding costs, so this path is written by hand
 * against the C API instead of going through the SWIG wrappers:
 *  - NDArrayBase, the C base of weft.nd.NDArray, holds the handle in a C field, so making
 *    the result of an operator is one allocation and freeing it is one C call, with no
 *    Python-level __init__ or __del__;
 *  - invoke() runs an operator given its handle (an int, as the SWIG module gives it) or
 *    its name (looked up once, then cached), NDArray inputs and string parameters;
 *  - arith() is the dispatch of the comparison operators: same shapes -> the elemwise
 *    operator, other shapes -> the broadcast operator, a Python number -> the scalar
 *    operator. +, -, *, /, % and ** (in-place and reflected too) use the same dispatch
 *    from NDArrayBase's number slots, so `a + b` runs no Python code at all.
 * Everything else of the package uses the SWIG module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>
#include <structmember.h>

#include "weft/c_api.h"

/* Inputs and parameters of most calls fit here; larger calls allocate. */
#define WEFT_FAST_STACK 16
/* Shapes compared by arith(); deeper arrays always take the broadcast operator, which also
 * handles equal shapes. */
#define WEFT_FAST_MAX_NDIM 16

/* Shapes of at most this many axes are kept in the object after their first read. */
#define WEFT_FAST_CACHED_NDIM 6

typedef struct {
  PyObject_HEAD
  weft_ndarray_t* handle;
  int writable;
  PyObject* weakreflist;
  /* A handle's shape never changes, so arith() reads it from the library once and keeps
   * it here: shape_ndim1 is ndim + 1 once read, 0 before (tp_alloc zeroes the object) and
   * for shapes with more axes than fit. */
  int shape_ndim1;
  int64_t shape_dims[WEFT_FAST_CACHED_NDIM];
} NDArrayBase;

static PyTypeObject NDArrayBase_Type;
static PyNumberMethods NDArrayBase_as_number;

/* Set by init(): the class the results are made of (weft.nd.NDArray) and the callable that
 * turns (status, message) into the package's exception. */
static PyTypeObject* result_type = NULL;
static PyObject* error_factory = NULL;
/* Operator name -> int handle, filled on first use of each name. */
static PyObject* op_cache = NULL;

/* ---------------------------------------------------------------- errors */

static PyObject* raise_status(weft_status_t status) {
  const char* message = weft_get_last_error();
  if (error_factory == NULL) {
    PyErr_Format(PyExc_RuntimeError, "weft error %d: %s", (int)status, message);
    return NULL;
  }
  PyObject* exc = PyObject_CallFunction(error_factory, "is", (int)status, message);
  if (exc != NULL) {
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* ---------------------------------------------------------------- NDArrayBase */

/* Set by set_sparse_classes(): the classes of csr and row_sparse results and the operator
 * that makes sparse arrays from dense ones (cast_storage). */
static PyTypeObject* csr_type = NULL;
static PyTypeObject* rsp_type = NULL;
static const weft_op_t* cast_storage_op = NULL;
/* Whether the call being run may return sparse arrays: some input is not a plain NDArray, or
 * the operator is cast_storage. Only then are results asked for their storage type, which
 * keeps that query off the dense path. */
static int maybe_sparse = 0;

static void note_input(PyObject* obj) {
  if (Py_TYPE(obj) != result_type) maybe_sparse = 1;
}

static PyObject* wrap_handle(weft_ndarray_t* handle, int sparse) {
  PyTypeObject* type = result_type != NULL ? result_type : &NDArrayBase_Type;
  if (sparse && csr_type != NULL) {
    int stype = 0;
    if (weft_ndarray_get_storage_type(handle, &stype) == WEFT_OK && stype > 0) type = stype == 2 ? csr_type : rsp_type;
  }
  NDArrayBase* obj = (NDArrayBase*)type->tp_alloc(type, 0);
  if (obj == NULL) {
    weft_ndarray_free(handle);
    return NULL;
  }
  obj->handle = handle;
  obj->writable = 1;
  return (PyObject*)obj;
}

static PyObject* NDArrayBase_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"handle", "writable", NULL};
  PyObject* handle_obj = NULL;
  int writable = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:NDArray", keywords, &handle_obj, &writable)) return NULL;
  void* handle = NULL;
  int made_here = 0; /* a handle of our own (below), freed if the object cannot be made */
  if (PyLong_Check(handle_obj)) {
    handle = PyLong_AsVoidPtr(handle_obj);
  } else if (PyObject_HasAttrString(handle_obj, "_b_base_")) {
    /* MXNet's idiom NDArray(ctypes.cast(arr, NDArrayHandle)), as its monitor callbacks and
     * calibration collectors wrap the array they are given: a ctypes pointer holding the
     * handle of an array another object owns. This object takes a handle of its own on the
     * same memory, so that each frees only its own. */
    PyObject* value = PyObject_GetAttrString(handle_obj, "value");
    if (value == NULL) return NULL;
    void* shared = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
    Py_DECREF(value);
    if (shared == NULL) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NDArray: the handle is NULL");
      return NULL;
    }
    weft_ndarray_t* own = NULL;
    if (weft_ndarray_detach((const weft_ndarray_t*)shared, &own) != 0) {
      PyErr_Format(PyExc_ValueError, "NDArray: the ctypes handle does not name a live array: %s",
                   weft_get_last_error());
      return NULL;
    }
    handle = own;
    made_here = 1;
  } else {
    PyErr_Format(PyExc_TypeError, "NDArray: expected an array handle (int, or a ctypes pointer to one), got %s",
                 Py_TYPE(handle_obj)->tp_name);
    return NULL;
  }
  if (handle == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "NDArray: the handle is NULL");
    return NULL;
  }
  NDArrayBase* self = (NDArrayBase*)type->tp_alloc(type, 0);
  if (self == NULL) {
    if (made_here) weft_ndarray_free((weft_ndarray_t*)handle);
    return NULL;
  }
  /* Ownership moves in only once the object exists, so a failure above leaks nothing and
   * frees nothing the caller still owns. */
  self->handle = (weft_ndarray_t*)handle;
  self->writable = writable;
  return (PyObject*)self;
}

static void NDArrayBase_dealloc(NDArrayBase* self) {
  if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)self);
  /* Freeing only drops this handle's reference; pending work keeps the memory alive. */
  if (self->handle != NULL) weft_ndarray_free(self->handle);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* NDArrayBase_get_handle(NDArrayBase* self, void* closure) {
  (void)closure;
  return PyLong_FromVoidPtr(self->handle);
}

/* Exchanges the handles (and so the arrays) of two NDArrays: how __setstate__ gives an
 * existing object the array it unpickled. The cached shapes go with neither. */
static PyObject* NDArrayBase_swap_handle(NDArrayBase* self, PyObject* other) {
  if (!PyObject_TypeCheck(other, &NDArrayBase_Type)) {
    PyErr_Format(PyExc_TypeError, "_swap_handle: expected an NDArray, got %s", Py_TYPE(other)->tp_name);
    return NULL;
  }
  NDArrayBase* o = (NDArrayBase*)other;
  weft_ndarray_t* h = self->handle;
  self->handle = o->handle;
  o->handle = h;
  self->shape_ndim1 = 0;
  o->shape_ndim1 = 0;
  Py_RETURN_NONE;
}

static PyMethodDef NDArrayBase_methods[] = {
    {"_swap_handle", (PyCFunction)NDArrayBase_swap_handle, METH_O,
     "_swap_handle(other): exchanges the arrays of this NDArray and `other`."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef NDArrayBase_getset[] = {
    {"handle", (getter)NDArrayBase_get_handle, NULL, "The C API handle of the array, as an int.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMemberDef NDArrayBase_members[] = {
    {"writable", T_BOOL, offsetof(NDArrayBase, writable), 0, "Whether operators may write into the array."},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject NDArrayBase_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft._fast.NDArrayBase",
    .tp_basicsize = sizeof(NDArrayBase),
    .tp_dealloc = (destructor)NDArrayBase_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_as_number = &NDArrayBase_as_number,
    .tp_doc = "Owner of one Weft array handle; the base of weft.nd.NDArray.",
    .tp_weaklistoffset = offsetof(NDArrayBase, weakreflist),
    .tp_getset = NDArrayBase_getset,
    .tp_methods = NDArrayBase_methods,
    .tp_members = NDArrayBase_members,
    .tp_new = NDArrayBase_new,
};

/* ---------------------------------------------------------------- argument helpers */

static const weft_op_t* as_op(PyObject* obj) {
  if (PyLong_Check(obj)) {
    const weft_op_t* op = (const weft_op_t*)PyLong_AsVoidPtr(obj);
    if (op == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "invoke: the operator handle is NULL");
    return op;
  }
  if (!PyUnicode_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "invoke: expected an operator handle (int) or name (str), got %s",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  PyObject* cached = PyDict_GetItemWithError(op_cache, obj);
  if (cached != NULL) return (const weft_op_t*)PyLong_AsVoidPtr(cached);
  if (PyErr_Occurred()) return NULL;
  const char* name = PyUnicode_AsUTF8(obj);
  if (name == NULL) return NULL;
  const weft_op_t* op = NULL;
  weft_status_t st = weft_op_get(name, &op);
  if (st != WEFT_OK) return (const weft_op_t*)raise_status(st);
  PyObject* value = PyLong_FromVoidPtr((void*)op);
  if (value == NULL || PyDict_SetItem(op_cache, obj, value) != 0) {
    Py_XDECREF(value);
    return NULL;
  }
  Py_DECREF(value);
  return op;
}

/* A growable C array that starts on the stack. */
typedef struct {
  void* stack[WEFT_FAST_STACK];
  void** data;
} PtrBuf;

static void** ptrbuf_init(PtrBuf* buf, Py_ssize_t n) {
  buf->data = buf->stack;
  if (n > WEFT_FAST_STACK) {
    buf->data = (void**)PyMem_Malloc((size_t)n * sizeof(void*));
    if (buf->data == NULL) PyErr_NoMemory();
  }
  return buf->data;
}

static void ptrbuf_free(PtrBuf* buf) {
  if (buf->data != buf->stack) PyMem_Free(buf->data);
}

static const char* op_name(const weft_op_t* op) {
  const char* name = "?";
  weft_op_get_name(op, &name);
  return name;
}

/* The handles of a sequence of NDArrays. `what` names the sequence in errors. */
static int collect_arrays(PyObject* fast_seq, PtrBuf* buf, const weft_op_t* op, const char* what, int need_writable) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast_seq);
  if (ptrbuf_init(buf, n) == NULL) return -1;
  PyObject** items = PySequence_Fast_ITEMS(fast_seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyObject_TypeCheck(items[i], &NDArrayBase_Type)) {
      PyErr_Format(PyExc_TypeError, "Operator '%s': %s %zd: expected an NDArray, got %s", op_name(op), what, i,
                   Py_TYPE(items[i])->tp_name);
      ptrbuf_free(buf);
      return -1;
    }
    note_input(items[i]);
    NDArrayBase* arr = (NDArrayBase*)items[i];
    if (need_writable && !arr->writable) {
      PyErr_Format(PyExc_ValueError, "Operator '%s': %s %zd is a read-only NDArray", op_name(op), what, i);
      ptrbuf_free(buf);
      return -1;
    }
    buf->data[i] = arr->handle;
  }
  return 0;
}

/* The UTF-8 strings of a sequence of str; they live as long as the sequence. */
static int collect_strings(PyObject* fast_seq, PtrBuf* buf, const char* what) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast_seq);
  if (ptrbuf_init(buf, n) == NULL) return -1;
  PyObject** items = PySequence_Fast_ITEMS(fast_seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyUnicode_Check(items[i])) {
      PyErr_Format(PyExc_TypeError, "invoke: %s %zd: expected str, got %s", what, i, Py_TYPE(items[i])->tp_name);
      ptrbuf_free(buf);
      return -1;
    }
    buf->data[i] = (void*)PyUnicode_AsUTF8(items[i]);
    if (buf->data[i] == NULL) {
      ptrbuf_free(buf);
      return -1;
    }
  }
  return 0;
}

/* Runs the operator and builds the Python result: `out` itself when given, else the new
 * array, or a list of them for operators with several outputs. */
static PyObject* run(const weft_op_t* op, int num_inputs, weft_ndarray_t* const* inputs, int num_params,
                     const char* const* keys, const char* const* vals, PyObject* out) {
  int num_outputs = 0;
  weft_ndarray_t* const* outputs = NULL;
  /* This thread keeps the GIL through the call, so the wait for room a push may do happens
   * here first, with the GIL let go: a custom operator's callback that the queued work waits
   * for needs the GIL to run. */
  weft_status_t room = weft_engine_wait_for_room();
  if (room != WEFT_OK) return raise_status(room);
  /* Read before the call: a call that blocks lets go of the GIL (weft_set_blocking_hooks),
   * and other threads' calls set maybe_sparse meanwhile. */
  const int sparse = maybe_sparse || op == cast_storage_op;
  if (out == Py_None) {
    weft_status_t st =
        weft_imperative_invoke(op, num_inputs, inputs, num_params, keys, vals, 0, NULL, &num_outputs, &outputs);
    if (st != WEFT_OK) return raise_status(st);
    if (num_outputs == 1) return wrap_handle(outputs[0], sparse);
    PyObject* list = PyList_New(num_outputs);
    if (list == NULL) {
      for (int i = 0; i < num_outputs; ++i) weft_ndarray_free(outputs[i]);
      return NULL;
    }
    for (int i = 0; i < num_outputs; ++i) {
      PyObject* item = wrap_handle(outputs[i], sparse);
      if (item == NULL) {
        for (int j = i + 1; j < num_outputs; ++j) weft_ndarray_free(outputs[j]);
        Py_DECREF(list);
        return NULL;
      }
      PyList_SET_ITEM(list, i, item);
    }
    return list;
  }

  weft_status_t st;
  if (PyObject_TypeCheck(out, &NDArrayBase_Type)) {
    NDArrayBase* arr = (NDArrayBase*)out;
    if (!arr->writable) {
      PyErr_Format(PyExc_ValueError, "Operator '%s': the output NDArray is read-only", op_name(op));
      return NULL;
    }
    st = weft_imperative_invoke(op, num_inputs, inputs, num_params, keys, vals, 1, &arr->handle, &num_outputs,
                                &outputs);
  } else {
    PyObject* seq = PySequence_Fast(out, "invoke: out must be an NDArray or a sequence of NDArrays");
    if (seq == NULL) return NULL;
    PtrBuf given;
    if (collect_arrays(seq, &given, op, "output", 1) != 0) {
      Py_DECREF(seq);
      return NULL;
    }
    st = weft_imperative_invoke(op, num_inputs, inputs, num_params, keys, vals, (int)PySequence_Fast_GET_SIZE(seq),
                                (weft_ndarray_t* const*)given.data, &num_outputs, &outputs);
    ptrbuf_free(&given);
    Py_DECREF(seq);
  }
  if (st != WEFT_OK) return raise_status(st);
  Py_INCREF(out);
  return out;
}

/* ---------------------------------------------------------------- module functions */

PyDoc_STRVAR(invoke_doc,
             "invoke(op, inputs, keys, vals, out) -> NDArray, list of NDArray, or out\n\n"
             "Runs operator `op` (an int handle or a name) on the NDArrays `inputs` with the string\n"
             "parameters keys[i] = vals[i] (keys and vals may be None). `out` is None (new arrays\n"
             "are returned: one NDArray, or a list when the operator has several outputs), an\n"
             "NDArray or a sequence of NDArrays to write into (then `out` is returned).");

static PyObject* fast_invoke(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 5) {
    PyErr_Format(PyExc_TypeError, "invoke() takes 5 arguments (op, inputs, keys, vals, out), got %zd", nargs);
    return NULL;
  }
  const weft_op_t* op = as_op(args[0]);
  if (op == NULL) return NULL;
  maybe_sparse = 0;

  PyObject* result = NULL;
  PyObject* in_seq = NULL;
  PyObject* key_seq = NULL;
  PyObject* val_seq = NULL;
  PtrBuf inputs, keys, vals;
  int have_inputs = 0, have_keys = 0, have_vals = 0;
  Py_ssize_t num_params = 0;

  in_seq = PySequence_Fast(args[1], "invoke: inputs must be a sequence of NDArrays");
  if (in_seq == NULL) goto done;
  if (collect_arrays(in_seq, &inputs, op, "input", 0) != 0) goto done;
  have_inputs = 1;

  if (args[2] != Py_None) {
    key_seq = PySequence_Fast(args[2], "invoke: keys must be a sequence of str");
    val_seq = key_seq != NULL ? PySequence_Fast(args[3], "invoke: vals must be a sequence of str") : NULL;
    if (val_seq == NULL) goto done;
    num_params = PySequence_Fast_GET_SIZE(key_seq);
    if (PySequence_Fast_GET_SIZE(val_seq) != num_params) {
      PyErr_Format(PyExc_ValueError, "Operator '%s': %zd parameter keys but %zd values", op_name(op), num_params,
                   PySequence_Fast_GET_SIZE(val_seq));
      goto done;
    }
    if (collect_strings(key_seq, &keys, "key") != 0) goto done;
    have_keys = 1;
    if (collect_strings(val_seq, &vals, "value") != 0) goto done;
    have_vals = 1;
  }

  result = run(op, (int)PySequence_Fast_GET_SIZE(in_seq), (weft_ndarray_t* const*)inputs.data, (int)num_params,
               have_keys ? (const char* const*)keys.data : NULL, have_vals ? (const char* const*)vals.data : NULL,
               args[4]);
done:
  if (have_inputs) ptrbuf_free(&inputs);
  if (have_keys) ptrbuf_free(&keys);
  if (have_vals) ptrbuf_free(&vals);
  Py_XDECREF(in_seq);
  Py_XDECREF(key_seq);
  Py_XDECREF(val_seq);
  return result;
}

/* The shape of `arr` into dims (room for WEFT_FAST_MAX_NDIM) and *ndim, from the object's
 * cache when it was read before. */
static int read_shape(NDArrayBase* arr, int64_t* dims, int* ndim) {
  if (arr->shape_ndim1 > 0) {
    *ndim = arr->shape_ndim1 - 1;
    memcpy(dims, arr->shape_dims, sizeof(int64_t) * (size_t)*ndim);
    return 0;
  }
  weft_status_t st = weft_ndarray_get_shape(arr->handle, dims, WEFT_FAST_MAX_NDIM, ndim);
  if (st != WEFT_OK) {
    raise_status(st);
    return -1;
  }
  if (*ndim <= WEFT_FAST_CACHED_NDIM) {
    memcpy(arr->shape_dims, dims, sizeof(int64_t) * (size_t)*ndim);
    arr->shape_ndim1 = *ndim + 1;
  }
  return 0;
}

static int same_shape(NDArrayBase* a, NDArrayBase* b, int* out) {
  int64_t da[WEFT_FAST_MAX_NDIM], db[WEFT_FAST_MAX_NDIM];
  int na = 0, nb = 0;
  if (read_shape(a, da, &na) != 0 || read_shape(b, db, &nb) != 0) return -1;
  *out = 0;
  if (na != nb || na > WEFT_FAST_MAX_NDIM) return 0;
  for (int i = 0; i < na; ++i)
    if (da[i] != db[i]) return 0;
  *out = 1;
  return 0;
}

PyDoc_STRVAR(arith_doc,
             "arith(lhs, rhs, elemwise_op, broadcast_op, scalar_op, out) -> NDArray or NotImplemented\n\n"
             "The arithmetic and comparison dispatch of NDArray: `rhs` an NDArray of lhs's shape runs\n"
             "elemwise_op, of another shape broadcast_op, a Python int, float or bool runs scalar_op\n"
             "with parameter scalar=rhs. An operator given as 0 is not available: an NDArray rhs then\n"
             "takes the other one, a number gives NotImplemented. Anything else gives NotImplemented.\n"
             "`out` is None or the NDArray to write into.");

/* The dispatch behind arith() and the number slots; an operator may be NULL (missing). */
static PyObject* arith_core(PyObject* lhs, PyObject* rhs, const weft_op_t* elem, const weft_op_t* bcast,
                            const weft_op_t* scalar_op, PyObject* out) {
  if (!PyObject_TypeCheck(lhs, &NDArrayBase_Type)) Py_RETURN_NOTIMPLEMENTED;
  weft_ndarray_t* inputs[2] = {((NDArrayBase*)lhs)->handle, NULL};
  maybe_sparse = 0;
  note_input(lhs);
  if (PyObject_TypeCheck(rhs, &NDArrayBase_Type)) note_input(rhs);

  if (PyObject_TypeCheck(rhs, &NDArrayBase_Type)) {
    inputs[1] = ((NDArrayBase*)rhs)->handle;
    const weft_op_t* op = elem != NULL ? elem : bcast;
    if (elem != NULL && bcast != NULL) {
      int same = 0;
      if (same_shape((NDArrayBase*)lhs, (NDArrayBase*)rhs, &same) != 0) return NULL;
      if (!same) op = bcast;
    }
    if (op == NULL) Py_RETURN_NOTIMPLEMENTED;
    return run(op, 2, inputs, 0, NULL, NULL, out);
  }

  /* bool is an int subclass and numpy's float64 a float subclass: both take this path. */
  char buf[64];
  const char* text = NULL;
  char* owned = NULL;
  if (PyFloat_Check(rhs)) {
    owned = PyOS_double_to_string(PyFloat_AS_DOUBLE(rhs), 'r', 0, 0, NULL);
    if (owned == NULL) return NULL;
    text = owned;
  } else if (PyLong_Check(rhs)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(rhs, &overflow);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (overflow != 0) {
      /* Beyond 64 bits only the magnitude survives the conversion to the array's dtype. */
      owned = PyOS_double_to_string(PyLong_AsDouble(rhs), 'r', 0, 0, NULL);
      if (owned == NULL) return NULL;
      text = owned;
    } else {
      PyOS_snprintf(buf, sizeof(buf), "%lld", v);
      text = buf;
    }
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  if (scalar_op == NULL) {
    PyMem_Free(owned);
    Py_RETURN_NOTIMPLEMENTED;
  }
  static const char* const key[1] = {"scalar"};
  const char* val[1] = {text};
  PyObject* result = run(scalar_op, 1, inputs, 1, key, val, out);
  PyMem_Free(owned);
  return result;
}

static PyObject* fast_arith(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 6) {
    PyErr_Format(PyExc_TypeError,
                 "arith() takes 6 arguments (lhs, rhs, elemwise_op, broadcast_op, scalar_op, out), got %zd", nargs);
    return NULL;
  }
  const weft_op_t* ops[3];
  for (int i = 0; i < 3; ++i) {
    ops[i] = (const weft_op_t*)PyLong_AsVoidPtr(args[2 + i]);
    if (ops[i] == NULL && PyErr_Occurred()) return NULL;
  }
  return arith_core(args[0], args[1], ops[0], ops[1], ops[2], args[5]);
}

/* ---------------------------------------------------------------- number slots */

/* The operators behind +, -, *, /, % and ** (and their in-place and reflected forms),
 * resolved by name when the module is first initialised, so `a + b` runs without a
 * Python frame. */
typedef enum { ARITH_ADD, ARITH_SUB, ARITH_MUL, ARITH_DIV, ARITH_MOD, ARITH_POW, ARITH_COUNT } ArithKind;

static const char* const arith_names[ARITH_COUNT][4] = {
    /* elemwise, broadcast, scalar, reflected scalar (number OP array) */
    {"elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar"},
    {"elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar"},
    {"elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar"},
    {"elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar"},
    {"_mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar"},
    {"_power", "broadcast_power", "_power_scalar", "_rpower_scalar"},
};
static const weft_op_t* arith_ops[ARITH_COUNT][4];
/* numpy.generic, whose 0-d scalars (numpy.int64, numpy.float32, ...) count as numbers. */
static PyObject* numpy_scalar_type = NULL;

static PyObject* slot_once(PyObject* x, PyObject* y, ArithKind kind, PyObject* out) {
  const weft_op_t* const* ops = arith_ops[kind];
  if (PyObject_TypeCheck(x, &NDArrayBase_Type)) return arith_core(x, y, ops[0], ops[1], ops[2], out);
  /* Reflected: y is the array and x a number. */
  return arith_core(y, x, NULL, NULL, ops[3], Py_None);
}

static PyObject* arith_slot(PyObject* x, PyObject* y, ArithKind kind, int inplace) {
  PyObject* out = inplace ? x : Py_None;
  PyObject* result = slot_once(x, y, kind, out);
  if (result != Py_NotImplemented || numpy_scalar_type == NULL) return result;
  PyObject* other = PyObject_TypeCheck(x, &NDArrayBase_Type) ? y : x;
  int is_scalar = PyObject_IsInstance(other, numpy_scalar_type);
  if (is_scalar <= 0) return is_scalar < 0 ? (Py_DECREF(result), NULL) : result;
  /* A numpy scalar is not a Python number, but its value is. */
  Py_DECREF(result);
  PyObject* value = PyObject_CallMethod(other, "item", NULL);
  if (value == NULL) return NULL;
  result = other == y ? slot_once(x, value, kind, out) : slot_once(value, y, kind, out);
  Py_DECREF(value);
  return result;
}

#define WEFT_ARITH_SLOTS(fn, kind)                                                          \
  static PyObject* nb_##fn(PyObject* x, PyObject* y) { return arith_slot(x, y, kind, 0); } \
  static PyObject* nb_inplace_##fn(PyObject* x, PyObject* y) { return arith_slot(x, y, kind, 1); }
WEFT_ARITH_SLOTS(add, ARITH_ADD)
WEFT_ARITH_SLOTS(sub, ARITH_SUB)
WEFT_ARITH_SLOTS(mul, ARITH_MUL)
WEFT_ARITH_SLOTS(div, ARITH_DIV)
WEFT_ARITH_SLOTS(mod, ARITH_MOD)
#undef WEFT_ARITH_SLOTS

static PyObject* nb_pow(PyObject* x, PyObject* y, PyObject* z) {
  if (z != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return arith_slot(x, y, ARITH_POW, 0);
}

static PyObject* nb_inplace_pow(PyObject* x, PyObject* y, PyObject* z) {
  if (z != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return arith_slot(x, y, ARITH_POW, 1);
}

static PyNumberMethods NDArrayBase_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_remainder = nb_mod,
    .nb_power = nb_pow,
    .nb_inplace_add = nb_inplace_add,
    .nb_inplace_subtract = nb_inplace_sub,
    .nb_inplace_multiply = nb_inplace_mul,
    .nb_inplace_remainder = nb_inplace_mod,
    .nb_inplace_power = nb_inplace_pow,
    .nb_true_divide = nb_div,
    .nb_inplace_true_divide = nb_inplace_div,
};

static int resolve_arith_ops(void) {
  for (int k = 0; k < ARITH_COUNT; ++k) {
    for (int j = 0; j < 4; ++j) {
      weft_status_t st = weft_op_get(arith_names[k][j], &arith_ops[k][j]);
      if (st != WEFT_OK) {
        raise_status(st);
        return -1;
      }
    }
  }
  return 0;
}

PyDoc_STRVAR(init_doc,
             "init(ndarray_class, error_factory, numpy_scalar_type=None)\n\n"
             "Sets the class of the arrays invoke() and arith() return (a subclass of NDArrayBase),\n"
             "the callable (status, message) -> exception used for failed calls, and the type whose\n"
             "instances the arithmetic operators treat as numbers through their item() (numpy.generic).");

static PyObject* fast_init(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* cls = NULL;
  PyObject* factory = NULL;
  PyObject* scalar_type = NULL;
  if (!PyArg_ParseTuple(args, "OO|O:init", &cls, &factory, &scalar_type)) return NULL;
  if (scalar_type != NULL && !PyType_Check(scalar_type)) {
    PyErr_SetString(PyExc_TypeError, "init: numpy_scalar_type must be a type");
    return NULL;
  }
  if (resolve_arith_ops() != 0) return NULL;
  Py_XINCREF(scalar_type);
  Py_XSETREF(numpy_scalar_type, scalar_type);
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &NDArrayBase_Type)) {
    PyErr_SetString(PyExc_TypeError, "init: ndarray_class must be a subclass of NDArrayBase");
    return NULL;
  }
  if (!PyCallable_Check(factory)) {
    PyErr_SetString(PyExc_TypeError, "init: error_factory must be callable");
    return NULL;
  }
  Py_INCREF(cls);
  Py_XSETREF(result_type, (PyTypeObject*)cls);
  Py_INCREF(factory);
  Py_XSETREF(error_factory, factory);
  Py_RETURN_NONE;
}

PyDoc_STRVAR(set_sparse_classes_doc,
             "set_sparse_classes(csr_class, row_sparse_class, cast_storage_op)\n\n"
             "The classes (subclasses of the result class) of the csr and row_sparse arrays that\n"
             "invoke() and arith() return, and the handle of the operator cast_storage.");

static PyObject* fast_set_sparse_classes(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *csr = NULL, *rsp = NULL, *op = NULL;
  if (!PyArg_ParseTuple(args, "OOO:set_sparse_classes", &csr, &rsp, &op)) return NULL;
  if (!PyType_Check(csr) || !PyType_IsSubtype((PyTypeObject*)csr, &NDArrayBase_Type) || !PyType_Check(rsp) ||
      !PyType_IsSubtype((PyTypeObject*)rsp, &NDArrayBase_Type)) {
    PyErr_SetString(PyExc_TypeError, "set_sparse_classes: expected two subclasses of NDArrayBase");
    return NULL;
  }
  const weft_op_t* cast = as_op(op);
  if (cast == NULL) return NULL;
  Py_INCREF(csr);
  Py_XSETREF(csr_type, (PyTypeObject*)csr);
  Py_INCREF(rsp);
  Py_XSETREF(rsp_type, (PyTypeObject*)rsp);
  cast_storage_op = cast;
  Py_RETURN_NONE;
}

/* The engine's blocking hooks (weft_set_blocking_hooks): a thread that holds the GIL lets go
 * of it while it waits on the engine, since a custom operator's callback takes the GIL on
 * the library's thread, and a wait for that operator (or for work queued behind it) would
 * otherwise never end. Threads without the GIL (engine workers, calls that released it
 * already) wait as they are. */
static void* block_enter(void) {
  if (!Py_IsInitialized() || !PyGILState_Check()) return NULL;
  return PyEval_SaveThread();
}

static void block_leave(void* token) {
  if (token != NULL) PyEval_RestoreThread((PyThreadState*)token);
}

PyDoc_STRVAR(set_blocking_hooks_doc,
             "set_blocking_hooks(on)\n\n"
             "Lets (on=True) or stops letting (on=False) a thread that blocks on the engine release\n"
             "the GIL while it waits.");

static PyObject* fast_set_blocking_hooks(PyObject* self, PyObject* arg) {
  (void)self;
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  weft_status_t st = on ? weft_set_blocking_hooks(block_enter, block_leave) : weft_set_blocking_hooks(NULL, NULL);
  if (st != 0) return raise_status(st);
  Py_RETURN_NONE;
}

static PyMethodDef fast_methods[] = {
    {"set_blocking_hooks", fast_set_blocking_hooks, METH_O, set_blocking_hooks_doc},
    {"set_sparse_classes", fast_set_sparse_classes, METH_VARARGS, set_sparse_classes_doc},
    {"invoke", (PyCFunction)(void (*)(void))fast_invoke, METH_FASTCALL, invoke_doc},
    {"arith", (PyCFunction)(void (*)(void))fast_arith, METH_FASTCALL, arith_doc},
    {"init", fast_init, METH_VARARGS, init_doc},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT, "_fast", "The hand-written hot path of Weft's Python front end.", -1, fast_methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
  if (PyType_Ready(&NDArrayBase_Type) != 0) return NULL;
  op_cache = PyDict_New();
  if (op_cache == NULL) return NULL;
  PyObject* m = PyModule_Create(&fast_module);
  if (m == NULL) return NULL;
  Py_INCREF(&NDArrayBase_Type);
  if (PyModule_AddObject(m, "NDArrayBase", (PyObject*)&NDArrayBase_Type) != 0) {
    Py_DECREF(&NDArrayBase_Type);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

"""General utilities of MXNet 1.x's `mxnet.util`: the NumPy-semantics switches, the
environment of the C runtime, GPU queries and decorators.

What the NumPy switches do in Weft
----------------------------------
Weft's arrays always have NumPy's shape semantics: `nd.ones(())` is a scalar of shape (),
`nd.zeros((0, 2))` is a zero-size array. What `np_shape` changes is how *symbol shape
inference* reads and writes shapes, as in MXNet:

- off (the default, MXNet 1.x's legacy rule): a 0 in a known shape means "unknown";
  `infer_shape_partial` writes unknown dimensions as 0 and an unknown shape as ().
- on: 0 is a real zero-size dimension, -1 means unknown; `infer_shape_partial` writes
  unknown dimensions as -1 and an unknown shape as None.

It also changes NDArray files as in MXNet: on, `nd.save` writes numpy-shape (V3) records,
which hold 0-d arrays, and `nd.load` reads only those; off, V3 records are refused.

The switch is global to the process (MXNet keeps it per thread in C++ but one Python
program sets it for all its threads alike); the library keeps a copy for its save and load
functions (weft_set_np_shape).

`np_array` marks code that wants `mxnet.numpy.ndarray`s. Weft does not have the
NumPy-style interface (`mx.np`, `mx.npx`) yet: the scope is tracked (per thread, as in
MXNet) and `is_np_array()` reports it, so code that only asks keeps working, but arrays
created inside are still `weft.nd.NDArray`s.
"""
import ctypes
import functools
import inspect
import os
import threading

from .base import _api

__all__ = ["makedirs", "get_cuda_compute_capability", "np_ufunc_legal_option", "wrap_np_unary_func",
           "wrap_np_binary_func", "get_gpu_count", "get_gpu_memory", "set_np_shape", "is_np_shape",
           "np_shape", "use_np_shape", "set_module", "np_array", "is_np_array", "use_np_array",
           "use_np", "set_np", "reset_np", "getenv", "setenv", "wraps_safely"]


def makedirs(d):
    """Creates the folder `d` and its parents; an existing folder is fine."""
    os.makedirs(d, exist_ok=True)


def get_gpu_count():
    """The number of GPUs this build can use (0 without CUDA support or without a GPU)."""
    return _api.weft_get_gpu_count()


def _cudart():
    # The CUDA runtime libweft was linked against, found among the libraries already mapped
    # into this process (so it is the same runtime, with the same device numbering).
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart.so" in line}
    except OSError:
        paths = set()
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def get_gpu_memory(gpu_dev_id):
    """(free, total) bytes of memory of GPU `gpu_dev_id`, as the CUDA runtime reports them."""
    count = get_gpu_count()
    if count == 0:
        raise RuntimeError("get_gpu_memory: no GPU is usable (this build of Weft has no CUDA support or "
                           "the machine has no GPU), so GPU %r has no memory to report" % (gpu_dev_id,))
    if not isinstance(gpu_dev_id, int) or not 0 <= gpu_dev_id < count:
        raise ValueError("get_gpu_memory: expected a GPU id in [0, %d), got %r" % (count, gpu_dev_id))
    rt = _cudart()
    if rt is None:
        raise RuntimeError("get_gpu_memory: the CUDA runtime library (libcudart) is not loaded in this process")
    prev = ctypes.c_int()
    free_b, total_b = ctypes.c_size_t(), ctypes.c_size_t()
    if rt.cudaGetDevice(ctypes.byref(prev)) != 0:
        raise RuntimeError("get_gpu_memory: cudaGetDevice failed")
    try:
        err = rt.cudaSetDevice(gpu_dev_id)
        if err == 0:
            err = rt.cudaMemGetInfo(ctypes.byref(free_b), ctypes.byref(total_b))
        if err != 0:
            raise RuntimeError("get_gpu_memory: the CUDA runtime failed with error %d for GPU %d" % (err, gpu_dev_id))
    finally:
        rt.cudaSetDevice(prev.value)
    return free_b.value, total_b.value


# ---------------------------------------------------------------- NumPy shape semantics
_np_shape = [False]
_np_shape_lock = threading.Lock()


def set_np_shape(active):
    """Turns NumPy shape semantics on or off (see the module's doc); returns the previous
    state. The library is told too: NDArray save/load write and accept MXNet's numpy-shape
    records by it (2, MXNet's process-wide mode, also loads classic records)."""
    mode = 2 if (active == 2 and not isinstance(active, bool)) else (1 if active else 0)
    with _np_shape_lock:
        prev = _np_shape[0]
        _api.weft_set_np_shape(mode)
        _np_shape[0] = bool(active)
    return prev


def is_np_shape():
    """Whether NumPy shape semantics are on."""
    return _np_shape[0]


class _NumpyShapeScope(object):
    """The scope `np_shape(active)` returns: sets the state on entry, restores it on exit."""

    def __init__(self, is_np_shape):  # pylint: disable=redefined-outer-name
        self._enter_is_np_shape = is_np_shape
        self._prev_is_np_shape = None

    def __enter__(self):
        if self._enter_is_np_shape is not None:
            self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, ptype, value, trace):
        if self._enter_is_np_shape is not None and self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)


def np_shape(active=True):
    """A `with` scope in which NumPy shape semantics are `active`."""
    return _NumpyShapeScope(active)


def wraps_safely(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS):
    """functools.wraps (MXNet kept this name for Python 2)."""
    return functools.wraps(wrapped, assigned=assigned)


def _decorate_in_scope(func, scope, name):
    # A class gets each of its functions, static functions and properties wrapped; a
    # callable runs inside the scope.
    if inspect.isclass(func):
        for attr, member in list(vars(func).items()):
            if isinstance(member, property):
                setattr(func, attr, property(_decorate_in_scope(member.fget, scope, name) if member.fget else None,
                                             member.fset, member.fdel, member.__doc__))
            elif isinstance(member, staticmethod):
                setattr(func, attr, staticmethod(_decorate_in_scope(member.__func__, scope, name)))
            elif isinstance(member, classmethod):
                setattr(func, attr, classmethod(_decorate_in_scope(member.__func__, scope, name)))
            elif inspect.isfunction(member):
                setattr(func, attr, _decorate_in_scope(member, scope, name))
        return func
    if callable(func):
        @functools.wraps(func)
        def in_scope(*args, **kwargs):
            with scope():
                return func(*args, **kwargs)
        return in_scope
    raise TypeError("%s: expected a class or a callable to decorate, got %s" % (name, type(func).__name__))


def use_np_shape(func):
    """Decorator: `func` (a function, or every method and property of a class) runs with
    NumPy shape semantics on."""
    return _decorate_in_scope(func, lambda: np_shape(True), "use_np_shape")


def set_module(module):
    """Decorator: sets `__module__` of a function or class to `module` (None: unchanged)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


# ---------------------------------------------------------------- NumPy array semantics
class _NumpyArrayScope(object):
    """The scope `np_array(active)` returns; the innermost one of each thread is current."""
    _current = threading.local()

    def __init__(self, is_np_array):  # pylint: disable=redefined-outer-name
        self._old_scope = None
        self._is_np_array = is_np_array

    def __enter__(self):
        self._old_scope = getattr(_NumpyArrayScope._current, "value", None)
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        _NumpyArrayScope._current.value = self._old_scope


def np_array(active=True):
    """A `with` scope in which NumPy array semantics are `active` (see the module's doc:
    Weft still creates `nd.NDArray`s)."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether NumPy array semantics are on in this thread."""
    scope = getattr(_NumpyArrayScope._current, "value", None)
    return bool(scope._is_np_array) if scope is not None else False


def use_np_array(func):
    """Decorator: `func` (or every method and property of a class) runs in an
    `np_array(True)` scope."""
    return _decorate_in_scope(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: both `use_np_shape` and `use_np_array`."""
    return use_np_array(use_np_shape(func))


def set_np(shape=True, array=True, dtype=False):
    """Sets NumPy shape and array semantics for the rest of the program (array semantics
    for this thread). MXNet refuses array semantics without shape semantics; so does this.
    `dtype=True` (float64 as the default dtype of the NumPy interface) needs that interface,
    which Weft does not have yet."""
    if not shape and array:
        raise ValueError("set_np: NumPy array semantics (array=True) need NumPy shape semantics (shape=True)")
    if dtype:
        raise NotImplementedError("set_np(dtype=True): float64 as the default dtype belongs to the NumPy-style "
                                  "interface (mx.np), which Weft does not have yet")
    set_np_shape(shape)
    # As MXNet's set_np: the thread's array scope becomes `array` until changed again.
    _NumpyArrayScope._current.value = _NumpyArrayScope(array)


def reset_np():
    """Turns NumPy shape and array semantics off."""
    set_np(shape=False, array=False)


# ---------------------------------------------------------------- environment
def getenv(name):
    """The value of the environment variable `name` as the C runtime (and so libweft) sees
    it, or None when it is not set."""
    if not isinstance(name, str):
        raise TypeError("getenv: expected a str name, got %s" % type(name).__name__)
    # os.environ writes through to the C runtime with putenv/unsetenv, so both agree.
    return os.environ.get(name)


def setenv(name, value):
    """Sets the environment variable `name` to `value` (a str) for Python and the C runtime
    alike; None unsets it."""
    if not isinstance(name, str):
        raise TypeError("setenv: expected a str name, got %s" % type(name).__name__)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_cuda_compute_capability(ctx):
    """The CUDA compute capability of GPU context `ctx` as major * 10 + minor (e.g. 80),
    read from the driver library (libcuda). ValueError for a context that is not a GPU,
    OSError where no driver library loads (a machine without a GPU driver), RuntimeError
    naming the driver's error otherwise."""
    if ctx.device_type != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, while received ctx %s" % (ctx,))
    for libname in ("libcuda.so.1", "libcuda.so"):
        try:
            cuda = ctypes.CDLL(libname)
            break
        except OSError:
            continue
    else:
        raise OSError("get_cuda_compute_capability: could not load the CUDA driver (libcuda.so.1, libcuda.so)")

    def check(ret, what):
        if ret != 0:
            text = ctypes.c_char_p()
            cuda.cuGetErrorString(ret, ctypes.byref(text))
            raise RuntimeError("%s failed with error code %d: %s"
                               % (what, ret, (text.value or b"unknown").decode()))

    major, minor, device = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(device), ctx.device_id), "cuDeviceGet")
    check(cuda.cuDeviceComputeCapability(ctypes.byref(major), ctypes.byref(minor), device),
          "cuDeviceComputeCapability")
    return major.value * 10 + minor.value


# The NumPy ufunc keywords the numpy-interface wrappers accept, at their default values.
_np_ufunc_default_kwargs = {"where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True}
_NP_UFUNC_DTYPES = ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")


def np_ufunc_legal_option(key, value):
    """Whether `value` is a value NumPy allows for ufunc keyword `key` (where, casting,
    order, dtype, subok); False for any other key."""
    if key == "where":
        return True
    if key == "casting":
        return value in ("no", "equiv", "safe", "same_kind", "unsafe")
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        name = value if isinstance(value, str) else getattr(value, "__name__", None)
        return name in _NP_UFUNC_DTYPES
    if key == "subok":
        return isinstance(value, bool)
    return False


def _check_np_ufunc_kwargs(func, kwargs):
    for key, value in kwargs.items():
        if key not in _np_ufunc_default_kwargs:
            raise TypeError("%s is an invalid keyword to function '%s'" % (key, func.__name__))
        if value != _np_ufunc_default_kwargs[key]:
            if np_ufunc_legal_option(key, value):
                raise NotImplementedError("%s=%s is not implemented yet for operator %s" % (key, value, func.__name__))
            raise TypeError("%s=%s not understood for operator %s" % (key, value, func.__name__))


def wrap_np_unary_func(func):
    """Wraps func(x, out=None) so that NumPy's ufunc keywords are accepted at their defaults,
    a legal other value raises NotImplementedError and anything else TypeError."""
    @functools.wraps(func)
    def _wrap_np_unary_func(x, out=None, **kwargs):
        _check_np_ufunc_kwargs(func, kwargs)
        return func(x, out=out)
    return _wrap_np_unary_func


def wrap_np_binary_func(func):
    """As wrap_np_unary_func for func(x1, x2, out=None)."""
    @functools.wraps(func)
    def _wrap_np_binary_func(x1, x2, out=None, **kwargs):
        _check_np_ufunc_kwargs(func, kwargs)
        return func(x1, x2, out=out)
    return _wrap_np_binary_func

"""The bottom of the package: the low-level modules, errors and version.

`_api` is the SWIG module generated from frontends/swig/weft.i: the C API one for one,
with handles as ints, out-parameters as results and failures raised as exceptions built
by `_error_from_status`. `_fast` is the hand-written hot path (frontends/python/src).
"""
import ctypes as _ctypes
import os

import numpy as _np

from . import _fast
from . import weft_swig as _api

# A thread that blocks on the engine while holding the GIL lets go of it while it waits: a
# custom operator's callback needs the GIL on the library's thread (weft/__init__.py stops
# this at exit, before the interpreter goes).
_fast.set_blocking_hooks(True)

__all__ = ["WeftError", "MXNetError", "check_call", "error", "__version__", "py_str", "c_str",
           "c_array", "data_dir", "data_dir_default", "string_types", "numeric_types",
           "integer_types", "mx_real_t", "mx_uint", "mx_int", "mx_float", "NotImplementedForSymbol",
           "NotSupportedForSparseNDArray", "NDArrayHandle", "SymbolHandle", "ExecutorHandle",
           "KVStoreHandle", "OpHandle", "CachedOpHandle", "DataIterHandle",
           "DataIterCreatorHandle", "RecordIOHandle", "FunctionHandle", "ProfileHandle",
           "DLPackHandle", "classproperty"]

# The C API's status codes (weft_status_t).
OK = 0
ERR_VALUE = 1
ERR_TYPE = 2
ERR_INDEX = 3
ERR_SHAPE = 4
ERR_IO = 5
ERR_NOT_FOUND = 6
ERR_UNSUPPORTED = 7
ERR_RUNTIME = 8
ERR_INTERNAL = 9
ERR_HANDLE = 10

_STATUS_NAMES = {
    ERR_VALUE: "value",
    ERR_TYPE: "type",
    ERR_INDEX: "index",
    ERR_SHAPE: "shape",
    ERR_IO: "io",
    ERR_NOT_FOUND: "not found",
    ERR_UNSUPPORTED: "unsupported",
    ERR_RUNTIME: "runtime",
    ERR_INTERNAL: "internal",
    ERR_HANDLE: "handle",
}


class WeftError(RuntimeError):
    """An error reported by Weft. `status` is the C API's status code; the message is the
    core's. It is a RuntimeError, as MXNet's MXNetError is (code that catches RuntimeError
    around MXNet calls catches it); subclasses also derive from the matching built-in
    exception (ValueError, IndexError, ...) so that generic Python code reacts as it would
    to numpy."""

    def __init__(self, message, status=ERR_RUNTIME):
        super().__init__(message)
        self.status = status

    @property
    def kind(self):
        """The status as a word: 'value', 'index', 'shape', ..."""
        return _STATUS_NAMES.get(self.status, "unknown")


# MXNet 1.x code catches this name.
MXNetError = WeftError


class WeftValueError(WeftError, ValueError):
    """A bad value: out of range, malformed, or a handle that is NULL, freed or of the wrong kind."""


class WeftTypeError(WeftError, TypeError):
    """A wrong dtype."""


class WeftIndexError(WeftError, IndexError):
    """An index or axis out of bounds."""


class WeftShapeError(WeftError, ValueError):
    """Shapes that do not fit."""


class WeftIOError(WeftError, OSError):
    """A file or stream problem, or corrupt data."""


class WeftNotFoundError(WeftError, LookupError):
    """An unknown operator, key or file."""


class WeftUnsupportedError(WeftError, NotImplementedError):
    """Something this build or machine cannot do (e.g. no GPU)."""


class WeftRuntimeError(WeftError, RuntimeError):
    """A failure while running, or a broken invariant inside Weft."""


class WeftAttributeError(WeftError, AttributeError):
    """A missing attribute, named so by the message ("AttributeError: ...")."""


class InternalError(WeftRuntimeError):
    """A broken invariant inside Weft (status ERR_INTERNAL): the message asks for a report."""

    def __init__(self, msg, status=ERR_INTERNAL):
        if "Weft hint:" not in msg:
            msg += "\nWeft hint: this is an internal error of Weft; please report it with the code that raised it."
        super().__init__(msg, status)


_ERROR_CLASSES = {
    ERR_VALUE: WeftValueError,
    ERR_TYPE: WeftTypeError,
    ERR_INDEX: WeftIndexError,
    ERR_SHAPE: WeftShapeError,
    ERR_IO: WeftIOError,
    ERR_NOT_FOUND: WeftNotFoundError,
    ERR_UNSUPPORTED: WeftUnsupportedError,
    ERR_RUNTIME: WeftRuntimeError,
    ERR_INTERNAL: InternalError,
    ERR_HANDLE: WeftValueError,
}


# Error classes by name (MXNet's error_types): a message whose first line starts with a
# registered name and a colon ("IndexError: ...", "MyError: ..."; an extension library's or a
# custom operator's error) is raised as that class instead of the status's.
error_types = {"ValueError": WeftValueError, "TypeError": WeftTypeError, "IndexError": WeftIndexError,
               "AttributeError": WeftAttributeError, "NotImplementedError": WeftUnsupportedError,
               "InternalError": InternalError}


def register_error(func_name=None, cls=None):
    """Registers an error class under a name (its own by default) so that C API errors
    whose message starts with "<name>:" raise it. As a decorator: @register_error or
    @register_error("Name"); or register_error("Name", cls)."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls

    return register if cls is None else register(cls)


def _named_error_class(message):
    head = message.split("\n", 1)[0]
    end = head.find(":")
    if end <= 0:
        return None
    name = head[:end]
    if name.startswith("mxnet.error.") or name.startswith("weft.error."):
        name = name[name.index("error.") + 6:]
    return error_types.get(name)


def error(status, message):
    """The exception for a C API status and message (not raised)."""
    cls = _named_error_class(message) or _ERROR_CLASSES.get(status, WeftError)
    if issubclass(cls, WeftError):
        return cls(message, status)
    return cls(message)


def _error_from_status(status, message):
    # Called from C (the SWIG typemaps and _fast) with the core's message.
    return error(status, message)


_api.weft_py_set_error_factory(_error_from_status)


# A process forked after the engine ran (a DataLoader's workers, any os.fork) must not
# inherit it mid-work: before the fork the engine drains and stops its threads, with the GIL
# released (custom operators may need it to finish); after it they start again on demand, in
# the parent and in the child.
os.register_at_fork(before=_api.weft_before_fork, after_in_parent=lambda: _api.weft_after_fork(0),
                    after_in_child=lambda: _api.weft_after_fork(1))


def check_call(ret):
    """Raises the WeftError of a raw C API status `ret` (non-zero), with the last error
    message of this thread. The SWIG functions raise by themselves; this is for code that
    holds a status from elsewhere."""
    if ret != OK:
        raise error(ret, _api.weft_get_last_error())


def _library_version():
    major, minor, patch, _abi = _api.weft_get_version()
    return "%d.%d.%d" % (major, minor, patch)


__version__ = _library_version()


_ctypes_lib = None


def ctypes_library():
    """libweft as a ctypes library, for the few C API entry points that take C callbacks
    (SWIG does not turn Python callables into function pointers). It is the library the
    SWIG module already loaded, so it shares all state."""
    global _ctypes_lib  # pylint: disable=global-statement
    if _ctypes_lib is None:
        import ctypes
        import os
        here = os.path.dirname(os.path.abspath(__file__))
        names = sorted(n for n in os.listdir(here) if n.startswith("libweft.so"))
        if not names:
            raise RuntimeError("libweft is not in the package folder %s" % here)
        _ctypes_lib = ctypes.CDLL(os.path.join(here, names[0]))
        _ctypes_lib.weft_get_last_error.restype = ctypes.c_char_p
    return _ctypes_lib


class _MXNetLibrary(object):
    """What `mxnet.base._LIB` is to scripts written for MXNet (many import it beside
    check_call): libweft through ctypes (ctypes_library). MXNet's C functions (MX*) are not
    in it: Weft's C API is the weft_* functions of c_api.h. Asking for one raises an
    AttributeError that says so, instead of ctypes' bare "undefined symbol"."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(ctypes_library(), name)
        except AttributeError:
            raise AttributeError("mxnet.base._LIB.%s: %s is not in Weft's library; it is a function of MXNet's C API, "
                                 "which Weft does not provide (Weft's C API is the weft_* functions of c_api.h): use "
                                 "the Python API instead" % (name, name)) from None

    def __repr__(self):
        return "<Weft's library through ctypes (mxnet.base._LIB)>"


_LIB = _MXNetLibrary()


def atomic_write(fname, data):
    """Writes the bytes `data` to `fname` as the C library writes `.params` files: into a
    temporary file in the same folder, flushed to the disk, then renamed over `fname`, so
    that a crash or a kill midway leaves the previous file intact instead of a truncated one."""
    fname = os.path.realpath(os.fspath(fname))  # a link stays a link: its target is replaced
    if os.path.exists(fname) and not os.path.isfile(fname):
        # A device or a pipe (/dev/null) cannot be replaced by a rename: write into it.
        with open(fname, "wb") as f:
            f.write(data)
        return
    tmp = "%s.tmp.%d" % (fname, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- MXNet's base names
# Scripts and libraries written for MXNet import these from `mxnet.base`.

string_types = (str,)
# numpy's scalars count as numbers, as in MXNet.
numeric_types = (float, int, _np.generic)
integer_types = (int, _np.int32, _np.int64)
# The default element type of arrays.
mx_real_t = _np.float32
# The C types MXNet's ctypes calls used; Weft's C API takes the same widths.
mx_uint = _ctypes.c_uint
mx_int = _ctypes.c_int
mx_float = _ctypes.c_float

# Weft's handles cross into Python through SWIG as plain ints (the opaque pointer's address,
# checked by the C API on every call), not ctypes.c_void_p as in MXNet: these aliases are the
# type a handle attribute (`NDArray.handle`, `Symbol.handle`, ...) really has, so that
# `isinstance(x.handle, NDArrayHandle)` holds.
class _HandleType(type(_ctypes.c_void_p)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, int) or type.__instancecheck__(cls, obj)


class NDArrayHandle(_ctypes.c_void_p, metaclass=_HandleType):
    """An array handle. Weft's are ints (isinstance holds for them); the class itself is a
    ctypes pointer type, so that MXNet's idiom for the arrays a monitor callback is given,
    NDArray(ctypes.cast(arr, NDArrayHandle), writable=False), works: the NDArray made takes a
    handle of its own on the same array."""


SymbolHandle = int
ExecutorHandle = int
KVStoreHandle = int
OpHandle = int
CachedOpHandle = int
DataIterHandle = int
DataIterCreatorHandle = int
RecordIOHandle = int
FunctionHandle = int
ProfileHandle = int
DLPackHandle = int


class _NullType(object):
    """The placeholder for an argument left out (MXNet's `_Null`): distinct from None,
    which can be a meaningful value of an operator parameter."""

    def __repr__(self):
        return "_Null"

    def __bool__(self):
        return False


_Null = _NullType()


def _as_list(obj):
    """`obj` if it is a list, else [obj] (MXNet's helper, imported by Gluon libraries)."""
    return obj if isinstance(obj, list) else [obj]


def py_str(x):
    """A str from the bytes a C function returned (UTF-8); a str is returned as is."""
    if isinstance(x, bytes):
        return x.decode("utf-8")
    if isinstance(x, str):
        return x
    raise TypeError("py_str: expected bytes or str, got %s" % type(x).__name__)


def c_str(string):
    """`string` as a NUL-terminated C string (ctypes.c_char_p), for the ctypes entry points
    of `ctypes_library()`."""
    if not isinstance(string, (str, bytes)):
        raise TypeError("c_str: expected a str, got %s" % type(string).__name__)
    return _ctypes.c_char_p(string.encode("utf-8") if isinstance(string, str) else string)


def c_str_array(strings):
    """A ctypes array of C strings (char*[]) holding `strings`."""
    arr = (_ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") if isinstance(s, str) else s for s in strings]
    return arr


def c_array(ctype, values):
    """A ctypes array of `ctype` holding `values`, for the ctypes entry points of
    `ctypes_library()` (e.g. c_array(ctypes.c_int64, shape))."""
    values = list(values)
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf):
    """A ctypes array of `ctype` over the buffer `buf` (no copy)."""
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs):
    """A ctypes array of void pointers holding the `.handle` of each object."""
    arr = (_ctypes.c_void_p * len(objs))()
    arr[:] = [o.handle for o in objs]
    return arr


def data_dir_default():
    """Where data sets and models go when MXNET_HOME is not set: ~/.mxnet, as MXNet, so that
    files MXNet downloaded are found (%APPDATA%\\mxnet on Windows)."""
    if os.name == "nt":
        return os.path.join(os.environ.get("APPDATA", os.path.expanduser("~")), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The folder for data sets and pretrained models: $MXNET_HOME, else data_dir_default()."""
    return os.getenv("MXNET_HOME", data_dir_default())


class _NotAvailable(NotImplementedError):
    """A function called on a kind of array that lacks it: names the function, the operator
    it stands for and the argument types; `_kind` and `_verb` say what is missing."""
    _kind = ""
    _verb = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = "Function {}".format(self.function)
        if self.alias:
            msg += " (namely operator \"{}\")".format(self.alias)
        if self.args:
            msg += " with arguments ({})".format(", ".join(self.args))
        return msg + " is not {} for {} and only available in NDArray.".format(self._verb, self._kind)


class NotImplementedForSymbol(_NotAvailable):
    """An NDArray method or operator that a Symbol cannot have (e.g. asnumpy)."""
    _kind, _verb = "Symbol", "implemented"


class NotSupportedForSparseNDArray(_NotAvailable):
    """An operation that a sparse NDArray does not support."""
    _kind, _verb = "SparseNDArray", "supported"


class classproperty(object):  # pylint: disable=invalid-name
    """A property of a class (MXNet's base.classproperty). Read-only unless given a
    `.setter` and defined in a class whose metaclass is _ClassPropertyMeta (a plain class
    would replace the property on assignment)."""

    def __init__(self, func, fset=None):
        self.func = func
        self.fset = fset

    def __get__(self, obj, owner):
        return self.func(owner)

    def setter(self, fset):
        """The function that `Class.name = value` calls, as fset(cls, value)."""
        return classproperty(self.func, fset)


class _ClassPropertyMeta(type):
    """Sends `Class.name = value` to the setter of a classproperty `name`: how MXNet's
    Context.default_ctx, AttrScope.current and NameManager.current are assigned (each a
    per-thread value behind a class attribute)."""

    def __setattr__(cls, key, value):
        for klass in cls.__mro__:
            prop = klass.__dict__.get(key)
            if isinstance(prop, classproperty):
                if prop.fset is None:
                    raise AttributeError("%s.%s is read-only" % (cls.__name__, key))
                prop.fset(cls, value)
                return
            if prop is not None:
                break
        super().__setattr__(key, value)

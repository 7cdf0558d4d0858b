"""The bottom of the package: the low-level modules, errors and version.

`_api` is the SWIG module generated from frontends/swig/weft.i: the C API one for one,
with handles as ints, out-parameters as results and failures raised as exceptions built
by `_error_from_status`. `_fast` is the hand-written hot path (frontends/python/src).
"""
import os

from . import _fast
from . import weft_swig as _api

__all__ = ["WeftError", "MXNetError", "check_call", "error", "__version__"]

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


class WeftError(Exception):
    """An error reported by Weft. `status` is the C API's status code; the message is the
    core's. Subclasses also derive from the matching built-in exception (ValueError,
    IndexError, ...) so that generic Python code reacts as it would to numpy."""

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


_ERROR_CLASSES = {
    ERR_VALUE: WeftValueError,
    ERR_TYPE: WeftTypeError,
    ERR_INDEX: WeftIndexError,
    ERR_SHAPE: WeftShapeError,
    ERR_IO: WeftIOError,
    ERR_NOT_FOUND: WeftNotFoundError,
    ERR_UNSUPPORTED: WeftUnsupportedError,
    ERR_RUNTIME: WeftRuntimeError,
    ERR_INTERNAL: WeftRuntimeError,
    ERR_HANDLE: WeftValueError,
}


def error(status, message):
    """The exception for a C API status and message (not raised)."""
    cls = _ERROR_CLASSES.get(status, WeftError)
    return cls(message, status)


def _error_from_status(status, message):
    # Called from C (the SWIG typemaps and _fast) with the core's message.
    return error(status, message)


_api.weft_py_set_error_factory(_error_from_status)


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


def atomic_write(fname, data):
    """Writes the bytes `data` to `fname` as the C library writes `.params` files: into a
    temporary file in the same folder, flushed to the disk, then renamed over `fname`, so
    that a crash or a kill midway leaves the previous file intact instead of a truncated one."""
    fname = os.fspath(fname)
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

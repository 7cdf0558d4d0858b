"""Libraries of operators, as MXNet's `mx.library`: `load(path)` opens a shared library built
against Weft's `weft/op_library.h` and makes each of its operators a function of `mx.nd`
and `mx.sym` (and of their `op` modules). The core registers every operator of the library
as a custom operator of its name, so a call is `Custom(*inputs, op_type=name, **params)`."""
import ctypes
import os

from .base import ctypes_library, error
from . import ndarray as _nd
from . import symbol as _sym

__all__ = ["load", "compiled_with_gcc_cxx11_abi"]

_loaded = {}


def _library():
    lib = ctypes_library()
    if not getattr(lib, "_weft_library_ready", False):
        lib.weft_library_load.restype = ctypes.c_int
        lib.weft_library_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.weft_library_op_name.restype = ctypes.c_int
        lib.weft_library_op_name.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.weft_get_last_error.restype = ctypes.c_char_p
        lib._weft_library_ready = True
    return lib


def _check(lib, status):
    if status != 0:
        raise error(status, lib.weft_get_last_error().decode())


def _nd_function(name):
    def fn(*inputs, **kwargs):
        return _nd.Custom(*inputs, op_type=name, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Operator %r of a library loaded with mx.library.load (inputs, then parameters)." % name
    return fn


def _sym_function(name):
    def fn(*inputs, **kwargs):
        return _sym.Custom(*inputs, op_type=name, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Operator %r of a library loaded with mx.library.load (inputs, then parameters)." % name
    return fn


def load(path, verbose=True):
    """Loads the library of operators at `path` and returns the names of its operators,
    which become mx.nd.<name> and mx.sym.<name>. Loading a path again does nothing more."""
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(path):
        raise error(6, "mx.library.load: no such file %r" % path)
    lib = _library()
    count = ctypes.c_int()
    _check(lib, lib.weft_library_load(path.encode(), ctypes.byref(count)))
    names = []
    for i in range(count.value):
        out = ctypes.c_char_p()
        _check(lib, lib.weft_library_op_name(path.encode(), i, ctypes.byref(out)))
        names.append(out.value.decode())
    for name in names:
        for module, make in ((_nd, _nd_function), (_sym, _sym_function)):
            f = make(name)
            setattr(module, name, f)
            if hasattr(module, "op"):
                setattr(module.op, name, f)
    if verbose and path not in _loaded:
        print("loaded library %s: operators %s" % (path, ", ".join(names)))
    _loaded[path] = names
    return names


def compiled_with_gcc_cxx11_abi():
    """Libraries of operators talk plain C (weft/op_library.h): the C++ ABI they were built
    with does not matter. Returns 1, the ABI of the library itself."""
    return 1

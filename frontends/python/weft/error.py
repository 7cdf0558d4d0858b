"""weft.error (MXNet's mxnet.error): the error classes raised by C API calls, by name.

A failed call raises the class of its status (base.py: WeftValueError, WeftIndexError, ...,
InternalError for a broken invariant), all subclasses of MXNetError and of the matching
built-in exception; a message that starts with a registered name and a colon raises that
name's class instead. `register` adds a name, as MXNet's does for extension libraries.
"""
from .base import (MXNetError, InternalError, register_error, error_types,  # noqa: F401
                   WeftValueError, WeftTypeError, WeftIndexError, WeftAttributeError, WeftUnsupportedError)

__all__ = ["MXNetError", "register"]

register = register_error

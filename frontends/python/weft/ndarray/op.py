"""weft.ndarray.op (MXNet's mxnet.ndarray.op): the NDArray function of every registered
operator under its public name (those without a leading underscore; all are in
weft.ndarray._internal), the same function objects weft.nd holds. Imported by weft.ndarray
after it generated them."""
from . import _ops
from .cached_op import CachedOp  # noqa: F401

__all__ = ["CachedOp"]

globals().update({name: fn for name, fn in _ops._functions.items() if not name.startswith("_")})

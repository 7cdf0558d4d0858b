"""weft.symbol (also weft.sym): MXNet 1.x's declarative graph API.

Symbol, Variable, Group, load/load_json are in symbol.py; every registered operator is
added here as a generated function that builds a node (see _ops.py), and all of them,
internal names included, in `weft.symbol._internal`.
"""
import types as _types

from .symbol import Symbol, Variable, var, Group, load, load_json, fromjson
from . import _ops

_internal = _types.ModuleType("weft.symbol._internal", "Every operator, internal names included.")
_ops.populate(globals(), _internal.__dict__)

from . import contrib, linalg, image, random  # noqa: E402  (filled from the operators populated above)


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros of `shape`."""
    return _ops.get("_zeros")(shape=shape, dtype=dtype, **kwargs)


def ones(shape, dtype=None, **kwargs):
    """A symbol of ones of `shape`."""
    return _ops.get("_ones")(shape=shape, dtype=dtype, **kwargs)


def _elementwise_pair(array_op, scalar_op, scalar_rop):
    def fn(lhs, rhs):
        if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
            return _ops.get(array_op)(lhs, rhs)
        if isinstance(lhs, Symbol):
            return _ops.get(scalar_op)(lhs, scalar=float(rhs))
        if isinstance(rhs, Symbol):
            return _ops.get(scalar_rop)(rhs, scalar=float(lhs))
        raise TypeError("expected at least one Symbol, got %s and %s" % (type(lhs).__name__, type(rhs).__name__))
    return fn


maximum = _elementwise_pair("broadcast_maximum", "_maximum_scalar", "_maximum_scalar")
minimum = _elementwise_pair("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")

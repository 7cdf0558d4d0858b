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

from . import contrib, linalg, image, random, sparse  # noqa: E402  (filled from the operators populated above)


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


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits `ary` along `axis` into `indices_or_sections` near-equal pieces (an int) or at
    the given indices (a tuple: ary[:i0], ary[i0:i1], ..., ary[ik:])."""
    if isinstance(indices_or_sections, int):
        return _ops.get("_split_v2")(ary, indices=(), axis=axis, squeeze_axis=squeeze_axis,
                                     sections=indices_or_sections)
    if isinstance(indices_or_sections, tuple):
        return _ops.get("_split_v2")(ary, indices=(0,) + indices_or_sections, axis=axis, squeeze_axis=squeeze_axis)
    raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints, got %r" % (indices_or_sections,))


def histogram(a, bins=10, range=None, **kwargs):  # pylint: disable=redefined-builtin
    """Counts and bin edges of `a`: `bins` equal bins over `range`, or a Symbol of edges."""
    if isinstance(bins, Symbol):
        return _ops.get("_histogram")(data=a, bins=bins, **kwargs)
    if isinstance(bins, int):
        if range is None:
            raise ValueError("histogram: a symbol needs a range with an int bins")
        return _ops.get("_histogram")(data=a, bin_cnt=bins, range=tuple(range), **kwargs)
    raise ValueError("histogram: bins must be an int or a Symbol, got %r" % (bins,))

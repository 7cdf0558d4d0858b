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
_ops._nd_ops.install_fluent(Symbol, _ops._functions)
_internal._CachedOp = symbol._cached_op  # a composition, not a registered operator (see there)
from . import op  # noqa: E402  (the public operators as MXNet's op module holds them)

from . import contrib, linalg, image, random, sparse  # noqa: E402  (filled from the operators populated above)


# MXNet's module-level functions (numbers or Symbols on either side, creation); after the
# operators, so that these names are the functions and not an operator of that name.
from .symbol import (zeros, ones, full, eye, arange, linspace, pow, power, maximum, minimum,  # noqa: E402
                     hypot, split_v2, histogram)

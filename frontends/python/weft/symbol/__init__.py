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

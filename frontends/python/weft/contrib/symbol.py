"""weft.contrib.symbol (`mx.contrib.sym`): MXNet 1.x's older home of the contributed
operators as Symbol functions (`mx.contrib.sym.Proposal` is `mx.sym.contrib.Proposal`)."""
from ..symbol import _ops

__all__ = []

_ops.populate_namespace(globals(), "_contrib_")

"""weft.contrib.ndarray (`mx.contrib.nd`): MXNet 1.x's older home of the contributed
operators, kept by MXNet for old scripts: every `_contrib_<name>` operator under its short
name, as an NDArray function (`mx.contrib.nd.Proposal` is `mx.nd.contrib.Proposal`)."""
from ..ndarray import _ops

__all__ = []

_ops.populate_namespace(globals(), "_contrib_")

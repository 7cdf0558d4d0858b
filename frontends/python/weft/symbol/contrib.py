"""weft.symbol.contrib: MXNet's symbol.contrib namespace, the contributed operators (registered as
`_contrib_<name>`) under their short names, as Symbol functions."""
from . import _ops

_ops.populate_namespace(globals(), "_contrib_")

"""weft.symbol.linalg: MXNet's symbol.linalg namespace, the linear algebra operators (registered as
`_linalg_<name>`) under their short names, as Symbol functions."""
from . import _ops

_ops.populate_namespace(globals(), "_linalg_")

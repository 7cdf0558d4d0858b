"""weft.ndarray.linalg: MXNet's ndarray.linalg namespace, the linear algebra operators (registered as
`_linalg_<name>`) under their short names, as NDArray functions."""
from . import _ops

_ops.populate_namespace(globals(), "_linalg_")

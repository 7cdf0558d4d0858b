"""weft.ndarray.contrib: MXNet's ndarray.contrib namespace, the contributed operators (registered as
`_contrib_<name>`) under their short names, as NDArray functions."""
from . import _ops

_ops.populate_namespace(globals(), "_contrib_")

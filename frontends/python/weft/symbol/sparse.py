"""weft.symbol.sparse: MXNet's symbol.sparse namespace, the operators registered as
`_sparse_<name>` under their short names, as Symbol functions. A graph binds dense arrays,
so these compute densely in an executor (their imperative forms keep sparse storage)."""
from . import _ops

_ops.populate_namespace(globals(), "_sparse_")

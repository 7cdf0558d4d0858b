"""weft.contrib: MXNet's mx.contrib namespace."""
from . import amp  # noqa: F401
from . import onnx  # noqa: F401
from . import text  # noqa: F401
# MXNet's mx.contrib.ndarray and mx.contrib.symbol (short names nd and sym) hold the
# _contrib_* operators, as mx.nd.contrib and mx.sym.contrib do; MXNet's own examples of
# fft and count_sketch call them there.
from ..ndarray import contrib as ndarray  # noqa: F401
from ..symbol import contrib as symbol  # noqa: F401

nd = ndarray
sym = symbol

"""weft.contrib: MXNet's mx.contrib namespace."""
from . import onnx  # noqa: F401

"""weft.contrib: MXNet's mx.contrib namespace."""
from . import amp  # noqa: F401
from . import onnx  # noqa: F401
from . import quantization  # noqa: F401
from . import text  # noqa: F401

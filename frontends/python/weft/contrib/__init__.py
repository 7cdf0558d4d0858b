"""weft.contrib: MXNet's mx.contrib namespace."""
from . import amp  # noqa: F401
from . import autograd  # noqa: F401
from . import io  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import onnx  # noqa: F401
from . import quantization  # noqa: F401
from . import quantization as quant  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import svrg_optimization  # noqa: F401
from . import tensorboard  # noqa: F401
from . import text  # noqa: F401

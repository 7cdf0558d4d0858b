"""Weft: an asynchronous deep-learning engine with MXNet 1.x's Python API.

    import weft as mx
    a = mx.nd.ones((2, 3))
    (a * 2).asnumpy()

Arrays live on an engine that runs operators asynchronously; reading values back
(asnumpy, asscalar, wait_to_read) waits for what they depend on.
"""
from .base import WeftError, MXNetError, __version__
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from . import ndarray
from . import ndarray as nd
from . import random
from . import autograd
from . import name
from . import symbol
from . import symbol as sym
from . import executor
from . import test_utils

__all__ = ["WeftError", "MXNetError", "__version__", "Context", "cpu", "gpu", "cpu_pinned",
           "current_context", "num_gpus", "ndarray", "nd", "random", "autograd", "name", "symbol", "sym", "executor", "test_utils", "waitall"]


def waitall():
    """Blocks until every operation pushed so far has finished."""
    nd.waitall()

"""Weft: an asynchronous deep-learning engine with MXNet 1.x's Python API.

    import weft as mx
    a = mx.nd.ones((2, 3))
    (a * 2).asnumpy()

Arrays live on an engine that runs operators asynchronously; reading values back
(asnumpy, asscalar, wait_to_read) waits for what they depend on.
"""
import atexit as _atexit
import sys as _sys

from .base import WeftError, MXNetError, __version__
from . import base
from .context import Context, cpu, gpu, cpu_pinned, cpu_shared, current_context, num_gpus
from . import util
from .util import (is_np_shape, set_np_shape, np_shape, use_np_shape, is_np_array, np_array,
                   use_np_array, use_np)
from . import runtime
from . import profiler
from . import engine, error, log
from . import ndarray
from . import ndarray as nd
from . import random
from . import autograd
from . import name
from . import attribute
from .attribute import AttrScope
from . import symbol
from . import symbol as sym
# autograd sits below symbol in the layers; its get_symbol (a Symbol of the recorded history)
# is made by symbol and put in place here.
autograd.get_symbol = symbol.symbol.get_symbol
from . import executor
from . import operator
from . import library
from . import monitor
from . import monitor as mon
from . import test_utils
from . import model
from . import module
from . import module as mod
from . import initializer
from . import initializer as init
from . import metric
from . import callback
from . import rnn
from . import recordio
from . import image
from . import image as img
from . import optimizer
from . import lr_scheduler
from . import gluon
from . import kvstore
from . import kvstore as kv
from . import io
from . import visualization
from . import visualization as viz
from . import onnx
from . import contrib

__all__ = ["WeftError", "MXNetError", "__version__", "base", "Context", "cpu", "gpu", "cpu_pinned",
           "cpu_shared", "current_context", "num_gpus", "util", "runtime", "profiler", "is_np_shape", "set_np_shape",
           "np_shape", "use_np_shape", "is_np_array", "np_array", "use_np_array", "use_np", "attribute", "AttrScope", "ndarray", "nd", "random", "autograd", "name", "symbol", "sym", "executor", "operator", "library", "monitor", "mon", "test_utils", "waitall",
           "model", "module", "mod",
           "initializer", "init", "metric", "callback", "rnn", "recordio", "image", "img",
           "optimizer", "lr_scheduler", "gluon", "kvstore", "kv", "io", "visualization", "viz", "onnx", "contrib"]


# MXNet's test_utils hands the package to `from mxnet.test_utils import *` as `mx`.
test_utils.mx = _sys.modules[__name__]


def waitall():
    """Blocks until every operation pushed so far has finished."""
    nd.waitall()


# A server or scheduler process (DMLC_ROLE, set by tools/launch.py) runs its role here and
# exits, so that one command line serves every role, as in MXNet.
kvstore._run_role()


def _wait_at_exit():
    # Work still queued on the engine uses objects (oneDNN's engine, caches) that are
    # destroyed with the process's static objects: let it finish first. An error it raises
    # was never read by the program, so it is not reported now either.
    try:
        nd.waitall()
    except WeftError:
        pass
    base._fast.set_blocking_hooks(False)


_atexit.register(_wait_at_exit)

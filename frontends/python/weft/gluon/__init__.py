"""Gluon: the imperative, define-by-run interface (MXNet 1.x's mx.gluon)."""
from .parameter import Parameter, Constant, ParameterDict, DeferredInitializationError, tensor_types
from .block import Block, HybridBlock, SymbolBlock
from .trainer import Trainer
from . import nn
from . import utils
from . import data
from . import loss
from . import rnn
from . import contrib
from . import model_zoo

__all__ = ["Parameter", "Constant", "ParameterDict", "DeferredInitializationError", "tensor_types", "Block", "HybridBlock",
           "SymbolBlock", "Trainer", "nn", "utils", "data", "loss", "rnn", "contrib", "model_zoo"]

"""Optimizers and updaters, as MXNet 1.x's ``mx.optimizer``: ``create(name, **kwargs)``,
the optimizer classes (SGD, NAG, Adam, AdamW, RMSProp, AdaGrad, AdaDelta, Ftrl, FTML,
Adamax, Nadam, Signum, LAMB, LARS, LBSGD, DCASGD, SGLD, ccSGD, Test and contrib's
GroupAdaGrad), ``register`` for new ones, and ``Updater`` / ``get_updater`` keeping
per-parameter states."""
from . import optimizer
from .optimizer import (Optimizer, SGD, NAG, Adam, AdamW, RMSProp, AdaGrad, AdaDelta, Ftrl, FTRL, FTML, Adamax,
                        Nadam, Signum, LAMB, LARS, LBSGD, DCASGD, SGLD, ccSGD, Test, Updater, get_updater, create,
                        register, NDabs)
from . import contrib
from .contrib import GroupAdaGrad

__all__ = optimizer.__all__ + contrib.__all__

"""Optimizers and updaters, as MXNet 1.x's ``mx.optimizer``: ``create(name, **kwargs)``,
the optimizer classes (SGD, NAG, Adam, AdamW, RMSProp, AdaGrad, AdaDelta, Ftrl, FTML,
Adamax, Nadam, Signum, LAMB), ``register`` for new ones, and ``Updater`` /
``get_updater`` keeping per-parameter states."""
from . import optimizer
from .optimizer import (Optimizer, SGD, NAG, Adam, AdamW, RMSProp, AdaGrad, AdaDelta, Ftrl, FTRL, FTML, Adamax,
                        Nadam, Signum, LAMB, Updater, get_updater, create, register)

__all__ = optimizer.__all__

"""Training and prediction modes, as in MXNet's `mx.autograd`.

The mode belongs to the calling thread. Operators invoked in training mode behave as in
training (Dropout drops, BatchNorm uses batch statistics and updates its moving ones);
in prediction mode (the default) they behave as at inference.
"""
import contextlib

from .base import _api

__all__ = ["set_training", "is_training", "train_mode", "predict_mode"]


def set_training(train_mode):
    """Sets the thread's training mode; returns the previous one."""
    return bool(_api.weft_set_is_training(1 if train_mode else 0))


def is_training():
    """Whether the calling thread is in training mode."""
    return bool(_api.weft_is_training())


@contextlib.contextmanager
def _mode(train):
    prev = set_training(train)
    try:
        yield
    finally:
        set_training(prev)


def train_mode():
    """Context manager running its block in training mode."""
    return _mode(True)


def predict_mode():
    """Context manager running its block in prediction mode."""
    return _mode(False)

"""Contributed data utilities, as MXNet 1.9's `gluon.contrib.data`: `IntervalSampler` and the
WikiText-2/WikiText-103 language-model data sets (read from local files)."""
from . import sampler, text
from .sampler import *  # noqa: F401,F403
from .text import *  # noqa: F401,F403

__all__ = sampler.__all__ + text.__all__

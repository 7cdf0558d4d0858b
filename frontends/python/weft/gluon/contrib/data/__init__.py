"""Contributed data utilities, as MXNet 1.9's `gluon.contrib.data`: `IntervalSampler`.
MXNet's WikiText2/WikiText103 data sets are left out (they need `contrib.text`'s
vocabulary and a download)."""
from . import sampler
from .sampler import *  # noqa: F401,F403

__all__ = sampler.__all__

"""Vocabulary (MXNet 1.9's `mx.contrib.text.vocab`); implemented beside the Gluon data sets
that use it."""
from ...gluon.contrib.data._vocab import Vocabulary

__all__ = ["Vocabulary"]

"""Model definitions (MXNet 1.x's `mx.gluon.model_zoo`): `vision.get_model(name)`.

Weft ships no pretrained weights: the constructors build and the caller initialises
(or loads parameters saved with `save_parameters`, MXNet's included).
"""
from . import vision

__all__ = ["vision"]

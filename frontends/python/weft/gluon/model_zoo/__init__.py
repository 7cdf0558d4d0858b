"""Model definitions (MXNet 1.x's `mx.gluon.model_zoo`): `vision.get_model(name)`.

Weft ships no pretrained weights and downloads none: the constructors build and the caller
initialises, or loads parameters saved with `save_parameters` (MXNet's included);
pretrained=True reads MXNet's file from `root` (`model_store`).
"""
from . import model_store, vision

__all__ = ["vision", "model_store"]

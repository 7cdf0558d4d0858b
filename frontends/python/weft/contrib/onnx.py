"""weft.contrib.onnx: MXNet 1.9's mx.contrib.onnx names for weft.onnx."""
from ..onnx import export_model, import_model, import_to_gluon, get_model_metadata  # noqa: F401

"""weft.onnx (also weft.contrib.onnx): ONNX export and import, as MXNet 1.9's mx.onnx and
mx.contrib.onnx.

`export_model` writes a symbol and its parameters as an ONNX model (opset 13) that
`onnx.checker` accepts; `import_model` reads one back as a symbol with its parameters,
`import_to_gluon` as a SymbolBlock. Both need Debian's python3-onnx. An operator without a
conversion is an error naming it (`supported_operators()` lists those converted).
"""
import os

import numpy as np

from . import _export, _import
from ._export import UnsupportedOperator
from ._import import UnsupportedOnnx

__all__ = ["export_model", "import_model", "import_to_gluon", "get_model_metadata", "supported_operators",
           "supported_onnx_operators", "UnsupportedOperator", "UnsupportedOnnx"]


def _onnx():
    try:
        import onnx  # noqa: PLC0415 - optional dependency, needed only here
        import onnx.numpy_helper  # noqa: F401,PLC0415 - submodules the converters use
        import onnx.shape_inference  # noqa: F401,PLC0415
    except ImportError as e:
        raise ImportError("weft.onnx needs the onnx package (Debian: apt-get install python3-onnx)") from e
    return onnx


def supported_operators():
    """Weft operators that export_model converts."""
    return _export.supported_operators()


def supported_onnx_operators():
    """ONNX operator types that import_model converts."""
    return _import.supported_onnx_operators()


def _load_params(params):
    from .. import ndarray as nd
    if isinstance(params, str):
        params = nd.load(params)
    if isinstance(params, (list, tuple)):
        if len(params) != 2:
            raise ValueError("export_model: params as a list must be [arg_params, aux_params], got %d items"
                             % len(params))
        merged = dict(params[0])
        merged.update(params[1])
        params = merged
    if not isinstance(params, dict):
        raise TypeError("export_model: params must be a file name, a dict or [arg_params, aux_params], got %s"
                        % type(params).__name__)
    return {k.split(":", 1)[1] if k.startswith(("arg:", "aux:")) else k: v for k, v in params.items()}


def export_model(sym, params, in_shapes=None, in_types=np.float32, onnx_file_path="model.onnx", verbose=False,
                 dynamic=False, dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None):
    """Writes `sym` (a Symbol or a -symbol.json path) with `params` (a .params path, a dict,
    or [arg_params, aux_params]) to `onnx_file_path` as an ONNX model and returns the path.

    in_shapes: one shape per input of the model (the variables that are not parameters and
    not loss labels); in_types: one dtype, or one per input. `dynamic=True` marks the
    dimensions given as None in `dynamic_input_shapes` (all of them when it is None) as
    symbolic. `input_shape`/`input_type` are MXNet's older names of the two."""
    onnx = _onnx()
    from .. import symbol as _sym
    if isinstance(sym, str):
        sym = _sym.load(sym)
    in_shapes = in_shapes if in_shapes is not None else input_shape
    in_types = input_type if input_type is not None else in_types
    if in_shapes is None:
        raise ValueError("export_model: in_shapes (the shape of each input) is required")
    in_shapes = [tuple(s) for s in in_shapes]
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    exporter = _export.Exporter(onnx, sym, _load_params(params), in_shapes, in_types)
    model = exporter.run(os.path.splitext(os.path.basename(onnx_file_path))[0] or "weft")
    if dynamic:
        dyn = dynamic_input_shapes if dynamic_input_shapes is not None else [[None] * len(s) for s in in_shapes]
        for value, shape in zip(model.graph.input, dyn):
            for i, (d, extent) in enumerate(zip(value.type.tensor_type.shape.dim, shape)):
                if extent is None:
                    d.ClearField("dim_value")
                    d.dim_param = "%s_dim%d" % (value.name, i)
        # Output extents may follow any dynamic input extent: each becomes a named unknown.
        for value in model.graph.output:
            for i, d in enumerate(value.type.tensor_type.shape.dim):
                d.ClearField("dim_value")
                d.dim_param = "%s_dim%d" % (value.name, i)
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    if verbose:
        print(onnx.helper.printable_graph(model.graph))
    folder = os.path.dirname(os.path.abspath(onnx_file_path))
    os.makedirs(folder, exist_ok=True)
    from ..base import atomic_write
    atomic_write(onnx_file_path, model.SerializeToString())
    return onnx_file_path


def _load(model_file):
    onnx = _onnx()
    if not isinstance(model_file, str) and hasattr(model_file, "graph"):
        return onnx, model_file
    return onnx, onnx.load(model_file)


def import_model(model_file):
    """Reads an ONNX model (a path, or a loaded ModelProto) and returns (sym, arg_params,
    aux_params) ready for Module or `sym.bind`."""
    onnx, model = _load(model_file)
    return _import.Importer(onnx, model).run()


def get_model_metadata(model_file):
    """{'input_tensor_data': [(name, shape)], 'output_tensor_data': [(name, shape)]} of an
    ONNX model; its inputs exclude the initializers."""
    onnx, model = _load(model_file)
    inits = {t.name for t in model.graph.initializer}

    def describe(values):
        out = []
        for v in values:
            dims = v.type.tensor_type.shape.dim
            out.append((v.name, tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)))
        return out
    return {"input_tensor_data": describe(i for i in model.graph.input if i.name not in inits),
            "output_tensor_data": describe(model.graph.output)}


def import_to_gluon(model_file, ctx):
    """Reads an ONNX model into a gluon.SymbolBlock with its parameters on `ctx`."""
    from .. import symbol as _sym
    from ..gluon import SymbolBlock
    sym, arg_params, aux_params = import_model(model_file)
    meta = get_model_metadata(model_file)
    inputs = [_sym.var(name) for name, _ in meta["input_tensor_data"]]
    net = SymbolBlock(sym, inputs)
    params = net.collect_params()
    for name, value in list(arg_params.items()) + list(aux_params.items()):
        if name in params:
            p = params[name]
            p.shape = value.shape
            p.initialize(ctx=ctx)
            p.set_data(value)
    return net

"""weft.ndarray (also weft.nd): the imperative array API of MXNet 1.x.

The hand-written part (NDArray, creation, files, DLPack) is in ndarray.py; every
registered operator is added here as a generated function (see _ops.py), and all of
them, internal names included, in `weft.ndarray._internal`.
"""
import types as _types

from .ndarray import (NDArray, empty, array, zeros, ones, full, arange, save, save_tobuffer, load,
                      load_frombuffer, waitall, from_dlpack, to_dlpack_for_read, to_dlpack_for_write,
                      concatenate, moveaxis, split_v2, histogram, bfloat16, invoke)
from . import _ops

_internal = _types.ModuleType("weft.ndarray._internal", "Every operator, internal names included.")
_ops.populate(globals(), _internal.__dict__)

from . import contrib, linalg, image  # noqa: E402  (filled from the operators populated above)

from . import random  # noqa: E402  (its samplers call the generated operators)

from . import sparse  # noqa: E402  (csr and row_sparse arrays; after the operators it uses)
from .sparse import cast_storage, CSRNDArray, RowSparseNDArray  # noqa: E402
from .. import _fast  # noqa: E402

_ops.populate_namespace(sparse.__dict__, "_sparse_")
_fast.set_sparse_classes(CSRNDArray, RowSparseNDArray, "cast_storage")


def _elementwise_pair(array_op, scalar_op):
    def fn(lhs, rhs):
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            return _ops.get(array_op)(lhs, rhs)
        if isinstance(lhs, NDArray):
            return _ops.get(scalar_op)(lhs, scalar=float(rhs))
        if isinstance(rhs, NDArray):
            return _ops.get(scalar_op)(rhs, scalar=float(lhs))
        return max(lhs, rhs) if array_op == "broadcast_maximum" else min(lhs, rhs)
    fn.__doc__ = "Elementwise %s of two arrays (broadcast) or of an array and a number." % array_op[10:]
    return fn


maximum = _elementwise_pair("broadcast_maximum", "_maximum_scalar")
minimum = _elementwise_pair("broadcast_minimum", "_minimum_scalar")

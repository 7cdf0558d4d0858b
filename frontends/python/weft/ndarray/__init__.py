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
_ops.install_fluent(NDArray, _ops._functions)
from . import op  # noqa: E402  (the public operators as MXNet's op module holds them)
from .cached_op import CachedOp  # noqa: E402

from . import contrib, linalg, image  # noqa: E402  (filled from the operators populated above)

from . import random  # noqa: E402  (its samplers call the generated operators)

from . import sparse  # noqa: E402  (csr and row_sparse arrays; after the operators it uses)
from .sparse import cast_storage, CSRNDArray, RowSparseNDArray  # noqa: E402
from .. import _fast  # noqa: E402

_ops.populate_namespace(sparse.__dict__, "_sparse_")
_fast.set_sparse_classes(CSRNDArray, RowSparseNDArray, "cast_storage")

from . import utils  # noqa: E402  (MXNet's creation and files with storage types)
from .utils import array  # noqa: E402  (a scipy.sparse csr matrix gives a CSRNDArray, as MXNet's nd.array)

# MXNet's module-level arithmetic and comparisons (arrays or numbers on either side); after
# the operators, so that these names are the functions and not an operator of that name.
from .ndarray import (add, subtract, multiply, divide, true_divide, modulo, power, maximum,  # noqa: E402
                      minimum, equal, not_equal, greater, greater_equal, lesser, lesser_equal, logical_and,
                      logical_or, logical_xor, eye, linspace, from_numpy, onehot_encode, fill_element_0index, imdecode)
# The dtype tables and indexing helpers in the __all__ of MXNet's ndarray module, which its
# `from .ndarray import *` brings to mx.nd (mx.nd._DTYPE_NP_TO_MX and the like).
from .ndarray import (_DTYPE_NP_TO_MX, _DTYPE_MX_TO_NP, _GRAD_REQ_MAP, get_indexing_dispatch_code,  # noqa: E402
                      indexing_key_expand_implicit_axes, get_oshape_of_gather_nd_op)

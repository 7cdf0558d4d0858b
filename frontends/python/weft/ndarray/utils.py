"""weft.ndarray.utils (MXNet's mxnet.ndarray.utils): creation and files for dense and
sparse arrays alike. zeros/empty take a storage type `stype`; array keeps a scipy.sparse
matrix or a sparse NDArray sparse; load/save read and write csr and row_sparse records too."""
from .ndarray import NDArray, save, load, load_frombuffer  # noqa: F401
from .ndarray import array as _dense_array, empty as _dense_empty, zeros as _dense_zeros
from . import sparse as _sparse

__all__ = ["zeros", "empty", "array", "load", "load_frombuffer", "save"]


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """An array of zeros of `shape`; stype 'csr' or 'row_sparse' stores nothing."""
    return _dense_zeros(shape, ctx, dtype, stype=stype, **kwargs)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialised array of `shape` (a sparse one holds nothing)."""
    return _dense_empty(shape, ctx, dtype, stype=stype)


def _is_scipy_csr(source):
    return type(source).__module__.startswith("scipy.sparse") and getattr(source, "format", None) == "csr"


def array(source_array, ctx=None, dtype=None):
    """A new array of `source_array`: a scipy.sparse csr matrix gives a CSRNDArray, a sparse
    NDArray a sparse copy, anything else a dense NDArray."""
    if _is_scipy_csr(source_array):
        return _sparse.csr_matrix(source_array, ctx=ctx, dtype=dtype)
    return _dense_array(source_array, ctx=ctx, dtype=dtype)

"""weft.ndarray.sparse (mx.nd.sparse): csr and row_sparse arrays, as in MXNet 1.x.

A sparse array is an NDArray handle whose core array has a storage type and int64
auxiliary arrays (see docs/design/sparse.md). `.data`, `.indices` and `.indptr` are dense
NDArrays sharing the stored parts. Operators without a sparse kernel see a dense copy
(the core's storage fallback) and return dense arrays; the elementwise arithmetic below
keeps the storage type of two sparse operands of one type, as MXNet does.
"""
import numbers

import numpy as np

from ..base import _api, NotSupportedForSparseNDArray
from ..context import Context
from .ndarray import NDArray, array, dtype_np, dtype_id, _ctx, _shape

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array", "zeros",
           "empty", "array", "cast_storage", "retain", "dot", "add", "subtract", "multiply", "elemwise_add",
           "elemwise_sub", "elemwise_mul"]

_STYPE_ID = {"default": 0, "row_sparse": 1, "csr": 2}
_ID_STYPE = {v: k for k, v in _STYPE_ID.items()}


def _stype_id(stype):
    if stype not in _STYPE_ID:
        raise ValueError("expected a storage type among %s, got %r" % (sorted(_STYPE_ID), stype))
    return _STYPE_ID[stype]


def _wrap(handle):
    """The NDArray class that fits the storage type of a new handle."""
    stype = _api.weft_ndarray_get_storage_type(handle)
    if stype == 2:
        return CSRNDArray(handle)
    if stype == 1:
        return RowSparseNDArray(handle)
    return NDArray(handle)


class BaseSparseNDArray(NDArray):
    """What csr and row_sparse arrays share: values are read through a dense copy."""

    __slots__ = ()

    @property
    def stype(self):
        return _ID_STYPE[_api.weft_ndarray_get_storage_type(self)]

    @property
    def data(self):
        """The stored values (a dense NDArray sharing them)."""
        return NDArray(_api.weft_ndarray_get_sparse_values(self))

    def _aux(self, i):
        return NDArray(_api.weft_ndarray_get_aux(self, i))

    def asnumpy(self):
        return self.tostype("default").asnumpy()

    def tostype(self, stype):
        """The values in storage type `stype` ('default', 'csr', 'row_sparse')."""
        return cast_storage(self, stype)

    def copy(self):
        return self.copyto(self.context)

    def copyto(self, other):
        """A copy on a Context (same context only), or the dense values written into a
        dense NDArray `other` (returned)."""
        if isinstance(other, Context):
            return _wrap(_api.weft_ndarray_cast_storage(self, _STYPE_ID[self.stype]))._moved(other)
        if isinstance(other, NDArray) and not isinstance(other, BaseSparseNDArray):
            return self.tostype("default").copyto(other)
        raise NotSupportedForSparseNDArray(self.copyto, "copyto", other)

    def _moved(self, ctx):
        if ctx == self.context:
            return self
        raise NotSupportedForSparseNDArray(self.copyto, "copyto", ctx)

    def check_format(self, full_check=True):
        """Rebuilding the array runs the core's checks of its parts (raises MXNetError)."""
        aux = [self._aux(i) for i in range(2 if self.stype == "csr" else 1)]
        _api.weft_ndarray_create_sparse(_STYPE_ID[self.stype], self.shape, self.data, len(aux), aux)

    def __repr__(self):
        shape_str = "x".join(str(d) for d in self.shape)
        return "\n<%s %s @%s>" % (type(self).__name__, shape_str, self.context)

    __str__ = __repr__

    def _sparse_binary(self, other, op):
        if isinstance(other, BaseSparseNDArray) and other.stype == self.stype:
            return cast_storage(op(self.tostype("default"), other.tostype("default")), self.stype)
        if isinstance(other, numbers.Number) and op is _mul:
            return _scaled(self, other)
        return op(self.tostype("default"), other.tostype("default") if isinstance(other, NDArray) else other)

    def __add__(self, other):
        return self._sparse_binary(other, _add)

    def __sub__(self, other):
        return self._sparse_binary(other, _sub)

    def __mul__(self, other):
        return self._sparse_binary(other, _mul)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __radd__(self, other):
        return self.tostype("default").__radd__(other)

    def __neg__(self):
        return _scaled(self, -1.0)

    def __getitem__(self, key):
        raise NotSupportedForSparseNDArray(self.__getitem__, "__getitem__", key)

    def __setitem__(self, key, value):
        raise NotSupportedForSparseNDArray(self.__setitem__, "__setitem__", key)

    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray(self.reshape, "reshape", shape)


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


def _scaled(arr, scalar):
    """A sparse array times a number, keeping its storage (zeros stay zeros unless the
    number is inf or nan, where the dense product is the answer)."""
    if not np.isfinite(scalar):
        return arr.tostype("default") * scalar
    aux = [arr._aux(i) for i in range(2 if arr.stype == "csr" else 1)]
    return _wrap(_api.weft_ndarray_create_sparse(_STYPE_ID[arr.stype], arr.shape, arr.data * scalar,
                                                 len(aux), [a.copy() for a in aux]))


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (data, indices, indptr)."""

    __slots__ = ()

    @property
    def indices(self):
        return self._aux(1)

    @property
    def indptr(self):
        return self._aux(0)

    def __getitem__(self, key):
        """Rows `key` (an int or a step-1 slice) as a csr array."""
        rows = self.shape[0]
        if isinstance(key, (numbers.Integral, np.integer)):
            k = int(key) + (rows if key < 0 else 0)
            if not 0 <= k < rows:
                raise IndexError("csr row %d out of range for %d rows" % (key, rows))
            key = slice(k, k + 1)
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise NotSupportedForSparseNDArray(self.__getitem__, "__getitem__", key)
        begin, end, _ = key.indices(rows)
        end = max(begin, end)
        indptr = self.indptr.asnumpy()
        lo, hi = int(indptr[begin]), int(indptr[end])
        return csr_matrix((self.data.asnumpy()[lo:hi], self.indices.asnumpy()[lo:hi], indptr[begin:end + 1] - lo),
                          shape=(end - begin, self.shape[1]), ctx=self.context, dtype=self.dtype)

    def asscipy(self):
        import scipy.sparse as spsp  # pylint: disable=import-outside-toplevel
        return spsp.csr_matrix((self.data.asnumpy(), self.indices.asnumpy(), self.indptr.asnumpy()),
                               shape=self.shape)


class RowSparseNDArray(BaseSparseNDArray):
    """An array of which only some rows (`indices`) are stored (`data`); the others are 0."""

    __slots__ = ()

    @property
    def indices(self):
        return self._aux(0)

    def retain(self, indices):
        return retain(self, indices)


def _int64(values, ctx):
    return array(np.asarray(values, dtype=np.int64).reshape(-1), ctx=ctx, dtype=np.int64)


def _values(values, ctx, dtype):
    if isinstance(values, NDArray):
        dtype = values.dtype if dtype is None else dtype
        values = values.asnumpy()
    elif dtype is None:
        dtype = getattr(values, "dtype", np.float32)
    return array(np.asarray(values), ctx=ctx, dtype=dtype)


def _host(x):
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray from (data, indices, indptr) with `shape`, from a dense 2-D array
    (numpy or NDArray), from a scipy.sparse matrix, from another CSRNDArray, or the
    empty one of shape (m, n)."""
    ctx = _ctx(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = (_host(x) for x in arg1)
        indptr = np.asarray(indptr, dtype=np.int64)
        if shape is None:
            cols = int(np.max(indices)) + 1 if len(indices) else 0
            shape = (len(indptr) - 1, cols)
        aux = [_int64(indptr, ctx), _int64(indices, ctx)]
        vals = _values(arg1[0] if isinstance(arg1[0], NDArray) else data, ctx, dtype)
        return CSRNDArray(_api.weft_ndarray_create_sparse(2, _shape(shape), vals, 2, aux))
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(d, numbers.Integral) for d in arg1):
        return zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        return arg1.astype(dtype) if dtype is not None and dtype_id(dtype) != dtype_id(arg1.dtype) else arg1.copy()
    if hasattr(arg1, "tocsr") and hasattr(arg1, "indptr") or type(arg1).__module__.startswith("scipy"):
        m = arg1.tocsr()
        m.sort_indices()
        m.sum_duplicates()
        return csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=ctx,
                          dtype=m.dtype if dtype is None else dtype)
    dense = arg1 if isinstance(arg1, NDArray) else array(np.asarray(arg1), ctx=ctx, dtype=dtype)
    if dtype is not None and dtype_id(dtype) != dtype_id(dense.dtype):
        dense = dense.astype(dtype)
    return cast_storage(dense, "csr")


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from (data, indices) with `shape`, from a dense array, from
    another RowSparseNDArray, or the empty one of shape `arg1`."""
    ctx = _ctx(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and not all(isinstance(d, numbers.Integral) for d in arg1):
        data, indices = arg1
        vals = _values(data, ctx, dtype)
        idx = _host(indices)
        if shape is None:
            shape = (int(np.max(idx)) + 1 if idx.size else 0,) + tuple(vals.shape[1:])
        return RowSparseNDArray(_api.weft_ndarray_create_sparse(1, _shape(shape), vals, 1, [_int64(idx, ctx)]))
    if isinstance(arg1, tuple):
        return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        return arg1.copy()
    dense = arg1 if isinstance(arg1, NDArray) else array(np.asarray(arg1), ctx=ctx, dtype=dtype)
    return cast_storage(dense, "row_sparse")


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage type `stype` (nothing stored when sparse)."""
    ctx = _ctx(ctx)
    handle = _api.weft_ndarray_create_sparse_zeros(_stype_id(stype), _shape(shape),
                                                   dtype_id(dtype_np(dtype or "float32")), ctx._as_tuple())
    return _wrap(handle)


def empty(stype, shape, ctx=None, dtype=None):
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def cast_storage(data, stype):
    """`data` in storage type `stype` ('default', 'csr', 'row_sparse') as a new array."""
    return _wrap(_api.weft_ndarray_cast_storage(data, _stype_id(stype)))


def retain(data, indices):
    """The rows of row_sparse `data` whose index is in `indices` (others dropped)."""
    if not isinstance(data, RowSparseNDArray):
        raise TypeError("retain: expected a RowSparseNDArray, got %s" % type(data).__name__)
    keep = np.isin(data.indices.asnumpy(), _host(indices).astype(np.int64))
    vals = data.data.asnumpy()[keep]
    return row_sparse_array((array(vals, ctx=data.context, dtype=data.dtype), data.indices.asnumpy()[keep]),
                            shape=data.shape, ctx=data.context)


def dot(lhs, rhs, transpose_a=False, transpose_b=False):
    """Matrix product where either side may be sparse (computed on dense copies; dense result)."""
    from . import _ops  # pylint: disable=import-outside-toplevel
    dense = [x.tostype("default") if isinstance(x, BaseSparseNDArray) else x for x in (lhs, rhs)]
    return _ops.get("dot")(dense[0], dense[1], transpose_a=transpose_a, transpose_b=transpose_b)


def add(lhs, rhs):
    return lhs + rhs


def subtract(lhs, rhs):
    return lhs - rhs


def multiply(lhs, rhs):
    return lhs * rhs


elemwise_add, elemwise_sub, elemwise_mul = add, subtract, multiply

"""weft.ndarray.sparse (mx.nd.sparse): csr and row_sparse arrays, as in MXNet 1.x.

A sparse array is an NDArray handle whose core array has a storage type and int64
auxiliary arrays (see docs/design/sparse.md). `.data`, `.indices` and `.indptr` are dense
NDArrays sharing the stored parts. Operators with a sparse kernel in the core compute on
the stored parts and return MXNet's output storage type; the others see a dense copy (the
core's storage fallback) and return dense arrays. The operators MXNet names `_sparse_*`
(sparse.dot, sparse.sum, sparse.Embedding, sparse.retain, ...) are added to this module by
weft.ndarray at import.
"""
import builtins
import numbers

import numpy as np

from ..base import _api, NotSupportedForSparseNDArray
from ..context import Context
from .ndarray import NDArray, array as _dense_array, dtype_np, dtype_id, _ctx, _shape

__all__ = ["_ndarray_cls", "BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array", "zeros",
           "empty", "array", "cast_storage", "add", "subtract", "multiply", "divide"]

_STYPE_ID = {"default": 0, "row_sparse": 1, "csr": 2}
_ID_STYPE = {v: k for k, v in _STYPE_ID.items()}


def _stype_id(stype):
    if stype not in _STYPE_ID:
        raise ValueError("expected a storage type among %s, got %r" % (sorted(_STYPE_ID), stype))
    return _STYPE_ID[stype]


def _ndarray_cls(handle, writable=True, stype=-1):
    """The array object of a handle, of the class its storage type (`stype`, or the handle's
    own when -1) calls for (MXNet's helper of that name)."""
    if stype == -1:
        stype = _api.weft_ndarray_get_storage_type(handle)
    cls = CSRNDArray if stype == 2 else RowSparseNDArray if stype == 1 else NDArray
    return cls(handle, writable=writable)


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
        """The stored values (a dense NDArray sharing them), as given even where the parts
        break the format (check_format tells)."""
        return NDArray(_api.weft_ndarray_get_sparse_part_unchecked(self, -1))

    def _values(self):
        """The stored values for a computation: refused, naming the fault, where the parts
        break the format."""
        return NDArray(_api.weft_ndarray_get_sparse_values(self))

    def _aux(self, i):
        """Auxiliary array i for a computation (refused as _values)."""
        return NDArray(_api.weft_ndarray_get_aux(self, i))

    def _aux_unchecked(self, i):
        return NDArray(_api.weft_ndarray_get_sparse_part_unchecked(self, i))

    @property
    def _num_aux(self):
        """The number of auxiliary arrays (csr: indptr and indices; row_sparse: indices)."""
        return 2 if self.stype == "csr" else 1

    def asnumpy(self):
        return self.tostype("default").asnumpy()

    def tostype(self, stype):
        """The values in storage type `stype` ('default', 'csr', 'row_sparse')."""
        return cast_storage(self, stype)

    def copy(self):
        return self.copyto(self.context)

    def astype(self, dtype, copy=True):
        """The same storage type with the stored values in `dtype`."""
        if not copy and dtype_id(dtype) == dtype_id(self.dtype):
            return self
        aux = [self._aux(i).copy() for i in range(2 if self.stype == "csr" else 1)]
        return _wrap(_api.weft_ndarray_create_sparse(_STYPE_ID[self.stype], self.shape, self._values().astype(dtype),
                                                     len(aux), aux))

    def copyto(self, other):
        """A copy on a Context (same context only), or the dense values written into a
        dense NDArray `other` (returned)."""
        if isinstance(other, Context):
            return _wrap(_api.weft_ndarray_cast_storage(self, _STYPE_ID[self.stype]))._moved(other)
        if isinstance(other, NDArray) and not isinstance(other, BaseSparseNDArray):
            return self.tostype("default").copyto(other)
        if isinstance(other, BaseSparseNDArray):
            other._assign(self._moved(other.context))
            return other
        raise NotSupportedForSparseNDArray(self.copyto, "copyto", other)

    def _assign(self, value):
        """Gives this array (its handle: sparse arrays are immutable) the values of the
        NDArray `value`, in this array's storage type and dtype."""
        if value is self:
            return
        if value.dtype != self.dtype:
            value = value.tostype("default").astype(self.dtype)
        if value.stype != self.stype:
            value = value.tostype(self.stype)
        # The array keeps its context (an executor's argument stays on its ctx_group's).
        value = value._moved(self.context)
        _api.weft_ndarray_sparse_assign(self, value)

    def _moved(self, ctx):
        """This array on `ctx`: itself when already there, else its parts copied there."""
        if ctx == self.context:
            return self
        aux = [self._aux(i).copyto(ctx) for i in range(2 if self.stype == "csr" else 1)]
        return _wrap(_api.weft_ndarray_create_sparse(_STYPE_ID[self.stype], self.shape, self._values().copyto(ctx),
                                                     len(aux), aux))

    def check_format(self, full_check=True):
        """Raises MXNetError when the parts break the format, as MXNet's: part lengths that
        do not fit the shape always, indptr and index values only with `full_check`.
        (Arrays made from parts are checked here, not when made; reading an invalid one,
        by any operator, copy, conversion or save, raises the same fault.)"""
        _api.weft_ndarray_check_format(self, bool(full_check))

    def __repr__(self):
        shape_str = "x".join(str(d) for d in self.shape)
        return "\n<%s %s @%s>" % (type(self).__name__, shape_str, self.context)

    __str__ = __repr__

    def __getitem__(self, key):
        raise NotSupportedForSparseNDArray(self.__getitem__, "__getitem__", key)

    def __setitem__(self, key, value):
        """x[:] = value only, as MXNet's: value an NDArray of any storage type, a numpy
        array, or (row_sparse only) a number for every element."""
        if not isinstance(key, builtins.slice) or key != builtins.slice(None):
            raise NotSupportedForSparseNDArray(self.__setitem__, "__setitem__", key)
        if isinstance(value, numbers.Number):
            if self.stype == "csr":
                # MXNet's message first (scripts match it), then what is accepted instead.
                raise ValueError("Assigning numeric types to CSRNDArray is not implemented yet: x[:] = value takes "
                                 "an NDArray or a numpy array for a csr array, got the number %r" % (value,))
            value = _dense_array(np.full(self.shape, value), ctx=self.context, dtype=self.dtype)
        elif isinstance(value, (np.ndarray, np.generic, list, tuple)):
            value = _dense_array(np.asarray(value), ctx=self.context, dtype=self.dtype)
        elif not isinstance(value, NDArray):
            raise TypeError("type %s not supported" % type(value).__name__)
        self._assign(value)

    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray(self.reshape, "reshape", shape)


def _scalar_comparison(name, test, dense_method):
    """A comparison with a number. Where it is false at 0 the result keeps this array's
    storage type (computed on the stored values, as MXNet's sparse kernels of the *_scalar
    comparisons); otherwise, and with an array, it is dense."""
    def method(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool) and not test(0.0, other):
            return self._with_values(_op(name)(self._values(), scalar=float(other)))
        return dense_method(self, other)
    method.__name__ = dense_method.__name__
    return method


def _with_values(self, values):
    """A new array of this one's storage type, shape and positions holding `values`."""
    aux = [self._aux(i).copy() for i in range(2 if self.stype == "csr" else 1)]
    return _wrap(_api.weft_ndarray_create_sparse(_STYPE_ID[self.stype], self.shape, values, len(aux), aux))


BaseSparseNDArray._with_values = _with_values
BaseSparseNDArray.__eq__ = _scalar_comparison("_equal_scalar", lambda a, b: a == b, NDArray.__eq__)
BaseSparseNDArray.__ne__ = _scalar_comparison("_not_equal_scalar", lambda a, b: a != b, NDArray.__ne__)
BaseSparseNDArray.__gt__ = _scalar_comparison("_greater_scalar", lambda a, b: a > b, NDArray.__gt__)
BaseSparseNDArray.__ge__ = _scalar_comparison("_greater_equal_scalar", lambda a, b: a >= b, NDArray.__ge__)
BaseSparseNDArray.__lt__ = _scalar_comparison("_lesser_scalar", lambda a, b: a < b, NDArray.__lt__)
BaseSparseNDArray.__le__ = _scalar_comparison("_lesser_equal_scalar", lambda a, b: a <= b, NDArray.__le__)
BaseSparseNDArray.__hash__ = NDArray.__hash__


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (data, indices, indptr)."""

    __slots__ = ()

    @property
    def indices(self):
        return self._aux_unchecked(1)

    @property
    def indptr(self):
        return self._aux_unchecked(0)

    def __getitem__(self, key):
        """Rows `key` (an int or a step-1 slice) as a csr array (the slice operator)."""
        rows = self.shape[0]
        if isinstance(key, (numbers.Integral, np.integer)):
            k = int(key) + (rows if key < 0 else 0)
            if not 0 <= k < rows:
                raise IndexError("csr row %d out of range for %d rows" % (key, rows))
            key = builtins.slice(k, k + 1)
        if not isinstance(key, builtins.slice) or key.step not in (None, 1):
            raise NotSupportedForSparseNDArray(self.__getitem__, "__getitem__", key)
        begin, end, _ = key.indices(rows)
        return _op("slice")(self, begin=(begin,), end=(max(begin, end),))

    def asscipy(self):
        import scipy.sparse as spsp  # pylint: disable=import-outside-toplevel
        return spsp.csr_matrix((self._values().asnumpy(), self._aux(1).asnumpy(), self._aux(0).asnumpy()),
                               shape=self.shape)


class RowSparseNDArray(BaseSparseNDArray):
    """An array of which only some rows (`indices`) are stored (`data`); the others are 0."""

    __slots__ = ()

    @property
    def indices(self):
        return self._aux_unchecked(0)

    def __getitem__(self, key):
        """x[:] is x itself, as MXNet's (so that x[:] += y updates x); nothing else."""
        if isinstance(key, builtins.slice) and key == builtins.slice(None):
            return self
        raise NotSupportedForSparseNDArray(self.__getitem__, "__getitem__", key)

    def retain(self, indices):
        """The rows whose index is in `indices` (the others dropped), as a new array."""
        return _op("_sparse_retain")(self, indices)


def _int64(values, ctx):
    return _dense_array(np.asarray(values, dtype=np.int64).reshape(-1), ctx=ctx, dtype=np.int64)


def _values(values, ctx, dtype):
    if isinstance(values, NDArray):
        dtype = values.dtype if dtype is None else dtype
        values = values.asnumpy()
    elif dtype is None:
        dtype = getattr(values, "dtype", np.float32)
    return _dense_array(np.asarray(values), ctx=ctx, dtype=dtype)


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
            if not len(indices):
                raise ValueError("csr_matrix: cannot infer the column count without stored indices; give shape")
            shape = (len(indptr) - 1, int(np.max(indices)) + 1)
        if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1 or not indptr.size or len(shape) != 2:
            raise ValueError("csr_matrix: expected 1-D data, indices and indptr (indptr not empty) and a 2-D shape, "
                             "got data %s, indices %s, indptr %s and shape %s"
                             % (data.shape, indices.shape, indptr.shape, tuple(shape)))
        aux = [_int64(indptr, ctx), _int64(indices, ctx)]
        # The values' dtype defaults from arg1[0] itself: a list or tuple of numbers gives
        # float32 (MXNet's rule), only an NDArray or numpy array keeps its own dtype.
        vals = _values(arg1[0], ctx, dtype)
        # As MXNet's, parts that break the format make an array anyway; check_format finds
        # the fault and every read of the array raises it.
        return CSRNDArray(_api.weft_ndarray_create_sparse_unchecked(2, _shape(shape), vals, 2, aux))
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(d, numbers.Integral) for d in arg1):
        _check_shape(arg1, shape)
        return zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], (tuple, list)) and len(arg1[1]) == 2:
        return _csr_from_coo(arg1[0], arg1[1][0], arg1[1][1], shape, ctx, dtype)
    if isinstance(arg1, CSRNDArray):
        _check_shape(arg1.shape, shape)
        return _sparse_copy(arg1, ctx, dtype)
    if hasattr(arg1, "tocsr") and hasattr(arg1, "indptr") or type(arg1).__module__.startswith("scipy"):
        m = arg1.tocsr()
        m.sort_indices()
        m.sum_duplicates()
        return csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=ctx,
                          dtype=m.dtype if dtype is None else dtype)
    dense = _dense_source(arg1, ctx, dtype)
    _check_shape(dense.shape, shape)
    return cast_storage(dense, "csr")


def _check_shape(source_shape, shape):
    """A shape given with a source that has its own must be that one (MXNet's rule)."""
    if shape is not None and tuple(int(d) for d in source_shape) != tuple(int(d) for d in shape):
        raise ValueError("expected shape %s to be the source's shape %s"
                         % (tuple(shape), tuple(source_shape)))


def _csr_from_coo(data, row, col, shape, ctx, dtype):
    """csr_matrix((data, (row, col))): the coordinate form, sorted and with the values of
    repeated coordinates summed (scipy's rule, which MXNet follows)."""
    data = _host(data)
    row = _host(row).astype(np.int64).reshape(-1)
    col = _host(col).astype(np.int64).reshape(-1)
    if not data.shape[0] == row.shape[0] == col.shape[0]:
        raise ValueError("csr_matrix: expected data, row and col of one length, got %d, %d and %d"
                         % (data.shape[0], row.shape[0], col.shape[0]))
    if shape is None:
        shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
    rows, cols = shape
    if row.size and (row.min() < 0 or row.max() >= rows or col.min() < 0 or col.max() >= cols):
        raise ValueError("csr_matrix: a coordinate lies outside the shape %s" % (tuple(shape),))
    keys, where = np.unique(row * cols + col, return_inverse=True)
    values = np.zeros(keys.shape[0], dtype=data.dtype)
    np.add.at(values, where.reshape(-1), data)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // cols, minlength=rows))]) if cols else \
        np.zeros(rows + 1, np.int64)
    return csr_matrix((values, keys % cols if cols else keys, indptr), shape=shape, ctx=ctx,
                      dtype=data.dtype if dtype is None else dtype)


def _sparse_copy(arr, ctx, dtype):
    """A copy of the sparse `arr` on `ctx`, its values in `dtype` (None: arr's)."""
    out = arr.copyto(ctx)
    if dtype is not None and dtype_id(dtype) != dtype_id(arr.dtype):
        return out.astype(dtype)
    return out if out is not arr else arr.copy()


def _dense_source(arg1, ctx, dtype):
    """The dense array a sparse one is made from, on `ctx` and in `dtype` (None: arg1's own,
    float32 for a list), as MXNet's constructors take them."""
    if isinstance(arg1, NDArray):
        dense = arg1.copyto(ctx) if arg1.context != ctx else arg1
    else:
        host = np.asarray(arg1)
        if dtype is None and not isinstance(arg1, np.ndarray):
            dtype = np.float32
        dense = _dense_array(host, ctx=ctx, dtype=dtype or host.dtype)
    if dtype is not None and dtype_id(dtype) != dtype_id(dense.dtype):
        dense = dense.astype(dtype)
    return dense


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from (data, indices) with `shape`, from a dense array, from
    another RowSparseNDArray, or the empty one of shape `arg1`."""
    ctx = _ctx(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and not all(isinstance(d, numbers.Integral) for d in arg1):
        data, indices = arg1
        vals = _values(data, ctx, dtype)
        idx = _host(indices)
        if shape is None:
            if not idx.size:
                raise ValueError("row_sparse_array: cannot infer the row count without stored indices; give shape")
            shape = (int(np.max(idx)) + 1,) + tuple(vals.shape[1:])
        if vals.ndim != len(shape) or idx.ndim != 1 or not np.prod(shape[1:]):
            raise ValueError("row_sparse_array: expected data with the shape's %d dimensions, 1-D indices and no "
                             "empty dimension after the first, got data %s, indices %s and shape %s"
                             % (len(shape), vals.shape, idx.shape, tuple(shape)))
        # Unchecked as csr_matrix's parts (check_format finds the fault).
        return RowSparseNDArray(_api.weft_ndarray_create_sparse_unchecked(1, _shape(shape), vals, 1,
                                                                          [_int64(idx, ctx)]))
    if isinstance(arg1, tuple):
        _check_shape(arg1, shape)
        return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return _sparse_copy(arg1, ctx, dtype)
    dense = _dense_source(arg1, ctx, dtype)
    _check_shape(dense.shape, shape)
    return cast_storage(dense, "row_sparse")


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage type `stype` (nothing stored when sparse)."""
    ctx = _ctx(ctx)
    handle = _api.weft_ndarray_create_sparse_zeros(_stype_id(stype), _shape(shape),
                                                   dtype_id(dtype_np(dtype or "float32")), ctx._as_tuple())
    return _wrap(handle)


def empty(stype, shape, ctx=None, dtype=None):
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def _op(name):
    from . import _ops  # pylint: disable=import-outside-toplevel
    return _ops.get(name)


def cast_storage(data, stype):
    """`data` in storage type `stype` ('default', 'csr', 'row_sparse') as a new array."""
    return _op("cast_storage")(data, stype=stype)


def _ufunc(lhs, rhs, elemwise, broadcast, scalar, rscalar, fn):
    """MXNet's dispatch of sparse.add & co.: two arrays of one shape -> the elementwise
    operator (sparse kernels keep MXNet's storage types), of two shapes -> the broadcast one,
    an array and a number -> the scalar operator, two numbers -> fn."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return _op(elemwise if lhs.shape == rhs.shape else broadcast)(lhs, rhs)
    if isinstance(lhs, NDArray):
        return _op(scalar)(lhs, scalar=float(rhs))
    if isinstance(rhs, NDArray):
        return _op(rscalar)(rhs, scalar=float(lhs))
    return fn(lhs, rhs)


def add(lhs, rhs):
    """lhs + rhs: csr + csr is csr, row_sparse + row_sparse is row_sparse, with dense: dense."""
    return _ufunc(lhs, rhs, "elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar", lambda a, b: a + b)


def subtract(lhs, rhs):
    """lhs - rhs, with add's storage types."""
    return _ufunc(lhs, rhs, "elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar", lambda a, b: a - b)


def multiply(lhs, rhs):
    """lhs * rhs: sparse when either array is (csr with csr or dense: csr; row_sparse with
    row_sparse or dense: row_sparse); csr times a broadcast dense array is csr."""
    return _ufunc(lhs, rhs, "elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar", lambda a, b: a * b)


def divide(lhs, rhs):
    """lhs / rhs: dense for two arrays of one shape, csr for csr over a broadcast dense array,
    the storage type of lhs for an array over a nonzero number."""
    return _ufunc(lhs, rhs, "elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar", lambda a, b: a / b)


def array(source_array, ctx=None, dtype=None):
    """A sparse array from a sparse NDArray (a copy in its storage type, on `ctx`, in
    `dtype`) or a scipy.sparse csr matrix, as MXNet's mx.nd.sparse.array."""
    if isinstance(source_array, BaseSparseNDArray):
        return _sparse_copy(source_array, _ctx(ctx), dtype)
    if type(source_array).__module__.startswith("scipy") and getattr(source_array, "format", None) == "csr":
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise ValueError("mx.nd.sparse.array: expected a CSRNDArray, a RowSparseNDArray or a scipy csr matrix, got %s"
                     % type(source_array).__name__)

"""Helpers for tests, with the names, signatures and default tolerances of MXNet 1.9's
`mxnet.test_utils`.

As MXNet's module, this one has no `__all__`: `from weft.test_utils import *` gives every
public name, the modules it imports included (`np`, `mx`, `nd`, `os`, ...), which MXNet's
test files rely on.

The check_symbolic_* helpers bind csr and row_sparse arguments (and gradients of the
storage types in `grad_stypes`) as such, so that the executor runs the sparse kernels.
"""
# The standard modules MXNet's test_utils imports are part of what `import *` gives.
import bz2
import contextlib
import errno
import functools
import gzip
import json
import logging
import math
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

from . import autograd as _autograd
from . import io as _io
from . import ndarray as nd
from .base import _api
from .context import Context, current_context
from .ndarray import array
from .ndarray.ndarray import NDArray
from .runtime import Features
from .symbol import Symbol
from .util import use_np, getenv, setenv

try:  # scipy is optional, as for MXNet: chi_square_check computes its p-value without it
    import scipy.stats as ss
except ImportError:
    ss = None

# `mx` is the weft package, as MXNet's test_utils has `import mxnet as mx` for
# `from mxnet.test_utils import *`. This module sits below the package's root in the layer
# table (docs/architecture.md), so it does not import the root: weft/__init__.py sets `mx`
# here once the package is assembled.
mx = None

_SPARSE_MISSING = "an optimizer update of a sparse (csr, row_sparse) weight array is not implemented in Weft"

# Tolerances by dtype when a test gives none (MXNet's default_rtols/default_atols): what each
# precision can honestly promise; integers and booleans compare exactly.
_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
for _t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
    _RTOL[np.dtype(_t)] = 0
    _ATOL[np.dtype(_t)] = 0


def default_context():
    """The context tests run on: the current context of this thread."""
    return current_context()


def set_default_context(ctx):
    """Makes `ctx` the default context (of this thread), as `with ctx:` does inside a block."""
    Context._default_ctx.value = Context(ctx)


def default_dtype():
    """The dtype of random test data."""
    return np.float32


def default_rtols():
    """The relative tolerance of each dtype when a comparison gives none."""
    return dict(_RTOL)


def default_atols():
    """The absolute tolerance of each dtype when a comparison gives none."""
    return dict(_ATOL)


def default_numeric_eps():
    """The finite-difference step of each float dtype: powers of two, so that adding the
    step to an input drops no bits."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def effective_dtype(dat):
    """The dtype whose tolerance fits results computed from `dat` (a numpy array or an
    NDArray). MXNet lowers float32 to float16 on Ampere GPUs, whose GEMMs round inputs to
    TF32; Weft's cuBLAS calls keep the default (full float32) math mode, so the dtype is the
    data's own."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """`tol` if it is a number; else the entry of `tol` (a dict by dtype) or of
    `default_tol` for the effective dtype of `dat`."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = {} if tol is None else tol
    return tol.get(dtype, default_tol[dtype])


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x with y: the given ones, else the larger default of their
    two dtypes."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtol = max(get_tolerance(x, rtol, _RTOL), get_tolerance(y, rtol, _RTOL))
    atol = max(get_tolerance(x, atol, _ATOL), get_tolerance(y, atol, _ATOL))
    return rtol, atol


def get_etol(etol=None):
    """The tolerated fraction of mismatching elements (0 unless given)."""
    return 0 if etol is None else etol


def _as_numpy(a):
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _tolerance(table, dtypes, given, fallback):
    if given is not None:
        return given
    vals = [table[d] for d in dtypes if d in table]
    return max(vals) if vals else fallback


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """`rtol`, else the default relative tolerance of `dtype`."""
    return _RTOL[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """`atol`, else the default absolute tolerance of `dtype`."""
    return _ATOL[np.dtype(dtype)] if atol is None else atol


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether |a - b| <= atol + rtol * |b| everywhere (same shape unless broadcasting)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    rtol = _tolerance(_RTOL, [a.dtype, b.dtype], rtol, 1e-5)
    atol = _tolerance(_ATOL, [a.dtype, b.dtype], atol, 1e-20)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raises AssertionError naming the worst element when a and b differ beyond
    atol + rtol * |b|."""
    a_np, b_np = _as_numpy(a), _as_numpy(b)
    rtol = _tolerance(_RTOL, [a_np.dtype, b_np.dtype], rtol, 1e-5)
    atol = _tolerance(_ATOL, [a_np.dtype, b_np.dtype], atol, 1e-20)
    if not use_broadcast and a_np.shape != b_np.shape:
        raise AssertionError("shapes differ: %s %s vs %s %s" % (names[0], a_np.shape, names[1], b_np.shape))
    if np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64 = np.broadcast_to(a_np, np.broadcast_shapes(a_np.shape, b_np.shape)).astype(np.float64)
    b64 = np.broadcast_to(b_np, a64.shape).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.abs(a64 - b64) - (atol + rtol * np.abs(b64))
    excess = np.where(np.isnan(excess), np.inf, excess)
    worst = np.unravel_index(int(np.argmax(excess)), a64.shape) if a64.size else ()
    bad = int(np.sum(excess > 0))
    raise AssertionError(
        "Items are not equal (rtol=%g, atol=%g): %d of %d elements differ; worst at %s: %s=%r, %s=%r\n"
        "%s: %s\n%s: %s" % (rtol, atol, bad, a64.size, worst, names[0], a64[worst], names[1], b64[worst],
                             names[0], np.array2string(a_np, threshold=mismatches[0] * 10),
                             names[1], np.array2string(b_np, threshold=mismatches[1] * 10)))


def same(a, b):
    """Whether a and b hold exactly the same values (and shape)."""
    return bool(np.array_equal(_as_numpy(a), _as_numpy(b)))


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape, each dim in [1, dimN] ([0, dimN] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return int(rnd.randint(low, dim0 + 1)), int(rnd.randint(low, dim1 + 1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, each dim in [1, dimN] ([0, dimN] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return int(rnd.randint(low, dim0 + 1)), int(rnd.randint(low, dim1 + 1)), int(rnd.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of num_dim dims, each in [1, dim] ([0, dim] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in rnd.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with x in [x_low, x_high] and y in [y_low, y_high]."""
    return int(rnd.randint(x_low, x_high + 1)), int(rnd.randint(y_low, y_high + 1))


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray on `ctx` (the default context): dense with standard normal values
    (random_arrays) in `dtype` (float32 when None), or, for stype 'csr' / 'row_sparse', the
    array of rand_sparse_ndarray with these arguments."""
    ctx = ctx if ctx else default_context()
    if stype == "default":
        return nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func, dtype=dtype,
                                 shuffle_csr_indices=shuffle_csr_indices, distribution=distribution, ctx=ctx)
    return arr


def _check_csr_request(num_rows, num_cols, density, distribution):
    if not 0 <= density <= 1:
        raise ValueError("density has to be between 0 and 1, got %r" % (density,))
    if num_rows <= 0 or num_cols <= 0:
        raise ValueError("num_rows and num_cols must be greater than 0, got (%r, %r)" % (num_rows, num_cols))
    if distribution == "powerlaw" and int(num_rows * num_cols * density) < 2 * num_rows:
        raise ValueError("powerlaw: density %r is too low for shape (%d, %d): num_rows * num_cols * density must "
                         "be at least 2 * num_rows" % (density, num_rows, num_cols))


def shuffle_csr_column_indices(csr):
    """Shuffles the column indices within each row of a scipy csr matrix (or any object
    with numpy `indptr` and `indices`), in place, as MXNet's does to test unordered indices.
    Weft keeps csr column indices sorted: an NDArray made from the result sorts them back."""
    for i in range(len(csr.indptr) - 1):
        begin, end = csr.indptr[i], csr.indptr[i + 1]
        part = np.array(csr.indices[begin:end])
        np.random.shuffle(part)
        csr.indices[begin:end] = part


def _distinct_positions(size, count):
    """`count` distinct positions of [0, size), sorted, each set of them equally likely.
    numpy's choice without replacement permutes all of [0, size): 8 bytes a position, which
    for a very sparse array of a million columns is gigabytes. There, positions drawn with
    replacement, the repeats dropped and drawn again, cost memory in `count` alone."""
    if count == 0:
        return np.zeros(0, np.int64)
    if size <= (1 << 22) or 4 * count > size:
        return np.sort(rnd.choice(size, count, replace=False))
    chosen = np.unique(rnd.randint(0, size, size=count, dtype=np.int64))
    while chosen.size < count:
        chosen = np.unique(np.concatenate([chosen, rnd.randint(0, size, size=count - chosen.size, dtype=np.int64)]))
    return chosen


def _uniform_csr(num_rows, num_cols, density, dtype, data_init):
    """nnz = density * rows * cols positions drawn without replacement, uniform [0, 1) values."""
    _check_csr_request(num_rows, num_cols, density, "uniform")
    nnz = int(round(density * num_rows * num_cols))
    flat = _distinct_positions(num_rows * num_cols, nnz)
    rows, cols = np.divmod(flat, num_cols)
    data = rnd.rand(nnz).astype(dtype)
    if data_init is not None:
        data.fill(data_init)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=num_rows))]).astype(np.int64)
    return nd.sparse.csr_matrix((data, cols.astype(np.int64), indptr), shape=(num_rows, num_cols), dtype=dtype)


def _powerlaw_csr(num_rows, num_cols, density, dtype):
    """Row i holds about twice the values of row i - 1 (each row at least one, in column 0),
    until density * rows * cols values are placed; values in [1.001, 3)."""
    _check_csr_request(num_rows, num_cols, density, "powerlaw")
    left = int(num_rows * num_cols * density)
    out = np.zeros((num_rows, num_cols), dtype=dtype)
    out[:, 0] = 1 + rnd.uniform(0.001, 2, num_rows)
    left -= num_rows
    width = 2
    for row in range(num_rows):
        if left <= 0:
            break
        limit = min(num_cols, width)
        take = min(limit - 1, left)
        out[row, 1:1 + take] = 1 + rnd.uniform(0.001, 2, take)
        left -= take
        width *= 2
    if left > 0:
        raise ValueError("powerlaw: density %r does not fit shape (%d, %d)" % (density, num_rows, num_cols))
    return nd.array(out, dtype=dtype).tostype("csr")


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None, data_init=None,
                        rsp_indices=None, modifier_func=None, shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts, as MXNet's: for 'row_sparse', (array, (values,
    row indices)) with each row stored with probability `density` (or the rows
    `rsp_indices`), uniform [0, 1) values; for 'csr' (2-D), (array, (indptr, indices, data))
    with a `distribution` 'uniform' (density * size values at random positions) or
    'powerlaw' (rows doubling their count). density defaults to a random one, dtype to
    default_dtype(); data_init fills every value, modifier_func maps each."""
    ctx = ctx if ctx else default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError("rand_sparse_ndarray: distribution %r is not supported for row_sparse" % (distribution,))
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise ValueError("rand_sparse_ndarray: %d rsp_indices for %d rows" % (len(indices), shape[0]))
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return nd.sparse.zeros("row_sparse", shape, ctx=ctx, dtype=dtype), (np.array([], dtype=dtype),
                                                                                 np.array([]))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = assign_each(val, modifier_func)
        arr = nd.sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError("rand_sparse_ndarray: csr needs a 2-D shape, got %r" % (shape,))
        if distribution == "uniform":
            # Weft keeps csr column indices sorted (MakeSparse checks it), so shuffled indices
            # would describe the same array: shuffle_csr_indices changes nothing here.
            csr = _uniform_csr(shape[0], shape[1], density, dtype, data_init)
        elif distribution == "powerlaw":
            csr = _powerlaw_csr(shape[0], shape[1], density, dtype)
        else:
            raise ValueError("rand_sparse_ndarray: unknown distribution %r (expected 'uniform' or 'powerlaw')"
                             % (distribution,))
        if modifier_func is not None:
            vals = assign_each(csr.data.asnumpy(), modifier_func).astype(dtype)
            csr = nd.sparse.csr_matrix((vals, csr.indices, csr.indptr), shape=csr.shape, dtype=dtype)
        csr = csr.as_in_context(ctx)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise ValueError("rand_sparse_ndarray: unknown storage type %r (expected 'csr' or 'row_sparse')" % (stype,))


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None, modifier_func=None,
                        density=0.5, shuffle_csr_indices=False):
    """A random sparse array (rand_sparse_ndarray's array); row_sparse rsp_indices are
    sorted first."""
    if stype == "row_sparse":
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init, rsp_indices=indices,
                                     dtype=dtype, modifier_func=modifier_func)
    elif stype == "csr":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init, dtype=dtype,
                                     modifier_func=modifier_func, shuffle_csr_indices=shuffle_csr_indices)
    else:
        raise AssertionError("Unknown storage type: " + str(stype))
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None, dtype=None,
                           modifier_func=None, shuffle_csr_indices=False):
    """create_sparse_array where, for row_sparse, only rsp_indices decide the stored rows
    (none when not given)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise ValueError("create_sparse_array_zd: %d rsp_indices for %d rows" % (len(rsp_indices), shape[0]))
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices, dtype=dtype,
                               modifier_func=modifier_func, density=density, shuffle_csr_indices=shuffle_csr_indices)


def random_arrays(*shapes):
    """numpy arrays of standard normal values in default_dtype(), one per shape (a lone
    shape gives one array, not a list; () gives a 0-d array)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """A list of numpy arrays of uniform values in [low, high) (keywords low=0.0, high=1.0,
    dtype=default_dtype()), one per shape."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", default_dtype())
    if kwargs:
        raise TypeError("random_uniform_arrays: unexpected keyword arguments %s (expected low, high, dtype)"
                        % sorted(kwargs))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k elements of the sequence `population`, drawn without replacement in random order
    (numpy's generator, so np.random.seed makes it reproducible)."""
    if not 0 <= k <= len(population):
        raise ValueError("random_sample: expected 0 <= k <= %d, got k=%r" % (len(population), k))
    population_copy = list(population)
    np.random.shuffle(population_copy)
    return population_copy[0:k]


def assign_each(the_input, function):
    """numpy array of function(x) for each element x of `the_input` (same shape; float64,
    as MXNet's)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input)


def assign_each2(input1, input2, function):
    """numpy array of function(x, y) for the elements of two arrays of the same shape."""
    if np.shape(input1) != np.shape(input2):
        raise ValueError("assign_each2: shapes differ: %s vs %s" % (np.shape(input1), np.shape(input2)))
    if function is None:
        return np.array(input1)
    return np.vectorize(function, otypes=[np.float64])(input1, input2)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """NDArray of shape (rows, columns) whose row i holds i everywhere."""
    a = np.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return nd.array(np.broadcast_to(a, (rows, columns)), dtype=dtype)


def create_vector(size, dtype=np.int64):
    """NDArray [0, 1, ..., size - 1]."""
    return nd.array(np.arange(0, size, dtype=dtype), dtype=dtype)


def get_identity_mat(size):
    """The size x size identity as an NDArray."""
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two size x size identities stacked: an NDArray of shape (2, size, size)."""
    eye = np.eye(size, dtype=np.float32)
    return nd.array(np.stack([eye, eye]))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """numpy_reduce_func applied over `axis` (an int, a tuple or None) one axis at a time,
    as MXNet's reference for reductions does."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else list(range(len(dat.shape)))
    ret = dat
    for i in reversed(sorted(a % dat.ndim for a in axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        keep_shape = list(dat.shape)
        for i in axis:
            keep_shape[i % dat.ndim] = 1
        ret = ret.reshape(tuple(keep_shape))
    return ret


def _op_name(sym):
    if isinstance(sym, str):
        return sym
    name = getattr(sym, "__name__", None)
    if name is None:
        raise TypeError("check_numeric_gradient: expected an operator name or a weft.nd operator function, got %r"
                        % (sym,))
    return name


def _forward(op, arrays, params, ctx, dtype):
    inputs = [nd.array(a, ctx=ctx, dtype=dtype) for a in arrays]
    out = nd.invoke(op, inputs, params)
    return inputs, out if isinstance(out, list) else [out]


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True, dtype=default_dtype()):
    """Central-difference gradients.

    As MXNet's: `executor` is a bound Executor and `location` a dict of argument name ->
    numpy value; the result maps each float argument to the derivative of the sum of the
    executor's first output (aux_states, a dict, are reset before each forward). `executor`
    may also be a Python function f(list of float64 arrays) -> float, `location` the list
    of its inputs (changed in place and restored); the result is then a list."""
    if hasattr(executor, "arg_dict"):
        return _executor_numeric_grad(executor, location, aux_states, eps, use_forward_train, dtype)
    f, inputs = executor, location
    grads = []
    for x in inputs:
        g = np.zeros_like(x, dtype=np.float64)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            fp = f(inputs)
            flat[i] = old - eps
            fm = f(inputs)
            flat[i] = old
            gflat[i] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def _executor_numeric_grad(executor, location, aux_states, eps, use_forward_train, dtype):
    location = {k: np.array(v, order="C") for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = v.astype(dtype)

    def first_output_sum():
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = val
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy().astype(np.float64)

    grads = {}
    for k, v in location.items():
        grads[k] = np.zeros(v.shape, dtype=dtype)
        if np.dtype(v.dtype).kind != "f":
            continue
        flat = v.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            executor.arg_dict[k][:] = v.astype(dtype)
            f_plus = first_output_sum()
            flat[i] = old - eps / 2.0
            executor.arg_dict[k][:] = v.astype(dtype)
            f_minus = first_output_sum()
            grads[k].reshape(-1)[i] = (f_plus - f_minus).sum() / eps
            flat[i] = old
        executor.arg_dict[k][:] = v.astype(dtype)
    return grads


def _check_symbol_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                   use_forward_train, ctx, dtype):
    """MXNet's check: the gradient of sum(output * P), P a random projection with elements
    in [0.1, 1.1), computed by the executor's backward (head gradient P) and by central
    differences of forward runs."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError("check_numeric_gradient: location lacks %s (the symbol's arguments are %s)"
                             % (missing, names))
    else:
        # Values beyond the arguments are left out, as MXNet's zip does (its tests pass a
        # bias to layers built with no_bias).
        if len(location) < len(names):
            raise ValueError("check_numeric_gradient: expected %d values (%s), got %d"
                             % (len(names), names, len(location)))
        location = dict(zip(names, location))
    # Sparse values are bound sparse, as MXNet does, so the operators' sparse kernels (or
    # their refusals) are what is checked; the perturbed values are assigned into them.
    stypes = {k: getattr(v, "stype", "default") for k, v in location.items()}
    location = {k: _as_numpy(v).astype(dtype) for k, v in location.items()}
    aux_names = sym.list_auxiliary_states()
    if aux_states is not None and not isinstance(aux_states, dict):
        aux_states = dict(zip(aux_names, aux_states))
    aux_np = None if aux_states is None else {k: _as_numpy(v).astype(dtype) for k, v in aux_states.items()}
    if grad_nodes is None:
        grad_req = {k: "write" for k in names}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
    elif isinstance(grad_nodes, (list, tuple)):
        grad_req = {k: "write" for k in grad_nodes}
    else:
        raise ValueError("check_numeric_gradient: grad_nodes must be None, a list of names or a dict of "
                         "name -> grad_req, got %r" % (grad_nodes,))
    for k, req in grad_req.items():
        if req not in ("write", "add", "null"):
            raise ValueError("check_numeric_gradient: invalid grad_req %r for argument %s" % (req, k))
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    if out_shapes is None:
        raise ValueError("check_numeric_gradient: the output shape cannot be inferred from %s"
                         % {k: v.shape for k, v in location.items()})
    proj = np.random.rand(*out_shapes[0]) + 0.1
    start = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_req}
    args = {k: nd.array(v, ctx=ctx, dtype=dtype).tostype(stypes[k]) for k, v in location.items()}
    grads = {k: nd.array(start[k], ctx=ctx, dtype=dtype) for k in grad_req}
    reqs = {k: grad_req.get(k, "null") for k in names}
    aux = None if aux_np is None else {k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in aux_np.items()}
    exe = sym.bind(ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    exe.forward(is_train=True)
    exe.backward([nd.array(proj, ctx=ctx, dtype=dtype)] + [nd.zeros(s, ctx=ctx, dtype=dtype)
                                                            for s in out_shapes[1:]])
    symbolic = {k: g.asnumpy() for k, g in grads.items()}
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float16)) and eps < 1e-5:
        raise ValueError("check_numeric_gradient: numeric_eps=%g is too small for %s finite differences "
                         "(at least 1e-5)" % (eps, np.dtype(dtype).name))

    # The projected first output, whose derivative the backward computed.
    class _Projected(object):
        def __init__(self):
            self.arg_dict, self.aux_dict = exe.arg_dict, exe.aux_dict

        def forward(self, is_train):
            exe.forward(is_train=is_train)

        @property
        def outputs(self):
            return [nd.array(exe.outputs[0].asnumpy().astype(np.float64) * proj, dtype="float64")]

    numeric = _executor_numeric_grad(_Projected(), {k: location[k] for k in grad_req}, aux_np, eps,
                                     use_forward_train, dtype)
    for name, req in grad_req.items():
        label = ("NUMERICAL_%s" % name, "BACKWARD_%s" % name)
        if req == "write":
            assert_almost_equal(numeric[name], symbolic[name], rtol, atol, label)
        elif req == "add":
            assert_almost_equal(numeric[name], symbolic[name] - start[name].astype(dtype), rtol, atol, label)
        else:
            assert_almost_equal(start[name].astype(dtype), symbolic[name], rtol, atol, label)


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=None, params=None):
    """Checks a gradient against central differences.

    `sym` is a Symbol (MXNet's use): `location` gives every argument (a list in
    list_arguments order or a dict by name), `grad_nodes` the names to check (a list) or
    their grad_req (a dict: 'write', 'add', 'null'); the values are in `dtype` (float32
    when None), the step is `numeric_eps` (default_numeric_eps() by dtype when None) and
    the tolerances are assert_almost_equal's by dtype when None.

    `sym` may also name an operator (a string or a weft.nd operator function), Weft's
    shorter form for one operator: `location` is the list of its inputs, `params` its
    parameters, `grad_nodes` the indices of the inputs to check; values are float64 unless
    `dtype` says otherwise, numeric_eps defaults to 1e-3, rtol to 1e-2 and atol to 1e-4. The
    outputs are projected on fixed random directions, so one scalar's derivatives test the
    whole Jacobian product the backward computes.

    `grad_stype_dict` (name -> 'default', 'row_sparse' or 'csr') is checked and accepted:
    Weft's executor binds dense gradient arrays, and their values are what is compared.
    """
    if grad_stype_dict is not None:
        if not isinstance(grad_stype_dict, dict):
            raise TypeError("check_numeric_gradient: grad_stype_dict must be a dict, got %s"
                            % type(grad_stype_dict).__name__)
        for k, v in grad_stype_dict.items():
            if v not in ("default", "row_sparse", "csr"):
                raise ValueError("check_numeric_gradient: grad_stype_dict[%r] must be 'default', 'row_sparse' or "
                                 "'csr', got %r" % (k, v))
    if isinstance(sym, Symbol):
        _check_symbol_numeric_gradient(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                       use_forward_train, ctx or default_context(),
                                       default_dtype() if dtype is None else dtype)
        return
    dtype = np.float64 if dtype is None else dtype
    numeric_eps = 1e-3 if numeric_eps is None else numeric_eps
    rtol = 1e-2 if rtol is None else rtol
    op = _op_name(sym)
    ctx = ctx or default_context()
    params = dict(params or {})
    location = [np.asarray(v, dtype=dtype).copy() for v in (location.values() if isinstance(location, dict)
                                                             else location)]
    inputs, outputs = _forward(op, location, params, ctx, dtype)
    rng = np.random.RandomState(1234)
    proj = [rng.uniform(-1, 1, size=o.shape).astype(dtype) for o in outputs]

    def objective(values):
        _, outs = _forward(op, values, params, ctx, dtype)
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * p) for o, p in zip(outs, proj)))

    op_handle = _api.weft_op_get(op)
    keys = [k for k, v in params.items() if v is not None]
    vals = [nd.ndarray._param_str(params[k]) for k in keys]
    head = [nd.array(p, ctx=ctx, dtype=dtype) for p in proj]
    grads = _api.weft_imperative_gradient(op_handle, len(inputs), inputs, len(outputs), outputs, head,
                                          len(keys), keys, vals)
    analytic = [None if g is None else NDArray(g).asnumpy() for g in grads]
    numeric = numeric_grad(objective, location, eps=numeric_eps)
    atol = 1e-4 if atol is None else atol
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        if grad_nodes is not None and i not in grad_nodes:
            continue
        if a is None:
            raise AssertionError("check_numeric_gradient: operator '%s' gives no gradient for input %d" % (op, i))
        assert_almost_equal(a, n, rtol=rtol, atol=atol, names=("analytic %s[%d]" % (op, i),
                                                              "numeric %s[%d]" % (op, i)))


def _bind_location(sym, location, aux_states, ctx, dtype, grad_req="null", grad_stypes=None, grad_dtypes=None):
    """Binds `sym` to numpy/NDArray values given as a list (list_arguments order) or dict;
    the gradient arrays are zeros of the storage types in `grad_stypes` (dense elsewhere),
    in the arguments' dtypes or those `grad_dtypes` gives by name."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError("location lacks %s (the symbol's arguments are %s)" % (missing, names))
        location = [location[n] for n in names]
    if len(location) != len(names):
        raise ValueError("expected %d values (%s), got %d" % (len(names), names, len(location)))
    args = [_location_array(v, ctx, dtype) for v in location]
    aux_names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        aux_states = [aux_states[n] for n in aux_names]
    aux = [_location_array(v, ctx, dtype) for v in (aux_states or [])]
    grads = None
    if grad_req != "null":
        grad_stypes = grad_stypes or {}
        grad_dtypes = grad_dtypes or {}
        grads = {n: nd.zeros(a.shape, ctx=ctx, dtype=grad_dtypes.get(n, a.dtype), stype=grad_stypes.get(n) or "default")
                 for n, a in zip(names, args)}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=aux), args, grads


def _location_array(value, ctx, dtype):
    """A value as bound by the check_symbolic_* helpers: with dtype="asnumpy" (MXNet's) in
    its own dtype (an NDArray as it is); otherwise a csr or row_sparse NDArray stays in its
    storage type (the executor then runs its sparse kernels) and anything else becomes a
    dense array, in `dtype`."""
    if isinstance(dtype, str) and dtype == "asnumpy":
        if isinstance(value, NDArray):
            return value.as_in_context(ctx)
        value = np.asarray(value)
        return nd.array(value, ctx=ctx, dtype=value.dtype)
    if isinstance(value, NDArray) and value.stype != "default":
        return nd.array(value, ctx=ctx, dtype=dtype)
    return nd.array(_as_numpy(value), ctx=ctx, dtype=dtype)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Runs `sym` forward (inference mode) on `location` and compares each output with
    `expected` (a list, or a dict by output name). Returns the executor's output NDArrays,
    as MXNet's (scripts check their storage type)."""
    ctx = ctx or default_context()
    ex, _, _ = _bind_location(sym, location, aux_states, ctx, dtype)
    outputs = ex.forward(is_train=False)
    if isinstance(expected, dict):
        expected = [expected[n] for n in sym.list_outputs()]
    if len(expected) != len(outputs):
        raise ValueError("expected %d outputs, the symbol has %d" % (len(expected), len(outputs)))
    for name, got, want in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(got.asnumpy(), _as_numpy(want), rtol, atol, names=("forward " + name, "expected"),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Runs `sym` forward (training mode) and backward with head gradients `out_grads`, and
    compares the argument gradients with `expected` (a list in list_arguments order or a
    dict by name; arguments left out of a dict are not checked). grad_req is one request or
    a list/dict of them by argument; the (dense) gradient arrays start from random values,
    which 'add' must add to and 'null' must leave as they are. Returns the gradient arrays
    (NDArrays) by name, as MXNet's.

    Arguments given as csr or row_sparse NDArrays are bound as such, and `grad_stypes`
    (name -> 'default', 'row_sparse' or 'csr') gives gradient arrays of those storage
    types: the executor then runs the sparse kernels, and the gradients keep their types."""
    for n, t in (grad_stypes or {}).items():
        if t not in (None, "default", "row_sparse", "csr"):
            raise ValueError("check_symbolic_backward: grad_stypes[%r] must be 'default', 'row_sparse' or 'csr', "
                             "got %r" % (n, t))
    ctx = ctx or default_context()
    names = sym.list_arguments()
    if not isinstance(expected, dict):
        expected = dict(zip(names, expected))
    # With dtype="asnumpy" a gradient has the dtype of its expected value, as in MXNet.
    grad_dtypes = None
    if isinstance(dtype, str) and dtype == "asnumpy":
        grad_dtypes = {n: np.asarray(_as_numpy(v)).dtype for n, v in expected.items()}
    if isinstance(grad_req, str):
        grad_req = {n: grad_req for n in names}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(names, grad_req))
    else:
        grad_req = {n: grad_req.get(n, "null") for n in names}
    for n, req in grad_req.items():
        if req not in ("write", "add", "null"):
            raise ValueError("check_symbolic_backward: invalid grad_req %r for argument %s" % (req, n))
    ex, _, grads = _bind_location(sym, location, aux_states, ctx, dtype, grad_req=grad_req,
                                  grad_stypes=grad_stypes, grad_dtypes=grad_dtypes)
    rng = np.random.RandomState(7)
    initial = {}
    for n, g in grads.items():
        if g.stype == "default":
            initial[n] = rng.normal(size=g.shape).astype(g.dtype)
            g[:] = initial[n]
        else:
            initial[n] = np.zeros(g.shape, dtype=g.dtype)
    ex.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = [out_grads[n] for n in sym.list_outputs()]
        out_grads = [_location_array(g, ctx, dtype) for g in out_grads]
    ex.backward(out_grads)
    for n, want in expected.items():
        if grad_req[n] == "null":
            want = initial[n]
        elif grad_req[n] == "add":
            want = _as_numpy(want) + initial[n]
        assert_almost_equal(grads[n].asnumpy(), _as_numpy(want), rtol, atol, names=("gradient of " + n, "expected"),
                            equal_nan=equal_nan)
    return grads


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, rtol=None,
                      atol=None, raise_on_err=True, ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs `sym` forward and backward under each entry of `ctx_list` (dicts with 'ctx',
    input shapes by name and an optional 'type_dict') on the same random values, and checks
    that outputs and gradients agree with those of the most precise entry, or with
    `ground_truth` (numpy arrays by output and argument name). Returns the reference as
    such a dict, as MXNet's. `sym` may also be a list of symbols with the same arguments,
    one per entry of `ctx_list` (outputs are then compared by position)."""
    if isinstance(sym, (list, tuple)):
        if len(sym) != len(ctx_list):
            raise ValueError("check_consistency: %d symbols for %d ctx_list entries; expected one each"
                             % (len(sym), len(ctx_list)))
        syms = list(sym)
    else:
        syms = [sym] * len(ctx_list)
    sym = syms[0]
    rng = np.random.RandomState(1234)
    first = ctx_list[0]
    shapes = {k: v for k, v in first.items() if k not in ("ctx", "type_dict")}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    draw = (lambda shp: rng.uniform(-1, 1, size=shp)) if use_uniform else (lambda shp: rng.normal(size=shp))
    arg_params = dict(arg_params or {})
    for n, shp in zip(names, arg_shapes):
        arg_params.setdefault(n, (draw(shp) * scale).astype(rand_type))
    aux_params = dict(aux_params or {})
    for n, shp in zip(aux_names, aux_shapes):
        aux_params.setdefault(n, draw(shp).astype(rand_type))
    results = []
    for entry, entry_sym in zip(ctx_list, syms):
        types = entry.get("type_dict", {})
        dtype = np.dtype(types.get(names[0], np.float32)) if names else np.dtype(np.float32)
        ex = entry_sym.simple_bind(entry["ctx"], grad_req=grad_req, type_dict=types,
                             **{k: v for k, v in entry.items() if k not in ("ctx", "type_dict")})
        for n in names:
            ex.arg_dict[n][:] = arg_params[n].astype(ex.arg_dict[n].dtype)
        for n in aux_names:
            ex.aux_dict[n][:] = aux_params[n].astype(ex.aux_dict[n].dtype)
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        ex.backward([nd.ones(o.shape, ctx=entry["ctx"], dtype=o.dtype) for o in outs])
        grads = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
        results.append((dtype, outs, grads))
    out_names = sym.list_outputs()
    if ground_truth is None:
        # The most precise entry is the reference the others must match.
        reference = max(range(len(results)), key=lambda i: results[i][0].itemsize)
        _, ref_outs, ref_grads = results[reference]
        gt = dict(zip(out_names, ref_outs))
        gt.update(ref_grads)
    else:
        reference = None
        gt = {k: None if v is None else _as_numpy(v) for k, v in ground_truth.items()}
    for i, (dtype, outs, grads) in enumerate(results):
        if i == reference:
            continue
        rt = get_rtol(rtol, dtype) if not isinstance(rtol, dict) else rtol.get(dtype, _RTOL[dtype])
        at = get_atol(atol, dtype) if not isinstance(atol, dict) else atol.get(dtype, _ATOL[dtype])
        checks = list(zip(out_names, outs)) + list(grads.items())
        try:
            for name, got in checks:
                if gt.get(name) is None:
                    continue
                assert_almost_equal(got, gt[name].astype(got.dtype), rt, at,
                                    names=("%s (entry %d)" % (name, i), "reference"), equal_nan=equal_nan)
        except AssertionError:
            if raise_on_err:
                raise
            traceback.print_exc()
    return gt


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError("%s did not raise %s" % (getattr(f, "__name__", f), exception_type.__name__))


@contextlib.contextmanager
def environment(*args):
    """Sets environment variables for the duration of a with-block: environment(name, value)
    or environment({name: value, ...}); a value of None unsets the variable."""
    if len(args) == 2:
        changes = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        changes = args[0]
    else:
        raise ValueError("environment: expected (name, value) or a dict, got %r" % (args,))
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        # Operators queued in the block may read the variables when they run.
        nd.waitall()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def discard_stderr():
    """Discards what is written to the process's stderr (C code included) in the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def retry(n):
    """Decorator: runs a (randomised) test up to n times until it passes once."""
    if n < 1:
        raise ValueError("retry: expected n >= 1, got %r" % (n,))

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


# ---------------------------------------------------------------- comparisons
def _find_max_violation(a, b, rtol, atol):
    # Where |a - b| exceeds atol + rtol * |b| the most, and by what factor (inf == inf is
    # no violation, as in np.allclose).
    absdiff = np.where(np.equal(a, b), 0, np.abs(a - b))
    violation = absdiff / (atol + rtol * np.abs(b) + 1e-20)
    loc = int(np.argmax(violation))
    return np.unravel_index(loc, violation.shape), float(np.max(violation))


def checkShapes(a, b):  # pylint: disable=invalid-name
    """Raises AssertionError naming both shapes when a and b differ in shape."""
    if a.shape != b.shape:
        raise AssertionError("a.shape = %s and b.shape = %s are not equal" % (a.shape, b.shape))


def locationError(a, b, index, names, maxError=False):  # pylint: disable=invalid-name
    """The message naming the element at `index` of a and b."""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % ("maximum " if maxError else "", index, names[0],
                                                          a[index], names[1], b[index])


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """numpy.testing.assert_allclose on numpy arrays or NDArrays."""
    npt.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"), equal_nan=False,
                                 mismatches=(10, 10)):
    """As assert_almost_equal, but passes while at most a fraction `etol` of the elements
    differ beyond atol + rtol * |b| (etol 0 or None: none may)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_numpy(a), _as_numpy(b)
    equals = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err = 1 - np.count_nonzero(equals) / equals.size
    if err > etol:
        index, rel = _find_max_violation(a, b, rtol, atol)
        raise AssertionError("Error %f exceeds tolerance rtol=%e, atol=%e: %.4f%% of the elements differ, more "
                             "than etol=%g allows.\n%s" % (rel, rtol, atol, 100 * err, etol,
                                                           locationError(a, b, index, names, maxError=True)))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """assert_almost_equal over the elements where neither a nor b is NaN."""
    a = np.copy(_as_numpy(a))
    b = np.copy(_as_numpy(b))
    nan_mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan_mask] = 0
    b[nan_mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def same_array(array1, array2):
    """Whether two NDArrays share memory: a change made through array1 shows in array2
    (array1 is restored afterwards)."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over two (nested) tuples of arrays; None on either side skips."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default", rtol=1e-4, atol=1e-5,
                      compare_states=True, ntensors=1):
    """Runs one update of two optimizers on the same random weights and gradients and checks
    that states and weights agree. A list of shapes updates `ntensors` weights at once
    through opt2 (its multi-tensor path) and one by one through opt1."""
    if (w_stype != "default" or g_stype != "default") and isinstance(shape, list):
        raise NotImplementedError("compare_optimizer(w_stype='%s', g_stype='%s') with several shapes: %s"
                                  % (w_stype, g_stype, _SPARSE_MISSING))
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: one shape goes with ntensors=1, got %r" % (ntensors,))
        # A sparse weight or gradient goes to opt2 as it is and to opt1 densely (MXNet's
        # rule: opt1 is the dense reference); a sparse weight stores every row.
        if w_stype == "default":
            w2 = nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            w1 = w2.copyto(ctx)
        else:
            w2 = rand_ndarray(shape, w_stype, density=1, dtype=dtype, ctx=ctx)
            w1 = w2.tostype("default")
        if g_stype == "default":
            g2 = nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            g1 = g2.copy()
        else:
            g2 = rand_ndarray(shape, g_stype, dtype=dtype, ctx=ctx)
            g1 = g2.tostype("default")
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2 = tuple(w.copy() for w in w1)
    g2 = tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether the nodes of two symbols run the same operators, node by node."""
    nodes1 = json.loads(sym1.tojson(remove_amp_cast=False))["nodes"]
    nodes2 = json.loads(sym2.tojson(remove_amp_cast=False))["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


def collapse_sum_like(a, shape):
    """numpy array `a` summed over the axes that `shape` lacks or has as 1 (the gradient of
    broadcasting to a.shape)."""
    if len(a.shape) < len(shape):
        raise ValueError("collapse_sum_like: shape %s has more dims than the array's %s" % (shape, a.shape))
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    ndim_diff = len(a.shape) - len(shape)
    axes = list(range(ndim_diff))
    for i, s in enumerate(shape):
        if s != a.shape[i + ndim_diff]:
            if s != 1:
                raise ValueError("collapse_sum_like: shape %s does not broadcast to %s" % (shape, a.shape))
            axes.append(i + ndim_diff)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# ---------------------------------------------------------------- running symbols and blocks
def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs `sym` forward on numpy inputs given by argument name; returns the output as a
    numpy array (a list of them for several outputs)."""
    ctx = ctx or default_context()
    args = {k: array(v, ctx=ctx) for k, v in inputs.items()}
    exe = sym.bind(ctx, args=args)
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds one run of `sym` takes, averaged over N runs after a warm-up: forward and
    backward (typ='whole') or forward only (typ='forward'). `location` maps argument names
    to numpy values; without it, shapes come from kwargs and values are random normal."""
    if typ not in ("whole", "forward"):
        raise ValueError("check_speed: typ must be 'whole' or 'forward', got %r" % (typ,))
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0) for k, arr in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise TypeError("check_speed: expected location as a dict of name -> numpy array, got %s"
                            % type(location).__name__)
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)
    train = typ == "whole"

    def run():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)

    run()
    nd.waitall()
    tic = time.time()
    for _ in range(N):
        run()
    nd.waitall()
    return (time.time() - tic) / N


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True, rtol=1e-4,
                                      atol=1e-4):
    """Checks that the block net_builder(prefix='net_') gives the same outputs (and input
    gradients, with test_grad) imperatively and hybridized, from the same initial
    parameters, and the same as numpy_func(*inputs) when given. The block must not draw
    random numbers."""
    saved_out = None
    saved_grads = None
    init_values = None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix="net_")
            net.initialize()
            if init_values is not None:
                for name, p in net.collect_params().items():
                    p.set_data(nd.array(init_values[name], dtype=init_values[name].dtype))
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with _autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if init_values is None:
                init_values = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol,
                                    names=("output (hybridize=%s)" % hybridize, "first output"))
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for g, want in zip(grads, saved_grads):
                        assert_almost_equal(g, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        assert_almost_equal(saved_out, numpy_func(*[x.asnumpy() for x in data_l]), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- random generators
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """`nbuckets` buckets of equal probability from the quantile function `ppf`:
    ([(ppf(i/n), ppf((i+1)/n)) ...], [1/n] * n)."""
    if nbuckets <= 0:
        raise ValueError("gen_buckets_probs_with_ppf: expected nbuckets > 0, got %r" % (nbuckets,))
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of generator(nsamples) lies within mu +- 3 sigma / sqrt(nsamples)."""
    samples = _as_numpy(generator(nsamples))
    mean = samples.mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of generator(nsamples) lies within
    sigma^2 +- 3 sqrt(2 sigma^4 / (nsamples - 1))."""
    samples = _as_numpy(generator(nsamples))
    var = samples.var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def _gamma_q(a, x):
    """The regularised upper incomplete gamma function Q(a, x), so that the chi-square
    p-value needs no scipy: the series of P for x < a + 1, Lentz's continued fraction of Q
    beyond (both converge fast there)."""
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(log_prefix) * h


def _chisquare_p(obs, exp):
    stat = float(np.sum((obs - exp) ** 2 / exp))
    dof = len(obs) - 1
    return _gamma_q(dof / 2.0, stat / 2.0)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """The chi-square test of generator(nsamples) against the probabilities `probs` of
    `buckets`: (min, max) ranges for a continuous distribution (ascending, disjoint), or
    the values of a discrete one. Returns (p-value, observed counts, expected counts)."""
    if not isinstance(buckets, list):
        raise TypeError("chi_square_check: expected buckets as a list, got %s" % type(buckets).__name__)
    if len(probs) != len(buckets):
        raise ValueError("chi_square_check: %d probabilities for %d buckets" % (len(probs), len(buckets)))
    samples = _as_numpy(generator(nsamples))
    continuous = isinstance(buckets[0], (list, tuple))
    expected = nsamples * np.array(probs, dtype=np.float64)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if continuous:
        edges = np.zeros(len(buckets) * 2, dtype=np.float32)
        for i, (lo, hi) in enumerate(buckets):
            if lo > hi or (i + 1 < len(buckets) and hi > buckets[i + 1][0]):
                raise ValueError("chi_square_check: buckets must be ascending and disjoint, got %r" % (buckets,))
            edges[2 * i], edges[2 * i + 1] = lo, hi
        ids = np.searchsorted(edges, samples, side="right") // 2
        for i in range(len(buckets)):
            observed[i] = int((ids == i).sum())
    else:
        for i, value in enumerate(buckets):
            observed[i] = int((samples == value).sum())
    # The buckets need not cover every sample (a discrete distribution's tail, a range that
    # stops short): what falls outside them is one more bucket, so that observed and
    # expected counts have the same total, as the test (and scipy's check) requires.
    obs_rest = nsamples - int(observed.sum())
    exp_rest = nsamples - float(expected.sum())
    if obs_rest > 0 or exp_rest > 1e-6 * nsamples:
        # A sample outside buckets that hold all the probability is a failure: a tiny
        # expected count makes its term, and the statistic, huge.
        observed = np.append(observed, obs_rest)
        expected = np.append(expected, max(exp_rest, 1e-9))
    # Rounding of probabilities that sum to 1 leaves totals a hair apart.
    expected = expected * (observed.sum() / expected.sum())
    if ss is not None:
        p = float(ss.chisquare(f_obs=observed, f_exp=expected)[1])
    else:
        p = _chisquare_p(observed.astype(np.float64), expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05):
    """Runs chi_square_check nrepeat times and raises AssertionError unless the p-value
    exceeds alpha in at least a fraction success_rate of them. Returns the p-values."""
    results = [chi_square_check(generator=generator, buckets=buckets, probs=probs, nsamples=nsamples)
               for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if (np.array(pvalues) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s.\n"
                             "buckets=%s, probs=%s" % (pvalues, [r[1] for r in results], [r[2] for r in results],
                                                        buckets, probs))
    return pvalues


# ---------------------------------------------------------------- machine and build
def list_gpus():
    """range(n) over the n usable GPUs (empty without any)."""
    return range(_api.weft_get_gpu_count())


def is_cd_run():
    """Whether the tests run in a continuous-delivery job (CD_JOB=1)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether this machine is aarch64."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """Whether the build has TVM-generated operators (runtime feature TVM_OP)."""
    return Features().is_enabled("TVM_OP")


def is_op_runnable():
    """Whether the operators of the build run in the current context: always on the CPU;
    on a GPU too, since Weft has no TVM operators whose compute capability matters."""
    return not (current_context().device_type == "gpu" and has_tvm_ops())


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of the im2rec tool: <$home_env>/tools/im2rec(.py), else the repository's
    tools/ folder beside the package."""
    root = os.environ.get(home_env, os.path.dirname(os.path.abspath(__file__)))
    candidates = [os.path.join(root, "tools", "im2rec.py"), os.path.join(root, "tools", "im2rec"),
                  os.path.join(root, "..", "..", "tools", "im2rec.py"), os.path.join(root, "..", "..", "tools", "im2rec")]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise IOError("Could not find the im2rec tool: looked for %s" % candidates)


# ---------------------------------------------------------------- data
def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Downloads `url` to `fname` (the URL's last part when None) in `dirname` (made if
    missing) and returns the file's name; an existing file is kept unless `overwrite`.
    Without network access the error names the URL."""
    if retries < 0:
        raise ValueError("download: expected retries >= 0, got %r" % (retries,))
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    from .gluon.utils import download as _gluon_download
    return _gluon_download(url, path=fname, overwrite=True, retries=retries)


def download_model(model_name, dst_dir="./", meta_info=None):
    """Downloads the symbol and parameters of `model_name` (a key of meta_info: {'symbol':
    url, 'params': url}) into dst_dir; returns (path prefix, epoch 0), or (None, 0) for an
    unknown name. Without meta_info, MXNet's model zoo at data.mxnet.io is used."""
    base = "http://data.mxnet.io/models/"
    if meta_info is None:
        meta_info = {
            "imagenet1k-inception-bn": ("imagenet/inception-bn/Inception-BN", "0126"),
            "imagenet1k-resnet-18": ("imagenet/resnet/18-layers/resnet-18", "0000"),
            "imagenet1k-resnet-34": ("imagenet/resnet/34-layers/resnet-34", "0000"),
            "imagenet1k-resnet-50": ("imagenet/resnet/50-layers/resnet-50", "0000"),
            "imagenet1k-resnet-101": ("imagenet/resnet/101-layers/resnet-101", "0000"),
            "imagenet1k-resnet-152": ("imagenet/resnet/152-layers/resnet-152", "0000"),
            "imagenet1k-resnext-50": ("imagenet/resnext/50-layers/resnext-50", "0000"),
            "imagenet1k-resnext-101": ("imagenet/resnext/101-layers/resnext-101", "0000"),
            "imagenet1k-resnext-101-64x4d": ("imagenet/resnext/101-layers/resnext-101-64x4d", "0000"),
            "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/resnet-152", "0000"),
            "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/resnet-152", "0000"),
            "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/resnet-50", "0000"),
        }
        meta_info = {k: {"symbol": base + p + "-symbol.json", "params": base + "%s-%s.params" % (p, e)}
                     for k, (p, e) in meta_info.items()}
    meta_info = dict(meta_info)
    if model_name not in meta_info:
        return (None, 0)
    os.makedirs(dst_dir, exist_ok=True)
    meta = dict(meta_info[model_name])
    for key in ("symbol", "params"):
        if key not in meta:
            raise ValueError("download_model: the entry of '%s' has no '%s' URL" % (model_name, key))
    prefix = os.path.join(dst_dir, model_name)
    download(meta["symbol"], prefix + "-symbol.json")
    download(meta["params"], prefix + "-0000.params")
    return (prefix, 0)


_MNIST_URL = "http://data.mxnet.io/data/mnist/"


def get_mnist():
    """MNIST as numpy arrays: {'train_data', 'train_label', 'test_data', 'test_label'},
    images (N, 1, 28, 28) float32 in [0, 1]. The four .gz files are read from the current
    folder, downloaded there first when absent (the error names the URL without network)."""
    def read_data(label_url, image_url):
        with gzip.open(download(label_url)) as flbl:
            struct.unpack(">II", flbl.read(8))
            label = np.frombuffer(flbl.read(), dtype=np.int8)
        with gzip.open(download(image_url), "rb") as fimg:
            _, _, rows, cols = struct.unpack(">IIII", fimg.read(16))
            image = np.frombuffer(fimg.read(), dtype=np.uint8).reshape(len(label), 1, rows, cols)
        return label, image.astype(np.float32) / 255

    train_lbl, train_img = read_data(_MNIST_URL + "train-labels-idx1-ubyte.gz",
                                     _MNIST_URL + "train-images-idx3-ubyte.gz")
    test_lbl, test_img = read_data(_MNIST_URL + "t10k-labels-idx1-ubyte.gz", _MNIST_URL + "t10k-images-idx3-ubyte.gz")
    return {"train_data": train_img, "train_label": train_lbl, "test_data": test_img, "test_label": test_lbl}


def get_mnist_pkl():
    """Puts mnist.pkl.gz into ./data (downloaded when absent)."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists("data/mnist.pkl.gz"):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data")


def get_mnist_ubyte():
    """Puts the four uncompressed MNIST files into ./data (from mnist.zip when one is
    missing)."""
    os.makedirs("data", exist_ok=True)
    names = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte"]
    if not all(os.path.exists(os.path.join("data", n)) for n in names):
        with zipfile.ZipFile(download("http://data.mxnet.io/mxnet/data/mnist.zip", dirname="data")) as zf:
            zf.extractall("data")


def get_cifar10():
    """Puts CIFAR-10's RecordIO files into ./data/cifar (from cifar10.zip when one is
    missing)."""
    os.makedirs("data", exist_ok=True)
    names = ["train.rec", "test.rec", "train.lst", "test.lst"]
    if not all(os.path.exists(os.path.join("data", "cifar", n)) for n in names):
        with zipfile.ZipFile(download("http://data.mxnet.io/mxnet/data/cifar10.zip", dirname="data")) as zf:
            zf.extractall("data")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, validation) MNISTIter over ./data (get_mnist_ubyte); flat images unless
    input_shape has 3 dims."""
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    train = _io.MNISTIter(image="data/train-images-idx3-ubyte", label="data/train-labels-idx1-ubyte",
                          batch_size=batch_size, shuffle=True, flat=flat, num_parts=num_parts, part_index=part_index)
    val = _io.MNISTIter(image="data/t10k-images-idx3-ubyte", label="data/t10k-labels-idx1-ubyte",
                        batch_size=batch_size, flat=flat, num_parts=num_parts, part_index=part_index)
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Downloads the zip file `url` into data_dir as data_origin_name and extracts it there,
    unless that file exists."""
    path = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(path):
        download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(path) as zf:
            zf.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Downloads the bz2 file `url` into data_dir and decompresses it to data_name (the
    compressed file is removed), unless data_name exists."""
    data_name = os.path.join(data_dir, data_name)
    origin = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_name):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
        with bz2.BZ2File(origin, "rb") as fin, open(data_name, "wb") as fout:
            for chunk in iter(lambda: fin.read(1 << 20), b""):
                fout.write(chunk)
        os.remove(origin)


class DummyIter(_io.DataIter):
    """Gives the first batch of `real_iter` forever (for speed tests)."""

    def __init__(self, real_iter):
        super(DummyIter, self).__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator, again; never StopIteration."""
        return self.the_batch

    __next__ = next


# ---------------------------------------------------------------- matrices for linalg tests
def new_matrix_with_real_eigvals_2d(n):
    """A random n x n matrix with real eigenvalues in [-10, 10], well conditioned: Q^-1 D Q
    with Q a Householder reflection scaled by a diagonal (condition number < 3)."""
    while True:
        diag = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v = v / np.linalg.norm(v)
        q = np.matmul(np.eye(n) - 2 * np.matmul(v, v.T), diag)
        if np.linalg.cond(q, 2) < 3:
            break
    return np.matmul(np.matmul(np.linalg.inv(q), np.diag(np.random.uniform(-10.0, 10.0, n))), q)


def new_matrix_with_real_eigvals_nd(shape):
    """A batch (shape[:-2]) of new_matrix_with_real_eigvals_2d matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix."""
    x = np.random.randn(n, n)
    return np.linalg.qr(np.matmul(x.T, x))[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric n x n matrix with eigenvalues in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return np.matmul(np.matmul(q.T, np.diag(np.random.uniform(-10.0, 10.0, n))), q)


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch (shape[:-2]) of new_sym_matrix_with_real_eigvals_2d matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(shape)

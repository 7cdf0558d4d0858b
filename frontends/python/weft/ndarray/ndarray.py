"""NDArray: an n-dimensional array on the engine, with MXNet 1.x's behaviour.

The class derives from `weft._fast.NDArrayBase`, which owns the C handle, so the hot path
(`a + b`, generated operators) creates results without any Python-level constructor.
Everything here is asynchronous except what reads values back (asnumpy, asscalar,
wait_to_read, __array__, bool/float/int conversion).
"""
import numbers
import sys
import warnings

import numpy as np

from .. import _fast
from ..base import _api, error, WeftValueError
from ..context import Context, current_context, _from_tuple

__all__ = ["NDArray", "empty", "array", "zeros", "ones", "full", "arange", "save", "load",
           "load_frombuffer", "waitall", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
           "concatenate", "moveaxis", "split_v2", "histogram", "bfloat16", "dtype_id", "dtype_np", "invoke",
           "add", "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum", "minimum",
           "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal", "logical_and",
           "logical_or", "logical_xor", "eye", "linspace", "from_numpy", "onehot_encode", "fill_element_0index", "imdecode",
           "_DTYPE_NP_TO_MX", "_DTYPE_MX_TO_NP", "_GRAD_REQ_MAP", "get_indexing_dispatch_code",
           "indexing_key_expand_implicit_axes", "get_oshape_of_gather_nd_op"]

# MXNet's representation of bfloat16 on the numpy side: the raw 16 bits in a named field.
bfloat16 = np.dtype([("bfloat16", np.uint16)])

# Type flags of the C API (MXNet's numbering) and their numpy types.
_ID_TO_NP = {0: np.dtype(np.float32), 1: np.dtype(np.float64), 2: np.dtype(np.float16),
             3: np.dtype(np.uint8), 4: np.dtype(np.int32), 5: np.dtype(np.int8),
             6: np.dtype(np.int64), 7: np.dtype(np.bool_), 12: bfloat16}
_NP_TO_ID = {v: k for k, v in _ID_TO_NP.items()}
# What NDArray.dtype gives, as MXNet's: numpy's scalar types (np.float32, which prints as
# <class 'numpy.float32'>), and bfloat16's structured dtype, which has no scalar type.
_ID_TO_TYPE = {k: v if v is bfloat16 else v.type for k, v in _ID_TO_NP.items()}
_NAME_TO_ID = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
               "int64": 6, "bool": 7, "bfloat16": 12}


def dtype_id(dtype):
    """The C API's type flag of `dtype` (a numpy dtype, a type like np.float32, or a name)."""
    if dtype is None:
        return 0
    if isinstance(dtype, str) and dtype in _NAME_TO_ID:
        return _NAME_TO_ID[dtype]
    try:
        key = np.dtype(dtype)
    except TypeError:
        key = None
    if key is not None and key in _NP_TO_ID:
        return _NP_TO_ID[key]
    raise TypeError("expected a dtype among %s, got %r" % (sorted(_NAME_TO_ID), dtype))


def dtype_np(dtype):
    """The numpy dtype of a dtype given any way dtype_id accepts."""
    return _ID_TO_NP[dtype_id(dtype)]


def _dtype_name(dtype):
    return next(name for name, i in _NAME_TO_ID.items() if i == dtype_id(dtype))


def _param_str(value):
    # Operator parameters travel as strings that the core parses. The common plain types
    # come first: this runs for every parameter of every call.
    kind = type(value)
    if kind is str:
        return value
    if kind is int or kind is float or kind is bool:
        return str(value)
    if isinstance(value, Context):
        return value._param_text()
    if isinstance(value, (np.dtype, type)) and not isinstance(value, bool):
        return _dtype_name(value)
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join("None" if v is None else str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, np.generic):
        return str(value.item())
    if isinstance(value, np.ndarray):
        # A numpy array of sizes (shape=np.array([2, 3])) is a tuple, as MXNet reads it.
        return str(value.item()) if value.ndim == 0 else _param_str(tuple(value.tolist()))
    return str(value)


def invoke(op, inputs, params=None, out=None):
    """Runs operator `op` (a name) on NDArrays `inputs` with keyword parameters `params`
    (values are converted to the strings the core parses; None values are left out)."""
    keys = vals = None
    if params:
        keys, vals = [], []
        for k, v in params.items():
            if v is not None:
                keys.append(k)
                vals.append(_param_str(v))
    return _fast.invoke(op, inputs, keys, vals, out)


def _binary(elem, bcast, scalar):
    """A comparison method: `elem` for an NDArray of the same shape, `bcast` for another
    shape, `scalar` for a number. The operator handles are looked up once, here, so a call
    is one C call."""
    e, b, s = (_api.weft_op_get(name) for name in (elem, bcast, scalar))
    arith = _fast.arith

    def method(self, other):
        result = arith(self, other, e, b, s, None)
        if result is NotImplemented and isinstance(other, np.generic) and other.ndim == 0:
            # numpy's integer scalars are not Python ints; their value is.
            result = arith(self, other.item(), e, b, s, None)
        return result

    return method


def _infer_reshape(src, target, reverse=False):
    """The shape MXNet's reshape codes give: 0 copies a dim, -1 infers one, -2 copies the
    rest, -3 merges two dims, -4 splits one into the next two values (one may be -1)."""
    src = list(src)
    target = list(target)
    if reverse:
        src.reverse()
        target.reverse()
    out = []
    i = 0  # position in src
    j = 0
    infer_at = -1
    while j < len(target):
        code = target[j]
        if code > 0:
            out.append(code)
            i += 1
        elif code == 0:
            if i >= len(src):
                raise error(1, "reshape: code 0 at position %d has no input dim to copy (input shape %s)"
                            % (j, tuple(src)))
            out.append(src[i])
            i += 1
        elif code == -1:
            if infer_at >= 0:
                raise error(1, "reshape: only one -1 is allowed, got %s" % (tuple(target),))
            infer_at = len(out)
            out.append(-1)
            i += 1
        elif code == -2:
            out.extend(src[i:])
            i = len(src)
        elif code == -3:
            if i + 1 >= len(src):
                raise error(1, "reshape: code -3 needs two input dims at position %d (input shape %s)"
                            % (i, tuple(src)))
            out.append(src[i] * src[i + 1])
            i += 2
        elif code == -4:
            if j + 2 >= len(target):
                raise error(1, "reshape: code -4 must be followed by two values, got %s" % (tuple(target),))
            if i >= len(src):
                raise error(1, "reshape: code -4 has no input dim to split (input shape %s)" % (tuple(src),))
            a, b = target[j + 1], target[j + 2]
            d = src[i]
            if a == -1 and b > 0:
                a = d // b
            elif b == -1 and a > 0:
                b = d // a
            if a * b != d:
                raise error(1, "reshape: code -4 splits dim %d into %d x %d, which does not fit" % (d, a, b))
            out.extend([a, b])
            i += 1
            j += 2
        else:
            raise error(1, "reshape: expected dims >= -4, got %d in %s" % (code, tuple(target)))
        j += 1
    if infer_at >= 0:
        known = 1
        for k, d in enumerate(out):
            if k != infer_at:
                known *= d
        total = int(np.prod(src)) if src else 1
        if known == 0 or total % known != 0:
            raise error(4, "reshape: cannot infer -1 in %s from input shape %s" % (tuple(target), tuple(src)))
        out[infer_at] = total // known
    if reverse:
        out.reverse()
    return tuple(out)


class NDArray(_fast.NDArrayBase):
    """An n-dimensional array of one dtype on one context."""

    __slots__ = ()
    # numpy's binary operators defer to NDArray's reflected ones (the priority); numpy's
    # functions (np.all, np.maximum) convert it through __array__, as MXNet's NDArray.
    __array_priority__ = 1000.0

    # ---------------------------------------------------------------- attributes
    @property
    def _as_parameter_(self):
        # ctypes reads an argument's handle here: ctypes.cast(arr, NDArrayHandle), MXNet's
        # idiom in monitor callbacks, gives a pointer holding this array's handle.
        return self.handle

    @property
    def shape(self):
        return _api.weft_ndarray_get_shape(self)

    @property
    def size(self):
        return _api.weft_ndarray_get_size(self)

    @property
    def ndim(self):
        return _api.weft_ndarray_get_ndim(self)

    @property
    def dtype(self):
        return _ID_TO_TYPE[_api.weft_ndarray_get_dtype(self)]

    @property
    def context(self):
        return _from_tuple(_api.weft_ndarray_get_context(self))

    ctx = context

    @property
    def stype(self):
        return "default"

    def tostype(self, stype):
        """The values in storage type `stype` ('default' copies; 'csr', 'row_sparse')."""
        from .sparse import cast_storage  # pylint: disable=import-outside-toplevel
        return cast_storage(self, stype)

    @property
    def T(self):
        if self.ndim > 2:
            raise error(4, "NDArray.T: only arrays of at most 2 dims, got shape %s; use transpose(axes)"
                        % (self.shape,))
        return invoke("transpose", [self])

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d NDArray")
        return shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        shape_str = "x".join(str(d) for d in self.shape)
        return "\n%s\n<%s %s @%s>" % (str(self.asnumpy()), type(self).__name__, shape_str, self.context)

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __bool__(self):
        size = self.size
        if size == 0:
            return False
        if size > 1:
            raise ValueError("The truth value of an NDArray with %d elements is ambiguous" % size)
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        if np.dtype(self.dtype).kind not in "iub":
            raise TypeError("only integer NDArrays can be used as an index, got %s" % _dtype_name(self.dtype))
        return int(self.asscalar())

    # ---------------------------------------------------------------- synchronisation and copies
    def wait_to_read(self):
        """Blocks until pending writes to this array are done (and raises their errors)."""
        _api.weft_ndarray_wait_to_read(self)

    def wait_to_write(self):
        """Blocks until pending reads and writes of this array are done."""
        _api.weft_ndarray_wait_to_write(self)

    def asnumpy(self):
        """A numpy copy of the values (waits for pending writes)."""
        out = np.empty(self.shape, dtype=self.dtype)
        _api.weft_ndarray_copy_to_host(self, out)
        return out

    def __array__(self, dtype=None):
        arr = self.asnumpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def asscalar(self):
        """The value of a 1-element array as a numpy scalar."""
        if self.size != 1:
            raise ValueError("asscalar: expected an array of 1 element, got shape %s" % (self.shape,))
        return self.asnumpy().reshape(())[()]

    def item(self):
        return self.asscalar().item()

    def tolist(self):
        return self.asnumpy().tolist()

    def astype(self, dtype, copy=True):
        """The values converted to `dtype` (self when already of it and copy is False)."""
        if not copy and dtype_id(dtype) == _api.weft_ndarray_get_dtype(self):
            return self
        return invoke("cast", [self], {"dtype": _dtype_name(dtype)})

    def copyto(self, other):
        """Copies into `other`: an NDArray (returned) or a Context (a new array there)."""
        if isinstance(other, NDArray):
            if other.handle == self.handle:
                return other
            if other.stype != "default":
                # A sparse destination takes the values in its own storage type.
                other._assign(self)
                return other
            _api.weft_ndarray_copy_to(self, other)
            return other
        if isinstance(other, Context):
            out = empty(self.shape, ctx=other, dtype=self.dtype)
            _api.weft_ndarray_copy_to(self, out)
            return out
        raise TypeError("copyto: expected an NDArray or a Context, got %s" % type(other).__name__)

    def copy(self):
        return self.copyto(self.context)

    def as_in_context(self, context):
        """Self when already on `context`, else a copy there."""
        return self if self.context == context else self.copyto(context)

    as_in_ctx = as_in_context

    # ---------------------------------------------------------------- views and shapes
    def reshape(self, *shape, **kwargs):
        """A view with another shape; MXNet's codes 0, -1, -2, -3, -4 and `reverse` apply."""
        reverse = kwargs.pop("reverse", False)
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        elif len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        if kwargs:
            raise TypeError("reshape: unexpected arguments %s" % sorted(kwargs))
        target = _infer_reshape(self.shape, [int(d) for d in shape], reverse)
        return NDArray(_api.weft_ndarray_reshape(self, target))

    def _op_or_view(self, name, kwargs, inplace, shape_of):
        # MXNet's flatten/squeeze/expand_dims take inplace=True to return a view of this
        # array's memory (writes through) rather than a copy made by the operator.
        if not inplace:
            from . import _ops
            return _ops.method(name)(self, **kwargs)
        return self.reshape(shape_of())

    def flatten(self, inplace=False):
        """(shape[0], product of the other axes); a view when inplace=True."""
        return self._op_or_view("flatten", {}, inplace,
                                lambda: (self.shape[0], int(np.prod(self.shape[1:], dtype=np.int64))))

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at `axis`; a view when inplace=True."""
        def shape_of():
            ndim = len(self.shape)
            if not -ndim - 1 <= axis <= ndim:
                raise ValueError("expand_dims: expected axis in [%d, %d], got %d" % (-ndim - 1, ndim, axis))
            shape = list(self.shape)
            shape.insert(axis + ndim + 1 if axis < 0 else axis, 1)
            return tuple(shape)
        return self._op_or_view("expand_dims", {"axis": axis}, inplace, shape_of)

    def squeeze(self, axis=None, inplace=False):
        """Drops the size-1 axes (those in `axis` when given); all gone gives (1,). A view
        when inplace=True."""
        def shape_of():
            ndim = len(self.shape)
            if axis is None:
                drop = {i for i, d in enumerate(self.shape) if d == 1}
            else:
                drop = set()
                for a in (axis if isinstance(axis, (tuple, list)) else (axis,)):
                    if not -ndim <= a < ndim:
                        raise ValueError("squeeze: expected axis in [%d, %d), got %d" % (-ndim, ndim, a))
                    a = a + ndim if a < 0 else a
                    if self.shape[a] != 1:
                        raise ValueError("squeeze: axis %d has size %d, expected 1" % (a, self.shape[a]))
                    drop.add(a)
            return tuple(d for i, d in enumerate(self.shape) if i not in drop) or (1,)
        kwargs = {} if axis is None else {"axis": axis}
        return self._op_or_view("squeeze", kwargs, inplace, shape_of)

    def reshape_like(self, *args, **kwargs):
        """The reshape_like operator on this array: `rhs` (positional or by name) gives the
        shape, lhs_begin/lhs_end/rhs_begin/rhs_end pick the axes, as in MXNet."""
        from . import _ops
        return _ops.method("reshape_like")(self, *args, **kwargs)

    def _slice(self, begin, end):
        return NDArray(_api.weft_ndarray_slice(self, begin, end))

    def _at(self, index):
        return NDArray(_api.weft_ndarray_at(self, index))

    def _first_axis_view(self, key):
        """The view `self[key]` for an int or a step-1 slice on the first axis, else None."""
        if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, bool):
            key = int(key)
            n = len(self)
            if not -n <= key < n:
                raise IndexError("index %d is out of bounds for axis 0 with size %d" % (key, n))
            if self.ndim == 1:
                # MXNet 1.x keeps one dimension: a[i] of a vector has shape (1,).
                key %= n
                return self._slice(key, key + 1)
            return self._at(key)
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(len(self))
            return self._slice(start, max(start, stop))
        return None

    def __getitem__(self, key):
        view = self._first_axis_view(key)
        if view is not None:
            return view
        if isinstance(key, NDArray):
            return invoke("take", [self, key], {"axis": 0})
        if isinstance(key, (list, np.ndarray)):
            idx = np.asarray(key)
            if idx.dtype == np.bool_:
                raise IndexError("boolean mask indexing is not supported; use an integer index array")
            return invoke("take", [self, array(idx, ctx=self.context, dtype=np.int64)], {"axis": 0})
        if not isinstance(key, tuple):
            key = (key,)
        if all(_is_basic_key(k) for k in key):
            return self._basic_index(key)
        return self._gather_index(key)

    def _gather_index(self, key):
        """self[key] for NumPy's indexing beyond ints and slices (None, index lists and
        arrays, mixed with slices): NumPy picks the flat positions, `take` gathers them,
        so the result is recorded by autograd as any take."""
        positions = np.arange(self.size, dtype=np.int64).reshape(self.shape)[_numpy_key(key)]
        flat = self.reshape((-1,))
        picked = invoke("take", [flat, array(positions.reshape(-1), ctx=self.context, dtype=np.int64)], {"axis": 0})
        return picked.reshape(positions.shape if positions.ndim else (1,))

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether NumPy's x[slc_key] (one slice per axis of `shape`) is one contiguous run
        of x's row-major memory: going from the last axis, once an axis is cut to a proper
        part, every axis before it keeps at most one element; a step other than 1 over
        several elements is never contiguous."""
        if len(slc_key) != len(shape):
            raise ValueError("expected one slice per axis of %s, got %r" % (shape, slc_key))
        lengths = [len(range(*k.indices(n))) for k, n in zip(slc_key, shape)]
        if int(np.prod(lengths)) <= 1:
            return True
        cut = False
        for k, n, m in zip(reversed(slc_key), reversed(shape), reversed(lengths)):
            step = k.indices(n)[2]
            if m > 1 and step != 1:
                return False
            if cut and m > 1:
                return False
            cut |= m < n
        return True

    def _contiguous_view(self, slices):
        """The view of self[slices] (one slice per axis, contiguous), sharing memory."""
        lengths = [len(range(*k.indices(n))) for k, n in zip(slices, self.shape)]
        if int(np.prod(lengths)) == 0:
            return None
        strides = np.cumprod((self.shape[1:] + (1,))[::-1])[::-1]
        start = sum(k.indices(n)[0] * int(st) for k, n, st in zip(slices, self.shape, strides))
        flat = self.reshape((-1,))
        return flat._slice(start, start + int(np.prod(lengths))).reshape(tuple(lengths))

    def _expand_key(self, key):
        if any(k is None for k in key):
            raise IndexError("NDArray indexing: None (newaxis) is not supported; use expand_dims")
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("NDArray indexing: at most one Ellipsis, got %r" % (key,))
        if Ellipsis in key:
            pos = key.index(Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:pos] + (slice(None),) * fill + key[pos + 1:]
        if len(key) > self.ndim:
            raise IndexError("too many indices: %d for an array of %d dims" % (len(key), self.ndim))
        return key

    def _basic_index(self, key):
        key = self._expand_key(key)
        shape = self.shape
        from .. import autograd  # pylint: disable=import-outside-toplevel
        if not autograd.is_recording():
            # As MXNet: a contiguous part is a view that writes through (under autograd
            # the slice operator is recorded instead).
            slices, dropped = [], []
            for axis, k in enumerate(key + (slice(None),) * (self.ndim - len(key))):
                if isinstance(k, slice):
                    slices.append(k)
                else:
                    i = int(k)
                    if not -shape[axis] <= i < shape[axis]:
                        raise IndexError("index %d is out of bounds for axis %d with size %d"
                                         % (i, axis, shape[axis]))
                    i %= shape[axis]
                    slices.append(slice(i, i + 1))
                    dropped.append(axis)
            if self.ndim and self._basic_indexing_slice_is_contiguous(slices, shape):
                view = self._contiguous_view(slices)
                if view is not None:
                    kept = tuple(d for a, d in enumerate(view.shape) if a not in dropped)
                    return view.reshape(kept if kept else (1,)) if dropped else view
        begin, end, step, keep = [], [], [], []
        for axis, k in enumerate(key):
            if isinstance(k, slice):
                begin.append(k.start)
                end.append(k.stop)
                step.append(k.step)
                keep.append(None)
            elif isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool):
                i = int(k)
                if not -shape[axis] <= i < shape[axis]:
                    raise IndexError("index %d is out of bounds for axis %d with size %d" % (i, axis, shape[axis]))
                i %= shape[axis]
                begin.append(i)
                end.append(i + 1)
                step.append(1)
                keep.append(axis)
            else:
                raise IndexError("NDArray indexing: expected ints, slices or an Ellipsis, got %r" % (k,))
        out = invoke("slice", [self], {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
        dropped = [a for a in keep if a is not None]
        if dropped:
            new_shape = tuple(d for a, d in enumerate(out.shape) if a not in dropped)
            out = out.reshape(new_shape if new_shape else (1,))
        return out

    def __setitem__(self, key, value):
        if not self.writable:
            raise ValueError("this NDArray is read-only")
        whole = key is Ellipsis or key is None or (isinstance(key, slice) and key == slice(None))
        from .. import autograd  # pylint: disable=import-outside-toplevel
        if not whole and autograd.is_recording():
            # MXNet records x[key] = v as an operator writing into x, which the recording
            # refuses; a gradient through it would be wrong.
            raise WeftValueError("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                                 "autograd (assigning to x[%r])" % (key,))
        if whole:
            view = self
        else:
            view = self._first_axis_view(key)
        if view is None:
            self._set_general(key, value)
            return
        _assign(view, value)

    def slice_assign(self, rhs, begin, end, step):
        """Writes `rhs` into the region of this array that slice(begin, end, step) selects
        (each a tuple with an entry per leading axis, None for the axis' default) and
        returns this array. `rhs` has the region's shape and this array's dtype."""
        return invoke("_slice_assign", [self, rhs], {"begin": begin, "end": end, "step": step}, out=self)

    def slice_assign_scalar(self, value, begin, end, step):
        """Sets every element of the region slice(begin, end, step) selects to `value` and
        returns this array."""
        return invoke("_slice_assign_scalar", [self],
                      {"scalar": value, "begin": begin, "end": end, "step": step}, out=self)

    def _set_general(self, key, value):
        # Multi-axis and strided assignment goes through host memory: it waits for the
        # array, writes the selected elements, and copies the result back.
        host = self.asnumpy()
        key = _numpy_key(key)
        if not isinstance(value, (numbers.Number, np.generic)):
            value = np.asarray(value.asnumpy() if isinstance(value, NDArray) else value)
            value = value.reshape(value.shape[_drop_unit_lead(value.shape, host[key].ndim):])
        host[key] = value
        _api.weft_ndarray_copy_from_host(self, np.ascontiguousarray(host))

    # ---------------------------------------------------------------- arithmetic
    # +, -, *, /, % and ** (with their in-place and reflected forms) are NDArrayBase's number
    # slots, in C (weft._fast).
    __gt__ = _binary("_greater", "broadcast_greater", "_greater_scalar")
    __ge__ = _binary("_greater_equal", "broadcast_greater_equal", "_greater_equal_scalar")
    __lt__ = _binary("_lesser", "broadcast_lesser", "_lesser_scalar")
    __le__ = _binary("_lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar")
    _eq = _binary("_equal", "broadcast_equal", "_equal_scalar")
    _ne = _binary("_not_equal", "broadcast_not_equal", "_not_equal_scalar")

    def __eq__(self, other):
        return False if other is None else self._eq(other)

    def __ne__(self, other):
        return True if other is None else self._ne(other)

    # Python 2's names for /, reflected / and /=, which MXNet's NDArray still defines (its
    # documentation calls x.__rdiv__(y)).
    def __div__(self, other):
        return self.__truediv__(other)

    def __rdiv__(self, other):
        return self.__rtruediv__(other)

    def __idiv__(self, other):
        return self.__itruediv__(other)

    def __neg__(self):
        return invoke("negative", [self])

    def __pos__(self):
        return self

    def __abs__(self):
        return invoke("abs", [self])

    # ---------------------------------------------------------------- autograd
    def attach_grad(self, grad_req="write", stype=None):
        """Marks this array as a variable for autograd, with a zero gradient array of its shape
        ('write' overwrites it at each backward, 'add' accumulates, 'null' computes none).
        A 'row_sparse' gradient holds only the rows the backward reached. `stype` defaults
        to this array's storage type, as MXNet's."""
        if stype is None:
            stype = self.stype
        if stype == "default":
            grad = zeros(self.shape, ctx=self.context, dtype=self.dtype)
        else:
            from .sparse import zeros as sparse_zeros  # pylint: disable=import-outside-toplevel
            grad = sparse_zeros(stype, self.shape, ctx=self.context, dtype=self.dtype)
        _api.weft_autograd_mark_variables(1, [self], [grad_req], [grad])
        from ..autograd import _forget_sparse_buffer  # pylint: disable=import-outside-toplevel
        _forget_sparse_buffer(self)

    @property
    def grad(self):
        """The gradient array attached by attach_grad (None if none)."""
        h = _api.weft_ndarray_get_grad(self)
        return None if h is None else _new_by_stype(h)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Computes the gradient of this array with respect to the marked variables."""
        from .. import autograd
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    def _has_history(self):
        return bool(_api.weft_ndarray_has_history(self))

    @property
    def _fresh_grad(self):
        """Whether a backward wrote this variable's gradient since _fresh_grad was last set to
        False (Gluon's Trainer clears it after each update, to find stale gradients)."""
        return bool(_api.weft_ndarray_get_grad_state(self))

    @_fresh_grad.setter
    def _fresh_grad(self, state):
        _api.weft_ndarray_set_grad_state(self, 1 if state else 0)

    def detach(self):
        """The same values, with no history: gradients do not flow through the result."""
        return _new_by_stype(_api.weft_ndarray_detach(self))

    # ---------------------------------------------------------------- exchange
    def __dlpack__(self, stream=None):
        return _api.weft_ndarray_to_dlpack(self)

    def __dlpack_device__(self):
        ctx = self.context
        # DLPack's device codes: 1 CPU (shared memory is CPU memory to a consumer), 2 CUDA,
        # 3 CUDA host (pinned).
        return ({"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 1}[ctx.device_type], ctx.device_id)

    def to_dlpack_for_read(self):
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        # The consumer will write: pending reads of the old values must finish first.
        self.wait_to_write()
        return self.__dlpack__()

    def _to_shared_mem(self):
        """(shared_pid, shared_id, shape, dtype): what another process passes to
        ndarray._new_from_shared_mem to map this array's memory (MXNet's name). The array must
        be on cpu_shared and start its segment (a view at an offset: copy it first); it waits
        for pending writes. shared_id is a file descriptor of process shared_pid, valid while
        the array lives there."""
        pid, fd, offset = _api.weft_ndarray_get_shared_mem(self)
        if offset != 0:
            raise error(1, "_to_shared_mem: this view starts at byte %d of its shared segment, which (pid, id, "
                           "shape, dtype) cannot say; share a copy of it (.copy())" % offset)
        return pid, fd, self.shape, self.dtype

    def _raw_bytes(self):
        raw = _api.weft_ndarray_save_raw_bytes(self)
        try:
            return _api.weft_bytes_get(raw)
        finally:
            _api.weft_bytes_free(raw)

    def __reduce__(self):
        return (_from_raw_bytes, (self._raw_bytes(),))

    def __getstate__(self):
        """MXNet's pickled state: {'handle': the array saved as raw bytes}."""
        return {"handle": bytearray(self._raw_bytes())}

    def __setstate__(self, state):
        """Makes this object the array of a __getstate__ state (any shape, dtype, device;
        a GPU array loads on the CPU when there is no GPU)."""
        if not isinstance(state, dict) or "handle" not in state:
            raise TypeError("__setstate__: expected a dict with 'handle' (raw bytes), got %r" % (type(state),))
        self._swap_handle(_from_raw_bytes(bytes(state["handle"])))

    def split_v2(self, *args, **kwargs):
        """split_v2(self, ...): see the function split_v2."""
        return split_v2(self, *args, **kwargs)

    def __getattr__(self, name):
        # Operators as methods (a.sum(axis=1), a.transpose(), ...), as MXNet's NDArray has.
        from . import _ops
        fn = _ops.method(name)
        if fn is None:
            raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _new_from_shared_mem(shared_pid, shared_id, shape, dtype):
    """The handle of a new array on cpu_shared(0) over the shared segment (shared_pid,
    shared_id) that NDArray._to_shared_mem gave in another process (or this one), of `shape`
    and `dtype`, sharing its memory (MXNet's function; wrap it with NDArray(handle)).
    shared_id is a descriptor of process shared_pid; this process keeps its own."""
    return _api.weft_ndarray_create_from_shared_mem(int(shared_pid), int(shared_id), 0, _shape(shape),
                                                    dtype_id(dtype))


def _from_raw_bytes(data):
    return _new_by_stype(_api.weft_ndarray_load_raw_bytes(data))


def _is_basic_key(k):
    return k is Ellipsis or isinstance(k, slice) or (isinstance(k, (numbers.Integral, np.integer))
                                                     and not isinstance(k, bool))


def _numpy_key(key):
    """`key` for NumPy: NDArrays (MXNet's index arrays may be float) become int64 arrays."""
    def one(k):
        return k.asnumpy().astype(np.int64) if isinstance(k, NDArray) else k
    return tuple(one(k) for k in key) if isinstance(key, tuple) else one(key)


def _drop_unit_lead(value_shape, ndim):
    """How many leading axes of a value of `value_shape` go when it is written into an
    `ndim`-axis target: NumPy drops extra leading axes of length 1."""
    extra = len(value_shape) - ndim
    if extra > 0 and all(d == 1 for d in value_shape[:extra]):
        return extra
    return 0


def _assign(view, value):
    """Writes `value` (a number, NDArray, numpy array or list) into the whole of `view`."""
    if isinstance(value, NDArray) and _drop_unit_lead(value.shape, view.ndim):
        value = value.reshape(value.shape[_drop_unit_lead(value.shape, view.ndim):])
    elif isinstance(value, np.ndarray) and _drop_unit_lead(value.shape, view.ndim):
        value = value.reshape(value.shape[_drop_unit_lead(value.shape, view.ndim):])
    if isinstance(value, NDArray):
        if value.stype != "default" and view.stype == "default":
            # A sparse value has no dense memory to copy from; MXNet's copy casts it.
            value = value.tostype("default")
        if value.shape != view.shape:
            value = invoke("broadcast_to", [value], {"shape": view.shape})
        _api.weft_ndarray_copy_to(value, view)
    elif isinstance(value, (numbers.Number, np.generic)):
        invoke("_full", [], {"shape": view.shape, "dtype": view.dtype, "value": value, "ctx": view.context},
               out=view)
    else:
        src = np.asarray(value, dtype=view.dtype)
        src = np.ascontiguousarray(np.broadcast_to(src, view.shape))
        _api.weft_ndarray_copy_from_host(view, src)


# -------------------------------------------------------------------- creation
def _ctx(ctx):
    return current_context() if ctx is None else Context(ctx)


def _shape(shape):
    if isinstance(shape, (numbers.Integral, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialised array (of storage type `stype`: a sparse one stores nothing)."""
    if stype not in (None, "default"):
        from .sparse import zeros as sparse_zeros  # pylint: disable=import-outside-toplevel
        return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    return NDArray(_api.weft_ndarray_create(_shape(shape), dtype_id(dtype), _ctx(ctx)._as_tuple()))


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """An array of zeros (of storage type `stype`: a sparse one stores nothing)."""
    if stype not in (None, "default"):
        from .sparse import zeros as sparse_zeros  # pylint: disable=import-outside-toplevel
        return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    return _filled("_zeros", shape, ctx, dtype, kwargs.get("out"))


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones; `out` (keyword) receives them instead of a new array."""
    return _filled("_ones", shape, ctx, dtype, kwargs.get("out"))


def _legacy_shape_check(what, shape, depth):
    """MXNet 1.x's legacy shape mode reads a 0 (and an empty shape) as an unknown size, so
    its creation functions refuse them; numpy shape semantics (mx.util.np_shape) allow
    scalars and zero-size arrays. The refusal is for the program's own calls (`depth`: the
    frames between here and the caller of the public function): the library's code (an
    attach_grad of a zero-size array, an optimizer's state) keeps making what it needs."""
    from ..util import is_np_shape  # pylint: disable=import-outside-toplevel
    if is_np_shape() or (len(shape) != 0 and 0 not in shape):
        return
    caller = sys._getframe(depth + 1).f_globals.get("__name__", "")  # pylint: disable=protected-access
    if caller != "weft" and not caller.startswith("weft."):
        raise WeftValueError("%s: shape %s has %s, which MXNet's legacy shape mode reads as unknown; turn on numpy "
                             "shape semantics (mx.util.np_shape() / use_np_shape) for scalars and zero-size arrays"
                             % (what, shape, "no dimension" if len(shape) == 0 else "a zero size"))


def _filled(op, shape, ctx, dtype, out):
    # With `out`, its dtype and context are the defaults (MXNet writes into it).
    if out is None:
        _legacy_shape_check(op.lstrip("_"), _shape(shape), 2)
    if out is not None:
        dtype = dtype or out.dtype
        ctx = ctx or out.context
    return invoke(op, [], {"shape": _shape(shape), "ctx": _ctx(ctx), "dtype": _dtype_name(dtype or "float32")},
                  out=out)


def full(shape, val, ctx=None, dtype=np.float32, out=None):
    if out is None:
        _legacy_shape_check("full", _shape(shape), 1)
    return invoke("_full", [], {"shape": _shape(shape), "ctx": _ctx(ctx), "dtype": _dtype_name(dtype),
                                "value": val}, out=out)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=np.float32):
    """Evenly spaced values in [start, stop), each repeated `repeat` times. infer_range is
    MXNet's deprecated argument: accepted with a DeprecationWarning and ignored, as there."""
    if infer_range is not None:
        warnings.warn("arange: the infer_range argument is deprecated and ignored", DeprecationWarning, stacklevel=2)
    return invoke("_arange", [], {"start": start, "stop": stop, "step": step, "repeat": repeat,
                                  "ctx": _ctx(ctx), "dtype": _dtype_name(dtype)})


def array(source_array, ctx=None, dtype=None):
    """An array from a numpy array, an NDArray, a list or a number. The dtype defaults to
    the source's for an NDArray and to float32 for anything else, numpy arrays included:
    MXNet's rule, on which scripts rely (`nd.array(np.random.rand(3))` is float32)."""
    if isinstance(source_array, NDArray) and source_array.stype != "default":
        # A sparse source gives a sparse copy, as MXNet's.
        copy = source_array.copyto(_ctx(ctx)) if ctx is not None else source_array.copy()
        return copy if dtype is None or dtype_id(dtype) == dtype_id(copy.dtype) else copy.astype(dtype)
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
        src = source_array.asnumpy()
    else:
        if dtype is None:
            dtype = np.float32
        src = source_array
    np_dtype = dtype_np(dtype)
    # np.require, not np.ascontiguousarray: that one turns a 0-d source into shape (1,), and
    # MXNet's nd.array(np.ones(())) has shape ().
    host = np.require(np.asarray(src, dtype=np_dtype if np_dtype != bfloat16 else np.float32), requirements="C")
    if np_dtype == bfloat16:
        return array(host, ctx=ctx).astype("bfloat16")
    out = empty(host.shape, ctx=ctx, dtype=np_dtype)
    _api.weft_ndarray_copy_from_host(out, host)
    return out


def concatenate(arrays, axis=0, always_copy=True):
    """Joins arrays along an existing axis."""
    if not arrays:
        raise ValueError("concatenate: expected at least one array, got none")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return invoke("concat", list(arrays), {"dim": axis, "num_args": len(arrays)})


def _axes_list(axes, ndim, what):
    # An int or a sequence of distinct axes in [-ndim, ndim), as non-negative ints.
    seq = [axes] if isinstance(axes, numbers.Integral) else list(axes)
    out = []
    for a in seq:
        if not -ndim <= a < ndim:
            raise ValueError("moveaxis: %s axis %d is out of range for %d dimensions" % (what, a, ndim))
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError("moveaxis: repeated %s axes %s" % (what, seq))
    return out


def moveaxis(tensor, source, destination):
    """Moves axis `source` (an int or a sequence of ints) to position `destination` (the
    same kind, as many); the other axes keep their order, as numpy.moveaxis."""
    ndim = tensor.ndim
    src = _axes_list(source, ndim, "source")
    dst = _axes_list(destination, ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: %d source axes but %d destination axes" % (len(src), len(dst)))
    axes = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        axes.insert(d, s)
    return invoke("transpose", [tensor], {"axes": tuple(axes)})


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits `ary` along `axis` into `indices_or_sections` equal pieces (an int, which must
    divide the axis) or at the given indices (a tuple: ary[:i0], ary[i0:i1], ..., ary[ik:]);
    squeeze_axis removes the axis from pieces of length 1. Returns a list of NDArrays."""
    size = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise ValueError("split_v2: an axis of length %d does not split into %d equal pieces"
                             % (size, indices_or_sections))
        step = size // indices_or_sections
        indices = [i * step for i in range(indices_or_sections)]
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError("split_v2: indices_or_sections must be an int or a tuple of ints, got %r"
                         % (indices_or_sections,))
    out = invoke("_split_v2", [ary], {"indices": tuple(indices), "axis": axis, "squeeze_axis": squeeze_axis})
    return out if isinstance(out, list) else [out]


def histogram(a, bins=10, range=None):  # pylint: disable=redefined-builtin
    """numpy.histogram of an NDArray: (counts, bin edges). `bins` is a number of equal bins
    over `range` (without a range, numpy decides the range on the host, as MXNet does) or an
    NDArray of edges."""
    if isinstance(bins, NDArray):
        return invoke("_histogram", [a, bins])
    if isinstance(bins, numbers.Integral):
        if range is None:
            counts, edges = np.histogram(a.asnumpy(), bins=bins)
            return array(counts), array(edges)
        return invoke("_histogram", [a], {"bin_cnt": bins, "range": tuple(range)})
    raise ValueError("histogram: bins must be an int or an NDArray, got %r" % (bins,))


def waitall():
    """Blocks until every operation pushed so far has finished; raises the first error that
    no wait on an array has raised already."""
    _api.weft_wait_all()


# -------------------------------------------------------------------- files
def _new_by_stype(handle):
    # Loaded arrays may be sparse (MXNet's files hold csr and row_sparse records).
    if _api.weft_ndarray_get_storage_type(handle) > 0:
        from .sparse import _wrap  # pylint: disable=import-outside-toplevel
        return _wrap(handle)
    return NDArray(handle)


def _list_from_handle(lst):
    try:
        n = _api.weft_ndarray_list_size(lst)
        arrays = [_new_by_stype(_api.weft_ndarray_list_get(lst, i)) for i in range(n)]
        if _api.weft_ndarray_list_has_names(lst):
            return {_api.weft_ndarray_list_name(lst, i): arrays[i] for i in range(n)}
        return arrays
    finally:
        _api.weft_ndarray_list_free(lst)


def _save_args(data):
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        names = list(data.keys())
        for k in names:
            if not isinstance(k, str):
                raise TypeError("save: dict keys must be str, got %s" % type(k).__name__)
        arrays = [data[k] for k in names]
    elif isinstance(data, (list, tuple)):
        arrays, names = list(data), None
    else:
        raise TypeError("save: expected an NDArray, a list or a dict of NDArrays, got %s" % type(data).__name__)
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError("save: expected NDArrays, got %s" % type(a).__name__)
    return arrays, names


def save(fname, data):
    """Saves an NDArray, a list or a str -> NDArray dict in MXNet's `.params` format."""
    arrays, names = _save_args(data)
    _api.weft_ndarray_save(str(fname), len(arrays), arrays, names)


def save_tobuffer(data):
    """The bytes `save` would write."""
    arrays, names = _save_args(data)
    raw = _api.weft_ndarray_save_to_bytes(len(arrays), arrays, names)
    try:
        return _api.weft_bytes_get(raw)
    finally:
        _api.weft_bytes_free(raw)


def load(fname):
    """Loads a list or a dict of NDArrays from a file `save` (or MXNet) wrote."""
    return _list_from_handle(_api.weft_ndarray_load(str(fname)))


def load_frombuffer(buf):
    """Loads a list or a dict of NDArrays from bytes `save_tobuffer` (or MXNet) made."""
    return _list_from_handle(_api.weft_ndarray_load_from_bytes(buf))


# -------------------------------------------------------------------- DLPack
def from_dlpack(dlpack):
    """An NDArray sharing memory with a DLPack capsule or an object with __dlpack__
    (a torch tensor, a numpy array)."""
    capsule = dlpack.__dlpack__() if hasattr(dlpack, "__dlpack__") else dlpack
    return NDArray(_api.weft_ndarray_from_dlpack(capsule))


def to_dlpack_for_read(data):
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    return data.to_dlpack_for_write()


# -------------------------------------------------------------------- module-level arithmetic
# MXNet's nd.add, nd.greater, ...: two arrays broadcast against each other, an array and a
# number use the scalar operator (its reflected form when the number is on the left), two
# numbers are computed by Python.
_NUMBERS = (numbers.Number, np.generic)


def _ufunc(lhs, rhs, array_op, scalar_fn, scalar_op, rscalar_op=None):
    if isinstance(lhs, _NUMBERS):
        if isinstance(rhs, _NUMBERS):
            return scalar_fn(lhs, rhs)
        if not isinstance(rhs, NDArray):
            raise TypeError("type %s not supported" % type(rhs).__name__)
        return invoke(rscalar_op or scalar_op, [rhs], {"scalar": float(lhs)})
    if not isinstance(lhs, NDArray):
        raise TypeError("type %s not supported" % type(lhs).__name__)
    if isinstance(rhs, _NUMBERS):
        return invoke(scalar_op, [lhs], {"scalar": float(rhs)})
    if isinstance(rhs, NDArray):
        return invoke(array_op, [lhs, rhs])
    raise TypeError("type %s not supported" % type(rhs).__name__)


def _ufunc_function(name, array_op, scalar_fn, scalar_op, rscalar_op, what):
    def fn(lhs, rhs):
        return _ufunc(lhs, rhs, array_op, scalar_fn, scalar_op, rscalar_op)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = ("%s of `lhs` and `rhs`, each an NDArray or a number; two arrays broadcast "
                  "against each other (%s), two numbers give a number." % (what, array_op))
    return fn


def _truth(test):
    return lambda x, y: 1 if test(x, y) else 0


add = _ufunc_function("add", "broadcast_add", lambda x, y: x + y, "_plus_scalar", None, "The sum")
subtract = _ufunc_function("subtract", "broadcast_sub", lambda x, y: x - y, "_minus_scalar", "_rminus_scalar",
                           "The difference")
multiply = _ufunc_function("multiply", "broadcast_mul", lambda x, y: x * y, "_mul_scalar", None, "The product")
divide = _ufunc_function("divide", "broadcast_div", lambda x, y: x / y, "_div_scalar", "_rdiv_scalar",
                         "The quotient")
true_divide = _ufunc_function("true_divide", "broadcast_div", lambda x, y: x / y, "_div_scalar", "_rdiv_scalar",
                              "The quotient (as divide: NDArray division is true division)")
modulo = _ufunc_function("modulo", "broadcast_mod", lambda x, y: x % y, "_mod_scalar", "_rmod_scalar",
                         "The remainder")
maximum = _ufunc_function("maximum", "broadcast_maximum", lambda x, y: x if x > y else y, "_maximum_scalar",
                          None, "The elementwise maximum")
minimum = _ufunc_function("minimum", "broadcast_minimum", lambda x, y: x if x < y else y, "_minimum_scalar",
                          None, "The elementwise minimum")
equal = _ufunc_function("equal", "broadcast_equal", _truth(lambda x, y: x == y), "_equal_scalar", None,
                        "1 where lhs == rhs, else 0,")
not_equal = _ufunc_function("not_equal", "broadcast_not_equal", _truth(lambda x, y: x != y), "_not_equal_scalar",
                            None, "1 where lhs != rhs, else 0,")
greater = _ufunc_function("greater", "broadcast_greater", _truth(lambda x, y: x > y), "_greater_scalar",
                          "_lesser_scalar", "1 where lhs > rhs, else 0,")
greater_equal = _ufunc_function("greater_equal", "broadcast_greater_equal", _truth(lambda x, y: x >= y),
                                "_greater_equal_scalar", "_lesser_equal_scalar", "1 where lhs >= rhs, else 0,")
lesser = _ufunc_function("lesser", "broadcast_lesser", _truth(lambda x, y: x < y), "_lesser_scalar",
                         "_greater_scalar", "1 where lhs < rhs, else 0,")
lesser_equal = _ufunc_function("lesser_equal", "broadcast_lesser_equal", _truth(lambda x, y: x <= y),
                               "_lesser_equal_scalar", "_greater_equal_scalar", "1 where lhs <= rhs, else 0,")
logical_and = _ufunc_function("logical_and", "broadcast_logical_and", _truth(lambda x, y: x and y),
                              "_logical_and_scalar", None, "1 where both are nonzero, else 0,")
logical_or = _ufunc_function("logical_or", "broadcast_logical_or", _truth(lambda x, y: x or y),
                             "_logical_or_scalar", None, "1 where either is nonzero, else 0,")
logical_xor = _ufunc_function("logical_xor", "broadcast_logical_xor", _truth(lambda x, y: bool(x) != bool(y)),
                              "_logical_xor_scalar", None, "1 where exactly one is nonzero, else 0,")


def power(base, exp):
    """`base` to the power `exp`, each an NDArray or a number (arrays broadcast)."""
    return _ufunc(base, exp, "broadcast_power", lambda x, y: x ** y, "_power_scalar", "_rpower_scalar")


# -------------------------------------------------------------------- more creation
def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An N x M (M=0: N x N) array with ones on diagonal `k` (0 the main one, positive above)."""
    return invoke("_eye", [], {"N": N, "M": M, "k": k, "ctx": _ctx(ctx), "dtype": _dtype_name(dtype or "float32")})


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=np.float32):
    """`num` evenly spaced values from `start` to `stop` (included unless endpoint=False)."""
    return invoke("_linspace", [], {"start": start, "stop": stop, "num": num, "endpoint": endpoint,
                                    "ctx": _ctx(ctx), "dtype": _dtype_name(dtype)})


def from_numpy(ndarray, zero_copy=True, array_cls=NDArray):
    """An NDArray of a numpy array. With zero_copy the two share memory through DLPack and,
    as in MXNet, the numpy array is made read-only (writes through it would race the
    engine); that needs a C-contiguous array. zero_copy=False copies."""
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("from_numpy: only C-contiguous arrays can be shared without a copy")
    if not ndarray.flags["WRITEABLE"]:
        # Shared before (from_numpy made it read-only): numpy exports only writeable arrays
        # through DLPack, so lift the flag for the export. An array read-only for another
        # reason (a view of read-only memory) refuses, with numpy's ValueError.
        ndarray.flags["WRITEABLE"] = True
    handle = _api.weft_ndarray_from_dlpack(ndarray.__dlpack__())
    ndarray.flags["WRITEABLE"] = False
    return array_cls(handle)


def onehot_encode(indices, out):
    """Writes the one-hot rows of `indices` into the 2-D `out` (depth out.shape[1]) and
    returns it. Deprecated in MXNet in favour of one_hot."""
    return invoke("one_hot", [indices], {"depth": out.shape[1], "dtype": _dtype_name(out.dtype)}, out=out)


def fill_element_0index(lhs, mhs, rhs, out=None):
    """A copy of the 2-D `lhs` with one element of each row i replaced: column rhs[i]
    (0-based) takes the value mhs[i]. MXNet's old NDArray function."""
    for name, arr, ndim in (("lhs", lhs, 2), ("mhs", mhs, 1), ("rhs", rhs, 1)):
        if not isinstance(arr, NDArray):
            raise TypeError("fill_element_0index: %s must be an NDArray, got %s" % (name, type(arr).__name__))
        if arr.ndim != ndim:
            raise WeftValueError("fill_element_0index: expected a %d-D %s, got shape %s"
                                       % (ndim, name, arr.shape))
    if not lhs.shape[0] == mhs.shape[0] == rhs.shape[0]:
        raise WeftValueError("fill_element_0index: expected one value and one index per row of lhs %s, "
                                   "got values %s and indices %s" % (lhs.shape, mhs.shape, rhs.shape))
    mask = invoke("one_hot", [rhs], {"depth": lhs.shape[1], "dtype": _dtype_name(lhs.dtype)})
    values = invoke("broadcast_to", [invoke("reshape", [mhs.astype(lhs.dtype)], {"shape": (-1, 1)})],
                    {"shape": lhs.shape})
    return invoke("where", [mask, values, lhs], out=out)


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """MXNet's first image decoder (deprecated there for mx.image): the image's bytes
    decoded to a float32 (channels, h, w) array, cropped to `clip_rect` (x0, y0, x1, y1;
    all zero keeps the whole image), less `mean` when given, written into `out` when given
    (3-D, or 4-D at batch position `index`)."""
    if channels not in (1, 3):
        raise ValueError("imdecode: channels must be 1 or 3, got %r" % (channels,))
    img = NDArray(_api.weft_image_decode(bytes(str_img), 1 if channels == 3 else 0, 1))
    x0, y0, x1, y1 = (int(v) for v in clip_rect)
    if x1 > x0 and y1 > y0:
        img = img[y0:y1, x0:x1]
    res = invoke("transpose", [img.astype("float32")], {"axes": (2, 0, 1)})
    if mean is not None:
        if mean.shape != res.shape:
            raise ValueError("imdecode: mean has shape %s, the image %s" % (mean.shape, res.shape))
        res = res - mean
    if out is None:
        return res
    target = out[index] if out.ndim == 4 else out
    if target.shape != res.shape:
        raise ValueError("imdecode: out has room for %s, the image is %s" % (target.shape, res.shape))
    _api.weft_ndarray_copy_to(res, target)
    return out


# -------------------------------------------------------------------- MXNet's exported helpers
# The dtype tables and indexing helpers that MXNet's ndarray module lists in its __all__.
class _NumpyTypeKeys(dict):
    """Keyed by numpy scalar types, as MXNet's table is (NDArray.dtype gives them); a numpy
    dtype object (np.dtype('float32'), what numpy arrays carry) or a dtype's name looks up as
    its scalar type."""

    @staticmethod
    def _scalar_type(key):
        if key is None or key is bfloat16:
            return key
        try:
            return np.dtype(key).type
        except TypeError:
            return key

    def __missing__(self, key):
        t = self._scalar_type(key)
        if t is not key and dict.__contains__(self, t):
            return dict.__getitem__(self, t)
        raise KeyError(key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or dict.__contains__(self, self._scalar_type(key))

    def get(self, key, default=None):
        return self[key] if key in self else default


_DTYPE_NP_TO_MX = _NumpyTypeKeys({None: -1, **{(v.type if v != bfloat16 else v): k for k, v in _ID_TO_NP.items()}})
_DTYPE_MX_TO_NP = {-1: None, **{k: (v.type if v != bfloat16 else v) for k, v in _ID_TO_NP.items()}}
# grad_req names and the OpReq values the C API's executors use (kWriteTo 1, kAddTo 3).
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}
# Storage type codes, as MXNet numbers them (and as .params files store them).
_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": _STORAGE_TYPE_UNDEFINED, "default": _STORAGE_TYPE_DEFAULT,
                           "row_sparse": _STORAGE_TYPE_ROW_SPARSE, "csr": _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}
_SIGNED_INT32_UPPER_LIMIT = 2**31 - 1
# The builtin slice, under the name MXNet's module gives it (its own `slice` is the operator).
py_slice = slice

_NDARRAY_UNSUPPORTED_INDEXING = -1
_NDARRAY_BASIC_INDEXING = 0
_NDARRAY_ADVANCED_INDEXING = 1
_NDARRAY_EMPTY_TUPLE_INDEXING = 2
_NDARRAY_NO_ZERO_DIM_BOOL_ARRAY = -1
_NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE = 0
_NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE = 1


def get_indexing_dispatch_code(key):
    """Basic (ints, slices, None), advanced (arrays, lists, tuples, ranges) or empty-tuple
    indexing, for a key already made a tuple; ValueError for any other index type."""
    if not isinstance(key, tuple):
        raise TypeError("get_indexing_dispatch_code: expected a tuple key, got %s" % type(key).__name__)
    for idx in key:
        if isinstance(idx, (NDArray, np.ndarray, list, tuple, range)):
            if isinstance(idx, tuple) and not idx:
                return _NDARRAY_EMPTY_TUPLE_INDEXING
            return _NDARRAY_ADVANCED_INDEXING
        if not (isinstance(idx, (slice, numbers.Integral)) or idx is None):
            raise ValueError("NDArray does not support slicing with key %s of type %s." % (idx, type(idx)))
    return _NDARRAY_BASIC_INDEXING


def indexing_key_expand_implicit_axes(key, shape):
    """(key with its Ellipsis, or the axes it leaves out at the end, replaced by slice(None)
    for every axis of `shape` not indexed, 0-d integer arrays as ints; a code saying whether
    a 0-d boolean array was in the key: -1 none, 0 False, 1 True). Boolean arrays of
    other ranks need NumPy semantics, which Weft's NDArray does not have: ValueError."""
    if not isinstance(key, tuple):
        key = (key,)
    ell_idx = None
    num_none = 0
    explicit = []
    prepend = _NDARRAY_NO_ZERO_DIM_BOOL_ARRAY
    for i, idx in enumerate(key):
        if idx is Ellipsis:
            if ell_idx is not None:
                raise IndexError("Cannot use more than one ellipsis (`...`) for indexing")
            ell_idx = i
            continue
        if isinstance(idx, bool):
            # a Python bool is a 0-d boolean index; a False anywhere selects nothing
            if prepend != _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE:
                prepend = _NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE if idx else _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE
            continue
        if idx is None:
            num_none += 1
        if isinstance(idx, NDArray) and idx.dtype == np.bool_:
            if idx.ndim != 0:
                raise ValueError("Cannot perform boolean indexing in legacy mode: NumPy array semantics are needed")
            if prepend != _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE:
                prepend = (_NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE if idx.asscalar()
                           else _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE)
        elif isinstance(idx, NDArray) and idx.ndim == 0:
            explicit.append(int(idx.asscalar()))
        else:
            explicit.append(idx)
    explicit = tuple(explicit)
    if ell_idx is None:
        ell_idx = len(explicit)
    implicit = len(shape) + num_none - len(explicit)
    return explicit[:ell_idx] + (slice(None),) * implicit + explicit[ell_idx:], prepend


def get_oshape_of_gather_nd_op(dshape, ishape):
    """The output shape of gather_nd for data of shape `dshape` and indices of `ishape`:
    ishape[1:] followed by the data axes the indices do not address."""
    if not dshape or not ishape:
        raise ValueError("gather_nd: data and indices need at least one axis, got %s and %s" % (dshape, ishape))
    return tuple(ishape[1:]) + (tuple(dshape[ishape[0]:]) if ishape[0] < len(dshape) else ())


_fast.init(NDArray, error, np.generic)

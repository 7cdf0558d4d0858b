"""Operators written in Python, as MXNet's `mx.operator`: subclass `CustomOpProp` (names,
shape and type inference, backward dependencies) and `CustomOp` (forward and backward on
NDArrays), register the property with `@register("name")`, and call it as
`mx.nd.Custom(*inputs, op_type="name", **params)` or `mx.sym.Custom(...)`.

The core runs every custom operator as its registry operator `Custom`, which calls back
here through the C API (`weft_custom_op_register`, a table of C callbacks made with
ctypes). The forward and backward callbacks run on a thread of the library's own pool, so
the engine keeps running while they wait for the GIL, and they may read arrays and run
operators as any Python code does.
"""
import atexit
import collections
import ctypes
import threading
import traceback
import warnings

import numpy as np

from .base import _api, ctypes_library, error
from .context import Context
from .ndarray import NDArray
from .ndarray import _ops as _nd_ops
from .ndarray.ndarray import dtype_id, _ID_TO_NP, _DTYPE_MX_TO_NP
from . import ndarray as _nd
from . import symbol as _sym
from .symbol import Symbol

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "get_operator_arguments", "OperatorArguments", "PythonOp", "NumpyOp", "NDArrayOp"]

# MXNet's operator module has no __all__, so `from mxnet.operator import *` (as MXNet's own
# test files and scripts built on them do) also gives what that module imported: ctypes and
# its names, the handle helpers of `base`, NDArray, symbol, context. The same names, for
# those Weft has.
from array import array  # noqa: E402
from ctypes import CFUNCTYPE, POINTER, Structure, pointer, c_void_p, c_int, c_char, c_char_p, cast, c_bool  # noqa
from threading import Lock  # noqa: E402
from . import context, symbol  # noqa: E402
from .base import check_call, c_array, c_array_buf, c_str, mx_int, mx_uint, mx_float, NDArrayHandle, OpHandle  # noqa
from .base import py_str  # noqa: E402
from .util import is_np_array  # noqa: E402

c_int_p = POINTER(c_int)
__all__ += ["traceback", "warnings", "collections", "array", "Lock", "ctypes", "CFUNCTYPE", "POINTER", "Structure",
            "pointer", "c_void_p", "c_int", "c_char", "c_char_p", "cast", "c_bool", "check_call", "c_array",
            "c_array_buf", "mx_int", "OpHandle", "c_str", "mx_uint", "mx_float", "NDArrayHandle", "py_str", "symbol",
            "context", "NDArray", "is_np_array", "c_int_p"]

_REQ_NAMES = {0: "null", 1: "write", 2: "inplace", 3: "add"}


class CustomOp(object):
    """An operator instance: `forward` and `backward` write their results into the arrays
    they are given, as `req` says ('null', 'write', 'inplace' or 'add'; `assign` does it)."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes out_data from in_data (and the auxiliary states aux)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Computes in_grad from out_grad (and in_data, out_data, aux)."""

    def assign(self, dst, req, src):
        """Writes `src` into `dst` as `req` says: nothing for 'null', a copy for 'write' and
        'inplace', a sum for 'add'."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError("CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got %r" % (req,))


class CustomOpProp(object):
    """What a custom operator is, for one set of parameters: its arguments, outputs and
    auxiliary states, their shapes and dtypes, what its backward reads, and the operator
    instance. `need_top_grad=False` is for loss layers, whose backward ignores the gradient
    of their outputs."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """Returns (argument shapes, output shapes[, auxiliary state shapes]); by default every
        output has the first argument's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """Returns (argument dtypes, output dtypes[, auxiliary state dtypes]); by default all
        are the first argument's."""
        return in_type, [in_type[0]] * len(self.list_outputs()), [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """Only dense storage exists: every array is 'default'."""
        return in_stype, ["default"] * len(self.list_outputs()), ["default"] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype):
        """Only dense storage exists: every array is 'default'."""
        return (["default"] * len(ograd_stype), ["default"] * len(in_stype), ["default"] * len(out_stype),
                ["default"] * len(igrad_stype), ["default"] * len(aux_stype))

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids, among those given, of what the backward reads: by default the output
        gradients (when need_top_grad), the inputs and the outputs."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Returns the CustomOp instance for the device `ctx` and the arguments' shapes and
        dtypes."""
        return CustomOp()


# ---------------------------------------------------------------------------- C callbacks
_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_i64_p = ctypes.POINTER(ctypes.c_int64)


class _CContext(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


_RUN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                           ctypes.POINTER(ctypes.c_uint64), _c_int_p, _c_int_p)
_RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _COpFns(ctypes.Structure):
    _fields_ = [("self", ctypes.c_void_p), ("forward", _RUN_FN), ("backward", _RUN_FN), ("release", _RELEASE_FN)]


_LIST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _c_int_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)))
_INFER_SHAPE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, _c_int_p, ctypes.POINTER(_c_i64_p))
_INFER_TYPE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, _c_int_p)
_DEPS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _c_int_p, _c_int_p, _c_int_p)
_CREATE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _CContext, ctypes.c_int, _c_int_p,
                              ctypes.POINTER(_c_i64_p), _c_int_p, ctypes.POINTER(_COpFns))


class _CPropFns(ctypes.Structure):
    _fields_ = [("self", ctypes.c_void_p), ("need_top_grad", ctypes.c_int),
                ("list_arguments", _LIST_FN), ("list_outputs", _LIST_FN), ("list_auxiliary_states", _LIST_FN),
                ("infer_shape", _INFER_SHAPE_FN), ("infer_type", _INFER_TYPE_FN),
                ("declare_backward_dependency", _DEPS_FN), ("create_operator", _CREATE_FN),
                ("release", _RELEASE_FN)]


_CREATOR_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                               ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_CPropFns), ctypes.c_void_p)

# The objects the library holds (properties, operator instances), by the key it was given.
_live = {}
_live_lock = threading.Lock()
_next_key = [1]
# op_type -> the registered CustomOpProp subclass.
_registry = {}


def _stop_releases():
    # Arrays still alive when the interpreter goes (a recorded graph, say) hold custom
    # operators whose release callbacks would call into a torn-down ctypes: the library stops
    # calling them. Registered before weft's own exit handler (atexit runs the last first), so
    # it runs after that handler's final wait.
    _api.weft_custom_op_stop_releases()


atexit.register(_stop_releases)


def _keep(obj):
    with _live_lock:
        key = _next_key[0]
        _next_key[0] += 1
        _live[key] = obj
    return key


def _get(key):
    with _live_lock:
        return _live[key]


def _fail(what):
    # The callback's error goes back through the C API as this thread's last error; the
    # library raises it where the failure shows (a wait, asnumpy, an inference).
    msg = "%s\n%s" % (what, traceback.format_exc())
    _library().weft_set_last_error(msg.encode("utf-8", "replace"))
    return 1


class _PropEntry(object):
    """A property and the buffers of its last answers, which the library reads after the
    callback returned."""

    def __init__(self, prop):
        self.prop = prop
        self.args = [str(a) for a in prop.list_arguments()]
        self.outs = [str(o) for o in prop.list_outputs()]
        self.aux = [str(a) for a in prop.list_auxiliary_states()]
        self.keep = None


def _list_entry(which):
    def entry(key, n, names):
        try:
            e = _get(key)
            lst = getattr(e, which)
            buf = (ctypes.c_char_p * max(len(lst), 1))(*[s.encode() for s in lst])
            e.keep = buf
            n[0] = len(lst)
            names[0] = ctypes.cast(buf, ctypes.POINTER(ctypes.c_char_p))
            return 0
        except BaseException:  # pylint: disable=broad-except
            return _fail("list %s failed" % which)
    return entry


def _infer_shape_entry(key, n, ndims, shapes):
    try:
        e = _get(key)
        na = len(e.args)
        in_shape = []
        for i in range(na):
            in_shape.append([int(shapes[i][k]) for k in range(ndims[i])] if ndims[i] >= 0 else [])
        ret = e.prop.infer_shape(in_shape)
        if len(ret) == 2:
            ret = (ret[0], ret[1], [])
        ins, outs, aux = (list(r) for r in ret)
        if (len(ins), len(outs), len(aux)) != (na, len(e.outs), len(e.aux)):
            raise ValueError("infer_shape returned %d, %d and %d shapes for %d arguments, %d outputs and %d "
                             "auxiliary states" % (len(ins), len(outs), len(aux), na, len(e.outs), len(e.aux)))
        all_shapes = ins + outs + aux
        bufs = []
        for i, s in enumerate(all_shapes):
            s = [int(d) for d in s]
            buf = (ctypes.c_int64 * max(len(s), 1))(*s)
            bufs.append(buf)
            ndims[i] = len(s)
            shapes[i] = ctypes.cast(buf, _c_i64_p)
        e.keep = bufs
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("infer_shape failed")


def _infer_type_entry(key, n, dtypes):
    try:
        e = _get(key)
        na = len(e.args)
        # As MXNet's: numpy types, None where not known yet; None given back stays unknown.
        ret = e.prop.infer_type([_DTYPE_MX_TO_NP[dtypes[i]] for i in range(na)])
        if len(ret) == 2:
            ret = (ret[0], ret[1], [ret[0][0]] * len(e.aux) if e.aux else [])
        ins, outs, aux = (list(r) for r in ret)
        if (len(ins), len(outs), len(aux)) != (na, len(e.outs), len(e.aux)):
            raise ValueError("infer_type returned %d, %d and %d dtypes for %d arguments, %d outputs and %d "
                             "auxiliary states" % (len(ins), len(outs), len(aux), na, len(e.outs), len(e.aux)))
        for i, t in enumerate(ins + outs + aux):
            dtypes[i] = -1 if t is None else dtype_id(np.dtype(t))
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("infer_type failed")


def _deps_entry(key, out_grad, in_data, out_data):
    try:
        e = _get(key)
        no, na = len(e.outs), len(e.args)
        og = list(range(no))
        ind = list(range(no, no + na))
        od = list(range(no + na, no + na + no))
        for d in e.prop.declare_backward_dependency(og, ind, od):
            d = int(d)
            if d < no:
                out_grad[d] = 1
            elif d < no + na:
                in_data[d - no] = 1
            elif d < no + na + no:
                out_data[d - no - na] = 1
            else:
                raise ValueError("declare_backward_dependency returned %d, which is none of the ids given" % d)
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("declare_backward_dependency failed")


def _split_arrays(num, arrays, tags, reqs, written):
    # The arrays by tag, and how to write each array of tag `written`.
    groups = collections.defaultdict(list)
    req = []
    for i in range(num):
        h = int(arrays[i]) if arrays[i] else 0
        groups[tags[i]].append(NDArray(h) if h else None)
        if tags[i] == written:
            req.append(_REQ_NAMES.get(reqs[i], "null"))
    return groups, req


def _forward_entry(key, is_train, num, arrays, tags, reqs):
    try:
        op = _get(key)
        g, req = _split_arrays(num, arrays, tags, reqs, 1)
        op.forward(is_train=bool(is_train), req=req, in_data=g[0], out_data=g[1], aux=g[4])
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("forward failed")


def _backward_entry(key, is_train, num, arrays, tags, reqs):
    try:
        op = _get(key)
        g, req = _split_arrays(num, arrays, tags, reqs, 2)
        op.backward(req=req, out_grad=g[3], in_data=g[0], out_data=g[1], in_grad=g[2], aux=g[4])
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("backward failed")


def _release_entry(key):
    with _live_lock:
        obj = _live.pop(key, None)
    # Dropped outside the lock: freeing a prop may free Symbols holding other custom nodes
    # (nested control flow), whose release comes back here.
    del obj


def _create_entry(key, ctx, n, ndims, shapes, dtypes, out):
    try:
        e = _get(key)
        na = len(e.args)
        in_shapes = [[int(shapes[i][k]) for k in range(ndims[i])] for i in range(na)]
        in_dtypes = [_ID_TO_NP[dtypes[i]] for i in range(na)]
        op = e.prop.create_operator(Context(ctx.device_type, ctx.device_id), in_shapes, in_dtypes)
        if not isinstance(op, CustomOp):
            raise TypeError("create_operator must return a CustomOp, got %s" % type(op).__name__)
        out[0].self = _keep(op)
        out[0].forward = _FORWARD_C
        out[0].backward = _BACKWARD_C
        out[0].release = _RELEASE_C
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("create_operator failed")


def _creator_entry(op_type, num_kwargs, keys, values, out, _user):
    try:
        name = op_type.decode()
        cls = _registry[name]
        kwargs = {keys[i].decode(): values[i].decode() for i in range(num_kwargs)}
        prop = cls(**kwargs)
        e = _PropEntry(prop)
        out[0].self = _keep(e)
        out[0].need_top_grad = 1 if getattr(prop, "need_top_grad_", True) else 0
        out[0].list_arguments = _LIST_ARGS_C
        out[0].list_outputs = _LIST_OUTS_C
        out[0].list_auxiliary_states = _LIST_AUX_C
        out[0].infer_shape = _INFER_SHAPE_C
        out[0].infer_type = _INFER_TYPE_C
        out[0].declare_backward_dependency = _DEPS_C
        out[0].create_operator = _CREATE_C
        out[0].release = _RELEASE_C
        return 0
    except BaseException:  # pylint: disable=broad-except
        return _fail("making its property failed")


# Module-level, so the function pointers outlive every call the library may make.
_FORWARD_C = _RUN_FN(_forward_entry)
_BACKWARD_C = _RUN_FN(_backward_entry)
_RELEASE_C = _RELEASE_FN(_release_entry)
_LIST_ARGS_C = _LIST_FN(_list_entry("args"))
_LIST_OUTS_C = _LIST_FN(_list_entry("outs"))
_LIST_AUX_C = _LIST_FN(_list_entry("aux"))
_INFER_SHAPE_C = _INFER_SHAPE_FN(_infer_shape_entry)
_INFER_TYPE_C = _INFER_TYPE_FN(_infer_type_entry)
_DEPS_C = _DEPS_FN(_deps_entry)
_CREATE_C = _CREATE_FN(_create_entry)
_CREATOR_C = _CREATOR_FN(_creator_entry)


def _library():
    lib = ctypes_library()
    if not getattr(lib, "_weft_custom_ready", False):
        lib.weft_custom_op_register.restype = ctypes.c_int
        lib.weft_custom_op_register.argtypes = [ctypes.c_char_p, _CREATOR_FN, ctypes.c_void_p]
        lib.weft_set_last_error.restype = ctypes.c_int
        lib.weft_set_last_error.argtypes = [ctypes.c_char_p]
        lib.weft_get_last_error.restype = ctypes.c_char_p
        lib._weft_custom_ready = True
    return lib


def register(reg_name):
    """Class decorator: registers a CustomOpProp subclass as the custom operator `reg_name`
    (a registration under a name already taken replaces it)."""
    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError("mx.operator.register(%r): expected a CustomOpProp subclass, got %r" % (reg_name, prop_cls))
        lib = _library()
        _registry[reg_name] = prop_cls
        status = lib.weft_custom_op_register(reg_name.encode(), _CREATOR_C, None)
        if status != 0:
            raise error(status, lib.weft_get_last_error().decode())
        return prop_cls
    return do_register


# ---------------------------------------------------------------------------- MXNet's older API
class PythonOp(object):
    """MXNet's deprecated operators in Python, kept for old code: an instance is a symbol
    function (`op(data=x)` or `op.get_symbol(...)`), whose forward and backward take lists
    of arrays only. Each instance runs as a custom operator registered for it. Use CustomOp
    in new code."""

    _counter = [0]

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The Symbol applying this operator to `args` (by position or by argument name)."""
        from . import symbol as sym
        return sym.Custom(*args, op_type=self._op_type(), **kwargs)

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def _op_type(self):
        if self.info_ is None:
            PythonOp._counter[0] += 1
            self.info_ = "_python_op_%d_%s" % (PythonOp._counter[0], type(self).__name__)
            pyop = self

            class _Prop(CustomOpProp):
                def __init__(self):
                    super().__init__(need_top_grad=pyop.need_top_grad())

                def list_arguments(self):
                    return pyop.list_arguments()

                def list_outputs(self):
                    return pyop.list_outputs()

                def infer_shape(self, in_shape):
                    ins, outs = pyop.infer_shape(in_shape)[:2]
                    return ins, outs, []

                def declare_backward_dependency(self, out_grad, in_data, out_data):
                    return pyop.declare_backward_dependency(out_grad, in_data, out_data)

                def create_operator(self, ctx, in_shapes, in_dtypes):
                    return _PythonOpAdapter(pyop)

            register(self.info_)(_Prop)
        return self.info_


class _PythonOpAdapter(CustomOp):
    """Runs a PythonOp's forward and backward: on numpy copies for a NumpyOp (results copied
    back as `req` says), on the arrays themselves for an NDArrayOp."""

    def __init__(self, pyop):
        super().__init__()
        self.pyop = pyop

    def _run(self, fn, inputs, outputs, req):
        if not isinstance(self.pyop, NumpyOp):
            fn(*(inputs + [outputs]))
            return
        ins = [[x.asnumpy() if x is not None else None for x in group] for group in inputs]
        outs = [np.zeros(o.shape, dtype=o.dtype) for o in outputs]
        fn(*(ins + [outs]))
        for dst, r, src in zip(outputs, req, outs):
            self.assign(dst, r, _nd.array(src, dtype=dst.dtype))

    def forward(self, is_train, req, in_data, out_data, aux):
        self._run(self.pyop.forward, [in_data], out_data, req)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self._run(self.pyop.backward, [out_grad, in_data, out_data], in_grad, req)


class NumpyOp(PythonOp):
    """A PythonOp whose forward and backward work on numpy arrays: they write their results
    into the output arrays they are given (out_data[0][:] = ...)."""


class NDArrayOp(PythonOp):
    """A PythonOp whose forward and backward work on NDArrays, written in place."""


# ---------------------------------------------------------------------------- nd/sym.Custom
def _ordered_inputs(op_type, args, kwargs, is_input):
    """The inputs of a Custom call in the property's order (arguments, then auxiliary
    states), from positional ones and those given by name; the rest of kwargs are params."""
    named = {k: v for k, v in kwargs.items() if is_input(v)}
    params = {k: v for k, v in kwargs.items() if not is_input(v) and v is not None}
    if not named:
        return list(args), params
    cls = _registry.get(op_type)
    if cls is None:
        raise error(6, "Custom: no custom operator is registered as %r" % (op_type,))
    prop = cls(**{k: str(v) for k, v in params.items()})
    names = list(prop.list_arguments()) + list(prop.list_auxiliary_states())
    inputs = list(args) + [None] * (len(names) - len(args))
    for k, v in named.items():
        if k not in names:
            raise error(1, "Custom %r: unknown input %r; its inputs are %s" % (op_type, k, ", ".join(names)))
        inputs[names.index(k)] = v
    if any(x is None for x in inputs):
        missing = [n for n, x in zip(names, inputs) if x is None]
        raise error(1, "Custom %r: inputs %s are missing" % (op_type, ", ".join(missing)))
    return inputs, params


def _nd_custom(*args, **kwargs):
    """Applies the custom operator `op_type` (registered with mx.operator.register) to
    NDArrays, given by position or by argument name; other keywords go to its property."""
    op_type = kwargs.pop("op_type", None)
    if op_type is None:
        raise error(1, "Custom: the parameter 'op_type' is required")
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    inputs, params = _ordered_inputs(op_type, args, kwargs, lambda v: isinstance(v, NDArray))
    return _generated_nd_custom(*inputs, op_type=op_type, out=out, **params)


_generated_nd_custom = _nd_ops.get("Custom")
_nd_custom.__name__ = "Custom"
_nd.Custom = _nd.op.Custom = _nd_custom
_nd_ops._functions["Custom"] = _nd_custom


def _sym_custom(*args, **kwargs):
    """The Symbol applying the custom operator `op_type` to inputs given by position, by
    argument name or both; missing inputs become variables named <name>_<argument>."""
    named = [k for k, v in kwargs.items() if isinstance(v, Symbol)]
    op_type = kwargs.get("op_type")
    if args and named and op_type in _registry:
        # The generated function takes a variable number of inputs by position or all by
        # name: name the positional ones after the property's arguments.
        params = {k: str(v) for k, v in kwargs.items()
                  if k not in named and k not in ("op_type", "name", "attr") and v is not None}
        prop = _registry[op_type](**params)
        names = list(prop.list_arguments()) + list(prop.list_auxiliary_states())
        if len(args) > len(names):
            raise TypeError("Custom %r: expected at most %d inputs (%s), got %d"
                            % (op_type, len(names), ", ".join(names), len(args)))
        for n, a in zip(names, args):
            if n in kwargs:
                raise TypeError("Custom %r: input %r given by position and by name" % (op_type, n))
            kwargs[n] = a
        args = ()
    return _generated_sym_custom(*args, **kwargs)


# sym.Custom is the generated function (the core names a Custom node's inputs after its
# property's arguments), wrapped to take positional and named inputs together.
_generated_sym_custom = _sym.Custom
_sym_custom.__name__ = "Custom"
_sym.Custom = _sym.op.Custom = _sym_custom


def get_all_registered_operators():
    """The names of every registered operator (the registry's, not the custom ones)."""
    return [_api.weft_op_get_name(_api.weft_op_get_by_index(i)) for i in range(_api.weft_op_count())]


def _has_gpu_compute(op_name):
    """Whether operator `op_name` (a registered name or alias) has GPU code in this build
    (always False without CUDA). Not part of MXNet's API: the GPU test registry uses it."""
    return bool(_api.weft_op_get_has_gpu(_api.weft_op_get(op_name)))


def _gpu_operators():
    """The names of every registered operator that has GPU code in this build."""
    names = []
    for i in range(_api.weft_op_count()):
        op = _api.weft_op_get_by_index(i)
        if _api.weft_op_get_has_gpu(op):
            names.append(_api.weft_op_get_name(op))
    return names


OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])


def get_operator_arguments(op_name):
    """The arguments of operator `op_name` as MXNet lists them: its inputs, then its
    parameters, with their number, names and types ("NDArray-or-Symbol" for an input,
    "<type>, required" or "<type>, optional, default=<value>" for a parameter)."""
    info = _nd_ops.OpInfo(_api.weft_op_get(op_name))
    names = [i[0] for i in info.inputs] + [p[0] for p in info.params]
    types = [i[1] for i in info.inputs] + \
        ["%s, %s" % (ptype, "required" if required else "optional, default=%s" % default)
         for _, ptype, default, _, required in info.params]
    return OperatorArguments(len(names), names, types)


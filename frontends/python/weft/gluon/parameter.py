"""Parameters of Gluon blocks, as MXNet 1.x's `gluon.Parameter` and `ParameterDict`.

A Parameter owns one data array per context (and one gradient array per context, marked
for autograd), created by `initialize`. When its shape is not known yet (a 0 in the shape,
e.g. a Dense layer's input size) initialisation is deferred until the first forward pass
infers it.
"""
import re
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..context import Context, current_context, _param_context
from ..symbol import Symbol
from .utils import _brief_print_list

__all__ = ["Parameter", "Constant", "ParameterDict", "DeferredInitializationError", "ParameterLoadError",
           "tensor_types"]

# What a Gluon block takes as an array (MXNet's gluon.tensor_types).
tensor_types = (Symbol, nd.NDArray)


class DeferredInitializationError(RuntimeError):
    """The parameter's data was read before its shape was known (before the first forward)."""


def _ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


def _shape_known(shape):
    return shape is not None and all(int(d) > 0 for d in shape)


def _merge_shapes(name, have, want):
    """The shape a parameter fetched again (a shared one) takes: each unknown (0) dimension,
    on either side, is filled in by the other; known dimensions must agree."""
    if have is None:
        return want
    if len(have) != len(want) or any(a > 0 and b > 0 and a != b for a, b in zip(have, want)):
        raise ValueError("Parameter '%s': expected a shape compatible with %s, got %s" % (name, have, want))
    return tuple(a if a > 0 else b for a, b in zip(have, want))


# Counts every replacement of a Parameter's data or gradient arrays (initialisation, cast,
# reset_ctx, a new grad_req): a hybridized block's executor, bound to the arrays of the time,
# is rebuilt when this moved, and comparing one number per call is cheaper than checking
# each parameter's arrays.
_arrays_version = 0


def arrays_version():
    return _arrays_version


class _PerContext(OrderedDict):
    """A parameter's arrays by context. An int indexes them in context order, as MXNet's
    `Parameter._data` list, which code written for MXNet reads (`p._data[0]`)."""

    def __getitem__(self, key):
        if isinstance(key, int):
            return list(self.values())[key]
        return OrderedDict.__getitem__(self, key)


class Parameter:
    """A weight of a block: data and gradient arrays on one or more contexts."""

    @property
    def _data(self):
        return self.__data

    @_data.setter
    def _data(self, arrays):
        global _arrays_version
        _arrays_version += 1
        self.__data = None if arrays is None else _PerContext(arrays)

    @property
    def _grad(self):
        return self.__grad

    @_grad.setter
    def _grad(self, arrays):
        global _arrays_version
        _arrays_version += 1
        self.__grad = arrays

    _stype = "default"
    _trainer = None

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0, wd_mult=1.0, init=None,
                 allow_deferred_init=False, differentiable=True, stype="default", grad_stype="default"):
        if grad_req not in ("write", "add", "null"):
            raise ValueError("Parameter '%s': grad_req must be 'write', 'add' or 'null', got %r" % (name, grad_req))
        if stype not in ("default", "row_sparse") or grad_stype not in ("default", "row_sparse"):
            # An AssertionError, as MXNet's check raises.
            raise AssertionError("Parameter '%s': expected stype and grad_stype 'default' or 'row_sparse', got "
                                 "stype=%r grad_stype=%r" % (name, stype, grad_stype))
        self._stype = stype
        self._grad_stype = grad_stype
        # A row_sparse weight lives in its Trainer's kvstore; row_sparse_data pulls rows from it.
        self._trainer = None
        self.name = name
        self._shape = None if shape is None else tuple(int(d) for d in ((shape,) if np.isscalar(shape) else shape))
        self.dtype = np.dtype(dtype).type
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = grad_req if differentiable else "null"
        self._data = None          # OrderedDict ctx -> NDArray
        self._grad = None
        self._deferred_init = None  # (init, ctx_list, default_init) waiting for a shape
        self._var = None

    def __repr__(self):
        return "Parameter %s (shape=%s, dtype=%s)" % (self.name, self.shape, np.dtype(self.dtype).name)

    # ---------------------------------------------------------------- attributes
    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is not None:
            if len(self._shape) != len(new_shape) or any(
                    old not in (0, new) for old, new in zip(self._shape, new_shape)):
                raise ValueError("Parameter '%s': expected a shape compatible with %s, got %s"
                                 % (self.name, self._shape, new_shape))
        self._shape = new_shape

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise ValueError("Parameter '%s': grad_req must be 'write', 'add' or 'null', got %r" % (self.name, req))
        if not self._differentiable:
            req = "null"
        if req == self._grad_req:
            return
        self._grad_req = req
        if self._data is not None:
            self._init_grad()

    # ---------------------------------------------------------------- initialisation
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Creates the data (and gradient) arrays on `ctx` and fills them with `init`
        (else the parameter's own init, else `default_init`, else Uniform)."""
        from .. import initializer
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            return
        self._data = self._grad = None
        ctxs = _ctx_list(ctx)
        if init is None:
            init = self.init if self.init is not None else default_init
        if not _shape_known(self._shape):
            if not self.allow_deferred_init:
                raise ValueError("Parameter '%s': cannot initialize with unknown shape %s; give the shape (e.g. "
                                 "in_units / in_channels) or let the block infer it" % (self.name, self._shape))
            self._deferred_init = (init, ctxs, default_init)
            return
        self._deferred_init = (init, ctxs, default_init)
        self._finish_deferred_init()

    def _load_init(self, data, ctx):
        """Takes `data` (its shape and dtype) as the parameter's value on `ctx`, without running
        an initializer first (one may not exist for the dtype: int8 weights)."""
        self.dtype = np.dtype(data.dtype).type
        self._shape = tuple(data.shape)
        self._var = None
        self._deferred_init = None
        with autograd.pause():
            if self._stype != "default":
                data = data.tostype(self._stype)
            self._data = OrderedDict((c, data.copyto(c)) for c in _ctx_list(ctx))
        self._init_grad()

    def _finish_deferred_init(self):
        from .. import initializer
        if self._deferred_init is None:
            return
        init, ctxs, default_init = self._deferred_init
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                "Parameter '%s' has unknown shape %s: run a forward pass first so it can be inferred"
                % (self.name, self._shape))
        self._deferred_init = None
        with autograd.pause():
            data = nd.zeros(self._shape, ctx=ctxs[0], dtype=self.dtype)
            # As MXNet: the parameter's own (or the block-wide) init fills it as a weight,
            # whatever its name; layers give biases, gammas and running statistics their own.
            initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
            if self._stype == "row_sparse":
                # Every row, until a row_sparse_data pull replaces them by the rows asked for.
                data = data.tostype("row_sparse")
            self._data = OrderedDict((c, data if i == 0 else data.copyto(c)) for i, c in enumerate(ctxs))
        self._init_grad()

    def _init_grad(self):
        if self._grad_req == "null":
            self._grad = None
            for arr in self._data.values():
                autograd.mark_variables([arr], [None], "null")
            return
        if self._grad_stype == "row_sparse":
            self._grad = OrderedDict((c, nd.sparse.zeros("row_sparse", a.shape, ctx=c, dtype=a.dtype))
                                     for c, a in self._data.items())
        else:
            self._grad = OrderedDict((c, nd.zeros(a.shape, ctx=c, dtype=a.dtype)) for c, a in self._data.items())
        autograd.mark_variables(list(self._data.values()), list(self._grad.values()), self._grad_req)

    def _own_ctx(self, ctx):
        # Arrays on cpu_pinned(i) or cpu_shared(i) (a DataLoader's batches) compute with the
        # copy on cpu(i), as in MXNet, unless the parameter lives on that context itself.
        if ctx is not None and self._data is not None and ctx not in self._data:
            return _param_context(ctx)
        return ctx

    def _check_initialized(self, ctx=None):
        if self._data is not None:
            if ctx is not None and ctx not in self._data:
                raise RuntimeError("Parameter '%s' was not initialized on context %s; it lives on %s"
                                   % (self.name, ctx, list(self._data)))
            return
        if self._deferred_init is not None:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because its shape %s is inferred at the first forward "
                "pass; run one before reading it" % (self.name, self._shape))
        raise RuntimeError("Parameter '%s' has not been initialized; call initialize() on it or its block first"
                           % self.name)

    def reset_ctx(self, ctx):
        """Moves the data (and gradients) to the contexts `ctx`."""
        ctxs = _ctx_list(ctx)
        if self._data is None:
            if self._deferred_init is not None:
                self._deferred_init = (self._deferred_init[0], ctxs, self._deferred_init[2])
                return
            raise RuntimeError("Parameter '%s': cannot reset the context of an uninitialized parameter" % self.name)
        first = next(iter(self._data.values()))
        with autograd.pause():
            self._data = OrderedDict((c, first.copyto(c)) for c in ctxs)
        self._init_grad()

    # ---------------------------------------------------------------- access
    def _set_trainer(self, trainer):
        """Ties a row_sparse parameter to the one Trainer whose kvstore holds its rows."""
        current = self._trainer
        if self._stype != "default" and current is not None and trainer is not None and current is not trainer:
            raise RuntimeError("Parameter '%s': its %s weight already belongs to another Trainer, and a sparse "
                               "weight can have only one" % (self.name, self._stype))
        self._trainer = trainer

    def _get_row_sparse(self, ctx, row_id):
        if not isinstance(row_id, nd.NDArray):
            raise TypeError("Parameter '%s': row_id must be an NDArray, got %s" % (self.name, type(row_id).__name__))
        trainer = self._trainer
        if trainer is None:
            raise RuntimeError("Parameter '%s': its row_sparse data come from a Trainer's kvstore, and no Trainer "
                               "was created with it" % self.name)
        self._check_initialized(None if ctx is list else ctx)
        outs = list(self._data.values()) if ctx is list else self._data[ctx]
        trainer._row_sparse_pull(self, outs, row_id)
        return outs

    def row_sparse_data(self, row_id):
        """The row_sparse weight on row_id's context holding the rows whose ids are in
        `row_id` (pulled through the Trainer's kvstore)."""
        if self._stype != "row_sparse":
            raise RuntimeError("Parameter '%s': row_sparse_data() is for row_sparse parameters, and this one's "
                               "storage type is %s; use data()" % (self.name, self._stype))
        return self._get_row_sparse(row_id.context if isinstance(row_id, nd.NDArray) else None, row_id)

    def list_row_sparse_data(self, row_id):
        """row_sparse_data on every context the parameter lives on."""
        if self._stype != "row_sparse":
            raise RuntimeError("Parameter '%s': list_row_sparse_data() is for row_sparse parameters, and this one's "
                               "storage type is %s; use list_data()" % (self.name, self._stype))
        return self._get_row_sparse(list, row_id)

    def _reduce(self):
        """The whole value on the CPU: for a row_sparse weight, every row from the Trainer's
        kvstore (or the initial rows when no Trainer holds it yet)."""
        from ..context import cpu
        if self._stype == "default":
            return self.data().copyto(cpu())
        trainer = self._trainer
        if trainer is None:
            self._check_initialized()
            return next(iter(self._data.values())).tostype("default").copyto(cpu())
        out = nd.sparse.zeros("row_sparse", self._shape, ctx=cpu(), dtype=self.dtype)
        trainer._row_sparse_pull(self, out, nd.arange(0, self._shape[0], dtype="int64", ctx=cpu()))
        return out.tostype("default")

    def data(self, ctx=None):
        """The data array on `ctx` (the only context when None)."""
        if self._stype != "default":
            raise RuntimeError("Parameter '%s': its storage type is %s, so it has no whole copy on %s to return "
                               "through data(); use row_sparse_data(row_id)" % (self.name, self._stype, ctx))
        ctx = self._own_ctx(ctx)
        self._check_initialized(ctx)
        if ctx is None:
            if len(self._data) > 1 and current_context() in self._data:
                return self._data[current_context()]
            return next(iter(self._data.values()))
        return self._data[ctx]

    def list_data(self):
        if self._stype != "default":
            raise RuntimeError("Parameter '%s': its storage type is %s, so it has no whole copies to return "
                               "through list_data(); use list_row_sparse_data(row_id)" % (self.name, self._stype))
        self._check_initialized()
        return list(self._data.values())

    def grad(self, ctx=None):
        """The gradient array on `ctx`."""
        ctx = self._own_ctx(ctx)
        self._check_initialized(ctx)
        if self._grad is None:
            raise RuntimeError("Parameter '%s' has no gradient: its grad_req is 'null'" % self.name)
        if self._grad_stype == "row_sparse":
            # A backward replaces a row_sparse gradient (it has no memory to write into).
            return self._data[next(iter(self._data)) if ctx is None else ctx].grad
        return self._grad[next(iter(self._grad)) if ctx is None else ctx]

    def list_grad(self):
        self._check_initialized()
        if self._grad is None:
            raise RuntimeError("Parameter '%s' has no gradient: its grad_req is 'null'" % self.name)
        if self._grad_stype == "row_sparse":
            return [a.grad for a in self._data.values()]
        return list(self._grad.values())

    def list_ctx(self):
        if self._data is None:
            if self._deferred_init is not None:
                return self._deferred_init[1]
            raise RuntimeError("Parameter '%s' has not been initialized" % self.name)
        return list(self._data)

    def set_data(self, data):
        """Overwrites the data on every context with `data` (an NDArray or array-like)."""
        data = data if isinstance(data, nd.NDArray) else nd.array(data, dtype=self.dtype)
        if self._shape is not None and not _shape_known(self._shape):
            self.shape = data.shape
        elif self._shape is not None and tuple(data.shape) != self._shape:
            raise ValueError("Parameter '%s': expected data of shape %s, got %s" % (self.name, self._shape,
                                                                                   tuple(data.shape)))
        if self._shape is None:
            self._shape = tuple(data.shape)
        if self._data is None:
            if self._deferred_init is None:
                raise RuntimeError("Parameter '%s' has not been initialized; call initialize() first" % self.name)
            self._finish_deferred_init()
        if self._stype != "default":
            # Sparse arrays are immutable: new arrays, and the Trainer's kvstore starts again
            # from them.
            with autograd.pause():
                self._data = OrderedDict((c, data.astype(self.dtype).tostype(self._stype).copyto(c))
                                         for c in self._data)
            self._init_grad()
            trainer = self._trainer
            if trainer is not None:
                trainer._reset_kvstore()
            return
        with autograd.pause():
            for arr in self._data.values():
                (data if data.dtype == arr.dtype else data.astype(arr.dtype)).copyto(arr)
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore:
            # The store holds (and updates) the weights it was given: it starts again from these.
            trainer._reset_kvstore()

    def zero_grad(self):
        """Sets the gradient arrays to 0."""
        if self._grad is None:
            return
        if self._grad_stype == "row_sparse":
            self._init_grad()
            return
        for g in self._grad.values():
            g[:] = 0

    def var(self):
        """The symbol variable of this parameter, with its shape, dtype and multipliers."""
        from .. import symbol
        if self._var is None:
            self._var = symbol.var(self.name, shape=self._shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                   wd_mult=self.wd_mult, init=self.init, stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Converts data and gradients to `dtype`."""
        self.dtype = np.dtype(dtype).type
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = OrderedDict((c, a.astype(dtype)) for c, a in self._data.items())
        self._init_grad()


class Constant(Parameter):
    """A parameter that is never updated (grad_req 'null'), initialised to `value`."""

    def __init__(self, name, value):
        value = value if isinstance(value, nd.NDArray) else nd.array(value)
        self.value = value
        from .. import initializer

        class _Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)

        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_Init(),
                         differentiable=False)

    def __repr__(self):
        return "Constant %s (shape=%s, dtype=%s)" % (self.name, self.shape, np.dtype(self.dtype).name)


def _unprefixed(name, prefix):
    """`name` without `prefix`, as MXNet's load messages show it (whole when it lacks it)."""
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


class ParameterLoadError(ValueError, AssertionError):
    """A parameter file that does not match the parameters it is loaded into. MXNet 1.9
    refuses it with an assert, so this is an AssertionError as well as a ValueError: code
    written for either keeps catching it."""


class ParameterDict:
    """An ordered name → Parameter mapping with a prefix for the names it creates."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        # As MXNet prints it: "prefix (" (just "(" without a prefix), a line per parameter.
        body = "\n".join("  " + repr(p) for p in self._params.values())
        return "%s(\n%s\n)" % (self._prefix + " " if self._prefix else "", body)

    @property
    def prefix(self):
        return self._prefix

    def __getitem__(self, key):
        return self._params[key]

    def __contains__(self, key):
        return key in self._params

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    def items(self):
        return self._params.items()

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter `prefix + name`, created with kwargs when missing; an existing one
        must agree with the kwargs given (a 0 in a shape is filled in)."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if k == "shape" and v is not None:
                param._shape = _merge_shapes(name, param._shape, tuple(int(d) for d in ((v,) if np.isscalar(v)
                                                                                           else v)))
            elif hasattr(param, k) and v is not None and k not in ("init",):
                cur = getattr(param, k)
                if k == "dtype":
                    same = np.dtype(cur) == np.dtype(v)
                else:
                    same = cur == v
                if not same:
                    raise ValueError("Parameter '%s' already exists with %s=%r, which differs from the requested %r"
                                     % (name, k, cur, v))
        return param

    def get_constant(self, name, value=None):
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '%s': give a value to create it" % name)
            param = Constant(name, value)
            self._params[name] = param
        return param

    def update(self, other):
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise ValueError("Cannot update ParameterDict: a different Parameter named '%s' is already there" % k)
            self._params[k] = v

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        from .. import initializer
        default = initializer.Uniform() if init is None else init
        for p in self.values():
            p.initialize(None, ctx, default_init=default, force_reinit=force_reinit)

    def zero_grad(self):
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx):
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self):
        ctxs = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in ctxs:
                    ctxs.append(c)
        return ctxs

    def setattr(self, name, value):
        """Sets an attribute (grad_req, lr_mult, wd_mult, ...) on every parameter."""
        for p in self.values():
            setattr(p, name, value)

    def select(self, pattern):
        out = ParameterDict(self._prefix)
        rx = re.compile(pattern)
        for k, v in self.items():
            if rx.match(k):
                out._params[k] = v
        return out

    def save(self, filename, strip_prefix=""):
        """Saves every parameter's data (first context) to an MXNet .params file."""
        arrays = {}
        for name, p in self.items():
            if strip_prefix and not name.startswith(strip_prefix):
                raise ValueError("Prefix '%s' is to be stripped before saving, but Parameter '%s' does not start "
                                 "with it" % (strip_prefix, name))
            arrays[name[len(strip_prefix):]] = p.data() if p._stype == "default" else p._reduce()
        nd.save(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="", cast_dtype=False,
             dtype_source="current"):
        """Loads the parameters saved by `save` (names optionally prefixed with restore_prefix).
        A saved array of another dtype is cast to the parameter's, unless cast_dtype with
        dtype_source='saved' asks for the parameter to take the saved dtype (int8 weights of
        a quantized model)."""
        if dtype_source not in ("current", "saved"):
            raise ValueError("ParameterDict.load: dtype_source must be 'current' or 'saved', got %r" % (dtype_source,))
        loaded = nd.load(filename)
        if isinstance(loaded, list) and not loaded:
            # A file saved from an empty dict holds no names at all, so it loads as an empty
            # list; MXNet takes it as no parameters (a quantized graph without weights).
            loaded = {}
        if not isinstance(loaded, dict):
            raise ValueError("ParameterDict.load: %s holds an unnamed array list, expected names" % filename)
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
                  filename=None, cast_dtype=False, dtype_source="current"):
        """Loads parameters from `param_dict`, a dict (or a list of (name, NDArray) pairs) as
        nd.load returns it: names may carry MXNet's "arg:"/"aux:" prefixes and are prefixed
        with restore_prefix. `filename`, if given, names the source in errors; the other
        arguments are load's."""
        if dtype_source not in ("current", "saved"):
            raise ValueError("ParameterDict.load_dict: dtype_source must be 'current' or 'saved', got %r"
                             % (dtype_source,))
        pairs = param_dict.items() if isinstance(param_dict, dict) else param_dict
        loaded = {restore_prefix + k.split(":", 1)[-1]: v for k, v in pairs}
        source = "file: %s" % filename if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in loaded:
                    raise ParameterLoadError(
                        "Parameter '%s' is missing in %s, which contains parameters: %s. Please make sure "
                        "source and target networks have the same prefix (or pass allow_missing=True to skip it)"
                        % (_unprefixed(name, restore_prefix), source, _brief_print_list(loaded.keys())))
        for name, value in loaded.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterLoadError(
                        "Parameter '%s' loaded from %s is not present in ParameterDict, choices are: %s. "
                        "Set ignore_extra to True to ignore. Please make sure source and target networks have "
                        "the same prefix" % (_unprefixed(name, restore_prefix), source,
                                             _brief_print_list(self._params.keys())))
                continue
            p = self._params[name]
            if cast_dtype and dtype_source == "saved" and np.dtype(p.dtype) != value.dtype:
                p.cast(value.dtype)
            if p._data is None:
                if p._shape is not None and _shape_known(p._shape) and tuple(value.shape) != tuple(p._shape):
                    raise ValueError("Parameter '%s': expected data of shape %s, got %s"
                                     % (name, p._shape, tuple(value.shape)))
                ctxs = p._deferred_init[1] if ctx is None and p._deferred_init is not None else ctx
                p._load_init(value if value.dtype == np.dtype(p.dtype) else value.astype(p.dtype), ctxs)
            else:
                p.set_data(value)

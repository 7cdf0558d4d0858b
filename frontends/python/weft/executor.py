"""Executor: a Symbol bound to arrays, as MXNet 1.x's `mx.executor.Executor`."""
import ctypes
import json

from .base import MXNetError, _api, ctypes_library, error
from .context import Context
from .ndarray.ndarray import NDArray, _new_by_stype
from .ndarray.sparse import BaseSparseNDArray

__all__ = ["Executor"]

_MONITOR_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p)


class Executor:
    """Made by Symbol.bind / Symbol.simple_bind. Arrays are shared with the caller: writing
    arg_dict values changes the next forward's inputs; grad_dict receives gradients."""

    _ARGUMENTS, _GRADIENTS, _AUXILIARY = 0, 1, 2

    def __init__(self, handle, symbol, ctx, group2ctx=None, bound=None):
        """Wraps a bound executor handle (see Symbol.bind); the arrays are read back from it.
        `bound` (arg, grad and aux lists) gives the NDArray objects the executor was bound
        with, or those of the executor it was reshaped from: the arrays that kept their shape
        are those same arrays, and stay the same Python objects, as in MXNet."""
        self.handle = handle
        self._symbol = symbol
        self._ctx = ctx
        self._group2ctx = group2ctx

        def arrays(kind):
            new = [h if h is None else _new_by_stype(h) for h in _api.weft_executor_arrays(handle, kind)]
            if bound is None:
                return new
            return [o if o is not None and n is not None and o.shape == n.shape else n
                    for o, n in zip(bound[kind], new)]
        self.arg_arrays = arrays(self._ARGUMENTS)
        self.grad_arrays = arrays(self._GRADIENTS)
        self.aux_arrays = arrays(self._AUXILIARY)
        # Bound with some csr or row_sparse array, or with a graph that makes some, the
        # executor runs node by node through the sparse kernels: it has no outputs before its
        # first forward and new ones after each, and sparse arrays, being immutable, are
        # exchanged with it by handle (see _send).
        self.outputs = [_new_by_stype(h) for h in _api.weft_executor_outputs(self.handle)]
        self._sparse = not self.outputs
        if self._sparse:
            self.outputs = self._stand_in_outputs()
        names = symbol.list_arguments()
        self.arg_dict = dict(zip(names, self.arg_arrays))
        self.grad_dict = {n: g for n, g in zip(names, self.grad_arrays) if g is not None}
        self.aux_dict = dict(zip(symbol.list_auxiliary_states(), self.aux_arrays))
        self.output_dict = dict(zip(symbol.list_outputs(), self.outputs))

    def _stand_in_outputs(self):
        """A sparse executor makes its outputs at each forward, where MXNet's allocates them at
        bind and callers read their shapes before the first forward (to make head gradients):
        dense zeros of the inferred shapes and dtypes stand in until then."""
        from .ndarray import zeros
        names = self._symbol.list_arguments()
        bound = [(n, a) for n, a in zip(names, self.arg_arrays) if a is not None]
        try:
            _, shapes, _ = self._symbol.infer_shape(**{n: a.shape for n, a in bound})
            _, dtypes, _ = self._symbol.infer_type(**{n: a.dtype for n, a in bound})
        except MXNetError:
            return []
        if shapes is None or dtypes is None:
            return []
        return [zeros(s, ctx=self._ctx, dtype=t) for s, t in zip(shapes, dtypes)]

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            _api.weft_executor_free(self.handle)
            self.handle = None

    def _backward_pending(self):
        """Whether a call recorded on this executor (weft_executor_invoke under autograd)
        still awaits its backward: the executor keeps one call's state, so a further recorded
        call must run on another executor (a hybridized block's or a CachedOp's spare)."""
        return bool(_api.weft_executor_backward_pending(self.handle))

    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls callback(name, array) for every node output as forward and backward push
        it (and for the node's inputs too with monitor_all); None removes the callback."""
        lib = ctypes_library()
        lib.weft_executor_set_monitor_callback.restype = ctypes.c_int
        lib.weft_executor_set_monitor_callback.argtypes = [ctypes.c_uint64, _MONITOR_FN, ctypes.c_void_p, ctypes.c_int]
        self._monitor_args = None if callback is None else (callback, monitor_all)
        if callback is None:
            self._monitor = None
            fn = ctypes.cast(None, _MONITOR_FN)
        else:
            def on_value(name, handle, _):
                callback(name.decode(), NDArray(handle))
            self._monitor = _MONITOR_FN(on_value)  # kept alive as long as the executor may call it
            fn = self._monitor
        status = lib.weft_executor_set_monitor_callback(self.handle, fn, None, 1 if monitor_all else 0)
        if status != 0:
            raise error(status, lib.weft_get_last_error().decode())

    def forward(self, is_train=False, **kwargs):
        """Runs the forward pass after copying the keyword arrays into arg_dict; returns
        the outputs."""
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise ValueError("forward: %r is not an argument; the arguments are %s"
                                 % (name, list(self.arg_dict)))
            shape = getattr(value, "shape", None)
            if shape is not None and tuple(shape) != tuple(self.arg_dict[name].shape):
                raise ValueError("forward: Shape not match! Argument %s, need: %s, received: %s"
                                 % (name, tuple(self.arg_dict[name].shape), tuple(shape)))
            self.arg_dict[name][:] = value
        # An executor writes the same arrays at every step, so a loop that never reads a
        # result would only queue steps: the engine's bound (WEFT_ENGINE_MAX_PENDING) counts
        # operations, thousands of them, which for convolutions is minutes of work to drain.
        # A step's forward cannot start before the previous one's has finished anyway, so
        # waiting for that before pushing keeps a loop about one step ahead at no cost in
        # speed (the previous backward still runs meanwhile).
        previous = getattr(self, "_previous_output", None)
        if previous is not None:
            previous.wait_to_read()
        if self._sparse:
            self._send(self._ARGUMENTS, self.arg_arrays)
            self._send(self._AUXILIARY, self.aux_arrays)
        _api.weft_executor_forward(self.handle, 1 if is_train else 0)
        if self._sparse:
            self.outputs = [_new_by_stype(h) for h in _api.weft_executor_outputs(self.handle)]
            self.output_dict = dict(zip(self._symbol.list_outputs(), self.outputs))
        outputs = self.outputs
        self._previous_output = outputs[0] if outputs else None
        return outputs

    def backward(self, out_grads=None, is_train=True):
        """Runs the backward pass; out_grads (one NDArray per output, or one for a single
        output) default to ones."""
        if out_grads is None:
            heads = []
        elif isinstance(out_grads, NDArray):
            heads = [out_grads]
        else:
            heads = list(out_grads)
        if self._sparse:
            self._send(self._GRADIENTS, self.grad_arrays)
        _api.weft_executor_backward(self.handle, len(heads), heads)
        if self._sparse:
            fresh = _api.weft_executor_arrays(self.handle, self._GRADIENTS)
            for mine, h in zip(self.grad_arrays, fresh):
                if h is None:
                    continue
                new = _new_by_stype(h)
                if isinstance(mine, BaseSparseNDArray):
                    # The caller's gradient object (grad_dict, args_grad) shows the new rows.
                    _api.weft_ndarray_sparse_assign(mine, new)

    def _send(self, kind, arrays):
        """Gives the executor the current contents of the sparse arrays among `arrays`: a
        sparse array's handle gets new contents (sparse_assign), which the executor's own
        reference to the array does not see."""
        for i, a in enumerate(arrays):
            if isinstance(a, BaseSparseNDArray):
                _api.weft_executor_set_array(self.handle, kind, i, a)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies values into the bound arguments and auxiliary states by name."""
        for params, target, what in ((arg_params, self.arg_dict, "argument"), (aux_params or {}, self.aux_dict,
                                                                                 "auxiliary state")):
            for name, value in params.items():
                if name in target:
                    value.copyto(target[name])
                elif not allow_extra_params:
                    raise ValueError("copy_params_from: %r is not an %s of the executor" % (name, what))

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes (keyword arguments by name). Arrays whose
        shape stays are shared; one whose shape changes reuses this executor's memory when
        it fits, and is new memory only with allow_up_sizing. Arrays other than the given
        inputs may change shape only with partial_shaping."""
        shapes = json.dumps({k: [int(d) for d in v] for k, v in kwargs.items()})
        handle = _api.weft_executor_reshape(self.handle, shapes, 1 if partial_shaping else 0,
                                            1 if allow_up_sizing else 0)
        new = Executor(handle, self._symbol, self._ctx, self._group2ctx,
                       (self.arg_arrays, self.grad_arrays, self.aux_arrays))
        # As MXNet, the monitor callback carries over to the reshaped executor.
        if getattr(self, "_monitor_args", None) is not None:
            new.set_monitor_callback(*self._monitor_args)
        return new

    def get_optimized_symbol(self):
        """The forward graph as this executor runs it, after its graph passes (nodes that
        compute the same value merged, unless MXNET_ELIMINATE_COMMON_EXPR=0 at bind)."""
        from .symbol import Symbol  # pylint: disable=import-outside-toplevel
        return Symbol(_api.weft_executor_optimized_symbol(self.handle))

    def debug_str(self):
        """The bound graph, then "Total N MB allocated" for its planned internal memory."""
        return _api.weft_executor_debug_str(self.handle)

    @property
    def context(self):
        return Context(self._ctx)


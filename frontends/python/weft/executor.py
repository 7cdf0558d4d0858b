"""Executor: a Symbol bound to arrays, as MXNet 1.x's `mx.executor.Executor`."""
import ctypes

from .base import _api, ctypes_library, error
from .context import Context
from .ndarray.ndarray import NDArray

__all__ = ["Executor"]

_MONITOR_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_void_p)


class Executor:
    """Made by Symbol.bind / Symbol.simple_bind. Arrays are shared with the caller: writing
    arg_dict values changes the next forward's inputs; grad_dict receives gradients."""

    def __init__(self, symbol, ctx, args, args_grad, grad_req, aux_states):
        self._symbol = symbol
        self._ctx = ctx
        self.arg_arrays = list(args)
        self.grad_arrays = list(args_grad)
        self.aux_arrays = list(aux_states)
        self._grad_req = list(grad_req)
        self.handle = _api.weft_executor_bind(symbol.handle, ctx._as_tuple(), len(args), self.arg_arrays,
                                              self.grad_arrays, grad_req, len(self.aux_arrays), self.aux_arrays)
        self.outputs = [NDArray(h) for h in _api.weft_executor_outputs(self.handle)]
        names = symbol.list_arguments()
        self.arg_dict = dict(zip(names, self.arg_arrays))
        self.grad_dict = {n: g for n, g in zip(names, self.grad_arrays) if g is not None}
        self.aux_dict = dict(zip(symbol.list_auxiliary_states(), self.aux_arrays))
        self.output_dict = dict(zip(symbol.list_outputs(), self.outputs))

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            _api.weft_executor_free(self.handle)
            self.handle = None

    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls callback(name, array) for every node output as forward and backward push
        it (and for the node's inputs too with monitor_all); None removes the callback."""
        lib = ctypes_library()
        lib.weft_executor_set_monitor_callback.restype = ctypes.c_int
        lib.weft_executor_set_monitor_callback.argtypes = [ctypes.c_uint64, _MONITOR_FN, ctypes.c_void_p, ctypes.c_int]
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
            self.arg_dict[name][:] = value
        _api.weft_executor_forward(self.handle, 1 if is_train else 0)
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Runs the backward pass; out_grads (one NDArray per output, or one for a single
        output) default to ones."""
        if out_grads is None:
            heads = []
        elif isinstance(out_grads, NDArray):
            heads = [out_grads]
        else:
            heads = list(out_grads)
        _api.weft_executor_backward(self.handle, len(heads), heads)

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
        from . import ndarray as nd
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise ValueError("reshape: the shapes %s do not determine every shape of the graph" % kwargs)

        def resized(name, arr, shape):
            if arr is None or tuple(arr.shape) == tuple(shape):
                return arr
            if name not in kwargs and not partial_shaping:
                raise ValueError("reshape: %r would change shape from %s to %s; pass partial_shaping=True to allow "
                                 "it" % (name, arr.shape, shape))
            size = 1
            for d in shape:
                size *= d
            if size <= arr.size:
                return arr.reshape((-1,))[:size].reshape(shape)
            if not allow_up_sizing:
                raise ValueError("reshape: %r grows from %s to %s; pass allow_up_sizing=True to allocate new memory"
                                 % (name, arr.shape, shape))
            return nd.zeros(shape, ctx=arr.context, dtype=arr.dtype)

        names = self._symbol.list_arguments()
        args = [resized(n, a, s) for n, a, s in zip(names, self.arg_arrays, arg_shapes)]
        grads = [resized(n, g, s) for n, g, s in zip(names, self.grad_arrays, arg_shapes)]
        aux = [resized(n, a, s) for n, a, s in zip(self._symbol.list_auxiliary_states(), self.aux_arrays, aux_shapes)]
        return Executor(self._symbol, self._ctx, args, grads, self._grad_req, aux)

    def debug_str(self):
        """The bound graph, then "Total N MB allocated" for its planned internal memory."""
        return _api.weft_executor_debug_str(self.handle)

    @property
    def context(self):
        return Context(self._ctx)

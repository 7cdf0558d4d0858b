"""Executor: a Symbol bound to arrays, as MXNet 1.x's `mx.executor.Executor`."""
from .base import _api
from .context import Context
from .ndarray.ndarray import NDArray

__all__ = ["Executor"]


class Executor:
    """Made by Symbol.bind / Symbol.simple_bind. Arrays are shared with the caller: writing
    arg_dict values changes the next forward's inputs; grad_dict receives gradients."""

    def __init__(self, symbol, ctx, args, args_grad, grad_req, aux_states):
        self._symbol = symbol
        self._ctx = ctx
        self.arg_arrays = list(args)
        self.grad_arrays = list(args_grad)
        self.aux_arrays = list(aux_states)
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

    def debug_str(self):
        """The bound graph, then "Total N MB allocated" for its planned internal memory."""
        return _api.weft_executor_debug_str(self.handle)

    @property
    def context(self):
        return Context(self._ctx)

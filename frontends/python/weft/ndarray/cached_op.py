"""CachedOp (MXNet's mx.nd.CachedOp): a Symbol made callable on NDArrays.

Called with one array per input of the symbol (sym.list_inputs() order: arguments and
auxiliary states as the graph meets them), it runs the graph through an executor bound
once per input signature (shapes, dtypes, context, whether autograd records) and returns
the outputs (one NDArray, or a list). While autograd records, the call is one recorded node
whose gradient runs the executor's backward, as a hybridized Gluon block's. An executor
keeps the state of one recorded call until its backward, so a call recorded while another
still awaits its backward (`op(a, w) + op(b, w)` in one record()) runs on a spare executor
of the same signature, as MXNet's CachedOp takes another state; spares are kept and reused
by later calls once their backward has run. Every input being an input of the recorded call,
autograd adds up the calls' gradients of an array given to several. Auxiliary
states are bound as the caller's own arrays, so that updates (BatchNorm's moving
statistics in training) land in them, as in MXNet.

The symbol is only used through its methods (list_inputs, list_auxiliary_states, bind):
weft.ndarray sits below weft.symbol in the layers.
"""
import numpy as np

from ..base import _api
from .ndarray import NDArray, _assign, empty, zeros

__all__ = ["CachedOp"]


class CachedOp:
    """A callable graph: CachedOp(sym, flags=()) then op(*inputs, out=None). `flags` (MXNet's
    static_alloc, static_shape, ...) tune MXNet's own executor; they are accepted and kept,
    Weft's executors plan memory once per bound signature anyway."""

    def __init__(self, sym, flags=()):
        self._sym = sym
        self.flags = dict(flags)
        self._inputs = sym.list_inputs()
        aux = set(sym.list_auxiliary_states())
        self._is_aux = [name in aux for name in self._inputs]
        self._cache = {}

    def _bound(self, args, recording):
        ctx = args[0].context
        key = (str(ctx), recording) + tuple(
            (a.handle if is_aux else None, tuple(a.shape), str(a.dtype)) for a, is_aux in zip(args, self._is_aux))
        entries = self._cache.setdefault(key, [])
        for entry in entries:
            if not (recording and entry[0]._backward_pending()):
                return entry
        arg_arrays, grads, reqs, aux = {}, {}, {}, {}
        bound, input_grads = [], []
        for name, a, is_aux in zip(self._inputs, args, self._is_aux):
            if is_aux:
                aux[name] = a
                continue
            arr = empty(a.shape, ctx=ctx, dtype=a.dtype)
            arg_arrays[name] = arr
            bound.append(arr)
            differentiable = recording and np.dtype(a.dtype).kind == "f"
            reqs[name] = "write" if differentiable else "null"
            grads[name] = zeros(a.shape, ctx=ctx, dtype=a.dtype) if differentiable else None
            input_grads.append(grads[name])
        exe = self._sym.bind(ctx, arg_arrays, args_grad={k: v for k, v in grads.items() if v is not None},
                             grad_req=reqs, aux_states=aux)
        entry = (exe, bound, input_grads)
        entries.append(entry)
        return entry

    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        if kwargs:
            raise TypeError("CachedOp.__call__ got unexpected keyword argument(s): " + ", ".join(kwargs))
        if len(args) != len(self._inputs):
            raise ValueError("CachedOp: expected %d inputs (%s), got %d"
                             % (len(self._inputs), ", ".join(self._inputs), len(args)))
        for name, a in zip(self._inputs, args):
            if not isinstance(a, NDArray):
                raise TypeError("CachedOp: input %s must be an NDArray, got %s" % (name, type(a).__name__))
        recording = bool(_api.weft_autograd_is_recording())
        exe, bound, input_grads = self._bound(args, recording)
        arg_inputs = [a for a, is_aux in zip(args, self._is_aux) if not is_aux]
        outputs = [NDArray(h) for h in _api.weft_executor_invoke(
            exe.handle, len(arg_inputs), arg_inputs, bound, input_grads, 0, [],
            1 if _api.weft_is_training() else 0)]
        if out is not None:
            targets = [out] if isinstance(out, NDArray) else list(out)
            if len(targets) != len(outputs):
                raise ValueError("CachedOp: out has %d arrays for %d outputs" % (len(targets), len(outputs)))
            for t, o in zip(targets, outputs):
                _assign(t, o)
            return out
        return outputs[0] if len(outputs) == 1 else outputs

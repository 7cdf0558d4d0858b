"""Gradient helpers shared by test_nn_norm.py and test_nn_act.py.

`op_grad` runs an operator's registered gradient on explicit head gradients; `numeric_check`
compares it with central differences in float64 projecting only the first `n_proj` outputs
(operators such as LayerNorm return mean / std beside the result, whose gradients MXNet
ignores, so those outputs get zero head gradients).
"""
import numpy as np

import weft as mx
from weft import nd
from weft.base import _api
from weft.ndarray.ndarray import NDArray
from weft.test_utils import assert_almost_equal


def _outs(op, arrays, params, dtype, out_shapes=None):
    inputs = [nd.array(a, dtype=a.dtype if a.dtype.kind not in "f" else dtype) for a in arrays]
    if out_shapes is not None:
        # Every output, hidden ones included, given by the caller.
        outs = [nd.zeros(s, dtype=dtype) for s in out_shapes]
        nd.invoke(op, inputs, params, out=outs)
        return inputs, outs
    out = nd.invoke(op, inputs, params)
    return inputs, out if isinstance(out, list) else [out]


def op_grad(op, arrays, params, heads, dtype=np.float32, train=False, out_shapes=None):
    """Input gradients of `op` at `arrays` for head gradients `heads` (numpy, one per
    output; None gives zeros). `out_shapes` lists every output's shape for operators with
    hidden outputs. Returns numpy arrays (None where no gradient)."""
    with (mx.autograd.train_mode() if train else mx.autograd.predict_mode()):
        inputs, outputs = _outs(op, arrays, params, dtype, out_shapes)
        head = [nd.array(np.zeros(o.shape) if h is None else h, dtype=o.dtype) for o, h in zip(outputs, heads)]
        keys = [k for k, v in params.items() if v is not None]
        vals = [nd.ndarray._param_str(params[k]) for k in keys]
        grads = _api.weft_imperative_gradient(_api.weft_op_get(op), len(inputs), inputs, len(outputs), outputs, head,
                                              len(keys), keys, vals)
    return [None if g is None else NDArray(g).asnumpy() for g in grads]


def forward(op, arrays, params, dtype=np.float32, train=False, out_shapes=None):
    with (mx.autograd.train_mode() if train else mx.autograd.predict_mode()):
        return [o.asnumpy() for o in _outs(op, arrays, params, dtype, out_shapes)[1]]


def numeric_check(op, location, params, grad_nodes, n_proj=1, train=False, eps=1e-5, rtol=1e-4, atol=1e-6,
                  out_shapes=None):
    location = [np.array(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else np.array(v)
                for v in location]
    outs = forward(op, location, params, np.float64, train, out_shapes)
    rng = np.random.RandomState(7)
    proj = [rng.uniform(-1, 1, size=o.shape) if i < n_proj else None for i, o in enumerate(outs)]

    def objective(values):
        o = forward(op, values, params, np.float64, train, out_shapes)
        return float(sum(np.sum(a * p) for a, p in zip(o, proj) if p is not None))

    analytic = op_grad(op, location, params, proj, np.float64, train, out_shapes)
    for i in grad_nodes:
        # Central differences of the checked inputs only (labels stay as they are).
        x = location[i]
        numeric = np.zeros_like(x, dtype=np.float64)
        flat, nflat = x.reshape(-1), numeric.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            fp = objective(location)
            flat[j] = old - eps
            fm = objective(location)
            flat[j] = old
            nflat[j] = (fp - fm) / (2 * eps)
        assert analytic[i] is not None, "%s gives no gradient for input %d" % (op, i)
        assert_almost_equal(analytic[i], numeric, rtol=rtol, atol=atol,
                            names=("analytic %s[%d]" % (op, i), "numeric %s[%d]" % (op, i)))

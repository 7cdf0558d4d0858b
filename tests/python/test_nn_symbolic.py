"""Every neural-network operator gives the same forward results through a bound symbol as
through the imperative call, and the executor's gradients (the graph gradient pass over the
registered gradients) match central differences of the symbol's own forward in float64."""
import numpy as np
import pytest

import weft as mx

# (operator, parameters, input shapes, indices of inputs that hold integers/labels)
CASES = [
    ("FullyConnected", {"num_hidden": 3}, [(2, 4), (3, 4), (3,)], ()),
    ("FullyConnected", {"num_hidden": 3, "flatten": False, "no_bias": True}, [(2, 2, 4), (3, 4)], ()),
    ("Convolution", {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, [(1, 2, 5, 5), (4, 2, 3, 3), (4,)], ()),
    ("Convolution", {"kernel": (3,), "num_filter": 4, "num_group": 2, "stride": (2,), "no_bias": True},
     [(2, 4, 7), (4, 2, 3)], ()),
    ("Deconvolution", {"kernel": (2, 2), "num_filter": 3, "stride": (2, 2), "no_bias": True},
     [(1, 2, 3, 3), (2, 3, 2, 2)], ()),
    ("Pooling", {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, [(1, 2, 4, 4)], ()),
    ("Pooling", {"kernel": (3, 3), "stride": (2, 2), "pool_type": "avg", "pad": (1, 1)}, [(2, 1, 5, 5)], ()),
    ("Pooling", {"global_pool": True, "kernel": (1, 1), "pool_type": "avg"}, [(2, 3, 3, 3)], ()),
    ("BatchNorm", {"fix_gamma": False}, [(3, 2, 2, 2), (2,), (2,), (2,), (2,)], ()),
    ("LayerNorm", {}, [(3, 5), (5,), (5,)], ()),
    ("GroupNorm", {"num_groups": 2}, [(2, 4, 3), (2,), (2,)], ()),
    ("InstanceNorm", {}, [(2, 3, 4), (3,), (3,)], ()),
    ("LRN", {"nsize": 3}, [(1, 4, 2, 2)], ()),
    ("L2Normalization", {"mode": "instance"}, [(3, 4)], ()),
    ("Activation", {"act_type": "tanh"}, [(3, 4)], ()),
    ("Activation", {"act_type": "softrelu"}, [(3, 4)], ()),
    ("LeakyReLU", {"act_type": "elu", "slope": 0.3}, [(3, 4)], ()),
    ("LeakyReLU", {"act_type": "prelu"}, [(2, 3, 2), (3,)], ()),
    ("softmax", {"axis": 1}, [(3, 4)], ()),
    ("log_softmax", {}, [(3, 4)], ()),
    ("SoftmaxActivation", {}, [(3, 4)], ()),
    ("Embedding", {"input_dim": 5, "output_dim": 3}, [(2, 3), (5, 3)], (0,)),
    ("Flatten", {}, [(2, 3, 2)], ()),
    ("Concat", {"dim": 1}, [(2, 3), (2, 2)], ()),
    ("SwapAxis", {"dim1": 0, "dim2": 2}, [(2, 3, 4)], ()),
    ("Pad", {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 2, 0), "constant_value": 0.5},
     [(1, 2, 3, 3)], ()),
    ("UpSampling", {"scale": 2, "sample_type": "nearest", "num_args": 1}, [(1, 2, 2, 3)], ()),
    ("SequenceMask", {"use_sequence_length": True, "value": -1.0}, [(4, 2, 3), (2,)], (1,)),
    ("SequenceLast", {}, [(4, 2, 3)], ()),
    ("SequenceReverse", {}, [(4, 2, 3)], ()),
    ("RNN", {"state_size": 3, "num_layers": 1, "mode": "lstm"}, [(4, 2, 3), (96,), (1, 2, 3), (1, 2, 3)], ()),
    ("RNN", {"state_size": 3, "num_layers": 1, "mode": "gru"}, [(4, 2, 2), (63,), (1, 2, 3)], ()),
]


def values(shapes, ints, rng, dtype):
    out = []
    for i, s in enumerate(shapes):
        if i in ints:
            out.append(rng.randint(0, 2, size=s).astype(dtype))
        else:
            out.append(rng.uniform(-1, 1, size=s).astype(dtype))
    return out


def bound(op, params, vals, dtype, grad_req="null"):
    names = ["in%d" % i for i in range(len(vals))]
    sym = getattr(mx.sym, op)(*[mx.sym.Variable(n) for n in names], name="node", **params)
    arrays = {n: mx.nd.array(v, dtype=dtype) for n, v in zip(names, vals)}
    args = {n: arrays[n] for n in sym.list_arguments()}
    aux = [arrays[n] for n in sym.list_auxiliary_states()]
    grads = None if grad_req == "null" else {n: mx.nd.zeros(a.shape, dtype=dtype) for n, a in args.items()}
    return sym, sym.bind(mx.cpu(), args, args_grad=grads, grad_req=grad_req, aux_states=aux), args


@pytest.mark.parametrize("op,params,shapes,ints", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_symbolic_forward_equals_imperative(op, params, shapes, ints):
    rng = np.random.RandomState(11)
    vals = values(shapes, ints, rng, np.float32)
    imperative = getattr(mx.nd, op)(*[mx.nd.array(v) for v in vals], **params)
    imperative = imperative if isinstance(imperative, list) else [imperative]
    _, ex, _ = bound(op, params, vals, np.float32)
    outs = ex.forward(is_train=False)
    assert len(outs) == len(imperative)
    for a, b in zip(outs, imperative):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op,params,shapes,ints", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_executor_gradient_matches_central_differences(op, params, shapes, ints):
    rng = np.random.RandomState(5)
    if op == "Embedding":
        params = dict(params, dtype="float64")  # its weight's dtype is a parameter
    vals = values(shapes, ints, rng, np.float64)
    sym, ex, args = bound(op, params, vals, np.float64, grad_req="write")
    outs = ex.forward(is_train=True)
    heads = [rng.uniform(-1, 1, size=o.shape) for o in outs]
    ex.backward([mx.nd.array(h, dtype=np.float64) for h in heads])
    names = [n for n in sym.list_arguments() if int(n[2:]) not in ints]

    def objective():
        return sum(float((o.asnumpy() * h).sum()) for o, h in zip(ex.forward(is_train=True), heads))

    eps = 1e-5
    for n in names:
        analytic = ex.grad_dict[n].asnumpy().copy()
        base = args[n].asnumpy()
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                probe = base.copy()
                probe[idx] += sign * eps
                args[n][:] = probe
                numeric[idx] += sign * objective() / (2 * eps)
        args[n][:] = base
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6, err_msg="gradient of " + n)

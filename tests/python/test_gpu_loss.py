"""CPU against GPU for FullyConnected, the loss layers (SoftmaxOutput, the regression outputs,
softmax_cross_entropy, Gluon's _sparse_softmax_cross_entropy), Dropout, Embedding, take, pick,
one_hot, argmax/argmin/argmax_channel, where and clip: forward outputs and gradients, float32
and float16 (float64 where cuBLAS takes it), written and accumulated (grad_req='add') gradients.
Dropout draws the same mask on both devices after the same mx.random.seed. Skips without a GPU."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, nd
from weft.test_utils import assert_almost_equal

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

# Every operator that has GPU code checked here, forward and backward.
GPU_OPS = {
    "FullyConnected", "_backward_FullyConnected",
    "SoftmaxOutput", "_backward_SoftmaxOutput",
    "LinearRegressionOutput", "_backward_LinearRegressionOutput",
    "LogisticRegressionOutput", "_backward_LogisticRegressionOutput",
    "MAERegressionOutput", "_backward_MAERegressionOutput",
    "softmax_cross_entropy", "_backward_softmax_cross_entropy",
    "_sparse_softmax_cross_entropy", "_backward_sparse_softmax_cross_entropy",
    "pick", "_backward_pick",
    "Dropout", "_backward_Dropout",
    "Embedding", "_backward_Embedding",
    "take", "_backward_take",
    "one_hot",
    "argmax", "argmin", "argmax_channel",
    "where",
    "clip", "_backward_clip",
}

RNG = np.random.RandomState(20)
TOL = {np.float16: (2e-2, 2e-2), np.float32: (1e-4, 1e-5), np.float64: (1e-9, 1e-10)}


def gpu():
    return mx.gpu(0)


def run(sym, ctx, values, dtype, grad_req, no_grad=(), head=None, init_grad=None, int_inputs=()):
    """Binds `sym` on `ctx` with `values` (numpy, by argument name; float arguments in `dtype`,
    those named in int_inputs as they come), runs forward in training mode and backward with
    the head gradients `head` (one numpy array per output, random when None), the gradients
    starting from `init_grad` under grad_req='add'. Returns (outputs, gradients by name)."""
    names = sym.list_arguments()
    types = {n: (values[n].dtype if n in int_inputs else dtype) for n in names}
    reqs = {n: ("null" if n in no_grad or n in int_inputs else grad_req) for n in names}
    ex = sym.simple_bind(ctx, grad_req=reqs, type_dict=types, **{n: values[n].shape for n in names})
    for n in names:
        ex.arg_dict[n][:] = values[n].astype(types[n])
    if grad_req == "add":
        for n in names:
            if reqs[n] != "null":
                ex.grad_dict[n][:] = init_grad[n].astype(dtype)
    outs = ex.forward(is_train=True)
    heads = head if head is not None else [np.ones(o.shape) for o in outs]
    ex.backward([nd.array(h, ctx=ctx, dtype=o.dtype) for h, o in zip(heads, outs)])
    grads = {n: ex.grad_dict[n].asnumpy() for n in names if reqs[n] != "null"}
    return [o.asnumpy() for o in outs], grads


def compare(sym, values, dtype, grad_req="write", no_grad=(), int_inputs=(), random_head=True, tol=None):
    """Runs `sym` on the CPU and on the GPU with the same values and checks that outputs and
    gradients agree."""
    shapes = dict(zip(sym.list_outputs(), sym.infer_shape(**{k: v.shape for k, v in values.items()})[1]))
    head = [RNG.uniform(0.5, 1.5, size=s) for s in shapes.values()] if random_head else None
    init = {n: RNG.normal(size=v.shape) for n, v in values.items()}
    c_out, c_grad = run(sym, mx.cpu(), values, dtype, grad_req, no_grad, head, init, int_inputs)
    g_out, g_grad = run(sym, gpu(), values, dtype, grad_req, no_grad, head, init, int_inputs)
    rtol, atol = tol or TOL[dtype]
    for i, (c, g) in enumerate(zip(c_out, g_out)):
        assert_almost_equal(g, c, rtol=rtol, atol=atol, names=("gpu output %d" % i, "cpu output %d" % i))
    assert c_grad.keys() == g_grad.keys()
    for n in c_grad:
        assert_almost_equal(g_grad[n], c_grad[n], rtol=rtol, atol=atol, names=("gpu grad " + n, "cpu grad " + n))
    return c_out, c_grad


FLOATS = [np.float32, np.float16]
REQS = ["write", "add"]


# ---------------------------------------------------------------- FullyConnected
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape,flatten", [((4, 10), True), ((3, 2, 5), True), ((3, 2, 5), False), ((65, 33), True)])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected(dtype, req, shape, flatten, no_bias):
    hidden = 7
    data = mx.sym.var("data")
    sym = mx.sym.FullyConnected(data, num_hidden=hidden, flatten=flatten, no_bias=no_bias, name="fc")
    cols = int(np.prod(shape[1:])) if flatten else shape[-1]
    values = {"data": RNG.normal(size=shape), "fc_weight": RNG.normal(size=(hidden, cols)) * 0.5}
    if not no_bias:
        values["fc_bias"] = RNG.normal(size=(hidden,))
    tol = (5e-2, 5e-2) if dtype == np.float16 else None
    out, grads = compare(sym, values, dtype, req, tol=tol)
    # Not only the same on both devices, but right: the forward against numpy.
    x = values["data"].reshape(shape[0], -1) if flatten else values["data"]
    ref = x @ values["fc_weight"].T + (0 if no_bias else values["fc_bias"])
    t = 5e-2 if dtype == np.float16 else 1e-4
    assert_almost_equal(out[0], ref, rtol=t, atol=t)


# ---------------------------------------------------------------- SoftmaxOutput
def labels(shape, classes, dtype=np.float32):
    return RNG.randint(0, classes, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS + [np.float64])
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("params,dshape,lshape", [
    ({}, (8, 5), (8,)),
    ({}, (4, 3, 2), (4,)),
    ({"multi_output": True}, (2, 3, 4, 5), (2, 4, 5)),
    ({"preserve_shape": True}, (2, 3, 6), (2, 3)),
    ({"normalization": "batch", "grad_scale": 2.0}, (8, 40), (8,)),
    ({"normalization": "valid", "use_ignore": True, "ignore_label": 1}, (16, 3), (16,)),
    ({"normalization": "valid", "use_ignore": True, "ignore_label": 0, "multi_output": True}, (3, 4, 5), (3, 5)),
    ({"normalization": "valid"}, (6, 4), (6,)),
    ({"use_ignore": True, "ignore_label": 2, "smooth_alpha": 0.1}, (10, 4), (10,)),
    ({"out_grad": True, "grad_scale": 0.5}, (5, 70), (5,)),
])
def test_softmax_output(dtype, req, params, dshape, lshape):
    classes = dshape[1] if (params.get("multi_output") or len(dshape) == 2) else (
        dshape[-1] if params.get("preserve_shape") else int(np.prod(dshape[1:])))
    sym = mx.sym.SoftmaxOutput(mx.sym.var("data"), mx.sym.var("label"), **params)
    values = {"data": RNG.normal(size=dshape) * 2, "label": labels(lshape, classes)}
    compare(sym, values, dtype, req, no_grad=("label",))


@pytest.mark.parametrize("ldtype", [np.int32, np.int64, np.float16])
def test_softmax_output_label_dtypes(ldtype):
    sym = mx.sym.SoftmaxOutput(mx.sym.var("data"), mx.sym.var("label"), use_ignore=True, ignore_label=3,
                               normalization="valid")
    values = {"data": RNG.normal(size=(12, 6)), "label": labels((12,), 6, ldtype)}
    compare(sym, values, np.float32, "write", int_inputs=("label",))


# ---------------------------------------------------------------- regression outputs
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("op", ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"])
@pytest.mark.parametrize("shape,lshape", [((6, 3), (6, 3)), ((7, 1), (7,)), ((2, 3, 4), (2, 3, 4))])
def test_regression_outputs(dtype, req, op, shape, lshape):
    sym = getattr(mx.sym, op)(mx.sym.var("data"), mx.sym.var("label"), grad_scale=1.5)
    values = {"data": RNG.normal(size=shape), "label": RNG.normal(size=lshape)}
    compare(sym, values, dtype, req, no_grad=("label",))


# ---------------------------------------------------------------- cross-entropy losses
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape", [(6, 5), (33, 100), (1, 2)])
def test_softmax_cross_entropy(dtype, req, shape):
    sym = mx.sym.softmax_cross_entropy(mx.sym.var("data"), mx.sym.var("label"))
    values = {"data": RNG.normal(size=shape), "label": labels((shape[0],), shape[1])}
    tol = (5e-2, 5e-2) if dtype == np.float16 else None
    compare(sym, values, dtype, req, no_grad=("label",), tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape,axis", [((6, 5), -1), ((2, 4, 3), 1), ((3, 70), 1), ((5,), 0), ((2, 3, 4), 0)])
def test_sparse_softmax_cross_entropy(dtype, req, shape, axis):
    a = axis % len(shape)
    lshape = shape[:a] + shape[a + 1:] or (1,)
    sym = mx.sym._internal._sparse_softmax_cross_entropy(mx.sym.var("data"), mx.sym.var("label"), axis=axis)
    # Out-of-range labels are clipped on both devices.
    values = {"data": RNG.normal(size=shape), "label": RNG.randint(-1, shape[a] + 1, size=lshape).astype(np.float32)}
    compare(sym, values, dtype, req, no_grad=("label",))


def test_gluon_softmax_cross_entropy_loss_on_gpu():
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x = RNG.normal(size=(8, 10)).astype(np.float32)
    y = RNG.randint(0, 10, size=(8,)).astype(np.float32)
    grads = []
    for ctx in (mx.cpu(), gpu()):
        xa = nd.array(x, ctx=ctx)
        xa.attach_grad()
        with autograd.record():
            out = loss(xa, nd.array(y, ctx=ctx))
        out.backward()
        grads.append((out.asnumpy(), xa.grad.asnumpy()))
    assert_almost_equal(grads[1][0], grads[0][0], rtol=1e-5, atol=1e-6)
    assert_almost_equal(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- pick
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape,axis,keepdims", [((5, 4), -1, False), ((5, 4), 0, True), ((2, 3, 4), 1, False)])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_pick(dtype, req, shape, axis, keepdims, mode):
    a = axis % len(shape)
    ishape = shape[:a] + shape[a + 1:]
    sym = mx.sym.pick(mx.sym.var("data"), mx.sym.var("index"), axis=axis, keepdims=keepdims, mode=mode)
    values = {"data": RNG.normal(size=shape),
              "index": RNG.randint(-shape[a] - 2, 2 * shape[a] + 2, size=ishape).astype(np.float32)}
    compare(sym, values, dtype, req, no_grad=("index",))


# ---------------------------------------------------------------- Dropout
def dropout_train(x, ctx, head, **kw):
    xa = nd.array(x, ctx=ctx, dtype=x.dtype)
    xa.attach_grad()
    with autograd.record(train_mode=True):
        y = nd.Dropout(xa, **kw)
    y.backward(nd.array(head, ctx=ctx, dtype=x.dtype))
    return y.asnumpy(), xa.grad.asnumpy()


@pytest.mark.parametrize("dtype", FLOATS + [np.float64])
@pytest.mark.parametrize("shape,p,axes", [((7, 9), 0.3, ()), ((4, 6, 5), 0.5, (1,)), ((3, 5, 2), 0.2, (0, 2)),
                                          ((13,), 0.9, ())])
def test_dropout_same_mask_on_both_devices(dtype, shape, p, axes):
    x = RNG.uniform(1, 2, size=shape).astype(dtype)
    head = RNG.uniform(1, 2, size=shape).astype(dtype)
    mx.random.seed(1234)
    cpu_first = dropout_train(x, mx.cpu(), head, p=p, axes=axes)
    cpu_second = dropout_train(x, mx.cpu(), head, p=p, axes=axes)
    mx.random.seed(1234)
    gpu_first = dropout_train(x, gpu(), head, p=p, axes=axes)
    gpu_second = dropout_train(x, gpu(), head, p=p, axes=axes)
    # The same elements are dropped, in the first draw and in the next one.
    for c, g in ((cpu_first, gpu_first), (cpu_second, gpu_second)):
        np.testing.assert_array_equal(g[0] == 0, c[0] == 0)
        assert_almost_equal(g[0], c[0], rtol=1e-3, atol=1e-3)
        assert_almost_equal(g[1], c[1], rtol=1e-3, atol=1e-3)
    # The gradient is the head gradient times the mask (scale where kept, 0 where dropped).
    kept = gpu_first[0] != 0
    assert_almost_equal(gpu_first[1][kept], head[kept] / (1 - p), rtol=2e-3, atol=2e-3)
    assert np.all(gpu_first[1][~kept] == 0)
    # With axes, the mask is shared along them.
    for a in axes:
        first = np.take(gpu_first[0] == 0, [0], axis=a)
        assert np.array_equal(np.broadcast_to(first, shape), gpu_first[0] == 0)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.75])
def test_dropout_mask_rate_on_gpu(p):
    mx.random.seed(99)
    x = nd.ones((1000, 1000), ctx=gpu())
    y = nd.Dropout(x, p=p, mode="always").asnumpy()
    dropped = (y == 0).mean()
    assert abs(dropped - p) < 0.005, dropped
    assert_almost_equal(y[y != 0], np.full((y != 0).sum(), 1 / (1 - p), np.float32), rtol=1e-6, atol=1e-6)


def test_dropout_identity_outside_training_on_gpu():
    x = RNG.normal(size=(5, 6)).astype(np.float32)
    y = nd.Dropout(nd.array(x, ctx=gpu()), p=0.5).asnumpy()
    np.testing.assert_array_equal(y, x)
    # mode='always' drops in prediction mode too.
    z = nd.Dropout(nd.array(np.ones((100, 100)), ctx=gpu()), p=0.5, mode="always").asnumpy()
    assert 0.3 < (z == 0).mean() < 0.7


def test_dropout_backward_add_on_gpu():
    sym = mx.sym.Dropout(mx.sym.var("data"), p=0.4, mode="always")
    x = RNG.uniform(1, 2, size=(6, 8))
    mx.random.seed(5)
    c_out, c_grad = run(sym, mx.cpu(), {"data": x}, np.float32, "add", init_grad={"data": np.ones((6, 8))},
                        head=[np.full((6, 8), 2.0)])
    mx.random.seed(5)
    g_out, g_grad = run(sym, gpu(), {"data": x}, np.float32, "add", init_grad={"data": np.ones((6, 8))},
                        head=[np.full((6, 8), 2.0)])
    assert_almost_equal(g_out[0], c_out[0], rtol=1e-6, atol=1e-6)
    assert_almost_equal(g_grad["data"], c_grad["data"], rtol=1e-6, atol=1e-6)
    assert_almost_equal(g_grad["data"], 1 + 2 * (g_out[0] != 0) / 0.6, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- Embedding, take, one_hot
@pytest.mark.parametrize("dtype", FLOATS + [np.float64])
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("dshape", [(4, 3), (50,)])
def test_embedding(dtype, req, dshape):
    sym = mx.sym.Embedding(mx.sym.var("data"), mx.sym.var("weight"), input_dim=7, output_dim=5)
    # Repeated indices exercise the scatter-add; out-of-range ones are clipped on both devices.
    idx = RNG.randint(-2, 9, size=dshape).astype(np.float32)
    values = {"data": idx, "weight": RNG.normal(size=(7, 5))}
    compare(sym, values, dtype, req, no_grad=("data",))


def test_embedding_int_indices():
    sym = mx.sym.Embedding(mx.sym.var("data"), mx.sym.var("weight"), input_dim=10, output_dim=3)
    values = {"data": RNG.randint(0, 10, size=(64,)).astype(np.int32), "weight": RNG.normal(size=(10, 3))}
    compare(sym, values, np.float32, "write", int_inputs=("data",))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("ashape,ishape,axis", [((6, 4), (5,), 0), ((3, 5, 2), (2, 3), 1), ((4, 6), (7,), -1)])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take(dtype, req, ashape, ishape, axis, mode):
    n = ashape[axis]
    sym = mx.sym.take(mx.sym.var("a"), mx.sym.var("indices"), axis=axis, mode=mode)
    values = {"a": RNG.normal(size=ashape), "indices": RNG.randint(-n - 3, 2 * n + 3, size=ishape).astype(np.float32)}
    compare(sym, values, dtype, req, no_grad=("indices",))


def test_take_raise_refused_on_gpu():
    with pytest.raises(mx.base.MXNetError, match=r"take.*raise.*GPU"):
        nd.take(nd.ones((3, 2), ctx=gpu()), nd.array([0, 1], ctx=gpu()), mode="raise").asnumpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("idtype", [np.float32, np.int64, np.int32])
def test_one_hot(dtype, idtype):
    idx = RNG.randint(-2, 8, size=(4, 5)).astype(idtype)
    kw = dict(depth=6, on_value=3.0, off_value=-1.0, dtype=np.dtype(dtype).name)
    c = nd.one_hot(nd.array(idx, dtype=idtype), **kw).asnumpy()
    g = nd.one_hot(nd.array(idx, ctx=gpu(), dtype=idtype), **kw).asnumpy()
    np.testing.assert_array_equal(g, c)
    assert g.dtype == np.dtype(dtype)


# ---------------------------------------------------------------- argmax, argmin, argmax_channel
@pytest.mark.parametrize("dtype", FLOATS + [np.float64, np.int32])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis,keepdims", [((5, 40), -1, False), ((5, 40), 0, True), ((3, 4, 6), 1, False),
                                                 ((7, 6), None, False), ((2, 3, 300), 2, True), ((6, 9), -1, False)])
def test_arg_search(dtype, op, shape, axis, keepdims):
    # Few distinct values: ties, where the first index must win on both devices.
    x = RNG.randint(0, 4, size=shape).astype(dtype)
    c = getattr(nd, op)(nd.array(x, dtype=dtype), axis=axis, keepdims=keepdims).asnumpy()
    g = getattr(nd, op)(nd.array(x, ctx=gpu(), dtype=dtype), axis=axis, keepdims=keepdims).asnumpy()
    np.testing.assert_array_equal(g, c)
    ref = (np.argmax if op == "argmax" else np.argmin)(x, axis=axis)
    np.testing.assert_array_equal(g.reshape(-1), np.asarray(ref).reshape(-1))


def test_arg_search_nan_and_channel():
    x = RNG.normal(size=(6, 37)).astype(np.float32)
    x[1, 5] = np.nan
    x[1, 20] = np.nan
    x[4, 0] = np.nan
    for op in ("argmax", "argmin"):
        c = getattr(nd, op)(nd.array(x), axis=1).asnumpy()
        g = getattr(nd, op)(nd.array(x, ctx=gpu()), axis=1).asnumpy()
        np.testing.assert_array_equal(g, c)
        assert g[1] == 5 and g[4] == 0
    np.testing.assert_array_equal(nd.argmax_channel(nd.array(x, ctx=gpu())).asnumpy(),
                                  nd.argmax_channel(nd.array(x)).asnumpy())


# ---------------------------------------------------------------- where, clip
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("xshape,cshape", [((4, 5), (4, 5)), ((4, 5), (4,)), ((3, 2, 2), (3,))])
def test_where(dtype, req, xshape, cshape):
    sym = mx.sym.where(mx.sym.var("cond"), mx.sym.var("x"), mx.sym.var("y"))
    values = {"cond": RNG.randint(0, 2, size=cshape).astype(np.float32), "x": RNG.normal(size=xshape),
              "y": RNG.normal(size=xshape)}
    compare(sym, values, dtype, req, no_grad=("cond",))


def test_where_int_condition():
    cond = RNG.randint(0, 3, size=(6,)).astype(np.int32)
    x, y = RNG.normal(size=(6, 2)), RNG.normal(size=(6, 2))
    c = nd.where(nd.array(cond, dtype=np.int32), nd.array(x), nd.array(y)).asnumpy()
    g = nd.where(nd.array(cond, ctx=gpu(), dtype=np.int32), nd.array(x, ctx=gpu()), nd.array(y, ctx=gpu())).asnumpy()
    np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("dtype", FLOATS + [np.float64])
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape", [(4, 5), (1000,)])
def test_clip(dtype, req, shape):
    sym = mx.sym.clip(mx.sym.var("data"), a_min=-0.5, a_max=0.75)
    values = {"data": RNG.normal(size=shape)}
    compare(sym, values, dtype, req)


def test_clip_int32():
    x = RNG.randint(-10, 10, size=(50,)).astype(np.int32)
    c = nd.clip(nd.array(x, dtype=np.int32), a_min=-3, a_max=4).asnumpy()
    g = nd.clip(nd.array(x, ctx=gpu(), dtype=np.int32), a_min=-3, a_max=4).asnumpy()
    np.testing.assert_array_equal(g, c)

"""float64 (and float16) through executors and gradients, NumPy/DLPack interop, and the
legacy API's refusal of binary operations between arrays of different dtypes (issue 21, item 5)."""
import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_numeric_gradient, check_symbolic_backward, check_symbolic_forward

x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")

# (name, symbol, argument shapes) of common operators with gradients
CASES = [
    ("copy", mx.sym.identity(x) * 2, {"x": (3, 4)}),
    ("dot", mx.sym.dot(x, w), {"x": (3, 4), "w": (4, 5)}),
    ("batch_dot", mx.sym.batch_dot(x, w), {"x": (2, 3, 4), "w": (2, 4, 5)}),
    ("fc", mx.sym.FullyConnected(x, w, b, num_hidden=5), {"x": (3, 4), "w": (5, 4), "b": (5,)}),
    ("conv", mx.sym.Convolution(x, w, b, kernel=(3, 3), num_filter=2),
     {"x": (2, 3, 5, 5), "w": (2, 3, 3, 3), "b": (2,)}),
    ("pool", mx.sym.Pooling(x, kernel=(2, 2), pool_type="avg"), {"x": (1, 2, 4, 4)}),
    ("relu", mx.sym.Activation(x, act_type="relu"), {"x": (3, 4)}),
    ("sigmoid", mx.sym.Activation(x, act_type="sigmoid"), {"x": (3, 4)}),
    ("tanh", mx.sym.Activation(x, act_type="tanh"), {"x": (3, 4)}),
    ("softmax", mx.sym.softmax(x) * w, {"x": (3, 4), "w": (3, 4)}),
    ("log_softmax", mx.sym.log_softmax(x) * w, {"x": (3, 4), "w": (3, 4)}),
    ("elemwise", x * w + x / (w + 1) - w, {"x": (3, 4), "w": (3, 4)}),
    ("broadcast", mx.sym.broadcast_mul(x, w), {"x": (3, 4), "w": (1, 4)}),
    ("sum", mx.sym.sum(x, axis=1), {"x": (3, 4)}),
    ("mean", mx.sym.mean(x, axis=0), {"x": (3, 4)}),
    ("layernorm", mx.sym.LayerNorm(x, w, b), {"x": (2, 4), "w": (4,), "b": (4,)}),
]


def _location(shapes, seed=0):
    rng = np.random.RandomState(seed)
    return {k: rng.uniform(0.5, 1.5, s) for k, s in shapes.items()}


@pytest.mark.parametrize("name,sym,shapes", CASES, ids=[c[0] for c in CASES])
def test_numeric_gradient_float64(name, sym, shapes):
    check_numeric_gradient(sym, _location(shapes), numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name,sym,shapes", CASES, ids=[c[0] for c in CASES])
def test_executor_keeps_dtype(name, sym, shapes, dtype):
    loc = _location(shapes)
    args = {k: mx.nd.array(v, dtype=dtype) for k, v in loc.items()}
    grads = {k: mx.nd.zeros(v.shape, dtype=dtype) for k, v in loc.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.ones(out.shape, dtype=dtype))
    assert out.dtype == np.dtype(dtype)
    assert all(g.dtype == np.dtype(dtype) for g in grads.values())
    # the same computation in float64 bounds the float16 error
    ref_args = {k: mx.nd.array(v, dtype="float64") for k, v in loc.items()}
    ref_grads = {k: mx.nd.zeros(v.shape, dtype="float64") for k, v in loc.items()}
    ref = sym.bind(mx.cpu(), ref_args, args_grad=ref_grads)
    ref_out = ref.forward(is_train=True)[0]
    ref.backward(mx.nd.ones(ref_out.shape, dtype="float64"))
    tol = 1e-12 if dtype == "float64" else 3e-2
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref_out.asnumpy(), rtol=tol, atol=tol)
    for k in grads:
        np.testing.assert_allclose(grads[k].asnumpy().astype(np.float64), ref_grads[k].asnumpy(),
                                   rtol=tol, atol=tol * 10)


def test_float64_precision_is_kept():
    # 1 + 1e-12 is lost in float32; a float64 executor keeps it through forward and backward.
    ex = (x * w).bind(mx.cpu(), {"x": mx.nd.array([1 + 1e-12], dtype="float64"),
                                 "w": mx.nd.array([3.0], dtype="float64")},
                      args_grad={"x": mx.nd.zeros((1,), dtype="float64"), "w": mx.nd.zeros((1,), dtype="float64")})
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.array([1.0], dtype="float64"))
    assert out.asnumpy()[0] - 3.0 == pytest.approx(3e-12, rel=1e-3)
    assert ex.grad_dict["w"].asnumpy()[0] - 1.0 == pytest.approx(1e-12, rel=1e-3)


def test_symbolic_forward_backward_float64():
    rng = np.random.RandomState(1)
    xs, ws = rng.rand(3, 4), rng.rand(4, 5)
    head = rng.rand(3, 5)
    check_symbolic_forward(mx.sym.dot(x, w), [xs, ws], [xs.dot(ws)], rtol=1e-12, atol=1e-12, dtype=np.float64)
    check_symbolic_backward(mx.sym.dot(x, w), [xs, ws], [head], [head.dot(ws.T), xs.T.dot(head)],
                            rtol=1e-12, atol=1e-12, dtype=np.float64)


def test_simple_bind_type_dict_float64():
    ex = mx.sym.dot(x, w).simple_bind(mx.cpu(), type_dict={"x": "float64", "w": "float64"}, x=(3, 4), w=(4, 5))
    xs, ws = np.random.rand(3, 4), np.random.rand(4, 5)
    ex.forward(is_train=True, x=xs, w=ws)
    ex.backward(mx.nd.ones((3, 5), dtype="float64"))
    assert ex.outputs[0].dtype == np.float64 and ex.grad_dict["x"].dtype == np.float64
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.ones((3, 5)).dot(ws.T), rtol=1e-12)


@pytest.mark.parametrize("hybridize", [False, True])
def test_gluon_training_float64(hybridize):
    mx.random.seed(3)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(4, 3), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.MaxPool2D(), mx.gluon.nn.Dense(3))
    net.initialize()
    net.cast("float64")
    if hybridize:
        net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(0)
    data = mx.nd.array(rng.rand(8, 3, 8, 8), dtype="float64")
    label = mx.nd.array(rng.randint(0, 3, 8), dtype="float64")
    losses = []
    for _ in range(15):
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(8)
        assert loss.dtype == np.float64
        losses.append(loss.mean().asscalar())
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())
    assert net[0].weight.grad().dtype == np.float64
    assert losses[-1] < losses[0] * 0.7


def test_module_training_float64():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"),
                                                  act_type="relu"), num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    rng = np.random.RandomState(0)
    feats = rng.rand(30, 5)
    labels = (feats[:, 0] * 3).astype(int).clip(0, 2).astype("float64")
    it = mx.io.NDArrayIter(feats, labels, batch_size=10)
    mod = mx.mod.Module(net)
    mod.bind(data_shapes=[mx.io.DataDesc("data", (10, 5), dtype="float64")],
             label_shapes=[mx.io.DataDesc("softmax_label", (10,), dtype="float64")])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    acc = []
    for _ in range(30):
        it.reset()
        metric = mx.metric.Accuracy()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
        acc.append(metric.get()[1])
    arg_params = mod.get_params()[0]
    assert arg_params["fc1_weight"].dtype == np.float64
    assert mod.get_outputs()[0].dtype == np.float64
    assert acc[-1] > acc[0]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int32", "int64", "uint8", "bool"])
def test_array_protocol(dtype):
    src = np.array([[0, 1, 2], [3, 4, 5]]).astype(dtype)
    a = mx.nd.array(src, dtype=dtype)
    got = np.asarray(a)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, src)
    np.testing.assert_array_equal(np.asarray(a, dtype="float64"), src.astype("float64"))


def test_dlpack_protocol():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3), dtype="float64")
    assert a.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    got = np.from_dlpack(a)
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(2, 3))
    assert got.dtype == np.float64


@pytest.mark.parametrize("lhs,rhs", [("int32", "float32"), ("float64", "float32"), ("float16", "float32"),
                                     ("int64", "int32"), ("uint8", "int32")])
@pytest.mark.parametrize("op", ["elemwise_add", "broadcast_mul", "_plus", "broadcast_greater"])
def test_mixed_dtype_binary_is_refused(op, lhs, rhs):
    # MXNet 1.x legacy operators require equal input dtypes and name both in the error.
    a = mx.nd.array([1, 2, 3], dtype=lhs)
    c = mx.nd.array([1, 2, 3], dtype=rhs)
    fn = mx.nd.__dict__.get(op) or mx.nd._internal.__dict__[op]
    with pytest.raises(mx.base.MXNetError, match="(%s.*%s)|(%s.*%s)" % (lhs, rhs, rhs, lhs)):
        fn(a, c).wait_to_read()


def test_mixed_dtype_operator_overload_is_refused():
    a = mx.nd.array([1, 2, 3], dtype="int32")
    c = mx.nd.array([1, 2, 3], dtype="float32")
    with pytest.raises(mx.base.MXNetError, match="float32.*int32|int32.*float32"):
        (a + c).wait_to_read()
    # scalars keep the array's dtype, as in MXNet's legacy API
    assert (a + 2).dtype == np.int32 and (a * 2.5).dtype == np.int32
    assert (mx.nd.array([1, 0], dtype="bool") == mx.nd.array([1, 1], dtype="bool")).dtype == np.bool_


def test_mixed_dtype_symbol_bind_is_refused():
    with pytest.raises(mx.base.MXNetError, match="float64.*float32|float32.*float64"):
        (x + w).bind(mx.cpu(), {"x": mx.nd.ones((2,), dtype="float64"), "w": mx.nd.ones((2,), dtype="float32")})


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_embedding_takes_weight_dtype(dtype):
    # MXNet's Embedding computes in the weight's dtype when it is known (its dtype
    # parameter only decides when nothing else does), so a cast network keeps working.
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    sym = mx.sym.Embedding(data, weight, input_dim=5, output_dim=3)
    assert sym.infer_type(data="int32", weight=dtype)[1] == [np.dtype(dtype)]
    assert sym.infer_type(data="int32")[1] == [np.float32]
    rng = np.random.RandomState(0)
    w_np, idx = rng.rand(5, 3), np.array([[0, 4], [2, 2]])
    head = rng.rand(2, 2, 3)
    grad = mx.nd.zeros((5, 3), dtype=dtype)
    ex = sym.bind(mx.cpu(), {"data": mx.nd.array(idx, dtype=dtype), "weight": mx.nd.array(w_np, dtype=dtype)},
                  args_grad={"weight": grad}, grad_req={"data": "null", "weight": "write"})
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.array(head, dtype=dtype))
    want_grad = np.zeros((5, 3))
    np.add.at(want_grad, idx.ravel(), head.reshape(-1, 3))
    tol = 1e-12 if dtype == "float64" else 2e-3
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy(), w_np.astype(dtype)[idx], rtol=tol)
    np.testing.assert_allclose(grad.asnumpy(), want_grad, rtol=tol, atol=tol)


def test_gluon_embedding_cast_float64():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Embedding(10, 4), mx.gluon.nn.Dense(2))
    net.initialize()
    net.cast("float64")
    net.hybridize()
    with mx.autograd.record():
        y = net(mx.nd.array([[1, 2], [3, 1]], dtype="float64"))
    y.backward()
    assert y.dtype == np.float64 and net[0].weight.grad().dtype == np.float64
    g = net[0].weight.grad().asnumpy()
    assert np.count_nonzero(np.abs(g).sum(axis=1)) == 3  # rows 1, 2 and 3 only

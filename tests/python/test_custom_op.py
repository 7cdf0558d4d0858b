"""Custom operators written in Python (mx.operator.CustomOp / CustomOpProp / register):
values against numpy, gradients (autograd and numeric), executors, Module training,
hybridized blocks, auxiliary states, write requests, errors and concurrency."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import weft as mx
from weft.test_utils import check_numeric_gradient


@mx.operator.register("t_sqr")
class SqrProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Sqr(self.scale)


class Sqr(mx.operator.CustomOp):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(self.scale * x * x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * in_data[0] * (2 * self.scale))


@mx.operator.register("t_mulsum")
class MulSumProp(mx.operator.CustomOpProp):
    """Two inputs, two outputs: a*b and a+b."""

    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_outputs(self):
        return ["prod", "sum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return MulSum()


class MulSum(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        gp, gs = out_grad
        self.assign(in_grad[0], req[0], gp * b + gs)
        self.assign(in_grad[1], req[1], gp * a + gs)


@mx.operator.register("t_softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    """A softmax loss output: its backward ignores the head gradient (need_top_grad=False)."""

    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Softmax()


class Softmax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)
        self.assign(out_data[0], req[0], mx.nd.array(y))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().astype(np.int64)
        y = out_data[0].asnumpy().copy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_data[1].shape))


@mx.operator.register("t_count")
class CountProp(mx.operator.CustomOpProp):
    """Identity that counts its training-mode calls in an auxiliary state."""

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Count()


class Count(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])
        if is_train:
            aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("t_fail")
class FailProp(mx.operator.CustomOpProp):
    def __init__(self, where="forward"):
        super().__init__()
        self.where = where

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Fail(self.where)


class Fail(mx.operator.CustomOp):
    def __init__(self, where):
        super().__init__()
        self.where = where

    def forward(self, is_train, req, in_data, out_data, aux):
        if self.where == "forward":
            raise ValueError("custom forward exploded on purpose")
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise RuntimeError("custom backward exploded on purpose")


def test_forward_matches_numpy():
    x = np.random.uniform(-2, 2, (3, 4)).astype(np.float32)
    y = mx.nd.Custom(mx.nd.array(x), op_type="t_sqr", scale=2.5)
    np.testing.assert_allclose(y.asnumpy(), 2.5 * x * x, rtol=1e-6)
    # inputs by name, several outputs
    a = np.random.rand(2, 5).astype(np.float32)
    b = np.random.rand(2, 5).astype(np.float32)
    p, s = mx.nd.Custom(rhs=mx.nd.array(b), lhs=mx.nd.array(a), op_type="t_mulsum")
    np.testing.assert_allclose(p.asnumpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose(s.asnumpy(), a + b, rtol=1e-6)


def test_autograd_backward_values():
    a = np.random.rand(2, 3).astype(np.float32)
    b = np.random.rand(2, 3).astype(np.float32)
    xa, xb = mx.nd.array(a), mx.nd.array(b)
    xa.attach_grad()
    xb.attach_grad()
    with mx.autograd.record():
        p, s = mx.nd.Custom(xa, xb, op_type="t_mulsum")
        loss = (p * 3 + s * 2).sum()
    loss.backward()
    np.testing.assert_allclose(xa.grad.asnumpy(), 3 * b + 2, rtol=1e-5)
    np.testing.assert_allclose(xb.grad.asnumpy(), 3 * a + 2, rtol=1e-5)
    # the forward instance is the backward's: a chain of two calls
    x = mx.nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(mx.nd.Custom(x, op_type="t_sqr", scale=1), op_type="t_sqr", scale=2)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 8 * a ** 3, rtol=1e-5)


def test_numeric_gradient():
    data = mx.sym.Variable("data")
    sym = mx.sym.Custom(data, op_type="t_sqr", scale=1.5)
    check_numeric_gradient(sym, [np.random.uniform(-1, 1, (3, 4))], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    sym2 = mx.sym.Custom(lhs=lhs, rhs=rhs, op_type="t_mulsum")
    check_numeric_gradient(sym2, {"lhs": np.random.rand(2, 3), "rhs": np.random.rand(2, 3)},
                           numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_symbol_names_and_inference():
    sym = mx.sym.Custom(data=mx.sym.Variable("x"), op_type="t_softmax", name="sm")
    assert sym.list_arguments() == ["x", "sm_label"]
    assert sym.list_outputs() == ["sm_output"]
    arg, out, aux = sym.infer_shape(x=(4, 3))
    assert arg == [(4, 3), (4,)] and out == [(4, 3)] and aux == []
    c = mx.sym.Custom(mx.sym.Variable("x"), op_type="t_count", name="cnt")
    assert c.list_auxiliary_states() == ["cnt_count"]
    # positional and named inputs together, as MXNet takes them
    mixed = mx.sym.Custom(mx.sym.Variable("x"), label=mx.sym.Variable("y"), op_type="t_softmax", name="sm2")
    assert mixed.list_arguments() == ["x", "y"]
    # the symbol survives JSON
    again = mx.sym.load_json(sym.tojson())
    assert again.list_arguments() == ["x", "sm_label"]


def test_grad_req_add_in_executor():
    x = mx.sym.Variable("x")
    sym = mx.sym.Custom(x, op_type="t_sqr", scale=1)
    a = np.random.rand(2, 3).astype(np.float32)
    ex = sym.simple_bind(mx.cpu(), x=(2, 3), grad_req="add")
    ex.arg_dict["x"][:] = a
    ex.grad_dict["x"][:] = 1.0
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 1 + 2 * (2 * a), rtol=1e-5)
    ex2 = sym.simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    ex2.arg_dict["x"][:] = a
    ex2.forward(is_train=True)
    np.testing.assert_allclose(ex2.outputs[0].asnumpy(), a * a, rtol=1e-6)


def test_module_training_with_custom_loss():
    rng = np.random.RandomState(0)
    n, d, k = 200, 5, 3
    centers = rng.randn(k, d).astype(np.float32) * 3
    label = rng.randint(0, k, n)
    data = centers[label] + rng.randn(n, d).astype(np.float32) * 0.3
    it = mx.io.NDArrayIter(data, label.astype(np.float32), batch_size=20, label_name="sm_label")
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=k, name="fc")
    net = mx.sym.Custom(data=net, op_type="t_softmax", name="sm")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["sm_label"])
    mod.fit(it, num_epoch=8, optimizer="sgd", optimizer_params={"learning_rate": 0.05},
            initializer=mx.init.Xavier())
    it.reset()
    acc = mod.score(it, mx.metric.Accuracy())[0][1]
    assert acc > 0.95, acc


def test_hybridized_block():
    class Net(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = mx.gluon.nn.Dense(4, in_units=3)

        def hybrid_forward(self, F, x):
            return F.Custom(self.dense(x), op_type="t_sqr", scale=0.5)

    net = Net()
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(4).rand(2, 3))
    with mx.autograd.record():
        eager = net(x)
    eager.backward()
    g_eager = net.dense.weight.grad().asnumpy().copy()
    net.hybridize()
    with mx.autograd.record():
        hyb = net(x)
    hyb.backward()
    np.testing.assert_allclose(hyb.asnumpy(), eager.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(net.dense.weight.grad().asnumpy(), g_eager, rtol=1e-5)
    w = net.dense.weight.data().asnumpy()
    b = net.dense.bias.data().asnumpy()
    h = x.asnumpy() @ w.T + b
    # An absolute part too: an element of h near 0 (a sum that cancels) carries float32's
    # rounding of its terms, relatively large, and squaring doubles it.
    want = 0.5 * h * h
    np.testing.assert_allclose(hyb.asnumpy(), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_aux_states():
    x = mx.sym.Variable("x")
    sym = mx.sym.Custom(x, op_type="t_count", name="cnt")
    ex = sym.simple_bind(mx.cpu(), x=(2, 2))
    ex.arg_dict["x"][:] = 3.0
    ex.aux_dict["cnt_count"][:] = 0
    for _ in range(3):
        ex.forward(is_train=True)
    ex.forward(is_train=False)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), np.full((2, 2), 3.0))
    assert ex.aux_dict["cnt_count"].asnumpy()[0] == 3
    # imperatively, the state is an input that the call writes
    count = mx.nd.zeros((1,))
    with mx.autograd.train_mode():
        mx.nd.Custom(mx.nd.ones((2,)), count, op_type="t_count")
        mx.nd.Custom(mx.nd.ones((2,)), count, op_type="t_count")
    assert count.asnumpy()[0] == 2


def test_errors_surface_as_mxnet_error():
    y = mx.nd.Custom(mx.nd.ones((2, 2)), op_type="t_fail", where="forward")
    with pytest.raises(mx.base.MXNetError, match="custom forward exploded on purpose"):
        y.asnumpy()
    x = mx.nd.ones((2, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="t_fail", where="backward")
    y.backward()
    with pytest.raises(mx.base.MXNetError, match="custom backward exploded on purpose"):
        x.grad.asnumpy()
    # the engine goes on working
    np.testing.assert_allclose((mx.nd.ones((2,)) + 1).asnumpy(), [2, 2])
    with pytest.raises(mx.base.MXNetError, match="no custom operator is registered as 'nope'"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="nope")
    with pytest.raises(mx.base.MXNetError, match="forward state"):
        mx.nd._internal._backward_Custom(mx.nd.ones((2,)), __custom_state__="999999")

    @mx.operator.register("t_badshape")
    class BadShape(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            raise ValueError("no shape for you")

    with pytest.raises(mx.base.MXNetError, match="no shape for you"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="t_badshape")


def test_many_concurrent_custom_ops_do_not_deadlock():
    # Independent calls from several Python threads, each forward reading its input and
    # running operators; a deadlock fails through the timeout of the child process. The
    # naive engine runs each push under one lock, on the pushing thread, so there the calls
    # come from one thread (see docs/design/custom_ops.md).
    script = textwrap.dedent("""
        import os, threading, numpy as np, weft as mx
        @mx.operator.register("c_sqr")
        class P(mx.operator.CustomOpProp):
            def create_operator(self, ctx, s, t):
                return O()
        class O(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], mx.nd.array(in_data[0].asnumpy() ** 2) + 0)
            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])
        errors = []
        def work(seed):
            try:
                rng = np.random.RandomState(seed)
                a = rng.rand(64, 64).astype(np.float32)
                x = mx.nd.array(a)
                outs = []
                for _ in range(50):
                    x2 = mx.nd.array(a)
                    x2.attach_grad()
                    with mx.autograd.record():
                        y = mx.nd.Custom(mx.nd.Custom(x2, op_type="c_sqr"), op_type="c_sqr")
                    y.backward()
                    outs.append((y, x2))
                for y, x2 in outs:
                    np.testing.assert_allclose(y.asnumpy(), a ** 4, rtol=1e-4)
                    np.testing.assert_allclose(x2.grad.asnumpy(), 4 * a ** 3, rtol=1e-4)
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(int(os.environ["NUM_THREADS"]))]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not errors, errors
        mx.nd.waitall()
        print("ok")
    """)
    for engine, threads in (("ThreadedEngine", "4"), ("NaiveEngine", "1")):
        env = dict(os.environ, WEFT_ENGINE_TYPE=engine, NUM_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0 and "ok" in r.stdout, (engine, r.stdout, r.stderr)


def test_blocking_on_a_queued_custom_op_while_holding_the_gil():
    # Calls that block inside the library while the caller holds the GIL (a sparse cast that
    # reads the data back, autograd's backward over csr gradients) wait for a custom
    # operator whose callback needs the GIL: the waiting thread must let go of it. A
    # deadlock fails through the child's timeout.
    script = textwrap.dedent("""
        import time, numpy as np, weft as mx
        @mx.operator.register("g_sqr")
        class P(mx.operator.CustomOpProp):
            def __init__(self):
                super().__init__(need_top_grad=True)
            def infer_storage_type(self, in_stype):
                return in_stype, [in_stype[0]], []
            def infer_storage_type_backward(self, ograd, in_stype, out_stype, igrad, aux):
                s = in_stype[0]
                return [s], [s], [s], [s], []
            def create_operator(self, ctx, s, t):
                return O()
        class O(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                time.sleep(0.2)  # still queued when the caller blocks on it
                x = in_data[0]
                if x.stype == "csr":
                    y = mx.nd.sparse.csr_matrix((x.data * x.data, x.indices, x.indptr), shape=x.shape)
                else:
                    y = x * x
                self.assign(out_data[0], req[0], y)
            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                self.assign(in_grad[0], req[0], 2 * mx.nd.sparse.elemwise_mul(in_data[0], out_grad[0]))
        a = np.array([[0, 1.5, 0, -2], [0, 0, 0, 0], [3, 0, 0.5, 0]], np.float32)
        dense = mx.nd.Custom(mx.nd.array(a), op_type="g_sqr")
        cast = dense.tostype("csr")
        assert cast.stype == "csr"
        np.testing.assert_allclose(cast.asnumpy(), a * a)
        x = mx.nd.array(a).tostype("csr")
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Custom(x, op_type="g_sqr")
            y.backward()
        np.testing.assert_allclose(y.asnumpy(), a * a)
        np.testing.assert_allclose(x.grad.asnumpy(), 2 * a)
        print("ok")
    """)
    for engine in ("ThreadedEngine", "NaiveEngine"):
        env = dict(os.environ, WEFT_ENGINE_TYPE=engine)
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "ok" in r.stdout, (engine, r.stdout, r.stderr)


def test_custom_op_reading_another_custom_ops_output_while_queued():
    # A forward that waits for an array produced by a later-queued custom call must not
    # starve it of a callback thread.
    xs = [mx.nd.array(np.full((4,), i, np.float32)) for i in range(20)]
    ys = [mx.nd.Custom(mx.nd.Custom(x, op_type="t_sqr", scale=1), op_type="t_sqr", scale=1) for x in xs]
    for i, y in enumerate(ys):
        np.testing.assert_allclose(y.asnumpy(), np.full((4,), float(i) ** 4))


class NumpySoftmax(mx.operator.NumpyOp):
    """MXNet's NumpyOp example: a softmax output layer written with numpy."""

    def __init__(self):
        super().__init__(False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

    def forward(self, in_data, out_data):
        x = in_data[0]
        y = out_data[0]
        y[:] = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))

    def backward(self, out_grad, in_data, out_data, in_grad):
        label = in_data[1].astype(int)
        dx = in_grad[0]
        dx[:] = out_data[0]
        dx[np.arange(label.shape[0]), label] -= 1.0


class NDArrayTriple(mx.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * 3

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0] * 3


def test_numpy_and_ndarray_ops():
    with pytest.warns(DeprecationWarning, match="PythonOp has been deprecated"):
        softmax = NumpySoftmax()
    sym = softmax(data=mx.sym.Variable("x"), name="sm")
    assert sym.list_arguments() == ["x", "sm_label"]
    x = np.random.randn(4, 3).astype(np.float32)
    label = np.array([0, 2, 1, 2], np.float32)
    ex = sym.simple_bind(mx.cpu(), x=(4, 3))
    ex.arg_dict["x"][:] = x
    ex.arg_dict["sm_label"][:] = label
    ex.forward(is_train=True)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), p, rtol=1e-5)
    ex.backward()
    p[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), p, rtol=1e-5, atol=1e-6)

    with pytest.warns(DeprecationWarning):
        triple = NDArrayTriple()
    check_numeric_gradient(triple.get_symbol(mx.sym.Variable("data")), [np.random.rand(2, 3)],
                           numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_exit_with_custom_ops_in_flight():
    # Thousands of calls, beyond the engine's bound on pending work, left for the exit to
    # wait for: the front end's objects must be released before the interpreter goes.
    script = textwrap.dedent("""
        import weft as mx
        @mx.operator.register("exit_id")
        class P(mx.operator.CustomOpProp):
            def create_operator(self, ctx, s, t):
                return O()
        class O(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], in_data[0])
        x = mx.nd.ones((4,))
        ys = [mx.nd.Custom(x, op_type="exit_id") for _ in range(5000)]
        print("pushed")
    """)
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
        assert r.returncode == 0 and "pushed" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_exit_with_a_recorded_custom_op_graph_alive():
    # A retained autograd graph still holds the operator instance when the interpreter tears
    # its modules down: its release must not call into Python any more (it crashed there).
    script = textwrap.dedent("""
        import numpy as np, weft as mx
        @mx.operator.register("exit_sqr")
        class P(mx.operator.CustomOpProp):
            def __init__(self):
                super().__init__(need_top_grad=True)
            def create_operator(self, ctx, s, t):
                return O()
        class O(mx.operator.CustomOp):
            def forward(self, is_train, req, in_data, out_data, aux):
                self.assign(out_data[0], req[0], in_data[0] * in_data[0])
            def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
                self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])
        x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Custom(x, op_type="exit_sqr")
        y.backward(retain_graph=True)
        np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.arange(6).reshape(2, 3))
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_get_operator_arguments_lists_inputs_then_parameters():
    from weft.operator import get_operator_arguments, OperatorArguments
    args = get_operator_arguments("FullyConnected")
    assert isinstance(args, OperatorArguments)
    assert args.names[:3] == ["data", "weight", "bias"] and "num_hidden" in args.names
    assert args.narg == len(args.names) == len(args.types)
    types = dict(zip(args.names, args.types))
    assert types["data"] == "NDArray-or-Symbol"
    assert types["num_hidden"].endswith(", required")
    assert types["no_bias"].startswith("boolean") and types["no_bias"].endswith("optional, default=False")
    act = get_operator_arguments("Activation")
    assert act.names == ["data", "act_type"]
    # MXNet 1.9.1's five activations, sorted as it lists them.
    assert act.types[1] == "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"


def test_enumerations_are_listed_as_mxnet_lists_them():
    # MXNet lists an enumeration's names sorted, an optional one's None first and unquoted.
    from weft.ndarray import _ops
    from weft.operator import get_operator_arguments
    seen = 0
    for info in _ops.list_ops():
        for name, ptype, *_ in info.params:
            if not ptype.startswith("{"):
                continue
            items = [t.strip() for t in ptype[1:ptype.index("}")].split(",")]
            names = items[1:] if items[0] == "None" else items
            assert all(n[0] == n[-1] == "'" for n in names), (info.name, name, ptype)
            assert names == sorted(names), (info.name, name, ptype)
            seen += 1
    assert seen > 40
    conv = dict(zip(*get_operator_arguments("Convolution")[1:]))
    assert conv["cudnn_tune"].startswith("{None, 'fastest', 'limited_workspace', 'off'}, optional")
    assert dict(zip(*get_operator_arguments("take")[1:]))["mode"].startswith("{'clip', 'raise', 'wrap'}")

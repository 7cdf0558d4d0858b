"""Imperative autograd: recording, backward, grad, Function, and agreement with the executor."""
import numpy as np
import pytest

import weft
from weft import autograd, nd


def _var(a, req="write"):
    x = nd.array(np.asarray(a, dtype=np.float32))
    x.attach_grad(req)
    return x


def test_recording_state_and_modes():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    assert not autograd.is_recording() and not autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True


def test_elementwise_chain_matches_hand_gradient():
    a = np.array([0.5, -1.0, 2.0, 3.0], dtype=np.float32)
    x = _var(a)
    with autograd.record():
        y = nd.exp(x) * x + nd.sin(x) / 2
    y.backward()
    expect = np.exp(a) * a + np.exp(a) + np.cos(a) / 2
    np.testing.assert_allclose(x.grad.asnumpy(), expect, rtol=1e-5)


def test_head_gradient_and_reused_input_sums():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = _var(a)
    with autograd.record():
        y = x * x + x  # x is read three times: the contributions add up
    hg = np.full((2, 3), 0.5, dtype=np.float32)
    y.backward(nd.array(hg))
    np.testing.assert_allclose(x.grad.asnumpy(), (2 * a + 1) * hg)


def test_grad_req_write_and_add():
    a = np.array([1.0, 2.0], dtype=np.float32)
    xw, xa = _var(a, "write"), _var(a, "add")
    for _ in range(3):
        with autograd.record():
            y = xw * 3 + xa * 3
        y.backward()
    np.testing.assert_allclose(xw.grad.asnumpy(), [3, 3])
    np.testing.assert_allclose(xa.grad.asnumpy(), [9, 9])
    xn = _var(a, "null")
    assert xn.grad is None


def test_variables_not_reached_keep_their_gradient():
    x, z = _var([1.0]), _var([2.0])
    z.grad[:] = 7
    with autograd.record():
        y = x * 2
    y.backward()
    np.testing.assert_allclose(z.grad.asnumpy(), [7])


def test_views_record_reshape_slice_and_at():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = _var(a)
    with autograd.record():
        r = x.reshape((4, 3))[1:3]      # rows 1, 2 of the reshaped array
        s = x[2] * 10                    # row 2 of x
        y = r.sum() + s.sum()
    y.backward()
    expect = np.zeros(12, dtype=np.float32)
    expect[3:9] = 1
    expect = expect.reshape(3, 4)
    expect[2] += 10
    np.testing.assert_allclose(x.grad.asnumpy(), expect)


def test_fully_connected_and_softmax_output_match_executor():
    rng = np.random.RandomState(0)
    data = rng.randn(5, 7).astype(np.float32)
    w1, b1 = rng.randn(6, 7).astype(np.float32), rng.randn(6).astype(np.float32)
    w2, b2 = rng.randn(3, 6).astype(np.float32), rng.randn(3).astype(np.float32)
    label = np.array([0, 2, 1, 1, 0], dtype=np.float32)

    params = [_var(v) for v in (w1, b1, w2, b2)]
    with autograd.record():
        h = nd.Activation(nd.FullyConnected(nd.array(data), params[0], params[1], num_hidden=6), act_type="tanh")
        out = nd.SoftmaxOutput(nd.FullyConnected(h, params[2], params[3], num_hidden=3), nd.array(label))
    out.backward()

    s = weft.sym
    net = s.SoftmaxOutput(s.FullyConnected(s.Activation(s.FullyConnected(s.var("data"), num_hidden=6, name="fc1"),
                                                        act_type="tanh"), num_hidden=3, name="fc2"), name="softmax")
    exe = net.simple_bind(weft.cpu(), data=(5, 7), softmax_label=(5,))
    for name, v in (("data", data), ("fc1_weight", w1), ("fc1_bias", b1), ("fc2_weight", w2), ("fc2_bias", b2),
                    ("softmax_label", label)):
        exe.arg_dict[name][:] = v
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(out.asnumpy(), exe.outputs[0].asnumpy(), rtol=1e-5)
    for p, name in zip(params, ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")):
        np.testing.assert_allclose(p.grad.asnumpy(), exe.grad_dict[name].asnumpy(), rtol=1e-4, atol=1e-6)


def test_matches_numeric_gradient_float64():
    rng = np.random.RandomState(1)
    a = rng.rand(3, 4)
    b = rng.rand(4, 2)

    def f(av):
        return float(np.sum(np.tanh(av @ b) ** 2))

    x = nd.array(a, dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.square(nd.tanh(nd.dot(x, nd.array(b, dtype=np.float64)))).sum()
    y.backward()
    eps = 1e-6
    numeric = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        p, m = a.copy(), a.copy()
        p[i] += eps
        m[i] -= eps
        numeric[i] = (f(p) - f(m)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-6, atol=1e-8)


def test_grad_returns_without_touching_dot_grad_and_second_order():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    x = _var(a)
    with autograd.record():
        y = x * x * x
        grads = autograd.grad(y, x, create_graph=True)
        assert isinstance(grads, list) and len(grads) == 1  # a list even for one bare variable
        g = grads[0]
        z = g.sum()
    np.testing.assert_allclose(g.asnumpy(), 3 * a * a)
    np.testing.assert_allclose(x.grad.asnumpy(), 0)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * a)


def test_retain_graph():
    x = _var([2.0])
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0])
    with pytest.raises(weft.WeftError, match="freed by an earlier backward"):
        y.backward()


def test_detach_and_pause_stop_gradients():
    x = _var([3.0])
    with autograd.record():
        d = x.detach() * x
        with autograd.pause():
            c = x * 100
        y = d + c
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3.0])


def test_training_mode_reaches_operators():
    x = _var(np.ones((1000,)))
    with autograd.record():
        y = nd.Dropout(x, p=0.5)
    y.backward()
    kept = y.asnumpy() != 0
    assert 300 < kept.sum() < 700
    np.testing.assert_allclose(x.grad.asnumpy()[kept], 2.0)
    np.testing.assert_allclose(x.grad.asnumpy()[~kept], 0.0)
    with autograd.record(train_mode=False):
        y = nd.Dropout(x, p=0.5)
    np.testing.assert_allclose(y.asnumpy(), 1.0)


def test_function_custom_gradient():
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            y, = self.saved_tensors
            return dy * y * (1 - y) * 2  # deliberately twice the true gradient

    a = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    x = _var(a)
    with autograd.record():
        y = Sigmoid()(x) * 3
    y.backward()
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(y.asnumpy(), 3 * s, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * s * (1 - s), rtol=1e-5)


def test_function_backward_error_propagates():
    class Broken(autograd.Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            raise RuntimeError("boom in backward")

    x = _var([1.0])
    with autograd.record():
        y = Broken()(x)
    with pytest.raises(RuntimeError, match="boom in backward"):
        y.backward()


def test_errors():
    x = nd.array([1.0])
    with autograd.record():
        y = x * 2
    with pytest.raises(weft.WeftError, match="was not computed from arrays marked for gradients"):
        y.backward()
    v = _var([1.0, 2.0])
    with autograd.record():
        with pytest.raises(weft.WeftError, match="writes into an array marked for gradients"):
            v += 1
        w = v * 2
        with pytest.raises(weft.WeftError, match="writes into one of its own inputs"):
            w *= 3
    np.testing.assert_allclose(v.asnumpy(), [1.0, 2.0])
    with autograd.record():
        y = v * 2
    with pytest.raises(weft.WeftError, match="head 0 has shape"):
        y.backward(nd.ones((3,)))
    with pytest.raises(ValueError, match="one head gradient per head"):
        autograd.backward([y], [nd.ones((2,)), nd.ones((2,))])
    with pytest.raises(weft.WeftError, match="expected 'null', 'write' or 'add'"):
        v.attach_grad("sometimes")
    with pytest.raises(weft.WeftError, match="has no history"):
        with autograd.record():
            y = v * 2
        autograd.grad(y, [nd.ones((2,))])


def test_backward_skips_inputs_without_history():
    # The data of a convolution has no history, so its gradient is skipped: the weight
    # gradient computed that way equals the executor's, and a data gradient that is asked
    # for is still computed and correct.
    rng = np.random.RandomState(3)
    data = nd.array(rng.rand(2, 1, 6, 6).astype(np.float32))
    w = _var(rng.rand(3, 1, 3, 3))
    with autograd.record():
        y = nd.Convolution(data, w, kernel=(3, 3), num_filter=3, no_bias=True)
    y.backward()
    sym = weft.sym.Convolution(weft.sym.var("data"), weft.sym.var("w"), kernel=(3, 3), num_filter=3, no_bias=True)
    exe = sym.bind(weft.cpu(), {"data": data, "w": w.detach()}, args_grad={"w": nd.zeros((3, 1, 3, 3))},
                   grad_req={"data": "null", "w": "write"})
    exe.forward(is_train=True)
    exe.backward([nd.ones(y.shape)])
    np.testing.assert_allclose(w.grad.asnumpy(), exe.grad_dict["w"].asnumpy(), rtol=1e-5)
    d = _var(data.asnumpy())
    with autograd.record():
        y = nd.Convolution(d, w, kernel=(3, 3), num_filter=3, no_bias=True)
    gd = autograd.grad(y, [d])[0].asnumpy()
    expect = np.zeros((2, 1, 6, 6), dtype=np.float32)
    wv = w.asnumpy()
    for i in range(4):
        for j in range(4):
            expect[:, 0, i:i + 3, j:j + 3] += wv[:, 0].sum(axis=0)
    np.testing.assert_allclose(gd, expect, rtol=1e-5)


def test_fresh_grad_state_follows_backward():
    x = _var([1.0, 2.0])
    assert not x._fresh_grad
    with autograd.record():
        y = (x * 3).sum()
    y.backward()
    assert x._fresh_grad  # written by the backward
    x._fresh_grad = False  # what Trainer does after an update
    assert not x._fresh_grad
    other = _var([0.5])
    with autograd.record():
        z = (other * 2).sum()
    z.backward()
    assert other._fresh_grad and not x._fresh_grad  # only the variables the backward reached
    assert not nd.ones((2,))._fresh_grad  # not a variable: never fresh
    with pytest.raises(weft.WeftError, match="marked for gradients"):
        nd.ones((2,))._fresh_grad = True


def _operators_run(tmp_path, fn):
    """Names of the operators that ran during fn(), from the profiler's trace."""
    import json
    from weft import profiler
    path = tmp_path / "trace.json"
    nd.waitall()
    profiler.set_config(profile_imperative=True, profile_symbolic=False, profile_memory=False, profile_api=False,
                        filename=str(path), continuous_dump=False)
    try:
        profiler.set_state("run")
        fn()
        nd.waitall()
        profiler.set_state("stop")
        profiler.dump(finished=True)
    finally:
        profiler.set_state("stop")
    events = json.loads(path.read_text())["traceEvents"]
    return [e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "operator"]


def test_weight_gradients_are_written_into_grad_without_a_copy(tmp_path):
    # Each weight feeds one call: its gradient call writes .grad itself (no _copy into it),
    # in the same array as before, step after step.
    rng = np.random.default_rng(7)
    x_np = rng.standard_normal((8, 6)).astype(np.float32)
    w1_np = rng.standard_normal((5, 6)).astype(np.float32)
    b1_np = rng.standard_normal(5).astype(np.float32)
    w2_np = rng.standard_normal((3, 5)).astype(np.float32)
    x = nd.array(x_np)
    w1, b1, w2 = _var(w1_np), _var(b1_np), _var(w2_np)
    grad_arrays = [w1.grad, b1.grad, w2.grad]

    def step():
        with autograd.record():
            h = nd.relu(nd.FullyConnected(x, w1, b1, num_hidden=5))
            loss = nd.sum(nd.FullyConnected(h, w2, no_bias=True, num_hidden=3) ** 2)
        loss.backward()

    step()
    ops = _operators_run(tmp_path, step)
    assert "_backward_FullyConnected" in ops and "_copy" not in ops, ops
    # The arrays taken from .grad before the steps hold the new gradients.
    for before, now in zip(grad_arrays, (w1.grad, b1.grad, w2.grad)):
        np.testing.assert_array_equal(before.asnumpy(), now.asnumpy())
    z = x_np.astype(np.float64) @ w1_np.T + b1_np
    h = np.maximum(z, 0)
    dy = 2 * (h @ w2_np.T)
    dz = (dy @ w2_np) * (z > 0)
    np.testing.assert_allclose(grad_arrays[2].asnumpy(), dy.T @ h, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad_arrays[0].asnumpy(), dz.T @ x_np, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad_arrays[1].asnumpy(), dz.sum(axis=0), rtol=1e-4, atol=1e-4)


def test_gradients_summed_added_or_passed_through_still_reach_grad(tmp_path):
    rng = np.random.default_rng(8)
    x_np = rng.standard_normal((4, 3)).astype(np.float32)
    w_np = rng.standard_normal((3, 3)).astype(np.float32)
    x = nd.array(x_np)
    # A weight used by two calls: the two gradients are summed, then copied into .grad.
    w = _var(w_np)
    with autograd.record():
        loss = nd.sum(nd.FullyConnected(x, w, no_bias=True, num_hidden=3)) + \
            nd.sum(nd.FullyConnected(x, w, no_bias=True, num_hidden=3) * 3)
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), 4 * np.tile(x_np.sum(axis=0), (3, 1)), rtol=1e-5)
    # grad_req='add' accumulates over backward calls.
    wa = _var(w_np, "add")
    for _ in range(2):
        with autograd.record():
            loss = nd.sum(nd.FullyConnected(x, wa, no_bias=True, num_hidden=3))
        loss.backward()
    np.testing.assert_allclose(wa.grad.asnumpy(), 2 * np.tile(x_np.sum(axis=0), (3, 1)), rtol=1e-5)
    # A gradient an operator passes through unchanged (the head's gradient, through
    # elemwise_add) is the head gradient's array: copied, which leaves the head gradient be.
    a, b = _var(w_np), _var(w_np * 2)
    head = nd.array(x_np[:3])
    with autograd.record():
        y = a + b
    y.backward(head)
    np.testing.assert_allclose(a.grad.asnumpy(), x_np[:3])
    np.testing.assert_allclose(b.grad.asnumpy(), x_np[:3])
    a.grad[:] = 0
    np.testing.assert_allclose(head.asnumpy(), x_np[:3])
    # A variable that is itself a head gets the head's gradient.
    v = _var(w_np)
    with autograd.record():
        u = v * 1
    autograd.backward([u, v], [nd.ones((3, 3)), nd.ones((3, 3))])
    np.testing.assert_allclose(v.grad.asnumpy(), 2 * np.ones((3, 3)))

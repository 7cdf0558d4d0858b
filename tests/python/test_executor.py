"""Symbol.bind / simple_bind / eval and the Executor: results equal the imperative path's,
gradients match finite differences, grad_req add accumulates; group2ctx placement on
several CPU contexts equals one context bit for bit."""
import json
import os

import numpy as np
import pytest

import weft as mx
from weft.base import WeftError


def net():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=5, name="fc")
    act = mx.sym.Activation(fc, act_type="tanh", name="act")
    return mx.sym.sum(act * act, name="loss")


def params(rng):
    return {"data": rng.randn(3, 4).astype(np.float32), "fc_weight": rng.randn(5, 4).astype(np.float32),
            "fc_bias": rng.randn(5).astype(np.float32)}


def loss_np(p):
    h = np.tanh(p["data"] @ p["fc_weight"].T + p["fc_bias"])
    return (h * h).sum()


def test_forward_equals_the_imperative_path_and_backward_the_finite_differences():
    rng = np.random.RandomState(0)
    p = params(rng)
    ex = net().simple_bind(mx.cpu(), data=(3, 4))
    assert set(ex.grad_dict) == {"data", "fc_weight", "fc_bias"}
    for k, v in p.items():
        ex.arg_dict[k][:] = v
    out = ex.forward(is_train=True)[0].asnumpy()
    nd = {k: mx.nd.array(v) for k, v in p.items()}
    h = mx.nd.Activation(mx.nd.FullyConnected(nd["data"], nd["fc_weight"], nd["fc_bias"], num_hidden=5),
                         act_type="tanh")
    np.testing.assert_allclose(out, mx.nd.sum(h * h).asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(out, loss_np(p), rtol=1e-4)
    ex.backward()
    eps = 1e-3
    for name in ("fc_weight", "data"):
        num = np.zeros_like(p[name], dtype=np.float64)
        for idx in np.ndindex(p[name].shape):
            hi = {k: v.astype(np.float64) for k, v in p.items()}
            lo = {k: v.astype(np.float64) for k, v in p.items()}
            hi[name][idx] += eps
            lo[name][idx] -= eps
            num[idx] = (loss_np(hi) - loss_np(lo)) / (2 * eps)
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), num, rtol=1e-2, atol=1e-3)


def test_grad_req_add_accumulates_and_null_skips():
    rng = np.random.RandomState(1)
    p = params(rng)
    args = {k: mx.nd.array(v) for k, v in p.items()}
    grads = {"fc_weight": mx.nd.zeros((5, 4)), "fc_bias": mx.nd.zeros((5,))}
    ex = net().bind(mx.cpu(), args, args_grad=grads, grad_req={"fc_weight": "add", "fc_bias": "write"})
    ex.forward(is_train=True)
    ex.backward()
    once_w = grads["fc_weight"].asnumpy().copy()
    once_b = grads["fc_bias"].asnumpy().copy()
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(grads["fc_weight"].asnumpy(), 2 * once_w, rtol=1e-5)
    np.testing.assert_allclose(grads["fc_bias"].asnumpy(), once_b, rtol=1e-5)
    assert "data" not in ex.grad_dict


def test_head_gradient_scales_and_forward_takes_keyword_inputs():
    s = mx.sym.exp(mx.sym.Variable("x"))
    ex = s.simple_bind(mx.cpu(), x=(2,))
    out = ex.forward(is_train=True, x=mx.nd.array([0.0, 1.0]))
    np.testing.assert_allclose(out[0].asnumpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    ex.backward(mx.nd.array([2.0, 3.0]))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), [2.0, 3.0 * np.e], rtol=1e-6)
    with pytest.raises(ValueError, match="'y' is not an argument"):
        ex.forward(y=mx.nd.ones((2,)))


def test_backward_reads_only_the_head_gradients_it_needs():
    x = mx.sym.Variable("x")
    xv = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=np.float32)
    # shape_array's output carries no gradient: its head gradient is not read, whatever its shape.
    ex = mx.sym.shape_array(x).bind(mx.cpu(), {"x": mx.nd.array(xv)}, args_grad={"x": mx.nd.ones((2, 3))})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((7,))])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), np.zeros((2, 3)))
    # A group: exp's head gradient is read and checked, size_array's is not; any past the
    # last output are ignored (MXNet's test_prelu passes one per input).
    g = mx.sym.Group([mx.sym.exp(x), mx.sym.size_array(x)])
    ex = g.simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=mx.nd.array(xv))
    dy = np.arange(6, dtype=np.float32).reshape(2, 3)
    ex.backward([mx.nd.array(dy), mx.nd.ones((5, 5)), mx.nd.ones((9,))])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), dy * np.exp(xv), rtol=1e-6)
    with pytest.raises(WeftError, match=r"head gradient 0 has shape \(3,2\) but output 0 has \(2,3\)"):
        ex.backward([mx.nd.ones((3, 2)), mx.nd.ones((1,))])
    # The second output's gradient is needed here, and only one head gradient comes.
    two = mx.sym.Group([mx.sym.exp(x), x * 3])
    ex = two.simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=mx.nd.array(xv))
    with pytest.raises(WeftError, match="the gradient of output 1 is needed but only 1 head gradients were given"):
        ex.backward([mx.nd.ones((2, 3))])
    ex.backward([mx.nd.ones((2, 3)), mx.nd.array(dy)])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.exp(xv) + 3 * dy, rtol=1e-6)
    # topk's indices (ret_typ 'both') carry no gradient either.
    ex = mx.sym.topk(x, k=2, ret_typ="both").simple_bind(mx.cpu(), x=(2, 3))
    ex.forward(is_train=True, x=mx.nd.array(xv))
    ex.backward([mx.nd.ones((2, 2)), mx.nd.ones((4, 4))])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [[1, 0, 1], [1, 1, 0]])


def test_eval_and_batchnorm_auxiliary_states():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    out = (a * 2 + b).eval(a=mx.nd.array([1.0, 2.0]), b=mx.nd.array([10.0, 20.0]))
    np.testing.assert_allclose(out[0].asnumpy(), [12.0, 24.0])
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, name="bn")
    ex = bn.simple_bind(mx.cpu(), data=(4, 2), grad_req="null")
    assert sorted(ex.aux_dict) == ["bn_moving_mean", "bn_moving_var"]
    ex.arg_dict["data"][:] = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.float32)
    ex.arg_dict["bn_gamma"][:] = 1
    ex.aux_dict["bn_moving_var"][:] = 1
    ex.forward(is_train=True)
    # The moving mean moves towards the batch mean (4, 5) with momentum 0.9.
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), [0.4, 0.5], rtol=1e-5)


def test_bind_errors():
    s = net()
    with pytest.raises(ValueError, match="expected 3 args"):
        s.bind(mx.cpu(), [mx.nd.ones((3, 4))])
    with pytest.raises(ValueError, match="lacks"):
        s.bind(mx.cpu(), {"data": mx.nd.ones((3, 4))})
    with pytest.raises(WeftError, match="fc"):
        s.bind(mx.cpu(), {"data": mx.nd.ones((3, 4)), "fc_weight": mx.nd.ones((5, 3)), "fc_bias": mx.nd.ones((5,))})
    with pytest.raises(ValueError, match="do not determine every shape"):
        s.simple_bind(mx.cpu())
    with pytest.raises(WeftError, match="expected 'null', 'write' or 'add'"):
        s.bind(mx.cpu(), {"data": mx.nd.ones((3, 4)), "fc_weight": mx.nd.ones((5, 4)), "fc_bias": mx.nd.ones((5,))},
               args_grad={"data": mx.nd.ones((3, 4))}, grad_req=["often", "null", "null"])


def test_symbolic_check_helpers():
    from weft.test_utils import check_symbolic_forward, check_symbolic_backward, check_consistency
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    s = x * y + mx.sym.exp(x)
    xv, yv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    check_symbolic_forward(s, [xv, yv], [xv * yv + np.exp(xv)], rtol=1e-5)
    check_symbolic_backward(s, {"x": xv, "y": yv}, [np.ones(2)], {"x": yv + np.exp(xv), "y": xv}, rtol=1e-5)
    check_symbolic_backward(s, {"x": xv, "y": yv}, [np.ones(2)], {"x": yv + np.exp(xv)}, rtol=1e-5, grad_req="add")
    with pytest.raises(AssertionError):
        check_symbolic_forward(s, [xv, yv], [xv * yv], rtol=1e-5)
    results = check_consistency(s, [{"ctx": mx.cpu(), "x": (2,), "y": (2,), "type_dict": {"x": np.float64, "y": np.float64}},
                                    {"ctx": mx.cpu(), "x": (2,), "y": (2,), "type_dict": {"x": np.float32, "y": np.float32}}])
    # As MXNet's: the reference (float64) outputs and gradients by name.
    assert sorted(results) == sorted(s.list_outputs() + ["x", "y"])
    assert all(v.dtype == np.float64 for v in results.values())


def test_symbolic_checks_with_dtype_asnumpy_keep_each_value_dtype():
    from weft.test_utils import check_symbolic_forward, check_symbolic_backward
    data, length = mx.sym.Variable("data"), mx.sym.Variable("length")
    s = mx.sym.softmax(data, length=length, use_length=True, axis=1)
    xv = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], dtype=np.float16)
    lv = mx.nd.array([2, 3], dtype=np.int32)
    e = np.exp(xv.astype(np.float64) - xv.max(axis=1, keepdims=True))
    e[0, 2] = 0
    want = e / e.sum(axis=1, keepdims=True)
    # "asnumpy": data stays float16 (and the NDArray length int32); with a fixed dtype every
    # value is converted.
    out = check_symbolic_forward(s, {"data": xv, "length": lv}, [want], rtol=1e-2, atol=1e-3, dtype="asnumpy")
    assert out[0].dtype == np.float16
    out = check_symbolic_forward(s, {"data": xv, "length": lv}, [want], rtol=1e-3, atol=1e-4, dtype=np.float64)
    assert out[0].dtype == np.float64
    # Gradients take the expected values' dtypes, here other than data's: they arrive converted.
    dy = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float16)
    p = want[:, :, None] * (np.eye(3)[None] - want[:, None, :])
    dx = np.einsum("bj,bji->bi", dy.astype(np.float64), p)
    dx[0, 2] = 0
    grads = check_symbolic_backward(s, {"data": xv, "length": lv}, [dy], [dx, np.zeros(2, dtype=np.int32)],
                                    rtol=1e-2, atol=1e-3, dtype="asnumpy")
    assert grads["data"].dtype == np.float64 and grads["length"].dtype == np.int32


def test_symbolic_backward_checks_each_grad_req():
    from weft.test_utils import check_symbolic_backward
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    s = x * y
    xv, yv = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    # 'null' must leave the (random) gradient arrays as they were, whatever is expected.
    got = check_symbolic_backward(s, [xv, yv], [np.ones(2)], [np.zeros(2), np.zeros(2)], grad_req="null")
    assert np.abs(got["x"].asnumpy()).sum() > 0
    check_symbolic_backward(s, [xv, yv], [np.ones(2)], [yv, xv], grad_req=["add", "null"], rtol=1e-5)
    check_symbolic_backward(s, [xv, yv], [np.ones(2)], [yv, xv], grad_req={"x": "write", "y": "add"}, rtol=1e-5)
    with pytest.raises(AssertionError):
        check_symbolic_backward(s, [xv, yv], [np.ones(2)], [xv, yv], grad_req=["write", "null"], rtol=1e-5)
    with pytest.raises(ValueError, match="invalid grad_req 'often' for argument x"):
        check_symbolic_backward(s, [xv, yv], [np.ones(2)], [yv, xv], grad_req="often")


def test_simple_bind_takes_only_tuples_as_shapes():
    s = mx.sym.take(mx.sym.Variable("a"), mx.sym.Variable("indices"), axis=1, mode="clip")
    # MXNet's tests pass the operator's parameters along; only tuples are shapes.
    ex = s.simple_bind(mx.cpu(), a=(2, 3), indices=(4,), axis=1, mode="clip")
    assert ex.outputs[0].shape == (2, 4)


def test_gradient_arrays_of_another_dtype_receive_the_gradient_converted():
    x = mx.sym.Variable("x")
    xv = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    for req in ("write", "add"):
        g = mx.nd.array([1.0, 2.0, 3.0], dtype=np.float64)
        ex = mx.sym.exp(x).bind(mx.cpu(), {"x": mx.nd.array(xv)}, args_grad={"x": g}, grad_req=req)
        ex.forward(is_train=True)
        ex.backward([mx.nd.array([1.0, 2.0, 3.0])])
        start = np.array([1.0, 2.0, 3.0]) if req == "add" else 0
        assert g.dtype == np.float64
        np.testing.assert_allclose(g.asnumpy(), start + np.array([1.0, 2.0, 3.0]) * np.exp(xv), rtol=1e-6)


def test_debug_str_reports_planned_memory():
    x = mx.sym.Variable("x")
    h = x
    for i in range(8):
        h = mx.sym.tanh(h, name="t%d" % i)
    ex = mx.sym.sum(h).simple_bind(mx.cpu(), x=(512, 512))
    text = ex.debug_str()
    assert "Op:tanh, Name=t7" in text
    planned = int(text.split("Total ")[1].split(" MB allocated")[0])
    naive = int(text.split("Total ")[2].split(" MB without")[0])
    assert 0 < planned < naive


def test_batchnorm_training_gradients_match_the_imperative_ones():
    rng = np.random.RandomState(3)
    x = rng.randn(4, 3, 2, 2).astype(np.float32)
    gamma, beta = rng.rand(3).astype(np.float32) + 0.5, rng.randn(3).astype(np.float32)
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    loss = mx.sym.sum(mx.sym.square(bn))
    ex = loss.simple_bind(mx.cpu(), data=x.shape)
    ex.arg_dict["data"][:] = x
    ex.arg_dict["bn_gamma"][:] = gamma
    ex.arg_dict["bn_beta"][:] = beta
    ex.forward(is_train=True)
    ex.backward()
    # Reference: batch statistics, d sum(y^2) / dy = 2y, through the normalisation.
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    xhat = (x - mean) / np.sqrt(var + 1e-3)
    y = xhat * gamma.reshape(1, 3, 1, 1) + beta.reshape(1, 3, 1, 1)
    dy = 2 * y
    np.testing.assert_allclose(ex.grad_dict["bn_beta"].asnumpy(), dy.sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ex.grad_dict["bn_gamma"].asnumpy(), (dy * xhat).sum(axis=(0, 2, 3)), rtol=1e-4,
                               atol=1e-4)
    m = x.shape[0] * x.shape[2] * x.shape[3]
    g = gamma.reshape(1, 3, 1, 1) / np.sqrt(var + 1e-3)
    dx = g * (dy - dy.mean(axis=(0, 2, 3), keepdims=True) - xhat * (dy * xhat).sum(axis=(0, 2, 3), keepdims=True) / m)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), dx, rtol=1e-3, atol=1e-4)


def test_reshape_shares_parameters_and_reuses_memory():
    ex = net().simple_bind(mx.cpu(), data=(3, 4))
    ex.arg_dict["fc_weight"][:] = 0.5
    small = ex.reshape(data=(2, 4))
    assert small.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    assert small.arg_dict["data"].shape == (2, 4)
    small.arg_dict["data"][:] = 1.0
    # The smaller data array is a view of the original one's memory.
    np.testing.assert_allclose(ex.arg_dict["data"].asnumpy().reshape(-1)[:8], np.ones(8))
    out = small.forward(is_train=False)[0].asnumpy()
    h = np.tanh(np.ones((2, 4)) @ (0.5 * np.ones((5, 4))).T)
    np.testing.assert_allclose(out, (h * h).sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="allow_up_sizing"):
        ex.reshape(data=(6, 4))
    big = ex.reshape(data=(6, 4), allow_up_sizing=True)
    assert big.arg_dict["data"].shape == (6, 4)
    with pytest.raises(ValueError, match="partial_shaping"):
        ex.reshape(data=(3, 2))  # fc_weight would change shape too


def test_the_fused_operator_cannot_be_called_directly():
    with pytest.raises(WeftError, match="made by the executor's fusion pass"):
        mx.nd._internal._fused_pointwise(mx.nd.ones(3))
    with pytest.raises(WeftError, match="made by the executor's fusion pass"):
        mx.sym._internal._fused_pointwise(mx.sym.Variable("x"))


def test_folded_constant_keeps_its_memory_across_runs():
    # The constant (zeros + 1) comes after `a` dies in the order; sharing a's memory would
    # let every forward overwrite it with exp(x).
    x = mx.sym.var("x")
    a = mx.sym.exp(x)
    b = a * 2
    c = mx.sym.broadcast_like(mx.sym._internal._zeros(shape=(1, 4)) + 1, b)
    out = b + c
    xv = np.random.RandomState(0).rand(3, 4).astype(np.float32)
    exe = out.bind(mx.cpu(), {"x": mx.nd.array(xv)})
    for _ in range(2):
        got = exe.forward()[0].asnumpy()
        np.testing.assert_allclose(got, 2 * np.exp(xv) + 1, rtol=1e-6)


def test_monitor_callback_and_monitor():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc1")
    out = mx.sym.Activation(fc, act_type="relu", name="relu1")
    exe = out.simple_bind(mx.cpu(), x=(2, 4))
    rng = np.random.RandomState(0)
    for name in ("x", "fc1_weight", "fc1_bias"):
        exe.arg_dict[name][:] = rng.randn(*exe.arg_dict[name].shape).astype(np.float32)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy().copy()))
    exe.forward()
    x_, w, b = (exe.arg_dict[n].asnumpy() for n in ("x", "fc1_weight", "fc1_bias"))
    assert set(seen) == {"fc1_output", "relu1_output"}
    np.testing.assert_allclose(seen["fc1_output"], x_ @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seen["relu1_output"], np.maximum(x_ @ w.T + b, 0), rtol=1e-5, atol=1e-6)
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, 1), monitor_all=True)
    exe.forward()
    assert {"x", "fc1_weight", "fc1_bias", "fc1_output", "relu1_output"} <= set(seen)
    exe.set_monitor_callback(None)
    seen.clear()
    exe.forward()
    assert not seen

    mon = mx.monitor.Monitor(2, pattern="fc1.*", sort=True)
    mon.install(exe)
    results = []
    for _ in range(3):
        mon.tic()
        exe.forward()
        results.append(mon.toc())
    assert results[1] == []  # only every second batch is collected
    names = [name for _, name, _ in results[0]]
    assert names == sorted(["fc1_output", "fc1_weight", "fc1_bias"])
    stat = dict((name, float(text)) for _, name, text in results[0])
    np.testing.assert_allclose(stat["fc1_weight"], np.linalg.norm(w) / np.sqrt(w.size), rtol=1e-5)


def test_monitor_all_names_inputs_as_mxnet():
    # A variable input is reported by its name, then every input as "<node>_<input name>".
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(2, 2), num_filter=1, name="conv")
    out = mx.sym.concat(conv, conv, dim=0, name="cc")
    exe = out.simple_bind(mx.cpu(), data=(1, 1, 3, 3), grad_req="null")
    exe.arg_dict["data"][:] = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    exe.arg_dict["conv_weight"][:] = 1
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().copy())), monitor_all=True)
    exe.forward()
    names = [n for n, _ in seen]
    assert names == ["data", "conv_data", "conv_weight", "conv_weight", "conv_bias", "conv_bias", "conv_output",
                     "cc_arg0", "cc_arg1", "cc_output"]
    values = dict(seen)
    np.testing.assert_array_equal(values["conv_data"], exe.arg_dict["data"].asnumpy())
    np.testing.assert_array_equal(values["cc_arg1"], [[[[8, 12], [20, 24]]]])


def test_monitor_all_names_unlisted_inputs_by_position():
    # Operators that MXNet registers without input names (Activation, SoftmaxActivation, the
    # unary math family, reductions, reshape) have their inputs reported as "<node>_input<i>";
    # the others keep their argument names.
    data = mx.sym.Variable("data")
    act = mx.sym.Activation(data, act_type="relu", name="act")
    sm = mx.sym.softmax(act, name="sm")
    red = mx.sym.sum(mx.sym.exp(sm, name="ex"), axis=1, name="red")
    out = mx.sym.reshape(mx.sym.elemwise_add(red, red, name="add"), shape=(-1,), name="rs")
    exe = out.simple_bind(mx.cpu(), data=(2, 3), grad_req="null")
    x = np.array([[-1.0, 0.5, 2.0], [0.0, -3.0, 1.0]], dtype=np.float32)
    exe.arg_dict["data"][:] = x
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().copy())), monitor_all=True)
    exe.forward()
    inputs = [n for n, _ in seen if not n.endswith("_output") and n != "data"]
    assert inputs == ["act_input0", "sm_data", "ex_input0", "red_input0", "add_lhs", "add_rhs", "rs_input0"]
    values = dict(seen)
    np.testing.assert_array_equal(values["act_input0"], x)
    np.testing.assert_array_equal(values["sm_data"], np.maximum(x, 0))


def test_monitor_carries_over_to_a_reshaped_executor_and_a_new_input_shape():
    # A Variable declared with one shape runs with another given (Module.reshape), and the
    # reshaped executor keeps the monitor, as in MXNet.
    data = mx.sym.Variable("data", shape=(1, 2, 3, 3))
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=1, no_bias=True, name="conv")
    exe = conv.simple_bind(mx.cpu(), data=(1, 2, 3, 3), grad_req="null")
    exe.arg_dict["conv_weight"][:] = np.array([1.0, 2.0]).reshape(1, 2, 1, 1)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy().copy()))
    new = exe.reshape(allow_up_sizing=True, data=(1, 2, 3, 5))
    new.arg_dict["data"][:] = np.ones((1, 2, 3, 5), dtype=np.float32)
    new.forward()
    np.testing.assert_allclose(seen["conv_output"], np.full((1, 1, 3, 5), 3.0))
    mod = mx.mod.Module(conv, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, 2, 3, 3))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 2, 3, 5))]), is_train=False)
    assert mod.get_outputs()[0].shape == (1, 1, 3, 5)


def test_monitor_callback_arrays_wrap_through_ctypes_as_mxnet_scripts_do():
    # MXNet's monitor callbacks and calibration collectors re-wrap the array they are given:
    # NDArray(ctypes.cast(arr, NDArrayHandle), writable=False). The wrapper shares the
    # array's memory through a handle of its own, so both can be dropped in any order.
    import ctypes
    import gc
    from weft.base import NDArrayHandle
    from weft.ndarray import NDArray
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, no_bias=True, name="fc")
    exe = fc.simple_bind(mx.cpu(), data=(1, 3), grad_req="null")
    exe.arg_dict["fc_weight"][:] = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]])
    exe.arg_dict["data"][:] = np.array([[1.0, 1.0, 2.0]])
    seen = {}

    def collect(name, arr):
        handle = ctypes.cast(arr, NDArrayHandle)
        assert isinstance(handle, NDArrayHandle) and handle.value == arr.handle
        wrapped = NDArray(handle, writable=False)
        assert not wrapped.writable and wrapped.handle != arr.handle
        seen[mx.base.py_str(name)] = wrapped

    exe.set_monitor_callback(collect, monitor_all=True)
    exe.forward()
    mx.nd.waitall()
    gc.collect()  # the callback's own arrays are gone: the wrappers keep theirs
    np.testing.assert_allclose(seen["fc_output"].asnumpy(), [[9.0, 1.0]])
    np.testing.assert_allclose(seen["fc_data"].asnumpy(), [[1.0, 1.0, 2.0]])
    assert isinstance(7, NDArrayHandle) and not isinstance("7", NDArrayHandle)
    with pytest.raises(ValueError, match="the handle is NULL"):
        NDArray(NDArrayHandle())
    with pytest.raises(TypeError, match="expected an array handle"):
        NDArray("not a handle")


def test_monitor_sees_the_backward_too():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    out = mx.sym.Group([mx.sym.relu(x * 2, name="r"), y])  # y's gradient is a copy of its head gradient
    exe = out.simple_bind(mx.cpu(), x=(3,), y=(3,))
    exe.arg_dict["x"][:] = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    exe.arg_dict["y"][:] = np.array([2.0, 2.0, 2.0], dtype=np.float32)
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name), monitor_all=True)
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((3,)), mx.nd.full((3,), 5.0)])
    assert "r_output" in names and "y_grad" in names
    np.testing.assert_allclose(exe.grad_dict["y"].asnumpy(), [5.0, 5.0, 5.0])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [2.0, 0.0, 2.0])


def test_backward_skips_gradients_nobody_needs():
    # With no gradient wanted for the data, the convolution's backward is told not to
    # compute it, and the weight gradients are unchanged. The monitor reports the output
    # either way, as MXNet's (its value is unspecified when it is not written).
    x = mx.sym.var("data")
    y = mx.sym.Convolution(x, kernel=(3, 3), num_filter=2, name="c")
    rng = np.random.RandomState(0)
    data = rng.rand(1, 1, 5, 5).astype(np.float32)
    weight = rng.rand(2, 1, 3, 3).astype(np.float32)
    results = {}
    for req in ("null", "write"):
        exe = y.simple_bind(mx.cpu(), data=(1, 1, 5, 5), grad_req={"data": req, "c_weight": "write", "c_bias": "write"})
        exe.arg_dict["data"][:] = data
        exe.arg_dict["c_weight"][:] = weight
        names = []
        exe.set_monitor_callback(lambda name, arr: names.append(name))
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((1, 2, 3, 3))])
        results[req] = (names, exe.grad_dict["c_weight"].asnumpy())
    assert "c_backward_output0" in results["null"][0]
    assert "c_backward_output0" in results["write"][0]
    np.testing.assert_allclose(results["null"][1], results["write"][1])
    expect = np.stack([sum(data[0, 0, i:i + 3, j:j + 3] for i in range(3) for j in range(3))] * 2)[:, None]
    np.testing.assert_allclose(results["null"][1], expect, rtol=1e-5)


# ---------------------------------------------------------------- group2ctx, AttrScope
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet", "upstream")


def staged_mlp():
    """MXNet's test_ctx_group network: two ctx_groups, BatchNorm state in the second."""
    with mx.AttrScope(ctx_group="stage1"):
        data = mx.sym.Variable("data", lr_mult=0.2)
        fc1_weight = mx.sym.Variable("fc1_weight", lr_mult=1.2)
        fc1 = mx.sym.FullyConnected(data=data, weight=fc1_weight, name="fc1", num_hidden=128, attr={"wd_mult": "0.3"})
        act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    with mx.AttrScope(ctx_group="stage2"):
        fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=64, attr={"lr_mult": "0.01"})
        act2 = mx.sym.Activation(data=fc2, name="relu2", act_type="relu")
        fc3 = mx.sym.FullyConnected(data=act2, name="fc3", num_hidden=10)
        fc3 = mx.sym.BatchNorm(fc3, name="batchnorm0")
        mlp = mx.sym.SoftmaxOutput(data=fc3, name="softmax")
    return act1, mlp


def fill_same(executors, rng, label_classes=10):
    for name in executors[0].arg_dict:
        shape = executors[0].arg_dict[name].shape
        v = rng.randint(0, label_classes, shape).astype(np.float32) if name.endswith("label") else \
            rng.randn(*shape).astype(np.float32)
        for ex in executors:
            ex.arg_dict[name][:] = v


def run(ex, steps=1):
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
    return [o.asnumpy() for o in ex.outputs], {n: g.asnumpy() for n, g in ex.grad_dict.items()}, \
        {n: a.asnumpy() for n, a in ex.aux_dict.items()}


def assert_same_run(a, b):
    for x, y in zip(a[0], b[0]):
        assert np.array_equal(x, y)
    for part in (1, 2):
        assert a[part].keys() == b[part].keys()
        for k in a[part]:
            assert np.array_equal(a[part][k], b[part][k]), k


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_group2ctx_places_arrays_and_matches_one_context(grad_req):
    act1, mlp = staged_mlp()
    stage1 = set(act1.list_arguments())
    group2ctx = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    ex = mlp.simple_bind(mx.cpu(0), group2ctx=group2ctx, grad_req=grad_req, data=(4, 20))
    for name in mlp.list_arguments():
        want = group2ctx["stage1" if name in stage1 else "stage2"]
        assert ex.arg_dict[name].context == want, name
        assert ex.grad_dict[name].context == want, name
    for arr in ex.aux_arrays:
        assert arr.context == mx.cpu(2)
    assert ex.outputs[0].context == mx.cpu(2)
    one = mlp.simple_bind(mx.cpu(0), grad_req=grad_req, data=(4, 20))
    fill_same([ex, one], np.random.RandomState(3))
    got, want = run(ex, steps=2), run(one, steps=2)
    assert_same_run(got, want)
    assert np.abs(got[1]["fc1_weight"]).sum() > 0  # gradients crossed back to stage1


def test_group2ctx_debug_str_shows_placement_and_copies():
    _, mlp = staged_mlp()
    ex = mlp.simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1), "stage2": mx.cpu(2)}, data=(4, 20))
    text = ex.debug_str()
    assert "Placement:\n\tcpu(1): fc1 relu1 " in text
    assert "\tcpu(2): relu1_output_copy_to_cpu(2) fc2 relu2 fc3 batchnorm0 softmax " in text
    assert "Op:_CrossDeviceCopy, Name=relu1_output_copy_to_cpu(2)" in text
    assert "relu1_output_copy_to_cpu(2): relu1_output from cpu(1) to cpu(2) (forward)" in text
    assert "from cpu(2) to cpu(1) (backward)" in text
    assert text.rstrip().endswith("MB without memory sharing")
    # One context: no placement section, no copies.
    plain = mlp.simple_bind(mx.cpu(0), data=(4, 20)).debug_str()
    assert "Placement:" not in plain and "_CrossDeviceCopy" not in plain


def test_group2ctx_with_bind_and_ungrouped_nodes():
    # "scale" has no group: it runs where its input (stage a) is; the loss reads both.
    with mx.AttrScope(ctx_group="a"):
        x = mx.sym.Variable("x")
        ya = mx.sym.exp(x, name="ya")
    scale = mx.sym.elemwise_mul(ya, ya, name="scale")
    with mx.AttrScope(ctx_group="b"):
        w = mx.sym.Variable("w")
        yb = mx.sym.elemwise_mul(scale, w, name="yb")
    loss = mx.sym.sum(yb, name="loss")
    rng = np.random.RandomState(0)
    xv, wv = rng.randn(3, 4).astype(np.float32), rng.randn(3, 4).astype(np.float32)
    ctxs = {"a": mx.cpu(1), "b": mx.cpu(2)}
    args = {"x": mx.nd.array(xv, ctx=mx.cpu(1)), "w": mx.nd.array(wv, ctx=mx.cpu(2))}
    grads = {"x": mx.nd.zeros((3, 4), ctx=mx.cpu(1)), "w": mx.nd.zeros((3, 4), ctx=mx.cpu(2))}
    ex = loss.bind(mx.cpu(0), args, args_grad=grads, group2ctx=ctxs)
    assert ex.arg_dict["x"] is args["x"] and ex.grad_dict["w"] is grads["w"]
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), (np.exp(2 * xv) * wv).sum(), rtol=1e-5)
    np.testing.assert_allclose(grads["x"].asnumpy(), 2 * np.exp(2 * xv) * wv, rtol=1e-5)
    np.testing.assert_allclose(grads["w"].asnumpy(), np.exp(2 * xv), rtol=1e-5)
    assert "\tcpu(1): ya scale" in ex.debug_str()


def test_group2ctx_errors():
    _, mlp = staged_mlp()
    with pytest.raises(ValueError, match="node 'fc2' is in context group 'stage2', which group2ctx does not map"):
        mlp.simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1)}, data=(4, 20))
    # An operator's state cannot be copied: BatchNorm on cpu(2) with its moving mean elsewhere.
    ex = mlp.simple_bind(mx.cpu(0), data=(4, 20))
    aux = dict(ex.aux_dict)
    aux["batchnorm0_moving_mean"] = mx.nd.zeros(aux["batchnorm0_moving_mean"].shape, ctx=mx.cpu(0))
    with pytest.raises(ValueError, match="'batchnorm0' runs on cpu\\(2\\) but updates 'batchnorm0_moving_mean'"):
        mlp.bind(mx.cpu(0), ex.arg_dict, aux_states=aux, group2ctx={"stage1": mx.cpu(1), "stage2": mx.cpu(2)})


def test_attr_scope_nests_and_saves_ctx_group_as_mxnet():
    with mx.AttrScope(ctx_group="dev1", __mark__="m"):
        a = mx.sym.Variable("a")
        with mx.AttrScope(ctx_group="dev2"):
            b = mx.sym.Variable("b", attr={"__mark__": "own"})
            fc = mx.sym.FullyConnected(b, num_hidden=2, name="fc")
        c = a + mx.sym.Variable("c")
    d = mx.sym.Variable("d")
    attrs = mx.sym.Group([c, fc, d]).attr_dict()
    # MXNet lists a hidden key under both names.
    assert attrs["a"] == {"__ctx_group__": "dev1", "ctx_group": "dev1", "__mark__": "m"}
    assert attrs["b"] == {"__ctx_group__": "dev2", "ctx_group": "dev2", "__mark__": "own"}
    assert attrs["fc"]["__ctx_group__"] == "dev2" and attrs["fc_weight"]["__ctx_group__"] == "dev2"
    assert attrs[c.name]["__ctx_group__"] == "dev1"
    assert "d" not in attrs
    assert a.attr("ctx_group") == "dev1" and a.attr("__ctx_group__") == "dev1"
    nodes = {n["name"]: n for n in json.loads(fc.tojson())["nodes"]}
    assert nodes["fc"]["attrs"]["__ctx_group__"] == "dev2"
    assert mx.attribute.current().get(None) == {}
    with pytest.raises(ValueError, match="strings"):
        mx.AttrScope(ctx_group=1)


def test_legacy_0_8_network_runs_on_its_groups():
    """MXNet's test_load_000800: the 0.8 file and the same network built in code carry the
    same attributes and give the same results bound with group2ctx."""
    loaded = mx.sym.load(os.path.join(FIXTURES, "save_000800.json"))
    _, built = staged_mlp_0800()
    want = built.attr_dict()
    got = loaded.attr_dict()
    for node, kv in want.items():
        for k, v in kv.items():
            if k.startswith("__"):
                assert got[node][k] == v, (node, k)
    group2ctx = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    exes = [s.simple_bind(mx.cpu(0), group2ctx=group2ctx, data=(1, 200)) for s in (loaded, built)]
    fill_same(exes, np.random.RandomState(1))
    assert_same_run(run(exes[0]), run(exes[1]))


def staged_mlp_0800():
    with mx.AttrScope(ctx_group="stage1"):
        data = mx.sym.Variable("data", lr_mult=0.2)
        weight = mx.sym.Variable("fc1_weight", lr_mult=1.2)
        fc1 = mx.sym.FullyConnected(data=data, weight=weight, name="fc1", num_hidden=128, wd_mult=0.3)
        act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    with mx.AttrScope(ctx_group="stage2"):
        fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=64, lr_mult=0.01)
        act2 = mx.sym.Activation(data=fc2, name="relu2", act_type="relu")
        fc3 = mx.sym.FullyConnected(data=act2, name="fc3", num_hidden=10)
        fc3 = mx.sym.BatchNorm(fc3, name="batchnorm0")
        mlp = mx.sym.SoftmaxOutput(data=fc3, name="softmax")
    return act1, mlp


def test_simple_bind_and_reshape_through_the_c_api():
    s = net()
    ex = s.simple_bind(mx.cpu(), grad_req={"fc_weight": "add"}, type_dict={"data": np.float64}, data=(3, 4))
    assert ex.arg_dict["data"].dtype == np.float64 and ex.arg_dict["fc_weight"].dtype == np.float64
    assert list(ex.grad_dict) == ["fc_weight"]
    assert not ex.arg_dict["fc_bias"].asnumpy().any()
    ex2 = s.simple_bind(mx.cpu(), grad_req=["null", "write", "null"], data=(3, 4))
    assert list(ex2.grad_dict) == ["fc_weight"]
    with pytest.raises(ValueError, match="'label' \\(given a shape\\) is not an input"):
        s.simple_bind(mx.cpu(), data=(3, 4), label=(3,))
    with pytest.raises(ValueError, match="expected 3 grad_req values"):
        s.simple_bind(mx.cpu(), grad_req=["write"], data=(3, 4))
    with pytest.raises(ValueError, match="is not an input"):
        ex.reshape(label=(2,))
    # Reshape keeps group2ctx placement.
    _, mlp = staged_mlp()
    staged = mlp.simple_bind(mx.cpu(0), group2ctx={"stage1": mx.cpu(1), "stage2": mx.cpu(2)}, data=(4, 20))
    small = staged.reshape(data=(2, 20), softmax_label=(2,))
    assert small.arg_dict["fc1_weight"] is staged.arg_dict["fc1_weight"]
    assert small.arg_dict["data"].context == mx.cpu(1) and small.outputs[0].context == mx.cpu(2)
    assert "_CrossDeviceCopy" in small.debug_str()


def test_monitor_sees_every_node_of_a_fused_chain_and_of_an_inference_region():
    # relu then sigmoid fuse into one pointwise step, and a convolution with its relu into one
    # oneDNN region at inference; with a monitor each node reports, as MXNet's (which fuses
    # neither on the host) do, and the values are each node's.
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    y = mx.sym.sigmoid(mx.sym.relu(fc, name="r"), name="s")
    rng = np.random.RandomState(8)
    xv, wv, bv = rng.uniform(-1, 1, (2, 4)), rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3,))
    exe = y.bind(mx.cpu(), {"x": mx.nd.array(xv), "fc_weight": mx.nd.array(wv), "fc_bias": mx.nd.array(bv)})
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().copy())), monitor_all=True)
    out = exe.forward()[0].asnumpy()
    assert [n for n, _ in seen] == ["x", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output",
                                    "r_input0", "r_output", "s_input0", "s_output"]
    pre = xv.dot(wv.T) + bv
    np.testing.assert_allclose(seen[8][1], np.maximum(pre, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seen[10][1], out, rtol=1e-6)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-np.maximum(pre, 0))), rtol=1e-5)
    # Without the monitor the chain runs fused again, with the same result.
    exe.set_monitor_callback(None)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), out, rtol=1e-6)

    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv")
    net = mx.sym.Activation(conv, act_type="relu", name="act")
    dv = rng.uniform(-1, 1, (2, 8, 6, 6)).astype(np.float32)
    exe = net.simple_bind(mx.cpu(), data=(2, 8, 6, 6), grad_req="null")
    exe.arg_dict["data"][:] = dv
    exe.arg_dict["conv_weight"][:] = rng.uniform(-0.3, 0.3, (8, 8, 3, 3))
    exe.arg_dict["conv_bias"][:] = rng.uniform(-0.3, 0.3, (8,))
    fused = exe.forward(is_train=False)[0].asnumpy()
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(name))
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(), fused, rtol=1e-4, atol=1e-5)
    assert names == ["conv_output", "act_output"]


def test_monitor_all_names_inputs_of_operators_mxnet_lists_none_by_position():
    # MXNet registers _plus_scalar and the backward operators (_backward_FullyConnected here)
    # without input names: their inputs are "<node>_input<i>"; FullyConnected lists its own.
    x = mx.sym.var("x")
    y = mx.sym._internal._plus_scalar(mx.sym.FullyConnected(x, num_hidden=2, name="fc"), scalar=1, name="add")
    rng = np.random.RandomState(9)
    xv, wv, bv = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (2, 4)), rng.uniform(-1, 1, (2,))
    exe = y.bind(mx.cpu(), {"x": mx.nd.array(xv), "fc_weight": mx.nd.array(wv), "fc_bias": mx.nd.array(bv)},
                 args_grad={"x": mx.nd.zeros((3, 4)), "fc_weight": mx.nd.zeros((2, 4)), "fc_bias": mx.nd.zeros((2,))})
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().copy())), monitor_all=True)
    exe.forward(is_train=True)
    g = rng.uniform(-1, 1, (3, 2))
    exe.backward(mx.nd.array(g))
    names = [n for n, _ in seen]
    assert names[7:9] == ["add_input0", "add_output"]
    backward = [n for n in names if n.startswith("fc_backward_input")]
    assert backward == ["fc_backward_input0", "fc_backward_input1", "fc_backward_input2", "fc_backward_input3"]
    values = dict(seen)
    np.testing.assert_allclose(values["fc_backward_input0"], g, rtol=1e-6)  # the output gradient
    np.testing.assert_allclose(values["fc_backward_input1"], xv, rtol=1e-6)  # the data
    np.testing.assert_allclose(exe.grad_dict["fc_bias"].asnumpy(), g.sum(axis=0), rtol=1e-5)

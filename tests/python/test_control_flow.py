"""Control flow of MXNet 1.9 (contrib.foreach, while_loop, cond): imperative loops recorded
by autograd, and inside Gluon blocks."""
import json

import numpy as np
import pytest

import weft as mx
from weft import autograd
from weft.test_utils import check_numeric_gradient


def _rnn_params(rng, n_in=3, n_hid=4):
    return [mx.nd.array(a) for a in (rng.randn(n_in, n_hid) * 0.5, rng.randn(n_hid, n_hid) * 0.5,
                                     rng.randn(n_hid) * 0.1)]


def _rnn_step(wx, wh, bias):
    def step(x_t, states):
        h = mx.nd.tanh(mx.nd.dot(x_t, wx) + mx.nd.dot(states[0], wh) + bias)
        return h * 2, [h]
    return step


def _run(unroll, seq, h0, params):
    for p in params + [seq]:
        p.attach_grad()
    with autograd.record():
        outs, states = unroll(seq, h0, params)
        loss = (outs * outs).sum() + (states[0] * 3).sum()
    loss.backward()
    return outs.asnumpy(), states[0].asnumpy(), [p.grad.asnumpy() for p in params + [seq]]


def test_foreach_rnn_matches_python_loop():
    rng = np.random.RandomState(0)
    seq_np, h0 = rng.randn(5, 2, 3), mx.nd.array(rng.randn(2, 4))
    params = _rnn_params(rng)

    def with_foreach(seq, h, ps):
        return mx.nd.contrib.foreach(_rnn_step(*ps), seq, [h])

    def with_loop(seq, h, ps):
        step, states, outs = _rnn_step(*ps), [h], []
        for t in range(seq.shape[0]):
            out, states = step(seq[t], states)
            outs.append(out)
        return mx.nd.stack(*outs, axis=0), states

    got = _run(with_foreach, mx.nd.array(seq_np), h0, params)
    want = _run(with_loop, mx.nd.array(seq_np), h0, [p.copy() for p in params])
    assert got[0].shape == (5, 2, 4)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    for g, w in zip(got[2], want[2]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)

    # the same against numpy
    wx, wh, bias = (p.asnumpy() for p in params)
    h = h0.asnumpy()
    for t in range(5):
        h = np.tanh(seq_np[t].dot(wx) + h.dot(wh) + bias)
        np.testing.assert_allclose(got[0][t], 2 * h, rtol=1e-5, atol=1e-6)


def test_foreach_numeric_gradient():
    # d/dx of sum(foreach(out = x_t * s, s = s * x_t)) by central differences in float64
    rng = np.random.RandomState(1)
    xs = rng.uniform(0.5, 1.5, (4, 3))

    def f(x_np, grad=False):
        x = mx.nd.array(x_np, dtype="float64")
        x.attach_grad()
        with autograd.record():
            outs, s = mx.nd.contrib.foreach(lambda d, st: (d * st, st * d), x, mx.nd.ones((3,), dtype="float64"))
            y = outs.sum() + s.sum()
        y.backward()
        return y.asscalar(), x.grad.asnumpy()

    _, analytic = f(xs)
    eps, numeric = 1e-6, np.zeros_like(xs)
    for i in np.ndindex(xs.shape):
        hi, lo = xs.copy(), xs.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (f(hi)[0] - f(lo)[0]) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


def test_foreach_lists_and_nesting():
    a, c = mx.nd.arange(6).reshape((3, 2)), mx.nd.arange(3)
    outs, states = mx.nd.contrib.foreach(lambda d, st: ([d[0] * 2, [d[1] + st[0]]], [st[0] + d[1]]),
                                         [a, c], [mx.nd.zeros((1,))])
    assert isinstance(outs, list) and isinstance(outs[1], list)
    np.testing.assert_array_equal(outs[0].asnumpy(), a.asnumpy() * 2)
    np.testing.assert_array_equal(outs[1][0].asnumpy().ravel(), [0, 1, 3])
    np.testing.assert_array_equal(states[0].asnumpy(), [3])
    with pytest.raises(ValueError, match="NDArray"):
        mx.nd.contrib.foreach(lambda d, s: (d, s), [a, 3], [])


def test_while_loop_pads_to_max_iterations():
    cond = lambda i, s: i <= 5
    func = lambda i, s: ([i + s], [i + 1, s + i])
    loop_vars = (mx.nd.array([0], dtype="int64"), mx.nd.array([1], dtype="int64"))
    outputs, states = mx.nd.contrib.while_loop(cond, func, loop_vars, max_iterations=10)
    assert outputs[0].shape == (10, 1) and outputs[0].dtype == np.int64
    np.testing.assert_array_equal(outputs[0].asnumpy()[:6, 0], [1, 2, 4, 7, 11, 16])
    np.testing.assert_array_equal(states[0].asnumpy(), [6])
    np.testing.assert_array_equal(states[1].asnumpy(), [16])
    # max_iterations stops the loop before cond does
    outputs, states = mx.nd.contrib.while_loop(cond, func, loop_vars, max_iterations=3)
    assert outputs[0].shape == (3, 1)
    np.testing.assert_array_equal(states[0].asnumpy(), [3])


def test_while_loop_gradient_and_errors():
    x = mx.nd.array([1.5])
    x.attach_grad()
    with autograd.record():
        outs, (i, y) = mx.nd.contrib.while_loop(lambda i, y: i < 3, lambda i, y: (y * 2, [i + 1, y * x]),
                                                [mx.nd.array([0]), mx.nd.array([1.0])], max_iterations=5)
        loss = y + outs.sum()
    loss.backward()
    # y = x^3, outs = 2 * (1 + x + x^2) then two zero rows
    assert outs.shape == (5, 1)
    np.testing.assert_allclose(outs.asnumpy()[3:], 0)
    np.testing.assert_allclose(x.grad.asnumpy(), [3 * 1.5 ** 2 + 2 * (1 + 2 * 1.5)], rtol=1e-6)
    with pytest.raises(ValueError, match="max_iterations"):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [mx.nd.zeros((1,))])
    with pytest.raises(ValueError, match="loop variables"):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1, i]), [mx.nd.zeros((1,))],
                                 max_iterations=4)


@pytest.mark.parametrize("a_val,expect", [(1.0, (1 + 5) * (2 + 5)), (3.0, (3 - 5) * (2 - 5))])
def test_cond_scalar_condition(a_val, expect):
    a, b = mx.nd.array([a_val]), mx.nd.array([2.0])
    a.attach_grad()
    with autograd.record():
        out = mx.nd.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), [expect])
    np.testing.assert_allclose(a.grad.asnumpy(), [2 + 5 if a_val * 2 < 5 else 2 - 5])


class _ForeachRNN(mx.gluon.HybridBlock):
    def __init__(self, hidden, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = mx.gluon.rnn.RNNCell(hidden)

    def hybrid_forward(self, F, seq, h0):
        outs, states = F.contrib.foreach(lambda x_t, st: self.cell(x_t, st), seq, [h0])
        return outs, states[0]


@pytest.mark.parametrize("hybridize", [False, True])
def test_foreach_in_gluon_block_matches_unroll(hybridize):
    rng = np.random.RandomState(2)
    seq, h0 = mx.nd.array(rng.randn(4, 2, 3)), mx.nd.array(rng.randn(2, 5))
    net = _ForeachRNN(5)
    net.initialize()
    if hybridize:
        net.hybridize()
    with autograd.record():
        outs, h = net(seq, h0)
        loss = outs.sum() + h.sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()}
    ref_outs, ref_states = net.cell.unroll(4, seq, begin_state=[h0], layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), ref_outs.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), ref_states[0].asnumpy(), rtol=1e-6)
    with autograd.record():
        ref_outs, ref_states = net.cell.unroll(4, seq, begin_state=[h0], layout="TNC", merge_outputs=True)
        (ref_outs.sum() + ref_states[0].sum()).backward()
    for k, p in net.collect_params().items():
        np.testing.assert_allclose(grads[k], p.grad().asnumpy(), rtol=1e-5, atol=1e-6)


def _sym_rnn():
    seq, h0, wx, wh = (mx.sym.var(n) for n in ("seq", "h0", "wx", "wh"))

    def step(x_t, states):
        h = mx.sym.tanh(mx.sym.dot(x_t, wx) + mx.sym.dot(states[0], wh))
        return h * 2, [h]
    outs, states = mx.sym.contrib.foreach(step, seq, [h0])
    return mx.sym.Group([outs, states[0]])


def _rnn_values(rng):
    return {"seq": rng.randn(5, 2, 3), "h0": rng.randn(2, 4), "wx": rng.randn(3, 4) * 0.5,
            "wh": rng.randn(4, 4) * 0.5}


def _imperative_rnn(vals, heads):
    arrs = {k: mx.nd.array(v) for k, v in vals.items()}
    for a in arrs.values():
        a.attach_grad()
    with autograd.record():
        outs, states = mx.nd.contrib.foreach(
            lambda x_t, st: (lambda h: (h * 2, [h]))(mx.nd.tanh(mx.nd.dot(x_t, arrs["wx"]) +
                                                                mx.nd.dot(st[0], arrs["wh"]))),
            arrs["seq"], [arrs["h0"]])
    autograd.backward([outs, states[0]], [mx.nd.array(h) for h in heads])
    return [outs.asnumpy(), states[0].asnumpy()], {k: a.grad.asnumpy() for k, a in arrs.items()}


def test_symbolic_foreach_matches_imperative():
    sym = _sym_rnn()
    assert sym.list_arguments() == ["seq", "h0", "wx", "wh"]
    _, out_shapes, _ = sym.infer_shape(seq=(5, 2, 3), h0=(2, 4), wx=(3, 4), wh=(4, 4))
    assert out_shapes == [(5, 2, 4), (2, 4)]
    rng = np.random.RandomState(4)
    vals = _rnn_values(rng)
    heads = [rng.randn(5, 2, 4), rng.randn(2, 4)]
    args = {k: mx.nd.array(v) for k, v in vals.items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in vals.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.array(h) for h in heads])
    want_outs, want_grads = _imperative_rnn(vals, heads)
    for got, want in zip(outs, want_outs):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    for k in vals:
        np.testing.assert_allclose(grads[k].asnumpy(), want_grads[k], rtol=1e-5, atol=1e-6)


def test_symbolic_foreach_json_round_trip():
    sym = _sym_rnn()
    text = sym.tojson()
    node = [n for n in json.loads(text)["nodes"] if n["op"] != "null"][-1]
    # MXNet's form: a _foreach node whose subgraph is the body, inputs located by attributes
    assert node["op"] == "_foreach" and len(node["subgraphs"]) == 1
    assert node["attrs"]["num_out_data"] == "1" and node["attrs"]["num_outputs"] == "2"
    assert node["attrs"]["num_args"] == "5" and len(node["inputs"]) == 4
    body_args = [node["subgraphs"][0]["nodes"][i]["name"] for i in node["subgraphs"][0]["arg_nodes"]]
    locs = [int(v) for key in ("in_data_locs", "in_state_locs", "remain_locs")
            for v in node["attrs"][key].strip("[]").split(",")]
    assert sorted(locs) == list(range(len(body_args))) and body_args[locs[2]] == "wx"
    loaded = mx.sym.load_json(text)
    again = loaded.tojson()
    assert mx.sym.load_json(again).tojson() == again
    vals = _rnn_values(np.random.RandomState(5))
    run = lambda s: [o.asnumpy() for o in s.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in vals.items()}).forward()]
    for a, b in zip(run(sym), run(loaded)):
        np.testing.assert_array_equal(a, b)


def test_symbolic_foreach_numeric_gradient():
    data, s0, w = mx.sym.var("data"), mx.sym.var("s0"), mx.sym.var("w")
    outs, states = mx.sym.contrib.foreach(lambda d, st: (mx.sym.sin(d * st[0]) * w, [st[0] * d + w]),
                                          data, [s0])
    rng = np.random.RandomState(6)
    check_numeric_gradient(mx.sym.Group([outs, states[0]]),
                           {"data": rng.uniform(0.5, 1, (3, 2)), "s0": rng.uniform(0.5, 1, (2,)),
                            "w": rng.uniform(0.5, 1, (2,))},
                           numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64)


def _bind_run(sym, vals, heads, dtype="float32"):
    args = {k: mx.nd.array(v, dtype=dtype) for k, v in vals.items()}
    grads = {k: mx.nd.zeros(np.shape(v), dtype=dtype) for k, v in vals.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.array(h, dtype=dtype) for h in heads])
    return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in grads.items()}


def _while_sym():
    i, s, x = mx.sym.var("i"), mx.sym.var("s"), mx.sym.var("x")
    outs, (fi, fs) = mx.sym.contrib.while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s * x]),
                                               [i, s], max_iterations=8)
    return mx.sym.Group([outs[0], fi, fs])


def test_symbolic_while_loop_pads_and_matches_imperative():
    sym = _while_sym()
    assert sym.infer_shape(i=(1,), s=(1,), x=(1,))[1] == [(8, 1), (1,), (1,)]
    vals = {"i": [0.0], "s": [1.0], "x": [1.1]}
    rng = np.random.RandomState(7)
    heads = [rng.randn(8, 1), rng.randn(1), rng.randn(1)]
    outs, grads = _bind_run(sym, vals, heads)
    np.testing.assert_allclose(outs[0][:6, 0], [t + 1.1 ** t for t in range(6)], rtol=1e-5)
    np.testing.assert_array_equal(outs[0][6:], 0)
    np.testing.assert_allclose(outs[1], [6])
    np.testing.assert_allclose(outs[2], [1.1 ** 6], rtol=1e-5)

    arrs = {k: mx.nd.array(v) for k, v in vals.items()}
    for a in arrs.values():
        a.attach_grad()
    with autograd.record():
        o, (fi, fs) = mx.nd.contrib.while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s * arrs["x"]]),
                                               [arrs["i"], arrs["s"]], max_iterations=8)
    autograd.backward([o[0], fi, fs], [mx.nd.array(h) for h in heads])
    np.testing.assert_allclose(outs[0], o[0].asnumpy(), rtol=1e-6)
    for k in vals:
        np.testing.assert_allclose(grads[k], arrs[k].grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_symbolic_while_loop_numeric_gradient_and_json():
    sym = _while_sym()
    check_numeric_gradient(sym, {"i": np.array([0.0]), "s": np.array([0.7]), "x": np.array([1.3])},
                           grad_nodes=["s", "x"], numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64)
    loaded = mx.sym.load_json(sym.tojson())
    feed = {"i": mx.nd.array([2.0]), "s": mx.nd.array([1.5]), "x": mx.nd.array([0.5])}
    for a, b in zip(sym.eval(**feed), loaded.eval(**feed)):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    with pytest.raises(ValueError, match="max_iterations"):
        mx.sym.contrib.while_loop(lambda v: v < 1, lambda v: (None, [v + 1]), [mx.sym.var("v")])


@pytest.mark.parametrize("a_val", [1.0, 3.0])
def test_symbolic_cond_runs_one_branch(a_val):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    outs, grads = _bind_run(sym, {"a": [a_val], "b": [2.0]}, [[1.0]])
    small = a_val * 2 < 5
    np.testing.assert_allclose(outs[0], [(a_val + 5) * 7 if small else (a_val - 5) * -3])
    np.testing.assert_allclose(grads["a"], [7 if small else -3])
    np.testing.assert_allclose(grads["b"], [a_val + 5 if small else a_val - 5])
    loaded = mx.sym.load_json(sym.tojson())
    np.testing.assert_allclose(loaded.eval(a=mx.nd.array([a_val]), b=mx.nd.array([2.0]))[0].asnumpy(), outs[0])
    check_numeric_gradient(sym, {"a": np.array([a_val]), "b": np.array([2.0])}, numeric_eps=1e-6, rtol=1e-5,
                           atol=1e-7, dtype=np.float64)


def _mxnet_foreach_json():
    # A graph as MXNet 1.9 writes `foreach(lambda x, st: (x * w + st[0], [st[0] + x]), d, [s])`,
    # with the body's inputs in another order than the node's: the locations count the body's
    # list_inputs, depth first from its outputs (data, w, state), not its arg_nodes order.
    body = {"nodes": [{"op": "null", "name": "w_in", "inputs": []},
                      {"op": "null", "name": "s_in", "inputs": []},
                      {"op": "null", "name": "d_in", "inputs": []},
                      {"op": "elemwise_mul", "name": "mul0", "inputs": [[2, 0, 0], [0, 0, 0]]},
                      {"op": "elemwise_add", "name": "add0", "inputs": [[3, 0, 0], [1, 0, 0]]},
                      {"op": "elemwise_add", "name": "add1", "inputs": [[1, 0, 0], [2, 0, 0]]}],
            "arg_nodes": [0, 1, 2], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6], "heads": [[4, 0, 0], [5, 0, 0]]}
    graph = {"nodes": [{"op": "null", "name": "d", "inputs": []}, {"op": "null", "name": "s", "inputs": []},
                       {"op": "null", "name": "w", "inputs": []},
                       {"op": "_foreach", "name": "foreach0",
                        "attrs": {"num_args": "4", "num_outputs": "2", "num_out_data": "1", "in_data_locs": "[0]",
                                  "in_state_locs": "[2]", "remain_locs": "[1]"},
                        "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]], "subgraphs": [body]}],
             "arg_nodes": [0, 1, 2], "node_row_ptr": [0, 1, 2, 3, 5], "heads": [[3, 0, 0], [3, 1, 0]],
             "attrs": {"mxnet_version": ["int", 10901]}}
    return json.dumps(graph)


def test_load_mxnet_foreach_json(tmp_path):
    path = tmp_path / "foreach-symbol.json"
    path.write_text(_mxnet_foreach_json())
    sym = mx.sym.load(str(path))
    assert sym.list_arguments() == ["d", "s", "w"]
    rng = np.random.RandomState(8)
    d, s0, w = rng.rand(4, 3), rng.rand(3), rng.rand(3)
    outs, grads = _bind_run(sym, {"d": d, "s": s0, "w": w}, [np.ones((4, 3)), np.ones(3)])
    want, state = [], s0
    for t in range(4):
        want.append(d[t] * w + state)
        state = state + d[t]
    np.testing.assert_allclose(outs[0], np.stack(want), rtol=1e-6)
    np.testing.assert_allclose(outs[1], state, rtol=1e-6)
    np.testing.assert_allclose(grads["w"], d.sum(axis=0), rtol=1e-6)
    # saved again in MXNet's form, with the same input locations
    sym.save(str(tmp_path / "again.json"))
    node = json.loads((tmp_path / "again.json").read_text())["nodes"][3]
    assert node["op"] == "_foreach" and "subgraphs" in node
    np.testing.assert_allclose(_bind_run(mx.sym.load(str(tmp_path / "again.json")), {"d": d, "s": s0, "w": w},
                                         [np.ones((4, 3)), np.ones(3)])[0][0], outs[0])


def test_while_loop_and_cond_json_in_mxnet_form():
    text = _while_sym().tojson()
    node = [n for n in json.loads(text)["nodes"] if n["op"] != "null"][-1]
    assert node["op"] == "_while_loop" and len(node["subgraphs"]) == 2
    assert node["attrs"]["max_iterations"] == "8" and node["attrs"]["num_args"] == "5"
    a, b = mx.sym.var("a"), mx.sym.var("b")
    c = mx.sym.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    cnode = json.loads(c.tojson())["nodes"][-1]
    # as in MXNet, pred (computed outside) is an input of the node: a, b and a * b < 5
    assert cnode["op"] == "_cond" and len(cnode["subgraphs"]) == 3 and cnode["attrs"]["num_args"] == "6"
    loaded = mx.sym.load_json(text)
    feed = {"i": mx.nd.array([1.0]), "s": mx.nd.array([2.0]), "x": mx.nd.array([0.5])}
    for got, want in zip(loaded.eval(**feed), _while_sym().eval(**feed)):
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    bad = json.loads(_mxnet_foreach_json())
    bad["nodes"][3]["op"] = "elemwise_add"
    bad["nodes"][3]["inputs"] = bad["nodes"][3]["inputs"][:2]
    bad["nodes"][3]["attrs"] = {}
    with pytest.raises(mx.base.MXNetError, match="subgraphs of operator 'elemwise_add' are not supported"):
        mx.sym.load_json(json.dumps(bad))
    bad = json.loads(_mxnet_foreach_json())
    del bad["nodes"][3]["subgraphs"]
    with pytest.raises(mx.base.MXNetError, match="operator '_foreach' needs its 'subgraphs' field"):
        mx.sym.load_json(json.dumps(bad))
    bad = json.loads(_mxnet_foreach_json())
    bad["nodes"][3]["attrs"]["in_state_locs"] = "[1]"
    with pytest.raises(mx.base.MXNetError, match="in_data_locs \\+ in_state_locs \\+ remain_locs holds 1 twice"):
        mx.sym.load_json(json.dumps(bad)).infer_shape(d=(4, 3), s=(3,), w=(3,))


def test_nested_foreach_through_json():
    d, w, s0 = mx.sym.var("d"), mx.sym.var("w"), mx.sym.var("s0")

    def outer(row, st):
        inner, ist = mx.sym.contrib.foreach(lambda x, s: (x * w + s[0], [s[0] + x]), row, [st[0]])
        return inner, [ist[0] * 2]
    outs, states = mx.sym.contrib.foreach(outer, d, [s0])
    sym = mx.sym.load_json(mx.sym.Group([outs, states[0]]).tojson())
    rng = np.random.RandomState(9)
    dv, wv, sv = rng.rand(3, 4, 2), rng.rand(2), rng.rand(2)
    got, grads = _bind_run(sym, {"d": dv, "w": wv, "s0": sv}, [np.ones((3, 4, 2)), np.ones(2)])
    want, st = [], sv
    for i in range(3):
        inner, ist = [], st
        for j in range(4):
            inner.append(dv[i, j] * wv + ist)
            ist = ist + dv[i, j]
        want.append(np.stack(inner))
        st = ist * 2
    np.testing.assert_allclose(got[0], np.stack(want), rtol=1e-5)
    np.testing.assert_allclose(got[1], st, rtol=1e-5)
    np.testing.assert_allclose(grads["w"], dv.sum(axis=(0, 1)), rtol=1e-5)


class _LoopNet(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(3, in_units=3)

    def hybrid_forward(self, F, x, n):
        outs, (_, y) = F.contrib.while_loop(lambda i, y: i < n, lambda i, y: (y, [i + 1, F.tanh(self.dense(y))]),
                                            [F.zeros_like(n), x], max_iterations=5)
        return outs, F.contrib.cond(F.sum(y) > 0, lambda: y * 2, lambda: y * -1)


@pytest.mark.parametrize("steps", [2.0, 3.0])
def test_while_loop_and_cond_in_hybridized_block(steps):
    x, n = mx.nd.array(np.random.RandomState(10).rand(2, 3) - 0.5), mx.nd.array([steps])
    results = []
    for hybridize in (False, True):
        net = _LoopNet(prefix="loopnet_")
        net.initialize(mx.init.Xavier(rnd_type="gaussian"))
        net.dense.weight.set_data(mx.nd.array(np.random.RandomState(11).randn(3, 3)))
        if hybridize:
            net.hybridize()
        with autograd.record():
            outs, z = net(x, n)
            (outs.sum() + z.sum()).backward()
        results.append((outs.asnumpy(), z.asnumpy(), net.dense.weight.grad().asnumpy()))
    assert results[0][0].shape == (5, 2, 3)
    np.testing.assert_array_equal(results[0][0][int(steps):], 0)
    for eager, hybrid in zip(*results):
        np.testing.assert_allclose(hybrid, eager, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- MXNet's usage patterns
def _verify_foreach(step, n_data, n_states, free_fn, data, states, frees, heads):
    """The symbolic foreach (bound, forward and backward, after a JSON round trip) against
    the imperative one recorded by autograd: outputs and the gradients of every input."""
    names = ["v%d" % i for i in range(n_data + n_states + len(frees))]
    syms = [mx.sym.var(n) for n in names]
    dsyms, ssyms = syms[:n_data], syms[n_data:n_data + n_states]
    fsyms = free_fn(syms[n_data + n_states:])
    res, st = mx.sym.contrib.foreach(lambda d, s: step(d, s, fsyms), dsyms if n_data > 1 else dsyms[0], ssyms)
    res = res if isinstance(res, list) else [res]
    out = mx.sym.Group([r * 2 for r in res] + list(st))
    text = out.tojson()
    out = mx.sym.load_json(text)
    assert out.tojson() == text
    arrays = data + states + frees
    args = {n: mx.nd.array(a) for n, a in zip(names, arrays)}
    grads = {n: mx.nd.zeros(np.shape(a)) for n, a in zip(names, arrays)}
    ex = out.bind(mx.cpu(), {n: a for n, a in args.items() if n in out.list_arguments()},
                  args_grad={n: g for n, g in grads.items() if n in out.list_arguments()})
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(h) for h in heads])

    nd_args = [mx.nd.array(a) for a in arrays]
    for a in nd_args:
        a.attach_grad()
    with autograd.record():
        fr = free_fn(nd_args[n_data + n_states:])
        dd = nd_args[:n_data]
        r, s2 = mx.nd.contrib.foreach(lambda d, s: step(d, s, fr), dd if n_data > 1 else dd[0],
                                      nd_args[n_data:n_data + n_states])
        r = r if isinstance(r, list) else [r]
        want = [x * 2 for x in r] + list(s2)
    autograd.backward(want, [mx.nd.array(h) for h in heads])
    for got, w in zip(outs, want):
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w.asnumpy(), rtol=1e-5, atol=1e-5)
    for n, a in zip(names, nd_args):
        if n in out.list_arguments():
            np.testing.assert_allclose(grads[n].asnumpy(), a.grad.asnumpy(), rtol=1e-5, atol=1e-5)


def test_foreach_mxnet_cases_against_imperative():
    rng = np.random.RandomState(12)
    data, st = rng.uniform(-1, 1, (3, 2)), [rng.uniform(-1, 1, (2,))]
    heads = [rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (2,))]
    # a free value computed outside the loop (v2 + v3): cut, so it is an input of the node
    _verify_foreach(lambda d, s, f: (lambda o: (o, [o]))(d * 2 + s[0] + f[0]), 1, 1,
                    lambda fr: [fr[0] + fr[1]], [data], st, [rng.rand(2), rng.rand(2)], heads)
    # the body returns its own inputs (identity outputs), without free variables
    _verify_foreach(lambda d, s, f: (d, s), 1, 1, lambda fr: fr, [data], st, [], heads)
    # no states, and no data outputs
    _verify_foreach(lambda d, s, f: (d + f[0], []), 1, 0, lambda fr: fr, [data], [], [rng.rand(2)], heads[:1])
    _verify_foreach(lambda d, s, f: ([], [d * s[0] * f[0]]), 1, 1, lambda fr: fr, [data], st, [rng.rand(2)],
                    heads[1:])
    # two data arrays, one of them 1-D (its slices have shape (1,), as in MXNet)
    _verify_foreach(lambda d, s, f: ([d[1] * d[0] * s[0]], [s[0] * 2]), 2, 1, lambda fr: fr,
                    [rng.rand(3, 1), np.arange(3.0)], [rng.rand(1)], [], [rng.rand(3, 1), rng.rand(1)])


def test_foreach_body_must_read_its_data_and_states():
    x, s = mx.sym.var("x"), mx.sym.var("s")
    with pytest.raises(ValueError, match="must read all the states"):
        mx.sym.contrib.foreach(lambda d, st: (d, [d * 2]), x, [s])
    with pytest.raises(ValueError, match="must read all the data arrays"):
        mx.sym.contrib.foreach(lambda d, st: (st[0], [st[0] + 1]), x, [s])
    # MXNet raises AssertionError there, which its scripts catch
    with pytest.raises(AssertionError, match="func must read every loop variable"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: (None, [mx.sym.ones((1,))]), [x], max_iterations=3)


class _TwoLoops(mx.gluon.HybridBlock):
    # called as MXNet's tests call such blocks: net(data, [state]), a nested list of inputs
    def hybrid_forward(self, F, x, states):
        out1, st1 = F.contrib.foreach(lambda d, st: (d + 1, st), x, states)
        out2, _ = F.contrib.foreach(lambda d, st: (d + 1, st), out1, states)
        # a loop whose body reads an outer loop's output and returns it as its state
        out, _ = F.contrib.foreach(lambda d, st: (d + st[0], st1), out2, states)
        return out


def test_foreach_cut_from_outer_values_in_hybridized_block():
    x, s = mx.nd.array(np.random.RandomState(13).randn(5, 4)), mx.nd.array(np.random.RandomState(14).randn(4))
    want = x.asnumpy() + 2 + s.asnumpy()
    for hybridize in (False, True):
        net = _TwoLoops()
        net.initialize()
        if hybridize:
            net.hybridize()
        for _ in range(2):  # the second call runs the cached graph
            x.attach_grad()
            with autograd.record():
                y = net(x, [s])
            y.backward()
            np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
            np.testing.assert_allclose(x.grad.asnumpy(), np.ones((5, 4)))


class _WhileBlock(mx.gluon.HybridBlock):
    def __init__(self, cond, func, max_iterations):
        super().__init__()
        self.cond, self.func, self.max_iterations = cond, func, max_iterations

    def hybrid_forward(self, F, *loop_vars):
        return F.contrib.while_loop(cond=self.cond, func=self.func, loop_vars=loop_vars,
                                    max_iterations=self.max_iterations)


@pytest.mark.parametrize("hybridize", [False, True])
def test_while_loop_int64_sums_in_block(hybridize):
    i0, s0 = mx.nd.array([1], dtype="int64"), mx.nd.array([0], dtype="int64")
    model = _WhileBlock(lambda i, s: i <= 5, lambda i, s: (None, (i + 1, s + i)), 10)
    if hybridize:
        model.hybridize()
    _, result = model(i0, s0)
    assert result[0].asscalar() == 6 and result[1].asscalar() == 15
    # the condition is a loop variable itself (returned unchanged by func)
    model = _WhileBlock(lambda i, s, t: t, lambda i, s, t: (None, (i + 1, s + i, t)), 200)
    if hybridize:
        model.hybridize()
    _, result = model(i0, s0, mx.nd.array([1], dtype="int64"))
    assert [r.asscalar() for r in result] == [201, sum(range(1, 201)), 1]
    model = _WhileBlock(lambda i, s: i <= 100, lambda i, s: (i, (i + 1, s + i)), 120)
    if hybridize:
        model.hybridize()
    outputs, (ri, rs) = model(i0, s0)
    np.testing.assert_array_equal(outputs.asnumpy()[:100, 0], np.arange(1, 101))
    np.testing.assert_array_equal(outputs.asnumpy()[100:], 0)
    assert ri.asscalar() == 101 and rs.asscalar() == 5050


def test_control_flow_backward_operators_check_their_inputs():
    x, s, w = mx.sym.var("x"), mx.sym.var("s"), mx.sym.var("w")
    outs, states = mx.sym.contrib.foreach(lambda d, st: (d * w + st[0], [st[0] + d]), x, [s])
    node = outs.get_children()  # the _foreach node's inputs: x, s, w
    assert node.list_outputs() == ["x", "s", "w"]
    saved = json.loads(outs.tojson())["nodes"][-1]
    body = mx.sym.load_json(json.dumps(saved["subgraphs"][0]))
    attrs = {k: v for k, v in saved["attrs"].items() if k != "num_args"}
    og, gs = mx.sym.var("og"), mx.sym.var("gs")
    backward = mx.symbol._ops.get("_backward_foreach")(body, og, gs, x, s, w, num_args=4, **attrs)
    assert len(backward.list_outputs()) == 3
    shapes = dict(x=(4, 3), s=(3,), w=(3,))
    _, out_shapes, _ = backward.infer_shape(og=(4, 3), gs=(3,), **shapes)
    assert out_shapes == [(4, 3), (3,), (3,)]
    with pytest.raises(mx.base.MXNetError, match="Shape inconsistent"):
        backward.infer_shape(og=(5, 3), gs=(3,), **shapes)
    with pytest.raises(mx.base.MXNetError, match="Shape inconsistent"):
        backward.infer_shape(og=(4, 3), gs=(2,), **shapes)
    # run by hand: the gradient of sum(outputs) (no state gradient) matches the closed form
    rng = np.random.RandomState(15)
    xv, sv, wv = rng.rand(4, 3), rng.rand(3), rng.rand(3)
    got = backward.eval(og=mx.nd.ones((4, 3)), gs=mx.nd.zeros((3,)), x=mx.nd.array(xv), s=mx.nd.array(sv),
                        w=mx.nd.array(wv))
    # out_t = x_t * w + s_t with s_t = s0 + sum_{k<t} x_k: d/dx_t = w + (3 - t), d/ds = 4, d/dw = sum x
    np.testing.assert_allclose(got[0].asnumpy(), wv + np.arange(3, -1, -1)[:, None], rtol=1e-6)
    np.testing.assert_allclose(got[1].asnumpy(), np.full(3, 4.0), rtol=1e-6)
    np.testing.assert_allclose(got[2].asnumpy(), xv.sum(axis=0), rtol=1e-6)


def _central_differences(f, x, eps=1e-6):
    """d f(x) / dx (f returns a float, x a float64 array) by central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (f(hi) - f(lo)) / (2 * eps)
    return grad


def _imperative_value_and_grad(fn, x_np):
    x = mx.nd.array(x_np, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    y.backward()
    return y.asscalar(), x.grad.asnumpy()


def test_imperative_while_loop_and_cond_numeric_gradients():
    rng = np.random.RandomState(16)
    w_np = rng.uniform(0.5, 1.0, (3,))
    w = mx.nd.array(w_np, dtype="float64")

    def loop(x):
        # three steps of s <- sin(s * w) + x, the step outputs summed with the final state
        outs, (_, s) = mx.nd.contrib.while_loop(
            lambda i, s: i < 3, lambda i, s: (s * 2, [i + 1, mx.nd.sin(s * w) + x]),
            [mx.nd.zeros((1,), dtype="float64"), x * 0.5], max_iterations=4)
        return outs.sum() + (s * s).sum()

    def branch(x):
        return mx.nd.contrib.cond(x.sum() > 1, lambda: (x * w).sum() * x.sum(), lambda: mx.nd.exp(x).sum())

    for fn, x_np in ((loop, rng.uniform(-1, 1, (3,))), (branch, rng.uniform(0.5, 1, (3,))),
                     (branch, rng.uniform(-1, 0, (3,)))):
        value, analytic = _imperative_value_and_grad(fn, x_np)
        numeric = _central_differences(lambda v: _imperative_value_and_grad(fn, v)[0], x_np)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
    # the loop against numpy
    s, total = rng.uniform(-1, 1, (3,)), 0.0
    x_np = s.copy()
    s = x_np * 0.5
    for _ in range(3):
        total += (s * 2).sum()
        s = np.sin(s * w_np) + x_np
    np.testing.assert_allclose(_imperative_value_and_grad(loop, x_np)[0], total + (s * s).sum(), rtol=1e-10)


def test_traces_count_their_names_and_give_the_same_graph_again():
    from collections import defaultdict
    mx.AttrScope._subgraph_names = defaultdict(int)

    def make():
        # a fresh name manager, as a hybridized block's trace has: the same node names again
        with mx.name.NameManager():
            a = mx.sym.var("a")
            return mx.sym.contrib.cond(a > 0.5, lambda: a * 2, lambda: a * 3, name="pick")
    first, second = make(), make()
    # as MXNet counts them: one graph each of pred, then and else per call
    assert dict(mx.AttrScope._subgraph_names) == {"pick_pred": 2, "pick_then": 2, "pick_else": 2}
    # the marks are dropped once the graphs are cut, so a second trace is the same graph
    assert first.tojson() == second.tojson()
    assert "__subgraph_name__" not in first.tojson()
    np.testing.assert_allclose(first.eval(a=mx.nd.array([0.7]))[0].asnumpy(), [1.4], rtol=1e-6)
    np.testing.assert_allclose(second.eval(a=mx.nd.array([0.2]))[0].asnumpy(), [0.6], rtol=1e-6)

"""MXNet's _CachedOp: the operator that runs a graph given as symbol JSON (what
autograd.get_symbol shows for a hybridized block's recorded call), and the inlining of small
hybridized graphs while autograd records (HybridBlock.hybridize's inline_limit and
static_alloc flags, as MXNet's CachedOp)."""
import json

import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn
from weft.test_utils import check_numeric_gradient


def _tanh_fc_graph():
    # y = tanh(x W^T + b), z = y * 2: two outputs.
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    y = mx.sym.tanh(mx.sym.FullyConnected(x, w, b, num_hidden=3, name="fc"), name="act")
    return mx.sym.Group([y, y * 2])


def _cached_op_symbol(inner, names):
    """A graph holding one _CachedOp node over variables `names` (written as MXNet's JSON)."""
    nodes = [{"op": "null", "name": n, "inputs": []} for n in names]
    nodes.append({"op": "_CachedOp", "name": "cached", "attrs": {"subgraph": inner.tojson()},
                  "inputs": [[i, 0, 0] for i in range(len(names))]})
    n_out = len(inner.list_outputs())
    graph = {"nodes": nodes, "arg_nodes": list(range(len(names))),
             "heads": [[len(names), k, 0] for k in range(n_out)], "attrs": {"mxnet_version": ["int", 10901]}}
    return mx.sym.load_json(json.dumps(graph))


def _values(seed):
    rs = np.random.RandomState(seed)
    return rs.uniform(-1, 1, (4, 5)), rs.uniform(-1, 1, (3, 5)), rs.uniform(-1, 1, (3,))


def test_cached_op_node_runs_its_subgraph_forward_and_backward():
    inner = _tanh_fc_graph()
    assert inner.list_inputs() == ["x", "w", "b"]
    sym = _cached_op_symbol(inner, ["x", "w", "b"])
    outputs = sym.list_outputs()
    assert len(outputs) == 2 and outputs[0] == "cached_act_output"
    xv, wv, bv = _values(0)
    y = np.tanh(xv.dot(wv.T) + bv)
    exe = sym.bind(mx.cpu(), {"x": nd.array(xv), "w": nd.array(wv), "b": nd.array(bv)},
                   args_grad={"x": nd.zeros((4, 5)), "w": nd.zeros((3, 5)), "b": nd.zeros((3,))})
    outs = exe.forward(is_train=True)
    np.testing.assert_allclose(outs[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1].asnumpy(), 2 * y, rtol=1e-5, atol=1e-6)
    g0, g1 = np.random.RandomState(1).uniform(-1, 1, (2, 4, 3))
    exe.backward([nd.array(g0), nd.array(g1)])
    dpre = (g0 + 2 * g1) * (1 - y ** 2)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), dpre.dot(wv), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), dpre.T.dot(xv), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), dpre.sum(axis=0), rtol=1e-4, atol=1e-5)


def test_cached_op_gradient_is_itself_differentiable():
    # The gradient of a _CachedOp is another _CachedOp: central differences check both
    # orders through the symbol (first) and through autograd's eager gradient (second).
    sym = _cached_op_symbol(_tanh_fc_graph(), ["x", "w", "b"])
    xv, wv, bv = _values(2)
    check_numeric_gradient(sym, {"x": xv, "w": wv, "b": bv}, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    inner = _tanh_fc_graph()
    x, w, b = nd.array(xv, dtype="float64"), nd.array(wv, dtype="float64"), nd.array(bv, dtype="float64")
    x.attach_grad()
    with autograd.record():
        outs = nd._internal._CachedOp(x, w, b, subgraph=inner.tojson())
        gx = autograd.grad(outs[0], [x], head_grads=nd.ones((4, 3), dtype="float64"), create_graph=True)[0]
        loss = (gx * gx).sum()
    loss.backward()
    # d/dx of sum((sum_j (1 - y_ij^2) W_j)^2), by central differences on numpy.
    def f(xa):
        y = np.tanh(xa.dot(wv.T) + bv)
        return (((1 - y ** 2).dot(wv)) ** 2).sum()
    eps = 1e-6
    num = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        d = np.zeros_like(xv)
        d[idx] = eps
        num[idx] = (f(xv + d) - f(xv - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


def test_cached_op_errors_name_the_problem():
    with pytest.raises(mx.base.MXNetError, match="needs subgraph="):
        nd._internal._CachedOp(nd.ones((2,)))
    inner = _tanh_fc_graph()
    with pytest.raises(mx.base.MXNetError, match="_CachedOp"):
        nd._internal._CachedOp(nd.ones((4, 5)), nd.ones((3, 5)), subgraph=inner.tojson())  # b is missing
    with pytest.raises(mx.base.MXNetError, match="_CachedOp"):
        nd._internal._CachedOp(nd.ones((4, 5)), nd.ones((3, 4)), nd.ones((3,)), subgraph=inner.tojson())


def _three_dense():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4), nn.Dense(4), nn.Dense(2))
    net.initialize(mx.init.Uniform(0.5))
    return net


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


def test_recorded_call_is_inlined_up_to_inline_limit():
    net = _three_dense()
    x = nd.array(np.random.RandomState(3).uniform(-1, 1, (2, 5)))
    net.hybridize(inline_limit=3)
    with autograd.record():
        y = net(x)
    inlined = autograd.get_symbol(y)
    assert _ops(inlined) == ["FullyConnected"] * 3
    y.backward()
    grads = [p.grad().asnumpy().copy() for p in net.collect_params().values()]
    net.hybridize(inline_limit=2)
    with autograd.record():
        y2 = net(x)
    one = autograd.get_symbol(y2)
    assert _ops(one) == ["_CachedOp"]
    # data and six parameters, then the node: two nodes fewer than inlined.
    assert len(json.loads(one.tojson())["nodes"]) == len(json.loads(inlined.tojson())["nodes"]) - 2
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy(), rtol=1e-6)
    y2.backward()
    for p, g in zip(net.collect_params().values(), grads):
        np.testing.assert_allclose(p.grad().asnumpy(), g, rtol=1e-5, atol=1e-7)


def test_cached_op_node_of_get_symbol_recomputes_the_block():
    net = _three_dense()
    net.hybridize(static_alloc=True)  # never inlined, whatever its size
    x = nd.array(np.random.RandomState(4).uniform(-1, 1, (2, 5)))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    sym = autograd.get_symbol(y)
    assert _ops(sym) == ["_CachedOp"]
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == "_CachedOp"][0]
    inner = mx.sym.load_json(node["attrs"]["subgraph"])
    # The node's inputs are the block's graph inputs in the order that graph lists them.
    params = {p.name: p.data() for p in net.collect_params().values()}
    feed = [x] + [params[n] for n in inner.list_inputs()[1:]]
    assert inner.list_inputs()[0] == "data"
    args = dict(zip(sym.list_arguments(), feed))
    out = sym.bind(mx.cpu(), args).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-6)


def test_single_layer_is_inlined_by_default_and_static_alloc_keeps_the_node():
    layer = nn.Dense(3, in_units=4)
    layer.initialize()
    x = nd.ones((2, 4))
    layer.hybridize()
    with autograd.record():
        y = layer(x)
    assert _ops(autograd.get_symbol(y)) == ["FullyConnected"]
    layer.hybridize(static_alloc=True, inline_limit=5)
    with autograd.record():
        y = layer(x)
    assert _ops(autograd.get_symbol(y)) == ["_CachedOp"]


def test_export_after_recorded_calls_that_ran_inlined(tmp_path):
    layer = nn.Dense(3, in_units=4)
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    x = nd.array(np.random.RandomState(6).uniform(-1, 1, (2, 4)))
    with autograd.record():
        y = layer(x)
    sym_file, params_file = layer.export(str(tmp_path / "m"))
    assert _ops(mx.sym.load(sym_file)) == ["FullyConnected"]
    loaded = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(loaded(x).asnumpy(), y.asnumpy(), rtol=1e-6)


def _conv_bn_relu(seed):
    """Convolution, BatchNorm, relu (three operators: not inlined by default), with random
    weights and non-trivial running statistics."""
    net = nn.HybridSequential(prefix="cbr%d_" % seed)
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=4, momentum=0.8),
                nn.Activation("relu"))
    net.initialize(mx.init.Uniform(0.5))
    rs = np.random.RandomState(seed)
    bn = net[1]
    bn.running_mean.set_data(nd.array(rs.uniform(-1, 1, 4)))
    bn.running_var.set_data(nd.array(rs.uniform(0.5, 2, 4)))
    return net


def _reference_step(net, x):
    """A non-hybridized copy of `net`: its output, the gradients of its parameters and its
    running statistics after one recorded training-mode call and backward."""
    ref = _conv_bn_relu(0)
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        q.set_data(p.data().copy())
    with autograd.record(train_mode=True):
        y = ref(x)
    y.backward()
    params = list(ref.collect_params().values())
    return (y.asnumpy(), {p.name[len(ref.prefix):]: p.grad().asnumpy() for p in params if p.grad_req != "null"},
            [ref[1].running_mean.data().asnumpy(), ref[1].running_var.data().asnumpy()])


def test_cached_op_updates_auxiliary_states_in_training_as_the_block_does():
    net = _conv_bn_relu(0)
    x = nd.array(np.random.RandomState(1).uniform(-1, 1, (2, 3, 5, 5)))
    want_y, want_grads, want_stats = _reference_step(net, x)
    assert not np.allclose(want_stats[0], net[1].running_mean.data().asnumpy())
    graph = net(mx.sym.var("data"))
    names = graph.list_inputs()
    aux = set(graph.list_auxiliary_states())
    assert len(aux) == 2
    params = {p.name: p.data() for p in net.collect_params().values()}

    def fresh_inputs():
        return [x] + [params[n].copy() for n in names[1:]]

    # The operator called imperatively under record(train_mode=True): the statistics land
    # in the arrays given for them, once (the backward recomputes the forward on copies).
    ins = fresh_inputs()
    for a, n in zip(ins, names):
        if n not in aux and n != "data":
            a.attach_grad()
    with autograd.record(train_mode=True):
        y = nd._internal._CachedOp(*ins, subgraph=graph.tojson())
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-5, atol=1e-6)
    got = dict(zip(names, ins))
    for n in names:
        if n in aux:
            stat = want_stats[0] if n.endswith("running_mean") else want_stats[1]
            np.testing.assert_allclose(got[n].asnumpy(), stat, rtol=1e-5, atol=1e-6)
        elif n != "data":
            np.testing.assert_allclose(got[n].grad.asnumpy(), want_grads[n[len(net.prefix):]], rtol=1e-4, atol=1e-5)
    # Not in training: the statistics are read, not updated.
    ins = fresh_inputs()
    nd._internal._CachedOp(*ins, subgraph=graph.tojson()).wait_to_read()
    for a, n in zip(ins, names):
        if n in aux:
            np.testing.assert_array_equal(a.asnumpy(), params[n].asnumpy())

    # A graph holding the node (as autograd.get_symbol gives, or a saved one), bound and run
    # forward in training: the node's inputs for the statistics are auxiliary states of
    # that graph, updated in the executor's arrays.
    sym = _cached_op_symbol(graph, names)
    assert sorted(sym.list_auxiliary_states()) == sorted(aux)
    ins = dict(zip(names, fresh_inputs()))
    grads = {n: nd.zeros(a.shape) for n, a in ins.items() if n not in aux}
    exe = sym.bind(mx.cpu(), {n: a for n, a in ins.items() if n not in aux}, args_grad=grads,
                   aux_states={n: ins[n] for n in sym.list_auxiliary_states()})
    out = exe.forward(is_train=True)[0]
    exe.backward(nd.ones(out.shape))
    np.testing.assert_allclose(out.asnumpy(), want_y, rtol=1e-5, atol=1e-6)
    for n in aux:
        stat = want_stats[0] if n.endswith("running_mean") else want_stats[1]
        np.testing.assert_allclose(exe.aux_dict[n].asnumpy(), stat, rtol=1e-5, atol=1e-6)
    for n, g in grads.items():
        if n != "data":
            np.testing.assert_allclose(g.asnumpy(), want_grads[n[len(net.prefix):]], rtol=1e-4, atol=1e-5)


def test_get_symbol_of_a_hybridized_call_replays_with_the_statistics_update():
    net = _conv_bn_relu(0)
    x = nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 3, 5, 5)))
    want_y, _, want_stats = _reference_step(net, x)
    start = [net[1].running_mean.data().asnumpy(), net[1].running_var.data().asnumpy()]
    net.hybridize()
    with autograd.record(train_mode=True):
        y = net(x)
    np.testing.assert_allclose(net[1].running_mean.data().asnumpy(), want_stats[0], rtol=1e-5, atol=1e-6)
    sym = autograd.get_symbol(y)
    assert _ops(sym) == ["_CachedOp"] and len(sym.list_auxiliary_states()) == 2
    # The recorded graph replayed from the statistics the call started from: the node's
    # inputs are its subgraph's, in the order that graph lists them.
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == "_CachedOp"][0]
    inner = mx.sym.load_json(node["attrs"]["subgraph"])
    inner_aux = set(inner.list_auxiliary_states())
    params = {p.name: p.data().asnumpy() for p in net.collect_params().values()}
    params.update(zip((n for n in inner.list_inputs() if n in inner_aux), start))
    params["data"] = x.asnumpy()
    args = [nd.array(params[n]) for n in inner.list_inputs() if n not in inner_aux]
    aux = [nd.array(params[n]) for n in inner.list_inputs() if n in inner_aux]
    exe = sym.bind(mx.cpu(), dict(zip(sym.list_arguments(), args)),
                   aux_states=dict(zip(sym.list_auxiliary_states(), aux)))
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), want_y, rtol=1e-5, atol=1e-6)
    for got, want in zip(exe.aux_arrays, want_stats):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def _symbol_block(ops):
    """A SymbolBlock of `ops` operators (FullyConnected, then tanh as needed)."""
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=3, name="sb_fc")
    for k in range(ops - 1):
        out = mx.sym.tanh(out, name="sb_tanh%d" % k)
    block = gluon.SymbolBlock(out, [data])
    block.initialize(mx.init.Uniform(0.5))
    return block


@pytest.mark.parametrize("hybridize", [None, {}, {"inline_limit": 3}, {"static_alloc": True}])
def test_symbol_block_is_inlined_as_mxnet_cached_op(hybridize):
    # MXNet runs a SymbolBlock through a CachedOp with its flags (a hybridized parent's, or
    # none): a recorded call of at most inline_limit (2) operators runs operator by
    # operator, unless static_alloc; a larger one is one _CachedOp node.
    x = nd.array(np.random.RandomState(7).uniform(-1, 1, (2, 4)))
    for ops in (2, 3):
        block = _symbol_block(ops)
        parent = nn.HybridSequential()
        parent.add(block)
        if hybridize is not None:
            parent.hybridize(**hybridize)
        plain = block(x).asnumpy()
        x.attach_grad()
        with autograd.record():
            y = block(x)
        flags = hybridize or {}
        inlined = not flags.get("static_alloc") and ops <= flags.get("inline_limit", 2)
        want = ["FullyConnected"] + ["tanh"] * (ops - 1) if inlined else ["_CachedOp"]
        assert _ops(autograd.get_symbol(y)) == want, (ops, hybridize)
        y.backward()
        np.testing.assert_allclose(y.asnumpy(), plain, rtol=1e-6)
        w = block.params.get("sb_fc_weight").data().asnumpy()
        b = block.params.get("sb_fc_bias").data().asnumpy()
        pre = x.asnumpy().dot(w.T) + b
        dy = np.ones_like(pre)
        for _ in range(ops - 1):
            pre = np.tanh(pre)
        if ops > 1:  # d tanh(tanh(..)) by the chain rule, innermost first
            vals = [x.asnumpy().dot(w.T) + b]
            for _ in range(ops - 1):
                vals.append(np.tanh(vals[-1]))
            for v in reversed(vals[1:]):
                dy = dy * (1 - v ** 2)
        np.testing.assert_allclose(x.grad.asnumpy(), dy.dot(w), rtol=1e-4, atol=1e-6)
        # Called through the hybridized parent (whose graph composes the block's), the same.
        with autograd.record():
            z = parent(x)
        assert _ops(autograd.get_symbol(z)) == want
        np.testing.assert_allclose(z.asnumpy(), plain, rtol=1e-6)


def _imperative_tanh_fc(x, w, b):
    # What _tanh_fc_graph computes, operator by operator under autograd.
    y = nd.tanh(nd.FullyConnected(x, w, b, num_hidden=3))
    return [y, y * 2]


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_nd_cached_op_called_twice_in_one_record(grad_req):
    # MXNet's CachedOp differentiates several calls recorded before one backward: the second
    # call runs on a spare executor. Outputs and gradients equal the operators run one by one.
    op = nd.CachedOp(_tanh_fc_graph())
    xv, wv, bv = _values(3)
    x2v = np.random.RandomState(4).uniform(-1, 1, (4, 5))
    heads = np.random.RandomState(5).uniform(-1, 1, (3, 4, 3))

    def run(fn, iterations):
        arrays = [nd.array(v) for v in (xv, x2v, wv, bv)]
        for a in arrays:
            a.attach_grad(grad_req)
        for _ in range(iterations):
            with autograd.record():
                x, x2, w, b = arrays
                first, second, again = fn(x, w, b), fn(x2, w, b), fn(x, w, b)
                loss = ((first[0] + again[1]) * nd.array(heads[0])).sum() + (second[1] * nd.array(heads[1])).sum()
            loss.backward()
        return first + second + again, [a.grad.asnumpy() for a in arrays]

    for iterations in (1, 3):
        outs, grads = run(op, iterations)
        ref_outs, ref_grads = run(_imperative_tanh_fc, iterations)
        y1, y2 = np.tanh(xv.dot(wv.T) + bv), np.tanh(x2v.dot(wv.T) + bv)
        for got, want in zip(outs, [y1, 2 * y1, y2, 2 * y2, y1, 2 * y1]):
            np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
        for got, want in zip(grads, ref_grads):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        # The gradient of x by hand: both heads meet in x's two calls.
        dpre1 = (heads[0] + 2 * heads[0]) * (1 - y1 ** 2)
        np.testing.assert_allclose(grads[0], (iterations if grad_req == "add" else 1) * dpre1.dot(wv),
                                   rtol=1e-4, atol=1e-5)
    # Three calls awaited their backward at once: three executors, reused at every iteration.
    assert [len(v) for v in op._cache.values()] == [3]


def test_nd_cached_op_spare_is_taken_only_while_a_backward_is_pending():
    op = nd.CachedOp(_tanh_fc_graph())
    xv, wv, bv = _values(6)
    x, w, b = nd.array(xv), nd.array(wv), nd.array(bv)
    w.attach_grad()
    for _ in range(3):
        with autograd.record():
            y = op(x, w, b)[0]
        y.backward()
        # Outside record() the calls never wait for a backward: one executor for them.
        op(x, w, b)
        op(x, w, b)
    assert sorted(len(v) for v in op._cache.values()) == [1, 1]
    with autograd.record():
        y = op(x, w, b)[0] + op(x, w, b)[0]
    y.backward()
    dpre = 2 * (1 - np.tanh(xv.dot(wv.T) + bv) ** 2)
    np.testing.assert_allclose(w.grad.asnumpy(), dpre.T.dot(xv), rtol=1e-4, atol=1e-5)
    assert sorted(len(v) for v in op._cache.values()) == [1, 2]


def test_stale_backward_error_names_the_cached_graph_neutrally():
    # CachedOp and hybridized blocks bind a spare executor while a recorded call awaits its
    # backward, so only a caller of weft_executor_invoke that does not (a front end, or
    # CachedOp's executor called again here by hand) meets the error; both kinds of caller
    # share it, so it names both instead of a hybridized block alone.
    x = nd.array([[1.0, -2.0]])
    x.attach_grad()
    op = nd.CachedOp(mx.sym.tanh(mx.sym.var("x")))
    with autograd.record():
        y = op(x)
    (exe, bound, input_grads), = [e for entries in op._cache.values() for e in entries]
    with autograd.record():
        again = [nd.NDArray(h) for h in mx.base._api.weft_executor_invoke(exe.handle, 1, [x], bound, input_grads,
                                                                           0, [], 1)]
    assert again[0].shape == (1, 2)
    with pytest.raises(mx.base.MXNetError, match=r"cached graph \(a hybridized block or an nd.CachedOp\): it ran "
                                                 r"forward again before this backward of an earlier recorded call"):
        y.backward()
    # Called as CachedOp itself calls it, the backward is right: d tanh(x) / dx.
    with autograd.record():
        y = op(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 1 - np.tanh([[1.0, -2.0]]) ** 2, rtol=1e-5)


def test_symbol_block_with_a_control_flow_node_is_not_inlined():
    # A _foreach node's body graph cannot be passed to a call by name, so a recorded call of
    # such a graph runs as one _CachedOp whatever inline_limit says, and still differentiates.
    data = mx.sym.Variable("data")
    state = mx.sym.Variable("state")
    outs, last = mx.sym.contrib.foreach(lambda x, s: (x * s[0], [x + s[0]]), data, [state])
    block = gluon.SymbolBlock(mx.sym.Group([outs, last[0]]), [data, state])
    block.hybridize(inline_limit=100)
    rs = np.random.RandomState(3)
    x = nd.array(rs.uniform(-1, 1, (3, 2)))
    s0 = nd.array(rs.uniform(-1, 1, (2,)))
    x.attach_grad()
    with autograd.record():
        y, final = block(x, s0)
    assert _ops(autograd.get_symbol(y)) == ["_CachedOp"]
    y.backward()
    states, want = [s0.asnumpy()], []
    for t in range(3):
        want.append(x.asnumpy()[t] * states[-1])
        states.append(x.asnumpy()[t] + states[-1])
    np.testing.assert_allclose(y.asnumpy(), np.stack(want), rtol=1e-6)
    np.testing.assert_allclose(final.asnumpy(), states[-1], rtol=1e-6)
    # y_t = x_t * s_t with s_t = s_0 + x_0 + ... + x_{t-1}: dy/dx_t sums s_t and the later x's.
    xs = x.asnumpy()
    grad = np.stack([states[t] + xs[t + 1:].sum(axis=0) for t in range(3)])
    np.testing.assert_allclose(x.grad.asnumpy(), grad, rtol=1e-5)

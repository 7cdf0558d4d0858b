"""Symbol and executor behaviours of MXNet 1.9 that its users rely on: get_children,
alias names, zero-gradient propagation, common subexpression elimination, atomic symbols,
np-shape JSON, _CachedOp, and when an asynchronous error surfaces."""
import json
import re

import numpy as np
import pytest

import weft as mx
from weft.test_utils import same_array


def test_get_children_lists_a_multi_output_node_inputs_once():
    data = mx.sym.var("data")
    sliced = mx.sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]
    both = mx.sym.Group([sliced[0], mx.sym.relu(data, name="r")])
    assert both.get_children().list_outputs() == ["data", "data"]
    concat = mx.sym.Concat(*list(sliced))
    assert concat.get_children().list_outputs() == ["slice_output0", "slice_output1", "slice_output2"]


def test_an_alias_names_its_nodes_after_itself():
    with mx.name.NameManager():
        data = mx.sym.var("data")
        assert mx.sym.broadcast_axes(data, axis=0, size=2).name == "broadcast_axes0"
        assert data.broadcast_axes(axis=0, size=2).name == "broadcast_axes1"
        assert mx.sym.broadcast_axis(data, axis=0, size=2).name == "broadcast_axis0"
        assert mx.sym.stop_gradient(data).name == "stop_gradient0"
        assert mx.sym.BlockGrad(data).name == "blockgrad0"


def _total_mb(sym, **kwargs):
    exe = sym.simple_bind(mx.cpu(), data=(2, 3, 256, 256), **kwargs)
    return int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))


def test_stop_gradient_removes_the_backward_pass_behind_it():
    data = mx.sym.var("data")
    for _ in range(6):
        data = data * data
    trained = _total_mb(data)
    assert trained > _total_mb(data, grad_req="null")
    assert _total_mb(mx.sym.stop_gradient(data)) == _total_mb(data, grad_req="null")


def test_zero_gradient_needs_no_gradient_of_what_it_stops():
    x = mx.sym.var("x")
    idx = mx.sym.var("idx")
    taken = mx.sym.batch_take(x, idx)  # registers no gradient
    out = mx.sym.stop_gradient(taken) + mx.sym.sum(x * 3, axis=1)
    exe = out.simple_bind(mx.cpu(), x=(3, 4), idx=(3,), type_dict={"idx": np.int32})
    exe.arg_dict["x"][:] = np.arange(12).reshape(3, 4)
    exe.arg_dict["idx"][:] = [0, 3, 1]
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3,)))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [0 + 18, 7 + 66, 9 + 114])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.full((3, 4), 3.0))
    # Where the gradient does flow into it, the operator must be differentiable.
    with pytest.raises(mx.base.MXNetError, match="batch_take.*not differentiable"):
        taken.simple_bind(mx.cpu(), x=(3, 4), idx=(3,), type_dict={"idx": np.int32})


def _internals(exe):
    return len(exe.get_optimized_symbol().get_internals())


@pytest.mark.parametrize("make,saved", [
    (lambda a, b: (a + b) * (a + b), 1),
    (lambda a, b: ((a + b) * b) + ((a + b) * b), 2),
    (lambda a, b: (a + 1) + (a + 2), 0),
    (lambda a, b: mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5), 0),  # random: never merged
])
def test_common_subexpressions_are_computed_once(make, saved, monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = make(a, b)
    shapes = {n: (2, 3) for n in sym.list_arguments()}
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    plain = sym.simple_bind(mx.cpu(), **shapes)
    monkeypatch.delenv("MXNET_ELIMINATE_COMMON_EXPR")
    merged = sym.simple_bind(mx.cpu(), **shapes)
    assert _internals(plain) + 0 == len(sym.get_internals())
    assert _internals(merged) + saved == _internals(plain)
    rng = np.random.RandomState(0)
    values = {n: rng.rand(2, 3).astype(np.float32) for n in shapes}
    if "Dropout" in sym.tojson():
        return
    for exe in (plain, merged):
        exe.forward(is_train=True, **values)
        exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(merged.outputs[0].asnumpy(), plain.outputs[0].asnumpy(), rtol=1e-6)
    for name in shapes:
        np.testing.assert_allclose(merged.grad_dict[name].asnumpy(), plain.grad_dict[name].asnumpy(), rtol=1e-6)


def test_outputs_merged_into_one_value_stay_separate_arrays(monkeypatch):
    monkeypatch.setenv("WEFT_ELIMINATE_COMMON_EXPR", "1")
    a = mx.sym.var("a")
    d = a + 1
    sym = mx.sym.Group([a * d, a * d])
    exe = sym.simple_bind(mx.cpu(), a=(3,))
    # a*d is computed once; the second output is a copy of it (no net saving, as in MXNet).
    assert _internals(exe) == len(sym.get_internals())
    exe.forward(a=mx.nd.array([1, 2, 3]))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [2, 6, 12])
    np.testing.assert_array_equal(exe.outputs[1].asnumpy(), [2, 6, 12])
    assert not same_array(exe.outputs[0], exe.outputs[1])
    # A group that names the same value twice is left as it is.
    twice = mx.sym.Group([d, d])
    assert _internals(twice.simple_bind(mx.cpu(), a=(3,))) == len(twice.get_internals())


def test_gen_atomic_symbol_copies_the_head_operator():
    s = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("p"), mx.sym.var("h0"), mx.sym.var("h1"), state_size=10,
                   num_layers=2, bidirectional=True, state_outputs=True, mode="lstm", name="rnn")
    atomic = s._gen_atomic_symbol()
    assert atomic.list_arguments() == []
    assert len(atomic.list_outputs()) == 3
    (attrs,) = atomic.attr_dict().values()
    assert attrs["state_size"] == "10" and attrs["mode"] == "lstm" and attrs["bidirectional"] == "True"
    with pytest.raises(ValueError, match="is a variable"):
        mx.sym.var("v")._gen_atomic_symbol()


def test_tojson_marks_np_shape_semantics(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("weight", shape=(8, 0)), num_hidden=8)
    assert "is_np_shape" not in json.loads(net.tojson())["attrs"]
    with mx.util.np_shape(True):
        attrs = json.loads(net.tojson())["attrs"]
        assert attrs["is_np_shape"] == ["int", 1]
        net.save(str(tmp_path / "np.json"))
    assert json.load(open(tmp_path / "np.json"))["attrs"]["is_np_shape"] == ["int", 1]
    # A file saved without the mark reads a 0 dim as unknown, whatever the semantics in force.
    net.save(str(tmp_path / "legacy.json"))
    for flag in (False, True):
        with mx.util.np_shape(flag):
            args, outs, _ = mx.sym.load(str(tmp_path / "legacy.json")).infer_shape(data=(2, 5))
        assert args[1] == (8, 5) and outs[0] == (2, 8)


def test_cached_op_runs_its_subgraph():
    data = mx.sym.var("data")
    inner = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), fix_gamma=False, name="bn")
    names = inner.list_inputs()
    outer = mx.sym._internal._CachedOp(*[mx.sym.var(n) for n in names], subgraph=inner.tojson()) * 2
    rng = np.random.RandomState(1)
    arg_shapes, _, aux_shapes = inner.infer_shape(data=(4, 5))
    args = {n: mx.nd.array(rng.rand(*s)) for n, s in zip(inner.list_arguments(), arg_shapes)}
    aux = {n: mx.nd.array(rng.rand(*s) + 0.5) for n, s in zip(inner.list_auxiliary_states(), aux_shapes)}
    results = []
    for sym, scale in ((inner, 2.0), (outer, 1.0)):
        grads = {n: mx.nd.zeros(a.shape) for n, a in args.items()}
        exe = sym.bind(mx.cpu(), {n: a.copy() for n, a in args.items()}, args_grad=grads,
                       aux_states={n: a.copy() for n, a in aux.items()})
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((4, 3)) * scale)
        results.append((exe.outputs[0].asnumpy() * scale, {n: g.asnumpy() for n, g in grads.items()}))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for n in args:
        np.testing.assert_allclose(results[1][1][n], results[0][1][n], rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="has 7 inputs"):
        mx.sym._internal._CachedOp(mx.sym.var("x"), subgraph=inner.tojson())


def test_a_failed_random_draw_fails_the_next_draws_and_is_raised_once():
    # As MXNet's engine: the failed sampler wrote the random generator, so the next draws
    # carry its error; raising it through one of them reports it, and waitall is clean.
    bad = mx.nd.random.normal(0, -1, (2, 2))
    del bad
    a = mx.nd.random.normal(0, 1, (2, 2))
    b = mx.nd.random.normal(0, -1, (2, 2))
    c = mx.nd.dot(a, b)
    with pytest.raises(mx.base.MXNetError, match="scale"):
        c.asnumpy()
    mx.nd.waitall()
    # Unwaited, the error is waitall's, once.
    mx.nd.random.normal(0, -1, (2, 2))
    with pytest.raises(mx.base.MXNetError, match="scale"):
        mx.nd.waitall()
    mx.nd.waitall()
    np.testing.assert_array_equal(mx.nd.ones((2,)).asnumpy(), [1, 1])
    assert mx.nd.random.normal(0, 1, (3,)).asnumpy().shape == (3,)

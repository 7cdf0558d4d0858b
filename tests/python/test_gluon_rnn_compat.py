"""gluon.rnn behaviour MXNet 1.9 scripts rely on: fused layers inside hybridized graphs
before their first call (_rnn_param_concat's shape inference), _unfuse into cells,
parameter initializers carried by the symbol variables (Module.init_params honours them),
unroll with valid_length returning one merged array, and contrib dynamic_unroll on
Symbols (a hybridized block) as a foreach loop."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import contrib, nn, rnn
from weft.test_utils import assert_almost_equal

RNG = np.random.RandomState(5)


def test_rnn_param_concat_infers_two_unknown_pieces():
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    joined = mx.sym._internal._rnn_param_concat(a, b, c, dim=0, num_args=3)
    args, outs, _ = (joined + mx.sym.var("whole")).infer_shape(b=(6,), whole=(20,))
    assert dict(zip((joined + mx.sym.var("whole")).list_arguments(), args)) == \
        {"a": (7,), "b": (6,), "c": (7,), "whole": (20,)}
    # Plain concat infers one unknown piece only.
    plain = mx.sym.concat(a, b, c, dim=0) + mx.sym.var("whole")
    shapes, _, _ = plain.infer_shape_partial(b=(6,), whole=(20,))
    assert shapes == [(0,), (6,), (0,), (20,)]
    # Forward and gradient are concat's.
    x, y = nd.array(RNG.rand(3)), nd.array(RNG.rand(2))
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        out = nd._internal._rnn_param_concat(x, y, dim=0, num_args=2)
    out.backward(nd.arange(5))
    assert_almost_equal(out.asnumpy(), np.concatenate([x.asnumpy(), y.asnumpy()]))
    assert_almost_equal(x.grad.asnumpy(), np.arange(3, dtype=np.float32))
    assert_almost_equal(y.grad.asnumpy(), np.arange(3, 5, dtype=np.float32))


@pytest.mark.parametrize("layer_fn", [lambda: rnn.LSTM(6, bidirectional=True), lambda: rnn.GRU(5, num_layers=2),
                                      lambda: rnn.RNN(4, num_layers=2, bidirectional=True)])
def test_fused_layer_deferred_init_inside_hybridized_graph(layer_fn):
    x = nd.array(RNG.rand(3, 2, 7))
    nets = []
    for hybridize in (False, True):
        net = nn.HybridSequential()
        net.add(layer_fn(), nn.Flatten(), nn.Dense(2))
        if hybridize:
            net.hybridize()
        net.initialize()
        net(x)  # the hybridized net infers every shape from its graph
        nets.append(net)
    first = nets[1][0].collect_params()
    for name, p in first.items():
        if "l0_i2h_weight" in name or "r0_i2h_weight" in name:
            assert p.shape[1] == 7
    # Same weights, same results and gradients both ways.
    src, dst = nets[0]._collect_params_with_prefix(), nets[1]._collect_params_with_prefix()
    for key, p in src.items():
        dst[key].set_data(p.data())
    with autograd.record():
        outs = [net(x) for net in nets]
    for o in outs:
        o.backward()
    assert_almost_equal(outs[0].asnumpy(), outs[1].asnumpy(), rtol=1e-5, atol=1e-6)
    for key, p in src.items():
        assert_almost_equal(p.grad().asnumpy(), dst[key].grad().asnumpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode, bidirectional", [("lstm", True), ("gru", False), ("rnn_tanh", True)])
def test_unfuse_matches_fused_layer(mode, bidirectional):
    make = {"lstm": lambda: rnn.LSTM(4, num_layers=2, bidirectional=bidirectional, input_size=3),
            "gru": lambda: rnn.GRU(4, num_layers=2, bidirectional=bidirectional, input_size=3),
            "rnn_tanh": lambda: rnn.RNN(4, num_layers=2, activation="tanh", bidirectional=bidirectional,
                                        input_size=3)}[mode]
    layer = make()
    cells = layer._unfuse()
    layer.initialize(mx.init.Uniform(0.5))
    # The cells share the layer's parameters.
    assert set(cells.collect_params().keys()) == set(layer.collect_params().keys())
    x = nd.array(RNG.rand(5, 2, 3))
    fused = layer(x).asnumpy()
    unrolled, _ = cells.unroll(5, x, layout="TNC", merge_outputs=True)
    assert_almost_equal(unrolled.asnumpy(), fused, rtol=1e-5, atol=1e-6)
    dropped = rnn.LSTM(4, num_layers=3, dropout=0.3)._unfuse()
    assert [type(c).__name__ for c in dropped._children.values()] == \
        ["LSTMCell", "DropoutCell", "LSTMCell", "DropoutCell", "LSTMCell"]
    with pytest.raises(NotImplementedError, match="projection"):
        rnn.LSTM(4, projection_size=2)._unfuse()


def test_parameter_initializer_reaches_module():
    stack = rnn.SequentialRNNCell()
    stack.add(rnn.LSTMCell(5, i2h_bias_initializer=mx.init.LSTMBias(2.5), prefix="l0_"))
    sym, _ = stack.unroll(1, mx.sym.var("data"), merge_outputs=True)
    assert "lstmbias" in sym.attr_dict()["l0_i2h_bias"]["__init__"]
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 1, 3))])
    mod.init_params()
    bias = mod.get_params()[0]["l0_i2h_bias"].asnumpy()
    assert_almost_equal(bias, np.concatenate([np.zeros(5), np.full(5, 2.5), np.zeros(10)]).astype(np.float32))


def test_unroll_valid_length_merges_when_unspecified():
    cell = rnn.GRUCell(4)
    cell.initialize()
    x = nd.array(RNG.rand(6, 3, 2))
    valid = nd.array([2, 6, 4])
    outs, states = cell.unroll(6, x, layout="TNC", valid_length=valid)
    assert isinstance(outs, nd.NDArray) and outs.shape == (6, 3, 4)
    listed, _ = cell.unroll(6, x, layout="TNC", valid_length=valid, merge_outputs=False)
    assert isinstance(listed, list) and len(listed) == 6
    assert_almost_equal(np.stack([o.asnumpy() for o in listed]), outs.asnumpy())
    for i, n in enumerate([2, 6, 4]):
        one, one_states = cell.unroll(n, x[:n, i:i + 1], layout="TNC", merge_outputs=True)
        assert_almost_equal(outs[:n, i:i + 1].asnumpy(), one.asnumpy(), rtol=1e-5, atol=1e-6)
        assert np.all(outs[n:, i].asnumpy() == 0)
        assert_almost_equal(states[0][i:i + 1].asnumpy(), one_states[0].asnumpy(), rtol=1e-5, atol=1e-6)
    # Without valid_length and merge_outputs, a merged input still gives per-step outputs.
    plain, _ = cell.unroll(6, x, layout="TNC")
    assert isinstance(plain, list)


class _Unroller(gluon.HybridBlock):
    def __init__(self, layout, **kwargs):
        super().__init__(**kwargs)
        self.layout = layout
        with self.name_scope():
            self.cell = rnn.LSTMCell(4, prefix="rnn_")

    def hybrid_forward(self, F, x, h, c, valid_length=None):
        return contrib.rnn.dynamic_unroll(self.cell, x, [h, c], layout=self.layout, valid_length=valid_length)


@pytest.mark.parametrize("layout", ["TNC", "NTC"])
@pytest.mark.parametrize("with_valid", [False, True])
def test_dynamic_unroll_hybridized_matches_imperative(layout, with_valid):
    shape = (5, 3, 2) if layout == "TNC" else (3, 5, 2)
    x = nd.array(RNG.rand(*shape))
    h, c = nd.array(RNG.rand(3, 4)), nd.array(RNG.rand(3, 4))
    valid = nd.array([2, 5, 3]) if with_valid else None
    results = []
    for hybridize in (False, True):
        mx.random.seed(1)
        block = _Unroller(layout)
        block.initialize()
        if hybridize:
            block.hybridize()
        x.attach_grad()
        with autograd.record():
            out, states = block(x, h, c, valid)
            loss = out.sum() + states[0].sum() + states[1].sum()
        loss.backward()
        results.append((out.asnumpy(), [s.asnumpy() for s in states], x.grad.asnumpy(),
                        block.cell.i2h_weight.grad().asnumpy()))
    (o1, s1, g1, w1), (o2, s2, g2, w2) = results
    assert_almost_equal(o1, o2, rtol=1e-5, atol=1e-6)
    for a, b in zip(s1, s2):
        assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)
    assert_almost_equal(g1, g2, rtol=1e-5, atol=1e-6)
    assert_almost_equal(w1, w2, rtol=1e-5, atol=1e-6)
    if with_valid:
        masked = np.moveaxis(o2, layout.find("T"), 0)
        assert np.all(masked[2:, 0] == 0) and np.all(masked[3:, 2] == 0)

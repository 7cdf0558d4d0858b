"""weft.gluon.rnn: cells against numpy step equations with the same weights, unroll
against stepping, the fused layers against torch.nn.LSTM/GRU/RNN with copied weights and
against the cells, parameter names and layouts, and the argument errors."""
import numpy as np
import pytest
import torch

import weft as mx
from weft import autograd
from weft.gluon import rnn

N, T, I, H = 2, 4, 3, 5


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _init_cell(cell, seed, input_size=I):
    """Initialises `cell`, runs one step to settle deferred shapes, then sets every
    parameter to seeded random values; returns them by short name as numpy arrays."""
    cell.initialize()
    cell(mx.nd.zeros((N, input_size)), cell.begin_state(batch_size=N))
    r = np.random.RandomState(seed)
    values = {}
    for name, p in cell.collect_params().items():
        v = _f32(r.uniform(-0.5, 0.5, p.shape))
        p.set_data(mx.nd.array(v))
        values[name[len(cell.prefix):]] = v.astype(np.float64)
    return values


def _np_rnn_step(w, x, h, act):
    z = x @ w["i2h_weight"].T + w["i2h_bias"] + h @ w["h2h_weight"].T + w["h2h_bias"]
    return np.tanh(z) if act == "tanh" else np.maximum(z, 0)


def _np_lstm_step(w, x, h, c):
    g = x @ w["i2h_weight"].T + w["i2h_bias"] + h @ w["h2h_weight"].T + w["h2h_bias"]
    i, f, gg, o = np.split(g, 4, axis=1)
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
    return _sigmoid(o) * np.tanh(c2), c2


def _np_gru_step(w, x, h):
    xi = x @ w["i2h_weight"].T + w["i2h_bias"]
    hh = h @ w["h2h_weight"].T + w["h2h_bias"]
    xr, xz, xn = np.split(xi, 3, axis=1)
    hr, hz, hn = np.split(hh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def _data(seed, shape):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


# --- cells -------------------------------------------------------------------------------------

@pytest.mark.parametrize("act", ["tanh", "relu"])
def test_rnn_cell_step_matches_numpy(act):
    cell = rnn.RNNCell(H, activation=act, input_size=I)
    w = _init_cell(cell, 1)
    x, h = _data(2, (N, I)), _data(3, (N, H))
    out, states = cell(mx.nd.array(_f32(x)), [mx.nd.array(_f32(h))])
    want = _np_rnn_step(w, x, h, act)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert len(states) == 1
    np.testing.assert_allclose(states[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_lstm_cell_step_matches_numpy():
    cell = rnn.LSTMCell(H)  # input size deferred to the first call
    w = _init_cell(cell, 4)
    assert cell.i2h_weight.shape == (4 * H, I)
    x, h, c = _data(5, (N, I)), _data(6, (N, H)), _data(7, (N, H))
    out, (h2, c2) = cell(mx.nd.array(_f32(x)), [mx.nd.array(_f32(h)), mx.nd.array(_f32(c))])
    want_h, want_c = _np_lstm_step(w, x, h, c)
    np.testing.assert_allclose(out.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2.asnumpy(), want_c, rtol=1e-5, atol=1e-6)


def test_gru_cell_step_matches_numpy():
    cell = rnn.GRUCell(H, input_size=I)
    w = _init_cell(cell, 8)
    x, h = _data(9, (N, I)), _data(10, (N, H))
    out, (h2,) = cell(mx.nd.array(_f32(x)), [mx.nd.array(_f32(h))])
    want = _np_gru_step(w, x, h)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_cell_parameter_names_and_state_info():
    cell = rnn.LSTMCell(H, input_size=I, prefix="enc_")
    assert sorted(cell.collect_params().keys()) == ["enc_h2h_bias", "enc_h2h_weight", "enc_i2h_bias",
                                                    "enc_i2h_weight"]
    assert cell.state_info(3) == [{"shape": (3, H), "__layout__": "NC"}, {"shape": (3, H), "__layout__": "NC"}]
    states = cell.begin_state(batch_size=3)
    assert [s.shape for s in states] == [(3, H), (3, H)]
    assert all((s.asnumpy() == 0).all() for s in states)


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_lstm_unroll_equals_stepping_and_numpy(layout):
    cell = rnn.LSTMCell(H, input_size=I)
    w = _init_cell(cell, 11)
    seq = _data(12, (N, T, I))
    x = seq if layout == "NTC" else seq.transpose(1, 0, 2)
    outputs, (h, c) = cell.unroll(T, mx.nd.array(_f32(x)), layout=layout, merge_outputs=True)
    want_h, want_c = np.zeros((N, H)), np.zeros((N, H))
    want = []
    for t in range(T):
        want_h, want_c = _np_lstm_step(w, seq[:, t], want_h, want_c)
        want.append(want_h)
    want = np.stack(want, axis=1 if layout == "NTC" else 0)
    np.testing.assert_allclose(outputs.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy(), want_c, rtol=1e-5, atol=1e-6)

    # the same through explicit steps of the cell
    states = cell.begin_state(batch_size=N)
    for t in range(T):
        out, states = cell(mx.nd.array(_f32(seq[:, t])), states)
        np.testing.assert_allclose(out.asnumpy(), want.take(t, axis=1 if layout == "NTC" else 0),
                                   rtol=1e-5, atol=1e-6)


def test_unroll_list_inputs_and_unmerged_outputs():
    cell = rnn.GRUCell(H, input_size=I)
    w = _init_cell(cell, 13)
    seq = _data(14, (N, T, I))
    steps = [mx.nd.array(_f32(seq[:, t])) for t in range(T)]
    outputs, states = cell.unroll(T, steps, merge_outputs=False)
    assert isinstance(outputs, list) and len(outputs) == T
    h = np.zeros((N, H))
    for t in range(T):
        h = _np_gru_step(w, seq[:, t], h)
        np.testing.assert_allclose(outputs[t].asnumpy(), h, rtol=1e-5, atol=1e-6)
    merged, _ = cell.unroll(T, steps, merge_outputs=True)
    assert merged.shape == (N, T, H)
    np.testing.assert_allclose(merged.asnumpy()[:, -1], h, rtol=1e-5, atol=1e-6)


def test_unroll_with_begin_state():
    cell = rnn.RNNCell(H, input_size=I)
    w = _init_cell(cell, 15)
    seq, h0 = _data(16, (N, T, I)), _data(17, (N, H))
    outputs, (h,) = cell.unroll(T, mx.nd.array(_f32(seq)), begin_state=[mx.nd.array(_f32(h0))],
                                merge_outputs=True)
    want = h0
    for t in range(T):
        want = _np_rnn_step(w, seq[:, t], want, "tanh")
    np.testing.assert_allclose(h.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_unroll_valid_length_masks_outputs_and_picks_last_states():
    cell = rnn.RNNCell(H, input_size=I)
    w = _init_cell(cell, 18)
    seq = _data(19, (N, T, I))
    valid = np.array([2, 4])
    outputs, (h,) = cell.unroll(T, mx.nd.array(_f32(seq)), merge_outputs=True,
                                valid_length=mx.nd.array(_f32(valid)))
    out = outputs.asnumpy()
    for b in range(N):
        hb = np.zeros((1, H))
        for t in range(valid[b]):
            hb = _np_rnn_step(w, seq[b:b + 1, t], hb, "tanh")
            np.testing.assert_allclose(out[b, t], hb[0], rtol=1e-5, atol=1e-6)
        assert (out[b, valid[b]:] == 0).all()
        np.testing.assert_allclose(h.asnumpy()[b], hb[0], rtol=1e-5, atol=1e-6)


def test_sequential_cell_stacks():
    stack = rnn.SequentialRNNCell()
    with stack.name_scope():
        stack.add(rnn.LSTMCell(H, input_size=I))
        stack.add(rnn.GRUCell(H, input_size=H))
    stack.initialize()
    assert len(stack) == 2 and len(stack.state_info(N)) == 3
    seq = _data(20, (N, T, I))
    r = np.random.RandomState(21)
    for p in stack.collect_params().values():
        p.set_data(mx.nd.array(_f32(r.uniform(-0.5, 0.5, p.shape))))
    w0 = {k[len(stack[0].prefix):]: v.data().asnumpy().astype(np.float64) for k, v in stack[0].collect_params().items()}
    w1 = {k[len(stack[1].prefix):]: v.data().asnumpy().astype(np.float64) for k, v in stack[1].collect_params().items()}
    outputs, states = stack.unroll(T, mx.nd.array(_f32(seq)), merge_outputs=True)
    assert len(states) == 3
    h, c, g = np.zeros((N, H)), np.zeros((N, H)), np.zeros((N, H))
    for t in range(T):
        h, c = _np_lstm_step(w0, seq[:, t], h, c)
        g = _np_gru_step(w1, h, g)
    np.testing.assert_allclose(outputs.asnumpy()[:, -1], g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[2].asnumpy(), g, rtol=1e-5, atol=1e-6)
    # stepping the stack gives the same
    st = stack.begin_state(batch_size=N)
    for t in range(T):
        out, st = stack(mx.nd.array(_f32(seq[:, t])), st)
    np.testing.assert_allclose(out.asnumpy(), g, rtol=1e-5, atol=1e-6)


def test_residual_dropout_and_zoneout_cells():
    base = rnn.RNNCell(I, input_size=I)
    w = _init_cell(base, 22)
    res = rnn.ResidualCell(base)
    seq = _data(23, (N, T, I))
    outputs, _ = res.unroll(T, mx.nd.array(_f32(seq)), merge_outputs=True)
    h = np.zeros((N, I))
    for t in range(T):
        h = _np_rnn_step(w, seq[:, t], h, "tanh")
    np.testing.assert_allclose(outputs.asnumpy()[:, -1], h + seq[:, -1], rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="modifier"):
        base.begin_state(batch_size=N)

    drop = rnn.DropoutCell(0.5)
    x = mx.nd.array(_f32(seq))
    out, st = drop.unroll(T, x, merge_outputs=True)  # predict mode: identity
    np.testing.assert_allclose(out.asnumpy(), seq.astype(np.float32))
    assert st == []

    plain = rnn.GRUCell(H, input_size=I)
    wz = _init_cell(plain, 24)
    zone = rnn.ZoneoutCell(plain, zoneout_outputs=0.5, zoneout_states=0.5)
    outputs, _ = zone.unroll(T, x, merge_outputs=True)  # predict mode: no zoneout
    h = np.zeros((N, H))
    for t in range(T):
        h = _np_gru_step(wz, seq[:, t], h)
    np.testing.assert_allclose(outputs.asnumpy()[:, -1], h, rtol=1e-5, atol=1e-6)


def test_zoneout_in_training_keeps_old_values():
    cell = rnn.RNNCell(H, input_size=I)
    _init_cell(cell, 25)
    zone = rnn.ZoneoutCell(cell, zoneout_outputs=0.5)
    x = mx.nd.array(_f32(_data(26, (N, T, I))))
    with autograd.train_mode():
        outputs, _ = zone.unroll(T, x, merge_outputs=True)
    out = outputs.asnumpy()
    # step 0 zones out to the zero "previous output"; some elements must have, some not
    assert (out[:, 0] == 0).any() and (out[:, 0] != 0).any()


# --- fused layers --------------------------------------------------------------------------------

def _copy_to_torch(layer, tmod, num_layers, bidirectional):
    """Copies the Gluon layer's l{k}_/r{k}_ parameters into the torch module."""
    params = layer.collect_params()
    for k in range(num_layers):
        for d, suffix in (("l", ""), ("r", "_reverse"))[:2 if bidirectional else 1]:
            for g, tname in (("i2h", "ih"), ("h2h", "hh")):
                for kind in ("weight", "bias"):
                    v = params[layer.prefix + "%s%d_%s_%s" % (d, k, g, kind)].data().asnumpy()
                    getattr(tmod, "%s_%s_l%d%s" % (kind, tname, k, suffix)).data.copy_(torch.from_numpy(v))


def _randomize(block, seed):
    r = np.random.RandomState(seed)
    for p in block.collect_params().values():
        p.set_data(mx.nd.array(_f32(r.uniform(-0.4, 0.4, p.shape))))


@pytest.mark.parametrize("mode,layout,num_layers,bidir", [
    ("lstm", "TNC", 1, False), ("lstm", "NTC", 2, True), ("gru", "TNC", 2, False), ("gru", "NTC", 1, True),
    ("rnn_tanh", "TNC", 2, True), ("rnn_relu", "NTC", 1, False)])
def test_layer_matches_torch(mode, layout, num_layers, bidir):
    if mode == "lstm":
        layer = rnn.LSTM(H, num_layers=num_layers, layout=layout, bidirectional=bidir)
        tmod = torch.nn.LSTM(I, H, num_layers=num_layers, bidirectional=bidir)
    elif mode == "gru":
        layer = rnn.GRU(H, num_layers=num_layers, layout=layout, bidirectional=bidir)
        tmod = torch.nn.GRU(I, H, num_layers=num_layers, bidirectional=bidir)
    else:
        act = mode.split("_")[1]
        layer = rnn.RNN(H, num_layers=num_layers, activation=act, layout=layout, bidirectional=bidir)
        tmod = torch.nn.RNN(I, H, num_layers=num_layers, nonlinearity=act, bidirectional=bidir)
    layer.initialize()
    seq = _data(30, (T, N, I))
    x = seq if layout == "TNC" else seq.transpose(1, 0, 2)
    layer(mx.nd.array(_f32(x)))  # settles the deferred input size
    _randomize(layer, 31)
    _copy_to_torch(layer, tmod, num_layers, bidir)
    D = 2 if bidir else 1
    h0 = _data(32, (num_layers * D, N, H))
    states = [mx.nd.array(_f32(h0))]
    targs = torch.from_numpy(_f32(h0))
    if mode == "lstm":
        c0 = _data(33, (num_layers * D, N, H))
        states.append(mx.nd.array(_f32(c0)))
        targs = (targs, torch.from_numpy(_f32(c0)))
    out, new_states = layer(mx.nd.array(_f32(x)), states)
    with torch.no_grad():
        tout, tstates = tmod(torch.from_numpy(_f32(seq)), targs)
    tout = tout.numpy() if layout == "TNC" else tout.numpy().transpose(1, 0, 2)
    assert out.shape == tout.shape == ((T, N, D * H) if layout == "TNC" else (N, T, D * H))
    np.testing.assert_allclose(out.asnumpy(), tout, rtol=1e-4, atol=1e-5)
    tstates = list(tstates) if mode == "lstm" else [tstates]
    assert len(new_states) == len(tstates)
    for got, want in zip(new_states, tstates):
        np.testing.assert_allclose(got.asnumpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_layer_parameter_names_shapes_and_no_states_call():
    layer = rnn.LSTM(H, num_layers=2, bidirectional=True, input_size=I, prefix="lstm_")
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    assert shapes["lstm_l0_i2h_weight"] == (4 * H, I)
    assert shapes["lstm_r0_h2h_weight"] == (4 * H, H)
    assert shapes["lstm_l1_i2h_weight"] == (4 * H, 2 * H)
    assert shapes["lstm_r1_h2h_bias"] == (4 * H,)
    assert len(shapes) == 16
    layer.initialize()
    out = layer(mx.nd.ones((T, N, I)))
    assert isinstance(out, mx.nd.NDArray) and out.shape == (T, N, 2 * H)
    out, states = layer(mx.nd.ones((T, N, I)), layer.begin_state(batch_size=N))
    assert [s.shape for s in states] == [(4, N, H), (4, N, H)]


def test_lstm_layer_equals_cell_unroll():
    layer = rnn.LSTM(H, input_size=I, layout="NTC")
    layer.initialize()
    _randomize(layer, 40)
    cell = rnn.LSTMCell(H, input_size=I)
    cell.initialize()
    lp = layer.collect_params()
    for name, p in cell.collect_params().items():
        p.set_data(lp[layer.prefix + "l0_" + name[len(cell.prefix):]].data())
    x = mx.nd.array(_f32(_data(41, (N, T, I))))
    out_layer = layer(x)
    out_cell, _ = cell.unroll(T, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(out_layer.asnumpy(), out_cell.asnumpy(), rtol=1e-5, atol=1e-6)


def test_bidirectional_cell_equals_bidirectional_layer():
    layer = rnn.GRU(H, input_size=I, bidirectional=True, layout="NTC")
    layer.initialize()
    _randomize(layer, 42)
    bi = rnn.BidirectionalCell(rnn.GRUCell(H, input_size=I, prefix="l_"), rnn.GRUCell(H, input_size=I, prefix="r_"))
    bi.initialize()
    lp = layer.collect_params()
    for name, p in bi.collect_params().items():
        d, short = name.split("_", 1)
        p.set_data(lp[layer.prefix + d + "0_" + short].data())
    x = mx.nd.array(_f32(_data(43, (N, T, I))))
    out_cell, states = bi.unroll(T, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(out_cell.asnumpy(), layer(x).asnumpy(), rtol=1e-5, atol=1e-6)
    assert len(states) == 2
    with pytest.raises(NotImplementedError, match="unroll"):
        bi(mx.nd.ones((N, I)), states)


@pytest.mark.skipif(not hasattr(autograd, "record"), reason="weft.autograd.record is not there yet")
def test_lstm_layer_gradient_matches_torch():
    layer = rnn.LSTM(H, input_size=I)
    layer.initialize()
    _randomize(layer, 50)
    tmod = torch.nn.LSTM(I, H)
    _copy_to_torch(layer, tmod, 1, False)
    seq = _f32(_data(51, (T, N, I)))
    x = mx.nd.array(seq)
    x.attach_grad()
    with autograd.record():
        loss = (layer(x) ** 2).sum()
    loss.backward()
    tx = torch.from_numpy(seq).requires_grad_()
    (tmod(tx)[0] ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.asnumpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.collect_params()[layer.prefix + "l0_h2h_weight"].grad().asnumpy(),
                               tmod.weight_hh_l0.grad.numpy(), rtol=1e-4, atol=1e-5)


# --- errors ---------------------------------------------------------------------------------------

def test_layer_rejects_wrong_state_shape():
    layer = rnn.GRU(H, input_size=I)
    layer.initialize()
    with pytest.raises(ValueError, match=r"expected \(1, 2, 5\)"):
        layer(mx.nd.ones((T, N, I)), [mx.nd.zeros((1, N + 1, H))])


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="layout"):
        rnn.LSTM(H, layout="NCT")
    with pytest.raises(ValueError, match="activation"):
        rnn.RNN(H, activation="sigmoid")
    with pytest.raises(ValueError, match="hidden_size"):
        rnn.LSTMCell(0)
    cell = rnn.RNNCell(H, input_size=I)
    cell.initialize()
    with pytest.raises(ValueError, match="layout"):
        cell.unroll(T, mx.nd.ones((N, T, I)), layout="CTN")
    with pytest.raises(ValueError, match="length is 3"):
        cell.unroll(3, mx.nd.ones((N, T, I)))


# --- hybridized ------------------------------------------------------------------------------------

def test_hybridized_layer_equals_imperative():
    layer = rnn.LSTM(H, num_layers=2, input_size=I, layout="NTC", bidirectional=True)
    layer.initialize()
    _randomize(layer, 60)
    x = mx.nd.array(_f32(_data(61, (N, T, I))))
    want_out, want_states = layer(x, layer.begin_state(batch_size=N))
    layer.hybridize()
    for _ in range(2):  # the first call traces and caches the graph, the second reuses it
        out, states = layer(x, layer.begin_state(batch_size=N))
        np.testing.assert_allclose(out.asnumpy(), want_out.asnumpy(), rtol=1e-5, atol=1e-6)
        for got, want in zip(states, want_states):
            np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer(x).asnumpy(), want_out.asnumpy(), rtol=1e-5, atol=1e-6)


class _UnrollNet(mx.gluon.HybridBlock):
    """A cell unrolled inside hybrid_forward, then a dense head: the cell becomes part of the
    block's graph when hybridized (begin states made from the input's batch size)."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = cell
            self.head = mx.gluon.nn.Dense(3, flatten=False)

    def hybrid_forward(self, F, x):
        out, _ = self.cell.unroll(T, x, layout="NTC", merge_outputs=True)
        return self.head(out)


@pytest.mark.parametrize("make_cell", [lambda: rnn.LSTMCell(H, input_size=I), lambda: rnn.GRUCell(H, input_size=I),
                                       lambda: rnn.BidirectionalCell(rnn.RNNCell(H, input_size=I, prefix="l_"),
                                                                     rnn.RNNCell(H, input_size=I, prefix="r_"))],
                         ids=["lstm", "gru", "bidirectional"])
def test_cell_unrolled_in_hybridized_block(make_cell):
    net = _UnrollNet(make_cell())
    net.initialize()
    x = mx.nd.array(_f32(_data(62, (N, T, I))))
    want = net(x).asnumpy()
    net.hybridize()
    got = net(x).asnumpy()
    assert got.shape == (N, T, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _LayerNet(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.lstm = rnn.LSTM(H, num_layers=2, layout="NTC", bidirectional=True)
            self.head = mx.gluon.nn.Dense(3)

    def hybrid_forward(self, F, x):
        return self.head(self.lstm(x))


def test_layer_inside_hybridized_block():
    net = _LayerNet()
    net.initialize()
    x = mx.nd.array(_f32(_data(63, (N, T, I))))
    want = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_layer_sequence_length_equals_truncated_sequences():
    layer = rnn.GRU(H, input_size=I, layout="NTC", use_sequence_length=True)
    layer.initialize()
    _randomize(layer, 64)
    seq = _f32(_data(65, (N, T, I)))
    lengths = [2, T]
    out, (h,) = layer(mx.nd.array(seq), layer.begin_state(batch_size=N), mx.nd.array(_f32(lengths)))
    plain = rnn.GRU(H, input_size=I, layout="NTC")
    plain.initialize()
    for name, p in plain.collect_params().items():
        p.set_data(layer.collect_params()[layer.prefix + name[len(plain.prefix):]].data())
    for b, n in enumerate(lengths):
        want = plain(mx.nd.array(seq[b:b + 1, :n])).asnumpy()
        np.testing.assert_allclose(out.asnumpy()[b, :n], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h.asnumpy()[0, b], want[0, -1], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="pass sequence_length"):
        layer(mx.nd.array(seq))


def test_hybrid_sequential_cell_equals_sequential():
    cells = [rnn.LSTMCell(H, input_size=I, prefix="a_"), rnn.RNNCell(H, input_size=H, prefix="b_")]
    seq_cell = rnn.HybridSequentialRNNCell()
    for c in cells:
        seq_cell.add(c)
    seq_cell.initialize()
    _randomize(seq_cell, 66)
    x = mx.nd.array(_f32(_data(67, (N, T, I))))
    out, states = seq_cell.unroll(T, x, merge_outputs=True)
    h, c, g = cells[0].begin_state(batch_size=N) + cells[1].begin_state(batch_size=N)
    for t in range(T):
        o, (h, c) = cells[0](mx.nd.array(x.asnumpy()[:, t]), [h, c])
        o, (g,) = cells[1](o, [g])
    np.testing.assert_allclose(out.asnumpy()[:, -1], g.asnumpy(), rtol=1e-5, atol=1e-6)
    assert len(states) == 3
    with pytest.raises(TypeError, match="HybridRecurrentCell"):
        seq_cell.add(rnn.SequentialRNNCell())

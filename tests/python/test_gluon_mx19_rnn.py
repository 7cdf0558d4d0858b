"""MXNet 1.9's gluon.contrib.rnn: LSTMPCell, the convolutional RNN/LSTM/GRU cells (1-D to
3-D), VariationalDropoutCell and dynamic_unroll: one step against numpy/torch, unroll shapes
with merge_outputs, layouts and valid_length, numeric gradients of a step's graph."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import weft as mx
from weft import autograd
from weft.gluon import rnn
from weft.gluon.contrib import rnn as crnn
from weft.test_utils import check_numeric_gradient


def _x(shape, seed=0, scale=1.0):
    return np.random.RandomState(seed).uniform(-scale, scale, shape).astype(np.float32)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _p(cell):
    return {k[len(cell.prefix):]: v.data().asnumpy().astype(np.float64) for k, v in cell.collect_params().items()}


# --- LSTMPCell ------------------------------------------------------------------------------------

def _lstmp_ref(x, r, c, w):
    gates = x @ w["i2h_weight"].T + w["i2h_bias"] + r @ w["h2h_weight"].T + w["h2h_bias"]
    i, f, g, o = np.split(gates, 4, axis=1)
    c = _sig(f) * c + _sig(i) * np.tanh(g)
    h = _sig(o) * np.tanh(c)
    r = h @ w["h2r_weight"].T
    return r, c


def test_lstmp_step_matches_numpy():
    cell = crnn.LSTMPCell(6, 3, prefix="lp_")
    cell.initialize(mx.init.Uniform(0.5))
    x, r, c = _x((2, 5), 1), _x((2, 3), 2), _x((2, 6), 3)
    out, (r1, c1) = cell(mx.nd.array(x), [mx.nd.array(r), mx.nd.array(c)])
    w = _p(cell)
    assert w["i2h_weight"].shape == (24, 5) and w["h2h_weight"].shape == (24, 3) and w["h2r_weight"].shape == (3, 6)
    want_r, want_c = _lstmp_ref(x, r, c, w)
    np.testing.assert_allclose(out.asnumpy(), want_r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r1.asnumpy(), want_r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1.asnumpy(), want_c, rtol=1e-5, atol=1e-6)
    assert [s["shape"] for s in cell.state_info(4)] == [(4, 3), (4, 6)]
    assert repr(cell) == "LSTMPCell(5 -> 24 -> 3)"


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge", [True, False])
def test_lstmp_unroll_and_valid_length(layout, merge):
    cell = crnn.LSTMPCell(4, 2)
    cell.initialize(mx.init.Uniform(0.5))
    T, N, C = 4, 3, 5
    seq = _x((N, T, C), 4)
    data = seq if layout == "NTC" else seq.transpose(1, 0, 2)
    valid = np.array([4, 2, 1], dtype=np.float32)
    outs, states = cell.unroll(T, mx.nd.array(data), layout=layout, merge_outputs=merge,
                               valid_length=mx.nd.array(valid))
    w = _p(cell)
    r, c = np.zeros((N, 2)), np.zeros((N, 4))
    want = np.zeros((N, T, 2))
    last_r, last_c = np.zeros((N, 2)), np.zeros((N, 4))
    for t in range(T):
        r, c = _lstmp_ref(seq[:, t], r, c, w)
        alive = t < valid
        want[:, t] = r * alive[:, None]
        last_r[t + 1 == valid], last_c[t + 1 == valid] = r[t + 1 == valid], c[t + 1 == valid]
    if merge:
        got = outs.asnumpy()
        got = got if layout == "NTC" else got.transpose(1, 0, 2)
    else:
        assert len(outs) == T and outs[0].shape == (N, 2)
        got = np.stack([o.asnumpy() for o in outs], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), last_r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[1].asnumpy(), last_c, rtol=1e-5, atol=1e-6)


def test_lstmp_gradient():
    cell = crnn.LSTMPCell(3, 2, input_size=4, prefix="lp_")
    cell.initialize(mx.init.Uniform(0.5))
    out, states = cell(mx.sym.var("x"), [mx.sym.var("r"), mx.sym.var("c")])
    sym = mx.sym.Group([out, states[1]])
    loc = {"x": _x((2, 4), 5), "r": _x((2, 2), 6), "c": _x((2, 3), 7)}
    loc.update({k: v.data().asnumpy() for k, v in cell.collect_params().items()})
    check_numeric_gradient(sym, {k: v.astype(np.float64) for k, v in loc.items()}, numeric_eps=1e-3,
                           rtol=1e-2, atol=1e-4)


def test_lstmp_bad_sizes():
    with pytest.raises(ValueError, match="projection_size"):
        crnn.LSTMPCell(4, 0)


# --- convolutional cells -----------------------------------------------------------------------------

_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}


def _conv(x, w, b, pad, dilate):
    n = w.ndim - 2
    return _CONV[n](torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=pad,
                    dilation=dilate).numpy()


def _conv_ref(kind, x, states, w, i2h_pad, i2h_dilate, h2h_pad, h2h_dilate):
    i2h = _conv(x, w["i2h_weight"], w["i2h_bias"], i2h_pad, i2h_dilate)
    h2h = _conv(states[0], w["h2h_weight"], w["h2h_bias"], h2h_pad, h2h_dilate)
    if kind == "RNN":
        h = np.tanh(i2h + h2h)
        return h, [h]
    if kind == "LSTM":
        i, f, g, o = np.split(i2h + h2h, 4, axis=1)
        c = _sig(f) * states[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        return h, [h, c]
    ir, iz, inn = np.split(i2h, 3, axis=1)
    hr, hz, hn = np.split(h2h, 3, axis=1)
    r, z = _sig(ir + hr), _sig(iz + hz)
    n = np.tanh(inn + r * hn)
    h = (1 - z) * n + z * states[0]
    return h, [h]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_conv_cell_step_matches_torch(kind, dims):
    cls = getattr(crnn, "Conv%dD%sCell" % (dims, kind))
    spatial = (7, 6, 5)[:dims]
    in_shape = (2,) + spatial
    i2h_kernel, i2h_pad, i2h_dilate = 3, 1, (2,) * dims
    h2h_kernel, h2h_dilate = 3, (1,) * dims
    cell = cls(in_shape, 3, i2h_kernel, h2h_kernel, i2h_pad=i2h_pad, i2h_dilate=i2h_dilate, h2h_dilate=h2h_dilate)
    cell.initialize(mx.init.Uniform(0.3))
    gates = {"RNN": 1, "LSTM": 4, "GRU": 3}[kind]
    state_spatial = tuple(s + 2 * 1 - 2 * 2 for s in spatial)
    infos = cell.state_info(2)
    assert all(i["shape"] == (2, 3) + state_spatial for i in infos)
    assert len(infos) == (2 if kind == "LSTM" else 1)
    x = _x((2,) + in_shape, 8, 0.5)
    states = [_x(i["shape"], 9 + k, 0.5) for k, i in enumerate(infos)]
    out, new = cell(mx.nd.array(x), [mx.nd.array(s) for s in states])
    w = {k: v.astype(np.float32) for k, v in _p(cell).items()}
    assert w["i2h_weight"].shape == (3 * gates, 2) + (3,) * dims
    want, want_states = _conv_ref(kind, x, states, w, 1, 2, 1, 1)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    for got, ref in zip(new, want_states):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_conv_lstm_unroll_shapes_and_gradient():
    cell = crnn.Conv2DLSTMCell((2, 5, 5), 3, (3, 3), (3, 3), i2h_pad=(1, 1), prefix="cl_")
    cell.initialize(mx.init.Uniform(0.3))
    data = mx.nd.array(_x((4, 2, 2, 5, 5), 12))   # TNC...
    outs, states = cell.unroll(4, data, layout="TNC", merge_outputs=True)
    assert outs.shape == (4, 2, 3, 5, 5)
    assert [s.shape for s in states] == [(2, 3, 5, 5)] * 2
    outs, _ = cell.unroll(4, data, layout="TNC", merge_outputs=False)
    assert len(outs) == 4 and outs[3].shape == (2, 3, 5, 5)
    small = crnn.Conv1DGRUCell((2, 4), 2, 3, 3, i2h_pad=1, prefix="cg_")
    small.initialize(mx.init.Uniform(0.5))
    out, new = small(mx.sym.var("x"), [mx.sym.var("h")])
    loc = {"x": _x((1, 2, 4), 13), "h": _x((1, 2, 4), 14)}
    loc.update({k: v.data().asnumpy() for k, v in small.collect_params().items()})
    check_numeric_gradient(out, {k: v.astype(np.float64) for k, v in loc.items()}, numeric_eps=1e-3,
                           rtol=1e-2, atol=1e-4)


def test_conv_cell_errors():
    with pytest.raises(ValueError, match="h2h_kernel must be odd"):
        crnn.Conv2DRNNCell((1, 4, 4), 2, 3, 2)
    with pytest.raises(ValueError, match="input_shape"):
        crnn.Conv2DRNNCell((4, 4), 2, 3, 3)
    with pytest.raises(ValueError, match="channels-first"):
        crnn.Conv2DRNNCell((4, 4, 1), 2, 3, 3, conv_layout="NHWC")
    with pytest.raises(ValueError, match="i2h_kernel"):
        crnn.Conv3DGRUCell((1, 4, 4, 4), 2, (3, 3), 3)
    cell = crnn.Conv1DRNNCell((2, 6), 2, 3, 3)
    cell.initialize()
    with pytest.raises(mx.base.MXNetError):
        cell(mx.nd.ones((1, 3, 6)), [mx.nd.zeros((1, 2, 4))])[0].wait_to_read()


# --- variational dropout --------------------------------------------------------------------------------

@pytest.mark.parametrize("drop_states", [0.0, 0.3])
def test_variational_dropout_shares_the_mask_over_time(drop_states):
    base = rnn.RNNCell(8, prefix="vr_")
    cell = crnn.VariationalDropoutCell(base, drop_inputs=0.0, drop_states=drop_states, drop_outputs=0.5)
    cell.initialize(mx.init.Uniform(0.5))
    data = mx.nd.array(_x((3, 5, 4), 15))
    mx.random.seed(3)
    with autograd.record(train_mode=True):
        train, _ = cell.unroll(5, data, layout="NTC", merge_outputs=True)
    zeros = train.asnumpy() == 0
    assert zeros.any() and not zeros.all()
    for t in range(1, 5):   # one mask for the whole sequence
        np.testing.assert_array_equal(zeros[:, t], zeros[:, 0])
    plain, _ = cell.unroll(5, data, layout="NTC", merge_outputs=True)   # predict mode: no dropout
    if drop_states == 0:
        kept = ~zeros
        np.testing.assert_allclose(train.asnumpy()[kept], 2 * plain.asnumpy()[kept], rtol=1e-5, atol=1e-6)


def test_variational_dropout_inputs_mask_and_predict_mode():
    base = rnn.LSTMCell(4)
    cell = crnn.VariationalDropoutCell(base, drop_inputs=0.5)
    cell.initialize(mx.init.Uniform(0.5))
    data = _x((2, 3, 6), 16)
    plain, states = cell.unroll(3, mx.nd.array(data), merge_outputs=False)
    assert len(plain) == 3 and [s.shape for s in states] == [(2, 4), (2, 4)]
    # One input mask for the sequence: an input feature dropped for a sample is dropped at
    # every step, so the gradient reaching it is zero at every step, and only there.
    x = mx.nd.array(data)
    x.attach_grad()
    mx.random.seed(5)
    with autograd.record(train_mode=True):
        out, _ = cell.unroll(3, x, merge_outputs=True)
        out.sum().backward()
    assert out.shape == (2, 3, 4)
    dropped = x.grad.asnumpy() == 0
    assert dropped.any() and not dropped.all()
    for t in range(1, 3):
        np.testing.assert_array_equal(dropped[:, t], dropped[:, 0])
    with pytest.raises(ValueError, match="drop_outputs"):
        crnn.VariationalDropoutCell(rnn.RNNCell(2), drop_outputs=1.0)
    with pytest.raises(ValueError, match="BidirectionalCell"):
        crnn.VariationalDropoutCell(rnn.BidirectionalCell(rnn.RNNCell(2), rnn.RNNCell(2)), drop_states=0.1)


def test_variational_dropout_stepped_masks_repeat_until_reset():
    base = rnn.GRUCell(3)
    cell = crnn.VariationalDropoutCell(base, drop_inputs=0.5, drop_states=0.5)
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.ones((4, 6))
    states = cell.begin_state(batch_size=4)
    with autograd.record(train_mode=True):
        cell(x, states)
        first = cell._masks["inputs"].asnumpy().copy()
        cell(x, states)
        np.testing.assert_array_equal(cell._masks["inputs"].asnumpy(), first)
        assert set(np.unique(first)) <= {0.0, 2.0}
        assert cell._masks["states"].shape == (4, 3)
    cell.reset()
    assert not cell._masks


# --- dynamic_unroll ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_equals_unroll(layout):
    cell = rnn.LSTMCell(5)
    cell.initialize(mx.init.Uniform(0.5))
    T, N = 4, 3
    data = _x((T, N, 2), 17) if layout == "TNC" else _x((N, T, 2), 17)
    valid = mx.nd.array([2, 4, 1])
    begin = [mx.nd.array(_x((N, 5), 18)), mx.nd.array(_x((N, 5), 19))]
    out, states = crnn.dynamic_unroll(cell, mx.nd.array(data), begin, layout=layout, valid_length=valid)
    want, want_states = cell.unroll(T, mx.nd.array(data), begin, layout=layout, merge_outputs=True,
                                    valid_length=valid)
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(states, want_states):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
    out, states = crnn.dynamic_unroll(cell, mx.nd.array(data), begin, layout=layout)
    want, want_states = cell.unroll(T, mx.nd.array(data), begin, layout=layout, merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)


class _Unroller(mx.gluon.HybridBlock):
    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = cell

    def hybrid_forward(self, F, x):
        out, _ = self.cell.unroll(3, x, layout="NTC", merge_outputs=True)
        return out


@pytest.mark.parametrize("make,shape", [
    (lambda: crnn.LSTMPCell(4, 2, input_size=5), (2, 3, 5)),
    (lambda: crnn.Conv2DGRUCell((2, 4, 4), 3, 3, 3, i2h_pad=1), (2, 3, 2, 4, 4)),
    (lambda: crnn.Conv1DLSTMCell((2, 6), 2, 3, 3), (2, 3, 2, 6)),
    (lambda: crnn.VariationalDropoutCell(rnn.LSTMCell(4, input_size=5), drop_inputs=0.2, drop_outputs=0.3),
     (2, 3, 5)),
], ids=["lstmp", "conv2d_gru", "conv1d_lstm", "vardrop"])
def test_hybridized_unroll_equals_imperative(make, shape):
    net = _Unroller(make())
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(_x(shape, 20))
    want = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_sequential_cells_take_a_bidirectional_cell():
    # As in MXNet: a sequence holding a BidirectionalCell unrolls (each cell over the whole
    # sequence in turn) but cannot be stepped.
    for seq in (rnn.HybridSequentialRNNCell(), rnn.SequentialRNNCell()):
        bi = rnn.BidirectionalCell(rnn.LSTMCell(3, input_size=5), rnn.LSTMCell(3, input_size=5))
        top = rnn.GRUCell(2, input_size=6)
        seq.add(bi)
        seq.add(top)
        seq.initialize()
        x = mx.nd.array(np.random.RandomState(0).randn(2, 4, 5))
        out, states = seq.unroll(4, x, merge_outputs=True)
        mid, _ = bi.unroll(4, x, merge_outputs=True)
        ref, _ = top.unroll(4, mid, merge_outputs=True)
        assert out.shape == (2, 4, 2) and len(states) == 5
        np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
        with pytest.raises(NotImplementedError, match="unroll"):
            seq(x[:, 0], seq.begin_state(batch_size=2))

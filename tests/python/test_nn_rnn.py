"""The fused RNN operator against torch.nn.RNN/LSTM/GRU, numeric gradients and errors.

MXNet's packed parameter vector (what `pack` builds from a torch module): first every
weight, for each layer l, for each direction (forward, then reverse): the i2h weight
(G*H x I_l), the h2h weight (G*H x P) and, for an LSTM with projection, the h2r weight
(P x H); then every bias in the same order: the i2h bias (G*H), the h2h bias (G*H).
Gates are stacked as torch stacks them (LSTM i, f, g, o; GRU r, z, n), and MXNet's GRU
is torch's: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import weft
from weft import nd
from weft.base import _api
from weft.ndarray.ndarray import NDArray
from weft.test_utils import assert_almost_equal, check_numeric_gradient


def np_array(x, **kwargs):
    """nd.array keeping a numpy source's dtype: these tests compare float64 runs with
    torch's, where MXNet's nd.array would make float32 of the data."""
    kwargs.setdefault("dtype", getattr(x, "dtype", None))
    return nd.array(x, **kwargs)


GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}

# As the other comparisons with PyTorch: importing it left OpenMP one thread here, which
# would leave the operators' threaded paths (the RNN's split of sequences) untested.
torch.set_num_threads(2)


def torch_module(mode, I, H, L, bidir, proj=0):
    if mode == "lstm":
        return torch.nn.LSTM(I, H, num_layers=L, bidirectional=bidir, proj_size=proj)
    if mode == "gru":
        return torch.nn.GRU(I, H, num_layers=L, bidirectional=bidir)
    return torch.nn.RNN(I, H, num_layers=L, bidirectional=bidir,
                        nonlinearity="relu" if mode == "rnn_relu" else "tanh")


def torch_params(m, L, bidir):
    """The module's tensors in MXNet's packing order."""
    weights, biases = [], []
    for l in range(L):
        for sfx in ["", "_reverse"][: 2 if bidir else 1]:
            weights += [getattr(m, "weight_ih_l%d%s" % (l, sfx)), getattr(m, "weight_hh_l%d%s" % (l, sfx))]
            if getattr(m, "proj_size", 0):
                weights.append(getattr(m, "weight_hr_l%d%s" % (l, sfx)))
            biases += [getattr(m, "bias_ih_l%d%s" % (l, sfx)), getattr(m, "bias_hh_l%d%s" % (l, sfx))]
    return weights + biases


def pack(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors]).numpy()


def rnn_kwargs(mode, H, L, bidir, state_outputs=True, **extra):
    kw = dict(state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=state_outputs)
    kw.update(extra)
    return kw


def weft_grads(inputs, outputs, heads, params):
    """Input gradients through RNN's registered FGradient (autograd's path)."""
    keys = [k for k, v in params.items() if v is not None]
    vals = [nd.ndarray._param_str(params[k]) for k in keys]
    grads = _api.weft_imperative_gradient(_api.weft_op_get("RNN"), len(inputs), inputs, len(outputs), outputs,
                                          heads, len(keys), keys, vals)
    return [None if g is None else NDArray(g).asnumpy() for g in grads]


CASES = [
    # mode, T, N, I, H, L, bidirectional
    ("rnn_relu", 5, 3, 4, 6, 1, False),
    ("rnn_tanh", 4, 1, 3, 5, 2, True),
    ("lstm", 6, 3, 5, 7, 2, False),
    ("lstm", 3, 1, 4, 3, 1, True),
    ("lstm", 5, 2, 3, 4, 2, True),
    ("gru", 5, 3, 4, 6, 1, False),
    ("gru", 4, 2, 5, 3, 2, True),
    ("rnn_tanh", 7, 5, 9, 11, 1, False),
    # From 16 sequences each thread runs the time loop on its own rows (OverSequences).
    ("lstm", 4, 17, 5, 6, 2, True),
    ("gru", 3, 20, 4, 5, 2, True),
    ("rnn_relu", 3, 16, 3, 4, 1, False),
]


@pytest.mark.parametrize("mode,T,N,I,H,L,bidir", CASES)
def test_rnn_vs_torch(mode, T, N, I, H, L, bidir):
    torch.manual_seed(T * 100 + N * 10 + H)
    D = 2 if bidir else 1
    m = torch_module(mode, I, H, L, bidir)
    tensors = torch_params(m, L, bidir)
    x = torch.randn(T, N, I, requires_grad=True)
    h0 = torch.randn(L * D, N, H, requires_grad=True)
    c0 = torch.randn(L * D, N, H, requires_grad=True)
    if mode == "lstm":
        y, (hy, cy) = m(x, (h0, c0))
        touts = [y, hy, cy]
    else:
        y, hy = m(x, h0)
        touts = [y, hy]
    heads = [torch.randn_like(o) for o in touts]
    torch.autograd.backward(touts, heads)

    kw = rnn_kwargs(mode, H, L, bidir)
    ins = [np_array(x.detach().numpy()), np_array(pack(tensors)), np_array(h0.detach().numpy())]
    if mode == "lstm":
        ins.append(np_array(c0.detach().numpy()))
    outs = nd.RNN(*ins, **kw)
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert o.shape == tuple(t.shape)
        assert_almost_equal(o, t.detach().numpy(), rtol=1e-4, atol=1e-5)

    grads = weft_grads(ins, outs, [np_array(h.numpy()) for h in heads], kw)
    assert_almost_equal(grads[0], x.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[1], pack([t.grad for t in tensors]), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[2], h0.grad.numpy(), rtol=1e-3, atol=1e-4)
    if mode == "lstm":
        assert_almost_equal(grads[3], c0.grad.numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 3, 4])
def test_bidirectional_directions_share_threads(threads):
    # The two directions of a layer run their time loops at once (OverSequences): one thread
    # runs both in turn, 3 threads one direction each, 4 threads each direction on two
    # threads by rows (from 16 sequences). OpenMP's thread count is read at start-up, hence
    # the subprocess.
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import test_nn_rnn as t
        t.torch.set_num_threads(%d)
        for mode, N in (("lstm", 17), ("gru", 5), ("lstm", 33), ("rnn_tanh", 16)):
            t.test_rnn_vs_torch(mode, 4, N, 5, 6, 2, True)
        t.test_lstm_projection_vs_torch(18)
        t.test_sequence_length_matches_packed_sequence([5, 2, 3, 1, 4, 5, 5, 2, 3, 4, 1, 1, 5, 3, 2, 4, 5])
        print("ok")
    """ % (os.path.dirname(os.path.abspath(__file__)), threads))
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr


@pytest.mark.parametrize("N", [3, 18])
def test_lstm_projection_vs_torch(N):
    torch.manual_seed(7)
    T, I, H, P, L = 4, 5, 6, 3, 2
    m = torch_module("lstm", I, H, L, True, proj=P)
    tensors = torch_params(m, L, True)
    x = torch.randn(T, N, I, requires_grad=True)
    h0 = torch.randn(2 * L, N, P, requires_grad=True)
    c0 = torch.randn(2 * L, N, H, requires_grad=True)
    y, (hy, cy) = m(x, (h0, c0))
    heads = [torch.randn_like(o) for o in (y, hy, cy)]
    torch.autograd.backward([y, hy, cy], heads)
    kw = rnn_kwargs("lstm", H, L, True, projection_size=P)
    ins = [np_array(x.detach().numpy()), np_array(pack(tensors)), np_array(h0.detach().numpy()),
           np_array(c0.detach().numpy())]
    outs = nd.RNN(*ins, **kw)
    for o, t in zip(outs, (y, hy, cy)):
        assert_almost_equal(o, t.detach().numpy(), rtol=1e-4, atol=1e-5)
    grads = weft_grads(ins, outs, [np_array(h.numpy()) for h in heads], kw)
    for g, t in zip(grads, (x.grad, None, h0.grad, c0.grad)):
        if t is not None:
            assert_almost_equal(g, t.numpy(), rtol=1e-3, atol=1e-4)
    assert_almost_equal(grads[1], pack([t.grad for t in tensors]), rtol=1e-3, atol=1e-4)


def test_state_outputs_off_gives_one_output():
    T, N, I, H = 3, 2, 3, 4
    m = torch_module("gru", I, H, 1, False)
    x = np.random.randn(T, N, I).astype(np.float32)
    h0 = np.zeros((1, N, H), np.float32)
    out = nd.RNN(np_array(x), np_array(pack(torch_params(m, 1, False))), np_array(h0), state_size=H,
                 num_layers=1, mode="gru")
    assert isinstance(out, NDArray) and out.shape == (T, N, H)
    ref, _ = m(torch.from_numpy(x), torch.from_numpy(h0))
    assert_almost_equal(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lens", [[5, 2, 3], [5, 2, 3, 1, 4, 5, 5, 2, 3, 4, 1, 1, 5, 3, 2, 4, 5]])
def test_sequence_length_matches_packed_sequence(lens):
    torch.manual_seed(3)
    T, N, I, H = 5, len(lens), 4, 5
    m = torch_module("lstm", I, H, 1, True)
    x = torch.randn(T, N, I)
    h0 = torch.randn(2, N, H)
    c0 = torch.randn(2, N, H)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lens, enforce_sorted=False)
    py, (hy, cy) = m(packed, (h0, c0))
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(py, total_length=T)
    outs = nd.RNN(np_array(x.numpy()), np_array(pack(torch_params(m, 1, True))), np_array(h0.numpy()),
                  np_array(c0.numpy()), np_array(np.array(lens, np.int32), dtype=np.int32),
                  **rnn_kwargs("lstm", H, 1, True, use_sequence_length=True))
    assert_almost_equal(outs[0], y.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_almost_equal(outs[1], hy.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_almost_equal(outs[2], cy.detach().numpy(), rtol=1e-4, atol=1e-5)


def tiny_location(mode, L=1, bidir=False, T=3, N=2, I=3, H=4, seed=0):
    rng = np.random.RandomState(seed)
    D = 2 if bidir else 1
    G = GATES[mode]
    size = 0
    for l in range(L):
        In = I if l == 0 else D * H
        size += D * (G * H * In + G * H * H + 2 * G * H)
    loc = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.5, 0.5, (size,)), rng.uniform(-1, 1, (L * D, N, H))]
    if mode == "lstm":
        loc.append(rng.uniform(-1, 1, (L * D, N, H)))
    return loc


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
def test_numeric_gradient_float64(mode):
    check_numeric_gradient("RNN", tiny_location(mode), params=rnn_kwargs(mode, 4, 1, False),
                           numeric_eps=1e-5, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_numeric_gradient_two_layers_bidirectional(mode):
    check_numeric_gradient("RNN", tiny_location(mode, L=2, bidir=True, seed=1),
                           params=rnn_kwargs(mode, 4, 2, True), numeric_eps=1e-5, rtol=1e-5, atol=1e-7)


def test_numeric_gradient_sequences_split_across_threads():
    # 16 sequences: each thread runs the time loop on its own rows, forward and backward.
    check_numeric_gradient("RNN", tiny_location("lstm", L=2, bidir=True, T=2, N=16, I=2, H=3, seed=4),
                           params=rnn_kwargs("lstm", 3, 2, True), numeric_eps=1e-5, rtol=1e-5, atol=1e-7)


def test_numeric_gradient_without_state_outputs():
    # Only the output's gradient flows back; the final states are not outputs.
    check_numeric_gradient("RNN", tiny_location("rnn_tanh", L=2, bidir=True, seed=9),
                           params=rnn_kwargs("rnn_tanh", 4, 2, True, state_outputs=False), numeric_eps=1e-5,
                           rtol=1e-5, atol=1e-7)


def test_numeric_gradient_lstm_projection():
    T, N, I, H, P, L, D = 3, 2, 3, 4, 2, 2, 2
    rng = np.random.RandomState(10)
    size = sum(D * (4 * H * (I if l == 0 else D * P) + 4 * H * P + P * H + 8 * H) for l in range(L))
    loc = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.5, 0.5, (size,)), rng.uniform(-1, 1, (L * D, N, P)),
           rng.uniform(-1, 1, (L * D, N, H))]
    check_numeric_gradient("RNN", loc, params=rnn_kwargs("lstm", H, L, True, projection_size=P), numeric_eps=1e-5,
                           rtol=1e-5, atol=1e-7)


def test_numeric_gradient_lstm_clip_and_lengths():
    loc = tiny_location("lstm", bidir=True, seed=2) + [np.array([3, 1])]
    params = rnn_kwargs("lstm", 4, 1, True, use_sequence_length=True, lstm_state_clip_min=-0.6,
                        lstm_state_clip_max=0.6)
    check_numeric_gradient("RNN", loc, params=params, numeric_eps=1e-5, rtol=1e-5, atol=1e-7, grad_nodes=[0, 1, 2, 3])


def test_lstm_state_clip_bounds_cell():
    loc = tiny_location("lstm", seed=4)
    loc[3] *= 4
    out = nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("lstm", 4, 1, False, lstm_state_clip_min=-0.25,
                                                        lstm_state_clip_max=0.3))
    cy = out[2].asnumpy()
    assert cy.min() >= -0.25 and cy.max() <= 0.3
    assert np.isclose(cy.min(), -0.25) or np.isclose(cy.max(), 0.3)


def test_lstm_state_clip_nan():
    loc = tiny_location("lstm", seed=12)
    loc[3][0, 1, 2] = np.nan
    arrays = [np_array(a) for a in loc]
    clipped = nd.RNN(*arrays, **rnn_kwargs("lstm", 4, 1, False, lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5,
                                           lstm_state_clip_nan=True))
    assert np.isfinite(clipped[0].asnumpy()).all()
    kept = nd.RNN(*arrays, **rnn_kwargs("lstm", 4, 1, False, lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5))
    assert np.isnan(kept[2].asnumpy()[0, 1, 2])
    assert np.isfinite(kept[2].asnumpy()[0, 0]).all()


def test_dropout_between_layers():
    T, N, I, H, L = 4, 3, 5, 6, 2
    loc = tiny_location("lstm", L=L, T=T, N=N, I=I, H=H, seed=5)
    arrays = [np_array(a, dtype=np.float32) for a in loc]
    kw = rnn_kwargs("lstm", H, L, False, p=0.5)
    ref = nd.RNN(*arrays, **rnn_kwargs("lstm", H, L, False))
    # Inference ignores dropout.
    assert_almost_equal(nd.RNN(*arrays, **kw)[0], ref[0].asnumpy(), rtol=1e-6, atol=1e-7)
    weft.random.seed(11)
    with weft.autograd.train_mode():
        first = [o.asnumpy() for o in nd.RNN(*arrays, **kw)]
    weft.random.seed(11)
    with weft.autograd.train_mode():
        again = [o.asnumpy() for o in nd.RNN(*arrays, **kw)]
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    assert len(first) == 3  # the mask stays hidden
    assert not np.allclose(first[0], ref[0].asnumpy())


def test_backward_op_with_mask_and_add_to():
    T, N, I, H, L = 3, 2, 3, 4, 2
    loc = tiny_location("gru", L=L, T=T, N=N, I=I, H=H, seed=6)
    arrays = [np_array(a) for a in loc]
    kw = rnn_kwargs("gru", H, L, False, p=0.4)
    rng = np.random.RandomState(0)
    mask = (rng.uniform(size=(L - 1, T, N, H)) > 0.4) / 0.6
    dy = rng.uniform(-1, 1, (T, N, H))
    dhy = rng.uniform(-1, 1, (L, N, H))
    # A one-element reserve is no training forward's: the backward recomputes the forward.
    reserve = nd.zeros((1,), dtype=np.float64)
    grads = nd.invoke("_backward_RNN", arrays + [np_array(mask), reserve, np_array(dy), np_array(dhy)], kw)

    # Reference: numeric gradient of sum(y * dy) + sum(hy * dhy) with the mask applied by
    # running the layers one at a time.
    def objective(vals):
        x, params, h0 = vals
        size0 = 3 * H * I + 3 * H * H  # layer 0's weights, then layer 1's, then the biases
        w0 = params[:size0]
        w1 = params[size0:size0 + 6 * H * H]
        bias = params[size0 + 6 * H * H:]
        p0 = np.concatenate([w0, bias[:6 * H]])
        p1 = np.concatenate([w1, bias[6 * H:]])
        k1 = rnn_kwargs("gru", H, 1, False)
        y0, h0y = nd.RNN(np_array(x), np_array(p0), np_array(h0[:1]), **k1)
        x1 = y0.asnumpy() * mask[0]
        y1, h1y = nd.RNN(np_array(x1), np_array(p1), np_array(h0[1:]), **k1)
        return float(np.sum(y1.asnumpy() * dy) + np.sum(h0y.asnumpy() * dhy[0]) + np.sum(h1y.asnumpy() * dhy[1]))

    from weft.test_utils import numeric_grad
    num = numeric_grad(objective, [a.copy() for a in loc[:3]], eps=1e-5)
    for g, n in zip(grads, num):
        assert_almost_equal(g, n, rtol=1e-5, atol=1e-7)

    # kAddTo: writing into given gradients adds.
    base = [np_array(np.ones(a.shape)) for a in loc[:3]]
    nd.invoke("_backward_RNN", arrays + [np_array(mask), reserve, np_array(dy), np_array(dhy)], kw, out=base)
    for b, g in zip(base, grads):
        assert_almost_equal(b, g.asnumpy(), rtol=1e-6, atol=1e-8)


def test_float64_forward_matches_float32():
    loc = tiny_location("lstm", L=2, bidir=True, seed=8)
    kw = rnn_kwargs("lstm", 4, 2, True)
    a = nd.RNN(*[np_array(v, dtype=np.float64) for v in loc], **kw)
    b = nd.RNN(*[np_array(v, dtype=np.float32) for v in loc], **kw)
    assert a[0].dtype == np.float64
    for x, y in zip(a, b):
        assert_almost_equal(x.asnumpy().astype(np.float32), y, rtol=1e-4, atol=1e-5)


def test_error_wrong_parameter_length():
    loc = tiny_location("lstm")
    loc[1] = loc[1][:-3]
    with pytest.raises(weft.base.WeftError, match=r"'parameters' must be a vector of length 144 for mode=.lstm., num_layers=1.*got shape \(141,\)"):
        nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("lstm", 4, 1, False))


def test_error_wrong_state_shape():
    loc = tiny_location("gru")
    loc[2] = np.zeros((2, 2, 4))
    with pytest.raises(weft.base.WeftError, match=r"input 'state' has shape \(2,2,4\).*expects \(1,2,4\)"):
        nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("gru", 4, 1, False))


def test_error_wrong_cell_shape():
    loc = tiny_location("lstm")
    loc[3] = np.zeros((1, 2, 5))
    with pytest.raises(weft.base.WeftError, match=r"input 'state_cell' has shape \(1,2,5\)"):
        nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("lstm", 4, 1, False))


def test_error_projection_needs_lstm():
    loc = tiny_location("gru")
    with pytest.raises(weft.base.WeftError, match=r"'projection_size' is only supported with mode='lstm'.*'gru'"):
        nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("gru", 4, 1, False, projection_size=2))


def test_error_bad_mode_and_data_rank():
    loc = tiny_location("gru")
    with pytest.raises(weft.base.WeftError, match=r"mode.*expected one of.*got 'lstmm'"):
        nd.RNN(*[np_array(a) for a in loc], **rnn_kwargs("lstmm", 4, 1, False))
    with pytest.raises(weft.base.WeftError, match=r"'data' must be 3-D.*got \(3,2\)"):
        nd.RNN(np_array(np.zeros((3, 2))), *[np_array(a) for a in loc[1:]], **rnn_kwargs("gru", 4, 1, False))


def test_error_sequence_length_out_of_range():
    loc = tiny_location("gru") + [np.array([2, 4], np.int32)]
    arrays = [np_array(a) for a in loc[:3]] + [np_array(loc[3], dtype=np.int32)]
    with pytest.raises(weft.base.WeftError, match=r"sequence_length\[1\] = 4 is not in \[0, 3\]"):
        nd.RNN(*arrays, **rnn_kwargs("gru", 4, 1, False, use_sequence_length=True))[0].asnumpy()


def test_training_backward_reads_the_reserve_with_dropout():
    # Through autograd a training forward leaves its activations, dropout-masked layer
    # outputs included, in the reserve, and the backward starts from them. Seeded, the
    # dropout draws the same masks at every forward, so central differences of the training
    # forward check that gradient.
    T, N, I, H, L = 3, 2, 3, 4, 2
    loc = tiny_location("lstm", L=L, T=T, N=N, I=I, H=H, seed=12)
    kw = rnn_kwargs("lstm", H, L, False, p=0.5)
    dy = np.random.RandomState(1).uniform(-1, 1, (T, N, H))
    rest = [np_array(v, dtype=np.float64) for v in loc[1:]]

    def objective(values):
        weft.random.seed(21)
        with weft.autograd.train_mode():
            y = nd.RNN(np_array(values[0], dtype=np.float64), *rest, **kw)[0]
        return float(np.sum(y.asnumpy() * dy))

    x = np_array(loc[0], dtype=np.float64)
    x.attach_grad()
    weft.random.seed(21)
    with weft.autograd.record():
        y = nd.RNN(x, *rest, **kw)[0]
    y.backward(np_array(dy, dtype=np.float64))
    from weft.test_utils import numeric_grad
    num = numeric_grad(objective, [loc[0].copy()], eps=1e-5)[0]
    assert not np.allclose(objective([loc[0]]), float(np.sum(nd.RNN(x, *rest, **kw)[0].asnumpy() * dy)))
    assert_almost_equal(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)

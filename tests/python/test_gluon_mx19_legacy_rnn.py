"""MXNet 1.x's legacy symbolic `mx.rnn`: cells unrolled into graphs against numpy steps,
MXNet's parameter names, gate (un)packing, FusedRNNCell equal to its unfused stack (packing
layout included), modifiers, convolutional cells, bucketed sentence iteration and the
checkpoints that unpack the weights."""
import numpy as np
import pytest

import weft as mx


def _x(shape, seed, scale=1.0):
    return np.random.RandomState(seed).uniform(-scale, scale, shape).astype(np.float32)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _run(sym, values):
    """Forward of `sym` with every argument taken from `values` (by name)."""
    args = {n: mx.nd.array(values[n]) for n in sym.list_arguments()}
    ex = sym.bind(mx.cpu(), args=args)
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def _weights(names, shapes, seed):
    return {n: _x(s, seed + i, 0.5) for i, (n, s) in enumerate(zip(names, shapes)) if n != "data"}


def _step_ref(kind, x, states, w, p):
    i2h = x @ w[p + "i2h_weight"].T + w[p + "i2h_bias"]
    h2h = states[0] @ w[p + "h2h_weight"].T + w[p + "h2h_bias"]
    if kind == "rnn":
        h = np.tanh(i2h + h2h)
        return h, [h]
    if kind == "lstm":
        i, f, g, o = np.split(i2h + h2h, 4, axis=1)
        c = _sig(f) * states[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        return h, [h, c]
    ir, iz, inn = np.split(i2h, 3, axis=1)
    hr, hz, hn = np.split(h2h, 3, axis=1)
    r, z = _sig(ir + hr), _sig(iz + hz)
    h = (1 - z) * np.tanh(inn + r * hn) + z * states[0]
    return h, [h]


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_cells_unroll_matches_numpy(kind, layout):
    cls = {"rnn": mx.rnn.RNNCell, "lstm": mx.rnn.LSTMCell, "gru": mx.rnn.GRUCell}[kind]
    cell = cls(4, prefix="c_")
    T, N, C = 3, 2, 5
    seq = _x((N, T, C), 1)
    data = seq if layout == "NTC" else seq.transpose(1, 0, 2)
    outputs, states = cell.unroll(T, mx.sym.var("data"), layout=layout, merge_outputs=True)
    sym = mx.sym.Group([outputs] + states)
    assert sorted(n for n in sym.list_arguments() if n != "data") == \
        ["c_h2h_bias", "c_h2h_weight", "c_i2h_bias", "c_i2h_weight"]
    arg_shapes, _, _ = sym.infer_shape(data=data.shape)
    w = _weights(sym.list_arguments(), arg_shapes, 10)
    w["data"] = data
    got = _run(sym, w)
    st = [np.zeros((N, 4))] * (2 if kind == "lstm" else 1)
    want = []
    for t in range(T):
        h, st = _step_ref(kind, seq[:, t], st, w, "c_")
        want.append(h)
    want = np.stack(want, axis=1 if layout == "NTC" else 0)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    for g, s in zip(got[1:], st):
        np.testing.assert_allclose(g, s, rtol=1e-5, atol=1e-6)
    # per-step outputs and MXNet's node names
    cell.reset()
    outs, _ = cell.unroll(T, [mx.sym.var("x%d" % t) for t in range(T)], merge_outputs=False)
    assert len(outs) == T and outs[2].name == "c_t2_out"


def test_unpack_and_pack_weights():
    cell = mx.rnn.LSTMCell(3, prefix="l_")
    args = {"l_i2h_weight": mx.nd.array(_x((12, 2), 1)), "l_i2h_bias": mx.nd.array(_x((12,), 2)),
            "l_h2h_weight": mx.nd.array(_x((12, 3), 3)), "l_h2h_bias": mx.nd.array(_x((12,), 4)), "other": mx.nd.ones(1)}
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked) == sorted(["other"] + ["l_%s_%s_%s" % (g, k, t) for g in ("i2h", "h2h")
                                                   for k in "ifco" for t in ("weight", "bias")])
    np.testing.assert_array_equal(unpacked["l_i2h_f_weight"].asnumpy(), args["l_i2h_weight"].asnumpy()[3:6])
    packed = cell.pack_weights(unpacked)
    for k, v in args.items():
        np.testing.assert_array_equal(packed[k].asnumpy(), v.asnumpy())


@pytest.mark.parametrize("mode,bidirectional", [("lstm", True), ("gru", False), ("rnn_tanh", True), ("rnn_relu", False)])
def test_fused_equals_unfused(mode, bidirectional):
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode=mode, bidirectional=bidirectional, prefix="f_",
                                get_next_state=True)
    T, N, C = 4, 2, 5
    data = _x((T, N, C), 20)
    out, states = fused.unroll(T, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    arg_shapes, out_shapes, _ = out.infer_shape(data=data.shape)
    assert out_shapes == [(T, N, 3 * (2 if bidirectional else 1))]
    size = dict(zip(out.list_arguments(), arg_shapes))["f_parameters"][0]
    params = _x((size,), 21, 0.5)
    got = _run(out, {"data": data, "f_parameters": params})[0]
    unpacked = fused.unpack_weights({"f_parameters": mx.nd.array(params)})
    stack = fused.unfuse()
    ref_out, _ = stack.unroll(T, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    values = {k: v.asnumpy() for k, v in stack.pack_weights(unpacked).items()}
    values["data"] = data
    np.testing.assert_allclose(got, _run(ref_out, values)[0], rtol=1e-4, atol=1e-5)
    repacked = fused.pack_weights(unpacked)["f_parameters"].asnumpy()
    np.testing.assert_array_equal(repacked, params)
    assert len(states) == (2 if mode == "lstm" else 1)


def test_fused_initializer_sets_forget_bias():
    fused = mx.rnn.FusedRNNCell(4, mode="lstm", prefix="f_", forget_bias=2.0)
    out, _ = fused.unroll(2, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    mod = mx.mod.Module(out, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (2, 3, 5))])
    mod.init_params(mx.init.Xavier())
    args = fused.unpack_weights(mod.get_params()[0])
    np.testing.assert_array_equal(args["f_l0_i2h_f_bias"].asnumpy(), np.full(4, 2.0))
    np.testing.assert_array_equal(args["f_l0_i2h_i_bias"].asnumpy(), np.zeros(4))
    assert np.abs(args["f_l0_h2h_c_weight"].asnumpy()).max() > 0


def test_lstm_bias_initializer():
    cell = mx.rnn.LSTMCell(3, prefix="l_", forget_bias=1.5)
    out, _ = cell.unroll(2, mx.sym.var("data"), merge_outputs=True)
    mod = mx.mod.Module(out, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (2, 2, 4))])
    mod.init_params(mx.init.Xavier())
    bias = mod.get_params()[0]["l_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, np.r_[np.zeros(3), np.full(3, 1.5), np.zeros(6)])


def test_sequential_bidirectional_residual_dropout_zoneout():
    T, N, C = 3, 2, 4
    seq = _x((N, T, C), 30)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(C, prefix="g_")))
    stack.add(mx.rnn.DropoutCell(0.5))
    stack.add(mx.rnn.ZoneoutCell(mx.rnn.RNNCell(C, prefix="r_"), zoneout_outputs=0.3, zoneout_states=0.3))
    stack.add(mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(2, prefix="bl_"), mx.rnn.LSTMCell(2, prefix="br_")))
    out, states = stack.unroll(T, mx.sym.var("data"), merge_outputs=True)
    assert len(states) == 1 + 1 + 4
    arg_shapes, out_shapes, _ = out.infer_shape(data=seq.shape)
    assert out_shapes == [(N, T, 4)]
    w = _weights(out.list_arguments(), arg_shapes, 40)
    w["data"] = seq
    got = _run(out, w)[0]   # inference: dropout and zoneout pass through
    h = np.zeros((N, C))
    r = np.zeros((N, C))
    mid = []
    for t in range(T):
        g, [h] = _step_ref("gru", seq[:, t], [h], w, "g_")
        o, [r] = _step_ref("rnn", g + seq[:, t], [r], w, "r_")
        mid.append(o)
    fw, bw = [], [None] * T
    s = [np.zeros((N, 2))] * 2
    for t in range(T):
        o, s = _step_ref("lstm", mid[t], s, w, "bl_")
        fw.append(o)
    s = [np.zeros((N, 2))] * 2
    for t in reversed(range(T)):
        o, s = _step_ref("lstm", mid[t], s, w, "br_")
        bw[t] = o
    want = np.stack([np.concatenate([a, b], axis=1) for a, b in zip(fw, bw)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="modifier"):
        inner = mx.rnn.RNNCell(2)
        mx.rnn.ResidualCell(inner)
        inner.begin_state()
    with pytest.raises(NotImplementedError, match="unroll"):
        mx.rnn.FusedRNNCell(2)(mx.sym.var("x"), [])


def test_conv_lstm_step_matches_numpy():
    import torch
    import torch.nn.functional as TF
    cell = mx.rnn.ConvLSTMCell((2, 3, 5, 5), 4, activation="tanh", prefix="cl_")
    x, h, c = _x((2, 3, 5, 5), 50), _x((2, 4, 5, 5), 51), _x((2, 4, 5, 5), 52)
    assert cell.state_shape == [(0, 4, 5, 5)] * 2
    out, states = cell(mx.sym.var("x"), [mx.sym.var("h"), mx.sym.var("c")])
    sym = mx.sym.Group([out, states[1]])
    arg_shapes, _, _ = sym.infer_shape(x=x.shape, h=h.shape, c=c.shape)
    w = _weights(sym.list_arguments(), arg_shapes, 53)
    w.update({"x": x, "h": h, "c": c})
    got_h, got_c = _run(sym, w)
    conv = lambda a, k, b: TF.conv2d(torch.from_numpy(a), torch.from_numpy(k), torch.from_numpy(b), padding=1).numpy()
    gates = conv(x, w["cl_i2h_weight"], w["cl_i2h_bias"]) + conv(h, w["cl_h2h_weight"], w["cl_h2h_bias"])
    i, f, g, o = np.split(gates, 4, axis=1)
    want_c = _sig(f) * c + _sig(i) * np.tanh(g)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_h, _sig(o) * np.tanh(want_c), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="odd"):
        mx.rnn.ConvGRUCell((1, 1, 4, 4), 2, h2h_kernel=(2, 3))


def test_encode_sentences():
    coded, vocab = mx.rnn.encode_sentences([["a", "b"], ["b", "c", "a"]], invalid_label=0, start_label=0)
    assert vocab == {"\n": 0, "a": 1, "b": 2, "c": 3} and coded == [[1, 2], [2, 3, 1]]
    coded, vocab = mx.rnn.encode_sentences([["a", "z"]], vocab=dict(vocab), unknown_token="<unk>", start_label=10)
    assert coded == [[1, 10]] and vocab["<unk>"] == 10
    with pytest.raises(ValueError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["z"]], vocab={"a": 1})


@pytest.mark.parametrize("layout", ["NT", "TN"])
def test_bucket_sentence_iter(layout):
    rs = np.random.RandomState(0)
    sentences = [list(rs.randint(1, 9, n)) for n in [2] * 5 + [3] * 4 + [5] * 6 + [9]]
    with pytest.warns(UserWarning, match="discarded 1"):
        it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[3, 6], invalid_label=0, layout=layout)
    assert it.default_bucket_key == 6
    seen = {3: 0, 6: 0}
    batches = list(it)
    assert len(batches) == 4 + 3   # bucket 3 holds 9 sentences (4 batches), bucket 6 holds 6 (3)
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        if layout == "TN":
            data, label = data.T, label.T
        assert data.shape == (2, b.bucket_key)
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        assert (label[:, -1] == 0).all()
        seen[b.bucket_key] += 1
    assert seen == {3: 4, 6: 3}
    it.reset()
    assert len(list(it)) == 7
    auto = mx.rnn.BucketSentenceIter(sentences, batch_size=5)
    assert auto.buckets == [2, 5]


def test_rnn_checkpoints(tmp_path):
    cell = mx.rnn.GRUCell(3, prefix="g_")
    out, _ = cell.unroll(2, mx.sym.var("data"), merge_outputs=True)
    arg_shapes, _, _ = out.infer_shape(data=(1, 2, 4))
    args = {n: mx.nd.array(v) for n, v in _weights(out.list_arguments(), arg_shapes, 60).items()}
    prefix = str(tmp_path / "m")
    mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)(1, out, args, {})
    saved = mx.nd.load(prefix + "-0002.params")
    assert "arg:g_i2h_z_weight" in saved and "arg:g_i2h_weight" not in saved
    sym, arg, aux = mx.rnn.load_rnn_checkpoint(cell, prefix, 2)
    assert sorted(arg) == sorted(args)
    for k in args:
        np.testing.assert_array_equal(arg[k].asnumpy(), args[k].asnumpy())
    assert sym.list_arguments() == out.list_arguments()

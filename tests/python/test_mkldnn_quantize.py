"""The MKLDNN_QUANTIZE subgraph backend (MXNet 1.9's post-quantization fusions) on graphs
quantized by mx.contrib.quantization: what it folds, and that the folded graph computes what
the unfolded one does (to the rounding it removes)."""
import json

import numpy as np
import pytest

import weft as mx
from weft.contrib import quantization as qz


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"]]


def _nodes(sym):
    return {n["name"]: n for n in json.loads(sym.tojson())["nodes"]}


def _run(sym, args, aux, data):
    names, aux_names = set(sym.list_arguments()), set(sym.list_auxiliary_states())
    exe = sym.bind(mx.cpu(), {k: v for k, v in dict(args, data=mx.nd.array(data)).items() if k in names},
                   aux_states={k: v for k, v in aux.items() if k in aux_names})
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _params(sym, shape, seed):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {}
    for n, s in zip(sym.list_arguments(), arg_shapes):
        if n == "data":
            continue
        scale = np.sqrt(2.0 / int(np.prod(s[1:]))) if n.endswith("weight") else 0.1
        args[n] = mx.nd.array(rng.normal(0, scale, s))
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith("var") else rng.uniform(-0.2, 0.2, s))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _quantize(sym, args, aux, data):
    """The calibrated quantized graph in MXNet's unfused form (quantize_model: products then
    requantize, dequantize where float values are read)."""
    calib = mx.io.NDArrayIter(data[:32], batch_size=16)
    return qz.quantize_model(sym, args, aux, data_names=["data"], label_names=None, calib_mode="naive",
                             calib_data=calib, quantized_dtype="auto")


def _conv_net():
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv1")
    x = mx.sym.Flatten(x, name="flat0")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc0")


def _mlp():
    x = mx.sym.var("data")
    x = mx.sym.FullyConnected(x, num_hidden=32, name="fc0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    return mx.sym.FullyConnected(x, num_hidden=6, name="fc2")


def _attention(heads=2, dim=4):
    """One self-attention block, time major (S, B, E): interleaved q/k/v from a dense layer,
    scores, softmax (with an inference-time Dropout and a copy, identities), weighted values,
    the output projection."""
    e = heads * dim
    x = mx.sym.var("data")
    qkv = mx.sym.FullyConnected(x, num_hidden=3 * e, flatten=False, name="qkv")
    att = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=heads, name="qk")
    att = mx.sym.softmax(att, axis=-1, name="att_softmax")
    att = mx.sym.Dropout(att, p=0.1, name="att_drop")
    ctx = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=heads, name="valatt")
    ctx = mx.sym._internal._copy(ctx, name="ctx_copy")
    return mx.sym.FullyConnected(ctx, num_hidden=e, flatten=False, name="proj")


def _step_of(qsym, name):
    a = _nodes(qsym)[name]["attrs"]
    return max(abs(float(a["min_calib_range"])), abs(float(a["max_calib_range"]))) / 127.0


@pytest.mark.parametrize("net,shape", [(_conv_net, (8, 3, 8, 8)), (_mlp, (8, 20))])
def test_post_quantize_folds_requantize_and_dequantize(net, shape):
    sym = net()
    args, aux = _params(sym, shape, seed=1)
    data = np.random.RandomState(2).uniform(0, 1, (48,) + shape[1:]).astype(np.float32)
    qsym, qargs, qaux = _quantize(sym, args, aux, data)
    ops = _ops(qsym)
    products = ops.count("_contrib_quantized_conv") + ops.count("_contrib_quantized_fully_connected")
    assert ops.count("_contrib_requantize") == products and ops.count("_contrib_dequantize") == 1
    last_step = _step_of(qsym, "requantize_" + ("fc0" if net is _conv_net else "fc2"))

    fused = qsym.optimize_for("MKLDNN_QUANTIZE")
    fops = _ops(fused)
    assert "_contrib_requantize" not in fops and "_contrib_dequantize" not in fops
    assert fops.count("_contrib_quantized_conv") + fops.count("_contrib_quantized_fully_connected") == products
    nodes = _nodes(fused)
    last = nodes["quantized_" + ("fc0" if net is _conv_net else "fc2")]["attrs"]
    # The last dense layer writes float32 itself (its range dropped); the others write 8 bits.
    assert last["enable_float_output"] == "True" and "min_calib_range" not in last
    for n in nodes.values():
        if n["op"] in ("_contrib_quantized_conv", "_contrib_quantized_fully_connected") and n is not None and \
                n["attrs"].get("enable_float_output") != "True":
            assert "min_calib_range" in n["attrs"] and "max_calib_range" in n["attrs"], n["name"]
    assert fused.list_arguments() == qsym.list_arguments()

    # On the calibration data, inside every calibrated range (beyond it only the unfused
    # last layer's 8-bit output saturates).
    seen = data[:32]
    u = _run(qsym, qargs, qaux, seen)[0]
    f = _run(fused, qargs, qaux, seen)[0]
    # The unfused graph rounds the last layer to 8 bits (half a step) and, rarely, an inner
    # requantize rounds a tie the other way than the fused product (one step of that layer,
    # carried through the layers after it): a step and a half of the output's 8-bit grid.
    assert np.abs(f - u).max() <= 1.5 * last_step + 1e-6, (np.abs(f - u).max(), last_step)
    assert np.abs(f - u).mean() <= 0.3 * last_step
    # The int8 graph is still the float one's approximation.
    ref = _run(sym, args, aux, seen)[0]
    assert np.abs(f - ref).max() < 0.06 * np.abs(ref).max()


def test_requantize_fold_gives_the_same_integers():
    # An 8-bit output read as it is (no dequantize): the folded product writes the same
    # integers and the same range as product -> requantize.
    x = mx.sym.var("data")
    fc = mx.sym.contrib.quantized_fully_connected(x, mx.sym.var("w"), mx.sym.var("b"), mx.sym.var("dmin"),
                                                  mx.sym.var("dmax"), mx.sym.var("wmin"), mx.sym.var("wmax"),
                                                  mx.sym.var("bmin"), mx.sym.var("bmax"), num_hidden=24, name="fc")
    rq = mx.sym.contrib.requantize(fc[0], fc[1], fc[2], out_type="auto", min_calib_range=-3.0,
                                   max_calib_range=2.5, name="rq")
    g = mx.sym.Group([rq[0], rq[1], rq[2]])
    fused = g.optimize_for("MKLDNN_QUANTIZE")
    assert _ops(fused).count("_contrib_requantize") == 0
    assert _nodes(fused)["fc"]["attrs"]["min_calib_range"] == "-3.0"
    rng = np.random.RandomState(3)
    args = {"data": mx.nd.array(rng.randint(-127, 128, (16, 40)), dtype="int8"),
            "w": mx.nd.array(rng.randint(-127, 128, (24, 40)), dtype="int8"),
            "b": mx.nd.array(rng.randint(-127, 128, (24,)), dtype="int8"),
            "dmin": mx.nd.array([-1.0]), "dmax": mx.nd.array([1.0]), "wmin": mx.nd.array([-0.2]),
            "wmax": mx.nd.array([0.2]), "bmin": mx.nd.array([-0.5]), "bmax": mx.nd.array([0.5])}
    a = [o.asnumpy() for o in g.bind(mx.cpu(), args).forward()]
    b = [o.asnumpy() for o in fused.bind(mx.cpu(), args).forward()]
    assert a[0].dtype == b[0].dtype == np.int8
    np.testing.assert_array_equal(a[1:], b[1:])
    diff = np.abs(a[0].astype(np.int32) - b[0].astype(np.int32))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99
    # Uncalibrated: nothing to fold.
    rq2 = mx.sym.contrib.requantize(fc[0], fc[1], fc[2], name="rq2")
    assert "_contrib_requantize" in _ops(rq2.optimize_for("MKLDNN_QUANTIZE"))


def test_self_attention_block():
    sym = _attention()
    args, aux = _params(sym, (5, 3, 8), seed=4)
    data = np.random.RandomState(5).uniform(-1, 1, (48, 3, 8)).astype(np.float32)
    # Time-major data: calibrate and run over the sequence axis, (S, B, E) with S = 48 / 16.
    calib = mx.io.NDArrayIter(data[:32], batch_size=16)
    qsym, qargs, qaux = qz.quantize_model(sym, args, aux, data_names=["data"], label_names=None, calib_mode="naive",
                                          calib_data=calib, quantized_dtype="auto")
    ops = _ops(qsym)
    assert ops.count("_contrib_quantized_fully_connected") == 2 and "Dropout" in ops and "_copy" in ops
    fused = qsym.optimize_for("MKLDNN_QUANTIZE")
    fops = _ops(fused)
    assert "_sg_mkldnn_selfatt_qk" in fops and "_sg_mkldnn_selfatt_valatt" in fops
    assert "_contrib_interleaved_matmul_selfatt_qk" not in fops
    assert "Dropout" not in fops and "_copy" not in fops
    assert "_contrib_requantize" not in fops and "_contrib_dequantize" not in fops
    nodes = _nodes(fused)
    assert nodes["quantized_qkv"]["attrs"]["enable_float_output"] == "True"
    assert nodes["quantized_proj"]["attrs"]["enable_float_output"] == "True"
    # On the calibration data itself, so that no value leaves its calibrated range: beyond
    # it the unfused graph's 8-bit q/k/v and output saturate where the fused float32 ones
    # do not (MXNet's fusion does the same).
    seen = data[:32]
    u = _run(qsym, qargs, qaux, seen)[0]
    f = _run(fused, qargs, qaux, seen)[0]
    ref = _run(sym, args, aux, seen)[0]
    # The unfused graph rounds q/k/v (24 values per position) and the projection to 8 bits;
    # the fused one keeps them in float32. q/k/v's half steps reach the output through the
    # scores and the weighted values: measured 1.7-2.4 steps of the projection's output
    # grid at most and 0.4 on average over seeds; and the fused graph is the closer to
    # float32 of the two.
    step = _step_of(qsym, "requantize_proj")
    assert np.abs(f - u).max() <= 3 * step, (np.abs(f - u).max(), step)
    assert np.abs(f - u).mean() <= 0.6 * step, (np.abs(f - u).mean(), step)
    assert np.abs(f - ref).mean() < np.abs(u - ref).mean()
    assert np.abs(f - ref).max() < 0.06 * np.abs(ref).max()


def test_identities_and_attention_alone_compute_exactly_the_same():
    # Without quantization the rewrite of the attention products and the identity removal
    # change no value at all.
    sym = _attention()
    args, aux = _params(sym, (4, 2, 8), seed=6)
    data = np.random.RandomState(7).uniform(-1, 1, (4, 2, 8)).astype(np.float32)
    fused = sym.optimize_for("MKLDNN_QUANTIZE")
    fops = _ops(fused)
    assert "Dropout" not in fops and "_copy" not in fops and "_sg_mkldnn_selfatt_qk" in fops
    np.testing.assert_array_equal(_run(fused, args, aux, data)[0], _run(sym, args, aux, data)[0])
    # A Dropout reading a variable directly, or in mode 'always', stays (as in MXNet).
    d = mx.sym.Dropout(mx.sym.var("data"), p=0.5, name="d0")
    assert "Dropout" in _ops(d.optimize_for("MKLDNN_QUANTIZE"))
    d2 = mx.sym.Dropout(mx.sym.relu(mx.sym.var("data")), p=0.5, mode="always", name="d1")
    assert "Dropout" in _ops(d2.optimize_for("MKLDNN_QUANTIZE"))


def test_gluon_hybridize_with_mkldnn_quantize_backend():
    sym = _mlp()
    args, aux = _params(sym, (8, 20), seed=8)
    data = np.random.RandomState(9).uniform(0, 1, (48, 20)).astype(np.float32)
    qsym, qargs, qaux = _quantize(sym, args, aux, data)
    block = mx.gluon.SymbolBlock(qsym, [mx.sym.var("data")])
    for name, p in block.collect_params().items():
        p._load_init(qargs[name], mx.cpu())
    plain = block(mx.nd.array(data[:32])).asnumpy()
    block.hybridize(backend="MKLDNN_QUANTIZE")
    out = block(mx.nd.array(data[:32])).asnumpy()
    np.testing.assert_allclose(out, _run(qsym.optimize_for("MKLDNN_QUANTIZE"), qargs, qaux, data[:32])[0],
                               rtol=1e-6, atol=1e-6)
    assert not np.array_equal(out, plain)  # the backend did apply: the last layer is float32 now
    assert np.abs(out - plain).max() <= 1.5 * _step_of(qsym, "requantize_fc2") + 1e-6


def test_unknown_backend_name_errors(caplog):
    sym = _mlp()
    with pytest.raises(mx.base.MXNetError, match="SubgraphProperty MKLDNN_QUANTISE is not found"):
        sym.get_backend_symbol("MKLDNN_QUANTISE")
    with caplog.at_level("ERROR"):
        same = sym.optimize_for("MKLDNN_QUANTISE")
    assert "Error optimizing for backend 'MKLDNN_QUANTISE' cannot be found" in caplog.text
    assert same.tojson() == sym.tojson()

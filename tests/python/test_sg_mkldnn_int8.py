"""The int8 forms of MXNet's oneDNN subgraph nodes (quantized=True): quantize_model on a graph
partitioned by get_backend_symbol('MKLDNN_QUANTIZE'), the folds of the MKLDNN_QUANTIZE pass after
it (calibrated range, float output, concat scale alignment), the nodes' integers against numpy,
their results against the float graph, save/load, and their errors."""
import json
import os

import numpy as np
import pytest

import weft as mx
from weft.module import Module

Q = mx.contrib.quant


class _OneBatch(mx.io.DataIter):
    """A calibration iterator over one batch."""

    def __init__(self, arrays, names):
        super().__init__(arrays[0].shape[0])
        self.provide_data = [(n, a.shape) for n, a in zip(names, arrays)]
        self.provide_label = []
        self._batch = mx.io.DataBatch(arrays, [])

    def __iter__(self):
        yield self._batch


def _nodes(sym):
    nodes = json.loads(sym.tojson())["nodes"]
    for n in nodes:
        n.setdefault("attrs", {})
    return {n["name"]: n for n in nodes}


def _outputs_of(sym, name):
    """The names of node `name`'s outputs in sym."""
    return [o for o in sym.get_internals().list_outputs() if o.rsplit("_", 1)[0] == name or
            o.startswith(name + "_") and o[len(name) + 1:] in ("output", "min_output", "max_output")]


def _float_params(sym, shape, seed=0):
    mx.random.seed(seed)
    mod = Module(symbol=sym, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", shape)])
    mod.init_params(mx.init.Normal(0.5))
    args, auxs = mod.get_params()
    # Non-zero biases and non-trivial BatchNorm statistics, so that folding them matters.
    for k in args:
        if k.endswith("bias") or k.endswith("beta"):
            args[k] = mx.nd.random.uniform(-0.5, 0.5, shape=args[k].shape)
    for k in auxs:
        auxs[k] = mx.nd.random.uniform(0.5, 1.5, shape=auxs[k].shape) if k.endswith("var") else \
            mx.nd.random.uniform(-0.5, 0.5, shape=auxs[k].shape)
    return args, auxs


def _forward(sym, args, auxs, data, name="data"):
    mod = Module(symbol=sym, label_names=None, data_names=[name])
    mod.bind(for_training=False, data_shapes=[(name, data.shape)])
    mod.set_params(args, auxs, allow_missing=False)
    mod.forward(mx.io.DataBatch([data], []), is_train=False)
    return [o.asnumpy() for o in mod.get_outputs()]


def _quantize(sym, args, auxs, data, dtype="auto", calib_mode="naive", granularity="tensor-wise", excluded_ops=None):
    sg = sym.get_backend_symbol("MKLDNN_QUANTIZE")
    qsym, qargs, qauxs = Q.quantize_model(sym=sg, arg_params=args, aux_params=auxs, ctx=mx.cpu(),
                                          excluded_op_names=excluded_ops, quantized_dtype=dtype,
                                          calib_mode=calib_mode, calib_data=_OneBatch([data], ["data"]),
                                          label_names=None, num_calib_examples=data.shape[0], quantize_mode="full",
                                          quantize_granularity=granularity)
    return qsym, qargs, qauxs


def _conv_bn_relu():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=16, pad=(1, 1), name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    return mx.sym.Activation(bn, act_type="relu", name="relu")


def _rel_err(got, ref):
    return np.abs(got - ref).max() / np.abs(ref).max()


def test_quantize_model_on_sg_conv_graph_structure_and_values():
    sym = _conv_bn_relu()
    shape = (4, 8, 10, 10)
    args, auxs = _float_params(sym, shape)
    data = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, data)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, data, dtype="int8")
    nodes = _nodes(qsym)
    q = nodes["quantized_sg_mkldnn_conv_bn_act_0"]
    assert q["op"] == "_sg_mkldnn_conv" and q["attrs"]["quantized"] == "true"
    assert q["attrs"]["with_bn"] == "true" and q["attrs"]["with_act"] == "true"
    assert "min_calib_range" not in q["attrs"]
    req = nodes["requantize_sg_mkldnn_conv_bn_act_0"]
    assert float(req["attrs"]["min_calib_range"]) == pytest.approx(0.0)
    assert float(req["attrs"]["max_calib_range"]) == pytest.approx(ref.max(), rel=1e-5)
    assert nodes["data_quantize"]["attrs"]["out_type"] == "int8"
    # The weights, bias and BatchNorm stay float32 arguments (the node folds and quantizes them).
    assert set(qargs) >= {"conv_weight", "conv_bias", "bn_gamma", "bn_beta"} and set(qauxs) == set(auxs)
    assert qsym.list_inputs()[:1] == ["data"]
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    fnodes = _nodes(folded)
    assert not any(n["op"] == "_contrib_requantize" for n in fnodes.values())
    fq = fnodes["quantized_sg_mkldnn_conv_bn_act_0"]
    assert fq["attrs"]["min_calib_range"] == req["attrs"]["min_calib_range"]
    assert fq["attrs"]["max_calib_range"] == req["attrs"]["max_calib_range"]
    for s in (qsym, folded):
        got = _forward(s, qargs, qauxs, data)[0]
        # 8-bit data, per-channel 8-bit folded weights and an 8-bit output: within 2 % of the
        # largest output (measured 1.0-1.2 %).
        assert _rel_err(got, ref) < 0.02
    # The relu'd output is uint8 over (0, max).
    exe = folded.get_internals()["quantized_sg_mkldnn_conv_bn_act_0_output"].simple_bind(mx.cpu(), grad_req="null", data=shape)
    assert exe.outputs[0].dtype == np.uint8


def test_sg_conv_int32_output_matches_numpy():
    # No calibration of the output: int32 accumulators of int8 data times the weights quantized
    # per tensor, with the bias rescaled into them, exactly as numpy computes them.
    data = mx.sym.Variable("data")
    sym = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name="conv")
    shape = (2, 4, 6, 6)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, _ = _quantize(sym, args, auxs, x, dtype="int8")
    nodes = _nodes(qsym)
    (name,) = [k for k, n in nodes.items() if n["op"] == "_sg_mkldnn_conv"]
    assert "min_calib_range" not in nodes[name]["attrs"]
    internals = qsym.get_internals()
    exe = mx.sym.Group([internals["data_quantize_output"], internals[name + "_output"]]).bind(
        mx.cpu(), dict(qargs, data=x))
    exe.forward()
    xq = exe.outputs[0].asnumpy().astype(np.int64)
    attrs = nodes["data_quantize"]["attrs"]
    sd = max(abs(float(attrs["min_calib_range"])), abs(float(attrs["max_calib_range"]))) / 127
    w = args["conv_weight"].asnumpy().astype(np.float64)
    b = args["conv_bias"].asnumpy().astype(np.float64)
    sw = np.abs(w).max() / 127
    wq = np.clip(np.rint(w / sw), -127, 127).astype(np.int64)
    bq = np.rint(b / (sd * sw)).astype(np.int64)
    ref = np.zeros((2, 8, 4, 4), np.int64)
    for i in range(3):
        for j in range(3):
            ref += np.einsum("nchw,fc->nfhw", xq[:, :, i:i + 4, j:j + 4], wq[:, :, i, j])
    ref += bq[None, :, None, None]
    got = exe.outputs[1].asnumpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref)


def test_sg_conv_range_outputs_int32():
    data = mx.sym.Variable("data")
    sym = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name="conv")
    shape = (1, 3, 2, 2)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, _ = _quantize(sym, args, auxs, x, dtype="int8")
    node = [n for n in json.loads(qsym.tojson())["nodes"] if n["op"] == "_sg_mkldnn_conv"][0]
    internals = qsym.get_internals()
    outs = [node["name"] + "_" + s for s in ("output", "min_output", "max_output")]
    assert _outputs_of(qsym, node["name"]) == outs
    exe = mx.sym.Group([internals[o] for o in outs]).bind(mx.cpu(), dict(qargs, data=x))
    exe.forward()
    lo, hi = (float(v) for v in (_nodes(qsym)["data_quantize"]["attrs"]["min_calib_range"],
                                  _nodes(qsym)["data_quantize"]["attrs"]["max_calib_range"]))
    step = max(abs(lo), abs(hi)) / 127 * np.abs(args["conv_weight"].asnumpy()).max() / 127
    np.testing.assert_allclose(exe.outputs[2].asnumpy(), [step * 2147483647], rtol=1e-6)
    np.testing.assert_allclose(exe.outputs[1].asnumpy(), [-step * 2147483647], rtol=1e-6)


@pytest.mark.parametrize("act", ["gelu", "leaky", "relu6"])
def test_sg_conv_other_activations_in_float(act):
    # Activations oneDNN would apply to scaled integers run on the product's real values.
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name="conv")
    if act == "relu6":
        sym = mx.sym.clip(conv, 0, 6)
    else:
        sym = mx.sym.LeakyReLU(conv, act_type=act, slope=0.1)
    shape = (2, 4, 8, 8)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    (name,) = [k for k, n in _nodes(folded).items() if n["op"] == "_sg_mkldnn_conv"]
    assert _nodes(folded)[name]["attrs"]["with_act"] == "true"
    got = _forward(folded, qargs, qauxs, x)[0]
    assert _rel_err(got, ref) < 0.02
    out = folded.get_internals()[name + "_output"].simple_bind(mx.cpu(), grad_req="null", data=shape).outputs[0]
    assert out.dtype == (np.uint8 if act == "relu6" else np.int8)


def test_sg_conv_residual_sum_and_relu():
    data = mx.sym.Variable("data")
    a = mx.sym.Convolution(data, kernel=(1, 1), num_filter=8, name="a")
    b = mx.sym.Convolution(data, kernel=(1, 1), num_filter=8, name="b")
    sym = mx.sym.Activation(a + b, act_type="relu")
    shape = (2, 8, 5, 5)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    for dtype in ("int8", "auto"):
        qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype=dtype)
        folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
        summed = [n for n in _nodes(folded).values() if n["attrs"].get("with_sum") == "true"]
        assert len(summed) == 1 and summed[0]["attrs"]["with_postsum_act"] == "true"
        assert _rel_err(_forward(folded, qargs, qauxs, x)[0], ref) < 0.03


@pytest.mark.parametrize("granularity", ["tensor-wise", "channel-wise"])
@pytest.mark.parametrize("act", [None, "relu", "abs"])
def test_sg_fc_quantized(granularity, act):
    data = mx.sym.Variable("data")
    sym = mx.sym.FullyConnected(data, num_hidden=16, name="fc")
    if act == "relu":
        sym = mx.sym.Activation(sym, act_type="relu")
    elif act == "abs":
        sym = mx.sym.abs(sym)
    shape = (6, 20)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="auto", granularity=granularity)
    nodes = _nodes(qsym)
    (name,) = [k for k, n in nodes.items() if n["op"] == "_sg_mkldnn_fully_connected"]
    assert name.startswith("quantized_sg_mkldnn_fully_connected") and nodes[name]["attrs"]["quantized"] == "True"
    if granularity == "channel-wise":
        assert nodes[name]["attrs"]["channel_wise_quantize"] == "True"
        assert qargs["fc_weight"].dtype == np.float32
    else:
        assert qargs["fc_weight_quantize"].dtype == np.int8 and "fc_weight" not in qargs
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    fnode = _nodes(folded)[name]
    # A dense layer read by a dequantize writes float32 itself.
    assert fnode["attrs"]["enable_float_output"] == "True" and "min_calib_range" not in fnode["attrs"]
    assert _outputs_of(folded, name) == [name + "_output"]
    got = _forward(folded, qargs, qauxs, x)[0]
    assert _rel_err(got, ref) < 0.02
    if granularity == "tensor-wise":
        # Unfolded: int32 accumulators, requantized at run time, then dequantized.
        assert _rel_err(_forward(qsym, qargs, qauxs, x)[0], ref) < 0.03


def test_sg_fc_calibrated_8bit_output_before_another_layer():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=12, name="fc1")
    sym = mx.sym.FullyConnected(mx.sym.Activation(fc1, act_type="relu"), num_hidden=5, name="fc2")
    shape = (4, 10)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="auto")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    nodes = _nodes(folded)
    first = nodes["quantized_sg_mkldnn_fully_connected_eltwise_0"]
    assert "min_calib_range" in first["attrs"] and "enable_float_output" not in first["attrs"]
    out = folded.get_internals()["quantized_sg_mkldnn_fully_connected_eltwise_0_output"]
    assert out.simple_bind(mx.cpu(), grad_req="null", data=shape).outputs[0].dtype == np.uint8
    assert nodes["quantized_sg_mkldnn_fully_connected_1"]["attrs"]["enable_float_output"] == "True"
    assert _rel_err(_forward(folded, qargs, qauxs, x)[0], ref) < 0.03


def _interleaved_qkv(seq, batch, heads, d, seed=3):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1, 1, (seq, batch, heads * 3 * d)).astype(np.float32)


# extra: elements past heads * 3 * d on the last axis; as in MXNet the product then reads
# the input's first seq * batch * heads * 3 * d elements in the (seq, batch, heads * 3 * d) layout.
@pytest.mark.parametrize("extra", [0, 5])
def test_sg_selfatt_qk_int8_matches_numpy_and_float(extra):
    seq, batch, heads, d = 7, 2, 3, 8
    qkv = np.random.RandomState(3).uniform(-1, 1, (seq, batch, heads * 3 * d + extra)).astype(np.float32)
    data = mx.sym.Variable("data")
    sym = mx.sym.contrib.interleaved_matmul_selfatt_qk(data, heads=heads)
    x = mx.nd.array(qkv)
    ref = _forward(sym, {}, {}, x)[0]
    qsym, qargs, qauxs = _quantize(sym, {}, {}, x, dtype="int8")
    names = [k for k, n in _nodes(qsym).items() if n["op"] == "_sg_mkldnn_selfatt_qk"]
    assert names == ["quantized_sg_mkldnn_selfatt_qk_0"]
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    assert _nodes(folded)[names[0]]["attrs"]["enable_float_output"] == "True"
    got = _forward(folded, qargs, qauxs, x)[0]
    # The float output is the int8 queries times keys, scaled: numpy's to float32 rounding.
    r = np.abs(qkv).max()
    q8 = np.clip(np.sign(qkv) * np.floor(np.abs(qkv) * 127 / r + 0.5), -127, 127)
    q8 = q8.reshape(-1)[:seq * batch * heads * 3 * d].reshape(seq, batch, heads, 3, d)
    want = np.einsum("ibhd,jbhd->bhij", q8[:, :, :, 0], q8[:, :, :, 1]) * (r / 127) ** 2 / np.sqrt(d)
    np.testing.assert_allclose(got, want.reshape(batch * heads, seq, seq), rtol=1e-5, atol=1e-6)
    assert _rel_err(got, ref) < 0.02


def test_sg_selfatt_valatt_int8():
    # The calibration batches along axis 0 of both: seq == batch * heads.
    seq, batch, heads, d = 4, 2, 2, 4
    qkv = mx.nd.array(_interleaved_qkv(seq, batch, heads, d))
    att = mx.nd.array(np.random.RandomState(1).uniform(0, 1, (batch * heads, seq, seq)).astype(np.float32))
    q = mx.sym.Variable("qkv")
    a = mx.sym.Variable("att")
    sym = mx.sym.contrib.interleaved_matmul_selfatt_valatt(q, a, heads=heads)
    exe = sym.bind(mx.cpu(), {"qkv": qkv, "att": att})
    exe.forward()
    ref = exe.outputs[0].asnumpy()
    sg = sym.get_backend_symbol("MKLDNN_QUANTIZE")
    qsym, qargs, _ = Q.quantize_model(sym=sg, arg_params={}, aux_params={}, ctx=mx.cpu(), quantized_dtype="auto",
                                      calib_mode="naive", calib_data=_OneBatch([qkv, att], ["qkv", "att"]),
                                      data_names=("qkv", "att"), label_names=None, num_calib_examples=seq,
                                      quantize_mode="full")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    node = [n for n in _nodes(folded).values() if n["op"] == "_sg_mkldnn_selfatt_valatt"][0]
    assert node["attrs"]["quantized"] == "True" and node["attrs"]["enable_float_output"] == "True"
    assert _nodes(folded)["att_quantize"]["attrs"]["out_type"] == "auto"
    qexe = folded.bind(mx.cpu(), {"qkv": qkv, "att": att})
    qexe.forward()
    assert _rel_err(qexe.outputs[0].asnumpy(), ref) < 0.03
    # int32 form (no calibration of the output): the exact products of the 8-bit values.
    internals = qsym.get_internals()
    name = [n["name"] for n in _nodes(qsym).values() if n["op"] == "_sg_mkldnn_selfatt_valatt"][0]
    e = mx.sym.Group([internals[name + "_output"], internals["att_quantize_output"],
                      internals["qkv_quantize_output"]]).bind(mx.cpu(), {"qkv": qkv, "att": att})
    e.forward()
    acc, a8, v8 = (o.asnumpy().astype(np.int64) for o in e.outputs)
    assert e.outputs[0].dtype == np.int32 and e.outputs[1].dtype == np.uint8
    v = v8.reshape(seq, batch, heads, 3, d)[:, :, :, 2]
    want = np.einsum("bhij,jbhd->ibhd", a8.reshape(batch, heads, seq, seq), v).reshape(seq, batch, heads * d)
    np.testing.assert_array_equal(acc, want)


def test_concat_scale_alignment():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("weight")
    convs = [mx.sym.Convolution(data, weight=w * (k + 1), kernel=(3, 3), num_filter=8, no_bias=True,
                                name="conv%d" % k) for k in range(3)]
    sym = mx.sym.Concat(*convs, dim=1, name="concat")
    shape = (2, 4, 6, 6)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8")
    before = [float(n["attrs"]["max_calib_range"]) for n in _nodes(qsym).values()
              if n["op"] == "_contrib_requantize"]
    assert len(before) == 3 and len(set(before)) == 3
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    convs = [n for n in _nodes(folded).values() if n["op"] == "_sg_mkldnn_conv"]
    assert len(convs) == 3
    assert len({(n["attrs"]["min_calib_range"], n["attrs"]["max_calib_range"]) for n in convs}) == 1
    assert float(convs[0]["attrs"]["max_calib_range"]) == pytest.approx(max(before), rel=1e-6)
    assert _rel_err(_forward(folded, qargs, qauxs, x)[0], ref) < 0.02


def test_concat_alignment_skips_a_producer_read_elsewhere():
    data = mx.sym.Variable("data")
    a = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name="a")
    b = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name="b")
    c = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name="c")
    sym = mx.sym.Group([mx.sym.Concat(a, b, c, dim=1), mx.sym.Pooling(c, kernel=(2, 2), pool_type="max")])
    shape = (1, 3, 4, 4)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, _, _ = _quantize(sym, args, auxs, x, dtype="int8")
    folded = _nodes(qsym.get_backend_symbol("MKLDNN_QUANTIZE"))
    ranges = {k: (n["attrs"].get("min_calib_range"), n["attrs"].get("max_calib_range"))
              for k, n in folded.items() if n["op"] == "_sg_mkldnn_conv"}
    assert len(ranges) == 3
    ab = [v for k, v in ranges.items() if not k.endswith("_2")]
    assert ab[0] == ab[1]


def test_quantized_graph_save_load_round_trip(tmp_path):
    sym = _conv_bn_relu()
    shape = (2, 8, 6, 6)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="auto")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    want = _forward(folded, qargs, qauxs, x)[0]
    prefix = str(tmp_path / "q")
    folded.save(prefix + "-symbol.json")
    saved = json.load(open(prefix + "-symbol.json"))
    node = [n for n in saved["nodes"] if n["op"] == "_sg_mkldnn_conv"][0]
    # MXNet's layout: the fused operators under "subgraphs", the flags as attributes.
    assert "subgraphs" in node and "subgraph" not in node["attrs"] and node["attrs"]["quantized"] == "true"
    mx.nd.save(prefix + "-0000.params", dict({"arg:" + k: v for k, v in qargs.items()},
                                             **{"aux:" + k: v for k, v in qauxs.items()}))
    loaded = mx.sym.load(prefix + "-symbol.json")
    np.testing.assert_array_equal(_forward(loaded, qargs, qauxs, x)[0], want)
    net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    net.hybridize()
    np.testing.assert_array_equal(net(x).asnumpy(), want)


def test_empty_params_file_loads_as_no_parameters(tmp_path):
    data = mx.sym.Variable("data")
    sym = mx.sym.Concat(data, data, dim=1)
    sym.save(str(tmp_path / "c-symbol.json"))
    mx.nd.save(str(tmp_path / "c-0000.params"), {})
    assert mx.nd.load(str(tmp_path / "c-0000.params")) == []
    net = mx.gluon.SymbolBlock.imports(str(tmp_path / "c-symbol.json"), ["data"], str(tmp_path / "c-0000.params"))
    x = mx.nd.ones((1, 2))
    np.testing.assert_array_equal(net(x).asnumpy(), np.ones((1, 4)))
    # A list with arrays still has no names to load by.
    mx.nd.save(str(tmp_path / "l.params"), [mx.nd.ones(2)])
    with pytest.raises(ValueError, match="unnamed array list"):
        net.collect_params().load(str(tmp_path / "l.params"))


def test_init_params_fills_quantized_weights():
    data = mx.sym.Variable("data")
    sym = mx.sym.FullyConnected(data, num_hidden=6, name="fc")
    shape = (3, 5)
    args, auxs = _float_params(sym, shape)
    qsym, _, _ = _quantize(sym, args, auxs, mx.nd.random.uniform(-1, 1, shape=shape))
    mod = Module(symbol=qsym, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", shape)])
    mod.init_params(initializer=mx.init.Xavier(magnitude=2.0))
    got, _ = mod.get_params()
    w = got["fc_weight_quantize"].asnumpy()
    assert w.dtype == np.int8 and w.min() >= -127 and w.max() <= 127 and len(np.unique(w)) > 3
    assert (got["fc_bias_quantize"].asnumpy() == 0).all()
    assert (got["fc_weight_quantize_min"].asnumpy() == 0).all() and (got["fc_weight_quantize_max"].asnumpy() == 1).all()


def test_mkldnn_backend_removes_identities_and_fuses_self_attention():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    sym = mx.sym.Activation(mx.sym.identity(fc), act_type="relu")
    nodes = _nodes(sym.get_backend_symbol("MKLDNN"))
    assert [n["op"] for n in nodes.values() if n["op"] != "null"] == ["_sg_mkldnn_fully_connected"]
    assert "sg_mkldnn_fully_connected_eltwise_0" in nodes
    qk = mx.sym.contrib.interleaved_matmul_selfatt_qk(data, heads=2)
    assert [n["op"] for n in _nodes(qk.get_backend_symbol("MKLDNN")).values() if n["op"] != "null"] == \
        ["_sg_mkldnn_selfatt_qk"]
    # In quantize mode a convolution takes only a relu of the Activations, as MXNet's.
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=2)
    sig = mx.sym.Activation(conv, act_type="sigmoid")
    assert [n["op"] for n in _nodes(sig.get_backend_symbol("MKLDNN_QUANTIZE")).values() if n["op"] != "null"] == \
        ["_sg_mkldnn_conv", "Activation"]
    assert [n["op"] for n in _nodes(sig.get_backend_symbol("MKLDNN")).values() if n["op"] != "null"] == \
        ["_sg_mkldnn_conv"]


def test_quantized_fc_and_conv_read_uint8_with_a_symmetric_range():
    # MXNet's oneDNN rule: uint8 data stands for q * max(|min|, |max|) / 255 whatever min is.
    rng = np.random.RandomState(0)
    x = rng.randint(0, 63, (3, 8)).astype(np.uint8)
    w = rng.randint(-63, 63, (5, 8)).astype(np.int8)
    one = lambda v: mx.nd.array([v])
    out, lo, hi = mx.nd.contrib.quantized_fully_connected(mx.nd.array(x, dtype="uint8"), mx.nd.array(w, dtype="int8"),
                                                          one(-62.0), one(62.0), one(-63.0), one(63.0), num_hidden=5,
                                                          no_bias=True)
    np.testing.assert_array_equal(out.asnumpy(), x.astype(np.int64) @ w.astype(np.int64).T)
    step = (62.0 / 255) * (63.0 / 127)
    np.testing.assert_allclose(hi.asnumpy(), [step * 2147483647], rtol=1e-6)
    np.testing.assert_allclose(lo.asnumpy(), [-step * 2147483647], rtol=1e-6)
    xc = rng.randint(0, 127, (1, 2, 3, 3)).astype(np.uint8)
    wc = rng.randint(-127, 127, (4, 2, 1, 1)).astype(np.int8)
    out, _, hi = mx.nd.contrib.quantized_conv(mx.nd.array(xc, dtype="uint8"), mx.nd.array(wc, dtype="int8"),
                                              one(-127.0), one(127.0), one(-127.0), one(127.0), kernel=(1, 1),
                                              num_filter=4, no_bias=True)
    np.testing.assert_array_equal(out.asnumpy(), np.einsum("nchw,fc->nfhw", xc.astype(np.int64),
                                                           wc[:, :, 0, 0].astype(np.int64)))
    np.testing.assert_allclose(hi.asnumpy(), [(127.0 / 255) * 1.0 * 2147483647], rtol=1e-6)


def _quantized_node_symbol(sym, shape, **change):
    """The folded quantized graph of sym with the attributes of its one int8 subgraph node changed."""
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8")
    graph = json.loads(qsym.get_backend_symbol("MKLDNN_QUANTIZE").tojson())
    for n in graph["nodes"]:
        if n["op"].startswith("_sg_mkldnn"):
            n["attrs"].update(change)
            for k, v in list(n["attrs"].items()):
                if v is None:
                    del n["attrs"][k]
    return graph, qargs, qauxs, x


def test_int8_subgraph_node_errors():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=2, name="conv")
    graph, qargs, qauxs, x = _quantized_node_symbol(conv, (1, 2, 3, 3), max_calib_range=None)
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range and max_calib_range"):
        mx.sym.load_json(json.dumps(graph)).infer_type(data="float32")
    # The quantized convolution reads quantized data: float32 data is refused.
    graph, qargs, qauxs, x = _quantized_node_symbol(conv, (1, 2, 3, 3))
    node = [n for n in graph["nodes"] if n["op"] == "_sg_mkldnn_conv"][0]
    node["inputs"][0] = [0, 0, 0]
    with pytest.raises(mx.base.MXNetError, match="must be int8 or uint8"):
        mx.sym.load_json(json.dumps(graph)).infer_type(data="float32")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    args, auxs = _float_params(fc, (2, 4))
    xf = mx.nd.random.uniform(-1, 1, shape=(2, 4))
    qsym, qargs, _ = _quantize(fc, args, auxs, xf, granularity="channel-wise")
    # Channel-wise weights need a calibrated or float output (as MXNet's).
    exe = qsym.bind(mx.cpu(), dict(qargs, data=xf))
    with pytest.raises(mx.base.MXNetError, match="channel_wise_quantize needs min_calib_range"):
        exe.forward()
        exe.outputs[0].wait_to_read()
    qk = mx.sym.contrib.interleaved_matmul_selfatt_qk(data, heads=1)
    graph = json.loads(qk.get_backend_symbol("MKLDNN").tojson())
    for n in graph["nodes"]:
        if n["op"] == "_sg_mkldnn_selfatt_qk":
            n["attrs"]["quantized"] = "True"
            n["inputs"] += [[0, 0, 0], [0, 0, 0]]
    u8 = mx.sym.load_json(json.dumps(graph))
    with pytest.raises(mx.base.MXNetError, match="must be int8"):
        u8.infer_type(data="uint8")


@pytest.mark.parametrize("layer", ["conv", "fc"])
def test_kept_int8_weights_follow_writes_to_the_float_arrays(layer):
    # The nodes keep their quantized weights between calls; a write to the weights (or to the
    # BatchNorm folded into them) must be seen by the next call.
    data = mx.sym.Variable("data")
    if layer == "conv":
        sym = mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="conv"), name="bn",
                               fix_gamma=False)
        shape, weight, other = (2, 3, 4, 4), "conv_weight", "bn_gamma"
        granularity = "tensor-wise"
    else:
        sym = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
        shape, weight, other = (2, 5), "fc_weight", "fc_bias"
        granularity = "channel-wise"
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8", granularity=granularity)
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    exe = folded.bind(mx.cpu(), dict(qargs, data=x), aux_states=qauxs, grad_req="null")
    exe.forward()
    first = exe.outputs[0].asnumpy()
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), first)
    for name in (weight, other):
        exe.arg_dict[name][:] = exe.arg_dict[name] * 2
        exe.forward()
        changed = exe.outputs[0].asnumpy()
        assert not np.allclose(changed, first)
        fresh = folded.bind(mx.cpu(), {k: v.copy() for k, v in exe.arg_dict.items()},
                            aux_states={k: v.copy() for k, v in exe.aux_dict.items()}, grad_req="null")
        fresh.forward()
        np.testing.assert_array_equal(changed, fresh.outputs[0].asnumpy())
        first = changed


def test_kept_int8_weights_in_an_executor_follow_writes_to_the_moving_statistics():
    # The node writes BatchNorm's moving statistics as far as the engine knows (they are its
    # auxiliary states), so each call counts one write to them; the kept weights must still
    # be made again after any other write to them, between or after repeated calls, through
    # the executor's aux_dict and through Module.set_params.
    sym = _conv_bn_relu()
    shape = (2, 3, 6, 6)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8", granularity="channel-wise")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")

    def fresh(arg_arrays, aux_arrays):
        exe = folded.bind(mx.cpu(), {k: v.copy() for k, v in arg_arrays.items()},
                          aux_states={k: v.copy() for k, v in aux_arrays.items()}, grad_req="null")
        exe.forward()
        return exe.outputs[0].asnumpy()

    exe = folded.bind(mx.cpu(), dict(qargs, data=x), aux_states=dict(qauxs), grad_req="null")
    exe.forward()
    before = exe.outputs[0].asnumpy()
    for name, scale in (("bn_moving_mean", -3.0), ("bn_moving_var", 4.0), ("bn_moving_mean", 0.25)):
        for _ in range(3):
            exe.forward()
            np.testing.assert_array_equal(exe.outputs[0].asnumpy(), before)
        exe.aux_dict[name][:] = exe.aux_dict[name] * scale
        exe.forward()
        after = exe.outputs[0].asnumpy()
        assert not np.array_equal(after, before)
        np.testing.assert_array_equal(after, fresh(exe.arg_dict, exe.aux_dict))
        before = after

    mod = Module(symbol=folded, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", shape)])
    mod.set_params(qargs, qauxs)
    batch = mx.io.DataBatch([x], [])
    for _ in range(2):
        mod.forward(batch, is_train=False)
    ref = mod.get_outputs()[0].asnumpy()
    np.testing.assert_array_equal(ref, fresh(dict(qargs, data=x), qauxs))
    changed = dict(qauxs, bn_moving_var=qauxs["bn_moving_var"] * 9.0)
    mod.set_params(qargs, changed, force_init=True)
    mod.forward(batch, is_train=False)
    got = mod.get_outputs()[0].asnumpy()
    assert not np.array_equal(got, ref)
    np.testing.assert_array_equal(got, fresh(dict(qargs, data=x), changed))


def _resnet_like(pool_after):
    """Four conv+BN+relu layers, the third adding the first's output (a shortcut), then a 1x1
    convolution as the output; a max pooling reads the layer named by pool_after."""
    data = mx.sym.Variable("data")
    layers = {}

    def layer(x, name, kernel, stride=1, shortcut=None):
        y = mx.sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(kernel // 2,) * 2,
                               num_filter=8, name=name)
        y = mx.sym.BatchNorm(y, fix_gamma=False, name=name + "_bn")
        if shortcut is not None:
            y = y + shortcut
        layers[name] = mx.sym.Activation(y, act_type="relu", name=name + "_relu")
        return layers[name]
    r1 = layer(data, "c1", 3)
    r3 = layer(layer(r1, "c2", 3), "c3", 1, shortcut=r1)
    r4 = layer(r3, "c4", 3, stride=2)
    out = mx.sym.Convolution(r4, kernel=(1, 1), num_filter=4, name="c5")
    pool = mx.sym.Pooling(layers[pool_after], kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    return mx.sym.Group([out, pool])


@pytest.mark.parametrize("pool_after", ["c3", "c4"])
def test_int8_convolutions_pass_values_channels_last_in_an_executor(monkeypatch, pool_after):
    # Inside an executor the int8 convolutions hand each other their values as (n, h, w, c)
    # where every reader is one of them (as its data or its sum); the results are those of
    # the plain layouts, bit for bit, and a monitor sees every value in the plain layout.
    sym = _resnet_like(pool_after)
    shape = (2, 3, 8, 8)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="auto", granularity="channel-wise")
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")

    def run(monitor):
        exe = folded.bind(mx.cpu(), dict(qargs, data=x), aux_states=dict(qauxs), grad_req="null")
        seen = {}
        if monitor:
            exe.set_monitor_callback(lambda name, a: seen.__setitem__(name, a.asnumpy()))
        exe.forward()
        exe.forward()
        return exe.debug_str(), [o.asnumpy() for o in exe.outputs], seen

    text, outs, _ = run(False)
    lines = [ln for ln in text.splitlines() if ln.startswith("Int8 channels-last")]
    # c1's output (c2's data, c3's sum), c2's, and of c3 and c4 the one the pooling does not
    # read are channels-last; c5's output is the graph's. So c3 adds a channels-last sum,
    # into a plain output where the pooling reads it.
    assert len(lines) == (5 if pool_after == "c3" else 4)
    assert sum("output nhwc" in ln for ln in lines) == 3
    assert sum(": data nhwc" in ln for ln in lines) == 3
    assert sum(ln.endswith("sum nhwc") for ln in lines) == 1
    _, monitored_outs, seen = run(True)
    monkeypatch.setenv("WEFT_EXEC_INT8_CHANNELS_LAST", "0")
    plain_text, plain_outs, plain_seen = run(True)
    assert "Int8 channels-last" not in plain_text
    for got, ref, mon in zip(outs, plain_outs, monitored_outs):
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(mon, ref)
    assert seen.keys() == plain_seen.keys()
    for name in seen:
        np.testing.assert_array_equal(seen[name], plain_seen[name])
    # The float graph agrees with the int8 one within the quantization error.
    ref = _forward(sym, args, auxs, x)
    for got, want in zip(outs, ref):
        assert _rel_err(got, want) < 0.1


def test_concat_alignment_through_poolings_and_concats():
    # concat(a, b) -> pooling -> concat(., pooling(c)): one group, through the quantized
    # poolings and both concats, so a, b and c share one range.
    data = mx.sym.Variable("data")
    a, b, c = (mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name=n) for n in "abc")
    pooled = mx.sym.Pooling(mx.sym.Concat(a, b, dim=1), kernel=(2, 2), stride=(2, 2), pool_type="max")
    sym = mx.sym.Concat(pooled, mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type="max"), dim=1)
    shape = (1, 3, 4, 4)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8")
    before = {float(n["attrs"]["max_calib_range"]) for n in _nodes(qsym).values() if n["op"] == "_contrib_requantize"}
    assert len(before) == 3
    folded = qsym.get_backend_symbol("MKLDNN_QUANTIZE")
    convs = [n for n in _nodes(folded).values() if n["op"] == "_sg_mkldnn_conv"]
    assert len(convs) == 3
    assert len({(n["attrs"]["min_calib_range"], n["attrs"]["max_calib_range"]) for n in convs}) == 1
    assert float(convs[0]["attrs"]["max_calib_range"]) == pytest.approx(max(before), rel=1e-6)
    assert _rel_err(_forward(folded, qargs, qauxs, x)[0], ref) < 0.03


def test_excluding_a_layer_inside_a_subgraph_node_keeps_it_float():
    data = mx.sym.Variable("data")
    a = mx.sym.Activation(mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="a"), act_type="relu")
    sym = mx.sym.Convolution(a, kernel=(1, 1), num_filter=4, name="b")
    shape = (1, 3, 4, 4)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    ref = _forward(sym, args, auxs, x)[0]
    sg = sym.get_backend_symbol("MKLDNN_QUANTIZE")
    qsym, qargs, qauxs = Q.quantize_model(sym=sg, arg_params=args, aux_params=auxs, ctx=mx.cpu(),
                                          excluded_sym_names=["b"], quantized_dtype="int8", calib_mode="naive",
                                          calib_data=_OneBatch([x], ["data"]), label_names=None,
                                          num_calib_examples=1, quantize_mode="full")
    ops = {k: (n["op"], n["attrs"].get("quantized")) for k, n in _nodes(qsym).items() if n["op"] == "_sg_mkldnn_conv"}
    assert ops == {"quantized_sg_mkldnn_conv_act_0": ("_sg_mkldnn_conv", "true"), "sg_mkldnn_conv_1": ("_sg_mkldnn_conv", None)}
    assert _rel_err(_forward(qsym.get_backend_symbol("MKLDNN_QUANTIZE"), qargs, qauxs, x)[0], ref) < 0.03


def test_nodes_folding_the_same_arrays_differently_give_their_own_results():
    # Two convolutions read one weight and one BatchNorm's arrays but fold them with different
    # eps: each node's output must be its own branch's, in an executor and called by name
    # (inlined) twice. (Today each node's write to the shared moving statistics makes the
    # other re-make its weights, so the kept-weight key's eps is not reached here; this
    # checks the results whichever way the weights are kept.)
    data = mx.sym.Variable("data")
    w, g, b = mx.sym.Variable("conv_weight"), mx.sym.Variable("bn_gamma"), mx.sym.Variable("bn_beta")
    m, v = mx.sym.Variable("bn_moving_mean"), mx.sym.Variable("bn_moving_var")
    branches = []
    for i, eps in enumerate((1e-3, 0.9)):
        conv = mx.sym.Convolution(data, weight=w, kernel=(1, 1), num_filter=4, no_bias=True, name="conv%d" % i)
        branches.append(mx.sym.BatchNorm(conv, gamma=g, beta=b, moving_mean=m, moving_var=v, eps=eps,
                                         fix_gamma=False, name="bn%d" % i))
    sym = mx.sym.Group(branches)
    shape = (2, 3, 5, 5)
    args, auxs = _float_params(sym, shape)
    x = mx.nd.random.uniform(-1, 1, shape=shape)
    refs = _forward(sym, args, auxs, x)
    assert _rel_err(refs[1], refs[0]) > 0.1
    qsym, qargs, qauxs = _quantize(sym, args, auxs, x, dtype="int8")
    convs = [n for n in _nodes(qsym).values() if n["op"] == "_sg_mkldnn_conv"]
    assert len(convs) == 2
    for s in (qsym, qsym.get_backend_symbol("MKLDNN_QUANTIZE")):
        got = _forward(s, qargs, qauxs, x)
        for out, ref in zip(got, refs):
            assert _rel_err(out, ref) < 0.03
        # Inlined while autograd records, the nodes run as calls by name, twice each.
        block = mx.gluon.SymbolBlock(s, [mx.sym.Variable("data")])
        for name, p in block.collect_params().items():
            p._load_init(qargs[name] if name in qargs else qauxs[name], mx.cpu())
        block.hybridize(inline_limit=100)
        for _ in range(2):
            with mx.autograd.record(train_mode=False):
                got = block(x)
            for out, ref in zip(got, refs):
                assert _rel_err(out.asnumpy(), ref) < 0.03

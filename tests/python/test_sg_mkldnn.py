"""MXNet 1.9's oneDNN subgraph operators (_sg_mkldnn_conv, _sg_mkldnn_fully_connected,
_sg_mkldnn_selfatt_qk/_valatt): symbol JSON in the form MXNet saves after
optimize_for('MKLDNN') loads, runs as the unfused graph does, and saves back in that form."""
import json

import numpy as np
import pytest

import weft as mx
from weft import nd


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _fused_json(unfused, op, attrs, name="sg0"):
    """MXNet's JSON for `unfused` made one `op` node holding it as its subgraph: the
    subgraph's variables become the top graph's, in the order the subgraph reads them."""
    sub = json.loads(unfused.tojson())
    var_ids = [i for i, n in enumerate(sub["nodes"]) if n["op"] == "null"]
    nodes = [{"op": "null", "name": sub["nodes"][i]["name"], "inputs": []} for i in var_ids]
    nodes.append({"op": op, "name": name, "attrs": attrs, "inputs": [[k, 0, 0] for k in range(len(var_ids))],
                  "subgraphs": [sub]})
    top = {"nodes": nodes, "arg_nodes": list(range(len(var_ids))),
           "node_row_ptr": list(range(len(nodes) + 1)), "heads": [[len(nodes) - 1, 0, 0]],
           "attrs": {"mxnet_version": ["int", 10901]}}
    return json.dumps(top)


def _conv_block(with_sum):
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, eps=1e-4, name="bn")
    out = mx.sym.Activation(bn, act_type="relu", name="relu")
    if with_sum:
        out = mx.sym.Activation(mx.sym.elemwise_add(out, mx.sym.var("sum"), name="add"), act_type="relu",
                                name="relu2")
    return out


def _params(sym, shapes, rng):
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    args = {n: nd.array(rng.standard_normal(s).astype(np.float32))
            for n, s in zip(sym.list_arguments(), arg_shapes)}
    aux = {n: nd.array(rng.uniform(0.5, 1.5, s).astype(np.float32))
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _run(sym, args, aux):
    ex = sym.bind(mx.cpu(), {k: v.copy() for k, v in args.items()},
                  aux_states={k: v.copy() for k, v in aux.items()})
    return ex.forward(is_train=False)[0].asnumpy()


@pytest.mark.parametrize("with_sum", [False, True])
def test_sg_conv_json_runs_as_the_unfused_graph(rng, with_sum):
    unfused = _conv_block(with_sum)
    attrs = {"with_bn": "true", "with_act": "true"}
    if with_sum:
        attrs.update(with_sum="true", with_postsum_act="true")
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_conv", attrs))
    shapes = {"data": (2, 3, 6, 6)}
    if with_sum:
        shapes["sum"] = (2, 4, 6, 6)
    assert fused.list_arguments() == unfused.list_arguments()
    assert fused.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert fused.infer_shape(**shapes)[1] == [(2, 4, 6, 6)]
    args, aux = _params(unfused, shapes, rng)
    want = _run(unfused, args, aux)
    assert (want == 0).any() and (want > 0).any()
    np.testing.assert_allclose(_run(fused, args, aux), want, rtol=1e-5, atol=1e-5)
    # imperatively too, with the subgraph as the parameter
    node = json.loads(fused.tojson())["nodes"][-1]
    ins = [args[n] if n in args else aux[n] for n in unfused.list_inputs()]
    got = nd._internal._sg_mkldnn_conv(*ins, subgraph=json.dumps(node["subgraphs"][0]), **attrs)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_sg_conv_json_of_older_mxnet_names(rng):
    unfused = _conv_block(True)
    old = {"with_bn": "true", "with_relu": "true", "with_sum": "true", "with_postsum_relu": "true"}
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_conv", old))
    args, aux = _params(unfused, {"data": (1, 3, 5, 5), "sum": (1, 4, 5, 5)}, rng)
    np.testing.assert_allclose(_run(fused, args, aux), _run(unfused, args, aux), rtol=1e-5, atol=1e-5)


def test_sg_conv_json_round_trip(rng, tmp_path):
    unfused = _conv_block(False)
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true", "with_act": "true",
                                                                      "min_calib_range": "-1.5",
                                                                      "max_calib_range": "2.5"}))
    fused.save(str(tmp_path / "fused.json"))
    saved = json.loads((tmp_path / "fused.json").read_text())
    node = saved["nodes"][-1]
    assert node["op"] == "_sg_mkldnn_conv" and "subgraph" not in node["attrs"]
    assert node["attrs"]["with_bn"] == "true" and float(node["attrs"]["max_calib_range"]) == 2.5
    assert [n["op"] for n in node["subgraphs"][0]["nodes"] if n["op"] != "null"] == \
        ["Convolution", "BatchNorm", "Activation"]
    again = mx.sym.load(str(tmp_path / "fused.json"))
    assert json.loads(again.tojson()) == saved
    args, aux = _params(unfused, {"data": (1, 3, 5, 5)}, rng)
    np.testing.assert_allclose(_run(again, args, aux), _run(unfused, args, aux), rtol=1e-5, atol=1e-5)


def test_sg_fully_connected_runs_as_the_unfused_graph(rng):
    data = mx.sym.var("data")
    unfused = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=5, name="fc"), act_type="relu", name="r")
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_fully_connected", {"with_eltwise": "true"}))
    assert fused.list_arguments() == ["data", "fc_weight", "fc_bias"]
    args, aux = _params(unfused, {"data": (3, 7)}, rng)
    want = _run(unfused, args, aux)
    np.testing.assert_allclose(_run(fused, args, aux), want, rtol=1e-5, atol=1e-6)
    x = np.maximum(args["data"].asnumpy() @ args["fc_weight"].asnumpy().T + args["fc_bias"].asnumpy(), 0)
    np.testing.assert_allclose(want, x, rtol=1e-5, atol=1e-6)


def test_sg_selfatt_match_the_interleaved_operators(rng):
    seq, batch, heads, dim = 5, 2, 3, 4
    qkv = nd.array(rng.standard_normal((seq, batch, heads * 3 * dim)).astype(np.float32))
    qk = nd._internal._sg_mkldnn_selfatt_qk(qkv, heads=heads)
    want_qk = nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=heads)
    assert qk.shape == (batch * heads, seq, seq)
    np.testing.assert_array_equal(qk.asnumpy(), want_qk.asnumpy())
    # against numpy: per head, q k^T / sqrt(dim)
    x = qkv.asnumpy().reshape(seq, batch, heads, 3, dim)
    q, k, v = x[:, :, :, 0], x[:, :, :, 1], x[:, :, :, 2]
    ref = np.einsum("sbhd,tbhd->bhst", q, k).reshape(batch * heads, seq, seq) / np.sqrt(dim)
    np.testing.assert_allclose(qk.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    att = nd.softmax(qk, axis=-1)
    out = nd._internal._sg_mkldnn_selfatt_valatt(qkv, att, heads=heads)
    np.testing.assert_array_equal(out.asnumpy(), nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=heads).asnumpy())
    ref_out = np.einsum("bhst,tbhd->sbhd", att.asnumpy().reshape(batch, heads, seq, seq), v).reshape(seq, batch, -1)
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-5)


def test_sg_selfatt_json_with_subgraph(rng):
    qkv = mx.sym.var("qkv")
    inner = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2, name="qk")
    fused = mx.sym.load_json(_fused_json(inner, "_sg_mkldnn_selfatt_qk", {"heads": "2"}))
    x = nd.array(rng.standard_normal((4, 1, 2 * 3 * 3)).astype(np.float32))
    got = fused.bind(mx.cpu(), {"qkv": x}).forward()[0].asnumpy()
    np.testing.assert_array_equal(got, nd.contrib.interleaved_matmul_selfatt_qk(x, heads=2).asnumpy())
    node = json.loads(fused.tojson())["nodes"][-1]
    assert node["attrs"] == {"heads": "2"} and node["subgraphs"][0]["nodes"][-1]["op"] == \
        "_contrib_interleaved_matmul_selfatt_qk"


def test_sg_ops_refuse_backward(rng):
    qkv = nd.array(rng.standard_normal((3, 1, 6)).astype(np.float32))
    qkv.attach_grad()
    with pytest.raises(mx.base.MXNetError, match="inference-only"):
        with mx.autograd.record():
            y = nd._internal._sg_mkldnn_selfatt_qk(qkv, heads=1)
        y.backward()
    unfused = _conv_block(False)
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true", "with_act": "true"}))
    args, aux = _params(unfused, {"data": (1, 3, 4, 4)}, rng)
    with pytest.raises(mx.base.MXNetError, match="inference-only"):
        fused.bind(mx.cpu(), args, args_grad={k: v.zeros_like() for k, v in args.items()}, aux_states=aux)


def test_sg_ops_errors(rng):
    unfused = _conv_block(False)
    text = _fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "false", "with_act": "true"})
    with pytest.raises(mx.base.MXNetError, match="with_bn=False but its subgraph holds 1 BatchNorm"):
        mx.sym.load_json(text).list_arguments()
    bad = json.loads(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true"}))
    bad["nodes"][-1]["subgraphs"][0]["nodes"][3]["op"] = "NoSuchOp"
    with pytest.raises(mx.base.MXNetError, match="unknown operator 'NoSuchOp'"):
        mx.sym.load_json(json.dumps(bad))
    two = json.loads(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true"}))
    two["nodes"][-1]["subgraphs"].append(two["nodes"][-1]["subgraphs"][0])
    with pytest.raises(mx.base.MXNetError, match="expected 'subgraphs' to hold one graph"):
        mx.sym.load_json(json.dumps(two))
    heads = json.loads(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true"}))
    heads["nodes"][-1]["subgraphs"][0]["heads"].append([3, 0, 0])
    with pytest.raises(mx.base.MXNetError, match="must have one output, got 2"):
        mx.sym.load_json(json.dumps(heads))
    x = nd.ones((1, 3, 4, 4))
    with pytest.raises(mx.base.MXNetError, match="expected the fused subgraph"):
        nd._internal._sg_mkldnn_conv(x, nd.ones((4, 3, 3, 3)))


def test_quantized_sg_json_loads_with_mxnets_inputs():
    """An int8 symbol from MXNet's quantization: the node carries its range inputs and outputs
    (test_sg_mkldnn_int8.py runs such nodes)."""
    unfused = _conv_block(True)
    quant = json.loads(_fused_json(unfused, "_sg_mkldnn_conv", {"with_bn": "true", "with_act": "true",
                                                               "with_sum": "true", "with_postsum_act": "true",
                                                               "quantized": "true", "min_calib_range": "0",
                                                               "max_calib_range": "6.5"}))
    node = quant["nodes"].pop()
    names = ["data_min", "data_max", "sum_min", "sum_max"]
    for k, name in enumerate(names):
        quant["nodes"].append({"op": "null", "name": name, "inputs": []})
        node["inputs"].append([len(quant["nodes"]) - 1, 0, 0])
    quant["nodes"].append(node)
    quant["arg_nodes"] = list(range(len(quant["nodes"]) - 1))
    quant["node_row_ptr"] = list(range(len(quant["nodes"]) + 1))
    quant["heads"] = [[len(quant["nodes"]) - 1, k, 0] for k in range(3)]
    sym = mx.sym.load_json(json.dumps(quant))
    assert sym.list_arguments()[-4:] == names
    assert sym.list_outputs() == ["sg0_output", "sg0_min_output", "sg0_max_output"]
    again = json.loads(sym.tojson())["nodes"][-1]
    assert again["attrs"]["quantized"] == "true" and len(again["inputs"]) == len(node["inputs"])
    arg_shapes, out_shapes, _ = sym.infer_shape(data=(1, 3, 4, 4))
    assert arg_shapes[-4:] == [(1,)] * 4 and out_shapes[1:] == [(1,), (1,)]
    qkv = mx.sym.var("qkv")
    inner = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=1, name="qk")
    qk = json.loads(_fused_json(inner, "_sg_mkldnn_selfatt_qk", {"heads": "1", "quantized": "true",
                                                                 "enable_float_output": "true"}))
    node = qk["nodes"].pop()
    for name in ("min_qkv", "max_qkv"):
        qk["nodes"].append({"op": "null", "name": name, "inputs": []})
        node["inputs"].append([len(qk["nodes"]) - 1, 0, 0])
    qk["nodes"].append(node)
    qk["arg_nodes"] = [0, 1, 2]
    qk["node_row_ptr"] = list(range(len(qk["nodes"]) + 1))
    qk["heads"] = [[3, 0, 0]]
    sym = mx.sym.load_json(json.dumps(qk))
    assert sym.list_arguments() == ["qkv", "min_qkv", "max_qkv"] and sym.list_outputs() == ["sg0_output"]
    assert sym.infer_shape(qkv=(3, 1, 6))[1] == [(1, 3, 3)]
    assert sym.infer_type(qkv="int8")[1] == [np.float32]


def test_inference_executor_fuses_the_subgraph_again(rng, monkeypatch):
    """Bound for inference, the node is replaced by its operators, which the executor's oneDNN
    region pass fuses as it fuses the unfused graph; switched off, the node runs them itself."""
    unfused = _conv_block(True)
    attrs = {"with_bn": "true", "with_act": "true", "with_sum": "true", "with_postsum_act": "true"}
    fused = mx.sym.load_json(_fused_json(unfused, "_sg_mkldnn_conv", attrs))
    args, aux = _params(unfused, {"data": (2, 16, 8, 8), "sum": (2, 4, 8, 8)}, rng)
    want = _run(unfused, args, aux)

    def region(sym):
        return "oneDNN region" in sym.bind(mx.cpu(), args, aux_states=aux).debug_str()
    assert region(fused) == region(unfused)
    np.testing.assert_allclose(_run(fused, args, aux), want, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("WEFT_EXEC_INLINE_SUBGRAPHS", "0")
    assert not region(fused)
    # The node's own operators against the region's kernels (Winograd for 3x3 at any batch):
    # the same sums in another order.
    np.testing.assert_allclose(_run(fused, args, aux), want, rtol=1e-4, atol=1e-4)
    # two fused nodes in a row, the second reading the first
    monkeypatch.setenv("WEFT_EXEC_INLINE_SUBGRAPHS", "1")
    data = mx.sym.var("data")
    chain_unfused = mx.sym.Convolution(data, kernel=(1, 1), num_filter=16, name="c1")
    c1 = mx.sym.load_json(_fused_json(mx.sym.Activation(chain_unfused, act_type="relu", name="r1"),
                                      "_sg_mkldnn_conv", {"with_act": "true"}, name="sg1"))
    both = fused(data=c1)
    both_unfused = unfused(data=mx.sym.Activation(chain_unfused, act_type="relu", name="r1"))
    assert both.list_arguments() == both_unfused.list_arguments()
    args2, aux2 = _params(both_unfused, {"data": (2, 8, 8, 8), "sum": (2, 4, 8, 8)}, rng)
    np.testing.assert_allclose(_run(both, args2, aux2), _run(both_unfused, args2, aux2), rtol=1e-5, atol=1e-5)

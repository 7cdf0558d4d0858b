"""Symbol.get_backend_symbol / optimize_for and Gluon's hybridize(backend=...) /
optimize_for with MXNet's 'MKLDNN' subgraph backend: the fused _sg_mkldnn_* nodes MXNet 1.9
makes, bound and run, giving what the unfused graph gives."""
import json

import numpy as np
import pytest

import weft as mx
from weft import nd, sym
from weft.gluon import nn


def ops_of(s):
    return [(n["op"], n["name"]) for n in json.loads(s.tojson())["nodes"] if n["op"] != "null"]


def run(s, arrays, aux=None):
    exe = s.bind(mx.cpu(), {k: v for k, v in arrays.items() if k in s.list_arguments()},
                 aux_states={k: aux[k] for k in s.list_auxiliary_states()} if aux else None, grad_req="null")
    return exe.forward(is_train=False)[0].asnumpy()


def random_args(s, shapes, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = s.infer_shape(**shapes)
    args = {n: nd.array(rng.uniform(-1, 1, sh)) for n, sh in zip(s.list_arguments(), arg_shapes)}
    aux = {n: nd.array(rng.uniform(0.5, 1.5, sh)) for n, sh in zip(s.list_auxiliary_states(), aux_shapes)}
    return args, aux


def resnet_unit():
    data = sym.var("data")
    c1 = sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv0")
    b1 = sym.BatchNorm(c1, name="bn0", fix_gamma=False)
    a1 = sym.Activation(b1, act_type="relu", name="relu0")
    c2 = sym.Convolution(a1, kernel=(1, 1), num_filter=4, no_bias=True, name="conv1")
    # The residual operand on the left: the fused node still takes it as its last input.
    s = sym.elemwise_add(data, c2, name="add0")
    r = sym.Activation(s, act_type="relu", name="relu1")
    fc = sym.FullyConnected(sym.flatten(r, name="flat0"), num_hidden=5, name="fc0")
    return sym.Activation(fc, act_type="tanh", name="tanh0")


def test_mkldnn_backend_fuses_as_mxnet_and_computes_the_same():
    net = resnet_unit()
    part = net.get_backend_symbol("MKLDNN")
    assert ops_of(part) == [("_sg_mkldnn_conv", "sg_mkldnn_conv_bn_act_0"),
                            ("_sg_mkldnn_conv", "sg_mkldnn_conv_add_act_1"),
                            ("Flatten", "flat0"),
                            ("_sg_mkldnn_fully_connected", "sg_mkldnn_fully_connected_eltwise_0")]
    nodes = {n["name"]: n for n in json.loads(part.tojson())["nodes"]}
    first = nodes["sg_mkldnn_conv_bn_act_0"]
    assert part.attr_dict()["sg_mkldnn_conv_bn_act_0"] == {"with_bn": "true", "with_act": "true"}
    assert first["attrs"]["with_bn"] == "true" and first["attrs"]["with_act"] == "true"
    inner = first["subgraphs"][0]
    assert [n["op"] for n in inner["nodes"] if n["op"] != "null"] == ["Convolution", "BatchNorm", "Activation"]
    assert [n["name"] for n in inner["nodes"] if n["op"] == "null"] == [
        "data0", "conv0_weight0", "conv0_bias0", "bn0_gamma0", "bn0_beta0", "bn0_moving_mean0", "bn0_moving_var0"]
    second = nodes["sg_mkldnn_conv_add_act_1"]
    assert second["attrs"]["with_sum"] == "true" and second["attrs"]["with_postsum_act"] == "true"
    # Inputs: the convolution's data and weight, then the residual operand (the graph's data).
    names = [n["name"] for n in json.loads(part.tojson())["nodes"]]
    assert [names[e[0]] for e in second["inputs"]] == ["sg_mkldnn_conv_bn_act_0", "conv1_weight", "data"]
    assert nodes["sg_mkldnn_fully_connected_eltwise_0"]["attrs"]["with_eltwise"] == "True"
    assert sorted(part.list_arguments()) == sorted(net.list_arguments())
    assert part.list_auxiliary_states() == net.list_auxiliary_states()
    args, aux = random_args(net, {"data": (2, 4, 6, 6)})
    want = run(net, args, aux)
    np.testing.assert_allclose(run(part, args, aux), want, rtol=1e-5, atol=1e-5)
    # The partitioned graph survives JSON.
    again = sym.load_json(part.tojson())
    np.testing.assert_allclose(run(again, args, aux), want, rtol=1e-5, atol=1e-5)


def test_groups_stop_where_a_value_has_another_reader():
    data = sym.var("data")
    conv = sym.Convolution(data, kernel=(3, 3), num_filter=2, name="conv0")
    relu = sym.Activation(conv, act_type="relu", name="relu0")
    both = sym.Group([relu, sym.sigmoid(conv, name="sig0")])
    part = both.get_backend_symbol("MKLDNN")
    # The convolution's value is read twice: the convolution is fused alone.
    assert ops_of(part)[0] == ("_sg_mkldnn_conv", "sg_mkldnn_conv_0")
    assert [op for op, _ in ops_of(part)[1:]] == ["Activation", "sigmoid"]
    # As in MXNet, the held graph is not an attribute: a fused node without flags has none.
    assert "sg_mkldnn_conv_0" not in part.attr_dict()
    assert part.attr_dict()["relu0"] == {"act_type": "relu"}
    args, _ = random_args(both, {"data": (1, 3, 5, 5)}, seed=1)
    exe_a = both.bind(mx.cpu(), args, grad_req="null")
    exe_b = part.bind(mx.cpu(), args, grad_req="null")
    for x, y in zip(exe_a.forward(), exe_b.forward()):
        np.testing.assert_allclose(y.asnumpy(), x.asnumpy(), rtol=1e-6)
    # Two convolutions summed: the sum goes with the first one's group; the second is
    # fused alone and is the sum operand.
    x = sym.var("x")
    left = sym.BatchNorm(sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=2, name="ca"), name="bna")
    right = sym.Convolution(x, kernel=(1, 1), num_filter=2, name="cb")
    two = sym.Activation(left + right, act_type="sigmoid", name="out")
    part2 = two.get_backend_symbol("MKLDNN")
    assert ops_of(part2) == [("_sg_mkldnn_conv", "sg_mkldnn_conv_1"), ("_sg_mkldnn_conv", "sg_mkldnn_conv_bn_add_act_0")]
    args, aux = random_args(two, {"x": (2, 3, 4, 4)}, seed=5)
    np.testing.assert_allclose(run(part2, args, aux), run(two, args, aux), rtol=1e-5, atol=1e-6)
    # A 1-D convolution and an unsupported activation are left alone.
    c1d = sym.Convolution(sym.var("x"), kernel=(3,), num_filter=2, name="c1d")
    assert [op for op, _ in ops_of(c1d.get_backend_symbol("MKLDNN"))] == ["Convolution"]
    fc = sym.Activation(sym.FullyConnected(sym.var("x"), num_hidden=3, name="fc"), act_type="softsign", name="ss")
    assert [op for op, _ in ops_of(fc.get_backend_symbol("MKLDNN"))] == ["_sg_mkldnn_fully_connected", "Activation"]


def test_unknown_backend_errors_and_optimize_for_logs(caplog):
    net = resnet_unit()
    with pytest.raises(mx.base.MXNetError, match="SubgraphProperty NOPE is not found"):
        net.get_backend_symbol("NOPE")
    with caplog.at_level("ERROR"):
        same = net.optimize_for("NOPE")
    assert "Error optimizing for backend 'NOPE' cannot be found" in caplog.text
    assert same.tojson() == net.tojson()
    args, aux = random_args(net, {"data": (1, 4, 6, 6)}, seed=2)
    opt = net.optimize_for("MKLDNN", args=args, aux=aux, ctx=mx.cpu())
    assert "_sg_mkldnn_conv" in [op for op, _ in ops_of(opt)]
    np.testing.assert_allclose(run(opt, args, aux), run(net, args, aux), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="args as a dict"):
        net.optimize_for("MKLDNN", args=[1])


class Net(mx.gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.dense = nn.Dense(3, activation="relu")

    def hybrid_forward(self, F, x):
        return self.dense(F.relu(self.bn(self.conv(x))))


def test_gluon_hybridize_backend_and_optimize_for(tmp_path):
    x = nd.array(np.random.RandomState(4).uniform(-1, 1, (2, 3, 5, 5)))
    net = Net()
    net.initialize(mx.init.Xavier())
    net.bn.running_mean.set_data(nd.array([0.1, -0.2, 0.3, 0.0]))
    net.bn.running_var.set_data(nd.array([1.5, 0.5, 2.0, 1.0]))
    want = net(x).asnumpy()
    net.hybridize(backend="MKLDNN")
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    net.export(str(tmp_path / "part"))
    saved = json.load(open(str(tmp_path / "part-symbol.json")))
    # F.relu is the relu operator, which MXNet's selector does not fuse (only Activation);
    # Dense's activation is an Activation node.
    ops = [n for n in saved["nodes"] if n["op"] != "null"]
    assert [n["op"] for n in ops] == ["_sg_mkldnn_conv", "relu", "_sg_mkldnn_fully_connected"]
    assert ops[0]["attrs"]["with_bn"] == "true" and ops[2]["attrs"]["with_eltwise"] == "True"
    back = mx.gluon.SymbolBlock.imports(str(tmp_path / "part-symbol.json"), ["data"],
                                        str(tmp_path / "part-0000.params"))
    np.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    other = Net()
    other.initialize(mx.init.Xavier())
    with pytest.raises(ValueError, match='Must specify "backend"'):
        other.optimize_for(x)
    other.optimize_for(x, backend="MKLDNN")
    other.export(str(tmp_path / "other"))
    saved = json.load(open(str(tmp_path / "other-symbol.json")))
    assert "_sg_mkldnn_conv" in [n["op"] for n in saved["nodes"]]


def test_fused_nodes_run_float64_by_themselves(monkeypatch):
    # The executor normally replaces the fused nodes by their operators; with that off, the
    # nodes run their subgraphs themselves, in the graph's dtype.
    x = sym.var("x")
    net = sym.Activation(sym.BatchNorm(sym.Convolution(x, kernel=(3, 3), num_filter=2, name="c"), name="b"),
                         act_type="relu", name="r")
    part = net.get_backend_symbol("MKLDNN")
    arg_shapes, _, aux_shapes = net.infer_shape(x=(1, 2, 5, 5))
    rng = np.random.RandomState(6)
    args = {n: nd.array(rng.uniform(-1, 1, sh), dtype="float64") for n, sh in zip(net.list_arguments(), arg_shapes)}
    aux = {n: nd.array(rng.uniform(0.5, 1.5, sh), dtype="float64")
           for n, sh in zip(net.list_auxiliary_states(), aux_shapes)}
    want = run(net, args, aux)
    monkeypatch.setenv("WEFT_EXEC_INLINE_SUBGRAPHS", "0")
    got = part.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward()[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12, atol=1e-12)

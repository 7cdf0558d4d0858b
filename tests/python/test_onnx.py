"""ONNX export and import (weft.onnx, weft.contrib.onnx): model-zoo round trips through an
ONNX file, models exported by PyTorch imported and compared with PyTorch's outputs, and the
errors for what cannot be converted."""
import io

import numpy as np
import pytest

import weft as mx
from weft.gluon import nn, rnn
from weft.gluon.model_zoo import vision

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

# Input sizes: the smallest each network's fixed-size layers accept.
ZOO = [("mlp", (2, 1, 28, 28)), ("lenet", (2, 1, 28, 28)), ("resnet18_v1", (2, 3, 64, 64)),
       ("resnet18_v2", (2, 3, 64, 64)), ("mobilenet0.25", (2, 3, 64, 64)), ("mobilenetv2_0.25", (2, 3, 64, 64)),
       ("squeezenet1.0", (1, 3, 224, 224)), ("squeezenet1.1", (1, 3, 224, 224)), ("vgg11_bn", (1, 3, 32, 32)),
       ("vgg11", (1, 3, 32, 32)), ("alexnet", (1, 3, 112, 112)), ("inception_bn", (1, 3, 96, 96)),
       ("densenet121", (1, 3, 224, 224)), ("inceptionv3", (1, 3, 299, 299))]


def _randomize_running_stats(net):
    rng = np.random.RandomState(3)
    for name, p in net.collect_params().items():
        if name.endswith(("running_mean", "moving_mean")):
            p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
        elif name.endswith(("running_var", "moving_var")):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))


def _run_module(sym, args, aux, inputs):
    if len(inputs) == 1:
        mod = mx.mod.Module(sym, data_names=[inputs[0][0]], label_names=None)
        mod.bind([(n, v.shape) for n, v in inputs], for_training=False)
        mod.set_params(args, aux)
        mod.forward(mx.io.DataBatch([mx.nd.array(v) for _, v in inputs]), is_train=False)
        return [o.asnumpy() for o in mod.get_outputs()]
    # Several inputs with their batch on different axes (an RNN's states): bind directly.
    feed = dict(args)
    feed.update({n: mx.nd.array(v) for n, v in inputs})
    ex = sym.bind(mx.cpu(), args=feed, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in ex.forward(is_train=False)]


@pytest.mark.parametrize("name,shape", ZOO, ids=[z[0] for z in ZOO])
def test_model_zoo_round_trip(tmp_path, name, shape):
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    x = np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32)
    net(mx.nd.array(x))
    _randomize_running_stats(net)
    expected = net(mx.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "model")
    net.export(prefix)
    path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [shape], np.float32,
                                str(tmp_path / "model.onnx"))
    model = onnx.load(path)
    onnx.checker.check_model(model)
    assert model.opset_import[0].version >= 12
    sym, args, aux = mx.contrib.onnx.import_model(path)
    out = _run_module(sym, args, aux, [("data", x)])[0]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    block = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    np.testing.assert_allclose(block(mx.nd.array(x)).asnumpy(), expected, rtol=1e-4, atol=1e-5)


class _Recurrent(mx.gluon.HybridBlock):
    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.layer = layer
            self.out = nn.Dense(3, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(self.layer(x))


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_recurrent_round_trip(tmp_path, cell):
    layer = {"lstm": lambda: rnn.LSTM(6, num_layers=2, bidirectional=True, input_size=4),
             "gru": lambda: rnn.GRU(6, num_layers=2, input_size=4),
             "rnn_tanh": lambda: rnn.RNN(6, activation="tanh", bidirectional=True, input_size=4)}[cell]()
    net = _Recurrent(layer)
    net.initialize(mx.init.Uniform(0.3))
    net.hybridize()
    x = np.random.RandomState(1).uniform(-1, 1, (5, 2, 4)).astype(np.float32)
    expected = net(mx.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "rnn")
    net.export(prefix)
    path = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [x.shape], np.float32,
                                str(tmp_path / "rnn.onnx"))
    kinds = [n.op_type for n in onnx.load(path).graph.node]
    assert {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN"}[cell] in kinds
    sym, args, aux = mx.onnx.import_model(path)
    np.testing.assert_allclose(_run_module(sym, args, aux, [("data", x)])[0], expected, rtol=1e-4, atol=1e-5)


def _torch_to_onnx(module, inputs, names, **kwargs):
    f = io.BytesIO()
    torch.onnx.export(module, inputs, f, opset_version=kwargs.pop("opset", 13), input_names=names, **kwargs)
    return onnx.load_from_string(f.getvalue())


class _TorchConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pr = torch.nn.PReLU()
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.ct = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.fc = torch.nn.Linear(12, 5)

    def forward(self, x):
        f = torch.nn.functional
        y = self.bn(self.pr(self.c1(x)))  # after PReLU, so PyTorch cannot fold it into the convolution
        y = f.max_pool2d(y, 3, 2, 1, ceil_mode=True)
        z = torch.sigmoid(self.c2(y)) * f.leaky_relu(self.c2(y), 0.1)
        z = torch.clamp(self.ct(z) + 1.5, -2.0, 3.0)
        a = f.avg_pool2d(z, 2, 2, count_include_pad=False)
        h = torch.cat([f.adaptive_avg_pool2d(a, 1).flatten(1), f.adaptive_max_pool2d(y, 1).flatten(1)], 1)
        return torch.log_softmax(self.fc(h), 1), f.elu(z).mean(dim=(2, 3))


@pytest.mark.parametrize("opset", [12, 13])
def test_import_matches_pytorch_on_a_conv_net(opset):
    torch.manual_seed(0)
    m = _TorchConvNet().eval()
    with torch.no_grad():
        m.bn.weight.uniform_(0.5, 1.5)
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 16, 16)
    # No constant folding: the batch norm stays a BatchNormalization node.
    model = _torch_to_onnx(m, x, ["data"], opset=opset, do_constant_folding=False,
                           training=torch.onnx.TrainingMode.EVAL)
    assert "BatchNormalization" in [n.op_type for n in model.graph.node]
    with torch.no_grad():
        expected = [t.numpy() for t in m(x)]
    block = mx.contrib.onnx.import_to_gluon(model, mx.cpu())
    outs = block(mx.nd.array(x.numpy()))
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_import_matches_pytorch_recurrent(kind):
    torch.manual_seed(1)
    layer = getattr(torch.nn, kind)(4, 5, bidirectional=True).eval()
    x, h0 = torch.randn(6, 3, 4), torch.randn(2, 3, 5)
    if kind == "LSTM":
        c0 = torch.randn(2, 3, 5)
        model = _torch_to_onnx(layer, (x, (h0, c0)), ["x", "h0", "c0"])
        inputs = [("x", x), ("h0", h0), ("c0", c0)]
        with torch.no_grad():
            y, (hn, cn) = layer(x, (h0, c0))
        expected = [y, hn, cn]
    else:
        model = _torch_to_onnx(layer, (x, h0), ["x", "h0"])
        inputs = [("x", x), ("h0", h0)]
        with torch.no_grad():
            y, hn = layer(x, h0)
        expected = [y, hn]
    sym, args, aux = mx.onnx.import_model(model)
    outs = _run_module(sym, args, aux, [(n, t.numpy()) for n, t in inputs])
    # PyTorch's graph ends in reshapes of the ONNX outputs back to its own layout.
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


def test_metadata_and_dynamic_batch(tmp_path):
    data = mx.sym.var("data")
    out = mx.sym.softmax(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="prob")
    params = {"fc_weight": mx.nd.array(np.arange(12).reshape(3, 4) / 10.0), "fc_bias": mx.nd.array([0.1, 0.2, 0.3])}
    path = mx.onnx.export_model(out, params, [(2, 4)], onnx_file_path=str(tmp_path / "fc.onnx"))
    meta = mx.contrib.onnx.get_model_metadata(path)
    assert meta == {"input_tensor_data": [("data", (2, 4))], "output_tensor_data": [("prob_output", (2, 3))]}
    dyn = mx.onnx.export_model(out, params, [(2, 4)], onnx_file_path=str(tmp_path / "dyn.onnx"), dynamic=True,
                               dynamic_input_shapes=[(None, 4)])
    assert mx.onnx.get_model_metadata(dyn)["input_tensor_data"] == [("data", (None, 4))]
    sym, args, aux = mx.onnx.import_model(dyn)
    x = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    want = np.exp(x @ params["fc_weight"].asnumpy().T + params["fc_bias"].asnumpy())
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_run_module(sym, args, aux, [("data", x)])[0], want, rtol=1e-5)


def test_unsupported_operators_are_named(tmp_path):
    out = mx.sym.argmax(mx.sym.var("data"), axis=1, name="best")
    with pytest.raises(mx.onnx.UnsupportedOperator, match="'argmax'.*'best'"):
        mx.onnx.export_model(out, {}, [(2, 3)], onnx_file_path=str(tmp_path / "x.onnx"))
    with pytest.raises(ValueError, match="1 inputs .*data.* but in_shapes gives 2"):
        mx.onnx.export_model(out, {}, [(2, 3), (1,)], onnx_file_path=str(tmp_path / "x.onnx"))
    h = onnx.helper
    graph = h.make_graph([h.make_node("NonZero", ["x"], ["y"], name="nz")], "g",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.INT64, [1, None])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    with pytest.raises(mx.onnx.UnsupportedOnnx, match="'NonZero'.*'nz'"):
        mx.onnx.import_model(model)
    assert "Convolution" in mx.onnx.supported_operators() and "LSTM" in mx.onnx.supported_onnx_operators()

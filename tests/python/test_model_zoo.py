"""weft.gluon.model_zoo.vision: every model builds and maps a batch at its resolution to
(N, classes) (by symbolic shape inference, which needs no weights); parameter counts
equal torchvision's where the architectures match (and differ by exactly the known
amount where MXNet's differ); the cheap models run for real, MLP and LeNet against
numpy/torch with the same weights; pretrained=True and unknown names raise."""
import numpy as np
import pytest
import torch
import torchvision

import weft as mx
from weft.gluon.model_zoo import vision

CLASSES = 7
SMALL = {"mlp": (1, 28, 28), "lenet": (1, 28, 28), "inceptionv3": (3, 299, 299)}


def _input_shape(name, batch=1):
    return (batch,) + SMALL.get(name, (3, 224, 224))


def _symbolic(name, **kwargs):
    """(output shapes, {param name: shape}) of model `name` on a batch of 1."""
    net = vision.get_model(name, **kwargs)
    out = net(mx.sym.var("data"))
    arg_shapes, out_shapes, _ = out.infer_shape(data=_input_shape(name))
    params = {n: s for n, s in zip(out.list_arguments(), arg_shapes) if n != "data"}
    return out_shapes, params


def _count(params):
    return int(sum(np.prod(s) for s in params.values()))


@pytest.mark.parametrize("name", vision.models())
def test_every_model_maps_its_input_to_classes(name):
    out_shapes, params = _symbolic(name, classes=CLASSES)
    assert out_shapes == [(1, CLASSES)]
    assert params and all(all(d > 0 for d in s) for s in params.values())


def _tv_count(tv_name):
    """torchvision's parameter count for model `tv_name`. Its random initialisation is
    skipped (the init functions are made no-ops while it is built): only the shapes count,
    and filling VGG's 138M weights would take most of this file's time."""
    saved = {}
    for fname in dir(torch.nn.init):
        if fname.endswith("_") and not fname.startswith("_"):
            saved[fname] = getattr(torch.nn.init, fname)
            setattr(torch.nn.init, fname, lambda tensor, *args, **kwargs: tensor)
    try:
        model = getattr(torchvision.models, tv_name)()
    finally:
        for fname, fn in saved.items():
            setattr(torch.nn.init, fname, fn)
    return sum(p.numel() for p in model.parameters())


# MXNet's BottleneckV1 keeps the bias of its two 1x1 convolutions (torchvision's has none):
# per block channels // 4 + channels more parameters.
def _bottleneck_biases(blocks, channels=(256, 512, 1024, 2048)):
    return sum(n * (c // 4 + c) for n, c in zip(blocks, channels))


@pytest.mark.parametrize("name,tv_name,extra", [
    ("resnet18_v1", "resnet18", 0),
    ("resnet34_v1", "resnet34", 0),
    ("resnet50_v1", "resnet50", _bottleneck_biases((3, 4, 6, 3))),
    ("vgg16", "vgg16", 0),
    ("vgg11_bn", "vgg11_bn", 0),
    ("alexnet", "alexnet", 0),
    ("squeezenet1.0", "squeezenet1_0", 0),
    ("squeezenet1.1", "squeezenet1_1", 0),
    # MXNet's first bottleneck keeps a 1x1 expansion (32x32 conv + BN) at t = 1, and its
    # classifier is a 1x1 conv without bias (torchvision: a Linear with 1000 biases).
    ("mobilenetv2_1.0", "mobilenet_v2", 32 * 32 + 2 * 32 - 1000),
])
def test_parameter_count_matches_torchvision(name, tv_name, extra):
    _, params = _symbolic(name)
    # moving mean/variance are auxiliary states, not arguments, as torch's buffers
    assert not any(n.endswith(("running_mean", "running_var")) for n in params)
    assert _count(params) == _tv_count(tv_name) + extra


def test_mxnet_parameter_names():
    net = vision.resnet18_v1()
    assert net.prefix.startswith("resnetv1") and net.prefix.endswith("_")
    out = net(mx.sym.var("data"))
    arg_shapes, _, aux_shapes = out.infer_shape(data=(1, 3, 224, 224))
    args = dict(zip(out.list_arguments(), arg_shapes))
    p = net.prefix
    assert args[p + "conv0_weight"] == (64, 3, 7, 7)
    assert args[p + "stage1_conv0_weight"] == (64, 64, 3, 3)
    assert args[p + "stage2_conv2_weight"] == (128, 64, 1, 1)  # the projection shortcut
    assert args[p + "dense0_weight"] == (1000, 512)
    assert p + "batchnorm0_running_mean" in out.list_auxiliary_states()


# (the ResNets run for real in the thumbnail test below, at a size that keeps this file fast)
@pytest.mark.parametrize("name", ["mlp", "lenet", "mobilenet0.25", "mobilenetv2_0.25", "squeezenet1.1",
                                  "inception_bn"])
def test_cheap_models_run(name):
    net = vision.get_model(name, classes=CLASSES)
    net.initialize()
    x = mx.nd.array(np.random.RandomState(0).uniform(0, 1, _input_shape(name)).astype(np.float32))
    out = net(x)
    assert out.shape == (1, CLASSES)
    assert np.isfinite(out.asnumpy()).all()


@pytest.mark.parametrize("make", [lambda: vision.resnet18_v1(classes=CLASSES, thumbnail=True),
                                  lambda: vision.resnet18_v2(classes=CLASSES, thumbnail=True)], ids=["v1", "v2"])
def test_resnet_thumbnail_hybridized_equals_imperative(make):
    net = make()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(3).uniform(0, 1, (2, 3, 32, 32)).astype(np.float32))
    want = net(x).asnumpy()
    assert want.shape == (2, CLASSES)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)


def _weights(net):
    return {k.split("_", 1)[1]: v.data().asnumpy().astype(np.float64) for k, v in net.collect_params().items()}


def test_mlp_matches_numpy_and_sizes_are_configurable():
    net = vision.mlp(hidden=(16, 8), classes=3)
    net.initialize(mx.init.Uniform(0.5))
    x = np.random.RandomState(1).uniform(0, 1, (2, 1, 4, 5))
    out = net(mx.nd.array(x.astype(np.float32))).asnumpy()
    w = _weights(net)
    assert w["dense0_weight"].shape == (16, 20) and w["dense2_weight"].shape == (3, 8)
    h = np.maximum(x.reshape(2, -1) @ w["dense0_weight"].T + w["dense0_bias"], 0)
    h = np.maximum(h @ w["dense1_weight"].T + w["dense1_bias"], 0)
    np.testing.assert_allclose(out, h @ w["dense2_weight"].T + w["dense2_bias"], rtol=1e-4, atol=1e-5)


def test_lenet_matches_torch():
    net = vision.lenet(classes=10)
    net.initialize(mx.init.Xavier())
    x = np.random.RandomState(2).uniform(0, 1, (2, 1, 28, 28)).astype(np.float32)
    out = net(mx.nd.array(x)).asnumpy()
    w = {k: torch.from_numpy(v.astype(np.float32)) for k, v in _weights(net).items()}
    F = torch.nn.functional
    t = F.max_pool2d(F.relu(F.conv2d(torch.from_numpy(x), w["conv0_weight"], w["conv0_bias"])), 2)
    t = F.max_pool2d(F.relu(F.conv2d(t, w["conv1_weight"], w["conv1_bias"])), 2)
    t = F.relu(F.linear(t.flatten(1), w["dense0_weight"], w["dense0_bias"]))
    t = F.linear(t, w["dense1_weight"], w["dense1_bias"])
    np.testing.assert_allclose(out, t.numpy(), rtol=1e-4, atol=1e-4)


def test_pretrained_weights_are_not_shipped():
    for name in ("resnet18_v1", "mlp", "vgg11_bn", "mobilenetv2_0.5", "inception_bn"):
        with pytest.raises(ValueError, match="ships no pretrained weights"):
            vision.get_model(name, pretrained=True)


def test_unknown_model_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown model 'resnet19_v1'.*resnet18_v1"):
        vision.get_model("resnet19_v1")


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="num_layers"):
        vision.get_resnet(1, 20)
    with pytest.raises(ValueError, match="version"):
        vision.get_resnet(3, 18)
    with pytest.raises(ValueError, match="num_layers"):
        vision.get_vgg(12)
    with pytest.raises(ValueError, match="'1.0' or '1.1'"):
        vision.SqueezeNet("2.0")
    with pytest.raises(ValueError, match="positive ints"):
        vision.mlp(hidden=(0,))

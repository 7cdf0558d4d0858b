"""MXNet 1.9's model-zoo models that Weft lacked (DenseNet 121/161/169/201, Inception v3):
every name of MXNet 1.9's get_model resolves; parameter counts equal torchvision's (same
architectures) and MXNet's published ones; the networks run, hybridized equal to imperative;
pretrained=True loads MXNet's file naming from `root`, checks its SHA-1 and, absent, names
the file and the address."""
import hashlib
import os

import numpy as np
import pytest
import torch
import torchvision

import weft as mx
from weft.gluon.model_zoo import model_store, vision
from weft.gluon.model_zoo.vision.densenet import get_densenet

# The keys of MXNet 1.9's get_model table.
MX19_NAMES = ["resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1", "resnet18_v2",
              "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "vgg11", "vgg13", "vgg16", "vgg19",
              "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "alexnet", "densenet121", "densenet161",
              "densenet169", "densenet201", "squeezenet1.0", "squeezenet1.1", "inceptionv3", "mobilenet1.0",
              "mobilenet0.75", "mobilenet0.5", "mobilenet0.25", "mobilenetv2_1.0", "mobilenetv2_0.75",
              "mobilenetv2_0.5", "mobilenetv2_0.25"]


def test_every_mxnet19_name_is_known():
    assert set(MX19_NAMES) <= set(vision.models())
    for name in MX19_NAMES:
        assert name in model_store._model_sha1
    assert isinstance(vision.get_model("DenseNet121"), vision.DenseNet)
    assert isinstance(vision.get_model("inceptionv3"), vision.Inception3)


def _params(net, shape):
    out = net(mx.sym.var("data"))
    arg_shapes, out_shapes, aux_shapes = out.infer_shape(data=shape)
    args = {n: s for n, s in zip(out.list_arguments(), arg_shapes) if n != "data"}
    aux = dict(zip(out.list_auxiliary_states(), aux_shapes))
    return out_shapes, args, aux


def _count(shapes):
    return int(sum(np.prod(s) for s in shapes.values()))


def _tv_count(make):
    """Trainable parameters of a torchvision model, built without its random initialisation
    (only the shapes count)."""
    saved = {}
    for fname in dir(torch.nn.init):
        if fname.endswith("_") and not fname.startswith("_"):
            saved[fname] = getattr(torch.nn.init, fname)
            setattr(torch.nn.init, fname, lambda tensor, *args, **kwargs: tensor)
    try:
        model = make()
    finally:
        for fname, fn in saved.items():
            setattr(torch.nn.init, fname, fn)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("depth", [121, 161, 169, 201])
def test_densenet_parameter_count_matches_torchvision(depth):
    out_shapes, args, aux = _params(vision.get_model("densenet%d" % depth), (1, 3, 224, 224))
    assert out_shapes == [(1, 1000)]
    assert _count(args) == _tv_count(getattr(torchvision.models, "densenet%d" % depth))
    # every BatchNorm has its two running statistics, of its gamma's size
    assert sorted(n[:-len("running_mean")] for n in aux if n.endswith("running_mean")) == \
        sorted(n[:-len("gamma")] for n in args if n.endswith("gamma"))


def test_published_counts():
    # DenseNet-121 has 7,978,856 trainable parameters (gamma and beta of every BatchNorm
    # included, the running statistics not), MXNet's and torchvision's alike.
    _, args, _ = _params(vision.densenet121(), (1, 3, 224, 224))
    assert _count(args) == 7978856
    # Inception v3 without the auxiliary classifier is published as 23,851,784 parameters by
    # Keras, whose BatchNorms have no gamma but count both running statistics: the same
    # convolutions and channels counted that way.
    out_shapes, args, aux = _params(vision.inception_v3(), (1, 3, 299, 299))
    assert out_shapes == [(1, 1000)]
    gammas = _count({n: s for n, s in args.items() if n.endswith("gamma")})
    assert _count(args) - gammas + _count(aux) == 23851784
    assert _count(args) == 23834568


def test_inception_v3_matches_torchvision_without_aux_classifier():
    # torchvision's Inception3 has the same trunk; MXNet's leaves out the auxiliary classifier.
    want = _tv_count(lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False))
    _, args, _ = _params(vision.inception_v3(), (1, 3, 299, 299))
    assert _count(args) == want


def test_mxnet_parameter_names():
    net = vision.densenet121()
    p = net.prefix
    _, args, aux = _params(net, (1, 3, 224, 224))
    assert args[p + "conv0_weight"] == (64, 3, 7, 7)
    assert args[p + "stage1_conv0_weight"] == (128, 64, 1, 1)
    assert args[p + "stage1_conv1_weight"] == (32, 128, 3, 3)
    assert args[p + "conv1_weight"] == (128, 256, 1, 1)   # the first transition
    assert args[p + "dense0_weight"] == (1000, 1024)
    net = vision.inception_v3()
    p = net.prefix
    _, args, _ = _params(net, (1, 3, 299, 299))
    assert args[p + "A1_conv0_weight"] == (64, 192, 1, 1)
    assert args[p + "C1_conv2_weight"] == (128, 128, 1, 7)
    assert args[p + "C1_conv3_weight"] == (192, 128, 7, 1)
    assert args[p + "E2_conv0_weight"] == (320, 2048, 1, 1)
    assert args[p + "dense0_weight"] == (1000, 2048)


@pytest.mark.parametrize("make,shape", [(lambda: vision.densenet121(classes=5), (1, 3, 224, 224)),
                                        (lambda: vision.inception_v3(classes=5), (1, 3, 299, 299))],
                         ids=["densenet121", "inceptionv3"])
def test_runs_and_hybridized_equals_imperative(make, shape):
    net = make()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(0, 1, shape).astype(np.float32))
    want = net(x).asnumpy()
    assert want.shape == (shape[0], 5) and np.isfinite(want).all()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5)


def _sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def test_pretrained_loads_mxnet_file_naming_from_root(tmp_path, monkeypatch):
    src = vision.mobilenet0_25(classes=4)
    src.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(1).uniform(0, 1, (1, 3, 224, 224)).astype(np.float32))
    want = src(x).asnumpy()
    staged = str(tmp_path / "staged.params")
    src.save_parameters(staged)
    sha = _sha1(staged)
    monkeypatch.setitem(model_store._model_sha1, "mobilenet0.25", sha)
    os.rename(staged, str(tmp_path / ("mobilenet0.25-%s.params" % sha[:8])))
    net = vision.get_model("mobilenet0.25", classes=4, pretrained=True, root=str(tmp_path))
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert model_store.get_model_file("mobilenet0.25", root=str(tmp_path)).endswith("mobilenet0.25-%s.params" % sha[:8])
    model_store.purge(str(tmp_path))
    assert not os.listdir(str(tmp_path))


def test_pretrained_absent_names_file_and_url(tmp_path):
    with pytest.raises(ValueError, match=r"inceptionv3-ed47ec45\.params is absent.*"
                                         r"https://apache-mxnet\.s3-accelerate\.dualstack\.amazonaws\.com/gluon/"
                                         r"models/inceptionv3-ed47ec45\.zip"):
        vision.get_model("inceptionv3", pretrained=True, root=str(tmp_path))


def test_pretrained_wrong_file_is_refused(tmp_path):
    (tmp_path / "densenet169-2603f878.params").write_bytes(b"not MXNet's file")
    with pytest.raises(ValueError, match="SHA-1 is not 2603f878403c6aa5a71a124c4a3307143d6820e9"):
        vision.densenet169(pretrained=True, root=str(tmp_path))


def test_no_pretrained_file_for_weft_only_models():
    with pytest.raises(ValueError, match="no pretrained parameters for 'lenet'"):
        vision.lenet(pretrained=True)


def test_bad_depth():
    with pytest.raises(ValueError, match="num_layers must be one of"):
        get_densenet(122)

"""mx.gluon.contrib.cnn: DeformableConvolution and ModulatedDeformableConvolution layers."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon
from weft.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

rng = np.random.RandomState(3)
LAYERS = [DeformableConvolution, ModulatedDeformableConvolution]


def _x(shape=(2, 4, 7, 6)):
    return mx.nd.array(rng.uniform(-1, 1, size=shape))


@pytest.mark.parametrize("cls", LAYERS)
@pytest.mark.parametrize("kw,out_shape", [
    (dict(kernel_size=3, padding=1), (2, 6, 7, 6)),
    (dict(kernel_size=(3, 2), strides=2, dilation=(1, 2)), (2, 6, 3, 2)),
    (dict(kernel_size=3, padding=1, groups=2, num_deformable_group=2, use_bias=False, in_channels=4), (2, 6, 7, 6)),
])
def test_forward_shape_and_parameters(cls, kw, out_shape):
    layer = cls(6, **kw)
    layer.initialize()
    y = layer(_x())
    assert y.shape == out_shape
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    taps = k[0] * k[1] * kw.get("num_deformable_group", 1)
    per_group = 4 // kw.get("groups", 1)
    assert layer.offset_weight.shape == ((3 if cls is ModulatedDeformableConvolution else 2) * taps, per_group) + k
    assert layer.deformable_conv_weight.shape == (6, per_group) + k
    assert (layer.deformable_conv_bias is None) == (kw.get("use_bias") is False)
    assert (layer.offset_weight.data().asnumpy() == 0).all()  # zero-initialised offsets


@pytest.mark.parametrize("cls", LAYERS)
def test_zero_offsets_equal_a_plain_convolution(cls):
    layer = cls(5, kernel_size=3, padding=1, strides=1, activation="relu")
    layer.initialize(mx.init.Xavier())
    x = _x()
    y = layer(x).asnumpy()
    conv = gluon.nn.Conv2D(5, 3, padding=1, activation="relu")
    conv.initialize()
    conv(x)
    conv.weight.set_data(layer.deformable_conv_weight.data())
    conv.bias.set_data(layer.deformable_conv_bias.data())
    np.testing.assert_allclose(y, conv(x).asnumpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls", LAYERS)
def test_nonzero_offsets_are_the_offset_convolution_fed_to_the_operator(cls):
    layer = cls(3, kernel_size=3, padding=1, offset_weight_initializer=mx.init.Uniform(0.3),
                offset_bias_initializer=mx.init.Uniform(0.5))
    layer.initialize(mx.init.Xavier())
    x = _x((1, 2, 6, 5))
    y = layer(x).asnumpy()
    offset = mx.nd.Convolution(x, layer.offset_weight.data(), layer.offset_bias.data(), kernel=(3, 3), pad=(1, 1),
                               num_filter=layer.offset_weight.shape[0])
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=3)
    w, b = layer.deformable_conv_weight.data(), layer.deformable_conv_bias.data()
    if cls is DeformableConvolution:
        ref = mx.nd.contrib.DeformableConvolution(x, offset, w, b, **kw)
    else:
        mask = mx.nd.sigmoid(offset[:, 18:]) * 2
        ref = mx.nd.contrib.ModulatedDeformableConvolution(x, offset[:, :18], mask, w, b, **kw)
    assert np.abs(offset.asnumpy()).max() > 0.1
    np.testing.assert_allclose(y, ref.asnumpy(), rtol=1e-5, atol=1e-6)
    plain = gluon.nn.Conv2D(3, 3, padding=1)
    plain.initialize()
    plain(x)
    plain.weight.set_data(w)
    plain.bias.set_data(b)
    assert np.abs(plain(x).asnumpy() - y).max() > 1e-3  # the offsets changed the result


@pytest.mark.parametrize("cls", LAYERS)
def test_hybridized_equals_imperative(cls):
    layer = cls(4, kernel_size=3, padding=1, offset_weight_initializer=mx.init.Uniform(0.2))
    layer.initialize(mx.init.Xavier())
    x = _x()
    y = layer(x).asnumpy()
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer(x).asnumpy(), y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", LAYERS)
def test_training_moves_offsets_and_lowers_the_loss(cls):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(cls(4, kernel_size=3, padding=1))
        net.add(gluon.nn.GlobalAvgPool2D())
        net.add(gluon.nn.Dense(1))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = _x((8, 3, 6, 6))
    target = mx.nd.array(rng.uniform(-1, 1, size=(8, 1)))
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    loss_fn = gluon.loss.L2Loss()
    losses = []
    for _ in range(15):
        with autograd.record():
            loss = loss_fn(net(x), target)
        loss.backward()
        trainer.step(8)
        losses.append(loss.mean().asscalar())
    assert losses[-1] < 0.5 * losses[0]
    assert np.abs(net[0].offset_weight.data().asnumpy()).max() > 0  # the offset branch learnt too


def test_bad_arguments():
    with pytest.raises(ValueError, match="NCHW"):
        DeformableConvolution(2, layout="NHWC")
    with pytest.raises(ValueError, match="divisible"):
        ModulatedDeformableConvolution(2, in_channels=3, groups=2)
    layer = DeformableConvolution(2, kernel_size=3)
    layer.initialize()
    with pytest.raises(mx.base.MXNetError):
        layer(mx.nd.zeros((2, 3, 5)))

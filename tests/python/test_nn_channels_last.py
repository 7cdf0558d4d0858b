"""Channels-last layouts (NWC, NHWC, NDHWC) of Convolution, Deconvolution and Pooling:
forward and every gradient against the channels-first operator on transposed arrays,
numeric gradient checks in float64, accumulation (req 'add'), shape inference, the
errors, and the Gluon layers that pass `layout=`."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import nn
from weft.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(11)
FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def to_last(a):
    return np.moveaxis(a, 1, -1)


def to_first(a):
    return np.moveaxis(a, -1, 1)


def run(op, arrays, params, head):
    """Forward output and the gradient of every input under out-gradient `head`."""
    xs = [nd.array(a, dtype=a.dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = getattr(nd, op)(*xs, **params)
    y.backward(nd.array(head(y.shape), dtype=arrays[0].dtype))
    return y.asnumpy(), [x.grad.asnumpy() for x in xs]


def compare_layouts(op, nd_, arrays_first, params, rtol=1e-5, atol=1e-5):
    """Runs `op` channels-first and channels-last (on transposed copies of the rank >= 3
    arrays) and checks the output and every gradient agree up to the transposes."""
    heads = {}

    def head_first(shape):
        heads["first"] = rand(*shape)
        return heads["first"]

    y1, g1 = run(op, arrays_first, dict(params, layout=FIRST[nd_]), head_first)
    moved = [to_last(a) if a.ndim >= 3 else a for a in arrays_first]
    y2, g2 = run(op, moved, dict(params, layout=LAST[nd_]), lambda shape: to_last(heads["first"]))
    assert y2.shape == to_last(y1).shape
    assert_almost_equal(to_first(y2), y1, rtol=rtol, atol=atol)
    for a, b in zip(g1, g2):
        assert_almost_equal(to_first(b) if b.ndim >= 3 else b, a, rtol=rtol, atol=atol)
    return y2


@pytest.mark.parametrize("nd_, xshape, kernel, extra", [
    (1, (2, 4, 9), (3,), dict(stride=(2,), pad=(1,))),
    (2, (2, 4, 7, 6), (3, 2), dict(stride=(2, 1), pad=(1, 0), dilate=(1, 2))),
    (2, (1, 4, 5, 5), (3, 3), dict(num_group=2)),
    (3, (1, 2, 5, 4, 6), (2, 3, 2), dict(pad=(1, 1, 0))),
])
def test_convolution_channels_last_matches_channels_first(nd_, xshape, kernel, extra):
    groups = extra.get("num_group", 1)
    x = rand(*xshape)
    w = rand(6, xshape[1] // groups, *kernel)
    b = rand(6)
    y = compare_layouts("Convolution", nd_, [x, w, b], dict(kernel=kernel, num_filter=6, **extra))
    assert y.shape[-1] == 6 and y.shape[0] == xshape[0]


@pytest.mark.parametrize("nd_, xshape, kernel, extra", [
    (1, (2, 4, 5), (3,), dict(stride=(2,), adj=(1,))),
    (2, (1, 4, 4, 3), (3, 2), dict(stride=(2, 2), pad=(1, 0), num_group=2)),
    (3, (1, 2, 3, 2, 3), (2, 2, 2), dict(stride=(2, 1, 2))),
])
def test_deconvolution_channels_last_matches_channels_first(nd_, xshape, kernel, extra):
    groups = extra.get("num_group", 1)
    x = rand(*xshape)
    w = rand(xshape[1], 6 // groups, *kernel)
    b = rand(6)
    compare_layouts("Deconvolution", nd_, [x, w, b], dict(kernel=kernel, num_filter=6, no_bias=False, **extra))


@pytest.mark.parametrize("nd_, xshape, params", [
    (1, (2, 3, 9), dict(kernel=(3,), stride=(2,), pool_type="max")),
    (1, (2, 3, 9), dict(kernel=(2,), pool_type="avg", pad=(1,), count_include_pad=False)),
    (2, (2, 3, 7, 6), dict(kernel=(3, 2), stride=(2, 2), pool_type="max", pooling_convention="full")),
    (2, (2, 3, 6, 6), dict(kernel=(2, 2), pool_type="avg", pad=(1, 1))),
    (2, (1, 3, 5, 4), dict(kernel=(2, 2), pool_type="sum")),
    (2, (1, 3, 5, 4), dict(kernel=(2, 2), pool_type="lp", p_value=2)),
    (2, (2, 3, 5, 4), dict(global_pool=True, pool_type="avg")),
    (3, (1, 2, 4, 5, 4), dict(kernel=(2, 2, 2), stride=(2, 1, 2), pool_type="max")),
    (3, (1, 2, 4, 5, 4), dict(global_pool=True, pool_type="max")),
])
def test_pooling_channels_last_matches_channels_first(nd_, xshape, params):
    # Distinct values keep the max pooling gradient unambiguous.
    x = (RNG.permutation(int(np.prod(xshape))).reshape(xshape) / 10.0).astype(np.float32)
    compare_layouts("Pooling", nd_, [x], params)


def test_channels_last_forward_against_numpy():
    # A 1x1 convolution is a matrix product over the channel (last) axis.
    x, w, b = rand(2, 3, 4, 5), rand(6, 1, 1, 5), rand(6)
    y = nd.Convolution(nd.array(x), nd.array(w), nd.array(b), kernel=(1, 1), num_filter=6, layout="NHWC").asnumpy()
    assert_almost_equal(y, x @ w[:, 0, 0, :].T + b, rtol=1e-5, atol=1e-5)
    # Max pooling over (2, 2) windows of an NHWC array.
    p = nd.Pooling(nd.array(x[:, :2, :4]), kernel=(2, 2), stride=(2, 2), layout="NHWC").asnumpy()
    ref = x[:, :2, :4].reshape(2, 1, 2, 2, 2, 5).max(axis=(2, 4))
    assert_almost_equal(p, ref, rtol=0, atol=0)


def test_numeric_gradient_channels_last():
    x, w, b = rand(1, 5, 4, 4, dtype=np.float64), rand(4, 3, 2, 2, dtype=np.float64), rand(4, dtype=np.float64)
    check_numeric_gradient("Convolution", [x, w, b],
                           params=dict(kernel=(3, 2), num_filter=4, num_group=2, stride=(2, 1), pad=(1, 1),
                                       layout="NHWC"))
    x1, w1 = rand(2, 6, 3, dtype=np.float64), rand(3, 2, 2, dtype=np.float64)
    check_numeric_gradient("Deconvolution", [x1, w1],
                           params=dict(kernel=(2,), num_filter=2, num_group=1, stride=(2,), layout="NWC"))
    x2 = rand(1, 3, 4, 3, 2, dtype=np.float64)
    check_numeric_gradient("Pooling", [x2], params=dict(kernel=(2, 2, 2), pool_type="avg", layout="NDHWC"))


def test_channels_last_gradient_accumulates():
    x, w = rand(1, 5, 5, 2), rand(3, 3, 3, 2)
    xs, ws = nd.array(x), nd.array(w)
    xs.attach_grad(grad_req="add")
    ws.attach_grad(grad_req="add")
    grads = []
    for _ in range(2):
        with autograd.record():
            y = nd.Convolution(xs, ws, kernel=(3, 3), num_filter=3, no_bias=True, layout="NHWC")
        y.backward()
        grads.append((xs.grad.asnumpy().copy(), ws.grad.asnumpy().copy()))
    assert np.abs(grads[0][0]).max() > 0
    assert_almost_equal(grads[1][0], 2 * grads[0][0], rtol=1e-5, atol=1e-6)
    assert_almost_equal(grads[1][1], 2 * grads[0][1], rtol=1e-5, atol=1e-6)


def test_channels_last_shape_inference():
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 2), num_filter=8, num_group=2, stride=(2, 1), layout="NHWC", name="c")
    args, outs, _ = conv.infer_shape(data=(2, 9, 6, 4))
    shapes = dict(zip(conv.list_arguments(), args))
    assert shapes["c_weight"] == (8, 3, 2, 2)
    assert shapes["c_bias"] == (8,)
    assert outs[0] == (2, 4, 5, 8)
    deconv = mx.sym.Deconvolution(data, kernel=(2, 2, 2), num_filter=6, stride=(2, 2, 2), layout="NDHWC", name="d")
    args, outs, _ = deconv.infer_shape(data=(1, 3, 4, 5, 7))
    assert dict(zip(deconv.list_arguments(), args))["d_weight"] == (7, 2, 2, 2, 6)
    assert outs[0] == (1, 6, 8, 10, 6)
    pool = mx.sym.Pooling(data, kernel=(3,), stride=(2,), layout="NWC")
    assert pool.infer_shape(data=(2, 9, 5))[1][0] == (2, 4, 5)
    gpool = mx.sym.Pooling(data, global_pool=True, pool_type="avg", layout="NHWC")
    assert gpool.infer_shape(data=(2, 9, 6, 5))[1][0] == (2, 1, 1, 5)


def test_channels_last_errors():
    x = nd.array(rand(1, 4, 3, 3))
    with pytest.raises(mx.base.MXNetError, match=r"Convolution.*weight.*\(4,4,1,1\).*expects \(4,1,1,3\)"):
        nd.Convolution(x, nd.array(rand(4, 4, 1, 1)), kernel=(1, 1), num_filter=4, no_bias=True, layout="NHWC")
    with pytest.raises(mx.base.MXNetError, match=r"layout 'NWC' does not fit a 2-D kernel; expected 'NCHW' or 'NHWC'"):
        nd.Convolution(x, nd.array(rand(4, 1, 1, 3)), kernel=(1, 1), num_filter=4, no_bias=True, layout="NWC")
    with pytest.raises(mx.base.MXNetError, match=r"Pooling.*\(1,4,3\) of rank 3 but a 2-D kernel needs rank 4 \(NHWC\)"):
        nd.Pooling(nd.array(rand(1, 4, 3)), kernel=(2, 2), layout="NHWC")
    with pytest.raises(mx.base.MXNetError, match=r"Deconvolution.*data.*\(1,3,3,4\) whose 4 channels are not "
                                                 r"divisible by num_group \(3\)"):
        nd.Deconvolution(x.reshape((1, 3, 3, 4)), nd.array(rand(4, 1, 1, 1)), kernel=(1, 1), num_filter=3,
                         num_group=3, layout="NHWC")
    # The channels-last backward checks its inputs against the forward's geometry too.
    with pytest.raises(mx.base.MXNetError, match=r"_backward_Pooling.*\(1,2,2,4\)"):
        nd._internal._backward_Pooling(nd.zeros((1, 2, 2, 4)), nd.zeros((1, 4, 4, 3)), nd.zeros((1, 2, 2, 3)),
                                       kernel=(2, 2), stride=(2, 2), layout="NHWC")


@pytest.mark.parametrize("layer_cls, layout, shape, wshape", [
    (nn.Conv1D, "NWC", (2, 9, 4), (8, 3, 2)),
    (nn.Conv2D, "NHWC", (2, 7, 6, 4), (8, 3, 3, 2)),
    (nn.Conv3D, "NDHWC", (1, 5, 4, 6, 4), (8, 3, 3, 3, 2)),
    (nn.Conv2DTranspose, "NHWC", (2, 4, 3, 4), (4, 3, 3, 4)),
])
def test_gluon_conv_layers_channels_last(layer_cls, layout, shape, wshape):
    kernel = (3,) * (len(shape) - 2)
    layer = layer_cls(8, kernel, groups=2, layout=layout, in_channels=4)
    layer.initialize()
    assert layer.weight.shape == wshape
    x = rand(*shape)
    y = layer(nd.array(x)).asnumpy()
    # The same layer channels-first, with the weights moved to that layout.
    first = layer_cls(8, kernel, groups=2, layout=FIRST[len(shape) - 2], in_channels=4)
    first.initialize()
    first.weight.set_data(nd.array(to_first(layer.weight.data().asnumpy())))
    first.bias.set_data(layer.bias.data())
    assert_almost_equal(to_first(y), first(nd.array(to_first(x))).asnumpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="layout must be one of"):
        layer_cls(8, kernel, layout="NCHWD")


def test_gluon_conv_deferred_init_channels_last():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 3, layout="NHWC"), nn.MaxPool2D(layout="NHWC"), nn.GlobalAvgPool2D(layout="NHWC"))
    net.initialize()
    net.hybridize()
    x = nd.array(rand(2, 8, 8, 5))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    assert net[0].weight.shape == (6, 3, 3, 5)
    assert y.shape == (2, 1, 1, 6)
    assert np.abs(x.grad.asnumpy()).max() > 0
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    trainer.step(2)


@pytest.mark.parametrize("layer, layout, shape", [
    (nn.MaxPool1D(3, 2, layout="NWC"), "NWC", (1, 10, 2)),
    (nn.AvgPool2D(count_include_pad=False, padding=1, layout="NHWC"), "NHWC", (1, 7, 7, 2)),
    (nn.GlobalMaxPool3D(layout="NDHWC"), "NDHWC", (1, 4, 4, 4, 2)),
])
def test_gluon_pool_layers_channels_last(layer, layout, shape):
    x = rand(*shape)
    y = layer(nd.array(x)).asnumpy()
    kwargs = dict(layer._kwargs, layout=FIRST[len(shape) - 2])
    ref = nd.Pooling(nd.array(to_first(x)), **kwargs).asnumpy()
    assert_almost_equal(to_first(y), ref, rtol=1e-6, atol=1e-6)
